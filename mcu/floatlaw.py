# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The same control law as fixedstep.step, on plain floats: the reference the tests compare the viper step with,
# the other half of the benchmark, and the law of the fallback controller where the viper emitter is missing
# (control_float.FloatController, CircuitPython). A module of its own: CircuitPython compiles the firmware from
# source on the board, and the law and its controller in one module left too little heap to compile it.
#
# Units: speeds counts/s, duty as a fraction (1.0 = 100 %), dt = 1/hz (the timer period constant). Every branch
# mirrors the fixed-point step, including its documented saturations (each duty term limited to +-4, the
# integrator to +-4 and its change per period to +-1, a raw speed to +-2**20 counts/s); only the number format
# differs.
from .hal.portable import wrap_delta  # the firmware's one Python copy of the counter-wrap difference
from .shared.params import DEADMAN_REST_COUNTS, IRREGULAR_UP, irregular_score, rest_periods

TWO_PI = 6.283185307179586
TERM_MAX = 4.0
I_TERM_MAX = 1.0                # one period's integrator change
RAW_MAX = 1048576.0             # the documented speed range, counts/s
SPAN_MAX = 262144               # the longest edge interval timed, us (fixedstep.SPAN_MAX)


def _clamp(x, lim):
    if x > lim:
        return lim
    if x < -lim:
        return -lim
    return x


class FloatLaw:
    """Both wheels, one period per step(). Commands: enable(), disable(), zero(), clear_fault(), set_velocity(),
    configure(values)."""

    def __init__(self, hz, cpr, counter_bits=32, motor_sign=(1, 1), encoder_sign=(1, 1), edge=False):
        self.hz = hz
        self.cpr = cpr
        self.dt = 1.0 / hz
        self.counter_bits = counter_bits
        self.motor_sign = tuple(motor_sign)
        self.encoder_sign = tuple(encoder_sign)
        self.edge = edge                # the backend times edges
        self.use_edges = False          # ... and vel_edges is 1 (configure)
        self.idle_max = max(2, hz // 4)
        self.prev = [0, 0]
        self.pos = [0, 0]
        self.vel = [0.0, 0.0]
        self.raw = [0.0, 0.0]
        self.idle = [0x3FFFFFFF, 0x3FFFFFFF]    # periods since the last period with counts (none yet)
        self.dirn = [0, 0]              # direction of the last counts (0: none yet)
        self.te = [0, 0]                # ticks_us of the last counted edge
        self.ep = [0, 0]                # us per count since the edge before (whole us, >= 1), 0: unknown
        self.eq = [0.0, 0.0]            # the speed those counts took, counts/s
        self.tc = [0, 0]                # soft schedule, edge backend: ticks_us each wheel's last counts were taken
        self.tc_ok = False              # ... once a soft step has taken them
        self.enabled = False
        self.fault = 0
        self.deadman = False
        self.trips = 0
        self.age = 0
        self.rest_n = rest_periods(hz)
        self.dmz = 0                    # periods since the deadman's ramp reached zero (to rest_n)
        self.rest = [0, 0]              # positions where the wheels must rest after rest_n
        self.cmd = [0.0, 0.0]
        self.pending = None
        self.saturated = False
        self.wdt = False
        self.ticks = 0
        self.g = None
        self.g_new = None
        self._reset_pid()

    def _reset_pid(self):
        self.sp = [0.0, 0.0]
        self.dsp = [0.0, 0.0]
        self.integ = [0.0, 0.0]
        self.vprev = list(self.vel)
        self.df = [0.0, 0.0]
        self.out = [0.0, 0.0]
        self.unsat = [0.0, 0.0]
        self.pdff = [0.0, 0.0]
        self.stall = [0, 0]
        self.track = [0, 0]
        self.enc = [0, 0]
        self.irr = [0, 0]
        self.dprev = [0, 0]
        self.span_prev = [0, 0]         # each wheel's span of counts in the last step (a soft schedule's, else 0)
        self.duty = [0.0, 0.0]

    def configure(self, v):
        edges = bool(self.edge and v.get("vel_edges", 1))
        if edges and not self.use_edges:
            self.idle = [0x3FFFFFFF, 0x3FFFFFFF]    # (back) on: no interval from before is trusted
        self.use_edges = edges          # at once, as the step's K_EDGE
        rpc = TWO_PI / self.cpr
        dt = self.dt
        g = {
            "av": dt / (v["vel_tau"] + dt), "ad": dt / (v["kd_tau"] + dt),
            "kp": v["kp"] * rpc, "ki": v["ki"] * rpc, "kd": v["kd"] * rpc, "kv": v["kv"] * rpc,
            "ka": v["ka"] * rpc, "ks": v["ks"], "db": v["deadband"], "maxd": v["max_duty"],
            # Tt below one period would over-correct: it acts as Tt = dt (as in the fixed-point step)
            "aw": min(1.0, dt / v["windup_tau"]),
            "spmax": v["max_wheel_speed"] / rpc, "acc": v["max_accel"] / rpc * dt,
            "dm_n": max(1, (v["deadman_ms"] * self.hz + 500) // 1000),
            "dis_n": max(1, (v["deadman_disable_ms"] * self.hz + 500) // 1000),
            "stall_n": max(1, (v["stall_ms"] * self.hz + 500) // 1000), "stall_v": v["stall_speed"] / rpc,
            "track_n": max(1, (v["track_err_ms"] * self.hz + 500) // 1000), "track_e": v["track_err_max"] / rpc,
            "over_v": 1.5 * v["max_wheel_speed"] / rpc,
            # encoder plausibility: off with enc_ms 0 or kv 0 (no model); one check per wheel every 2 periods
            "enc_n": 0 if v["enc_ms"] == 0 or not v["kv"] > 0 else max(1, (v["enc_ms"] * self.hz + 1000) // 2000),
            "enc_r": v["enc_ratio"], "enc_0": v["ks"] + v["deadband"], "enc_m": v["enc_margin"],
            "irr_n": irregular_score(v["enc_ms"], self.hz),
        }
        if self.g is None:
            self.g = g
        else:
            self.g_new = g              # switched at the next period boundary, bumplessly

    # ---- commands ----

    def _reset_all(self, counts=None):
        self.cmd = [0.0, 0.0]
        self.pending = None
        self.deadman = False
        self.dmz = 0
        self.age = 0
        self._reset_pid()

    def enable(self, counts):
        self._reset_all()
        self.pos = [0, 0]
        self.prev = list(counts)
        self.enabled = self.fault == 0
        return self.enabled

    def disable(self):
        self._reset_all()
        self.enabled = False

    def zero(self, counts):
        self.pos = [0, 0]
        self.prev = list(counts)

    def clear_fault(self):
        code = self.fault
        self._reset_all()
        self.enabled = False
        self.fault = 0
        self.wdt = False
        return code

    def set_velocity(self, left, right):
        lim = self.g["spmax"]
        peak = max(abs(left), abs(right))
        if peak > lim:
            left, right = left * lim / peak, right * lim / peak
        self.pending = (float(left), float(right))

    # ---- one period ----

    def step(self, counts, edges=(0, 0, 0, 0), span_us=0):
        """counts: raw counters (left, right); edges (edge backends): ticks_us of each wheel's last counted edge,
        then of the moment each count was taken; span_us: the time since the last step's counts when the schedule
        is soft (0: a timer's exact period). On a soft schedule an edge backend's counts are timed by their own
        moments (edges[2], edges[3]): each wheel's span is between its counts' moments. -> duties (left, right)
        in Q15 (floats)."""
        g = self.g
        enabled = self.enabled
        self.ticks = (self.ticks + 1) & 0x3FFFFFFF     # periods run (the step's G_TICKS): which wheel is checked

        moved = False
        if self.pending is not None:
            moved = list(self.pending) != self.cmd
            self.cmd = list(self.pending)
            self.pending = None
            self.age = 0
            self.deadman = False
            self.dmz = 0
        else:
            self.age += 1
            if self.age > g["dm_n"]:
                # host silent: command zero, the acceleration limit ramps both wheels down
                if not self.deadman:
                    self.deadman = True
                    if enabled:
                        self.trips += 1
                self.cmd = [0.0, 0.0]
                if enabled and self.sp[0] == 0.0 and self.sp[1] == 0.0:
                    # the ramp reached zero: rest_n periods to brake to rest, then a wheel still moving turns the
                    # outputs off (as step(): a deadman stop that does not stop is cut)
                    if self.dmz < self.rest_n:
                        self.dmz += 1
                        self.rest = list(self.pos)
                    elif (abs(self.pos[0] - self.rest[0]) > DEADMAN_REST_COUNTS
                          or abs(self.pos[1] - self.rest[1]) > DEADMAN_REST_COUNTS):
                        self.enabled = enabled = False
                if self.age > g["dis_n"] and enabled and self.sp[0] == 0.0 and self.sp[1] == 0.0:
                    # de-energize only after the ramp reached zero on both wheels (stop category 1, as step())
                    self.enabled = enabled = False

        # the gain switch waits one period when this period's command moved the setpoints (as step() does: the
        # transfer would count the setpoint step as part of the gains' jump and cancel it)
        bump = False
        if self.g_new is not None and not moved:
            self.g = g = self.g_new
            self.g_new = None
            bump = True

        dl = dr = 0.0
        if enabled:
            dl = self.cmd[0] - self.sp[0]
            dr = self.cmd[1] - self.sp[1]
            peak = max(abs(dl), abs(dr))
            if peak > g["acc"]:
                f = g["acc"] / peak     # one factor for both: the ratio of the steps is kept
                dl *= f
                dr *= f
            self.sp = [self.sp[0] + dl, self.sp[1] + dr]
        else:
            self.sp = [0.0, 0.0]
        self.dsp = [dl, dr]

        fault = self.fault
        sat_any = False
        bits = self.counter_bits
        # on a soft schedule the span of an edge backend's counts is between the moments each wheel's were taken,
        # which the backend times to a fraction of an edge interval; not the tick's own clock read before them:
        # CircuitPython's clock allocates, and a garbage collection after that read (15 ms on the emulated Pico)
        # moved the counts against the span (53 counts in a '10.2 ms' period at 514 us a count), so a healthy
        # wheel's counts jumped against the last period's and latched FAULT_ENCODER
        timed = span_us > 0 and self.edge
        for w in range(2):
            sw = span_us
            if timed:
                sw = (edges[2 + w] - self.tc[w]) & 0x3FFFFFFF if self.tc_ok else 0
                self.tc[w] = edges[2 + w]
            sp_prev = self.span_prev[w]
            self.span_prev[w] = sw
            d = wrap_delta(counts[w], self.prev[w], bits)
            self.prev[w] = counts[w]
            if self.encoder_sign[w] < 0:
                d = -d
            self.pos[w] = ((self.pos[w] + d + 2147483648) % 4294967296) - 2147483648
            rev = False
            if d:
                rev = self.dirn[w] * d < 0
                self.dirn[w] = 1 if d > 0 else -1
            ep = 0
            stop = False
            if self.use_edges:
                if d:
                    # the |d| counts since the last edge of an earlier period took span us (see fixedstep.step);
                    # none across a reversal
                    eq = 0.0
                    if self.idle[w] < self.idle_max and not rev:
                        span = (edges[w] - self.te[w]) & 0x3FFFFFFF
                        if 0 < span <= SPAN_MAX and abs(d) < 8192:
                            ep = max(1, span // abs(d))
                            eq = min(1e6 * abs(d) / span, RAW_MAX)
                            # edge regularity (see fixedstep.step): the counts by 2 + 1/8 of them or more, or an
                            # interval by more than 7/4, against the last period with counts add IRREGULAR_UP to
                            # the score, any other period with counts takes 1 off; at irr_n: FAULT_ENCODER
                            ad = abs(d)
                            op, pd = self.ep[w], self.dprev[w] if self.idle[w] == 0 else ad
                            if sw > 0 and sp_prev > 0 and self.idle[w] == 0:
                                # a soft schedule's periods differ (2.7-32.7 ms at 10 ms on CircuitPython): the
                                # last period's counts as many as it would have counted over this one's span
                                pd = pd * sw / sp_prev
                            if g["irr_n"] and enabled and op > 0 and self.sp[w] != 0.0:
                                if (abs(ad - pd) * 8 >= 16 + max(ad, pd) or ep * 4 > op * 7 or op * 4 > ep * 7):
                                    self.irr[w] += IRREGULAR_UP
                                    if self.irr[w] >= g["irr_n"] and fault == 0:
                                        fault = 8 + w
                                elif self.irr[w] > 0:
                                    self.irr[w] -= 1
                            self.dprev[w] = ad
                    self.ep[w] = ep
                    self.eq[w] = eq
                    self.te[w] = edges[w]
                    self.idle[w] = 0
                elif self.idle[w] < 0x3FFFFFFF:
                    self.idle[w] += 1
                ep = self.ep[w] if self.idle[w] < self.idle_max else 0
                stop = self.idle[w] >= self.idle_max
            raw = 0.0
            if ep > 0:
                raw = self.eq[w]
                if not d:
                    # no count this period: bounded by the time since the last edge, zero past two intervals
                    age = (edges[2 + w] - self.te[w]) & 0x3FFFFFFF
                    if age > 0x1FFFFFFF:
                        age = 0
                    if age > 2 * ep:
                        raw = 0.0
                        stop = True
                    elif age > ep:
                        raw = min(raw, 1e6 / age)
                raw *= self.dirn[w]
            elif not self.use_edges or not -2 < d < 2:
                # counts per period as a speed: over the period's real length where the schedule is soft (a
                # step that ran 18 ms after the last one counted 18 ms of edges, not 10: CircuitPython's jumped
                # to 1.8x the true speed and the PI pulled the wheels down to 0.7x of it)
                raw = _clamp(float(d * 1000000 / sw) if sw > 0 else float(d * self.hz), RAW_MAX)
            self.raw[w] = raw
            v = 0.0 if stop else self.vel[w] + g["av"] * (raw - self.vel[w])
            self.vel[w] = v

            if not enabled:
                self.out[w] = self.unsat[w] = self.duty[w] = 0.0
                self.vprev[w] = v
                continue
            sp = self.sp[w]
            err = sp - v
            tp = _clamp(g["kp"] * err, TERM_MAX)
            dv = v - self.vprev[w]
            self.vprev[w] = v
            if g["kd"] > 0.0:
                self.df[w] += g["ad"] * (dv - self.df[w])
                td = _clamp(g["kd"] * self.hz * self.df[w], TERM_MAX)
            else:
                # kd = 0: the derivative filter rests at zero (switching kd on starts it from rest, as the step)
                self.df[w] = 0.0
                td = 0.0
            tf = _clamp(g["kv"] * sp, TERM_MAX) + _clamp(g["ka"] * self.hz * self.dsp[w], TERM_MAX)
            if sp > 0:
                tf += g["ks"]
            elif sp < 0:
                tf -= g["ks"]
            pdff = tf + tp - td
            ig = self.integ[w]
            if bump:
                ig = _clamp(ig + _clamp(self.pdff[w] - pdff, TERM_MAX), TERM_MAX)
            self.pdff[w] = pdff
            u = pdff + ig
            if sp != 0:
                if u > 0:
                    u += g["db"]
                elif u < 0:
                    u -= g["db"]
            out = _clamp(u, g["maxd"])
            sat = out != u
            ig += _clamp(g["ki"] * self.dt * err, I_TERM_MAX) + _clamp(g["aw"] * (out - u), I_TERM_MAX)
            self.integ[w] = _clamp(ig, TERM_MAX)
            self.out[w] = out
            self.unsat[w] = u
            sat_any = sat_any or sat
            av = abs(v)
            if sat and av < g["stall_v"]:
                self.stall[w] += 1
                if self.stall[w] >= g["stall_n"] and fault == 0:
                    fault = 1 + w
            else:
                self.stall[w] = 0
            if abs(err) > g["track_e"]:
                self.track[w] += 1
                if self.track[w] >= g["track_n"] and fault == 0:
                    fault = 3 + w
            else:
                self.track[w] = 0
            if av > g["over_v"] and fault == 0:
                fault = 5 + w
            duty = _clamp(out * 32768.0, 32767.0)
            self.duty[w] = -duty if self.motor_sign[w] < 0 else duty

        # encoder plausibility, one wheel per period (alternating, as the step): measured moving as commanded, but
        # the duty beyond kS + deadband predicts more than enc_ratio x the measured speed and the duty beyond
        # kS + deadband + enc_margin more than it (a duty predicts duty / kV)
        if enabled and g["enc_n"]:
            w = self.ticks & 1
            n = 0
            sp = self.sp[w]
            if sp != 0:
                x, y = (self.out[w], self.vel[w]) if sp > 0 else (-self.out[w], -self.vel[w])
                if y > g["stall_v"]:
                    x -= g["enc_0"]
                    z = x - g["enc_m"]
                    if z > 0 and x / g["kv"] / g["enc_r"] > y and z / g["kv"] > y:
                        n = self.enc[w] + 1
                        if n >= g["enc_n"] and fault == 0:
                            fault = 8 + w
            self.enc[w] = n

        if fault and enabled:
            self.fault = fault
            self.enabled = enabled = False
            self.duty = [0.0, 0.0]
            self.integ = [0.0, 0.0]
            self.out = [0.0, 0.0]
            self.sp = [0.0, 0.0]
            sat_any = False
        self.saturated = sat_any
        self.tc_ok = self.tc_ok or timed
        return self.duty[0], self.duty[1]

    def status(self):
        s = 0
        if self.enabled:
            s |= 0x01
        if self.deadman:
            s |= 0x02
        if self.fault:
            s |= 0x04
        if self.saturated:
            s |= 0x08
        if self.wdt:
            s |= 0x10
        return s
