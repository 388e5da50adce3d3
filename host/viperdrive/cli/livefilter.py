# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live filter of the commands without DDS (`drive --ekf`, `monitor --ekf`): robot_localization's file read and
checked before the board is opened, the filter on its own thread fed with the board's wheel odometry, and its lines
in the status display. `viperdrive ros2 --ekf` runs the same filter inside the bridge (viperdrive.ros2.bridge).

The filter's inputs are ROS 2 message types (viperdrive.ros2.msgs, built on cyclonedds's IDL types): --ekf needs
the ros2 extra, said before the port is opened."""
from __future__ import annotations

import math

from .. import extras

ODOM_TOPIC = "/odom"                    # the topic name the live filter's config gives the wheel odometry


def load_live_filter_config(args):
    """args.ekf read as robot_localization's file (args.ekf_node's section), or None without --ekf; the ros2
    extra required first."""
    if args.ekf is None:
        return None
    extras.require("ros2", "--ekf (the live filter takes ROS 2 messages)")
    from ..estimation import load_config as load_ekf
    return load_ekf(args.ekf, node=args.ekf_node)


def start_live_filter(ekf, recorder, warn, on_estimate=None, clock=None, process=True):
    """(filter, stop event, thread) for a command without DDS (drive, monitor): the filter in a process of its own
    (viperdrive.estimation.process.FilterProcess, fed from a thread here; process=False: a LiveFilter on that
    thread), its inputs recorded with their arrival times when recording; a sensor on another topic than odom is
    named in a warning (only `viperdrive ros2 --ekf` subscribes to topics)."""
    import threading

    from ..estimation.live import LiveFilter
    from ..estimation.process import FilterProcess
    from ..recording.mcap import LogClock

    # the message types (cyclonedds) are imported here, before the board loop: an import inside the loop costs it
    # a second of missed cycles
    from ..ros2 import msgs
    if clock is None:
        clock = recorder.clock if recorder is not None else LogClock()
    record = None
    if recorder is not None:
        record = lambda topic, msg, ns: recorder.message(topic, msgs.ros_type_name(type(msg)), msg, ns)  # noqa: E731
    live = (FilterProcess if process else LiveFilter)(ekf, recorder=record, clock=clock, on_estimate=on_estimate)
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
