"""`viperdrive drive`: keyboard teleop in any terminal (also over SSH) or a scripted path, through the host stack
(DriveController ramps and limits -> Board), with the commanded and measured wheel speeds, the envelope and the
board status live. The board is always disabled on the way out: q, Ctrl-C, SIGTERM, an error, a lost link.

Keys: w/Up faster, s/Down slower (negative = backwards), a/Left turn left (CCW), d/Right turn right,
space or x stop, + / - change the step size, c clear a FAULT and re-enable, q quit and disable."""
from __future__ import annotations

import argparse
import math
import time

from ..board import BoardState
from ..drive import DriveController
from ..errors import BoardFault, UserError
from ..loop import DriveLoop
from ..odometry import Odometry
from ..paths import BUILTINS, ScriptFollower, load_script
from ..sensormsgs import sensor_statuses
from .boardopen import activate, explain_fault, fault_message, open_board
from .options import add_board_options, load_config, script_options, seconds
from .output import note
from .signals import sigterm_as_interrupt
from .terminal import LiveView, TerminalKeys
from viperdrive.shared import protocol as P

HELP = "drive with the keyboard (arrows/WASD, space stop, q quit) or a script (square, spin, figure8, FILE)"

LINEAR_STEPS = (0.02, 0.05, 0.1)        # m/s per keypress
ANGULAR_STEPS = (0.1, 0.25, 0.5)        # rad/s per keypress


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--script", metavar="FILE|" + "|".join(BUILTINS),
                        help="drive a path instead of the keyboard (script format: docs/cli.md)")
    script_options(parser)
    parser.add_argument("--record", metavar="OUT.mcap", help="record the run as MCAP (see `viperdrive log`)")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S", help="stop after S seconds")
    add_board_options(parser)


class DriveSession:
    """The running parts of a drive: board loop, controller, odometry, optional recorder and telemetry."""

    def __init__(self, board, config, recorder=None, telemetry_hz: int = 0, sensor_hz: int = 0):
        self.board = board
        self.config = config
        self.controller = DriveController(config)
        self.odometry = Odometry(config, counts_per_rev=board.counts_per_rev)
        self.loop = DriveLoop(board, self.controller, self.odometry)
        self.recorder = recorder
        self.telemetry_hz = telemetry_hz
        self.sensor_hz = sensor_hz          # SENSORS_DATA asked for (0: none): into the recording
        self.sensor_rate = 0                # what the board granted
        self.latest_sensors = None
        self.battery_thresholds = (None, None)      # the board's battery_warn_v, battery_cutoff_v
        self.v = 0.0
        self.w = 0.0
        self.state: BoardState | None = None
        self.fault_code = 0
        self._last_diag = -1e9
        self.board_diag: dict | None = None
        self.stop_reason: str | None = None

    def start(self) -> None:
        if self.sensor_hz:
            self.sensor_rate = self.board.sensors(self.sensor_hz)
            self.battery_thresholds = (self.board.get_param("battery_warn_v"),
                                       self.board.get_param("battery_cutoff_v"))
        if self.telemetry_hz:
            # start the stream before the loop: its first burst shares the line with STATE replies, and inside
            # the loop it would cost a run of misses
            self.board.telemetry(self.telemetry_hz)
            time.sleep(0.1)
            self.board.telemetry_frames()
        activate(self.board)
        self.controller.reset()
        self.odometry.reset()
        self._last_diag = time.monotonic()
        self.record_diagnostics(self._last_diag)

    def tick(self, now: float) -> None:
        """One loop cycle's bookkeeping after DriveLoop.cycle: recording and fault tracking."""
        state = self.loop.state
        self.state = state
        if state is not None and state.faulted and not self.fault_code:
            self.board_diag = self.board.diag()
            self.fault_code = self.board_diag["fault_code"] or -1
        rec = self.recorder
        if rec is not None and state is not None:
            if state.fresh:
                rec.joint_states(state.stamp, state.position, state.velocity)
                rec.odometry(state.stamp, self.odometry.pose, self.odometry.twist, self.odometry.pose_covariance,
                             self.odometry.twist_covariance)
            rec.command(now, self.controller.v, self.controller.w)
            for t in self.board.telemetry_frames():
                rec.telemetry(t, self.board.counts_per_rev)
            if self.sensor_hz:
                for r in self.board.sensor_readings():
                    rec.sensors(r, cutoff_latched=self.fault_code == P.FAULT_BATTERY_LOW)
                    self.latest_sensors = r
            if now - self._last_diag >= 1.0:
                # GET_DIAG is a blocking round trip (~10 ms at 115200 baud): asked at the start, on a fault and at
                # the end only; every second the last board answer goes out with this side's live counters
                self._last_diag = now
                self.record_diagnostics(now, ask_board=False)

    def record_diagnostics(self, now: float, ask_board: bool = True) -> None:
        if self.recorder is None:
            return
        if ask_board or self.board_diag is None:
            self.board_diag = self.board.diag()
        d = {k: v for k, v in self.board_diag.items() if k != "host_link"}
        link = self.board.link.stats()
        d.update({f"host_{k}": v for k, v in link.items() if k in ("frames_rx", "frames_tx", "crc_errors",
                                                                    "timeouts", "rtt_p50_ms", "rtt_max_ms")})
        d["host_misses"] = self.board.total_misses
        loop = self.loop.loop.stats()
        d.update({f"loop_{k}": v for k, v in loop.items() if k in ("cycles", "overruns", "late_p99_us")})
        status = self.state.status if self.state is not None else None
        sensors = None
        if self.sensor_hz:
            warn_v, cutoff_v = self.battery_thresholds
            sensors = sensor_statuses(self.latest_sensors, self.board_diag.get("fault_code", 0), warn_v, cutoff_v,
                                      imu_errors=self.board_diag.get("imu_errors"),
                                      estop_now=self.state.estop if self.state is not None else None)
        self.recorder.diagnostics(now, d, status, hardware_id=self.board.info.board, sensors=sensors)

    def command(self, v: float, w: float, now: float) -> None:
        self.v, self.w = v, w
        self.controller.command(v, w, now=now)

    def finish(self) -> None:
        """Stop the telemetry stream; the last diagnostics into the recording."""
        if self.board.link is None or not self.board.link.is_open:
            return
        try:
            self.record_diagnostics(time.monotonic())
        except UserError:
            pass
        self.stop_telemetry()

    def stop_telemetry(self) -> None:
        if self.board.link is None or not self.board.link.is_open:
            return
        for rate, stop in ((self.telemetry_hz, self.board.telemetry), (self.sensor_hz, self.board.sensors)):
            if rate:
                try:
                    stop(0)
                except UserError:
                    pass


def status_lines(s: DriveSession, mode: str, extra: list[str] | None = None) -> list[str]:
    c = s.controller
    cfg = s.config
    st = s.state
    wl, wr = c.kinematics.to_wheels(c.v, c.w)
    meas = st.velocity if st is not None else (0.0, 0.0)
    status = " ".join(st.status_names) if st is not None and st.status_names else "disabled"
    x, y, th = s.odometry.pose
    wmax = c.max_angular(c.v)
    lines = [
        f"viperdrive drive  {mode}",
        f"command   v {s.v:+.3f} m/s   w {s.w:+.3f} rad/s   (ramped output v {c.v:+.3f}  w {c.w:+.3f})",
        f"wheels    commanded L {wl:+7.2f} R {wr:+7.2f} rad/s   measured L {meas[0]:+7.2f} R {meas[1]:+7.2f} rad/s",
        f"envelope  |v| <= {cfg.max_rim_speed:.2f} m/s; at v {c.v:+.2f}: |w| <= {wmax:.2f} rad/s"
        f"{'  (SATURATED: scaled x%.2f)' % c.scale if c.scale < 0.999 else ''}",
        f"status    {status}   pose x {x:+.3f} m  y {y:+.3f} m  heading {math.degrees(th):+6.1f} deg   "
        f"link misses {s.board.total_misses}",
    ]
    if s.fault_code:
        lines.append("FAULT     " + fault_message(s.fault_code if s.fault_code > 0 else 0).split(". ")[0]
                     + " (c: clear and re-enable)")
    return lines + (extra or [])


def run(args) -> int:
    config = load_config(args)
    segments = None
    if args.script:
        segments = load_script(args.script, args.side, args.speed, args.turn_rate)
    keys: TerminalKeys | None = None
    if segments is None:
        keys = TerminalKeys()
        if not keys.tty:
            raise UserError("keyboard drive needs a terminal on stdin (over SSH: ssh -t); for scripts use --script "
                            "square|spin|figure8|FILE", exit_code=2)
    recorder = None
    if args.record:
        from ..logs import McapRecorder
        recorder = McapRecorder.for_robot(args.record, config)
    try:
        with sigterm_as_interrupt(), open_board(args, config) as board:
            session = DriveSession(board, config, recorder, telemetry_hz=20 if recorder else 0,
                                   sensor_hz=config.ros2.sensor_rate if recorder else 0)
            session.start()
            try:
                if segments is not None:
                    return _run_script(args, session, segments)
                assert keys is not None         # made above for a drive without a script
                with keys:
                    return _run_keys(args, session, keys)
            finally:
                session.finish()
    finally:
        if recorder is not None:
            counts = recorder.close()
            note(args, f"recorded {sum(counts.values())} messages to {args.record}")


def _run_keys(args, s: DriveSession, keys: TerminalKeys) -> int:
    view = LiveView()
    level = 1
    t_end = None if args.duration is None else time.monotonic() + args.duration
    help_line = "keys: w/s or Up/Down speed, a/d or Left/Right turn, space stop, +/- step, c clear fault, q quit"

    def on_cycle(state, k):
        now = time.monotonic()
        s.tick(now)
        v, w = s.v, s.w
        for key in keys.read():
            if key in ("q", "Q"):
                s.stop_reason = "quit"
                return False
            if key in ("w", "up"):
                v += LINEAR_STEPS[level]
            elif key in ("s", "down"):
                v -= LINEAR_STEPS[level]
            elif key in ("a", "left"):
                w += ANGULAR_STEPS[level]
            elif key in ("d", "right"):
                w -= ANGULAR_STEPS[level]
            elif key in (" ", "x"):
                v, w = 0.0, 0.0
            elif key in ("+", "="):
                _set_level(min(level + 1, len(LINEAR_STEPS) - 1))
            elif key in ("-", "_"):
                _set_level(max(level - 1, 0))
            elif key == "c" and s.fault_code:
                _clear_and_reenable(s)
                v, w = 0.0, 0.0
        vmax = s.config.max_rim_speed
        v = max(-vmax, min(vmax, v))
        wmax = 2 * vmax / s.config.effective_separation
        w = max(-wmax, min(wmax, w))
        s.command(v, w, now)
        if k % 10 == 0:
            step = f"step {LINEAR_STEPS[level]:.2f} m/s / {ANGULAR_STEPS[level]:.2f} rad/s"
            view.show(status_lines(s, f"keyboard on {getattr(args, '_port_description', '')}",
                                   [step, help_line]))
        if t_end is not None and now >= t_end:
            s.stop_reason = "duration"
            return False
        return None

    def _set_level(n):
        nonlocal level
        level = n

    while True:
        try:
            stats = s.loop.run(on_cycle=on_cycle)
            break
        except BoardFault as e:
            # the board latched a fault and turned its outputs off: say so, then c clears and re-enables
            fault = explain_fault(s.board, args, e)
            s.fault_code = s.board.diag()["fault_code"] or -1
            view.show(status_lines(s, "FAULT", [str(fault), "c: clear the fault and re-enable   q: quit"]),
                      force=True)
            if not _wait_for(keys, ("c", "q", "Q")) == "c":
                raise fault from None
            _clear_and_reenable(s)
            s.v = s.w = 0.0
    _finish(args, s, stats)
    return 0


def _wait_for(keys: TerminalKeys, wanted) -> str:
    while True:
        for k in keys.read():
            if k in wanted:
                return k
        time.sleep(0.02)


def _clear_and_reenable(s: DriveSession) -> None:
    if s.board.active:
        s.board.deactivate()
    s.board.clear_fault()
    s.fault_code = 0
    s.start()


def _run_script(args, s: DriveSession, segments) -> int:
    follower = ScriptFollower(segments, s.config.max_rim_acceleration, s.config.effective_separation)
    t_end = None if args.duration is None else time.monotonic() + args.duration
    last_index = -1
    note(args, f"script {args.script}: {len(segments)} segments")

    def on_cycle(state, k):
        nonlocal last_index
        now = time.monotonic()
        s.tick(now)
        if s.fault_code:
            raise BoardFault(fault_message(s.fault_code if s.fault_code > 0 else 0, args))
        v, w = follower.update(now, s.odometry.pose, s.odometry.twist)
        if follower.index != last_index and not follower.done:
            last_index = follower.index
            seg = follower.current
            if not args.quiet and seg is not None:     # not done: there is a current segment
                x, y, th = s.odometry.pose
                print(*[f"segment {follower.index + 1}/{len(segments)}: {seg.describe()}  "
                           f"(at x {x:+.3f} y {y:+.3f} heading {math.degrees(th):+.1f} deg)"], flush=True)
        s.command(v, w, now)
        if follower.done:
            # let the ramp settle to rest before disabling
            if abs(s.controller.v) < 1e-6 and abs(s.controller.w) < 1e-6 and state.fresh \
                    and max(abs(state.velocity[0]), abs(state.velocity[1])) < 0.2:
                s.stop_reason = "script done"
                return False
        if t_end is not None and now >= t_end:
            s.stop_reason = "duration"
            return False
        return None

    try:
        stats = s.loop.run(on_cycle=on_cycle)
    except BoardFault as e:
        raise explain_fault(s.board, args, e) from None
    _finish(args, s, stats)
    return 0


def _finish(args, s: DriveSession, stats: dict) -> None:
    x, y, th = s.odometry.pose
    status = s.state.status if s.state is not None else 0
    print(f"stopped ({s.stop_reason or 'done'}): pose x {x:+.4f} m  y {y:+.4f} m  heading {math.degrees(th):+.2f} deg;"
          f" {stats['cycles']} cycles at {stats['rate_hz']:g} Hz, overruns {stats['overruns']}, late p99 "
          f"{(stats['late_p99_us'] or 0) / 1000:.2f} ms, link misses {s.board.total_misses}; board status "
          f"{' '.join(P.status_names(status)) or 'disabled'} -> disabling")
