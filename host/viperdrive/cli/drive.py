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
import time
from typing import TYPE_CHECKING

from viperdrive.shared import protocol as P

from ..board.moves import move_pieces, one_move_range_m
from ..errors import BadValue, BoardFault, UserError
from ..motion.scripts import BUILTINS, ScriptFollower, load_script
from .boardopen import explain_fault, fault_message, open_board, wait_gyro_heading, warn_test_values
from .livefilter import fused_lines, load_live_filter_config
from .options import add_board_options, add_loop_options, robot_config, script_options, seconds
from .output import note, warn
from .session import DriveSession
from .signals import stop_signals_as_interrupt
from .terminal import LiveView, TerminalKeys

if TYPE_CHECKING:
    pass

HELP = "drive with the keyboard (arrows/WASD, space stop, q quit) or a script (square, spin, figure8, FILE)"

LINEAR_STEPS = (0.02, 0.05, 0.1)        # m/s per keypress
ANGULAR_STEPS = (0.1, 0.25, 0.5)        # rad/s per keypress


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--script", metavar="FILE|" + "|".join(BUILTINS),
                        help="drive a path instead of the keyboard (script format: docs/cli.md)")
    parser.add_argument("--follower", choices=("board", "host"), default="board",
                        help="who closes a script's path: the board, as moves on its own heading and clock (board, "
                             "the default), or this host on its odometry at the loop rate (host); twist and wait "
                             "segments always run on the host")
    parser.add_argument("--encoders", action="store_true",
                        help="--follower board: do not wait for the board's gyro heading, start at once (on the "
                             "encoders' heading until then)")
    script_options(parser)
    parser.add_argument("--record", metavar="OUT.mcap", help="record the run as MCAP (see `viperdrive log`); with "
                                                             "--ekf also the filter's inputs and odometry/filtered")
    parser.add_argument("--ekf", metavar="EKF.yaml", default=None,
                        help="run the EKF live beside the raw odometry (robot_localization's file, as `viperdrive "
                             "fuse` reads it): a sensor on topic odom reads the board's wheel odometry; topics of "
                             "other nodes need `viperdrive ros2 --ekf`")
    parser.add_argument("--ekf-node", default=None, metavar="NAME", help="the node in --ekf to use")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S", help="stop after S seconds")
    add_loop_options(parser)
    add_board_options(parser)


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


def _prepare_loop(args) -> None:
    """gc.freeze() and --realtime on this (the loop's) thread, said on stderr (motion.loop.prepare_loop_thread)."""
    from ..motion.loop import prepare_loop_thread
    applied, text = prepare_loop_thread(getattr(args, "realtime", None))
    if text is not None:
        (note if applied else warn)(args, text)


def run(args) -> int:
    config = robot_config(args)
    ekf = load_live_filter_config(args)
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
    session = None
    try:
        with stop_signals_as_interrupt(), open_board(args, config) as board:
            session = DriveSession(board, config, recorder, telemetry_hz=20 if recorder else 0, ekf=ekf,
                                   warn=lambda text: warn(args, text),
                                   sensor_hz=config.ros2.sensor_rate if recorder else 0)
            session.test_values = warn_test_values(board, args)
            session.start()
            try:
                if segments is not None:
                    if args.follower == "board" and all(seg.kind in BOARD_KINDS for seg in segments):
                        return _run_moves(args, session, segments)
                    return _run_script(args, session, segments)
                assert keys is not None         # made above for a drive without a script
                with keys:
                    return _run_keys(args, session, keys)
            finally:
                session.finish()
    finally:
        if session is not None:
            session.join_filter()       # the board is disabled by now (open_board's exit)
            _print_fused(session)       # after the filter worked off what it was sent: its last estimate
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

    _prepare_loop(args)
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
        # done: let the ramp settle to rest before disabling
        if follower.done and abs(s.controller.v) < 1e-6 and abs(s.controller.w) < 1e-6 and _at_rest(state):
            s.stop_reason = "script done"
            return False
        return None

    return _script_loop(args, s, on_cycle)


def _at_rest(state) -> bool:
    return state.fresh and max(abs(state.velocity[0]), abs(state.velocity[1])) < 0.2


def _script_loop(args, s: DriveSession, on_cycle) -> int:
    """A script's loop: on_cycle until it returns False or --duration has passed, then the end line."""
    t_end = None if args.duration is None else s.clock.now() + args.duration

    def cycle(state, k):
        if on_cycle(state, k) is False:
            return False
        if t_end is not None and s.clock.now() >= t_end:
            s.stop_reason = "duration"
            return False
        return None

    _prepare_loop(args)
    try:
        stats = s.loop.run(on_cycle=cycle)
    except BoardFault as e:
        raise explain_fault(s.board, args, e) from None
    _finish(args, s, stats)
    return 0


BOARD_KINDS = ("forward", "turn", "arc")      # script segments the board runs as moves


def _run_moves(args, s: DriveSession, segments) -> int:
    """The script as board moves, all queued at once (the host keeps what the board's queue cannot hold yet):
    the board plans, chains and closes them on its own heading; this loop watches (GET_STATE), renews the lease
    and keeps the odometry, the recording and the filter going."""
    board = s.board
    # every line checked against the board's own ranges before the first one runs: a line longer than one board
    # move is cut into moves run back to back; a line of no length is refused here, not after the robot moved
    m_per_count = 2 * math.pi * board.get_param("wheel_radius") / board.counts_per_rev
    half = 0.5 * board.get_param("wheel_separation")
    planned: list[tuple[object, int, float, float, float]] = []
    for i, seg in enumerate(segments, 1):
        kind, a, b, speed = {"forward": (P.MOVE_STRAIGHT, seg.a, 0.0, seg.b), "turn": (P.MOVE_TURN, seg.a, 0.0, seg.b),
                             "arc": (P.MOVE_ARC, seg.b, seg.a, seg.c)}[seg.kind]
        try:
            pieces = move_pieces(kind, a, b, m_per_count, half)
        except BadValue as e:
            raise BadValue(f"--script {args.script}: segment {i} ({seg.describe()}): {e}; nothing was driven") from None
        planned += [(seg, kind, pa, pb, speed) for pa, pb in pieces]
    split = len(planned) - len(segments)
    note(args, f"script {args.script}: {len(segments)} segments as board moves"
               + (f" ({len(planned)} moves: lines longer than one board move, {one_move_range_m(m_per_count):.2f} m "
                  f"of wheel travel, cut in pieces)" if split else ""))
    if not args.encoders:
        wait_gyro_heading(args, board, "drive")     # else a fresh board's moves run on the encoders' heading
    moves = []
    for _seg, kind, pa, pb, speed in planned:
        if kind == P.MOVE_STRAIGHT:
            moves.append(board.move_straight(pa, speed))
        elif kind == P.MOVE_TURN:
            moves.append(board.move_turn(pa, speed))
        else:
            moves.append(board.move_arc(pa, pb, speed))
    shown = [0]

    def on_cycle(state, k):
        now = s.clock.now()
        s.tick(now)
        if s.fault_code:
            raise BoardFault(s.fault_text(args))
        while shown[0] < len(moves) and moves[shown[0]].done:
            m = moves[shown[0]]
            shown[0] += 1
            if not args.quiet:
                x, y, th = s.odometry.pose
                print(f"move {shown[0]}/{len(moves)} {m.reason}: {m.describe()}  (at x {x:+.3f} y {y:+.3f} "
                      f"heading {math.degrees(th):+.1f} deg)", flush=True)
        if not board.moves.busy:
            bad = [m for m in moves if not m.arrived]
            if bad:
                raise BoardFault(f"move {moves.index(bad[0]) + 1}/{len(moves)} ({bad[0].describe()}) ended "
                                 f"{bad[0].reason}")
            if _at_rest(state):
                s.stop_reason = "script done"
                return False
        return None

    return _script_loop(args, s, on_cycle)


def _finish(args, s: DriveSession, stats: dict) -> None:
    x, y, th = s.odometry.pose
    status = s.state.status if s.state is not None else 0
    print(f"stopped ({s.stop_reason or 'done'}): pose x {x:+.4f} m  y {y:+.4f} m  heading {math.degrees(th):+.2f} deg;"
          f" {stats['cycles']} cycles at {stats['rate_hz']:g} Hz, overruns {stats['overruns']}, late p99 "
          f"{(stats['late_p99_us'] or 0) / 1000:.2f} ms, link misses {s.board.total_misses}; board status "
          f"{' '.join(P.status_names(status)) or 'disabled'} -> disabling")
    s.final_pose = (x, y, th)


def _print_fused(s: DriveSession) -> None:
    """The live filter's last estimate beside the raw odometry's end (a run that reached _finish, with --ekf)."""
    if s.final_pose is not None and s.live is not None and s.live.estimate is not None:
        x, y, _ = s.final_pose
        e = s.live.estimate
        fx, fy, fyaw = float(e.state[0]), float(e.state[1]), float(e.state[5])
        print(f"fused (--ekf): pose x {fx:+.4f} m  y {fy:+.4f} m  heading {math.degrees(fyaw):+.2f} deg; raw - fused "
              f"{math.hypot(x - fx, y - fy) * 1e3:.1f} mm; {s.live.steps} filter cycles, "
              f"{s.live.cost().get('mean_ms', 0.0):.2f} ms mean")
