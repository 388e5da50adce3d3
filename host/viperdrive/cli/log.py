# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive log record OUT.mcap [--duration S] [--script ...]` and `viperdrive log plot FILE.mcap`.

record: the board enabled and held at rest (or driven along --script), with odometry, joint states, commands,
diagnostics and the raw control telemetry written as ROS 2 messages into MCAP (logs.py lists the topics). Ctrl-C
ends a recording cleanly (the file is finished, the board disabled). plot: PNGs of path, wheel speeds, PID terms."""
from __future__ import annotations

import argparse

from .. import extras
from ..errors import BoardFault, UserError
from ..motion.scripts import BUILTINS, ScriptFollower, load_script
from ..recording.mcap import McapRecorder, read_mcap, read_mcap_partial
from ..recording.plot import plot_mcap
from .boardopen import explain_fault, open_board
from .options import add_board_options, add_output_options, int_range, robot_config, script_options, seconds
from .output import note, print_json, warn
from .session import DriveSession
from .signals import stop_signals_as_interrupt
from .terminal import Progress

HELP = ("record a run to MCAP (odometry, joint states, commands, diagnostics, telemetry, IMU, battery) or plot one "
        "to PNG")


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("record", help="record OUT.mcap from the board")
    p.add_argument("out", metavar="OUT.mcap")
    p.add_argument("--duration", type=seconds(), default=None, metavar="S",
                   help="seconds to record (default: until the script ends, else until Ctrl-C)")
    p.add_argument("--script", metavar="FILE|" + "|".join(BUILTINS), help="drive this path while recording")
    script_options(p, turn_help="script turn rate, rad/s (1.0)")
    p.add_argument("--telemetry", type=int_range(1, 1000, "Hz"), default=20, metavar="HZ",
                   help="control telemetry records per second (default %(default)s; each costs ~3 ms of a 115200 "
                        "baud line)")
    p.add_argument("--sensors", type=int_range(0, 200, "Hz"), default=None, metavar="HZ",
                   help="board sensor records (Imu, BatteryState) per second (default: the robot file's "
                        "ros2.sensor_rate, 50; 0: none; each costs ~3.3 ms of a 115200 baud line)")
    add_board_options(p)
    p = sub.add_parser("plot", help="write PNGs (path, wheel speeds, PID terms) of FILE.mcap")
    p.add_argument("file", metavar="FILE.mcap")
    p.add_argument("--out-dir", default=None, help="where to write the PNGs (default: next to the file)")
    add_output_options(p, data_output=True)


def run(args) -> int:
    if args.action == "plot":
        extras.require("plot", "viperdrive log plot")      # before reading a recording it could not plot
        data, damage = read_mcap_partial(args.file)
        if damage is not None:
            warn(args, f"{args.file}: {damage}; plotting what it holds")
        files = plot_mcap(args.file, args.out_dir, data=data)
        if not files:
            raise UserError(f"{args.file} has no /odom, /joint_states or /viperdrive/telemetry messages to plot")
        if args.json:
            print_json({"png": [str(f) for f in files], "damage": damage})
        else:
            for f in files:
                print(f)
        return 0
    return _record(args)


def _record(args) -> int:
    config = robot_config(args)
    segments = load_script(args.script, args.side, args.speed, args.turn_rate) if args.script else None
    if segments is None and args.duration is None:
        note(args, "recording until Ctrl-C")
    recorder = McapRecorder.for_robot(args.out, config)
    interrupted = False
    try:
        with stop_signals_as_interrupt(), open_board(args, config) as board:
            sensor_hz = config.ros2.sensor_rate if args.sensors is None else args.sensors
            s = DriveSession(board, config, recorder, telemetry_hz=args.telemetry, sensor_hz=sensor_hz)
            s.start()
            follower = None
            if segments is not None:
                follower = ScriptFollower(segments, config.max_rim_acceleration, config.effective_separation)
            total = args.duration if args.duration is not None else (
                sum(seg.nominal_duration() for seg in segments) if segments else 0.0)
            bar = Progress(total if total else 1.0, f"recording {args.out}", quiet=args.quiet or not total,
                           unit="s")
            clock = s.clock     # the duration and the segments are the board's time, as the loop's period
            t0 = clock.now()

            def on_cycle(state, k):
                now = clock.now()
                s.tick(now)
                if follower is not None:
                    v, w = follower.update(now, s.odometry.pose, s.odometry.twist)
                    s.command(v, w, now)
                    if follower.done and abs(s.controller.v) < 1e-6 and abs(s.controller.w) < 1e-6 \
                            and args.duration is None:
                        return False
                else:
                    s.command(0.0, 0.0, now)
                if k % 10 == 0:
                    bar.update(now - t0, f"{sum(recorder.counts.values())} messages")
                if args.duration is not None and now - t0 >= args.duration:
                    return False
                return None

            try:
                s.loop.run(on_cycle=on_cycle)
            except KeyboardInterrupt:
                interrupted = True      # a normal way to end an open-ended recording
            except BoardFault as e:
                raise explain_fault(board, args, e) from None
            finally:
                bar.close("stopped" if interrupted else "done")
                s.finish()
    finally:
        counts = recorder.close()
    if not args.quiet:
        print(f"{args.out}: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items())))
    # check the file reads back (a recording nobody can open is worse than an error now)
    read_mcap(args.out)
    return 130 if interrupted and args.duration is not None else 0
