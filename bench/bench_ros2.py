# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 bridge against the virtual board: cmd_vel (DDS) -> wheel command (serial) latency, and the odom rate.

Setup: the bridge (Ros2Bridge, open_board("sim"): the real firmware on the MicroPython unix port behind a TCP serial
link) runs in this process at update_rate 100 Hz, publish_rate 50 Hz; a separate process (tests/ros2_peer.py,
its own DDS participant) publishes TwistStamped at ~20 Hz with random extra delay (so the send phase is
uncorrelated with the bridge's tick) and records every odom it receives. Localhost-only discovery, a random
domain id.

Latency = from the publisher's header stamp (wall clock at send) to the moment Board.write() has handed the
SET_VEL for that command to the serial port: DDS delivery + waiting for the next tick (uniform 0..10 ms at
100 Hz, the dominant part) + controller + framing. The first write after each new command counts.

Prints:
  ros2_cmd_latency n=... p50_ms=... p90_ms=... p99_ms=... max_ms=... update_rate_hz=100
  ros2_odom_rate requested_hz=50 achieved_hz=... received=... window_s=...
  ros2_loop rate_hz=100 cycles=... overruns=... late_p50_us=... late_p99_us=... exec_p99_us=... margin_pct=...
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PUBLISH_S = 10.0
UPDATE_RATE = 100.0
PUBLISH_RATE = 50.0


def pct(values, q):
    xs = sorted(values)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def main() -> int:
    from viperdrive.ports import open_board
    from viperdrive.robot.config import RobotConfig
    from viperdrive.ros2.bridge import Ros2Bridge
    from viperdrive.ros2.options import BridgeOptions

    domain = random.SystemRandom().randint(120, 220)
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    with tempfile.TemporaryDirectory() as tmp:
        robot = Path(tmp) / "robot.yaml"
        robot.write_text(f"update_rate: {UPDATE_RATE}\ncmd_vel_timeout: 0.5\nros2:\n  publish_rate: {PUBLISH_RATE}\n")
        config = RobotConfig.load(robot)
    board = open_board("sim", config=config)
    bridge = Ros2Bridge(board, config, BridgeOptions(namespace="/bench", stamped="true", domain_id=domain, env=env))

    # instrumentation: the stamp of the newest command, and the write that first carries it
    latencies = []
    newest = {"stamp": None, "pending": False}
    command = bridge.drive.command
    write = board.write

    def timed_command(v, w, stamp=None, now=None):
        ok = command(v, w, stamp=stamp, now=now)
        if ok and stamp is not None:
            newest["stamp"], newest["pending"] = stamp, True
        return ok

    def timed_write(left, right):
        write(left, right)
        if newest["pending"]:
            latencies.append(time.monotonic() - newest["stamp"])
            newest["pending"] = False

    bridge.drive.command = timed_command
    board.write = timed_write

    peer_env = {k: v for k, v in os.environ.items() if k not in ("ROS_LOCALHOST_ONLY", "CYCLONEDDS_URI")}
    peer_env.update(env, ROS_DOMAIN_ID=str(domain))
    peer = subprocess.Popen([sys.executable, str(ROOT / "tests" / "ros2_peer.py"), "--namespace", "bench",
                             "--type", "stamped", "--v", "0.1", "--w", "0.2", "--rate", "20", "--jitter", "0.02",
                             "--publish", str(PUBLISH_S), "--listen", "0.5"],
                            env=peer_env, stdout=subprocess.PIPE, text=True)
    runner = threading.Thread(target=bridge.run, kwargs={"duration_s": PUBLISH_S + 15.0}, daemon=True)
    runner.start()
    out, _ = peer.communicate(timeout=PUBLISH_S + 60)
    loop = bridge.drive_loop.loop.stats() if bridge.drive_loop else {}
    bridge.stop("bench done")
    runner.join(20)
    if peer.returncode != 0 or not latencies:
        print(f"bench_ros2: peer exit {peer.returncode}, {len(latencies)} latencies", file=sys.stderr)
        return 1
    rec = json.loads(out)

    ms = [x * 1e3 for x in latencies]
    print(f"ros2_cmd_latency n={len(ms)} p50_ms={pct(ms, 0.5):.2f} p90_ms={pct(ms, 0.9):.2f} "
          f"p99_ms={pct(ms, 0.99):.2f} max_ms={max(ms):.2f} update_rate_hz={UPDATE_RATE:g}")
    # odom rate over the publishing window (the bridge runs steadily there)
    t0 = rec["stop_sent_at"] - PUBLISH_S + 1.0
    t1 = rec["stop_sent_at"]
    times = [r[0] for r in rec["odom"] if t0 <= r[0] <= t1]
    achieved = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    print(f"ros2_odom_rate requested_hz={PUBLISH_RATE:g} achieved_hz={achieved:.2f} received={len(times)} "
          f"window_s={t1 - t0:.1f}")
    print(f"ros2_loop rate_hz={UPDATE_RATE:g} cycles={loop.get('cycles')} overruns={loop.get('overruns')} "
          f"late_p50_us={loop.get('late_p50_us', 0):.0f} late_p99_us={loop.get('late_p99_us', 0):.0f} "
          f"exec_p99_us={loop.get('exec_p99_us', 0):.0f} margin_pct={loop.get('margin_pct', 0):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
