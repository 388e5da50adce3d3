# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's board side: one thread owns the Board (nothing else touches it), streams its telemetry to every
page, and runs the pages' commands one at a time between its cycles.

Safety: the board is enabled only while the controlling page is armed and keeps sending (a drive command at least
every DRIVE_TIMEOUT_S: the pad sends every 100 ms, zero included); otherwise, and when the controlling page's
stream drops (the tab closed, the socket gone), it is stopped braked and disabled. Parameters changed from a page
are put back when the dashboard ends unless they were saved (Save) or restored (Restore); the board is left
disabled however it ends (Ctrl-C, SIGTERM, a lost link, an exception)."""
from __future__ import annotations

import math
import queue
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from ..board.livestate import LiveState
from ..board.records import fault_text
from ..errors import BadValue, LinkLost, NoReplyError, UserError
from ..motion.drive import DriveController
from ..tuning import design as gain_design
from ..tuning import steptest

# the page's own deadman: no drive command for this long -> braked stop, disabled (the pad sends every 100 ms; a
# hidden or closed page disarms at once, so this is for a page that stalls)
DRIVE_TIMEOUT_S = 0.5
CYCLE_S = 0.02                  # the board thread's cycle (board time): SET_VEL/STATE while armed, streams read
SENSOR_HZ = 10                  # SENSORS_DATA for the status panel (battery, e-stop, IMU)
STATUS_EVERY_S = 0.25           # GET_DIAG and the status summary this often
STATUS_MISSES = 8               # that many unanswered in a row (2 s): the board is lost, the dashboard ends
STEP_DURATION_S = 1.0
PAGE_GAINS = ("kp", "ki", "kd", "windup_tau", "ks", "kv", "ka")


def _finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadValue(f"{name} must be a finite number, got {value!r}")
    return float(value)


class Dashboard:
    """The board thread and what the pages may ask of it (each call from the server's threads, run on this one)."""

    def __init__(self, board, say: Callable[[str], None] | None = None):
        self.board = board
        self.say = say or (lambda text: None)
        self.live = LiveState(board.counts_per_rev, board.info.control_hz)
        self.rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
        self.guard = steptest.ParamGuard(board)     # what the pages changed, put back at the end unless saved
        self.drive = DriveController(board.config)
        self.armed = False
        self.last_drive = 0.0           # host monotonic time of the last drive command
        self.controller: str | None = None      # the session that may command (one page at a time)
        self.sessions: set[str] = set()
        self.subscribers: list[queue.Queue] = []
        self.lock = threading.Lock()
        self.jobs: queue.Queue = queue.Queue()
        self.wake = threading.Event()       # set when a job is queued: the board thread runs it between cycles
        self.stopping = threading.Event()
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self.stop_reason = ""
        self.unsaved: set[str] = set()
        self.status_misses = 0          # status requests the board did not answer (counted, shown)
        self.unanswered = 0             # ... of them in a row
        self.thread = threading.Thread(target=self._run, name="dashboard-board", daemon=True)

    # ---- sessions: one controlling page ----

    def hello(self) -> dict:
        """A page opened: its session id, and whether it controls the board (the first page does; the next ones
        only watch while it is there)."""
        sid = secrets.token_urlsafe(16)
        with self.lock:
            self.sessions.add(sid)
            if self.controller is None:
                self.controller = sid
                return {"session": sid, "role": "control"}
        return {"session": sid, "role": "view", "why": "another page controls this board; this one only watches "
                                                       "(close the other tab to take over: reload this one)"}

    def goodbye(self, sid: str, why: str) -> None:
        """The page's stream ended: if it controlled the board, the board stops now (braked, then disabled)."""
        with self.lock:
            self.sessions.discard(sid)
            was = self.controller == sid
            if was:
                self.controller = None
        if was:
            self.say(f"the controlling page went away ({why})")
            self.jobs.put((self._disarm, (f"the controlling page went away ({why})",), Future()))
            self.wake.set()

    def require_control(self, sid: str | None) -> None:
        with self.lock:
            if sid is None or sid != self.controller:
                raise PermissionError("this page only watches: another page controls the board")

    # ---- streams to the pages ----

    def subscribe(self) -> queue.Queue:
        q: queue.Queue = queue.Queue(maxsize=500)
        with self.lock:
            self.subscribers.append(q)
        q.put(("hello", self.describe()))
        return q

    def unsubscribe(self, q: queue.Queue) -> None:
        with self.lock:
            if q in self.subscribers:
                self.subscribers.remove(q)

    def _publish(self, kind: str, data) -> None:
        with self.lock:
            subs = list(self.subscribers)
        for q in subs:
            try:
                q.put_nowait((kind, data))
            except queue.Full:
                pass        # a page that does not read loses records, never the board's loop

    def describe(self) -> dict:
        b = self.board
        return {"board": f"{b.info.board} ({b.info.firmware})", "port": b.link.url if b.link else "?",
                "control_hz": b.info.control_hz, "telemetry_hz": self.rate, "drive_timeout_s": DRIVE_TIMEOUT_S}

    # ---- calls from the server ----

    def call(self, fn: Callable, *args, timeout: float = 30.0):
        """Run fn(*args) on the board thread; its result, or its exception raised here."""
        if self.ended.is_set():
            raise LinkLost(f"the dashboard has stopped: {self.stop_reason or 'ended'}")
        fut: Future = Future()
        self.jobs.put((fn, args, fut))
        self.wake.set()
        return fut.result(timeout=timeout)

    def arm(self, on: bool, why: str = "disarmed from the page") -> dict:
        if on and not self.armed:
            self.drive.reset()
            self.board.activate()
            self.armed = True
            self.last_drive = time.monotonic()
            self.say("armed from the page")
        elif not on and self.armed:
            self._disarm(why)
        return {"armed": self.armed}

    def drive_command(self, v: float, w: float) -> dict:
        v = _finite("v", v)
        w = _finite("w", w)
        if not self.armed:
            raise BadValue("not armed: arm the board first (the switch on the Drive view)")
        self.drive.command(v, w)
        self.last_drive = time.monotonic()
        return {"armed": True}

    def set_param(self, name: str, value) -> dict:
        """Board.set_param checks the name, the number and the range (the table's, then the board's own)."""
        if not isinstance(name, str):
            raise BadValue(f"a parameter's name is text, got {name!r}")
        got = self.guard.set(name, value)
        self.unsaved.add(name)
        return {"name": name, "value": got}

    def read_params(self) -> dict:
        rows = []
        for p in PARAMS.TABLE:
            name = p[PARAMS.NAME]
            v = self.board.get_param(name)
            rows.append({"name": name, "value": v, "unit": p[PARAMS.UNIT], "min": p[PARAMS.MIN],
                         "max": p[PARAMS.MAX], "default": p[PARAMS.DEFAULT], "help": p[PARAMS.HELP],
                         "unsaved": name in self.unsaved})
        flags = self.board.diag().get("flags", 0)
        return {"params": rows, "board_unsaved": bool(flags & P.DIAG_PARAMS_UNSAVED)}

    def save(self) -> dict:
        self.board.save_params()
        self.guard.keep_all()               # the saved values are the ones to keep
        self.unsaved.clear()
        return self.read_params()

    def restore(self) -> dict:
        complete = self.board.load_params()
        self.guard.keep_all()               # the saved values are back: nothing to put back
        self.unsaved.clear()
        out = self.read_params()
        out["complete"] = complete
        return out

    def step(self, wheel: str, size: float, lift_ramp: bool) -> dict:
        if wheel not in ("left", "right", "both"):
            raise BadValue("wheel is left, right or both")
        size = _finite("size", size)
        limit = min(self.board.config.wheel_speed_limits)
        if not 0 < abs(size) <= limit:
            raise BadValue(f"step size {size:g} rad/s must be nonzero and within the wheel limit {limit:.1f} rad/s")
        if self.armed:
            raise BadValue("disarm first: the step test enables the board itself")
        wheels = ("left", "right") if wheel == "both" else (wheel,)
        self.board.telemetry(0)
        try:
            rec = steptest.run_step(self.board, wheels, size, STEP_DURATION_S, self.rate, keep_ramp=not lift_ramp)
        finally:
            self.board.telemetry(self.rate)
        out: dict = {"wheel": wheel, "size": size, "lift_ramp": lift_ramp, "t_step": rec.t_step, "t_end": rec.t_end,
                     "t": [float(x) for x in rec.t], "metrics": {}, "gains": self._gains()}
        for w in wheels:
            m = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, size)
            out["metrics"][w] = {"rise_s": m.rise_time, "overshoot_pct": m.overshoot, "settling_s": m.settling_time,
                                 "steady_state_error": m.steady_state_error}
            out[f"measured_{w}"] = [float(x) for x in rec.measured[w]]
            out[f"setpoint_{w}"] = [float(x) for x in rec.setpoint[w]]
        return out

    def design(self, settle_s: float, overshoot_pct: float) -> dict:
        g = {name: self.board.get_param(name) for name in ("ks", "kv", "ka", "vel_tau", "max_duty")}
        model = gain_design.MotorModel(ks=g["ks"], kv=g["kv"], ka=g["ka"], control_hz=self.board.info.control_hz,
                                       counts_per_rev=self.board.counts_per_rev, vel_tau=g["vel_tau"],
                                       max_duty=g["max_duty"])
        req = gain_design.Request(settle=_finite("settle", settle_s), overshoot=_finite("overshoot", overshoot_pct)
                                  / 100.0)
        d = gain_design.design(model, req)
        return {"feasible": d.feasible, "problems": d.problems, "notes": d.notes,
                "gains": {k: v for k, v in d.gains.items() if k in ("kp", "ki", "kd", "windup_tau")},
                "predicted": d.predicted}

    def clear_fault(self) -> dict:
        code = self.board.clear_fault()
        return {"cleared": code, "fault": fault_text(code)}

    def _gains(self) -> dict:
        return {name: self.board.get_param(name) for name in PAGE_GAINS}

    # ---- the board thread ----

    def start(self) -> None:
        self.board.telemetry(self.rate)
        try:
            self.board.sensors(SENSOR_HZ)
        except UserError:
            pass            # a board whose sensor task runs slower: the status shows no sensor values
        self.thread.start()

    def stop(self, reason: str) -> None:
        self.stop_reason = self.stop_reason or reason
        self.stopping.set()
        self.thread.join(timeout=30)

    def _disarm(self, why: str) -> None:
        if self.armed:
            self.armed = False
            self.drive.reset()
            self.say(f"disarmed: {why}")
            self._publish("disarmed", {"why": why})
        if self.board.active:
            self.board.deactivate()

    def _run_jobs(self) -> None:
        while True:
            try:
                fn, args, fut = self.jobs.get_nowait()
            except queue.Empty:
                return
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:
                fut.set_exception(e)
                if not isinstance(e, UserError):
                    raise       # not the page's mistake nor the board's word: the dashboard ends with it

    def _run(self) -> None:
        board = self.board
        clock = board.clock
        next_status = 0.0
        t_next = clock.now()
        try:
            while not self.stopping.is_set():
                self._run_jobs()
                now = time.monotonic()
                if self.armed:
                    if self.controller is None:
                        self._disarm("no page controls the board")
                    elif now - self.last_drive > DRIVE_TIMEOUT_S:
                        self._disarm(f"no drive command for {DRIVE_TIMEOUT_S * 1e3:.0f} ms (the page stopped "
                                     f"sending: closed, hidden or stalled)")
                    else:
                        board.write(*self.drive.update(now))
                        board.read()
                records = board.telemetry_frames()
                if records:
                    rows = []
                    for rec in records:
                        r = self.live.add(rec, now)
                        rows.append([r["board_time_us"], r["setpoint_left"], r["measured_left"], r["output_left"],
                                     r["integrator_left"], r["setpoint_right"], r["measured_right"],
                                     r["output_right"], r["integrator_right"], r["status"]])
                    self._publish("telemetry", rows)
                if now >= next_status:
                    next_status = now + STATUS_EVERY_S
                    summary = self._status(now)
                    if summary is not None:
                        self._publish("status", summary)
                t_next += CYCLE_S
                if t_next <= clock.now():
                    t_next = clock.now()
                # until the next cycle, a page's command runs as soon as it comes (a slider's move waits for the
                # board's answer, not for the cycle)
                while not self.stopping.is_set() and (wait := t_next - clock.now()) > 0:
                    if self.wake.wait(min(wait, 0.005)):
                        self.wake.clear()
                        self._run_jobs()
        except BaseException as e:  # a lost link, a board error: the pages are told, the CLI ends with it
            self.error = e
            self.stop_reason = self.stop_reason or str(e)
        finally:
            self._shutdown()

    def _status(self, now: float) -> dict | None:
        """GET_DIAG, GET_ODOM and the sensors into the status summary; None when the board did not answer. One
        unanswered request is a slow moment (a busy host, a noisy line), not a lost board: STATUS_MISSES in a row
        are."""
        board = self.board
        try:
            self.live.diag = board.diag()
            o = board.odometry()
            self.live.pose = (o.x, o.y, o.theta)
        except NoReplyError:
            self.unanswered += 1
            self.status_misses += 1
            if self.unanswered >= STATUS_MISSES:
                raise LinkLost(f"the board answered none of {self.unanswered} status requests in a row "
                               f"({self.unanswered * STATUS_EVERY_S:.1f} s)") from None
            return None
        self.unanswered = 0
        self.live.add_sensors(board.sensor_readings(), now)
        self.live.update_rate(now)
        summary = self.live.summary()
        d = self.live.diag
        summary.update(armed=self.armed, controller=self.controller is not None,
                       telemetry_received=self.live.received, status_misses=self.status_misses,
                       fault_code=d.get("fault_code", 0), deadman_trips=d.get("deadman_trips", 0),
                       frames_ok=d.get("frames_ok", 0), pages=len(self.sessions), unsaved=sorted(self.unsaved))
        return summary

    def _shutdown(self) -> None:
        """However the thread ends: disabled first, then the pages' parameter changes put back, streams off."""
        board = self.board
        self.armed = False
        try:
            if board.active:
                board.deactivate()
        except UserError as e:
            self.say(f"could not confirm the board is disabled: {e}")
        try:
            self.guard.__exit__(None, None, None)
        except UserError as e:
            self.say(str(e))
        for fn in (lambda: board.telemetry(0), lambda: board.sensors(0)):
            try:
                fn()
            except UserError:
                pass
        self.ended.set()
        self._publish("ended", {"why": self.stop_reason or "the dashboard stopped"})
        while True:             # calls still queued: answered, not left waiting
            try:
                _fn, _args, fut = self.jobs.get_nowait()
            except queue.Empty:
                break
            if fut.set_running_or_notify_cancel():
                fut.set_exception(LinkLost(f"the dashboard has stopped: {self.stop_reason or 'ended'}"))
