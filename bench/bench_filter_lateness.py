# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Does the live filter delay the board loop? The bridge's 100 Hz loop lateness (wake-up after its deadline) with
no filter, with the filter on a thread of the loop's process (as it was), and with the filter in a process of its
own (viperdrive.estimation.process, the default), side by side in one run, on a machine made busy by two
CPU-bound processes started here.

Each run: a virtual board, an in-process Ros2Bridge (update_rate 100 Hz, the robot and the robot_localization
file of tests/test_ros2_ekf.py: wheel odometry, a gyro and a lagged pose fix, so the filter rewinds and replays its
history every fix), and tests/ros2_localizer.py as the rest of the graph (cmd_vel figure-8s, the pose at 5 Hz
published 0.35 s late, the gyro at 100 Hz). The same peer runs for every mode, so DDS traffic is the same; the
modes alternate within each round so the machine's drift touches all of them alike.

Prints one line per mode, the runs' values in run order, then the differences of the medians:
  filter_lateness mode=none runs=3 late_p99_ms=[...] late_max_ms=[...] overruns=[...] exec_p99_ms=[...]
      gc_max_ms=[...] filter_mean_ms=[...]
  filter_lateness_vs_none thread_p99_ms=+... process_p99_ms=+... hogs=2 run_s=...
gc_max_ms: the longest garbage collection in the loop's process during the run (gc.callbacks).
    python bench/bench_filter_lateness.py [--rounds 3] [--seconds 15] [--hogs 2]
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

MODES = ("none", "thread", "process")
HOG = "while True: pass"
WARMUP_S = 4.0


class GcPauses:
    def __init__(self):
        self.longest = 0.0
        self._t0 = 0.0

    def __call__(self, phase, info):
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._t0)


def one_run(mode: str, seconds: float, domain: int, env: dict, tmp: Path) -> dict:
    from test_ros2_ekf import ROBOT, ekf_yaml

    from viperdrive.board import Board
    from viperdrive.estimation import load_config
    from viperdrive.rigs.virtual import VirtualBoard
    from viperdrive.robot.config import RobotConfig
    from viperdrive.ros2.bridge import Ros2Bridge
    from viperdrive.ros2.options import BridgeOptions

    (tmp / "robot.yaml").write_text(ROBOT)
    (tmp / "ekf.yaml").write_text(ekf_yaml())
    config = RobotConfig.load(tmp / "robot.yaml")
    ekf = None if mode == "none" else load_config(tmp / "ekf.yaml")
    ns = f"lat_{mode}"
    with VirtualBoard() as vb:
        options = BridgeOptions(namespace=ns, domain_id=domain, env={"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"},
                                ekf=ekf, filter_process=(mode == "process"), prepare_loop=True)
        bridge = Ros2Bridge(Board(vb.url, config=config), config, options)
        peer_env = {k: v for k, v in os.environ.items()
                    if k not in ("ROS_LOCALHOST_ONLY", "CYCLONEDDS_URI", "ROS_STATIC_PEERS", "ROS_DISTRO")}
        peer_env.update(env, ROS_DOMAIN_ID=str(domain))
        peer = subprocess.Popen([sys.executable, str(ROOT / "tests" / "ros2_localizer.py"), "--namespace", ns,
                                 "--control", f"{vb.control_host}:{vb.control_port}", "--duration",
                                 str(WARMUP_S + seconds + 2), "--pose-rate", "5", "--lag", "0.35", "--imu-rate", "100",
                                 "--drop-from", "1000", "--drop-to", "1001", "--lift", "0"],
                                env=peer_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pauses = GcPauses()
        gc.callbacks.append(pauses)
        try:
            bridge.start()
            assert bridge.drive_loop is not None
            # discovery, the peer's and the filter process's start-up: outside the measured window
            loop = bridge.drive_loop.loop

            def measure_from_now():
                loop.reset_stats()
                pauses.longest = 0.0

            warmup = threading.Timer(WARMUP_S, measure_from_now)
            warmup.start()
            bridge.run(duration_s=WARMUP_S + seconds)
        finally:
            gc.callbacks.remove(pauses)
            bridge.shutdown()
            peer.kill()
            peer.wait(10)
        st = bridge.drive_loop.loop.stats()
        cost = bridge.live.cost() if bridge.live is not None else {}
    return {"p99": st["late_p99_us"] / 1e3, "max": st["late_max_us"] / 1e3, "overruns": st["overruns"],
            "exec_p99": st["exec_p99_us"] / 1e3, "gc_max": pauses.longest * 1e3,
            "filter_mean": cost.get("mean_ms"), "cycles": st["cycles"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--hogs", type=int, default=2)
    a = p.parse_args()
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    domain = random.SystemRandom().randint(120, 220)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(a.hogs)]
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    try:
        with tempfile.TemporaryDirectory() as d:
            for r in range(a.rounds):
                order = MODES[r % 3:] + MODES[:r % 3]
                for mode in order:
                    results[mode].append(one_run(mode, a.seconds, domain, env, Path(d)))
    finally:
        for h in hogs:
            h.kill()
            h.wait()

    def fmt(xs):
        return "[" + ",".join("-" if x is None else f"{x:.2f}" for x in xs) + "]"

    for mode in MODES:
        rs = results[mode]
        print(f"filter_lateness mode={mode} runs={len(rs)} late_p99_ms={fmt(r['p99'] for r in rs)} "
              f"late_max_ms={fmt(r['max'] for r in rs)} overruns={[r['overruns'] for r in rs]} "
              f"exec_p99_ms={fmt(r['exec_p99'] for r in rs)} gc_max_ms={fmt(r['gc_max'] for r in rs)} "
              f"filter_mean_ms={fmt(r['filter_mean'] for r in rs)}", flush=True)
    med = {m: statistics.median(r["p99"] for r in results[m]) for m in MODES}
    print(f"filter_lateness_vs_none thread_p99_ms={med['thread'] - med['none']:+.2f} "
          f"process_p99_ms={med['process'] - med['none']:+.2f} hogs={a.hogs} run_s={a.seconds:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
