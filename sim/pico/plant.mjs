// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The virtual board's physical model (sim/plant.py) in JavaScript, for the emulated Pico rig: the same equations,
// numerics, robot description keys and noise generator, so the two rigs drive the same robot. sim/plant.py is the
// reference and its header explains the model; tests/test_pico_rig.py runs both on the same duty sequence and
// compares them step by step. Differences: step() also records the instants inside the step at which the encoder
// count changed (edge fractions), which the rig turns into quadrature edges on the GPIO pins at those chip times.
import { readFileSync } from 'node:fs';

const TWO_PI = 2.0 * Math.PI;
const GRAVITY = 9.81;
const Q15_FULL = 32767;
const PGS_SWEEPS = 6;
const BLOCKED = 1e9;

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
  const n = desc.noise || {};
  if ('torque_std_nm' in n) num(n, 'torque_std_nm', 0.0, 10.0, 'noise.');
  if ('seed' in n) num(n, 'seed', 0, 0xffffffff, 'noise.');
  return desc;
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
    this.reset();
  }

  reset() {
    this.rng = new Rng(this.seed);
    this.battery_v = this.nominal_battery_v;
    this.energized = false;
    this.t = 0.0;
    this.steps = 0;
    this.reset_pose();
    this.w_l = 0.0;
    this.w_r = 0.0;
    this.angle_l = 0.0;
    this.angle_r = 0.0;
    this.v = 0.0;
    this.wz = 0.0;
    this.count_l = 0;
    this.count_r = 0;
    this.floor_l = 0;
    this.floor_r = 0;
    this.stalled_l = false;
    this.stalled_r = false;
    this.lifted = false;
    this.encoder_drop = 0.0;
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
    this.encoder_drop = clamp(Number(rate), 0.0, 1.0);
  }

  set_battery(volts) {
    this.battery_v = Number(volts);
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
      const kv = this.torque_per_volt * this.battery_v;
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
    const hb = this.b * 0.5;
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
    const a0l = this.angle_l;
    const a0r = this.angle_r;
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
    this.distance += Math.abs(ds);
    this._encoders(a0l, a0r);
    this.t += dt;
    this.steps += 1;
  }

  _encoders(a0l, a0r) {
    const k = this.cpr / TWO_PI;
    let r = this._wheel(a0l * k * this.enc_dir_l, this.angle_l * k * this.enc_dir_l, this.floor_l, this.count_l);
    this.floor_l = r[0];
    this.count_l = r[1];
    this.edges_l = r[2];
    r = this._wheel(a0r * k * this.enc_dir_r, this.angle_r * k * this.enc_dir_r, this.floor_r, this.count_r);
    this.floor_r = r[0];
    this.count_r = r[1];
    this.edges_r = r[2];
  }

  _wheel(pos0, pos1, floor0, count) {
    const fl = Math.floor(pos1);
    const delta = fl - floor0;
    const edges = [];
    if (!delta) return [fl, count, edges];
    const lost = this._lost(delta);
    const n = Math.abs(delta) - Math.abs(lost);
    const dir = delta > 0 ? 1 : -1;
    const span = pos1 - pos0;
    for (let i = 0; i < n; i++) {
      // the i-th integer boundary crossed: floor0 + 1 + i going up, floor0 - i going down
      const b = dir > 0 ? floor0 + 1 + i : floor0 - i;
      let f = span !== 0 ? (b - pos0) / span : 1.0;
      f = clamp(f, 0.0, 1.0);
      count += dir;
      edges.push(f, count);
    }
    return [fl, count, edges];
  }

  _lost(delta) {
    const rate = this.encoder_drop;
    if (rate <= 0.0) return 0;
    const n = Math.abs(delta);
    const expect = n * rate;
    let lost = Math.trunc(expect);
    if (this.rng.uniform() < expect - lost) lost += 1;
    this.lost_counts += lost;
    return delta > 0 ? lost : -lost;
  }

  stall_torque() {
    return this.torque_per_volt * this.battery_v;
  }

  truth() {
    return {
      x: this.x, y: this.y, theta: this.theta, w_left: this.w_l, w_right: this.w_r,
      t: this.t, v: this.v, omega: this.wz, angle_left: this.angle_l, angle_right: this.angle_r,
      distance: this.distance, slip_left: this.slip_l, slip_right: this.slip_r,
      slip_distance: this.slip_distance, energized: this.energized,
      duty_left: this.duty_l, duty_right: this.duty_r, battery_v: this.battery_v,
      counts_left: this.count_l, counts_right: this.count_r, lost_counts: this.lost_counts,
      stalled_left: this.stalled_l, stalled_right: this.stalled_r, lifted: this.lifted,
      encoder_drop: this.encoder_drop, push_left: this.push_l, push_right: this.push_r,
      steps: this.steps,
    };
  }
}
