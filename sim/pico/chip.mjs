// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// One emulated RP2040 (rp2040js) with the parts a Pico board has around the chip and rp2040js leaves out:
//   - the flash chip behind the ROM's flash routines (erase/program land in `flash`, a Uint8Array the rig owns
//     and saves to a file), with a W25Q16JV's typical erase and program times stalling the CPU;
//   - the reset a watchdog bite causes (rp2040js only calls a hook) and the reset reason registers the rp2
//     port reads (VREG_AND_CHIP_RESET.CHIP_RESET and WATCHDOG.REASON);
//   - pull-ups/pull-downs on input pins (rp2040js reads an undriven input as 0) and pins driven from outside;
//   - the PIO run in step with the CPU: rp2040js runs it on its own JavaScript timer, far from the CPU's time.
//     Here a PIO block is caught up to the CPU's cycle count lazily, whenever the CPU touches one of its
//     registers or FIFOs and before any input pin changes (docs/pico-rig.md, "PIO").
//   - a USB host for every CDC function of the device (usbhost.mjs), with flow control: the host's bytes wait
//     in the rig until the device arms its OUT endpoint (a real USB host NAKs), instead of overflowing
//     rp2040js's 512-byte FIFO.
import { RP2040, ConsoleLogger, LogLevel } from 'rp2040js';
import { CdcHost } from './usbhost.mjs';

export const FLASH_SIZE = 2 * 1024 * 1024;          // the Pico's W25Q16JV
const WATCHDOG_BASE = 0x40058;
const VREG_BASE = 0x40064;
const PADS_BANK0 = 0x4001c;
const REASON_TIMER = 1;
const REASON_FORCE = 2;
const CHIP_RESET_HAD_POR = 1 << 8;
// W25Q16JV datasheet, typical: 4 KiB sector erase 45 ms, 64 KiB block erase 150 ms, page program 0.4 ms
const ERASE_4K_NS = 45e6;
const ERASE_64K_NS = 150e6;
const PROGRAM_PAGE_NS = 0.4e6;
// BKPT numbers of the patched ROM entries
const BK_ERASE = 0x51;
const BK_PROGRAM = 0x52;

function romTableCode(a, b) {
  return a.charCodeAt(0) | (b.charCodeAt(0) << 8);
}

/** UF2 file -> {address: bytes} written into a flash array (offsets from 0x10000000). */
export function loadUf2(buf, flash) {
  let blocks = 0;
  for (let off = 0; off + 512 <= buf.length; off += 512) {
    const m0 = buf.readUInt32LE(off);
    const m1 = buf.readUInt32LE(off + 4);
    const m2 = buf.readUInt32LE(off + 508);
    if (m0 !== 0x0a324655 || m1 !== 0x9e5d5157 || m2 !== 0x0ab16f30) {
      throw new Error(`not a UF2 file (bad magic in block at offset ${off})`);
    }
    const addr = buf.readUInt32LE(off + 12);
    const size = buf.readUInt32LE(off + 16);
    if (addr < 0x10000000 || addr + size > 0x10000000 + flash.length) {
      throw new Error(`UF2 block at 0x${addr.toString(16)} is outside the ${flash.length >> 20} MiB flash`);
    }
    flash.set(buf.subarray(off + 32, off + 32 + size), addr - 0x10000000);
    blocks++;
  }
  if (!blocks) throw new Error('empty UF2 file');
  return blocks;
}

class ChipResetRegs {
  // VREG_AND_CHIP_RESET: VREG, BOD, CHIP_RESET. Only CHIP_RESET matters (the rp2 port's reset_cause reads it).
  constructor(chipReset) {
    this.vreg = 0xb1;
    this.bod = 0x91;
    this.chipReset = chipReset;
    this.rawWriteValue = 0;
  }
  readUint32(offset) {
    if (offset === 0) return this.vreg;
    if (offset === 4) return this.bod;
    if (offset === 8) return this.chipReset;
    return 0;
  }
  writeUint32(offset, value) {
    if (offset === 0) this.vreg = value;
    else if (offset === 4) this.bod = value;
  }
  writeUint32Atomic(offset, value, type) {
    const cur = this.readUint32(offset);
    const v = type === 1 ? cur ^ value : type === 2 ? cur | value : type === 3 ? cur & ~value : value;
    this.writeUint32(offset, v);
  }
}

export class Chip {
  /**
   * bootrom: Uint32Array (16 KiB); flash: Uint8Array(FLASH_SIZE) shared across resets (the flash chip);
   * opts: {reason: watchdog REASON after this reset (0: power-on), scratch: Uint32Array(8) kept by a watchdog
   * reset, pioMode: 'lazy' | 'every' | 'timer', onFlashWrite(), onWatchdog(reason), onSerial(bytes, port),
   * onConnected(), external: Map pin -> level driven from outside}
   */
  constructor(bootrom, flash, opts = {}) {
    this.opts = opts;
    const mcu = new RP2040();
    this.mcu = mcu;
    mcu.logger = new ConsoleLogger(opts.logLevel ?? LogLevel.Error, true);
    mcu.loadBootrom(bootrom);          // loadBootrom resets and fills the flash with 0xff: set the flash after it
    mcu.flash.set(flash.subarray(0, FLASH_SIZE));
    this.flash = flash;
    this.clock = mcu.clock;
    this.core = mcu.core;
    this.halted = false;               // a frozen CPU (fault injection): peripherals and time go on
    this.flashOps = { erases: 0, programs: 0, erased_bytes: 0, programmed_bytes: 0, stall_ns: 0 };
    this.pioSteps = 0;
    this.pioSkipped = 0;
    const powerOn = !opts.reason;
    mcu.peripherals[VREG_BASE] = new ChipResetRegs(powerOn ? CHIP_RESET_HAD_POR : 0);
    const wd = mcu.peripherals[WATCHDOG_BASE];
    this.watchdog = wd;
    wd.reason = opts.reason || 0;
    if (opts.scratch) wd.scratchData.set(opts.scratch);
    wd.onWatchdogTrigger = () => {
      // rp2040js sets wd.reason (TIMER on a bite, FORCE on CTRL.TRIGGER) before calling this
      this.resetRequested = wd.reason || REASON_TIMER;
      // the bite resets the chip, which stops the watchdog. rp2040js keeps it enabled, and its periodic alarm at
      // counter 0 then re-schedules itself at the same instant forever (the clock never advances again)
      wd.enable = false;
      wd.timer.enable = false;
      wd.alarm.enable = false;
      this.halted = true;
      if (opts.onWatchdog) opts.onWatchdog(this.resetRequested);
    };
    this.resetRequested = 0;
    this.external = opts.external || new Map();
    this._patchRom();
    this._setupPio(opts.pioMode || 'lazy');
    this._setupPads();
    this._setupUsb();
    // QSPI_SS reads high when the chip floats it: the Pico's BOOTSEL button is not pressed. rp2040js resets its
    // pad with the input disabled (the RP2040's reset value is 0x5a: input enabled, pull-up on) and reads 0, and
    // CircuitPython, which senses BOOTSEL that way at boot, waited forever for the button's release
    mcu.qspi[1].padValue = 0x5a;
    mcu.qspi[1].setInputValue(true);
    mcu.core.PC = 0x10000000;          // boot2 at the start of flash, like the ROM's flash boot does
  }

  // ---- time ----

  get nanos() {
    return this.clock.nanos;
  }

  /** Run until chip time reaches untilNs (or a reset is requested). */
  run(untilNs) {
    const { core, clock } = this;
    const pioEvery = this.pioMode === 'every';
    const pios = this.mcu.pio;
    while (clock.nanosCounter < untilNs && !this.resetRequested) {
      if (this.halted || core.waiting) {
        let n = clock.nanosToNextAlarm;
        const left = untilNs - clock.nanosCounter;
        if (!(n > 0) || n > left) n = left;
        if (pioEvery) this._catchUpAllTo(clock.nanosCounter + n);
        clock.tick(n);
        continue;
      }
      const cycles = core.executeInstruction();
      if (pioEvery) {
        for (let i = 0; i < cycles; i++) {
          this._stepPio(pios[0]);
          this._stepPio(pios[1]);
        }
      }
      clock.tick(cycles * 8);
    }
  }

  // ---- ROM flash routines ----

  _patchRom() {
    // rom_func_lookup: the table of (u16 code, u16 address) pairs at the ROM's 16-bit pointer at 0x14
    const rom = this.mcu.bootrom;
    const half = (a) => (rom[a >> 2] >>> ((a & 2) * 8)) & 0xffff;
    const setHalf = (a, v) => {
      const w = a >> 2;
      const sh = (a & 2) * 8;
      rom[w] = ((rom[w] & ~(0xffff << sh)) | (v << sh)) >>> 0;
    };
    const table = half(0x14);
    const funcs = new Map();
    for (let p = table; ; p += 4) {
      const code = half(p);
      if (!code) break;
      funcs.set(code, half(p + 2) & ~1);
    }
    const need = { IF: null, EX: null, RE: BK_ERASE, RP: BK_PROGRAM, FC: null, CX: null };
    for (const [name, bk] of Object.entries(need)) {
      const addr = funcs.get(romTableCode(name[0], name[1]));
      if (addr === undefined) throw new Error(`bootrom has no ${name} function: not an RP2040 B1 ROM?`);
      if (bk === null) {
        setHalf(addr, 0x4770);                   // bx lr: connect/exit XIP/flush cache/enter XIP need no flash
      } else {
        setHalf(addr, 0xbe00 | bk);              // bkpt #bk: served by onBreak below
        setHalf(addr + 2, 0x4770);               // then bx lr
      }
    }
    this.mcu.onBreak = (code) => this._onBreak(code);
  }

  _onBreak(code) {
    const r = this.core.registers;
    const flash = this.flash;
    const mflash = this.mcu.flash;
    if (code === BK_ERASE) {
      // flash_range_erase(uint32_t addr, size_t count, uint32_t block_size, uint8_t block_cmd)
      const addr = r[0] >>> 0;
      const count = r[1] >>> 0;
      if (addr + count > FLASH_SIZE || (addr & 0xfff) || (count & 0xfff)) {
        this._fatal(`flash_range_erase(0x${addr.toString(16)}, ${count}): outside the flash or not 4 KiB aligned`);
        return;
      }
      flash.fill(0xff, addr, addr + count);
      mflash.fill(0xff, addr, addr + count);
      const big = r[2] >>> 0 === 0x10000 && (addr & 0xffff) === 0 && (count & 0xffff) === 0;
      const ns = big ? (count / 0x10000) * ERASE_64K_NS : (count / 0x1000) * ERASE_4K_NS;
      this.flashOps.erases++;
      this.flashOps.erased_bytes += count;
      this._stall(ns);
    } else if (code === BK_PROGRAM) {
      // flash_range_program(uint32_t addr, const uint8_t *data, size_t count): NOR programming clears bits
      const addr = r[0] >>> 0;
      const data = r[1] >>> 0;
      const count = r[2] >>> 0;
      if (addr + count > FLASH_SIZE) {
        this._fatal(`flash_range_program(0x${addr.toString(16)}, ${count}): outside the flash`);
        return;
      }
      for (let i = 0; i < count; i++) {
        const v = flash[addr + i] & this.mcu.readUint8(data + i);
        flash[addr + i] = v;
        mflash[addr + i] = v;
      }
      this.flashOps.programs++;
      this.flashOps.programmed_bytes += count;
      this._stall(Math.ceil(count / 256) * PROGRAM_PAGE_NS);
    } else {
      this._fatal(`breakpoint ${code} at 0x${((this.core.PC - 2) >>> 0).toString(16)} (a crash in the firmware)`);
      return;
    }
    if (this.opts.onFlashWrite) this.opts.onFlashWrite();
  }

  _stall(ns) {
    // the CPU waits for the flash (interrupts are off around the SDK's flash calls); time and peripherals go on
    this.flashOps.stall_ns += ns;
    this._catchUpAllTo(this.clock.nanosCounter + ns);
    this.clock.tick(ns);
  }

  _fatal(msg) {
    this.halted = true;
    this.fatal = msg;
    if (this.opts.onFatal) this.opts.onFatal(msg);
  }

  // ---- PIO in step with the CPU ----

  _setupPio(mode) {
    this.pioMode = mode;
    for (const pio of this.mcu.pio) {
      pio._done = 0;                     // chip nanoseconds the PIO has been run up to
      if (mode === 'timer') continue;    // rp2040js's own: 1000 steps per JavaScript event-loop turn
      pio.run = () => {};                // no JavaScript timer: the rig runs it
      if (mode !== 'lazy') continue;
      const read = pio.readUint32.bind(pio);
      const write = pio.writeUint32.bind(pio);
      pio.readUint32 = (off) => {
        this._catchUp(pio, this.clock.nanosCounter);
        return read(off);
      };
      pio.writeUint32 = (off, v) => {
        this._catchUp(pio, this.clock.nanosCounter);
        return write(off, v);
      };
    }
  }

  _stepPio(pio) {
    const ms = pio.machines;
    let any = false;
    for (let i = 0; i < 4; i++) {
      // rp2040js steps disabled machines too; a disabled state machine does nothing on a chip
      if (ms[i].enabled) {
        ms[i].step();
        any = true;
      }
    }
    if (any) {
      pio.checkChangedPins();
      this.pioSteps++;
    }
  }

  _catchUpAllTo(ns) {
    this._catchUp(this.mcu.pio[0], ns);
    this._catchUp(this.mcu.pio[1], ns);
  }

  /** Run a PIO block up to chip time ns: one step per system clock cycle (the clock divider is 1 here).
   * Exact shortcut: when the block's whole state (registers, FIFO levels, pins, IRQ flags) repeats after p steps
   * with its inputs unchanged, it is periodic until something outside changes, so whole periods are skipped. A
   * scratch register X that only counts down by the same amount every period (the encoder program's edge timer)
   * is periodic too, up to that drift: the skip adds it, and stops short of X reaching zero, where `jmp x--`
   * would branch the other way. */
  _catchUp(pio, ns) {
    if (this.pioMode === 'timer') return;
    const target = Math.floor(ns / 8);
    let n = target - pio._done;
    if (n <= 0) return;
    pio._done = target;
    const ms = pio.machines;
    if (!(ms[0].enabled || ms[1].enabled || ms[2].enabled || ms[3].enabled)) return;
    if (pio.irq0IntEnable || pio.irq1IntEnable || this.pioMode === 'every') {
      // interrupts to the CPU or DMA could depend on the timing of each step: no shortcut
      for (let i = 0; i < n; i++) this._stepPio(pio);
      return;
    }
    const WARM = 160;                    // enough for a pin history in ISR to fill with the current inputs
    let i = 0;
    while (i < n) {
      const warm = Math.min(WARM, n - i);
      for (let j = 0; j < warm; j++) this._stepPio(pio);
      i += warm;
      if (i >= n) return;
      const snap = pioState(pio);
      let found = 0;
      let drift = null;
      for (let p = 1; p <= 64 && i < n; p++) {
        this._stepPio(pio);
        i++;
        drift = xDrift(pio, snap);
        if (drift) {
          found = p;
          break;
        }
      }
      if (!found) continue;
      // one more period with the same drift: X moves linearly, not by chance once
      const again = pioState(pio);
      let p = 0;
      for (; p < found && i < n; p++) {
        this._stepPio(pio);
        i++;
      }
      if (i >= n) return;
      const drift2 = xDrift(pio, again);
      if (!drift2 || !sameDrift(drift, drift2)) continue;
      let periods = Math.floor((n - i) / found);
      for (let m = 0; m < 4; m++) {
        const d = drift[m];
        if (!d) continue;
        // a countdown by c per period: at most (X - 1) / c periods before it would reach 0
        const c = (0x100000000 - d) >>> 0;
        if (c > 0xffff) {
          periods = 0;                   // not a small countdown: no shortcut
          break;
        }
        periods = Math.min(periods, Math.floor((ms[m].x - 1) / c) - 1);
      }
      if (periods <= 0) continue;
      for (let m = 0; m < 4; m++) {
        if (drift[m]) ms[m].x = (ms[m].x + periods * (drift[m] - 0x100000000)) >>> 0;
      }
      const skip = periods * found;
      i += skip;
      this.pioSkipped += skip;
      if (i >= n) return;
    }
  }

  // ---- pins ----

  _setupPads() {
    const pads = this.mcu.peripherals[PADS_BANK0];
    const write = pads.writeUint32.bind(pads);
    pads.writeUint32 = (off, v) => {
      write(off, v);
      this.updateInputs();
    };
    const ioBank = this.mcu.peripherals[0x40014];
    const iowrite = ioBank.writeUint32.bind(ioBank);
    ioBank.writeUint32 = (off, v) => {
      iowrite(off, v);
      this.updateInputs();
    };
    this.updateInputs();
  }

  /** Every input pin's level: driven from outside (this.external), else its pull-up/pull-down, else 0. */
  updateInputs() {
    const gpio = this.mcu.gpio;
    let changed = false;
    for (let i = 0; i < gpio.length; i++) {
      const pin = gpio[i];
      let level;
      if (this.external.has(i)) level = !!this.external.get(i);
      else if (pin.pullupEnabled && !pin.pulldownEnabled) level = true;
      else if (pin.pulldownEnabled && !pin.pullupEnabled) level = false;
      else level = pin.rawInputValue;      // floating or bus keeper: keeps its level
      if (level !== pin.rawInputValue) {
        if (!changed) {
          this._catchUpAllTo(this.clock.nanosCounter);
          changed = true;
        }
        pin.setInputValue(level);
      }
    }
  }

  /** Drive pin i from outside (level 0/1), or release it (null). */
  drive(i, level) {
    if (level === null || level === undefined) this.external.delete(i);
    else this.external.set(i, level ? 1 : 0);
    this.updateInputs();
  }

  /** Set several driven input pins at once, after running the PIO up to now (an edge at an exact instant). */
  setPins(levels) {
    this._catchUpAllTo(this.clock.nanosCounter);
    const gpio = this.mcu.gpio;
    for (const [i, level] of levels) {
      this.external.set(i, level);
      const v = !!level;
      if (gpio[i].rawInputValue !== v) gpio[i].setInputValue(v);
    }
  }

  /** A pin's output as the outside sees it: [level 0..1 (PWM: duty), driven (output enabled)]. */
  pinOutput(i) {
    const pin = this.mcu.gpio[i];
    if (pin.functionSelect === 4) {
      const duty = pwmDuty(this.mcu.pwm, i);
      return [duty, true];
    }
    return [pin.outputEnable && pin.outputValue ? 1 : 0, pin.outputEnable];
  }

  // ---- USB CDC ----

  _setupUsb() {
    // every CDC function of the device, in descriptor order (usbhost.mjs): port 0, and CircuitPython's data
    // channel as port 1 when boot.py enabled it
    this.usbHost = new CdcHost(this.mcu.usbCtrl, {
      onConnected: () => {
        if (this.opts.onConnected) this.opts.onConnected();
      },
      onSerial: (port, buf) => {
        if (this.opts.onSerial) this.opts.onSerial(buf, port);
      },
    });
  }

  /** The device enumerated and every CDC port has DTR (a host program may talk to it). */
  get connected() {
    return this.usbHost.connected;
  }

  /** How many CDC ports the device offers (0 before it enumerated). */
  get cdcPorts() {
    return this.usbHost.ports.length;
  }

  /** Bytes from the host toward the device on a CDC port (port 0: the first). */
  sendToDevice(bytes, port = 0) {
    return this.usbHost.send(port, bytes);
  }
}

function pioState(pio) {
  const s = [pio.irq, pio.pinValues, pio.pinDirections];
  for (const m of pio.machines) {
    if (!m.enabled) continue;
    s.push(m.pc, m.x, m.y, m.inputShiftReg, m.inputShiftCount, m.outputShiftReg, m.outputShiftCount,
      m.rxFIFO.itemCount, m.txFIFO.itemCount, m.waiting ? 1 : 0, m.execValid ? 1 : 0);
  }
  return s;
}

/** The block's state against a snapshot: null when anything but the enabled machines' X differs, else per
 * machine the change of X (unsigned 32-bit; 0: unchanged; an array of zeros is a plain repeat). */
function xDrift(pio, snap) {
  if (snap[0] !== pio.irq || snap[1] !== pio.pinValues || snap[2] !== pio.pinDirections) return null;
  const drift = [0, 0, 0, 0];
  let k = 3;
  let idx = 0;
  for (const m of pio.machines) {
    if (!m.enabled) {
      idx++;
      continue;
    }
    if (snap[k] !== m.pc || snap[k + 2] !== m.y || snap[k + 3] !== m.inputShiftReg ||
        snap[k + 4] !== m.inputShiftCount || snap[k + 5] !== m.outputShiftReg ||
        snap[k + 6] !== m.outputShiftCount || snap[k + 7] !== m.rxFIFO.itemCount ||
        snap[k + 8] !== m.txFIFO.itemCount || snap[k + 9] !== (m.waiting ? 1 : 0) ||
        snap[k + 10] !== (m.execValid ? 1 : 0)) return null;
    drift[idx] = (m.x - snap[k + 1]) >>> 0;
    k += 11;
    idx++;
  }
  return drift;
}

function sameDrift(a, b) {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

/** Average level of a PWM-function pin over a PWM period (0..1): compare/(top+1), inverted if so set. */
export function pwmDuty(pwm, pin) {
  const slice = (pin >> 1) & 7;
  const ch = pwm.channels[slice];
  if (!(ch.csr & 1)) return 0;
  const b = pin & 1;
  const cc = b ? ch.cc >>> 16 : ch.cc & 0xffff;
  const top = ch.top & 0xffff;
  let d = Math.min(cc, top + 1) / (top + 1);
  if (ch.csr & (b ? 8 : 4)) d = 1 - d;
  return d;
}

export { REASON_TIMER, REASON_FORCE };
