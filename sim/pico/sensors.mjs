// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The board's sensors around the emulated RP2040, at the level the firmware meets them (docs/pico-rig.md,
// "Sensors"):
//   - an IMU on an I2C bus, answered through rp2040js's I2C hooks at the register level: an MPU-6050 (WHO_AM_I
//     0x68, PWR_MGMT_1 sleep/reset, SMPLRT_DIV/CONFIG sample rate, GYRO_CONFIG/ACCEL_CONFIG full scale, big-endian
//     data at 0x3B..0x48) and an LSM6DS3 (WHO_AM_I 0x69, CTRL1_XL/CTRL2_G rate and full scale, CTRL3_C reset,
//     auto-increment and byte order, little-endian data at 0x20..0x2D). What they measure is the plant's
//     (plant.mjs, sim/plant.py's model line for line: the robot file's `imu` section, the mean of the true motion
//     over the part's output interval plus bias, bias walk, noise and scale error from the IMU's own seed); the
//     part puts each sample into its data registers at its full scale. Every byte takes its bus time (9 SCL
//     periods from the I2C block's own SCL counts), so a read costs the chip what it costs on a board;
//   - the battery on an ADC pin through the board's divider: the plant's terminal voltage (its open-circuit
//     battery_v, the `battery` fault, minus the bridges' current across battery_internal_resistance_ohm);
//   - the e-stop input: a normally-closed contact between the pin and its closed level (ground); open, the pin
//     is left to its pull resistor, so firmware that forgets the pull-up does not see the stop. Its state is the
//     plant's estop_open, as on the virtual board.
import { IMU_PARTS } from './plant.mjs';

export { IMU_PARTS };
const G0 = 9.80665;                 // the g the parts' LSB/g are given in (sim/imu_parts.py's G0)
const DEG = Math.PI / 180;
const FUNC_I2C = 3;
const ADC_VREF = 3.3;
const ADC_FIRST_PIN = 26;

export const IMU_DEFAULT_ADDRESS = { mpu6050: 0x68, lsm6ds3: 0x6a };

/** Round half away from zero and clamp to int16, as sim/imu_parts.py _i16. */
function int16(x) {
  const v = x >= 0 ? Math.trunc(x + 0.5) : -Math.trunc(-x + 0.5);
  return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

/** Register file with the I2C register-pointer protocol both parts use: the first byte written after a START
 * sets the pointer, later bytes write there; reads come from the pointer; the pointer advances when the part
 * auto-increments. */
class RegisterDevice {
  constructor(name, address) {
    this.name = name;
    this.address = address;
    this.regs = new Uint8Array(128);
    this.ptr = 0;
    this.first = false;
    this.transfers = 0;
    this.powerOn();
  }

  begin(read) {
    this.transfers++;
    this.first = !read;
  }

  writeByte(v) {
    if (this.first) {
      this.ptr = v & 0x7f;
      this.first = false;
      return true;
    }
    this.writeReg(this.ptr, v);
    this.ptr = this.advance(this.ptr);
    return true;
  }

  readByte() {
    const v = this.readReg(this.ptr);
    this.ptr = this.advance(this.ptr);
    return v;
  }

  advance(p) {
    return (p + 1) & 0x7f;
  }
}

/** InvenSense MPU-6050 (register map rev 4.2): big-endian 16-bit data, high byte first. */
const MPU_GYRO_LSB_DPS = [131.0, 65.5, 32.8, 16.4];        // GYRO_CONFIG FS_SEL 250, 500, 1000, 2000 deg/s
const MPU_ACCEL_LSB_G = [16384.0, 8192.0, 4096.0, 2048.0]; // ACCEL_CONFIG AFS_SEL 2, 4, 8, 16 g

export class Mpu6050 extends RegisterDevice {
  constructor(address) {
    super('mpu6050', address);
  }

  powerOn() {
    this.regs.fill(0);
    this.regs[0x6b] = 0x40;           // PWR_MGMT_1: SLEEP after power-on and after DEVICE_RESET
    this.regs[0x75] = 0x68;           // WHO_AM_I (AD0 does not change it)
    this.data = new Uint8Array(14);   // ACCEL_XOUT_H (0x3B) .. GYRO_ZOUT_L (0x48): zero until the first sample
    this.dataReady = false;
  }

  get asleep() {
    return !!(this.regs[0x6b] & 0x40);
  }

  /** Seconds between new samples: the gyro output rate (8 kHz, 1 kHz with the DLPF on) / (1 + SMPLRT_DIV); null
   * while asleep (sim/imu_parts.py Mpu6050.sample_period). */
  sample_period() {
    if (this.asleep) return null;
    const dlpf = this.regs[0x1a] & 7;
    return (1 + this.regs[0x19]) / (dlpf >= 1 && dlpf <= 6 ? 1000.0 : 8000.0);
  }

  /** A new sample in the part's axes (rad/s, m/s^2) into the data registers at the configured full scale. */
  sample(gyro, accel, tempC = 25.0) {
    if (this.asleep) return;
    const gl = MPU_GYRO_LSB_DPS[(this.regs[0x1b] >> 3) & 3];
    const al = MPU_ACCEL_LSB_G[(this.regs[0x1c] >> 3) & 3];
    const words = [accel[0] / G0 * al, accel[1] / G0 * al, accel[2] / G0 * al,
      (tempC - 36.53) * 340, gyro[0] / DEG * gl, gyro[1] / DEG * gl, gyro[2] / DEG * gl];
    for (let i = 0; i < 7; i++) {
      const w = int16(words[i]) & 0xffff;
      this.data[2 * i] = w >> 8;
      this.data[2 * i + 1] = w & 0xff;
    }
    this.dataReady = true;
  }

  readReg(r) {
    if (r >= 0x3b && r <= 0x48) return this.data[r - 0x3b];
    if (r === 0x3a) {                  // INT_STATUS: DATA_RDY_INT, cleared by the read
      const v = this.dataReady ? 1 : 0;
      this.dataReady = false;
      return v;
    }
    return this.regs[r];
  }

  writeReg(r, v) {
    if (r === 0x75 || (r >= 0x3a && r <= 0x60)) return;      // read-only: WHO_AM_I, status and data
    if (r === 0x6b && (v & 0x80)) {                          // DEVICE_RESET: every register to its reset value
      this.powerOn();
      return;
    }
    this.regs[r] = v & 0xff;
  }
}

const LSM_ODR_HZ = [0, 12.5, 26, 52, 104, 208, 416, 833, 1660, 3330, 6660];
const LSM_XL_MG_PER_LSB = [0.061, 0.488, 0.122, 0.244];        // FS_XL 00: 2 g, 01: 16 g, 10: 4 g, 11: 8 g
const LSM_G_MDPS_PER_LSB = [8.75, 17.5, 35, 70];               // FS_G 00: 245, 01: 500, 10: 1000, 11: 2000 dps

/** STMicroelectronics LSM6DS3 (datasheet DocID026899): little-endian 16-bit data, low byte first (CTRL3_C.BLE
 * swaps), auto-increment with CTRL3_C.IF_INC (set after reset). */
export class Lsm6ds3 extends RegisterDevice {
  constructor(address) {
    super('lsm6ds3', address);
  }

  powerOn() {
    this.regs.fill(0);
    this.regs[0x0f] = 0x69;           // WHO_AM_I
    this.regs[0x12] = 0x04;           // CTRL3_C: IF_INC
    this.regs[0x18] = 0x38;           // CTRL9_XL: accelerometer X, Y, Z on
    this.regs[0x19] = 0x38;           // CTRL10_C: gyro X, Y, Z on
    this.out = new Uint8Array(14);    // OUT_TEMP_L (0x20) .. OUTZ_H_XL (0x2D), as little-endian words
    this.status = 0;
  }

  advance(p) {
    return this.regs[0x12] & 0x04 ? (p + 1) & 0x7f : p;
  }

  /** Seconds between new gyro samples (CTRL2_G's ODR); null while the gyro is powered down
   * (sim/imu_parts.py Lsm6ds3.sample_period). */
  sample_period() {
    const code = this.regs[0x11] >> 4;
    if (code === 0 || code >= LSM_ODR_HZ.length) return null;
    return 1.0 / LSM_ODR_HZ[code];
  }

  /** A new sample in the part's axes: gyro and accelerometer each only while its ODR is not power-down (a
   * powered-down sensor keeps its last output). */
  sample(gyro, accel, tempC = 25.0) {
    const odrG = LSM_ODR_HZ[this.regs[0x11] >> 4] || 0;
    const odrXl = LSM_ODR_HZ[this.regs[0x10] >> 4] || 0;
    if (!odrG && !odrXl) return;
    const c2 = this.regs[0x11];
    const mdps = c2 & 0x02 ? 4.375 : LSM_G_MDPS_PER_LSB[(c2 >> 2) & 3];
    const gyroLsb = 1000 / mdps / DEG;                                      // LSB per rad/s
    const accLsb = 1000 / LSM_XL_MG_PER_LSB[(this.regs[0x10] >> 2) & 3] / G0;
    const gEn = this.regs[0x19];
    const aEn = this.regs[0x18];
    const w = new Array(7).fill(null);
    w[0] = (tempC - 25) * 16;                                               // 16 LSB/degC, 0 at 25 degC
    if (odrG) for (let i = 0; i < 3; i++) w[1 + i] = gEn & (8 << i) ? gyro[i] * gyroLsb : 0;
    if (odrXl) for (let i = 0; i < 3; i++) w[4 + i] = aEn & (8 << i) ? accel[i] * accLsb : 0;
    for (let i = 0; i < 7; i++) {
      if (w[i] === null) continue;                  // a sensor in power-down keeps its last output
      const v = int16(w[i]) & 0xffff;
      this.out[2 * i] = v & 0xff;
      this.out[2 * i + 1] = v >> 8;
    }
    this.status = 0x04 | (odrG ? 0x02 : 0) | (odrXl ? 0x01 : 0);          // TDA, GDA, XLDA
  }

  readReg(r) {
    if (r >= 0x20 && r <= 0x2d) {
      let k = r - 0x20;
      if (this.regs[0x12] & 0x02) k ^= 1;           // BLE: the high byte at the lower address
      if (r === 0x2d) this.status = 0;             // the last output byte read: the data-ready flags clear
      return this.out[k];
    }
    if (r === 0x1e) return this.status;             // STATUS_REG
    return this.regs[r];
  }

  writeReg(r, v) {
    if (r === 0x0f || (r >= 0x1e && r <= 0x2d)) return;      // read-only: WHO_AM_I, status and data
    if (r === 0x12 && (v & 0x01)) {                          // SW_RESET: the control registers to their defaults
      this.powerOn();
      return;
    }
    this.regs[r] = v & (r === 0x12 ? 0x7e : 0xff);           // BOOT (bit 7) completes at once here
  }
}

/** The devices on one of the RP2040's I2C blocks, wired to its SDA/SCL pins: rp2040js's I2C hooks answered with
 * each bus phase's time (START/STOP one SCL period, a byte with its ACK nine) from the block's SCL counts. A device
 * answers only while both pins are switched to the I2C function (other pins: nobody on the bus, NACK). */
export class I2CBus {
  constructor(index, sda = null, scl = null) {
    this.index = index;
    this.devices = new Map();
    this.nack = false;              // fault: every device stops answering (a dead or unplugged IMU)
    this.stats = { transfers: 0, nacks: 0, bytes: 0 };
    this.sda = sda;
    this.scl = scl;
    if (sda === null) return;       // a block with nothing wired to it: every address is a NACK
    if (!(sda % 2 === 0 && ((sda >> 1) & 1) === index)) throw new Error(`GP${sda} is not an SDA pin of I2C${index}`);
    if (!(scl % 2 === 1 && ((scl >> 1) & 1) === index)) throw new Error(`GP${scl} is not an SCL pin of I2C${index}`);
  }

  add(dev) {
    if (this.devices.has(dev.address)) throw new Error(`two I2C devices at 0x${dev.address.toString(16)}`);
    this.devices.set(dev.address, dev);
  }

  /** Hook the bus to a (new) chip's I2C block. */
  attach(chip) {
    const mcu = chip.mcu;
    const i2c = mcu.i2c[this.index];
    this.i2c = i2c;
    this.chip = chip;
    let pending = null;
    const alarm = mcu.clock.createAlarm(() => {
      const f = pending;
      pending = null;
      if (f) f();
    });
    // TX_EMPTY as the SDK sets the block up (IC_CON.TX_EMPTY_CTRL): raised when the FIFO is at or below its
    // threshold AND the command last popped has finished on the wire. rp2040js raises it as the command is popped
    // (before its byte is sent) and not after an abort flushed the FIFO, so the SDK waited for it until its
    // timeout on a NACK (ETIMEDOUT instead of a real Pico's EIO) and read an abort a byte late
    const R_TX_EMPTY = 1 << 4;
    const raise = i2c.setInterrupts.bind(i2c);
    let onWire = false;
    i2c.setInterrupts = (mask) => {
      if (onWire) mask &= ~R_TX_EMPTY;
      if (mask) raise(mask);
    };
    const done = (f) => {
      onWire = false;
      f();
      if (!onWire && i2c.txFIFO.itemCount <= i2c.txThreshold) raise(R_TX_EMPTY);
    };
    const later = (periods, f) => {
      onWire = true;
      pending = () => done(f);
      alarm.schedule(Math.max(1, Math.round(periods * this.sclNs())));
    };
    let dev = null;
    i2c.onStart = () => later(1, () => i2c.completeStart());
    i2c.onConnect = (address, mode) => {
      dev = this.wired() && !this.nack ? this.devices.get(address) || null : null;
      this.stats.transfers++;
      if (dev) dev.begin(mode === 1);
      else this.stats.nacks++;
      later(9, () => i2c.completeConnect(!!dev));
    };
    i2c.onWriteByte = (v) => {
      this.stats.bytes++;
      const ack = !!dev && !this.nack && dev.writeByte(v);
      later(9, () => i2c.completeWrite(ack));
    };
    i2c.onReadByte = () => {
      this.stats.bytes++;
      const v = dev && !this.nack ? dev.readByte() : 0xff;    // nobody drives SDA: the pull-ups read 1s
      later(9, () => i2c.completeRead(v));
    };
    i2c.onStop = () => {
      dev = null;
      later(1, () => i2c.completeStop());
    };
    if (this.sda !== null) this.attachPins(chip);
  }

  /** The same devices on the wires, for a master that bit-bangs SDA/SCL as GPIOs: MicroPython's rp2 port does
   * that for zero-length writes (I2C.scan(), which the hardware block cannot send) and SoftI2C does it always. The
   * lines are open-drain with pull-ups: low while a side drives it low. A START is SDA falling while SCL is high,
   * a STOP SDA rising; bits are sampled on SCL rising and changed while it is low; the device pulls SDA low for its
   * ACK and for its 0 bits. */
  attachPins(chip) {
    const g = chip.mcu.gpio;
    const LOW = 0;                  // GPIOPinState.Low: output enabled, driving 0
    const s = { sda: 1, scl: 1, phase: 'idle', bits: 0, byte: 0, dev: null, read: false, hold: false, ack: true };
    const hold = (low) => {
      if (low === s.hold) return;
      s.hold = low;
      chip.drive(this.sda, low ? 0 : null);
    };
    const bit = () => {
      // a read: the device's next bit, MSB first, while SCL is low
      hold(!((s.byte >> (7 - s.bits)) & 1));
    };
    const update = () => {
      const sda = g[this.sda].value === LOW || s.hold ? 0 : 1;
      const scl = g[this.scl].value === LOW ? 0 : 1;
      const psda = s.sda;
      const pscl = s.scl;
      s.sda = sda;
      s.scl = scl;
      if (scl && pscl && sda !== psda && !s.hold) {
        if (!sda) {                                          // START (or repeated START)
          s.phase = 'addr';
          s.bits = 0;
          s.byte = 0;
          this.stats.transfers++;
        } else {                                             // STOP
          s.phase = 'idle';
          s.dev = null;
          hold(false);
        }
        return;
      }
      if (scl === pscl || s.phase === 'idle') return;
      if (scl) {                                             // SCL rising: sample
        if (s.phase === 'addr' || s.phase === 'write') {
          if (s.bits < 8) {
            s.byte = (s.byte << 1) | sda;
            s.bits++;
          }
        } else if (s.phase === 'ackin') {
          s.ack = !sda;                                      // the master's ACK of a byte it read
        }
        return;
      }
      // SCL falling: change SDA
      if ((s.phase === 'addr' || s.phase === 'write') && s.bits === 8) {
        let ack;
        if (s.phase === 'addr') {
          const addr = s.byte >> 1;
          s.read = !!(s.byte & 1);
          s.dev = !this.nack ? this.devices.get(addr) || null : null;
          ack = !!s.dev;
          if (s.dev) s.dev.begin(s.read);
          else this.stats.nacks++;
        } else {
          this.stats.bytes++;
          ack = !!s.dev && !this.nack && s.dev.writeByte(s.byte);
        }
        hold(ack);
        s.phase = ack ? 'ackout' : 'nacked';
        return;
      }
      if (s.phase === 'ackout') {                            // the 9th clock of our ACK is over
        hold(false);
        s.bits = 0;
        s.byte = 0;
        if (s.read) {
          s.phase = 'read';
          s.byte = s.dev.readByte();
          this.stats.bytes++;
          bit();
        } else {
          s.phase = 'write';
        }
        return;
      }
      if (s.phase === 'read') {
        s.bits++;
        if (s.bits < 8) bit();
        else {
          hold(false);                                       // the master's ACK bit
          s.phase = 'ackin';
        }
        return;
      }
      if (s.phase === 'ackin') {
        if (s.ack) {
          s.bits = 0;
          s.byte = s.dev.readByte();
          this.stats.bytes++;
          s.phase = 'read';
          bit();
        } else {
          s.phase = 'nacked';                                // the master ends with a NACK, then STOP
        }
        return;
      }
      if (s.phase === 'nacked') hold(false);
    };
    g[this.sda].addListener(update);
    g[this.scl].addListener(update);
  }

  /** One SCL period in chip ns: (high + low count) system clocks of 8 ns, as the block times its SCL. */
  sclNs() {
    const i2c = this.i2c;
    const counts = i2c.sclHighPeriod + i2c.sclLowPeriod;
    return (counts > 0 ? counts : 312) * 8;
  }

  wired() {
    if (this.sda === null) return false;
    const g = this.chip.mcu.gpio;
    return g[this.sda].functionSelect === FUNC_I2C && g[this.scl].functionSelect === FUNC_I2C;
  }

  powerCycle() {
    for (const d of this.devices.values()) d.powerOn();
  }
}

/** The pack and the board's divider to an ADC pin: the plant's terminal voltage (sim/plant.py's battery model). */
export class Battery {
  constructor(plant, { pin, divider }) {
    if (!(pin >= ADC_FIRST_PIN && pin <= 29)) throw new Error(`battery ADC pin GP${pin}: the RP2040's ADC inputs are GP26..GP29`);
    if (!(divider >= 1)) throw new Error(`battery divider ${divider}: must be >= 1 (V_battery / V_pin)`);
    this.plant = plant;
    this.pin = pin;
    this.divider = divider;
    this.samples = 0;
    this.sampledVolts = null;       // the terminal volts at the last conversion's sampling instant
  }

  terminalVolts() {
    return this.plant.battery_terminal_v;
  }

  /** The ADC's 12-bit code for the pack's terminal volts (floor(V / divider / 3.3 V * 4096), clamped). */
  code(volts = this.terminalVolts()) {
    const v = volts / this.divider;
    const c = Math.floor(v / ADC_VREF * 4096);
    return c < 0 ? 0 : c > 4095 ? 4095 : c;
  }

  attach(chip) {
    const adc = chip.mcu.adc;
    const channel = this.pin - ADC_FIRST_PIN;
    // the conversion samples at its start and completes after the ADC's 2 us (96 cycles of 48 MHz)
    adc.onADCRead = (ch) => {
      adc.currentChannel = ch;
      this.samples++;
      this.sampledVolts = this.terminalVolts();
      adc.channelValues[channel] = this.code(this.sampledVolts);
      adc.sampleAlarm.schedule(adc.sampleTime * 1000);
    };
  }
}

/** The e-stop: a normally-closed contact from the pin to closedLevel (0: ground). Closed, the contact drives
 * the pin; open (pressed, or a broken wire), nothing does and the pin reads its pull resistor. */
export class EStop {
  constructor(plant, external, { pin, closedLevel }) {
    if (!(pin >= 0 && pin <= 29)) throw new Error(`e-stop pin GP${pin}: not a GPIO`);
    this.plant = plant;
    this.external = external;
    this.pin = pin;
    this.closedLevel = closedLevel ? 1 : 0;
    this.apply();
  }

  get open() {
    return this.plant.estop_open;
  }

  set(open) {
    this.plant.set_estop(open);
    this.apply();
  }

  apply() {
    if (this.open) this.external.delete(this.pin);
    else this.external.set(this.pin, this.closedLevel);
  }
}

/** Every sensor of the board from the rig's sensor spec (rig.mjs sensorSpec): {imu: [{part, address}], i2c:
 * {bus, sda, scl}, battery: {pin, divider}, estop: {pin, closed_level}}. The plant's IMU model feeds the parts:
 * attached as plant.imu, they sample at the period of the first one the firmware woke (a firmware drives one). */
export class Sensors {
  constructor(plant, external, spec) {
    this.plant = plant;
    this.bus = null;
    this.imus = [];
    this.emptyBuses = [];
    this.last = null;               // the last sample the plant gave the parts: {gyro, accel} in the part's axes
    if (spec.imu && spec.imu.length) {
      this.bus = new I2CBus(spec.i2c.bus, spec.i2c.sda, spec.i2c.scl);
      for (const d of spec.imu) {
        const dev = d.part === 'mpu6050' ? new Mpu6050(d.address) : new Lsm6ds3(d.address);
        this.bus.add(dev);
        this.imus.push(dev);
      }
      const parts = this.imus;
      plant.imu = {
        sample_period: () => {
          for (const d of parts) {
            const per = d.sample_period();
            if (per !== null) return per;
          }
          return null;
        },
        sample: (gyro, accel) => {
          this.last = { gyro: gyro.slice(), accel: accel.slice() };
          for (const d of parts) d.sample(gyro, accel);
        },
        reset: () => {
          this.last = null;
          for (const d of parts) d.powerOn();
        },
      };
    }
    this.battery = spec.battery ? new Battery(plant, { pin: spec.battery.pin, divider: spec.battery.divider }) : null;
    // the I2C blocks with nothing on them still answer as a real bus does (a NACK), with the bus timing
    for (const i of [0, 1]) if (!this.bus || this.bus.index !== i) this.emptyBuses.push(new I2CBus(i));
    this.estop = spec.estop ? new EStop(plant, external, { pin: spec.estop.pin, closedLevel: spec.estop.closed_level ?? 0 }) : null;
  }

  attach(chip) {
    if (this.bus) this.bus.attach(chip);
    for (const b of this.emptyBuses) b.attach(chip);
    if (this.battery) this.battery.attach(chip);
  }

  powerCycle() {
    if (this.bus) {
      this.bus.nack = false;
      this.bus.powerCycle();
    }
    if (this.estop) this.estop.set(false);
  }

  truth() {
    // the plant's truth has the battery's terminal volts and current, the e-stop, the true yaw rate and the bias
    const t = {};
    if (this.battery) {
      t.battery_adc_code = this.battery.code();
      t.battery_adc_sampled_v = this.battery.sampledVolts;
    }
    if (this.imus.length) {
      const last = this.last;
      t.imu = this.imus.map((d) => ({
        part: d.name, address: d.address, gyro_bias_rad_s: this.plant.gyro_bias.slice(),
        gyro_rad_s: last ? last.gyro : null, accel_m_s2: last ? last.accel : null, transfers: d.transfers,
      }));
      t.imu_nack = this.bus.nack;
      t.imu_answering = !this.bus.nack;
    }
    return t;
  }

  stats() {
    return {
      i2c: this.bus ? { bus: this.bus.index, sda: this.bus.sda, scl: this.bus.scl, ...this.bus.stats } : null,
      adc_samples: this.battery ? this.battery.samples : 0,
    };
  }
}
