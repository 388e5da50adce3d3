# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's board side: one thread owns the Board (nothing else touches it), streams its telemetry to every
page, and runs the pages' requests between its cycles within a stated budget of board time.

The control model (docs/dashboard.md, "Who may drive"):
- One page controls; the others watch. A watcher's requests never reach the board: the parameter table is read
  once (a few parameters per cycle) and kept, changed only by this dashboard's own sets, Restore and a reset.
- While armed, the board thread exchanges SET_VEL/STATE every CYCLE_S and gives the pages' requests at most
  PAGE_BUDGET_S of board time per cycle (one request that started inside the budget finishes: a round trip or
  two), so the board's own deadman (100 ms and up) never sees the host go quiet because of a page.
- The page's own deadman counts from when a drive command *arrived*, in board time. A command is applied on the
  server's thread at once (not queued behind the board thread's work); one that waited longer than DRIVE_TIMEOUT_S
  to be applied is dropped, and once DRIVE_TIMEOUT_S passed without a command the board is disarmed (braked,
  disabled) and a later command is refused: the page must arm again. Nothing restarts the wheels but a new arm.
  On a board that keeps its time in step with its host (a virtual board, "lockstep"), the page is a commander
  of its own: from the arm and every command, the board does not run more than PAGE_HOLD_S past it until the
  page's next command (let go after a second of host time), so a page the machine did not run for a moment is
  not taken for a page that stopped sending; one that stops on purpose still is, in board time.
- A step test (the one long request) is cancelled within one of its periods by a stop signal, the controlling page
  closing, or the controlling page's disarm: the wheels are braked and the lifted ramp put back.
- A latched fault while armed disarms and is shown (status, its words, the Clear button); it does not end the
  dashboard. A lost link does (exit 4).

Parameters changed from a page are put back when the dashboard ends unless they were saved (Save) or restored
(Restore); the board is left disabled however it ends (Ctrl-C, SIGTERM, SIGHUP, a lost link, an exception)."""
from __future__ import annotations

import queue
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from ..board.livestate import LiveState
from ..board.records import fault_text
from ..errors import BadValue, BoardFault, LinkLost, NoReplyError, UserError
from ..motion.drive import DriveController
from ..tuning import design as gain_design
from ..tuning import steptest

# the page's own deadman: no drive command for this long (board time, from its arrival) -> braked stop, disabled
# (the pad sends every 100 ms; a hidden or closed page disarms at once, so this is for a page that stalls)
DRIVE_TIMEOUT_S = 0.5
PAGE_HOLD_S = DRIVE_TIMEOUT_S - 0.05     # how far a lockstep board may run past the page's last command
CYCLE_S = 0.02                  # the board thread's cycle (board time): SET_VEL/STATE while armed, streams read
PAGE_BUDGET_S = 0.008           # board time per cycle for the pages' requests while armed (a request started
#                                 inside it finishes: at most two round trips of ~4 ms at 115200 baud)
SENSOR_HZ = 10                  # SENSORS_DATA for the status panel (battery, e-stop, IMU)
STATUS_EVERY_S = 0.25           # GET_DIAG and the status summary this often
STATUS_MISSES = 8               # that many unanswered in a row (2 s): the board is lost, the dashboard ends
STEP_DURATION_S = 1.0
PAGE_GAINS = ("kp", "ki", "kd", "windup_tau", "ks", "kv", "ka")
DESIGN_INPUTS = ("ks", "kv", "ka", "vel_tau", "max_duty")


class Refused(UserError):
    """A page's request that cannot run now (not armed, the deadman ran out, cancelled): 409 to the page."""


class Cancelled(Refused):
    """A long request stopped before its end (a stop signal, the controlling page closing or disarming)."""


class _CancelOnSignal:
    """steptest's progress hook: raises Cancelled when the dashboard stops or a cancel came after `generation`."""

    def __init__(self, dash: Dashboard, generation: int):
        self.dash = dash
        self.generation = generation

    def update(self, now: float) -> None:
        why = self.dash.cancelled_since(self.generation)
        if why is not None:
            raise Cancelled(f"the step test was cancelled ({why}): the wheels were braked and the ramp put back")


class Dashboard:
    """The board thread and what the pages may ask of it (each call from the server's threads, run on this one)."""

    def __init__(self, board, say: Callable[[str], None] | None = None):
        self.board = board
        self.clock = board.clock
        self.say = say or (lambda text: None)
        self.live = LiveState(board.counts_per_rev, board.info.control_hz)
        self.rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
        self.guard = steptest.ParamGuard(board)     # what the pages changed, put back at the end unless saved
        self.drive = DriveController(board.config)
        self.armed = False
        self.arm_epoch = 0              # bumped by every arm and disarm: a page orders what it hears about arming
        self.last_drive = 0.0           # board time the last accepted drive command arrived
        self.dropped_drives = 0         # drive commands refused: stale on arrival, or after the deadman ran out
        self.controller: str | None = None      # the session that may command (one page at a time)
        self.sessions: set[str] = set()
        self.subscribers: list[queue.Queue] = []
        self.lock = threading.Lock()    # sessions, subscribers, and the drive state (armed, last_drive, drive)
        self.jobs: queue.Queue = queue.Queue()
        self.wake = threading.Event()       # set when a job is queued: the board thread runs it between cycles
        self.stopping = threading.Event()
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self.stop_reason = ""
        self.cancel_generation = 0      # bumped by every cancel (page gone, disarm): a long job started before stops
        self.cancel_why = ""
        self.faults = 0                 # faults that disarmed the board while this dashboard ran
        self.unsaved: set[str] = set()
        self.params: dict[str, float] = {}      # the board's live parameters as last read or set (the cache)
        self.stale: list[str] = [p[PARAMS.NAME] for p in PARAMS.TABLE]     # names to read (again)
        self.table_ready = threading.Event()    # set while nothing is stale
        self.param_reads = 0            # GET_PARAMs the table cost (diagnostics: a watcher adds none)
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
        """The page's stream ended: if it controlled the board, a running step stops and the board stops now
        (braked, then disabled)."""
        with self.lock:
            self.sessions.discard(sid)
            was = self.controller == sid
            if was:
                self.controller = None
        if was:
            self.say(f"the controlling page went away ({why})")
            self.cancel(f"the controlling page went away ({why})")
            self.jobs.put((self._disarm, (f"the controlling page went away ({why})",), Future()))
            self.wake.set()

    def require_control(self, sid: str | None) -> None:
        with self.lock:
            if sid is None or sid != self.controller:
                raise PermissionError("this page only watches: another page controls the board")

    def cancel(self, why: str) -> None:
        """Every long request running or queued now stops at its next period (the step test)."""
        with self.lock:
            self.cancel_generation += 1
            self.cancel_why = why

    def cancelled_since(self, generation: int) -> str | None:
        """Why a job started at `generation` must stop, or None."""
        if self.stopping.is_set():
            return self.stop_reason or "the dashboard is stopping"
        with self.lock:
            return self.cancel_why if self.cancel_generation != generation else None

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

    def call(self, fn: Callable, *args, timeout_s: float = 30.0):
        """Run fn(*args) on the board thread; its result, or its exception raised here (TimeoutError after
        timeout_s of host time)."""
        if self.ended.is_set():
            raise LinkLost(f"the dashboard has stopped: {self.stop_reason or 'ended'}")
        fut: Future = Future()
        self.jobs.put((fn, args, fut))
        self.wake.set()
        return fut.result(timeout=timeout_s)

    def arm(self, on: bool, why: str = "disarmed from the page") -> dict:
        if on and not self.armed:
            with self.lock:
                self.drive.reset()
            self.board.activate()
            with self.lock:
                self.armed = True
                self.arm_epoch += 1
                self.last_drive = self.clock.now()     # the deadman counts from the board enabled: zero commanded
                self.clock.commanding(PAGE_HOLD_S, source="page")
            self.say("armed from the page")
        elif not on and self.armed:
            self._disarm(why)
        return {"armed": self.armed, "arm_epoch": self.arm_epoch}

    def drive_command(self, v: float, w: float, arrived: float) -> dict:
        """A drive command (m/s, rad/s: checked by the server), applied on the caller's thread at once. arrived: the
        board time it arrived. Refused when not armed, when it waited longer than DRIVE_TIMEOUT_S, or when the
        deadman already ran out (the board thread disarms then; arm again)."""
        now = self.clock.now()
        with self.lock:
            if not self.armed:
                raise Refused("not armed: arm the board first (the switch on the Drive view)")
            if now - self.last_drive > DRIVE_TIMEOUT_S:
                self.dropped_drives += 1
                raise Refused(f"no drive command for {(now - self.last_drive) * 1e3:.0f} ms: the page's deadman "
                              f"({DRIVE_TIMEOUT_S * 1e3:.0f} ms) ran out and the board is being stopped; arm again")
            if now - arrived > DRIVE_TIMEOUT_S:
                self.dropped_drives += 1
                raise Refused(f"this drive command waited {(now - arrived) * 1e3:.0f} ms before it could run "
                              f"(longer than the deadman's {DRIVE_TIMEOUT_S * 1e3:.0f} ms): dropped")
            if arrived >= self.last_drive:      # an older command overtaken by a newer one never replaces it
                self.drive.command(v, w, now=arrived)
                self.last_drive = arrived
                self.clock.commanding(PAGE_HOLD_S - (now - arrived), source="page")
        return {"armed": True}

    def set_param(self, name: str, value: float) -> dict:
        """Board.set_param checks the name, the number and the range (the table's, then the board's own)."""
        got = self.guard.set(name, value)
        with self.lock:
            self.params[name] = got
            self.unsaved.add(name)
        return {"name": name, "value": got}

    def read_params(self, timeout_s: float = 30.0) -> dict:
        """The table from what this dashboard knows (read once, kept up to date by its own sets), on the caller's
        thread: nothing reaches the board. Waits while names are still to be read (the board thread reads a few
        per cycle)."""
        if not self.table_ready.wait(timeout_s):
            raise TimeoutError("the parameter table is still being read")
        rows = []
        with self.lock:
            for p in PARAMS.TABLE:
                name = p[PARAMS.NAME]
                rows.append({"name": name, "value": self.params[name], "unit": p[PARAMS.UNIT],
                             "min": p[PARAMS.MIN], "max": p[PARAMS.MAX], "default": p[PARAMS.DEFAULT],
                             "help": p[PARAMS.HELP], "unsaved": name in self.unsaved})
            flags = self.live.diag.get("flags", 0)
        return {"params": rows, "board_unsaved": bool(flags & P.DIAG_PARAMS_UNSAVED)}

    def save(self) -> dict:
        """Save on the board (a job on the board thread), then the table."""
        self.call(self._save)
        return self.read_params()

    def restore(self) -> dict:
        """LOAD_PARAMS on the board (a job), every value read again (a few per cycle), then the table."""
        complete = self.call(self._restore)
        out = self.read_params()
        out["complete"] = complete
        return out

    def _save(self) -> None:
        self.board.save_params()
        self.guard.keep_all()               # the saved values are the ones to keep
        self.unsaved.clear()
        self.live.diag = self.board.diag()

    def _restore(self) -> bool:
        complete = self.board.load_params()
        self.guard.keep_all()               # the saved values are back: nothing to put back
        self.unsaved.clear()
        self._read_again([p[PARAMS.NAME] for p in PARAMS.TABLE])    # every value may have changed
        self.live.diag = self.board.diag()
        return complete

    def _read_again(self, names: list[str]) -> None:
        with self.lock:
            self.stale = list(names)
            self.table_ready.clear()

    def step(self, wheel: str, size: float, lift_ramp: bool, generation: int) -> dict:
        """A step test from the page (the server checked the types and the shared ranges). generation: the cancel
        generation when the request arrived: a cancel after it stops the test."""
        limit = min(self.board.config.wheel_speed_limits)
        if not abs(size) <= limit:
            raise BadValue(f"step size {size:g} rad/s is beyond the wheel limit {limit:.1f} rad/s")
        if self.armed:
            raise Refused("disarm first: the step test enables the board itself")
        why = self.cancelled_since(generation)
        if why is not None:
            raise Cancelled(f"the step test was cancelled before it started ({why})")
        wheels = ("left", "right") if wheel == "both" else (wheel,)
        self.board.telemetry(0)
        try:
            rec = steptest.run_step(self.board, wheels, size, STEP_DURATION_S, self.rate, keep_ramp=not lift_ramp,
                                    progress=_CancelOnSignal(self, generation))
        finally:
            if not self.stopping.is_set():
                self.board.telemetry(self.rate)
        out: dict = {"wheel": wheel, "size": size, "lift_ramp": lift_ramp, "t_step": rec.t_step, "t_end": rec.t_end,
                     "t": [float(x) for x in rec.t], "metrics": {}, "gains": self._gains()}
        for w in wheels:
            m = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, size)
            out["metrics"][w] = {"rise_s": m.rise_time_s, "overshoot_pct": m.overshoot, "settling_s": m.settling_time_s,
                                 "steady_state_error": m.steady_state_error}
            out[f"measured_{w}"] = [float(x) for x in rec.measured[w]]
            out[f"setpoint_{w}"] = [float(x) for x in rec.setpoint[w]]
        return out

    def design(self, settle_s: float, overshoot_pct: float) -> dict:
        """Gains for a settling time (s) and overshoot (%), both inside ranges.SETTLE_S / OVERSHOOT_PCT (the CLI's
        `tune --design` ranges: the server checked them), from the board's identified motor (the table's values:
        nothing reaches the board)."""
        g = {row["name"]: row["value"] for row in self.read_params()["params"]}
        model = gain_design.MotorModel(ks=g["ks"], kv=g["kv"], ka=g["ka"], control_hz=self.board.info.control_hz,
                                       counts_per_rev=self.board.counts_per_rev, vel_tau=g["vel_tau"],
                                       max_duty=g["max_duty"])
        d = gain_design.design(model, gain_design.Request(settle=settle_s, overshoot=overshoot_pct / 100.0))
        return {"feasible": d.feasible, "problems": d.problems, "notes": d.notes,
                "gains": {k: v for k, v in d.gains.items() if k in ("kp", "ki", "kd", "windup_tau")},
                "predicted": d.predicted}

    def clear_fault(self) -> dict:
        code = self.board.clear_fault()
        self.live.diag = self.board.diag()
        return {"cleared": code, "fault": fault_text(code)}

    def _gains(self) -> dict:
        return {name: self.params.get(name) for name in PAGE_GAINS}

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
        with self.lock:
            was, self.armed = self.armed, False
            if was:
                self.arm_epoch += 1
            self.drive.reset()
        self.clock.commanding(None, source="page")
        if was:
            self.say(f"disarmed: {why}")
            self._publish("disarmed", {"why": why, "arm_epoch": self.arm_epoch})
        if self.board.active:
            self.board.deactivate()

    def _fault(self, e: BoardFault) -> None:
        """The board turned its outputs off on its own while armed (a latched fault, a restart): disarmed, shown;
        the dashboard goes on (the Clear button clears a fault: the host never does on its own)."""
        with self.lock:
            self.armed = False
            self.arm_epoch += 1
            self.drive.reset()
        self.clock.commanding(None, source="page")
        self.faults += 1
        self.say(f"disarmed: {e}")
        self._publish("disarmed", {"why": str(e), "fault": True, "arm_epoch": self.arm_epoch})
        if self.board.active:
            self.board.deactivate()
        try:
            self.live.diag = self.board.diag()
        except NoReplyError:
            pass

    def _work(self, until: float) -> None:
        """The pages' requests, in order, until board time `until` (one that started before it finishes), then
        the parameter table's reads that are due, one at a time."""
        clock = self.clock
        ran = False
        while not ran or clock.now() < until:     # one at least: a cycle with no time left (a slow link) still
            try:                                    # serves the pages, a request a cycle
                fn, args, fut = self.jobs.get_nowait()
            except queue.Empty:
                break
            ran = True
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args))
            except BaseException as e:
                fut.set_exception(e)
                if not isinstance(e, UserError):
                    raise       # not the page's mistake nor the board's word: the dashboard ends with it
        while self.stale and (not ran or clock.now() < until):
            ran = True
            name = self.stale[0]
            try:
                value = self.board.get_param(name)
            except NoReplyError:
                # one unanswered read is a slow moment, not a lost board (as for the status): it is read again
                # next cycle; STATUS_MISSES in a row are a lost board
                self.unanswered += 1
                self.status_misses += 1
                if self.unanswered >= STATUS_MISSES:
                    raise LinkLost(f"the board answered none of {self.unanswered} requests in a row") from None
                return
            self.unanswered = 0
            self.param_reads += 1
            with self.lock:
                self.params[name] = value
                if self.stale and self.stale[0] == name:
                    self.stale.pop(0)
                if not self.stale:
                    self.table_ready.set()

    def _pending(self) -> bool:
        return not self.jobs.empty() or bool(self.stale)

    def _drive_cycle(self, now: float) -> None:
        """While armed: the page's deadman, then one SET_VEL/STATE exchange. A fault disarms, never ends."""
        with self.lock:
            if not self.armed:
                return
            no_page = self.controller is None
            silent = now - self.last_drive
        if no_page:
            self._disarm("no page controls the board")
            return
        if silent > DRIVE_TIMEOUT_S:
            self._disarm(f"no drive command for {silent * 1e3:.0f} ms (the page's deadman is "
                         f"{DRIVE_TIMEOUT_S * 1e3:.0f} ms: the page stopped sending: closed, hidden or stalled)")
            return
        with self.lock:
            left, right = self.drive.update(now)
        try:
            self.board.write(left, right)
            self.board.read()
        except BoardFault as e:
            self._fault(e)

    def _run(self) -> None:
        board = self.board
        clock = self.clock
        next_status = 0.0
        t_next = clock.now()
        try:
            while not self.stopping.is_set():
                now = clock.now()
                self._drive_cycle(now)
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
                # until the next cycle the pages' requests run as they come (a slider's move waits for the board's
                # answer, not for the cycle); while armed within PAGE_BUDGET_S of this cycle
                until = t_next if not self.armed else min(t_next, clock.now() + PAGE_BUDGET_S)
                if self._pending():
                    self._work(until)
                while not self.stopping.is_set() and (wait := t_next - clock.now()) > 0:
                    if clock.now() < until and self._pending():
                        self._work(until)
                        continue
                    if self.wake.wait(min(wait, 0.005)):
                        self.wake.clear()
        except BaseException as e:  # a lost link, a board error: the pages are told, the CLI ends with it
            self.error = e
            self.stop_reason = self.stop_reason or str(e)
        finally:
            self._shutdown()

    def _status(self, now: float) -> dict | None:
        """GET_DIAG, GET_ODOM and the sensors into the status summary; None when the board did not answer. One
        unanswered request is a slow moment (a busy host, a noisy line), not a lost board: STATUS_MISSES in a row
        are. Rates are per second of board time."""
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
        summary.update(armed=self.armed, arm_epoch=self.arm_epoch, controller=self.controller is not None,
                       telemetry_received=self.live.received, status_misses=self.status_misses,
                       fault_code=d.get("fault_code", 0), deadman_trips=d.get("deadman_trips", 0),
                       frames_ok=d.get("frames_ok", 0), pages=len(self.sessions), unsaved=sorted(self.unsaved),
                       param_reads=self.param_reads, dropped_drives=self.dropped_drives, faults=self.faults)
        return summary

    def _shutdown(self) -> None:
        """However the thread ends: disabled first, then the pages' parameter changes put back, streams off."""
        board = self.board
        with self.lock:
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
        gone = LinkLost(f"the dashboard has stopped: {self.stop_reason or 'ended'}")
        while True:             # calls still queued: answered, not left waiting
            try:
                _fn, _args, fut = self.jobs.get_nowait()
            except queue.Empty:
                break
            if fut.set_running_or_notify_cancel():
                fut.set_exception(gone)


__all__ = ["Dashboard", "Refused", "Cancelled", "DRIVE_TIMEOUT_S", "CYCLE_S", "PAGE_BUDGET_S"]
