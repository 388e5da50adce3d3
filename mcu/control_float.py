# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The fallback controller where the viper emitter is missing (CircuitPython): control.Controller's interface over
# floatlaw.FloatLaw, the same law as fixedstep.step on plain floats. Its tick allocates (floats are heap objects),
# so it runs from a soft schedule.
from .floatlaw import FloatLaw

COUNT_WINDOW_US = 400           # soft schedule: counts read between two clock reads this close: timed at their middle


class FloatController:
    """The Controller interface (control.Controller) over FloatLaw: the fallback where the viper emitter is
    missing. Same law and commands; its tick allocates (floats are heap objects), so it runs from a soft timer."""

    def __init__(self, hal, cfg, values):
        from array import array
        self.hal = hal
        self.hz = cfg.get("control_hz", 500)
        self.cpr = cfg["counts_per_rev"]
        self._edge = getattr(hal, "edge_times_us", None)
        self.law = FloatLaw(self.hz, self.cpr, getattr(hal, "counter_bits", 32), cfg.get("motor_sign", (1, 1)),
                            cfg.get("encoder_sign", (1, 1)), edge=self._edge is not None)
        self.c = array("i", [0, 0])
        self.e = array("i", [0, 0, 0, 0])
        self.running = False
        self._energized = False
        self._ring = None
        self._div = 0
        self._cnt = 0
        self._ticks = 0
        self._t_last = None
        self._tc_last = None        # soft schedule, no edge times: ticks_us the last counts were taken
        self._soft = False          # the step runs from a soft schedule (CircuitPython, esp32's soft timer): start()
        self._xfault = 0            # latch_fault(): taken at the next tick
        self._xstatus = 0           # set_status_bits(): ORed into the status byte
        self._stats = {"period_min_us": 0, "period_max_us": 0, "exec_max_us": 0, "exec_avg_us": 0,
                       "overruns": 0}
        self.values = {}
        hal.set_energized(False)
        hal.write_duty(0, 0)
        hal.read_counts(self.c)
        self.law.prev = [self.c[0], self.c[1]]
        self.configure(values)

    def tick(self):
        hal = self.hal
        t0 = hal.ticks_us()
        span = 0
        if self._soft and self._edge is None:
            # a soft schedule runs late and early by the slow loop's passes: the speed is taken over the real span
            # between two reads of the counts, each timed by two clock reads around it (CircuitPython's clock
            # allocates: a garbage collection after a clock read dates it before the collection), read again
            # when those are more than COUNT_WINDOW_US apart
            for _ in range(3):
                ta = hal.ticks_us()
                hal.read_counts(self.c)
                tb = hal.ticks_us()
                if (tb - ta) & 0x3FFFFFFF <= COUNT_WINDOW_US:
                    break
            tc = (ta + (((tb - ta) & 0x3FFFFFFF) >> 1)) & 0x3FFFFFFF
            if self._tc_last is not None:
                span = (tc - self._tc_last) & 0x3FFFFFFF
            self._tc_last = tc
        else:
            hal.read_counts(self.c)
            if self._edge is not None:
                self._edge(self.e)
            if self._soft and self._t_last is not None:
                span = (t0 - self._t_last) & 0x3FFFFFFF     # the law times the counts by the edge backend's moments
        dl, dr = self.law.step(self.c, self.e, span)
        if self._xfault:
            if not self.law.fault:
                self.law.fault = self._xfault
            self._xfault = 0
            self.law.disable()
            dl = dr = 0
        hal.write_duty(int(dl), int(dr))
        if self._energized and not self.law.enabled:
            self._energized = False
            hal.set_energized(False)
        self._ticks = (self._ticks + 1) & 0x3FFFFFFF
        if self._ring is not None and self._div:
            self._cnt += 1
            if self._cnt >= self._div:
                self._cnt = 0
                self._log(t0)
        t1 = hal.ticks_us()
        st = self._stats
        ex = (t1 - t0) & 0x3FFFFFFF
        st["exec_max_us"] = max(st["exec_max_us"], ex)
        st["exec_avg_us"] = ex if st["exec_avg_us"] == 0 else (st["exec_avg_us"] * 127 + ex) // 128
        if self._t_last is not None:
            per = (t0 - self._t_last) & 0x3FFFFFFF
            st["period_min_us"] = per if st["period_min_us"] == 0 else min(st["period_min_us"], per)
            st["period_max_us"] = max(st["period_max_us"], per)
            if per > 1500000 // self.hz:
                st["overruns"] += 1
        self._t_last = t0

    def _log(self, t_us):
        law = self.law

        def q15(x):
            return max(-32767, min(32767, int(x * 32768)))

        self._ring.push(t_us, int(law.sp[0]), int(law.vel[0]), q15(law.out[0]), q15(law.integ[0]),
                        int(law.sp[1]), int(law.vel[1]), q15(law.out[1]), q15(law.integ[1]), law.status())

    def start(self):
        self.running = True
        self.hal.start_periodic(self.hz, self.tick)
        # known once the schedule runs: a machine backend whose timer refused a hard IRQ says so in start_periodic
        self._soft = bool(getattr(self.hal, "soft", False))

    def stop(self):
        self.hal.stop_periodic()
        self.running = False
        self._energized = False
        self.hal.set_energized(False)
        self.hal.write_duty(0, 0)

    def configure(self, values):
        self.law.configure(values)
        self.values = dict(values)

    def enable(self, on):
        if on:
            if self.law.fault:
                return False
            self.hal.read_counts(self.c)
            if self.law.enable([self.c[0], self.c[1]]):
                self._energized = True
                self.hal.set_energized(True)
            return self.law.enabled
        self._energized = False
        self.hal.set_energized(False)
        self.law.disable()
        return False

    def zero(self):
        self.hal.read_counts(self.c)
        self.law.zero([self.c[0], self.c[1]])

    def clear_fault(self):
        return self.law.clear_fault()

    def set_velocity(self, left, right):
        self.law.set_velocity(left, right)

    def set_watchdog_reset(self, code):
        self.law.wdt = True
        self.law.fault = code

    def attach_ring(self, buf, hdr, ring=None):
        self._ring = ring

    def set_telemetry_div(self, div):
        self._cnt = 0
        self._div = div

    def latch_fault(self, code):
        """A fault the slow path found (FAULT_BATTERY_LOW): latched at the next period, outputs off."""
        self._xfault = code

    def set_status_bits(self, bits):
        self._xstatus = bits

    def estop_open(self):
        return False            # no e-stop input on the float law's backends (boardcfg refuses one there)

    def fault(self):
        return self.law.fault

    def ticks(self):
        return self._ticks

    def status(self):
        return self.law.status() | self._xstatus

    def enabled(self):
        return self.law.enabled

    def positions(self):
        return self.law.pos[0], self.law.pos[1]

    def positions_into(self, buf):
        buf[0] = self.law.pos[0]
        buf[1] = self.law.pos[1]

    def speeds_into(self, buf):
        """Both velocity estimates, then both setpoints, Q8 counts/s, as Controller.speeds_into."""
        law = self.law
        buf[0] = int(law.vel[0] * 256.0)
        buf[1] = int(law.vel[1] * 256.0)
        buf[2] = int(law.sp[0] * 256.0)
        buf[3] = int(law.sp[1] * 256.0)

    def velocities(self):
        return int(round(self.law.vel[0])), int(round(self.law.vel[1]))

    def state(self):
        vl, vr = self.velocities()
        return self.law.pos[0], self.law.pos[1], vl, vr, self.status()

    def wheel(self, w):
        law = self.law
        return {"setpoint": law.sp[w], "speed": law.vel[w], "output": law.out[w], "integrator": law.integ[w]}

    def stats(self):
        d = dict(self._stats)
        d["deadman_trips"] = self.law.trips
        d["fault_code"] = self.law.fault
        d["periods"] = self._ticks
        return d

    def reset_stats(self):
        for key in self._stats:
            self._stats[key] = 0
