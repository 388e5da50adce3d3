# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The virtual board's physical model: two DC gearmotors driving the wheels of a differential-drive robot on the
# ground, two quadrature encoders, and the ground-truth pose. MicroPython (unix port) first; it also runs under
# CPython (host tests and tools may import it), so it uses only math and the language itself.
#
# Stepped once per control period by the sim backend (mcu/hal/sim.py), in the control thread, BEFORE the
# firmware's control step reads the encoders: the duty the firmware wrote in period k drives the motors during
# period k+1, exactly the zero-order hold a PWM peripheral gives.
#
# Model, per wheel i (wheel-side quantities: torque N m, speed rad/s of the wheel, after the gearbox):
#   motor (energized):  T_motor = G*kt*(V - ke*G*w)/R,  V = duty * battery_v   (ke = kt in SI; the winding
#                       inductance is left out: L/R of a small motor is ~0.1 ms, far below the 2 ms period)
#   motor (coast):      no current, no torque, no back-EMF braking (H-bridge outputs off)
#   wheel:              J_w dw/dt = T_motor + T_push + T_noise - T_friction - r*F
#   J_w = J_rotor*G^2 + J_wheel (the rotor's inertia seen through the gearbox)
#   friction:           viscous b*w plus Coulomb friction up to coulomb_nm (static: holds the wheel at rest
#                       while the drive torque is below it -> the real deadband, coulomb_nm / stall torque)
#   ground contact:     F = the force the ground puts on the robot at the wheel, |F| <= mu*N (N = the wheel's
#                       share of the weight). Below the limit the wheel rolls (r*w = contact point speed); above
#                       it the wheel slips with kinetic friction mu*N and the encoder counts the slip.
#   body:               m dv/dt = F_l + F_r;  J dw_z/dt = (F_r - F_l)*b/2   (the robot's mass, seen by the
#                       rolling wheels, is their "reflected robot inertia")
# Back-EMF and viscous friction are treated implicitly (stable at any period); Coulomb friction and the traction
# limit are bounded constraint impulses solved by a few projected Gauss-Seidel sweeps (the method physics
# engines use for contact with friction), which gives exact stick/slip without a stiff spring.
# Ground-truth pose is integrated from the body's real velocity (midpoint heading), never from the encoders.
#
# Board sensors (docs/virtual-board.md, "Sensors"):
#   battery:  terminal volts V = battery_v - R_int * I, I = the bridges' supply current of the last step
#             (sum of duty x armature current (V*duty - ke*G*w)/R per motor): the pack sags under load
#   IMU:      an emulated MPU-6050 or LSM6DS3 on an I2C bus (sim/imu_parts.py, register level), mounted as the robot
#             file's imu.axes says. It measures the body's true yaw rate (the same wz the pose integrates) with
#             gyro = (1 + scale_error) * true + bias + drift + noise per axis, drift a random walk, noise white with
#             the datasheet's density over a 50 Hz bandwidth; accel = (dv/dt, v*wz, g) + noise. Its own seeded
#             generator: adding an IMU changes no other random draw. The firmware's clock is the plant's time
#             (the virtual board's board time counts the plant's steps: sim/world.py), so a rate integrated over
#             the firmware's clock is exactly the world's rotation.
#   e-stop:   estop_open (the switch; the control endpoint opens and closes it)
import math

import imu_parts

TWO_PI = 2.0 * math.pi
GRAVITY = 9.81
Q15_FULL = 32767
PGS_SWEEPS = 6          # constraint sweeps per step; the coupling between constraints is weak, 6 converge
_BLOCKED = 1e9          # friction impulse bound of a blocked (stalled) wheel: it does not turn at all
_DEG = math.pi / 180.0
IMU_BANDWIDTH_HZ = 50.0  # the emulated parts' noise bandwidth (their low-pass filters as the driver sets them)


class DescriptionError(ValueError):
    """A robot description file with a missing or out-of-range key (the message names it)."""


def _num(d, key, lo, hi, path=""):
    name = path + key
    if key not in d:
        raise DescriptionError("robot description: missing key %r" % name)
    v = d[key]
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise DescriptionError("robot description: %s must be a number, got %r" % (name, v))
    if not (lo <= v <= hi):
        raise DescriptionError("robot description: %s=%r outside [%r, %r]" % (name, v, lo, hi))
    return float(v)


def _sign(d, key, path):
    v = d.get(key, 1)
    if v not in (1, -1):
        raise DescriptionError("robot description: %s%s must be 1 or -1, got %r" % (path, key, v))
    return v


def load_description(path):
    """Parse and validate a robot description JSON file -> dict (see sim/robots/default.json)."""
    import json
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DescriptionError("robot description %s: cannot read (%s)" % (path, e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeError:
        # MicroPython's text-mode read raises a UnicodeError without a message: say what it is
        raise DescriptionError("robot description %s: not a JSON file (not UTF-8 text)" % path) from None
    try:
        desc = json.loads(text)
    except ValueError as e:
        raise DescriptionError("robot description %s: not valid JSON (%s)" % (path, e)) from None
    if not isinstance(desc, dict):
        raise DescriptionError("robot description %s: the top level must be an object" % path)
    validate(desc)
    return desc


def validate(desc):
    """Raise DescriptionError naming the first bad key; returns the description."""
    _num(desc, "wheel_radius_m", 0.005, 1.0)
    _num(desc, "wheel_separation_m", 0.02, 5.0)
    _num(desc, "mass_kg", 0.05, 500.0)
    _num(desc, "yaw_inertia_kgm2", 1e-6, 500.0)
    _num(desc, "driven_axle_weight_fraction", 0.05, 1.0)
    _num(desc, "traction_mu", 0.01, 3.0)
    _num(desc, "battery_v", 0.0, 60.0)
    for sect in ("motor", "friction", "encoder"):
        if not isinstance(desc.get(sect), dict):
            raise DescriptionError("robot description: missing section %r" % sect)
    m = desc["motor"]
    _num(m, "resistance_ohm", 0.01, 1000.0, "motor.")
    _num(m, "torque_constant_nm_per_a", 1e-5, 10.0, "motor.")
    _num(m, "rotor_inertia_kgm2", 0.0, 1.0, "motor.")
    _num(m, "gear_ratio", 1.0, 10000.0, "motor.")
    _num(desc, "wheel_inertia_kgm2", 0.0, 10.0)
    f = desc["friction"]
    _num(f, "coulomb_nm", 0.0, 100.0, "friction.")
    _num(f, "viscous_nms", 0.0, 100.0, "friction.")
    e = desc["encoder"]
    _num(e, "counts_per_rev", 4, 1 << 24, "encoder.")
    if e.get("counter_bits") not in (16, 32):
        raise DescriptionError("robot description: encoder.counter_bits must be 16 or 32, got %r"
                               % (e.get("counter_bits"),))
    d = desc.get("direction", {})
    for k in ("motor_left", "motor_right", "encoder_left", "encoder_right"):
        _sign(d, k, "direction.")
    s = desc.get("wheel_radius_scale", {})
    for k in ("left", "right"):
        if k in s:
            _num(s, k, 0.5, 1.5, "wheel_radius_scale.")
    if "wheel_separation_scale" in desc:
        _num(desc, "wheel_separation_scale", 0.5, 1.5)
    if "turn_scrub_per_rad_s" in desc:
        _num(desc, "turn_scrub_per_rad_s", 0.0, 1.0)
    if "edge_jitter_counts" in e:
        _num(e, "edge_jitter_counts", 0.0, 0.5, "encoder.")
    if "battery_internal_resistance_ohm" in desc:
        _num(desc, "battery_internal_resistance_ohm", 0.0, 10.0)
    if "imu" in desc:
        i = desc["imu"]
        if not isinstance(i, dict):
            raise DescriptionError("robot description: imu must be an object")
        if i.get("part") not in imu_parts.PARTS:
            raise DescriptionError("robot description: imu.part must be one of %s, got %r"
                                   % (", ".join(sorted(imu_parts.PARTS)), i.get("part")))
        if "address" in i:
            _num(i, "address", 0, 127, "imu.")
        _mount(i.get("axes", ["x", "y", "z"]))
        for k in ("gyro_bias_dps",):
            b = i.get(k, [0.0, 0.0, 0.0])
            if not (isinstance(b, list) and len(b) == 3 and all(isinstance(x, (int, float)) and -50 <= x <= 50
                                                                  for x in b)):
                raise DescriptionError("robot description: imu.%s must be [x, y, z] deg/s in [-50, 50]" % k)
        for k, hi in (("gyro_drift_dps_per_sqrt_s", 1.0), ("gyro_noise_dps_per_sqrt_hz", 1.0),
                      ("gyro_scale_error", 0.1), ("accel_noise_mg_per_sqrt_hz", 10.0)):
            if k in i:
                _num(i, k, -hi if k == "gyro_scale_error" else 0.0, hi, "imu.")
        if "seed" in i:
            _num(i, "seed", 0, 0xFFFFFFFF, "imu.")
    n = desc.get("noise", {})
    if "torque_std_nm" in n:
        _num(n, "torque_std_nm", 0.0, 10.0, "noise.")
    if "seed" in n:
        _num(n, "seed", 0, 0xFFFFFFFF, "noise.")
    return desc


def _mount(axes):
    """["x", "-y", "z"] (the part's axis along each board axis) -> (index, sign) lists."""
    names = ("x", "y", "z")
    if isinstance(axes, list) and len(axes) == 3:
        idx = []
        sign = []
        for a in axes:
            if not isinstance(a, str):
                break
            neg = a.startswith("-")
            n = a[1:] if neg or a.startswith("+") else a
            if n not in names:
                break
            idx.append(names.index(n))
            sign.append(-1.0 if neg else 1.0)
        if len(idx) == 3 and sorted(idx) == [0, 1, 2]:
            return idx, sign
    raise DescriptionError("robot description: imu.axes must name each part axis once, e.g. [\"x\", \"-y\", "
                           "\"z\"], got %r" % (axes,))


class Rng:
    """xorshift32: the same sequence on MicroPython and CPython for a seed (reproducible runs)."""

    def __init__(self, seed=1):
        self.state = (int(seed) & 0xFFFFFFFF) or 0x9E3779B9

    def next32(self):
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x

    def uniform(self):
        """[0, 1)"""
        return self.next32() / 4294967296.0

    def normal(self):
        """Zero mean, unit variance (sum of three uniforms on [-1, 1): cheap and bounded at +-3)."""
        return (self.uniform() + self.uniform() + self.uniform()) * 2.0 - 3.0


def _clamp(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


class Plant:
    """The robot. step(dt, duty_l_q15, duty_r_q15) advances the physics; counts(buf) gives the raw counters."""

    def __init__(self, desc, seed=None):
        validate(desc)
        self.desc = desc
        self.r = desc["wheel_radius_m"]
        self.b = desc["wheel_separation_m"]
        scale = desc.get("wheel_radius_scale", {})
        # true rolling radius per wheel (a worn or mismatched tyre: systematic odometry error)
        self.r_l = self.r * scale.get("left", 1.0)
        self.r_r = self.r * scale.get("right", 1.0)
        # the real robot's imperfections (sim/robots/default.json documents its values; ideal.json has none):
        # the contact patches' effective separation differs from the drawn one, it grows in fast turns (tyre scrub
        # moves the effective contact outward), and the encoder's edges jitter (vibration, edge noise)
        self.b = self.b * desc.get("wheel_separation_scale", 1.0)
        self.turn_scrub = desc.get("turn_scrub_per_rad_s", 0.0)
        self.edge_jitter = desc["encoder"].get("edge_jitter_counts", 0.0)
        self.mass = desc["mass_kg"]
        self.inertia = desc["yaw_inertia_kgm2"]
        m = desc["motor"]
        g = m["gear_ratio"]
        kt = m["torque_constant_nm_per_a"]
        res = m["resistance_ohm"]
        # wheel-side motor constants: torque per volt, and the back-EMF damping (N m per rad/s of the wheel)
        self.torque_per_volt = g * kt / res
        self.emf_damping = g * g * kt * kt / res
        self.wheel_inertia = m["rotor_inertia_kgm2"] * g * g + desc["wheel_inertia_kgm2"]
        self.coulomb = desc["friction"]["coulomb_nm"]
        self.viscous = desc["friction"]["viscous_nms"]
        # each driven wheel carries half the driven axle's share of the weight
        self.normal_force = self.mass * GRAVITY * desc["driven_axle_weight_fraction"] / 2.0
        self.mu = desc["traction_mu"]
        enc = desc["encoder"]
        self.cpr = int(enc["counts_per_rev"])
        self.counter_bits = int(enc["counter_bits"])
        self.counter_mask = (1 << self.counter_bits) - 1
        d = desc.get("direction", {})
        self.motor_dir_l = d.get("motor_left", 1)
        self.motor_dir_r = d.get("motor_right", 1)
        self.enc_dir_l = d.get("encoder_left", 1)
        self.enc_dir_r = d.get("encoder_right", 1)
        noise = desc.get("noise", {})
        self.torque_std = noise.get("torque_std_nm", 0.0)
        self.seed = int(noise.get("seed", 1) if seed is None else seed)
        self.nominal_battery_v = desc["battery_v"]
        self.r_internal = desc.get("battery_internal_resistance_ohm", 0.0)
        self.motor_r = res
        self.emf_per_wheel_rad_s = g * kt          # ke * G: back-EMF volts per rad/s of the wheel
        # the IMU: its error model (a perfect IMU without the robot file's imu section), and the register-level part
        # on an emulated I2C bus that the model samples into (only with that section; the emulated Pico attaches
        # its own parts as `imu`: sim/pico/plant.mjs)
        self.i2c = imu_parts.I2CBus()
        self.imu = None
        imu = desc.get("imu")
        if imu is not None:
            self.imu = imu_parts.make_part(imu["part"], imu.get("address"))
            self.i2c.attach(self.imu)
        imu = imu or {}
        self.imu_map, self.imu_sign = _mount(imu.get("axes", ["x", "y", "z"]))
        self.gyro_bias0 = [b * _DEG for b in imu.get("gyro_bias_dps", [0.0, 0.0, 0.0])]
        self.gyro_drift = imu.get("gyro_drift_dps_per_sqrt_s", 0.0) * _DEG
        # per-sample white noise: density over the parts' ~50 Hz filter bandwidth
        self.gyro_noise = imu.get("gyro_noise_dps_per_sqrt_hz", 0.0) * _DEG * math.sqrt(IMU_BANDWIDTH_HZ)
        self.gyro_scale = 1.0 + imu.get("gyro_scale_error", 0.0)
        self.accel_noise = imu.get("accel_noise_mg_per_sqrt_hz", 0.0) * 1e-3 * GRAVITY * math.sqrt(
            IMU_BANDWIDTH_HZ)
        self.imu_seed = int(imu.get("seed", self.seed * 7919 + 17)) & 0xFFFFFFFF
        self.reset()

    # ---- state ----

    def reset(self):
        """Back to power-on: at rest at the origin, no faults, counters at zero, the noise re-seeded."""
        self.rng = Rng(self.seed)
        self.battery_v = self.nominal_battery_v     # open-circuit volts (the control endpoint's "battery")
        self.battery_terminal_v = self.battery_v    # what the bridges and the ADC see: sags with the current
        self.battery_current = 0.0
        self.estop_open = False
        self.a_x = 0.0                              # true body acceleration, m/s^2 (the IMU's x)
        self.imu_rng = Rng(self.imu_seed)
        self.gyro_bias = list(self.gyro_bias0)
        self.gyro_true = [0.0, 0.0, 0.0]
        self.imu_acc_t = self.imu_acc_wz = self.imu_acc_ax = self.imu_acc_ay = 0.0
        if self.imu is not None:
            self.imu.answering = True
            self.imu.reset()
        self.energized = False
        self.t = 0.0
        self.steps = 0
        self.reset_pose()
        self.w_l = 0.0           # wheel speeds, rad/s (true, about the axle; + rolls the robot forward)
        self.w_r = 0.0
        self.angle_l = 0.0       # true wheel angles, rad
        self.angle_r = 0.0
        self.v = 0.0             # body forward speed m/s and yaw rate rad/s (true)
        self.v_prev = 0.0
        self.wz = 0.0
        self.count_l = 0         # unwrapped encoder counts (raw sign: encoder direction applied)
        self.count_r = 0
        self.floor_l = 0         # floor(angle * counts per rad): the counts the encoder disk has passed
        self.floor_r = 0
        self.pos_l = 0.0         # the (jittered) disk position at the last step, counts
        self.pos_r = 0.0
        self.edge_t_l = 0.0      # when the last counted edge came, plant time s (the sim backend's edge timer)
        self.edge_t_r = 0.0
        self.stalled_l = False
        self.stalled_r = False
        self.lifted = False
        self.encoder_drop = 0.0  # the larger of the two wheels' rates (reports)
        self.drop_l = 0.0        # share of each wheel's encoder counts lost
        self.drop_r = 0.0
        self.push_l = 0.0        # external torque on the wheel, N m (a hand turning it)
        self.push_r = 0.0
        self.push_until = -1.0   # sim time the push ends; < 0: until changed
        self.slip_l = False
        self.slip_r = False
        self.duty_l = 0.0
        self.duty_r = 0.0
        self.lost_counts = 0
        self.slip_distance = 0.0  # metres the wheels' rims moved relative to the ground, both wheels

    def reset_pose(self):
        self.x = 0.0
        self.y = 0.0
        self.theta = 0.0
        self.yaw_total = 0.0     # the heading's change since the start, not wrapped (rad)
        self.distance = 0.0

    # ---- faults and disturbances ----

    def set_stall(self, wheel, on):
        if wheel in ("left", "both"):
            self.stalled_l = bool(on)
        if wheel in ("right", "both"):
            self.stalled_r = bool(on)

    def set_lift(self, on):
        self.lifted = bool(on)
        if on:
            # held in the air: the body stops where it is
            self.v = 0.0
            self.wz = 0.0

    def set_encoder_drop(self, rate):
        self.set_encoder_drop_wheel("both", rate)

    def set_encoder_drop_wheel(self, wheel, rate):
        """A half-dead encoder on wheel 'left'|'right'|'both': that share of its counts is lost."""
        r = _clamp(float(rate), 0.0, 1.0)
        if wheel in ("left", "both"):
            self.drop_l = r
        if wheel in ("right", "both"):
            self.drop_r = r
        self.encoder_drop = max(self.drop_l, self.drop_r)

    def set_battery(self, volts):
        self.battery_v = float(volts)
        self.battery_terminal_v = self.battery_v - self.r_internal * self.battery_current

    def set_estop(self, open_):
        self.estop_open = bool(open_)

    def set_imu_answering(self, on):
        if self.imu is None:
            raise ValueError("the robot file has no imu")
        self.imu.answering = bool(on)

    def push(self, wheel, torque, duration=None):
        """External torque (N m, + turns the wheel forward) on wheel 'left'|'right'|'both', for duration s
        (None: until the next push)."""
        if wheel in ("left", "both"):
            self.push_l = float(torque)
        if wheel in ("right", "both"):
            self.push_r = float(torque)
        self.push_until = -1.0 if duration is None else self.t + float(duration)

    # ---- physics ----

    def step(self, dt, duty_l_q15, duty_r_q15):
        """Advance the physics by dt seconds with the given raw duties (Q15, the board's output sign)."""
        if self.push_until >= 0.0 and self.t >= self.push_until:
            self.push_l = 0.0
            self.push_r = 0.0
            self.push_until = -1.0
        jw = self.wheel_inertia
        visc = self.viscous
        if self.energized:
            dl = _clamp(duty_l_q15, -Q15_FULL, Q15_FULL) / Q15_FULL
            dr = _clamp(duty_r_q15, -Q15_FULL, Q15_FULL) / Q15_FULL
            kv = self.torque_per_volt * self.battery_terminal_v
            drive_l = kv * dl * self.motor_dir_l
            drive_r = kv * dr * self.motor_dir_r
            damp = self.emf_damping + visc
        else:
            # outputs off: the windings are open, no drive and no back-EMF braking
            dl = dr = 0.0
            drive_l = drive_r = 0.0
            damp = visc
        self.duty_l = dl
        self.duty_r = dr
        ext_l = drive_l + self.push_l
        ext_r = drive_r + self.push_r
        if self.torque_std > 0.0:
            rng = self.rng
            ext_l += self.torque_std * rng.normal()
            ext_r += self.torque_std * rng.normal()
        # implicit damping: J' w_new = J w_old + dt*(T_ext) - dt*damp*w_new
        jl = jw + damp * dt
        jr = jl
        wl = (jw * self.w_l + dt * ext_l) / jl
        wr = (jw * self.w_r + dt * ext_r) / jr
        v = self.v
        wz = self.wz
        # constraint impulses (N m s for friction, N s for contact), bounded
        fmax_l = _BLOCKED if self.stalled_l else self.coulomb * dt
        fmax_r = _BLOCKED if self.stalled_r else self.coulomb * dt
        acc_fl = 0.0
        acc_fr = 0.0
        acc_cl = 0.0
        acc_cr = 0.0
        rl = self.r_l
        rr = self.r_r
        hb = self.b * 0.5
        if self.turn_scrub > 0.0:
            hb *= 1.0 + self.turn_scrub * abs(wz)
        inv_m = 1.0 / self.mass
        inv_j = 1.0 / self.inertia
        on_ground = not self.lifted
        if on_ground:
            cmax = self.mu * self.normal_force * dt
            k_l = rl * rl / jl + inv_m + hb * hb * inv_j
            k_r = rr * rr / jr + inv_m + hb * hb * inv_j
        for _ in range(PGS_SWEEPS):
            # gearbox/bearing friction: drive the wheel speed to zero with at most the Coulomb impulse
            new = _clamp(acc_fl - wl * jl, -fmax_l, fmax_l)
            wl += (new - acc_fl) / jl
            acc_fl = new
            new = _clamp(acc_fr - wr * jr, -fmax_r, fmax_r)
            wr += (new - acc_fr) / jr
            acc_fr = new
            if on_ground:
                # left contact: slip = rim speed - ground speed of the contact point (v - wz*b/2)
                s = rl * wl - (v - wz * hb)
                new = _clamp(acc_cl + s / k_l, -cmax, cmax)
                p = new - acc_cl
                acc_cl = new
                wl -= rl * p / jl
                v += p * inv_m
                wz -= hb * p * inv_j
                s = rr * wr - (v + wz * hb)
                new = _clamp(acc_cr + s / k_r, -cmax, cmax)
                p = new - acc_cr
                acc_cr = new
                wr -= rr * p / jr
                v += p * inv_m
                wz += hb * p * inv_j
        if on_ground:
            # a contact impulse at its bound means the wheel slides on the ground
            lim = cmax * 0.999
            self.slip_l = acc_cl > lim or acc_cl < -lim
            self.slip_r = acc_cr > lim or acc_cr < -lim
            sl = rl * wl - (v - wz * hb)
            sr = rr * wr - (v + wz * hb)
            self.slip_distance += (abs(sl) + abs(sr)) * dt
        else:
            self.slip_l = self.slip_r = False
            v = wz = 0.0
        if self.stalled_l:
            wl = 0.0
        if self.stalled_r:
            wr = 0.0
        self.w_l = wl
        self.w_r = wr
        self.v = v
        self.wz = wz
        self.angle_l += wl * dt
        self.angle_r += wr * dt
        # ground truth: midpoint heading over the step (the body's real motion, not the encoders')
        dth = wz * dt
        th_mid = self.theta + dth * 0.5
        ds = v * dt
        self.x += ds * math.cos(th_mid)
        self.y += ds * math.sin(th_mid)
        th = self.theta + dth
        if th > math.pi:
            th -= TWO_PI
        elif th < -math.pi:
            th += TWO_PI
        self.theta = th
        self.yaw_total += dth
        self.distance += abs(ds)
        self.a_x = (v - self.v_prev) / dt if dt > 0 else 0.0
        self.v_prev = v
        self._battery(dl, dr)
        if self.imu is not None:
            self._imu_sample(dt)
        self._encoders(dt)
        self.t += dt
        self.steps += 1

    def _battery(self, dl, dr):
        # supply current of the two bridges this step (duty x armature current; negative while regenerating)
        vt = self.battery_terminal_v
        if self.energized and self.r_internal > 0.0:
            ke = self.emf_per_wheel_rad_s
            il = (vt * dl - ke * self.w_l * self.motor_dir_l) / self.motor_r
            ir = (vt * dr - ke * self.w_r * self.motor_dir_r) / self.motor_r
            self.battery_current = dl * il + dr * ir
        else:
            self.battery_current = 0.0
        vt = self.battery_v - self.r_internal * self.battery_current
        self.battery_terminal_v = vt if vt > 0.0 else 0.0

    def _imu_sample(self, dt):
        # the part converts at its own output rate (what the driver set: 100 Hz): its sample is the mean over
        # that interval (the parts' low-pass filters average), so nothing between two samples is lost
        self.imu_acc_t += dt
        self.imu_acc_wz += self.wz * dt
        self.imu_acc_ax += self.a_x * dt
        self.imu_acc_ay += self.v * self.wz * dt
        per = self.imu.sample_period()
        if per is None:
            self.imu_acc_t = self.imu_acc_wz = self.imu_acc_ax = self.imu_acc_ay = 0.0
            return
        if self.imu_acc_t < per - 1e-9:
            return
        T = self.imu_acc_t
        rng = self.imu_rng
        true = self.gyro_true
        true[0] = 0.0
        true[1] = 0.0
        true[2] = self.imu_acc_wz / T
        meas = [0.0, 0.0, 0.0]
        acc = [self.imu_acc_ax / T, self.imu_acc_ay / T, GRAVITY]
        self.imu_acc_t = self.imu_acc_wz = self.imu_acc_ax = self.imu_acc_ay = 0.0
        step = self.gyro_drift * math.sqrt(T)
        for i in range(3):
            if step > 0.0:
                self.gyro_bias[i] += step * rng.normal()
            meas[i] = self.gyro_scale * true[i] + self.gyro_bias[i] + self.gyro_noise * rng.normal()
            acc[i] += self.accel_noise * rng.normal()
        # board axes -> the part's: board axis i is sign[i] x part axis map[i]
        pg = [0.0, 0.0, 0.0]
        pa = [0.0, 0.0, 0.0]
        for i in range(3):
            pg[self.imu_map[i]] = self.imu_sign[i] * meas[i]
            pa[self.imu_map[i]] = self.imu_sign[i] * acc[i]
        self.imu.sample(pg, pa)

    def _encoders(self, dt):
        k = self.cpr / TWO_PI
        pos = self.angle_l * k * self.enc_dir_l
        pos_r = self.angle_r * k * self.enc_dir_r
        if self.edge_jitter > 0.0:
            # the counter follows the jittered disk position: a count dithers near an edge, never accumulates
            # uniform in +-edge_jitter counts (one random draw per wheel: the plant step stays cheap)
            j = 2.0 * self.edge_jitter
            pos += j * (self.rng.uniform() - 0.5)
            pos_r += j * (self.rng.uniform() - 0.5)
        self.floor_l, self.count_l, t = self._wheel(self.pos_l, pos, self.floor_l, self.count_l, self.drop_l, dt)
        if t is not None:
            self.edge_t_l = t
        self.pos_l = pos
        self.floor_r, self.count_r, t = self._wheel(self.pos_r, pos_r, self.floor_r, self.count_r, self.drop_r, dt)
        if t is not None:
            self.edge_t_r = t
        self.pos_r = pos_r

    def _wheel(self, pos0, pos1, floor0, count, rate, dt):
        """One encoder over a step from disk position pos0 to pos1 (counts) -> (floor, count, the time of its last
        counted edge or None), as sim/pico/plant.mjs's _wheel. With a drop rate each crossing is lost on its own
        (one draw per crossing): a marginal sensor misses edges at random, so the counted edges come at irregular
        intervals, as they would from a real one."""
        fl = math.floor(pos1)
        delta = fl - floor0
        if not delta:
            return fl, count, None
        n = abs(delta)
        last = -1                       # the index of the last counted crossing of this step
        if rate > 0.0:
            counted = 0
            for i in range(n):
                if self.rng.uniform() >= rate:
                    counted += 1
                    last = i
            self.lost_counts += n - counted
        else:
            counted = n
            last = n - 1
        if last < 0:
            return fl, count, None
        # the last counted crossing: floor0 + 1 + last going up, floor0 - last going down
        b = floor0 + 1 + last if delta > 0 else floor0 - last
        span = pos1 - pos0
        f = _clamp((b - pos0) / span, 0.0, 1.0) if span != 0.0 else 1.0
        return fl, count + (counted if delta > 0 else -counted), self.t + f * dt

    def counts(self, buf):
        """The raw counters (left, right) into buf, wrapped to [0, 2**counter_bits)."""
        buf[0] = self.count_l & self.counter_mask
        buf[1] = self.count_r & self.counter_mask

    def edge_times(self, buf, now_us):
        """When each wheel's last counted edge came, in the caller's us (2**30 wrap) given its time now_us at the
        end of the plant's last step: what an edge timer on the board reads."""
        t = self.t
        buf[0] = (now_us - int((t - self.edge_t_l) * 1e6 + 0.5)) & 0x3FFFFFFF
        buf[1] = (now_us - int((t - self.edge_t_r) * 1e6 + 0.5)) & 0x3FFFFFFF

    # ---- reports ----

    def stall_torque(self):
        """Wheel-side stall torque at 100% duty and the present battery voltage, N m."""
        return self.torque_per_volt * self.battery_v

    def no_load_speed(self):
        """Wheel speed at 100% duty with friction: (stall - Coulomb) / (back-EMF + viscous damping), rad/s."""
        return (self.stall_torque() - self.coulomb) / (self.emf_damping + self.viscous)

    def traction_limit(self):
        """The robot's straight-line acceleration limit, m/s^2 (both wheels at mu*N)."""
        return 2.0 * self.mu * self.normal_force / self.mass

    def truth(self):
        return {
            "x": self.x, "y": self.y, "theta": self.theta, "yaw_total": self.yaw_total, "w_left": self.w_l,
            "w_right": self.w_r,
            "t": self.t, "v": self.v, "omega": self.wz, "angle_left": self.angle_l, "angle_right": self.angle_r,
            "distance": self.distance, "slip_left": self.slip_l, "slip_right": self.slip_r,
            "slip_distance": self.slip_distance, "energized": self.energized,
            "duty_left": self.duty_l, "duty_right": self.duty_r, "battery_v": self.battery_v,
            "battery_terminal_v": self.battery_terminal_v, "battery_current_a": self.battery_current,
            "estop_open": self.estop_open, "imu_answering": self.imu.answering if self.imu is not None else None,
            "gyro_z_true": self.wz, "gyro_bias_z": self.gyro_bias[2] if self.imu is not None else None,
            "counts_left": self.count_l, "counts_right": self.count_r, "lost_counts": self.lost_counts,
            "stalled_left": self.stalled_l, "stalled_right": self.stalled_r, "lifted": self.lifted,
            "encoder_drop": self.encoder_drop, "encoder_drop_left": self.drop_l, "encoder_drop_right": self.drop_r,
            "push_left": self.push_l, "push_right": self.push_r,
            "steps": self.steps,
        }
