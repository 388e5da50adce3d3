// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The emulated Pico rig: stock MicroPython rp2 on an emulated RP2040 (rp2040js, chip.mjs) inside the simulated
// robot (plant.mjs, the virtual board's model). docs/pico-rig.md is the manual.
//
//   node sim/pico/rig.mjs [--images DIR] [--flash FILE] [--listen HOST:PORT] [--control HOST:PORT]
//                         [--robot FILE] [--board FILE] [--seed N] [--hold-repl-pin] [--max-speed S]
//                         [--pio lazy|every|timer] [--physics-hz N] [--imu PARTS] [--i2c BUS:SDA:SCL]
//                         [--battery-adc PIN:DIVIDER] [--estop PIN[:LEVEL]] [--clock FILE] [--uf2 FILE] [--quiet]
//
// --uf2 FILE: a MicroPython image written over the flash at start, as a user drags a .uf2 onto the board's RPI-RP2
// drive: its blocks only (the firmware region), so a --flash file's filesystem stays as it was. Used for the image
// with the viperdrive firmware frozen in (tools/build_uf2.py) in place of the stock one.
//
// --clock FILE: the clock file (host/viperdrive/boardtime/clockfile.py has the layout) gets the chip's time after every
// slice, and the link client's generation; while a client whose host writes grants is connected, the chip does not
// run past the grant (the host the machine stops does not find the chip's deadman tripped by its pause).
//
// Prints "control on HOST:PORT" (with --control), then "listening on socket://HOST:PORT": the chip's USB CDC port,
// which pyserial, mpremote and every viperdrive command open like /dev/ttyACM0. The flash file keeps the chip's
// whole 2 MiB flash (MicroPython and its littlefs filesystem) across power cycles of the rig; a missing file starts
// from the MicroPython UF2 on a blank filesystem.
import { readFileSync, writeFileSync, existsSync, renameSync, openSync, readSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Chip, FLASH_SIZE, loadUf2, REASON_TIMER } from './chip.mjs';
import { Plant, Rng, loadDescription, DescriptionError } from './plant.mjs';
import { Sensors, IMU_PARTS, IMU_DEFAULT_ADDRESS } from './sensors.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
export const UF2_NAME = 'micropython-v1.28.0-RPI_PICO.uf2';
// the stock images the rig runs (--firmware), each with where a user gets it
export const FIRMWARES = {
  micropython: { uf2: UF2_NAME, origin: 'MicroPython v1.28.0 for RPI_PICO (micropython.org/download/RPI_PICO)' },
  circuitpython: { uf2: 'circuitpython-10.2.1-raspberry_pi_pico.uf2',
    origin: 'CircuitPython 10.2.1 for raspberry_pi_pico (circuitpython.org/board/raspberry_pi_pico, 10.2.1)' },
};
// CircuitPython's CIRCUITPY drive: a FAT12 volume at this flash offset (1 MiB), which --fat fills
export const CIRCUITPY_OFFSET = 0x100000;
export const BOOTROM_NAME = 'rp2040-bootrom-b1.bin';
const USAGE = 'usage: rig.mjs [--images DIR] [--flash FILE] [--listen HOST:PORT] [--control HOST:PORT] ' +
  '[--robot FILE] [--board FILE] [--seed N] [--hold-repl-pin] [--max-speed S] [--pio lazy|every|timer] ' +
  '[--physics-hz N] [--imu PART[@ADDR],...|none] [--i2c BUS:SDA:SCL] [--battery-adc PIN:DIVIDER|none] ' +
  '[--estop PIN[:CLOSED_LEVEL]|none] [--clock FILE] [--uf2 FILE] [--quiet]';
const FAULT_KINDS = ['cut_link', 'corrupt', 'garbage', 'stall', 'lift', 'encoder_drop', 'battery', 'freeze_control',
  'estop', 'imu'];
// the sensors' wiring when neither the board config nor the command line says: both IMU parts at their default
// addresses on I2C0 (GP16 SDA, GP17 SCL: free on mcu/boards/pico.json), the battery divider (100k over 33k) on
// GP26 (ADC0), the e-stop contact to ground on GP22
const SENSOR_DEFAULTS = {
  i2c: { bus: 0, sda: 16, scl: 17 },
  imu: IMU_PARTS.map((part) => ({ part, address: IMU_DEFAULT_ADDRESS[part] })),
  battery: { pin: 26, divider: 133 / 33 },
  estop: { pin: 22, closed_level: 0 },
};
const COMMANDS = ['truth', 'fault', 'push', 'reset', 'stats', 'ping', 'pin', 'time'];
const RESET_NAMES = { 0: 'POWER_ON', 1: 'WATCHDOG' };

class UsageError extends Error {}

function parseArgs(argv) {
  const o = {
    images: process.env.VIPERDRIVE_PICO_IMAGES || path.resolve(ROOT, '..', 'shared', 'firmware'),
    flash: null, listen: '127.0.0.1:0', control: null,
    robot: path.join(ROOT, 'sim', 'robots', 'pico_mdd10.json'), board: null,
    seed: null, holdReplPin: false, maxSpeed: 1.0, pio: 'lazy', physicsHz: 4000, quiet: false,
    imu: null, i2c: null, batteryAdc: null, estop: null, clock: null, firmware: 'micropython', fat: null,
    console: null, uf2: null,
  };
  const names = { '--images': 'images', '--flash': 'flash', '--listen': 'listen', '--control': 'control',
    '--robot': 'robot', '--board': 'board', '--seed': 'seed', '--max-speed': 'maxSpeed', '--pio': 'pio',
    '--physics-hz': 'physicsHz', '--imu': 'imu', '--i2c': 'i2c', '--battery-adc': 'batteryAdc', '--estop': 'estop',
    '--clock': 'clock', '--firmware': 'firmware', '--fat': 'fat', '--console': 'console', '--uf2': 'uf2' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') throw new UsageError(USAGE);
    if (a === '--hold-repl-pin') { o.holdReplPin = true; continue; }
    if (a === '--quiet') { o.quiet = true; continue; }
    const key = names[a];
    if (!key) throw new UsageError(`unknown option '${a}'\n${USAGE}`);
    if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
    o[key] = argv[++i];
  }
  for (const k of ['seed', 'maxSpeed', 'physicsHz']) {
    if (o[k] === null) continue;
    const v = Number(o[k]);
    if (!Number.isFinite(v)) throw new UsageError(`--${k} must be a number, got '${o[k]}'`);
    o[k] = v;
  }
  if (!(o.maxSpeed > 0)) throw new UsageError('--max-speed must be > 0 (chip seconds per wall second)');
  if (!(o.physicsHz >= 500 && o.physicsHz <= 100000)) throw new UsageError('--physics-hz outside 500..100000');
  if (!['lazy', 'every', 'timer'].includes(o.pio)) throw new UsageError(`--pio must be lazy, every or timer`);
  if (!FIRMWARES[o.firmware]) throw new UsageError(`--firmware must be ${Object.keys(FIRMWARES).join(' or ')}`);
  // the robot's wiring as each firmware names it
  if (o.board === null) o.board = path.join(ROOT, 'mcu', 'boards', o.firmware === 'circuitpython' ? 'circuitpython_pico.json' : 'pico.json');
  if (o.fat && o.firmware !== 'circuitpython') throw new UsageError('--fat is the CIRCUITPY drive: --firmware circuitpython');
  if (o.uf2 && o.firmware !== 'micropython') throw new UsageError('--uf2 is a MicroPython image: --firmware micropython');
  if (o.uf2 && !existsSync(o.uf2)) throw new UsageError(`--uf2 ${o.uf2}: no such file`);
  return o;
}

function hostPort(spec, what) {
  const i = spec.lastIndexOf(':');
  const port = Number(spec.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`${what} must be HOST:PORT, got '${spec}'`);
  }
  return [spec.slice(0, i) || '127.0.0.1', port];
}

/** The two image files, or an error naming the missing one and where users get it. */
export function findImages(dir, firmware = 'micropython') {
  const fw = FIRMWARES[firmware];
  const uf2 = path.join(dir, fw.uf2);
  const rom = path.join(dir, BOOTROM_NAME);
  for (const [f, what] of [[uf2, fw.origin],
    [rom, 'the RP2040 B1 bootrom (raspberrypi/pico-bootrom-rp2040, b1 release)']]) {
    if (!existsSync(f)) throw new UsageError(`missing image ${f}: ${what}; set VIPERDRIVE_PICO_IMAGES or --images`);
  }
  return { uf2, rom };
}

function intOf(text, what) {
  const v = Number(text);
  if (!Number.isInteger(v) || v < 0) throw new UsageError(`${what}: '${text}' is not a non-negative integer`);
  return v;
}

/** The board's sensors and their wiring: the command line over the board config over SENSOR_DEFAULTS. */
export function sensorSpec(cfg, o) {
  const spec = JSON.parse(JSON.stringify(SENSOR_DEFAULTS));
  const ci = cfg.imu;
  if (ci && typeof ci === 'object') {
    const list = Array.isArray(ci) ? ci : [ci];
    spec.imu = list.map((d) => {
      const part = String(d.part ?? '').toLowerCase().replace(/[-_]/g, '');
      if (!IMU_PARTS.includes(part)) throw new UsageError(`board config: imu part '${d.part}' (one of ${IMU_PARTS.join(', ')})`);
      return { part, address: d.address ?? IMU_DEFAULT_ADDRESS[part] };
    });
    const first = list[0];
    if (Number.isInteger(first.i2c)) spec.i2c.bus = first.i2c;
    if (Number.isInteger(first.sda)) spec.i2c.sda = first.sda;
    if (Number.isInteger(first.scl)) spec.i2c.scl = first.scl;
  }
  const cb = cfg.battery;
  if (cb && typeof cb === 'object') {
    spec.battery.pin = cb.adc ?? spec.battery.pin;
    spec.battery.divider = cb.divider ?? spec.battery.divider;
  }
  const ce = cfg.estop;
  if (ce && typeof ce === 'object') {
    spec.estop.pin = ce.pin ?? spec.estop.pin;
    if ('closed' in ce) spec.estop.closed_level = ce.closed;
  }
  if (o.imu !== null) {
    spec.imu = o.imu === 'none' ? [] : o.imu.split(',').map((item) => {
      const [name, addr] = item.split('@');
      const part = name.toLowerCase().replace(/[-_]/g, '');
      if (!IMU_PARTS.includes(part)) throw new UsageError(`--imu: unknown part '${name}' (one of ${IMU_PARTS.join(', ')}, or none)`);
      const address = addr === undefined ? IMU_DEFAULT_ADDRESS[part] : Number(addr);
      if (!Number.isInteger(address) || address < 0x08 || address > 0x77) throw new UsageError(`--imu: bad address '${addr}'`);
      return { part, address };
    });
  }
  if (o.i2c !== null) {
    const f = o.i2c.split(':');
    if (f.length !== 3) throw new UsageError(`--i2c must be BUS:SDA:SCL, got '${o.i2c}'`);
    spec.i2c = { bus: intOf(f[0], '--i2c bus'), sda: intOf(f[1], '--i2c sda'), scl: intOf(f[2], '--i2c scl') };
  }
  if (o.batteryAdc !== null) {
    if (o.batteryAdc === 'none') spec.battery = null;
    else {
      const f = o.batteryAdc.split(':');
      const divider = Number(f[1]);
      if (f.length !== 2 || !(divider >= 1)) throw new UsageError(`--battery-adc must be PIN:DIVIDER (divider >= 1), got '${o.batteryAdc}'`);
      spec.battery = { pin: intOf(f[0], '--battery-adc pin'), divider };
    }
  }
  if (o.estop !== null) {
    if (o.estop === 'none') spec.estop = null;
    else {
      const f = o.estop.split(':');
      spec.estop = { pin: intOf(f[0], '--estop pin'), closed_level: f.length > 1 ? intOf(f[1], '--estop level') : 0 };
    }
  }
  const used = new Map();
  const pins = cfg.pins || {};
  for (const w of ['left', 'right']) {
    for (const [k, v] of Object.entries(pins[w] || {})) if (Number.isInteger(v)) used.set(v, `${w}.${k}`);
    if (Number.isInteger((pins[w] || {}).enc_a)) used.set(pins[w].enc_a + 1, `${w}.enc_b`);
  }
  if (Number.isInteger(cfg.repl_pin)) used.set(cfg.repl_pin, 'repl_pin');
  const mine = [];
  if (spec.imu.length) mine.push([spec.i2c.sda, 'i2c sda'], [spec.i2c.scl, 'i2c scl']);
  if (spec.battery) mine.push([spec.battery.pin, 'battery adc']);
  if (spec.estop) mine.push([spec.estop.pin, 'estop']);
  for (const [pin, what] of mine) {
    if (used.has(pin)) throw new UsageError(`sensor wiring: ${what} on GP${pin}, which the board config uses for ${used.get(pin)}`);
    used.set(pin, what);
  }
  return spec;
}

// the hal backend a board config must name on each firmware
const BACKEND_OF = { micropython: 'rp2', circuitpython: 'circuitpython' };

/** CircuitPython names the Pico's pins (board.GP2): every "GPn" in a board config as the GPIO number n. */
function pinNumbers(v) {
  if (typeof v === 'string') {
    const m = /^GP(\d+)$/.exec(v);
    return m ? Number(m[1]) : v;
  }
  if (Array.isArray(v)) return v.map(pinNumbers);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, pinNumbers(x)]));
  return v;
}

function loadBoardConfig(file, firmware = 'micropython') {
  let cfg;
  try {
    cfg = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`board config ${file}: ${e.message}`);
  }
  const backend = BACKEND_OF[firmware];
  if (cfg.backend !== backend) {
    throw new UsageError(`board config ${file}: backend must be "${backend}" on the Pico rig with ${firmware}`);
  }
  cfg = pinNumbers(cfg);
  const pins = cfg.pins || {};
  for (const w of ['left', 'right']) {
    const p = pins[w] || {};
    if (!Number.isInteger(p.enc_a)) throw new UsageError(`board config ${file}: pins.${w}.enc_a missing`);
  }
  return cfg;
}

/** The RP2040 boot ROM's check of boot stage 2: CRC-32/MPEG-2 (poly 0x04C11DB7, init all ones, MSB first, no final
 * xor) of the flash's first 252 bytes equals the little-endian word at 252. */
export function boot2Valid(flash) {
  let crc = 0xffffffff;
  for (let i = 0; i < 252; i++) {
    crc ^= flash[i] << 24;
    for (let b = 0; b < 8; b++) crc = (crc & 0x80000000) ? ((crc << 1) ^ 0x04c11db7) : (crc << 1);
    crc >>>= 0;
  }
  const want = (flash[252] | (flash[253] << 8) | (flash[254] << 16) | (flash[255] << 24)) >>> 0;
  return crc === want;
}

/** The chip's side of the clock file (layout: host/viperdrive/boardtime/clockfile.py). */
class ClockFile {
  constructor(file) {
    this.fd = openSync(file, 'r+');
    const hdr = Buffer.alloc(8);
    hdr.write('VDCK', 0, 'latin1');
    hdr.writeUInt32LE(1, 4);
    writeSync(this.fd, hdr, 0, 8, 0);
    this.tbuf = Buffer.alloc(16);
    this.gbuf = Buffer.alloc(32);
    this.gen = 0;
    this.connected = false;
    this.grantGen = -1;
    this.grantUs = 0;
    this.holds = 0;
    this.link(0, false);
  }

  time(us) {
    const v = BigInt(Math.floor(us));
    this.tbuf.writeBigUInt64LE(v, 0);
    this.tbuf.writeBigUInt64LE(v, 8);
    writeSync(this.fd, this.tbuf, 0, 16, 8);
  }

  link(gen, connected) {
    this.gen = gen;
    this.connected = connected;
    const b = Buffer.alloc(8);
    b.writeUInt32LE(gen >>> 0, 0);
    b.writeUInt32LE(connected ? 1 : 0, 4);
    writeSync(this.fd, b, 0, 8, 24);
  }

  /** May the chip run up to board time us? Yes unless the connected client's host granted less. */
  granted(us) {
    if (!this.connected) return true;
    if (this.grantGen === this.gen && us <= this.grantUs) return true;
    readSync(this.fd, this.gbuf, 0, 32, 32);
    const g1 = this.gbuf.readUInt32LE(0), u1 = this.gbuf.readBigUInt64LE(8);
    const g2 = this.gbuf.readUInt32LE(16), u2 = this.gbuf.readBigUInt64LE(24);
    if (g1 === g2 && u1 === u2) {
      this.grantGen = g1;
      this.grantUs = Number(u1);
    }
    if (this.grantGen !== this.gen) return true;
    return us <= this.grantUs;
  }
}

class Rig {
  constructor(o) {
    this.o = o;
    this.clockFile = o.clock ? new ClockFile(o.clock) : null;
    const img = findImages(o.images, o.firmware);
    // the link's CDC port: MicroPython's only one; CircuitPython's data channel (boot.py enables it), the console
    // (port 0) staying free for the REPL (--console serves it)
    this.linkPort = o.firmware === 'circuitpython' ? 1 : 0;
    this.bootrom = new Uint32Array(new Uint8Array(readFileSync(img.rom)).buffer);
    if (this.bootrom.length !== 4096) throw new UsageError(`${img.rom}: not a 16 KiB bootrom`);
    this.flash = new Uint8Array(FLASH_SIZE).fill(0xff);
    if (o.flash && existsSync(o.flash)) {
      const data = readFileSync(o.flash);
      if (data.length !== FLASH_SIZE) throw new UsageError(`flash file ${o.flash}: ${data.length} bytes, not ${FLASH_SIZE}`);
      if (!boot2Valid(data)) {
        // the boot ROM checks the same CRC and, without a valid boot2, never starts what the flash holds: the chip
        // sat in the ROM's USB boot mode at 0.03 chip s per wall s with no word said
        throw new UsageError(`flash file ${o.flash}: no valid boot stage 2 in its first 256 bytes (CRC32 mismatch): it ` +
          'is not an RP2040 flash image; give a file the rig wrote (or a new path: the rig starts from the UF2)');
      }
      this.flash.set(data);
      this.flashFrom = o.flash;
    } else {
      loadUf2(readFileSync(img.uf2), this.flash);
      this.flashFrom = img.uf2;
      if (o.fat) {
        // the CIRCUITPY drive as a user's copy left it (host/viperdrive/deploy/fatimage.py makes one)
        const fat = readFileSync(o.fat);
        if (fat.length > FLASH_SIZE - CIRCUITPY_OFFSET) throw new UsageError(`--fat ${o.fat}: ${fat.length} bytes, more than the drive's ${FLASH_SIZE - CIRCUITPY_OFFSET}`);
        this.flash.set(fat, CIRCUITPY_OFFSET);
      }
      this.flashDirty = !!o.flash;
    }
    if (o.uf2) {
      // dragged onto the RPI-RP2 drive: the image's blocks over what the flash holds, the filesystem left as it was
      try {
        loadUf2(readFileSync(o.uf2), this.flash);
      } catch (e) {
        throw new UsageError(`--uf2 ${o.uf2}: ${e.message}`);
      }
      this.flashFrom = o.uf2;
      this.flashDirty = !!o.flash;
    }
    this.cfg = loadBoardConfig(o.board, o.firmware);
    this.desc = loadDescription(o.robot);
    this.plant = new Plant(this.desc, o.seed);
    this.rng = new Rng((this.plant.seed * 2654435761 + 12345) >>> 0);
    const pins = this.cfg.pins;
    this.mode = this.cfg.driver === 'pwm_dir' ? 'pwm_dir' : 'in1_in2';
    this.wheels = ['left', 'right'].map((w) => ({ ...pins[w], enc_b: pins[w].enc_a + 1 }));
    this.external = new Map();
    for (const w of this.wheels) {
      this.external.set(w.enc_a, 0);
      this.external.set(w.enc_b, 0);
    }
    this.replPin = Number.isInteger(this.cfg.repl_pin) ? this.cfg.repl_pin : null;
    if (o.holdReplPin && this.replPin !== null) {
      // the REPL button pulls the pin to its active level
      this.external.set(this.replPin, this.cfg.repl_pull === 'down' ? 1 : 0);
    }
    try {
      this.sensors = new Sensors(this.plant, this.external, sensorSpec(this.cfg, o));
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError(e.message);
    }
    this.edgeQueue = [];            // [chip ns, wheel index, count] in time order
    this.physicsNs = Math.round(1e9 / o.physicsHz);
    this.cut = false;
    this.cutUntil = null;
    this.corruptRate = 0;
    this.frozen = false;
    this.client = null;
    this.clients = 0;
    this.toHost = [];
    this.consoleClient = null;      // --console: CDC port 0 when the link is on another port
    this.consoleTail = Buffer.alloc(0);
    this.tail = Buffer.alloc(0);
    this.stats = { boots: 0, watchdog_resets: 0, power_cycles: 0, bytes_to_board: 0, bytes_from_board: 0,
      dropped_bytes: 0, corrupted_bytes: 0, injected_bytes: 0, boot_ms: null, reset_at_s: null };
    this.bootAt = null;             // chip seconds of the boot whose first link byte is still to come
    this.lastReason = 0;
    this.wall0 = performance.now();
    this.chipBase = 0;              // chip seconds before the current chip instance (resets restart its clock)
    this.speedWindow = [];
  }

  // ---- the chip's lifecycle ----

  boot(reason, scratch) {
    if (this.chip) this.chipBase += this.chip.nanos / 1e9;
    this.lastReason = reason;
    this.stats.boots++;
    this.chip = new Chip(this.bootrom, this.flash, {
      reason, scratch, pioMode: this.o.pio, external: this.external,
      onFlashWrite: () => { this.flashDirty = true; },
      onSerial: (buf, port) => (port === this.linkPort ? this.fromBoard(buf) : this.fromConsole(buf)),
      onFatal: (msg) => this.log(`chip halted: ${msg}`),
    });
    this.bootAt = this.chipSeconds();   // the new chip's clock starts at 0
    this.stats.reset_at_s = this.bootAt;
    this.sensors.attach(this.chip);
    this.chip.updateInputs();
    this.nextPhysics = this.physicsNs;
    this.edgeQueue = [];
    this.setEncoderPins();
    this.frozen = false;
  }

  watchdogReset(reason) {
    const scratch = Uint32Array.from(this.chip.watchdog.scratchData);
    this.stats.watchdog_resets++;
    this.saveFlash();
    this.boot(reason, scratch);
  }

  powerCycle() {
    this.stats.power_cycles++;
    this.plant.reset();
    this.sensors.powerCycle();
    this.cut = false;
    this.cutUntil = null;
    this.corruptRate = 0;
    this.saveFlash();
    this.boot(0, null);
  }

  saveFlash() {
    if (!this.o.flash || !this.flashDirty) return;
    const tmp = this.o.flash + '.tmp';
    writeFileSync(tmp, this.flash);
    renameSync(tmp, this.o.flash);
    this.flashDirty = false;
  }

  // ---- the robot around the chip ----

  /** Each bridge's signed duty (-1..1) from the emulated pins, and whether any bridge is driving. */
  bridgeDuties() {
    const chip = this.chip;
    const out = [0, 0];
    let enabled = true;
    for (let i = 0; i < 2; i++) {
      const w = this.wheels[i];
      if (this.mode === 'pwm_dir') {
        const [pwm] = chip.pinOutput(w.pwm);
        const [dir] = chip.pinOutput(w.dir);
        out[i] = dir >= 0.5 ? pwm : -pwm;
      } else {
        out[i] = chip.pinOutput(w.in1)[0] - chip.pinOutput(w.in2)[0];
      }
      if (Number.isInteger(w.enable) && chip.pinOutput(w.enable)[0] < 0.5) {
        enabled = false;
        out[i] = 0;
      }
    }
    return [out, enabled];
  }

  physicsStep() {
    const p = this.plant;
    const [duty, enabled] = this.bridgeDuties();
    // pwm_dir bridges (MDD10) brake at duty 0 (both low sides on); in1_in2 (DRV8833) coast when both inputs are low
    const hasEnable = this.wheels.some((w) => Number.isInteger(w.enable));
    if (hasEnable) p.energized = enabled;
    else if (this.mode === 'pwm_dir') p.energized = true;
    else p.energized = duty[0] !== 0 || duty[1] !== 0;
    const driving = enabled && (duty[0] !== 0 || duty[1] !== 0);
    // the chip time of the last change of the bridges' drive (an e-stop's reaction time is measured from it)
    if (driving !== this.driving) {
      if (driving) this.outputsOnT = this.chipSeconds();
      else this.outputsOffT = this.chipSeconds();
    }
    this.driving = driving;
    const dt = this.physicsNs / 1e9;
    const t0 = this.chip.nanos;
    p.step(dt, Math.round(duty[0] * 32767), Math.round(duty[1] * 32767));
    const q = this.edgeQueue;
    for (let i = 0; i < 2; i++) {
      const e = i === 0 ? p.edges_l : p.edges_r;
      for (let k = 0; k < e.length; k += 2) q.push([t0 + Math.max(1, Math.round(e[k] * this.physicsNs)), i, e[k + 1]]);
    }
    if (q.length > 1) q.sort((a, b) => a[0] - b[0]);
  }

  setEncoderPins() {
    const c = [this.plant.count_l, this.plant.count_r];
    const lv = [];
    for (let i = 0; i < 2; i++) {
      const s = [0, 1, 3, 2][c[i] & 3];     // x4 Gray sequence: counting up is A leading B
      lv.push([this.wheels[i].enc_a, s & 1], [this.wheels[i].enc_b, s >> 1]);
    }
    this.chip.setPins(lv);
  }

  edge(wheel, count) {
    const w = this.wheels[wheel];
    const s = [0, 1, 3, 2][count & 3];
    this.chip.setPins([[w.enc_a, s & 1], [w.enc_b, s >> 1]]);
  }

  /** Run the chip up to chip time untilNs, with the physics ticks and encoder edges at their instants. */
  advance(untilNs) {
    const chip = this.chip;
    while (chip.nanos < untilNs) {
      let next = Math.min(untilNs, this.nextPhysics);
      if (this.edgeQueue.length && this.edgeQueue[0][0] < next) next = this.edgeQueue[0][0];
      if (next > chip.nanos) {
        chip.halted = this.frozen || !!chip.fatal;
        chip.run(next);
        if (chip.resetRequested) {
          const reason = chip.resetRequested;
          this.log(`watchdog reset (reason ${reason === REASON_TIMER ? 'timeout' : 'forced: machine.reset()'})`);
          this.watchdogReset(reason);
          return;
        }
      }
      const now = chip.nanos;
      if (this.cutUntil !== null && this.chipSeconds() >= this.cutUntil) {
        this.cut = false;
        this.cutUntil = null;
      }
      while (this.edgeQueue.length && this.edgeQueue[0][0] <= now) {
        const [, wheel, count] = this.edgeQueue.shift();
        this.edge(wheel, count);
      }
      if (now >= this.nextPhysics) {
        this.nextPhysics += this.physicsNs;
        this.physicsStep();
      }
    }
  }

  // ---- time ----

  chipSeconds() {
    return this.chipBase + (this.chip ? this.chip.nanos / 1e9 : 0);
  }

  loop() {
    // pace chip time to at most maxSpeed x wall time; between slices, serve the sockets (event loop)
    const SLICE_NS = 1e6;                                  // 1 ms of chip time per slice
    const wallStart = performance.now();
    const chipStart = this.chipSeconds();
    // wall ms of emulation between two turns of the event loop, where the host's bytes come in: a host frame waits
    // up to this long (half of it in chip time at ~0.5x) before the chip sees it
    const budgetMs = 5;
    const step = () => {
      const t0 = performance.now();
      const cf = this.clockFile;
      while (performance.now() - t0 < budgetMs) {
        const wallS = (performance.now() - wallStart) / 1000;
        const ahead = this.chipSeconds() - chipStart - wallS * this.o.maxSpeed;
        if (ahead > 0.002) break;
        // the host's grant: the chip waits for a host the machine does not run
        if (cf && !cf.granted(this.chipSeconds() * 1e6 + SLICE_NS / 1000)) { cf.holds++; break; }
        this.advance(this.chip.nanos + SLICE_NS);
        // the bytes first, then the time: when the host reads chip time T, every byte the chip sent by T is in
        // its socket (a reply is never late only because the host looked between the two)
        this.flushToHost();
        if (cf) cf.time(this.chipSeconds() * 1e6);
      }
      this.sampleSpeed();
      setImmediate(() => setTimeout(step, 0));
    };
    setImmediate(step);
    setInterval(() => this.saveFlash(), 500).unref();
    if (!this.o.quiet) {
      setInterval(() => this.log(`speed ${this.speed().toFixed(3)} chip s per wall s (chip ${this.chipSeconds().toFixed(1)} s)`),
        10000).unref();
    }
  }

  sampleSpeed() {
    const w = this.speedWindow;
    const now = performance.now() / 1000;
    w.push([now, this.chipSeconds()]);
    while (w.length > 2 && now - w[0][0] > 3.0) w.shift();
  }

  /** chip seconds per wall second: the slower of the last ~0.5 s and the last ~3 s (the speed drops at once when
   * the chip gets busy, e.g. a boot after a halted CPU; a host that scales its timeouts by it must not lag) */
  speed() {
    const w = this.speedWindow;
    if (w.length < 2) return 0;
    const b = w[w.length - 1];
    const over = (a) => (b[0] > a[0] ? (b[1] - a[1]) / (b[0] - a[0]) : 0);
    let k = w.length - 2;
    while (k > 0 && b[0] - w[k][0] < 0.5) k--;
    const recent = over(w[k]);
    const long = over(w[0]);
    return recent > 0 && long > 0 ? Math.min(recent, long) : Math.max(recent, long);
  }

  log(msg) {
    process.stderr.write(`pico-rig: ${msg}\n`);
  }

  // ---- the USB CDC link on TCP ----

  fromBoard(buf) {
    this.stats.bytes_from_board += buf.length;
    if (this.bootAt !== null) {
      // boot_ms: chip time from the last reset to the firmware's first byte on the link (its HELLO); a
      // CircuitPython boot compiles every module from source, a MicroPython one imports .mpy files
      this.stats.boot_ms = (this.chipSeconds() - this.bootAt) * 1000;
      this.bootAt = null;
    }
    if (this.cut) {
      this.stats.dropped_bytes += buf.length;
      return;
    }
    for (const b of buf) this.toHost.push(this.corruptByte(b));
    // the last bytes the board wrote, for diagnostics (a traceback printed while nobody was connected)
    this.tail = Buffer.concat([this.tail, Buffer.from(buf)]).subarray(-2048);
  }

  fromConsole(buf) {
    if (this.consoleClient) this.consoleClient.write(Buffer.from(buf));
    this.consoleTail = Buffer.concat([this.consoleTail, Buffer.from(buf)]).subarray(-2048);
  }

  /** --console: the REPL's CDC port on TCP (one client; a second replaces the first). */
  serveConsole(spec) {
    const [host, port] = hostPort(spec, '--console');
    return new Promise((resolve, reject) => {
      const srv = net.createServer((sock) => {
        sock.setNoDelay(true);
        if (this.consoleClient) this.consoleClient.destroy();
        this.consoleClient = sock;
        sock.on('data', (d) => {
          if (this.chip.connected) this.chip.sendToDevice(Array.from(d), 0);
        });
        const gone = () => { if (this.consoleClient === sock) this.consoleClient = null; };
        sock.on('close', gone);
        sock.on('error', gone);
      });
      srv.on('error', (e) => reject(new UsageError(`cannot listen on ${spec}: ${e.message}`)));
      srv.listen(port, host, () => resolve(srv.address()));
    });
  }

  corruptByte(b) {
    if (this.corruptRate > 0 && this.rng.uniform() < this.corruptRate) {
      this.stats.corrupted_bytes++;
      return b ^ (1 << (this.rng.next32() & 7));
    }
    return b;
  }

  flushToHost() {
    if (!this.toHost.length) return;
    if (this.client) this.client.write(Buffer.from(this.toHost));
    this.toHost = [];
  }

  toBoard(data) {
    // a host cannot send to a device that has not enumerated (booting, or just reset: the bytes a real host
    // had queued are lost with the old USB connection); a cut link loses everything
    if (this.cut || !this.chip.connected) {
      this.stats.dropped_bytes += data.length;
      return;
    }
    const bytes = Array.from(data, (b) => this.corruptByte(b));
    this.stats.bytes_to_board += bytes.length;
    this.chip.sendToDevice(bytes, this.linkPort);
  }

  listen(spec) {
    const [host, port] = hostPort(spec, '--listen');
    return new Promise((resolve, reject) => {
      // one client at a time, like a serial port: a connection made while another is open waits until that one
      // closes (a tool that closes the port and opens it again at once must not find it refused)
      const waiting = [];
      const serve = (sock) => {
        sock.setNoDelay(true);
        this.client = sock;
        this.clients++;
        if (this.clockFile) this.clockFile.link(this.clients, true);
        this.toHost = [];
        sock.on('data', (d) => { if (this.client === sock) this.toBoard(d); });
        sock.resume();
      };
      const srv = net.createServer((sock) => {
        sock.pause();
        let done = false;
        const gone = () => {
          if (done) return;
          done = true;
          const i = waiting.indexOf(sock);
          if (i >= 0) waiting.splice(i, 1);
          if (this.client === sock) {
            this.client = null;
            if (this.clockFile) this.clockFile.link(this.clients, false);
            while (waiting.length && !this.client) serve(waiting.shift());
          }
        };
        sock.on('close', gone);
        sock.on('error', gone);
        if (this.client) waiting.push(sock);
        else serve(sock);
      });
      srv.on('error', (e) => reject(new UsageError(`cannot listen on ${spec}: ${e.message}`)));
      srv.listen(port, host, () => resolve(srv.address()));
    });
  }

  // ---- the control endpoint (the same JSON lines as the virtual board's) ----

  serveControl(spec) {
    const [host, port] = hostPort(spec, '--control');
    return new Promise((resolve, reject) => {
      const srv = net.createServer((sock) => {
        sock.setNoDelay(true);
        let buf = '';
        sock.on('data', (d) => {
          buf += d.toString('utf8');
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i).trim();
            buf = buf.slice(i + 1);
            if (!line) continue;
            let rep;
            try {
              const req = JSON.parse(line);
              if (typeof req !== 'object' || req === null || Array.isArray(req)) throw new Error('a request is a JSON object');
              rep = this.handle(req);
            } catch (e) {
              rep = { ok: false, error: e.message };
            }
            sock.write(JSON.stringify(rep) + '\n');
          }
        });
        sock.on('error', () => {});
      });
      srv.on('error', (e) => reject(new UsageError(`cannot listen on ${spec}: ${e.message}`)));
      srv.listen(port, host, () => resolve(srv.address()));
    });
  }

  handle(req) {
    const cmd = req.cmd;
    const p = this.plant;
    if (cmd === 'truth') {
      const t = p.truth();
      // what the emulated bridges do: driving = an enable pin high or, without one, a nonzero duty
      t.energized = !!this.driving;
      t.outputs_on_t = this.outputsOnT ?? null;       // chip s when the bridges last started / stopped driving
      t.outputs_off_t = this.outputsOffT ?? null;
      t.t = this.chipSeconds();
      t.board_s = t.t;                              // board time (the clock file's), as the virtual board names it
      t.plant_t = p.t;
      return { ok: true, ...t, ...this.sensors.truth() };
    }
    if (cmd === 'fault') return this.fault(req);
    if (cmd === 'push') {
      const torque = number(req, 'torque', -50, 50);
      const dur = 'duration' in req && req.duration !== null ? number(req, 'duration', 0, 3600) : null;
      const wheel = wheelOf(req);
      p.push(wheel, torque, dur);
      return { ok: true, wheel, torque };
    }
    if (cmd === 'reset') {
      const what = req.what ?? 'board';
      if (what === 'pose') p.reset_pose();
      else if (what === 'board') this.powerCycle();
      else throw new Error('\'what\' must be "board" (power cycle) or "pose" (zero the ground truth)');
      return { ok: true, what };
    }
    if (cmd === 'stats') return this.statsReply();
    if (cmd === 'ping') return { ok: true };
    if (cmd === 'time') return { ok: true, chip_s: this.chipSeconds(), speed: this.speed(), max_speed: this.o.maxSpeed };
    if (cmd === 'pin') {
      // drive an input pin from outside (level 0/1) or release it (level null): a button, the REPL switch
      const pin = number(req, 'pin', 0, 29);
      const level = req.level === null || req.level === undefined ? null : number(req, 'level', 0, 1);
      if (level === null) this.external.delete(pin);
      else this.external.set(pin, level);
      this.chip.updateInputs();
      return { ok: true, pin, level };
    }
    if (cmd === undefined) return { ok: false, error: `missing "cmd" (one of ${COMMANDS.join(', ')})` };
    return { ok: false, error: `unknown cmd ${JSON.stringify(cmd)} (one of ${COMMANDS.join(', ')})` };
  }

  fault(req) {
    const kind = req.kind;
    const p = this.plant;
    if (kind === 'cut_link') {
      // duration (chip seconds, optional): the rig ends the cut itself, to within a physics step
      this.cut = bool(req, 'on');
      this.cutUntil = this.cut && 'duration' in req ? this.chipSeconds() + number(req, 'duration', 0, 3600) : null;
      return { ok: true, kind, on: this.cut, duration: this.cutUntil === null ? null : req.duration };
    }
    if (kind === 'corrupt') { this.corruptRate = number(req, 'rate', 0, 1); return { ok: true, kind, rate: this.corruptRate }; }
    if (kind === 'garbage') {
      const n = Math.trunc(number(req, 'n', 0, 100000));
      const bytes = [];
      for (let i = 0; i < n; i++) bytes.push(this.rng.next32() & 0xff);
      this.stats.injected_bytes += n;
      this.chip.sendToDevice(bytes, this.linkPort);
      return { ok: true, kind, n };
    }
    if (kind === 'stall') { const wheel = wheelOf(req); const on = bool(req, 'on'); p.set_stall(wheel, on); return { ok: true, kind, wheel, on }; }
    if (kind === 'lift') { const on = bool(req, 'on'); p.set_lift(on); return { ok: true, kind, on }; }
    if (kind === 'encoder_drop') {
      const rate = number(req, 'rate', 0, 1);
      const wheel = wheelOf(req);
      p.set_encoder_drop_wheel(wheel, rate);
      return { ok: true, kind, rate, wheel };
    }
    if (kind === 'battery') { const volts = number(req, 'volts', 0, 60); p.set_battery(volts); return { ok: true, kind, volts }; }
    if (kind === 'estop') {
      // the operator's stop opens the normally-closed contact (open: true); closing it again is open: false
      const s = this.sensors.estop;
      if (!s) throw new Error('this rig has no e-stop input (--estop none)');
      s.set(bool(req, 'open'));
      this.chip.updateInputs();
      // t: the chip time at which the contact changed (between two emulator steps)
      return { ok: true, kind, open: s.open, pin: s.pin, t: this.chipSeconds() };
    }
    if (kind === 'imu') {
      // answer: false: every IMU on the bus stops answering (NACK on its address: unplugged, dead, no power)
      const bus = this.sensors.bus;
      if (!bus) throw new Error('this rig has no IMU (--imu none)');
      bus.nack = !bool(req, 'answer');
      return { ok: true, kind, answer: !bus.nack };
    }
    if (kind === 'freeze_control') {
      // the CPU stops (a control IRQ that never returns): timers, PWM, PIO and the watchdog go on
      this.frozen = bool(req, 'on');
      return { ok: true, kind, on: this.frozen };
    }
    return { ok: false, error: `unknown fault kind ${JSON.stringify(kind)} (one of ${FAULT_KINDS.join(', ')})` };
  }

  statsReply() {
    const c = this.chip;
    const wall = (performance.now() - this.wall0) / 1000;
    return {
      ok: true, ...this.stats, last_reset_cause: RESET_NAMES[this.lastReason ? 1 : 0],
      watchdog_reason: this.lastReason, chip_s: this.chipSeconds(), wall_s: wall,
      speed: this.speed(), speed_overall: wall > 0 ? this.chipSeconds() / wall : 0, max_speed: this.o.maxSpeed,
      lockstep_holds: this.clockFile ? this.clockFile.holds : 0,
      link_clients: this.clients, link_connected: !!this.client, cut_link: this.cut, corrupt_rate: this.corruptRate,
      usb_connected: c.connected, pio_mode: this.o.pio, pio_steps: c.pioSteps, pio_skipped: c.pioSkipped,
      flash: c.flashOps, flash_file: this.o.flash, frozen: this.frozen, halted: c.fatal || null,
      sim_time: this.plant.t, physics_hz: this.o.physicsHz, watchdog_ms: this.cfg.watchdog_ms ?? null,
      sensors: this.sensors.stats(), output_tail: this.tail.toString('latin1'), pc: c.core.PC >>> 0, lr: c.core.LR >>> 0, cpu_waiting: c.core.waiting,
    };
  }
}

function number(req, key, lo, hi) {
  if (!(key in req)) throw new Error(`missing '${key}'`);
  const v = req[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`'${key}' must be a number, got ${JSON.stringify(v)}`);
  if (!(lo <= v && v <= hi)) throw new Error(`'${key}' = ${v} outside [${lo}, ${hi}]`);
  return v;
}

function bool(req, key) {
  const v = key in req ? req[key] : true;
  if (typeof v !== 'boolean') throw new Error(`'${key}' must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function wheelOf(req) {
  const w = req.wheel ?? 'both';
  if (!['left', 'right', 'both'].includes(w)) throw new Error(`'wheel' must be one of left, right, both, got ${JSON.stringify(w)}`);
  return w;
}

async function main(argv) {
  let rig;
  try {
    const o = parseArgs(argv);
    rig = new Rig(o);
    rig.boot(0, null);
    if (o.control) {
      const a = await rig.serveControl(o.control);
      process.stdout.write(`control on ${a.address}:${a.port}\n`);
    }
    if (o.console) {
      const c = await rig.serveConsole(o.console);
      process.stdout.write(`console on socket://${c.address}:${c.port}\n`);
    }
    const a = await rig.listen(o.listen);
    process.stdout.write(`listening on socket://${a.address}:${a.port}\n`);
  } catch (e) {
    if (e instanceof UsageError || e instanceof DescriptionError) {
      process.stderr.write(`pico-rig: error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const stop = () => {
    rig.saveFlash();
    rig.log(`stopped: ${rig.chipSeconds().toFixed(2)} chip s in ${((performance.now() - rig.wall0) / 1000).toFixed(2)} wall s`);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  rig.loop();
}

main(process.argv.slice(2));
