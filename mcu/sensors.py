# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The sensor task (slow loop, fixed rate): the IMU (mcu/imu.py), the battery ADC, the e-stop state, the gyro bias
# while the encoders say the robot is still, the gyro heading increment the board odometry takes, and the
# SENSORS_DATA stream. docs/firmware.md, "Sensors".
#
# Never in the control period: an I2C burst takes ~0.4 ms at 400 kHz and can time out. The e-stop itself is
# checked in the control period (fixedstep.py); this task only reports its state.
#
# sample_imu() (the driver's read, its integer scaling and axis map, the bias estimate) is allocation-free after
# start (mcu/tests/mptest_imu.py: heap_lock). The heading increment is a float (the odometry is floats anyway).
import math
from array import array

from . import imu as imu_mod
from .hal.portable import ticks_diff
from .shared import protocol

STILL_COUNTS = 1                # the dither a resting quadrature encoder shows on an edge
BIAS_WINDOW = 32                # still samples averaged into one bias estimate (0.32 s at 100 Hz)
BIAS_SHIFT = 2                  # after the first window: bias += (window mean - bias) / 4
BATTERY_SHIFT = 3               # battery low-pass: y += (x - y) / 8 per sample (~80 ms at 100 Hz)
# samples later than CATCH_UP_PERIODS periods and CATCH_UP_US are not made up for (the schedule restarts from now):
# a slow-loop pass on an RP2040 that exchanges SET_VEL/STATE at 100 Hz is now and then ~50 ms late
# (bench/bench_pico_sensors.py); a stopped firmware is seconds late
CATCH_UP_PERIODS = 4
CATCH_UP_US = 100000
# the encoder check's gyro witness (docs/firmware.md, "Encoder plausibility"): a yaw rate the encoders do not explain,
# beyond YAW_MARGIN_URAD plus 1/2**YAW_MARGIN_SHIFT of the encoders' own yaw rate, for enc_ms: FAULT_ENCODER
YAW_MARGIN_URAD = 150000
YAW_MARGIN_SHIFT = 3
YAW_MUL_MAX = 4095              # the witness's multiplier stays below 2**12 (|counts/s| clamped: products < 2**30)


class Sensors:
    """hal: the Board (sensor_bus, battery_u16); cfg: the validated board config; ctrl: the Controller
    (positions, latch_fault, set_status_bits, estop_open, status); values: the live parameters (by name)."""

    def __init__(self, hal, cfg, ctrl, values):
        self.hal = hal
        self.ctrl = ctrl
        icfg = cfg.get("imu")
        self.rate_hz = icfg["rate_hz"] if icfg is not None else 100
        self.period_us = 1000000 // self.rate_hz
        self.catch_up_us = max(CATCH_UP_PERIODS * self.period_us, CATCH_UP_US)
        self.cpr = cfg["counts_per_rev"]
        self._spd = array("i", [0, 0, 0, 0])     # the gyro witness: wheel speeds, setpoints (Q8 counts/s)
        self._yaw_n = 0                 # samples in a row whose yaw rate the encoders did not explain
        self.imu = None
        self.imu_state = protocol.IMU_NONE
        self.imu_errors = 0
        self._retry_us = 0              # ticks_us when the IMU's next init step may run
        if icfg is not None:
            try:
                bus = hal.sensor_bus()
            except (ValueError, OSError) as e:
                # pins that are no I2C bus of this chip: the IMU is out, the wheels are not (DIAG says no answer)
                print("viperdrive: IMU bus: %s" % e)
                bus = None
            if bus is not None:
                self.imu = imu_mod.Imu(bus, icfg)
                self.imu_state = protocol.IMU_STARTING
            else:
                self.imu_state = protocol.IMU_NO_ANSWER
        self.out = self.imu.out if self.imu is not None else array("i", [0] * 6)
        # gyro bias, urad/s per axis, estimated while still
        self.bias = array("i", [0, 0, 0])
        self._acc = array("i", [0, 0, 0])
        self._acc_n = 0
        self.bias_valid = False
        self.still = False
        self._still_us = 0              # how long the encoders have not moved
        self._pos = array("i", [0, 0])
        self._last_pos = array("i", [0, 0])
        ctrl.positions_into(self._last_pos)
        self.still_us = 500000
        # heading: the bias-corrected gyro z integrated since the odometry last took it (rad)
        self.dth = 0.0
        self._dth_ok = False            # every sample since the last take was good
        self._t_last = 0                # ticks_us of the last good IMU sample (0: none yet)
        self.t_sample = 0
        # battery
        bat = cfg.get("battery")
        self.has_battery = bat is not None
        self.battery_mv = 0
        self._mv_q = -1                 # filtered mV << BATTERY_SHIFT (-1: no sample yet)
        if bat is not None:
            # raw u16 -> mV as m / 2**s (integers: raw * m < 2**30)
            self._bm, self._bs = imu_mod.fixed_scale(bat["vref"] * bat["divider"] * 1000.0 / 65535.0)
        self.battery_low = False
        self._below_us = 0
        self.has_estop = "estop" in cfg
        # stream
        self.stream_div = 0
        self._stream_cnt = 0
        self.seq = 0
        self.pending = False            # a sample waits to be sent (the App sends it)
        self.configure(values)
        self._next = hal.ticks_us()
        self._retry_us = self._next     # the IMU's first init step: at the first sample

    def configure(self, values):
        self.warn_mv = int(values["battery_warn_v"] * 1000.0 + 0.5)
        self.cutoff_mv = int(values["battery_cutoff_v"] * 1000.0 + 0.5)
        self.battery_us = values["battery_ms"] * 1000
        self.still_us = values["still_ms"] * 1000
        # the gyro's scale by turn direction (calibrate gyro): floats for the heading, Q16 for the stream
        self._gs_ccw = values["gyro_scale_ccw"]
        self._gs_cw = values["gyro_scale_cw"]
        self._gq_ccw = int(self._gs_ccw * 65536.0 + 0.5)
        self._gq_cw = int(self._gs_cw * 65536.0 + 0.5)
        # the gyro witness: the encoders' yaw rate, urad/s per count/s of right minus left, as m / 2**s
        k = 2.0 * math.pi * values["wheel_radius"] / (self.cpr * values["wheel_separation"]) * 1e6
        sh = 0
        while sh < 20 and k * (1 << (sh + 1)) <= YAW_MUL_MAX:
            sh += 1
        self._ym = max(1, int(k * (1 << sh) + 0.5))
        self._ys = sh
        self._ylim = (1 << 29) // self._ym      # |right - left| counts/s clamped to this: the product < 2**29
        self._yaw_need = (values["enc_ms"] * 1000 + self.period_us - 1) // self.period_us if values["enc_ms"] else 0

    # ---- the fixed-rate task ----

    def service(self):
        """Run one sample when its time has come (called every slow-loop pass). -> True when it sampled."""
        now = self.hal.ticks_us()
        late = ticks_diff(now, self._next)
        if late < 0:
            return False
        if late > self.catch_up_us:
            # far behind (the firmware was stopped): restart the schedule rather than a burst of stale samples
            self._next = now
        # on absolute deadlines: a sample a slow-loop pass delayed (a garbage collection takes ~18 ms of an
        # RP2040's time) is taken late, and the next ones catch up one per pass, so the stream keeps its rate;
        # each sample carries the time it was really taken
        self._next = (self._next + self.period_us) & 0x3FFFFFFF
        self.sample(now)
        return True

    def sample(self, now):
        self.t_sample = now
        if self.imu is not None:
            self._imu_step(now)
        self._battery_step()
        if self.stream_div:
            self._stream_cnt += 1
            if self._stream_cnt >= self.stream_div:
                self._stream_cnt = 0
                self.pending = True

    def _imu_step(self, now):
        imu = self.imu
        st = self.imu_state
        if st != protocol.IMU_OK:
            if ticks_diff(now, self._retry_us) < 0:
                return
            try:
                if imu.phase == imu_mod.RUNNING:
                    # configured, and its start-up time has passed: its samples are real from here on
                    self.imu_state = protocol.IMU_OK
                    self._t_last = 0
                elif imu.phase == imu_mod.RESETTING:
                    wait_ms = imu.configure()
                    self._retry_us = (now + wait_ms * 1000) & 0x3FFFFFFF
                    return
                else:
                    wait_ms = imu.begin()
                    self._retry_us = (now + wait_ms * 1000) & 0x3FFFFFFF
                    return
            except imu_mod.WrongPart:
                self.imu_state = protocol.IMU_WRONG_ID
                self._retry_us = (now + protocol.IMU_RETRY_MS * 1000) & 0x3FFFFFFF
                return
            except OSError:
                self._fail(now)
                return
        if not self.sample_imu(now):
            self._fail(now)

    def _fail(self, now):
        if self.imu_errors < 0xFFFF:
            self.imu_errors += 1
        self.imu_state = protocol.IMU_NO_ANSWER
        self.imu.phase = imu_mod.STARTING
        self._retry_us = (now + protocol.IMU_RETRY_MS * 1000) & 0x3FFFFFFF
        self._dth_ok = False
        self._t_last = 0

    def sample_imu(self, now):
        """Read the IMU, update the still detection and the bias; add the heading increment. -> False on an I2C
        error. Allocation-free except the heading's float (integrate())."""
        try:
            self.imu.read()
        except OSError:
            return False
        self.update_bias()
        self.integrate(now)
        self.check_yaw()
        return True

    def check_yaw(self):
        """The encoder check's gyro witness (integers, allocation-free): while driven and commanded, a yaw rate the
        encoders do not explain means a wheel turns faster than its encoder counts (a half-dead encoder on one
        side: the robot turns while the encoders say straight). The gyro turning more than the encoders say, or
        the other way, by YAW_MARGIN_URAD + 1/8 of the encoders' yaw rate, for enc_ms: FAULT_ENCODER of the wheel
        on the side the robot turns away from (CCW beyond the encoders: the right). Turning less than the
        encoders say is normal (wheel slip, tyre scrub, a robot lifted off the ground) and never counts."""
        n = self._yaw_need
        if n == 0 or not self.bias_valid or not self.ctrl.enabled():
            self._yaw_n = 0
            return
        sp = self._spd
        self.ctrl.speeds_into(sp)
        if sp[2] == 0 and sp[3] == 0:
            self._yaw_n = 0
            return
        dv = (sp[1] - sp[0]) >> 8               # right - left, counts/s
        lim = self._ylim
        if dv > lim:
            dv = lim
        elif dv < -lim:
            dv = -lim
        e = (dv * self._ym) >> self._ys         # the encoders' yaw rate, urad/s (CCW +)
        g = self.out[2] - self.bias[2]          # the gyro's, bias removed
        ae = -e if e < 0 else e
        ag = -g if g < 0 else g
        u = ag - ae if e == 0 or (g >= 0) == (e >= 0) else ag
        if u > YAW_MARGIN_URAD + (ae >> YAW_MARGIN_SHIFT):
            self._yaw_n += 1
            if self._yaw_n >= n and self.ctrl.fault() == 0:
                # latched in the next control period, as the step's own encoder check
                self.ctrl.latch_fault(protocol.FAULT_ENCODER_RIGHT if g > e else protocol.FAULT_ENCODER_LEFT)
                self._yaw_n = 0
        else:
            self._yaw_n = 0

    def update_bias(self):
        """Still detection from the encoder positions and the bias average (integers, allocation-free)."""
        pos = self._pos
        self.ctrl.positions_into(pos)
        last = self._last_pos
        # a resting encoder can dither one count on an edge (vibration, edge noise): still means within
        # STILL_COUNTS of where the wheels came to rest, on both wheels
        d0 = pos[0] - last[0]
        d1 = pos[1] - last[1]
        if -STILL_COUNTS <= d0 <= STILL_COUNTS and -STILL_COUNTS <= d1 <= STILL_COUNTS:
            if self._still_us < self.still_us:
                self._still_us += self.period_us
        else:
            # moving: the window under way is dropped whole, its partial sums with its count (a window that kept
            # them averaged them in with the next rest's 32 samples: a bias off by up to a quarter of itself)
            self._still_us = 0
            self._acc_n = 0
            acc = self._acc
            acc[0] = 0
            acc[1] = 0
            acc[2] = 0
            last[0] = pos[0]
            last[1] = pos[1]
        self.still = self._still_us >= self.still_us
        if not self.still:
            return
        out = self.out
        acc = self._acc
        for i in range(3):
            acc[i] += out[i]
        self._acc_n += 1
        if self._acc_n < BIAS_WINDOW:
            return
        b = self.bias
        for i in range(3):
            mean = acc[i] // BIAS_WINDOW
            if self.bias_valid:
                b[i] += (mean - b[i]) >> BIAS_SHIFT
            else:
                b[i] = mean
            acc[i] = 0
        self._acc_n = 0
        self.bias_valid = True

    def integrate(self, now):
        t0 = self._t_last
        self._t_last = now
        if t0 == 0 or not self.bias_valid:
            return
        dt_us = ticks_diff(now, t0)
        r = self.out[2] - self.bias[2]
        self.dth += r * (self._gs_ccw if r > 0 else self._gs_cw) * 1e-6 * dt_us * 1e-6

    def take_heading(self):
        """The gyro's heading change since the last call (rad), or None when the odometry must use the encoders
        (no IMU, not answering, no bias estimate yet, or a sample failed in between)."""
        ok = self._dth_ok and self.imu_state == protocol.IMU_OK and self.bias_valid
        d = self.dth
        self.dth = 0.0
        self._dth_ok = self.imu_state == protocol.IMU_OK and self.bias_valid
        return d if ok else None

    def gyro_heading(self):
        return self.imu_state == protocol.IMU_OK and self.bias_valid

    def _battery_step(self):
        if not self.has_battery:
            return
        raw = self.hal.battery_u16()
        mv = (raw * self._bm) >> self._bs
        q = mv << BATTERY_SHIFT
        if self._mv_q < 0:
            self._mv_q = q
        else:
            self._mv_q += (q - self._mv_q) >> BATTERY_SHIFT
        mv = self._mv_q >> BATTERY_SHIFT
        self.battery_mv = mv
        low = mv < self.warn_mv
        if low != self.battery_low:
            self.battery_low = low
            self.ctrl.set_status_bits(protocol.ST_BATTERY_LOW if low else 0)
        if self.battery_us and mv < self.cutoff_mv:
            self._below_us += self.period_us
            if self._below_us >= self.battery_us:
                self._below_us = 0
                if self.ctrl.fault() == 0:
                    # latched in the next control period: outputs off, CLEAR_FAULT to drive again
                    self.ctrl.latch_fault(protocol.FAULT_BATTERY_LOW)
        else:
            self._below_us = 0

    # ---- reports ----

    def flags(self):
        f = 0
        if self.ctrl.estop_open():
            f |= protocol.SF_ESTOP_OPEN
        if self.battery_low:
            f |= protocol.SF_BATTERY_LOW
        if self.gyro_heading():
            f |= protocol.SF_GYRO_HEADING
        if self.bias_valid:
            f |= protocol.SF_BIAS_VALID
        if self.still:
            f |= protocol.SF_STILL
        if self.has_estop:
            f |= protocol.SF_HAS_ESTOP
        if self.has_battery:
            f |= protocol.SF_HAS_BATTERY
        return f

    def record(self):
        """The SENSORS_DATA fields (protocol.pack_sensors_data's arguments) of the latest sample."""
        o = self.out
        ok = self.imu_state == protocol.IMU_OK
        a = [0, 0, 0]
        if ok:
            for i in range(3):
                v = o[3 + i]
                a[i] = 32767 if v > 32767 else (-32767 if v < -32767 else v)
        self.seq = (self.seq + 1) & 0xFFFF
        gz = 0
        if ok:
            # z as the heading integrates it: the bias estimate plus the rate about it times the gyro's scale
            b = self.bias[2] if self.bias_valid else 0
            r = o[2] - b
            gz = b + ((r * (self._gq_ccw if r > 0 else self._gq_cw)) >> 16)
        return (self.seq, self.t_sample, o[0] if ok else 0, o[1] if ok else 0, gz, a[0], a[1], a[2],
                self.bias[2] if self.bias_valid else 0, min(self.battery_mv, 0xFFFF), self.flags(), self.imu_state,
                self.ctrl.status())

    def set_stream(self, rate_hz):
        """SENSORS: a record every rate/rate_hz samples (0: off). -> the rate applied, None above the rate."""
        if rate_hz > self.rate_hz:
            return None
        if rate_hz == 0:
            self.stream_div = 0
            self.pending = False
            return 0
        self.stream_div = max(1, self.rate_hz // rate_hz)
        self._stream_cnt = 0
        return self.rate_hz // self.stream_div
