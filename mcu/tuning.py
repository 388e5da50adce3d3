# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# REPL tuning: one import and one call start the control loop in the background and give the prompt back.
#
#   >>> from viperdrive import tuning
#   >>> t = tuning.start()          # control timer + a _thread running the slow tasks; outputs off
#   >>> t.gains()                   # current parameters
#   >>> t.set("kp", 0.06)           # validated against the table, applied bumplessly
#   >>> t.step(10.0)                # step both wheels to 10 rad/s: rise time, overshoot, settling time
#   >>> t.speeds()                  # live wheel speeds, rad/s
#   >>> t.save()                    # params.json, atomically
#   >>> t.stop()
#
# Speeds here are wheel rad/s (SI, like the parameter table); the controller works in counts/s underneath.
# docs/tuning.md walks through a session.
import time

from . import app as app_mod
from .hal.portable import ticks_diff
from .shared import params as table
from .shared.stepmetrics import BAND, step_metrics  # noqa: F401  (t.step's figures; re-exported for the REPL)

TWO_PI = 6.283185307179586


def smooth(ys, n):
    """Centred moving average of the values ys over n samples (n odd; 1: unchanged), the ends averaged over what
    exists. -> a new list.

    The board's speed estimate carries encoder quantization noise (one count per period is 0.77 rad/s at
    4096 counts/rev and 500 Hz): single-period spikes would otherwise decide the overshoot and settling figures."""
    if n <= 1 or len(ys) < 2:
        return list(ys)
    h = n // 2
    out = []
    for i in range(len(ys)):
        lo = max(0, i - h)
        hi = min(len(ys), i + h + 1)
        total = 0.0
        for j in range(lo, hi):
            total += ys[j]
        out.append(total / (hi - lo))
    return out


def _fmt(x, unit, scale=1.0, digits=1):
    if x is None:
        return "not reached"
    return ("%." + str(digits) + "f %s") % (x * scale, unit)


class Tuner:
    """The REPL handle on a running App (link off: the REPL owns the serial port)."""

    def __init__(self, app, sleep_ms=None, serving=False):
        self.app = app
        self.ctrl = app.ctrl
        self.rpc = TWO_PI / app.cpr
        self._sleep_ms = sleep_ms or _sleeper()
        # serving: nothing runs between the Tuner's calls (no _thread), so no call may leave the wheels driven
        self.serving = serving
        self._thread_running = False
        self._stop = False

    # ---- background slow loop ----

    def run_slow_loop(self):
        """The firmware's slow loop until stop_slow_loop() (what tuning.start() runs in its _thread)."""
        self._thread_running = True
        try:
            while not self._stop:
                self.app.service()
                self.app.hal.idle()
        finally:
            self._thread_running = False

    def stop_slow_loop(self):
        """End run_slow_loop(); returns once it has ended (at most ~1 s)."""
        self._stop = True
        for _ in range(200):
            if not self._thread_running:
                break
            self._sleep_ms(5)

    def stop(self):
        """Outputs off, control timer and slow loop stopped."""
        self.stop_slow_loop()
        self.app.stop()
        if self.app.supervisor.started:
            # machine.WDT cannot be stopped once started (no port has a call for it) and nobody feeds it now
            print("tuning: stopped, outputs off; the watchdog resets the board in %d ms"
                  % self.app.supervisor.timeout_ms)
        else:
            print("tuning: stopped, outputs off")

    # ---- reading ----

    def speeds(self):
        """Live wheel speeds (left, right) in rad/s, from the board's own estimate."""
        vl, vr = self.ctrl.velocities()
        return vl * self.rpc, vr * self.rpc

    def watch(self, seconds=2.0, every_ms=100):
        """Print the live speeds, setpoints and outputs every every_ms for seconds."""
        n = max(1, int(seconds * 1000 // every_ms))
        for _ in range(n):
            wl = self.ctrl.wheel(0)
            wr = self.ctrl.wheel(1)
            print("L %7.2f rad/s (sp %7.2f, out %+.3f)   R %7.2f rad/s (sp %7.2f, out %+.3f)" % (
                wl["speed"] * self.rpc, wl["setpoint"] * self.rpc, wl["output"],
                wr["speed"] * self.rpc, wr["setpoint"] * self.rpc, wr["output"]))
            self._sleep_ms(every_ms)

    def gains(self):
        """Print every parameter with its unit and range."""
        v = self.app.params.values
        for p in table.TABLE:
            print("%-18s %10.4g %-14s [%g, %g]" % (p[table.NAME], v[p[table.NAME]], p[table.UNIT], p[table.MIN],
                                                  p[table.MAX]))

    # ---- changing ----

    def set(self, name, value):
        """Set a parameter by name (validated against the table, applied bumplessly). True when applied."""
        p = table.by_name(name)
        if p is None:
            print("tuning: no parameter %r (t.gains() lists them)" % name)
            return False
        reason = self.app.set_param(p[table.ID], value)
        if reason is not None:
            print("tuning: refused: %s" % reason)
            return False
        print("tuning: %s = %g %s" % (name, self.app.params.values[name], p[table.UNIT]))
        return True

    def save(self):
        """Write params.json (atomic). True when saved."""
        try:
            self.app.save_params()
        except OSError as e:
            print("tuning: could not save %s: %s" % (self.app.params_path, e))
            return False
        print("tuning: saved to %s" % self.app.params_path)
        return True

    def enable(self, on=True):
        if on and self.ctrl.fault():
            print("tuning: fault %d latched: t.clear() first" % self.ctrl.fault())
            return False
        return self.app.enable(on)

    def clear(self):
        code = self.app.clear_fault()
        print("tuning: cleared fault %d" % code)
        return code

    def drive(self, left, right, seconds, every_ms=20):
        """Hold wheel speeds (rad/s) for seconds, refreshing the command faster than the deadman."""
        cl = int(left / self.rpc)
        cr = int(right / self.rpc)
        n = max(1, int(seconds * 1000 // every_ms))
        for _ in range(n):
            self.ctrl.set_velocity(cl, cr)
            self._sleep_ms(every_ms)
        if self.serving:
            self._come_to_rest()

    def _come_to_rest(self):
        # ramp to zero at the acceleration limit (as the deadman would), then de-energize: between calls
        # nothing would run the control step that keeps the motors in check
        for _ in range(300):
            self.ctrl.set_velocity(0, 0)
            self._sleep_ms(10)
            sl, sr = self.speeds()
            if abs(sl) < 0.05 and abs(sr) < 0.05:
                break
        self.app.enable(False)

    def step(self, speed=10.0, seconds=1.0, wheel=None, band=BAND, average=5):
        """Step response from rest to speed (rad/s): both wheels (or wheel 0/1 alone) for seconds.

        Uses the telemetry ring at the full control rate, so the samples are the board's own periods, averaged
        over `average` periods (centred, 10 ms at 500 Hz; 1 = raw) against encoder quantization spikes.
        Prints and returns shared.stepmetrics.step_metrics() per wheel (settling within band of the step, 5 %
        by default: the host's `viperdrive tune` uses the same definition and band)."""
        app = self.app
        if not self.enable(True):
            return None
        self.drive(0.0, 0.0, 0.2)
        target_counts = int(speed / self.rpc)
        cl = target_counts if wheel in (None, 0) else 0
        cr = target_counts if wheel in (None, 1) else 0
        ring = app.ring
        ring.reset()
        self.ctrl.set_telemetry_div(1)
        ts = []
        ys = ([], [])
        t0 = None
        every_ms = 10
        n = max(1, int(seconds * 1000 // every_ms))
        for _ in range(n):
            self.ctrl.set_velocity(cl, cr)
            self._sleep_ms(every_ms)
            for rec in ring.drain(64):
                if t0 is None:
                    t0 = rec[1]
                t = ((rec[1] - t0) & 0x3FFFFFFF) / 1e6
                ts.append(t)
                ys[0].append(rec[3] * self.rpc)
                ys[1].append(rec[7] * self.rpc)
        self.ctrl.set_telemetry_div(app.hz // app.telemetry_hz if app.telemetry_hz else 0)
        self.drive(0.0, 0.0, 0.3)
        self.enable(False)
        if ring.drops:
            print("tuning: %d telemetry records were dropped (the REPL thread was late)" % ring.drops)
        out = []
        for w in (0, 1):
            if (w == 0 and not cl) or (w == 1 and not cr):
                out.append(None)
                continue
            m = step_metrics(ts, smooth(ys[w], average), 0.0, speed, band)
            out.append(m)
            print("%s wheel: step 0 -> %.2f rad/s: rise %s, overshoot %.1f %%, settling (%g %%) %s, final %.2f rad/s"
                  % ("left" if w == 0 else "right", speed, _fmt(m["rise_s"], "ms", 1000.0, 0), m["overshoot_pct"],
                     band * 100, _fmt(m["settling_s"], "ms", 1000.0, 0), m["final"]))
        return out


def _sleeper():
    if hasattr(time, "sleep_ms"):
        return time.sleep_ms
    return lambda ms: time.sleep(ms / 1000)     # CircuitPython's time has no sleep_ms


def serving_sleep(app):
    """A sleep_ms that runs the slow loop (and, on ports without a timer, the control step in idle()) while it
    waits: the Tuner's way of keeping the board alive where there is no _thread (CircuitPython)."""
    def sleep_ms(ms):
        t0 = app.hal.ticks_ms()
        while ticks_diff(app.hal.ticks_ms(), t0) < ms:
            app.service()
            app.hal.idle()
    return sleep_ms


def start(board_path="board.json", params_path="params.json", hal_board=None, cfg=None, background=True):
    """Start the control loop (outputs off) and the slow tasks in a background _thread; return the Tuner.

    Without _thread (CircuitPython) or with background=False the slow tasks run while the Tuner waits (inside
    step(), drive(), watch()); nothing runs between those calls, so each call ends with the outputs off and
    the hardware watchdog is not started."""
    if cfg is None:
        from . import boardcfg
        cfg = boardcfg.load(board_path)
    if hal_board is None:
        from . import hal
        hal_board = hal.load(cfg)
    if background:
        try:
            import _thread
        except ImportError:
            background = False
    # without a background loop nothing would feed the watchdog at the prompt: it is not started then (the
    # Tuner leaves the outputs off between calls instead)
    a = app_mod.App(hal_board, cfg, params_path=params_path, link=False, watchdog=background)
    a.start()
    if background:
        t = Tuner(a)
        _thread.start_new_thread(t.run_slow_loop, ())
    else:
        t = Tuner(a, sleep_ms=serving_sleep(a), serving=True)
    print("tuning: control loop at %d Hz, outputs off. t.gains(), t.set(name, value), t.step(rad_s), t.speeds(),"
          " t.save(), t.stop()" % a.hz)
    return t
