// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The virtual board's physical model (sim/plant.py) in JavaScript, for the emulated Pico rig: the same equations,
// numerics, robot description keys and noise generator, so the two rigs drive the same robot. sim/plant.py is the
// reference and its header explains the model; tests/test_pico_rig.py runs both on the same duty sequence and
// compares them step by step, the board's sensors included (the battery's terminal voltage and current, the IMU's
// gyro and accelerometer samples, from the same keys, defaults, constants and seeded generators). Differences:
// step() also records the instants inside the step at which the encoder count changed (edge fractions), which the
// rig turns into quadrature edges on the GPIO pins at those chip times; and the IMU part (the register level) is
// the rig's (sensors.mjs), attached as `imu` like sim/imu_parts.py's part is to the Python plant.
import { readFileSync } from 'node:fs';

const TWO_PI = 2.0 * Math.PI;
const GRAVITY = 9.81;               // m/s^2 here: the robot's weight and the accelerometer's z (sim/plant.py's)
const Q15_FULL = 32767;
const PGS_SWEEPS = 6;
const BLOCKED = 1e9;
const DEG = Math.PI / 180.0;
export const IMU_BANDWIDTH_HZ = 50.0;           // the emulated parts' noise bandwidth (sim/plant.py's)
export const IMU_PARTS = ['lsm6ds3', 'mpu6050']; // sim/imu_parts.py PARTS

export class DescriptionError extends Error {}

function num(d, key, lo, hi, path = '') {
  const name = path + key;
  if (!(key in d)) throw new DescriptionError(`robot description: missing key '${name}'`);
  const v = d[key];
  if (typeof v !== 'number') throw new DescriptionError(`robot description: ${name} must be a number, got ${JSON.stringify(v)}`);
  if (!(lo <= v && v <= hi)) throw new DescriptionError(`robot description: ${name}=${v} outside [${lo}, ${hi}]`);
  return v;
}

/** The checks of sim/plant.py validate(), in the same order (the first bad key is named). */
export function validate(desc) {
  num(desc, 'wheel_radius_m', 0.005, 1.0);
  num(desc, 'wheel_separation_m', 0.02, 5.0);
  num(desc, 'mass_kg', 0.05, 500.0);
  num(desc, 'yaw_inertia_kgm2', 1e-6, 500.0);
  num(desc, 'driven_axle_weight_fraction', 0.05, 1.0);
  num(desc, 'traction_mu', 0.01, 3.0);
  num(desc, 'battery_v', 0.0, 60.0);
  for (const sect of ['motor', 'friction', 'encoder']) {
    if (typeof desc[sect] !== 'object' || desc[sect] === null) {
      throw new DescriptionError(`robot description: missing section '${sect}'`);
    }
  }
  const m = desc.motor;
  num(m, 'resistance_ohm', 0.01, 1000.0, 'motor.');
  num(m, 'torque_constant_nm_per_a', 1e-5, 10.0, 'motor.');
  num(m, 'rotor_inertia_kgm2', 0.0, 1.0, 'motor.');
  num(m, 'gear_ratio', 1.0, 10000.0, 'motor.');
  num(desc, 'wheel_inertia_kgm2', 0.0, 10.0);
  num(desc.friction, 'coulomb_nm', 0.0, 100.0, 'friction.');
  num(desc.friction, 'viscous_nms', 0.0, 100.0, 'friction.');
  num(desc.encoder, 'counts_per_rev', 4, 1 << 24, 'encoder.');
  if (desc.encoder.counter_bits !== 16 && desc.encoder.counter_bits !== 32) {
    throw new DescriptionError(`robot description: encoder.counter_bits must be 16 or 32, got ${desc.encoder.counter_bits}`);
  }
  const d = desc.direction || {};
  for (const k of ['motor_left', 'motor_right', 'encoder_left', 'encoder_right']) {
    const v = k in d ? d[k] : 1;
    if (v !== 1 && v !== -1) throw new DescriptionError(`robot description: direction.${k} must be 1 or -1, got ${v}`);
  }
  const s = desc.wheel_radius_scale || {};
  for (const k of ['left', 'right']) if (k in s) num(s, k, 0.5, 1.5, 'wheel_radius_scale.');
  if ('wheel_separation_scale' in desc) num(desc, 'wheel_separation_scale', 0.5, 1.5);
  if ('turn_scrub_per_rad_s' in desc) num(desc, 'turn_scrub_per_rad_s', 0.0, 1.0);
  if ('edge_jitter_counts' in desc.encoder) num(desc.encoder, 'edge_jitter_counts', 0.0, 0.5, 'encoder.');
  if ('battery_internal_resistance_ohm' in desc) num(desc, 'battery_internal_resistance_ohm', 0.0, 10.0);
  if ('imu' in desc) {
    const i = desc.imu;
    if (typeof i !== 'object' || i === null || Array.isArray(i)) throw new DescriptionError('robot description: imu must be an object');
    if (!IMU_PARTS.includes(i.part)) {
      throw new DescriptionError(`robot description: imu.part must be one of ${IMU_PARTS.join(', ')}, got ${JSON.stringify(i.part ?? null)}`);
    }
    if ('address' in i) num(i, 'address', 0, 127, 'imu.');
    mount(i.axes ?? ['x', 'y', 'z']);
    const b = i.gyro_bias_dps ?? [0.0, 0.0, 0.0];
    if (!(Array.isArray(b) && b.length === 3 && b.every((x) => typeof x === 'number' && x >= -50 && x <= 50))) {
      throw new DescriptionError('robot description: imu.gyro_bias_dps must be [x, y, z] deg/s in [-50, 50]');
    }
    for (const [k, hi] of [['gyro_drift_dps_per_sqrt_s', 1.0], ['gyro_noise_dps_per_sqrt_hz', 1.0],
      ['gyro_scale_error', 0.1], ['accel_noise_mg_per_sqrt_hz', 10.0]]) {
      if (k in i) num(i, k, k === 'gyro_scale_error' ? -hi : 0.0, hi, 'imu.');
    }
    if ('seed' in i) num(i, 'seed', 0, 0xffffffff, 'imu.');
  }
  const n = desc.noise || {};
  if ('torque_std_nm' in n) num(n, 'torque_std_nm', 0.0, 10.0, 'noise.');
  if ('seed' in n) num(n, 'seed', 0, 0xffffffff, 'noise.');
  return desc;
}

/** ["x", "-y", "z"] (the part's axis along each board axis) -> [index, sign] lists, as sim/plant.py _mount. */
export function mount(axes) {
  const names = ['x', 'y', 'z'];
  if (Array.isArray(axes) && axes.length === 3) {
    const idx = [];
    const sign = [];
    for (const a of axes) {
      if (typeof a !== 'string') break;
      const neg = a.startsWith('-');
      const nm = neg || a.startsWith('+') ? a.slice(1) : a;
      if (!names.includes(nm)) break;
      idx.push(names.indexOf(nm));
      sign.push(neg ? -1.0 : 1.0);
    }
    if (idx.length === 3 && [...idx].sort().join() === '0,1,2') return [idx, sign];
  }
  throw new DescriptionError(`robot description: imu.axes must name each part axis once, e.g. ["x", "-y", "z"], got ${JSON.stringify(axes)}`);
}

export function loadDescription(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new DescriptionError(`robot description ${path}: cannot read (${e.message})`);
  }
  let desc;
  try {
    desc = JSON.parse(text);
  } catch (e) {
    throw new DescriptionError(`robot description ${path}: not valid JSON (${e.message})`);
  }
  if (typeof desc !== 'object' || desc === null || Array.isArray(desc)) {
    throw new DescriptionError(`robot description ${path}: the top level must be an object`);
  }
  return validate(desc);
}

/** xorshift32, the same sequence as sim/plant.py Rng for a seed. */
export class Rng {
  constructor(seed = 1) {
    this.state = (Number(seed) >>> 0) || 0x9e3779b9;
  }
  next32() {
    let x = this.state;
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    this.state = x;
    return x;
  }
  uniform() {
    return this.next32() / 4294967296.0;
  }
  normal() {
    return (this.uniform() + this.uniform() + this.uniform()) * 2.0 - 3.0;
  }
}

function clamp(x, lo, hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

// Python's round-toward-negative-infinity floor and a wrap to [-pi, pi] exactly as plant.py does it
export class Plant {
  constructor(desc, seed = null) {
    validate(desc);
    this.desc = desc;
    this.r = desc.wheel_radius_m;
    this.b = desc.wheel_separation_m;
    const scale = desc.wheel_radius_scale || {};
    this.r_l = this.r * (scale.left ?? 1.0);
    this.r_r = this.r * (scale.right ?? 1.0);
    this.b = this.b * (desc.wheel_separation_scale ?? 1.0);
    this.turn_scrub = desc.turn_scrub_per_rad_s ?? 0.0;
    this.edge_jitter = desc.encoder.edge_jitter_counts ?? 0.0;
    this.mass = desc.mass_kg;
    this.inertia = desc.yaw_inertia_kgm2;
    const m = desc.motor;
    const g = m.gear_ratio;
    const kt = m.torque_constant_nm_per_a;
    const res = m.resistance_ohm;
    this.torque_per_volt = g * kt / res;
    this.emf_damping = g * g * kt * kt / res;
    this.wheel_inertia = m.rotor_inertia_kgm2 * g * g + desc.wheel_inertia_kgm2;
    this.coulomb = desc.friction.coulomb_nm;
    this.viscous = desc.friction.viscous_nms;
    this.normal_force = this.mass * GRAVITY * desc.driven_axle_weight_fraction / 2.0;
    this.mu = desc.traction_mu;
    this.cpr = Math.trunc(desc.encoder.counts_per_rev);
    this.counter_bits = desc.encoder.counter_bits;
    const d = desc.direction || {};
    this.motor_dir_l = d.motor_left ?? 1;
    this.motor_dir_r = d.motor_right ?? 1;
    this.enc_dir_l = d.encoder_left ?? 1;
    this.enc_dir_r = d.encoder_right ?? 1;
    const noise = desc.noise || {};
    this.torque_std = noise.torque_std_nm ?? 0.0;
    this.seed = Math.trunc(seed === null || seed === undefined ? (noise.seed ?? 1) : seed);
    this.nominal_battery_v = desc.battery_v;
    this.r_internal = desc.battery_internal_resistance_ohm ?? 0.0;
    this.motor_r = res;
    this.emf_per_wheel_rad_s = g * kt;        // ke * G: back-EMF volts per rad/s of the wheel
    // the IMU's error model (sim/plant.py's keys and defaults); its part (sample_period(), sample(gyro, accel)) is
    // attached by whoever owns the bus: sensors.mjs on the rig, a recording stand-in in the tests
    this.imu = null;
    const imu = desc.imu || {};
    [this.imu_map, this.imu_sign] = mount(imu.axes ?? ['x', 'y', 'z']);
    this.gyro_bias0 = (imu.gyro_bias_dps ?? [0.0, 0.0, 0.0]).map((b) => b * DEG);
    this.gyro_drift = (imu.gyro_drift_dps_per_sqrt_s ?? 0.0) * DEG;
    this.gyro_noise = (imu.gyro_noise_dps_per_sqrt_hz ?? 0.0) * DEG * Math.sqrt(IMU_BANDWIDTH_HZ);
    this.gyro_scale = 1.0 + (imu.gyro_scale_error ?? 0.0);
    this.accel_noise = (imu.accel_noise_mg_per_sqrt_hz ?? 0.0) * 1e-3 * GRAVITY * Math.sqrt(IMU_BANDWIDTH_HZ);
    this.imu_seed = Number(imu.seed ?? (this.seed * 7919 + 17)) >>> 0;
    this.reset();
  }

  reset() {
    this.rng = new Rng(this.seed);
    this.battery_v = this.nominal_battery_v;        // open-circuit volts (the control endpoint's "battery")
    this.battery_terminal_v = this.battery_v;       // what the bridges and the ADC see: sags with the current
    this.battery_current = 0.0;
    this.estop_open = false;
    this.a_x = 0.0;                                 // true body acceleration, m/s^2 (the IMU's x)
    this.imu_rng = new Rng(this.imu_seed);
    this.gyro_bias = this.gyro_bias0.slice();
    this.gyro_true = [0.0, 0.0, 0.0];
    this.imu_acc_t = this.imu_acc_wz = this.imu_acc_ax = this.imu_acc_ay = 0.0;
    if (this.imu) this.imu.reset();
    this.energized = false;
    this.t = 0.0;
    this.steps = 0;
    this.reset_pose();
    this.w_l = 0.0;
    this.w_r = 0.0;
    this.angle_l = 0.0;
    this.angle_r = 0.0;
    this.v = 0.0;
    this.v_prev = 0.0;
    this.wz = 0.0;
    this.pos_l = 0.0;        // the encoder disk's (jittered) position at the last step, counts
    this.pos_r = 0.0;
    this.count_l = 0;
    this.count_r = 0;
    this.floor_l = 0;
    this.floor_r = 0;
    this.stalled_l = false;
    this.stalled_r = false;
    this.lifted = false;
    this.encoder_drop = 0.0;
    this.drop_l = 0.0;
    this.drop_r = 0.0;
    this.push_l = 0.0;
    this.push_r = 0.0;
    this.push_until = -1.0;
    this.slip_l = false;
    this.slip_r = false;
    this.duty_l = 0.0;
    this.duty_r = 0.0;
    this.lost_counts = 0;
    this.slip_distance = 0.0;
    this.edges_l = [];       // fractions (0, 1] of the last step at which count_l changed, with the new count
    this.edges_r = [];
  }

  reset_pose() {
    this.x = 0.0;
    this.y = 0.0;
    this.theta = 0.0;
    this.yaw_total = 0.0;   // the heading's change since the start, not wrapped (rad)
    this.distance = 0.0;
  }

  set_stall(wheel, on) {
    if (wheel === 'left' || wheel === 'both') this.stalled_l = !!on;
    if (wheel === 'right' || wheel === 'both') this.stalled_r = !!on;
  }

  set_lift(on) {
    this.lifted = !!on;
    if (on) {
      this.v = 0.0;
      this.wz = 0.0;
    }
  }

  set_encoder_drop(rate) {
    this.set_encoder_drop_wheel('both', rate);
  }

  /** A half-dead encoder on wheel 'left'|'right'|'both': that share of its counts is lost. */
  set_encoder_drop_wheel(wheel, rate) {
    const r = clamp(Number(rate), 0.0, 1.0);
    if (wheel === 'left' || wheel === 'both') this.drop_l = r;
    if (wheel === 'right' || wheel === 'both') this.drop_r = r;
    this.encoder_drop = Math.max(this.drop_l, this.drop_r);
  }

  set_battery(volts) {
    this.battery_v = Number(volts);
    this.battery_terminal_v = this.battery_v - this.r_internal * this.battery_current;
  }

  set_estop(open) {
    this.estop_open = !!open;
  }

  push(wheel, torque, duration = null) {
    if (wheel === 'left' || wheel === 'both') this.push_l = Number(torque);
    if (wheel === 'right' || wheel === 'both') this.push_r = Number(torque);
    this.push_until = duration === null || duration === undefined ? -1.0 : this.t + Number(duration);
  }

  step(dt, duty_l_q15, duty_r_q15) {
    if (this.push_until >= 0.0 && this.t >= this.push_until) {
      this.push_l = 0.0;
      this.push_r = 0.0;
      this.push_until = -1.0;
    }
    const jw = this.wheel_inertia;
    const visc = this.viscous;
    let dl, dr, drive_l, drive_r, damp;
    if (this.energized) {
      dl = clamp(duty_l_q15, -Q15_FULL, Q15_FULL) / Q15_FULL;
      dr = clamp(duty_r_q15, -Q15_FULL, Q15_FULL) / Q15_FULL;
      const kv = this.torque_per_volt * this.battery_terminal_v;
      drive_l = kv * dl * this.motor_dir_l;
      drive_r = kv * dr * this.motor_dir_r;
      damp = this.emf_damping + visc;
    } else {
      dl = dr = 0.0;
      drive_l = drive_r = 0.0;
      damp = visc;
    }
    this.duty_l = dl;
    this.duty_r = dr;
    let ext_l = drive_l + this.push_l;
    let ext_r = drive_r + this.push_r;
    if (this.torque_std > 0.0) {
      ext_l += this.torque_std * this.rng.normal();
      ext_r += this.torque_std * this.rng.normal();
    }
    const jl = jw + damp * dt;
    const jr = jl;
    let wl = (jw * this.w_l + dt * ext_l) / jl;
    let wr = (jw * this.w_r + dt * ext_r) / jr;
    let v = this.v;
    let wz = this.wz;
    const fmax_l = this.stalled_l ? BLOCKED : this.coulomb * dt;
    const fmax_r = this.stalled_r ? BLOCKED : this.coulomb * dt;
    let acc_fl = 0.0, acc_fr = 0.0, acc_cl = 0.0, acc_cr = 0.0;
    const rl = this.r_l;
    const rr = this.r_r;
    let hb = this.b * 0.5;
    if (this.turn_scrub > 0.0) hb *= 1.0 + this.turn_scrub * Math.abs(wz);
    const inv_m = 1.0 / this.mass;
    const inv_j = 1.0 / this.inertia;
    const on_ground = !this.lifted;
    let cmax = 0, k_l = 0, k_r = 0;
    if (on_ground) {
      cmax = this.mu * this.normal_force * dt;
      k_l = rl * rl / jl + inv_m + hb * hb * inv_j;
      k_r = rr * rr / jr + inv_m + hb * hb * inv_j;
    }
    for (let it = 0; it < PGS_SWEEPS; it++) {
      let nw = clamp(acc_fl - wl * jl, -fmax_l, fmax_l);
      wl += (nw - acc_fl) / jl;
      acc_fl = nw;
      nw = clamp(acc_fr - wr * jr, -fmax_r, fmax_r);
      wr += (nw - acc_fr) / jr;
      acc_fr = nw;
      if (on_ground) {
        let s = rl * wl - (v - wz * hb);
        nw = clamp(acc_cl + s / k_l, -cmax, cmax);
        let p = nw - acc_cl;
        acc_cl = nw;
        wl -= rl * p / jl;
        v += p * inv_m;
        wz -= hb * p * inv_j;
        s = rr * wr - (v + wz * hb);
        nw = clamp(acc_cr + s / k_r, -cmax, cmax);
        p = nw - acc_cr;
        acc_cr = nw;
        wr -= rr * p / jr;
        v += p * inv_m;
        wz += hb * p * inv_j;
      }
    }
    if (on_ground) {
      const lim = cmax * 0.999;
      this.slip_l = acc_cl > lim || acc_cl < -lim;
      this.slip_r = acc_cr > lim || acc_cr < -lim;
      const sl = rl * wl - (v - wz * hb);
      const sr = rr * wr - (v + wz * hb);
      this.slip_distance += (Math.abs(sl) + Math.abs(sr)) * dt;
    } else {
      this.slip_l = this.slip_r = false;
      v = wz = 0.0;
    }
    if (this.stalled_l) wl = 0.0;
    if (this.stalled_r) wr = 0.0;
    this.w_l = wl;
    this.w_r = wr;
    this.v = v;
    this.wz = wz;
    this.angle_l += wl * dt;
    this.angle_r += wr * dt;
    const dth = wz * dt;
    const th_mid = this.theta + dth * 0.5;
    const ds = v * dt;
    this.x += ds * Math.cos(th_mid);
    this.y += ds * Math.sin(th_mid);
    let th = this.theta + dth;
    if (th > Math.PI) th -= TWO_PI;
    else if (th < -Math.PI) th += TWO_PI;
    this.theta = th;
    this.yaw_total += dth;
    this.distance += Math.abs(ds);
    this.a_x = dt > 0 ? (v - this.v_prev) / dt : 0.0;
    this.v_prev = v;
    this._battery(dl, dr);
    if (this.imu) this._imu_sample(dt);
    this._encoders();
    this.t += dt;
    this.steps += 1;
  }

  _battery(dl, dr) {
    // supply current of the two bridges this step (duty x armature current; negative while regenerating)
    let vt = this.battery_terminal_v;
    if (this.energized && this.r_internal > 0.0) {
      const ke = this.emf_per_wheel_rad_s;
      const il = (vt * dl - ke * this.w_l * this.motor_dir_l) / this.motor_r;
      const ir = (vt * dr - ke * this.w_r * this.motor_dir_r) / this.motor_r;
      this.battery_current = dl * il + dr * ir;
    } else {
      this.battery_current = 0.0;
    }
    vt = this.battery_v - this.r_internal * this.battery_current;
    this.battery_terminal_v = vt > 0.0 ? vt : 0.0;
  }

  _imu_sample(dt) {
    // the part's sample is the mean over its own output interval (sim/plant.py _imu_sample, line for line)
    this.imu_acc_t += dt;
    this.imu_acc_wz += this.wz * dt;
    this.imu_acc_ax += this.a_x * dt;
    this.imu_acc_ay += this.v * this.wz * dt;
    const per = this.imu.sample_period();
    if (per === null) {
      this.imu_acc_t = this.imu_acc_wz = this.imu_acc_ax = this.imu_acc_ay = 0.0;
      return;
    }
    if (this.imu_acc_t < per - 1e-9) return;
    const T = this.imu_acc_t;
    const rng = this.imu_rng;
    const tr = this.gyro_true;
    tr[0] = 0.0;
    tr[1] = 0.0;
    tr[2] = this.imu_acc_wz / T;
    const meas = [0.0, 0.0, 0.0];
    const acc = [this.imu_acc_ax / T, this.imu_acc_ay / T, GRAVITY];
    this.imu_acc_t = this.imu_acc_wz = this.imu_acc_ax = this.imu_acc_ay = 0.0;
    const step = this.gyro_drift * Math.sqrt(T);
    for (let i = 0; i < 3; i++) {
      if (step > 0.0) this.gyro_bias[i] += step * rng.normal();
      meas[i] = this.gyro_scale * tr[i] + this.gyro_bias[i] + this.gyro_noise * rng.normal();
      acc[i] += this.accel_noise * rng.normal();
    }
    // board axes -> the part's: board axis i is sign[i] x part axis map[i]
    const pg = [0.0, 0.0, 0.0];
    const pa = [0.0, 0.0, 0.0];
    for (let i = 0; i < 3; i++) {
      pg[this.imu_map[i]] = this.imu_sign[i] * meas[i];
      pa[this.imu_map[i]] = this.imu_sign[i] * acc[i];
    }
    this.imu.sample(pg, pa);
  }

  _encoders() {
    const k = this.cpr / TWO_PI;
    let pl = this.angle_l * k * this.enc_dir_l;
    let pr = this.angle_r * k * this.enc_dir_r;
    if (this.edge_jitter > 0.0) {
      // the counter follows the jittered disk position (sim/plant.py: both draws before any lost count)
      const j = 2.0 * this.edge_jitter;
      pl += j * (this.rng.uniform() - 0.5);
      pr += j * (this.rng.uniform() - 0.5);
    }
    let r = this._wheel(this.pos_l, pl, this.floor_l, this.count_l, this.drop_l);
    this.pos_l = pl;
    this.floor_l = r[0];
    this.count_l = r[1];
    this.edges_l = r[2];
    r = this._wheel(this.pos_r, pr, this.floor_r, this.count_r, this.drop_r);
    this.pos_r = pr;
    this.floor_r = r[0];
    this.count_r = r[1];
    this.edges_r = r[2];
  }

  _wheel(pos0, pos1, floor0, count, rate) {
    // as sim/plant.py's _wheel: with a drop rate each crossing is lost on its own (one draw per crossing)
    const fl = Math.floor(pos1);
    const delta = fl - floor0;
    const edges = [];
    if (!delta) return [fl, count, edges];
    const n = Math.abs(delta);
    const dir = delta > 0 ? 1 : -1;
    const span = pos1 - pos0;
    for (let i = 0; i < n; i++) {
      if (rate > 0.0 && !(this.rng.uniform() >= rate)) {
        this.lost_counts += 1;
        continue;
      }
      // the i-th integer boundary crossed: floor0 + 1 + i going up, floor0 - i going down
      const b = dir > 0 ? floor0 + 1 + i : floor0 - i;
      let f = span !== 0 ? (b - pos0) / span : 1.0;
      f = clamp(f, 0.0, 1.0);
      count += dir;
      edges.push(f, count);
    }
    return [fl, count, edges];
  }

  stall_torque() {
    return this.torque_per_volt * this.battery_v;
  }

  truth() {
    return {
      x: this.x, y: this.y, theta: this.theta, yaw_total: this.yaw_total, w_left: this.w_l, w_right: this.w_r,
      t: this.t, v: this.v, omega: this.wz, angle_left: this.angle_l, angle_right: this.angle_r,
      distance: this.distance, slip_left: this.slip_l, slip_right: this.slip_r,
      slip_distance: this.slip_distance, energized: this.energized,
      duty_left: this.duty_l, duty_right: this.duty_r, battery_v: this.battery_v,
      battery_terminal_v: this.battery_terminal_v, battery_current_a: this.battery_current,
      estop_open: this.estop_open, gyro_z_true: this.wz, gyro_bias_z: this.gyro_bias[2],
      counts_left: this.count_l, counts_right: this.count_r, lost_counts: this.lost_counts,
      stalled_left: this.stalled_l, stalled_right: this.stalled_r, lifted: this.lifted,
      encoder_drop: this.encoder_drop, encoder_drop_left: this.drop_l, encoder_drop_right: this.drop_r,
      push_left: this.push_l, push_right: this.push_r,
      steps: this.steps,
    };
  }
}
