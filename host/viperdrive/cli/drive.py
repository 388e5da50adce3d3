# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive drive`: keyboard teleop in any terminal (also over SSH) or a scripted path, through the host stack
(DriveController ramps and limits -> Board), with the commanded and measured wheel speeds, the envelope and the
board status live. The board is always disabled on the way out: q, Ctrl-C, SIGTERM, an error, a lost link.

Keys: w/Up faster, s/Down slower (negative = backwards), a/Left turn left (CCW), d/Right turn right,
space or x stop, + / - change the step size, c clear a FAULT and re-enable, q quit and disable."""
from __future__ import annotations

import argparse
import math
import threading
import time
from typing import TYPE_CHECKING

from viperdrive.shared import protocol as P

from ..board.records import BoardState
from ..errors import BoardFault, UserError
from ..messages.sensors import sensor_statuses
from ..motion.drive import DriveController
from ..motion.loop import DriveLoop
from ..motion.odometry import Odometry
from ..motion.scripts import BUILTINS, ScriptFollower, load_script
from .boardopen import activate, explain_fault, fault_message, open_board, warn_test_values
from .options import add_board_options, load_config, script_options, seconds
from .output import note, warn
from .signals import stop_signals_as_interrupt
from .terminal import LiveView, TerminalKeys

if TYPE_CHECKING:
    from ..estimation.live import LiveFilter

HELP = "drive with the keyboard (arrows/WASD, space stop, q quit) or a script (square, spin, figure8, FILE)"

ODOM_TOPIC = "/odom"                    # the topic name the live filter's config gives the wheel odometry
LINEAR_STEPS = (0.02, 0.05, 0.1)        # m/s per keypress
ANGULAR_STEPS = (0.1, 0.25, 0.5)        # rad/s per keypress


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--script", metavar="FILE|" + "|".join(BUILTINS),
                        help="drive a path instead of the keyboard (script format: docs/cli.md)")
    script_options(parser)
    parser.add_argument("--record", metavar="OUT.mcap", help="record the run as MCAP (see `viperdrive log`); with "
                                                             "--ekf also the filter's inputs and odometry/filtered")
    parser.add_argument("--ekf", metavar="EKF.yaml", default=None,
                        help="run the EKF live beside the raw odometry (robot_localization's file, as `viperdrive "
                             "fuse` reads it): a sensor on topic odom reads the board's wheel odometry; topics of "
                             "other nodes need `viperdrive ros2 --ekf`")
    parser.add_argument("--ekf-node", default=None, metavar="NAME", help="the node in --ekf to use")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S", help="stop after S seconds")
    add_board_options(parser)


class DriveSession:
    """The running parts of a drive: board loop, controller, odometry, optional recorder and telemetry."""

    def __init__(self, board, config, recorder=None, telemetry_hz: int = 0, ekf=None, warn=None,
                 sensor_hz: int = 0):
        self.board = board
        self.config = config
        self.controller = DriveController(config)
        self.odometry = Odometry(config, counts_per_rev=board.counts_per_rev)
        # the loop's period, a script's durations and --duration are the board's time (Board.clock: the host's
        # clock on every real board; an emulated chip's at its measured speed)
        self.clock = board.clock
        self.loop = DriveLoop(board, self.controller, self.odometry, clock=self.clock)
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
        self.test_values: dict = {}         # an interrupted experiment's values the board ran with (warned)
        self._last_diag = -1e9
        self.board_diag: dict | None = None
        self.stop_reason: str | None = None
        self.live: LiveFilter | None = None         # --ekf
        self._live_stop: threading.Event | None = None
        self._live_thread: threading.Thread | None = None
        if ekf is not None:
            self._start_filter(ekf, warn or (lambda text: None))

    def _start_filter(self, ekf, warn) -> None:
        self.live, self._live_stop, self._live_thread = start_live_filter(ekf, self.recorder, warn, self._estimate)

    def _estimate(self, est) -> None:
        if self.recorder is not None and self.live is not None:
            from ..ros2 import msgs
            cfg = self.live.config
            self.recorder.message("/odometry/filtered", "nav_msgs/msg/Odometry",
                                  msgs.estimate(est.t, est.state, est.covariance, cfg.world_frame,
                                                cfg.base_link_frame), self.live.clock.ns())

    def _feed_filter(self, state) -> None:
        from ..ros2 import msgs
        o = self.odometry
        stamp = msgs.time_from_s(state.stamp + (time.time() - time.monotonic()))
        cfg = self.config.ros2
        assert self.live is not None        # fed only with --ekf
        self.live.feed(ODOM_TOPIC, msgs.odometry(stamp, cfg.odom_frame_id, cfg.base_frame_id, o.pose, o.twist,
                                                 [float(v) for v in o.pose_covariance.ravel()],
                                                 [float(v) for v in o.twist_covariance.ravel()]))

    def start(self) -> None:
        if self.sensor_hz:
            self.sensor_rate = self.board.sensors(self.sensor_hz)
            self.battery_thresholds = (self.board.get_param("battery_warn_v"),
                                       self.board.get_param("battery_cutoff_v"))
        if self.telemetry_hz:
            # start the stream before the loop: its first burst shares the line with STATE replies, and inside
            # the loop it would cost a run of misses
            self.board.telemetry(self.telemetry_hz)
            self.clock.sleep(0.1)
            self.board.telemetry_frames()
        activate(self.board)
        self.controller.reset()
        self.odometry.reset()
        self._last_diag = self.clock.now()
        self.record_diagnostics()

    def tick(self, now: float) -> None:
        """One loop cycle's bookkeeping after DriveLoop.cycle: recording and fault tracking."""
        state = self.loop.state
        self.state = state
        if state is not None and state.faulted and not self.fault_code:
            self.board_diag = self.board.diag()
            self.fault_code = self.board_diag["fault_code"] or -1
        if self.live is not None and state is not None and state.fresh:
            self._feed_filter(state)        # recorded by the filter as its input, with its arrival time
        rec = self.recorder
        if rec is not None and state is not None:
            if state.fresh:
                rec.joint_states(state.stamp, state.position, state.velocity)
                rec.odometry(state.stamp, self.odometry.pose, self.odometry.twist, self.odometry.pose_covariance,
                             self.odometry.twist_covariance, odom=self.live is None)
            # the recording's times are the host's (its log clock); `now` is the board's, the loop's period
            rec.command(time.monotonic(), self.controller.v, self.controller.w)
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
                self.record_diagnostics(ask_board=False)

    def record_diagnostics(self, ask_board: bool = True) -> None:
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
        self.recorder.diagnostics(time.monotonic(), d, status, hardware_id=self.board.info.board, sensors=sensors)

    def fault_text(self, args=None) -> str:
        """The latched fault in words; on a board that ran an interrupted experiment's test values, said first:
        they, not the wheel, are the likely cause (a stall hint pointed at the wheel)."""
        text = fault_message(self.fault_code if self.fault_code > 0 else 0, args)
        if self.test_values:
            shown = ", ".join(f"{k} {v:g}" for k, v in self.test_values.items())
            text += (f". The board ran with test values an interrupted experiment left live ({shown}): restore the "
                     f"saved values first (`viperdrive params restore`)")
        return text

    def command(self, v: float, w: float, now: float) -> None:
        self.v, self.w = v, w
        self.controller.command(v, w, now=now)

    def finish(self) -> None:
        """Stop the filter and the telemetry stream; the last diagnostics into the recording."""
        if self._live_thread is not None and self._live_stop is not None:
            self._live_stop.set()
            self._live_thread.join(timeout=2.0)
        if self.board.link is None or not self.board.link.is_open:
            return
        try:
            self.record_diagnostics()
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
    if s.live is not None:
        lines += fused_lines(s.live, (x, y, th))
    if s.fault_code:
        lines.append("FAULT     " + fault_message(s.fault_code if s.fault_code > 0 else 0).split(". ")[0]
                     + " (c: clear and re-enable)")
    return lines + (extra or [])


def start_live_filter(ekf, recorder, warn, on_estimate=None):
    """(LiveFilter, stop event, thread) for a command without DDS (drive, monitor): the filter on its own thread,
    its inputs recorded with their arrival times when recording; a sensor on another topic than odom is named in
    a warning (only `viperdrive ros2 --ekf` subscribes to topics)."""
    import threading

    from ..estimation.live import LiveFilter
    from ..recording.mcap import LogClock

    # the message types (cyclonedds) are imported here, before the board loop: an import inside the loop costs it
    # a second of missed cycles
    from ..ros2 import msgs
    clock = recorder.clock if recorder is not None else LogClock()
    record = None
    if recorder is not None:
        record = lambda topic, msg, ns: recorder.message(topic, msgs.ros_type_name(type(msg)), msg, ns)  # noqa: E731
    live = LiveFilter(ekf, recorder=record, clock=clock, on_estimate=on_estimate)
    for topic, (_kind, names) in live.topics().items():
        if topic != ODOM_TOPIC:
            warn(f"--ekf: {', '.join(names)} read {topic}, a ROS topic: only `viperdrive ros2 --ekf` "
                 f"subscribes to topics; here {'it stays' if len(names) == 1 else 'they stay'} waiting")
    if ODOM_TOPIC not in live.topics():
        warn(f"--ekf: no sensor reads {ODOM_TOPIC} (the board's wheel odometry): the filter has no input here")
    stop = threading.Event()

    def run():
        try:
            live.run(stop)
        except Exception as e:      # the filter must not take the drive down: say it, the raw odometry goes on
            warn(f"--ekf: the live filter stopped ({type(e).__name__}: {e}); the raw odometry goes on")

    thread = threading.Thread(target=run, daemon=True, name="viperdrive-ekf")
    thread.start()
    return live, stop, thread


def fused_lines(live, raw) -> list[str]:
    """The live filter beside the raw odometry: fused pose and 1-sigma, the difference, the sources' states."""
    from ..estimation.live import position_sigma
    est = live.estimate
    if est is None:
        return ["fused     (waiting for the filter's first measurement)"]
    x, y, yaw = float(est.state[0]), float(est.state[1]), float(est.state[5])
    dr = live.dead_reckoning()
    line = (f"fused     x {x:+.3f} m  y {y:+.3f} m  heading {math.degrees(yaw):+6.1f} deg   1-sigma "
            f"{position_sigma(est.covariance):.3f} m   fused - raw {math.hypot(x - raw[0], y - raw[1]):.3f} m")
    sources = "  ".join(f"{src.name} {src.state}" for src in live.sources.values())
    tail = "   DEAD RECKONING" if dr["active"] and any(src.absolute for src in live.sources.values()) else ""
    return [line, f"sources   {sources}{tail}"]


def run(args) -> int:
    config = load_config(args)
    ekf = None
    if args.ekf is not None:
        from ..estimation import load_config as load_ekf
        ekf = load_ekf(args.ekf, node=args.ekf_node)
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
        from ..recording.mcap import McapRecorder
        recorder = McapRecorder.for_robot(args.record, config)
    try:
        with stop_signals_as_interrupt(), open_board(args, config) as board:
            session = DriveSession(board, config, recorder, telemetry_hz=20 if recorder else 0, ekf=ekf,
                                   warn=lambda text: warn(args, text),
                                   sensor_hz=config.ros2.sensor_rate if recorder else 0)
            session.test_values = warn_test_values(board, args)
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
    t_end = None if args.duration is None else s.clock.now() + args.duration
    help_line = "keys: w/s or Up/Down speed, a/d or Left/Right turn, space stop, +/- step, c clear fault, q quit"

    def on_cycle(state, k):
        now = s.clock.now()
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
            view.show(status_lines(s, f"keyboard on {getattr(args, 'port_description', '')}",
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
    t_end = None if args.duration is None else s.clock.now() + args.duration
    last_index = -1
    note(args, f"script {args.script}: {len(segments)} segments")

    def on_cycle(state, k):
        nonlocal last_index
        now = s.clock.now()
        s.tick(now)
        if s.fault_code:
            raise BoardFault(s.fault_text(args))
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
    if s.live is not None and s.live.estimate is not None:
        e = s.live.estimate
        fx, fy, fyaw = float(e.state[0]), float(e.state[1]), float(e.state[5])
        print(f"fused (--ekf): pose x {fx:+.4f} m  y {fy:+.4f} m  heading {math.degrees(fyaw):+.2f} deg; raw - fused "
              f"{math.hypot(x - fx, y - fy) * 1e3:.1f} mm; {s.live.steps} filter cycles, "
              f"{s.live.cost().get('mean_ms', 0.0):.2f} ms mean")
