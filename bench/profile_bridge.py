# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Where the ROS 2 bridge's CPU goes: Ros2Bridge in this process at 100 Hz against a virtual board in its own
process, seen as a real board is (VIPERDRIVE_LOCKSTEP=0): the process's CPU per cycle in steady state, then a second
bridge's loop under cProfile (start-up excluded) (bench/bench_ros2_cpu.py is the figure to quote; this
says what makes it up).

    python bench/profile_bridge.py [SECONDS] [--sort tottime|cumtime] [--top N]

Prints `profile_bridge cpu_us_per_cycle=... cycles=...` (profiler off), then the profiler's table for a window of the
same length (profiler on: every figure there is inflated by its own cost; read the order, not the microseconds)."""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import threading
import time

os.environ["VIPERDRIVE_LOCKSTEP"] = "0"     # before the package reads it: a real board's view, no grant

from viperdrive.board import Board  # noqa: E402
from viperdrive.rigs.virtual import VirtualBoard  # noqa: E402
from viperdrive.robot.config import RobotConfig  # noqa: E402
from viperdrive.ros2.bridge import Ros2Bridge  # noqa: E402
from viperdrive.ros2.options import BridgeOptions  # noqa: E402
from viperdrive.timebase import HOST_CLOCK  # noqa: E402

WARMUP_S = 3.0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seconds", nargs="?", type=float, default=10.0)
    ap.add_argument("--sort", choices=("tottime", "cumtime"), default="tottime")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    config = RobotConfig()
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    with VirtualBoard() as vb:
        def bridge() -> Ros2Bridge:
            b = Ros2Bridge(Board(vb.url, config=config, clock=HOST_CLOCK), config,
                           BridgeOptions(namespace="/profile", domain_id=random.SystemRandom().randint(120, 220),
                                         env=env))
            b.start()
            return b

        # the figure: CPU per cycle with no profiler, in steady state
        plain = bridge()
        runner = threading.Thread(target=plain.run, kwargs={"duration_s": WARMUP_S + a.seconds + 1.0}, daemon=True)
        runner.start()
        time.sleep(WARMUP_S)
        assert plain.drive_loop is not None
        c0, n0 = time.process_time(), plain.drive_loop.loop.cycles
        time.sleep(a.seconds)
        c1, n1 = time.process_time(), plain.drive_loop.loop.cycles
        runner.join(timeout=30)
        # the table: the loop under cProfile on this thread (start-up done before it)
        profiler = cProfile.Profile()
        profiler.runcall(bridge().run, duration_s=a.seconds)
    n = max(1, n1 - n0)
    print(f"profile_bridge cpu_us_per_cycle={(c1 - c0) / n * 1e6:.0f} cycles={n} window_s={a.seconds:g}", flush=True)
    pstats.Stats(profiler, stream=sys.stdout).sort_stats(a.sort).print_stats(a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
