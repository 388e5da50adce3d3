# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live filter (viperdrive.estimation.live): its cost per cycle, and the 2-minute failover drive on the virtual
board.

Prints:
  live_ekf_cost frequency_hz=50 inputs=... cycles=... mean_ms=... p99_ms=... max_ms=... cpu_pct=...
      loop_period_pct=...
    the filter's own work per cycle (what arrived in the period, fused in stamp order, lagged fixes rewound and
    replayed) at 50 Hz with wheel odometry 50 Hz + gyro 100 Hz + a 1 Hz pose fix arriving 0.35 s late, replayed on
    the log clock from a simulated 60 s drive (viperdrive.estimation.simruns); cpu_pct = mean x 50 Hz, the share of
    one core;
    loop_period_pct = mean / the 10 ms period of the host's 100 Hz board loop (the filter runs in its own thread:
    this is how much of one loop period a cycle would take if it ran there).
  live_ekf_drive duration_s=120 dropout_s=20 lift_s=... raw_end_error_m=... end_error_m=... stale_at_s=...
      reacquired_at_s=... dead_reckoning_reports=...
    `viperdrive ros2 --ekf` on the virtual board (default robot), fed by its wheel odometry, a gyro and a 1 Hz
    lagged pose fix from tests/ros2_localizer.py; the fix drops out from 40 to 60 s while the robot is lifted for
    2 s with its wheels driving (the fix comes back ~0.5 m from the estimate). Real time: 2 minutes.
    --no-drive skips it.
"""
from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from viperdrive.estimation import config_from_dict  # noqa: E402
from viperdrive.estimation.live import LiveFilter, SetClock, replay  # noqa: E402
from viperdrive.estimation.simruns import as_message, simulate_run  # noqa: E402

HOST_LOOP_HZ = 100.0


def cost() -> None:
    q = [0.0] * 225
    for i, v in enumerate((1e-4, 1e-4, 0.06, 0.03, 0.03, 1e-4, 0.025, 0.025, 0.04, 0.01, 0.01, 0.5, 0.01, 0.01,
                           0.015)):
        q[i * 16] = v
    f6 = [False] * 6
    cfg = config_from_dict({"ekf_filter_node": {"ros__parameters": {
        "frequency": 50.0, "sensor_timeout": 0.1, "two_d_mode": True, "smooth_lagged_data": True,
        "history_length": 2.0, "process_noise_covariance": q,
        "odom0": "odom", "odom0_config": f6 + [True, True, False, False, False, True] + [False] * 3,
        "imu0": "imu", "imu0_config": f6 + [False] * 5 + [True] + [False] * 3,
        "pose0": "pose", "pose0_config": [True, True] + [False] * 13, "pose0_rejection_threshold": 3.0,
        "pose0_reacquire_after": 3}}})
    run = simulate_run(duration_s=60.0, seed=5, odom_hz=50, imu_hz=100, pose_hz=1, pose_sigma=0.05, t0=1000.0)
    events = []
    for topic, _typ, stamp, _log, body in run.messages:
        events.append((stamp + (0.35 if topic == "/pose" else 0.002), topic, as_message(body)))
    events.sort(key=lambda e: e[0])
    live = LiveFilter(cfg, clock=SetClock())
    live.step_cost = deque(maxlen=10 ** 6)
    replay(live, events, until=run.t[-1])
    c = sorted(live.step_cost)
    mean = sum(c) / len(c)
    p99 = c[int(0.99 * (len(c) - 1))]
    period = 1.0 / HOST_LOOP_HZ
    print(f"live_ekf_cost frequency_hz=50 inputs=odom50+imu100+pose1_lag0.35s cycles={len(c)} "
          f"mean_ms={mean * 1e3:.3f} p99_ms={p99 * 1e3:.3f} max_ms={c[-1] * 1e3:.3f} "
          f"cpu_pct={100 * mean * 50:.1f} loop_period_pct={100 * mean / period:.1f} "
          f"loop_period_p99_pct={100 * p99 / period:.1f}", flush=True)


def drive() -> None:
    from test_ros2_ekf import ROBOT, ekf_yaml

    from viperdrive.rigs.virtual import VirtualBoard

    domain = random.SystemRandom().randint(120, 220)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ROS_LOCALHOST_ONLY", "CYCLONEDDS_URI", "ROS_STATIC_PEERS", "ROS_DISTRO")}
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(domain))
    exe = Path(sys.executable).parent / "viperdrive"
    with tempfile.TemporaryDirectory() as d, VirtualBoard() as vb:
        d = Path(d)
        (d / "robot.yaml").write_text(ROBOT)
        (d / "ekf.yaml").write_text(ekf_yaml())
        log = open(d / "bridge.log", "w")
        bridge = subprocess.Popen([str(exe), "ros2", "--port", vb.url, "--config", str(d / "robot.yaml"),
                                   "--namespace", "robot_t", "--ekf", str(d / "ekf.yaml"), "--uncertainty-limit",
                                   "0.5", "--record", str(d / "run.mcap")],
                                  env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            out = subprocess.run([sys.executable, str(ROOT / "tests" / "ros2_localizer.py"), "--namespace",
                                  "robot_t", "--control", f"{vb.control_host}:{vb.control_port}", "--duration",
                                  "120", "--drop-from", "40", "--drop-to", "60", "--lift", "2"],
                                 env=env, capture_output=True, text=True, timeout=300)
        finally:
            bridge.send_signal(signal.SIGINT)
            bridge.wait(20)
            log.close()
        if out.returncode != 0:
            raise SystemExit(f"bench_live_ekf: the localizer failed: {out.stderr[-2000:]}")
        run = json.loads(out.stdout)
        t0 = run["t0"]
        _, tx, ty, _ = run["truth"][-1]
        _, x, y, *_ = run["filtered"][-1]
        events = {}
        for _, _, _, values in run["diagnostics"]:
            for k, v in values.items():
                if k.startswith("event_"):
                    events[v] = float(v.split()[0][2:]) - t0
        stale = [t for e, t in events.items() if " pose0 stale:" in e and 40 < t < 60]
        reacq = [t for e, t in events.items() if " pose0 reacquired:" in e and t > 60]
        dead = sum(1 for _, _, m, _ in run["diagnostics"] if m.startswith("dead reckoning"))
        raw = _raw_end(d / "run.mcap")
        print(f"live_ekf_drive duration_s=120 dropout_s=20 lift_s={run['lift'][1] - run['lift'][0]:.1f} "
              f"end_error_m={math.hypot(x - tx, y - ty):.3f} stale_at_s={stale[0] if stale else 'none'} "
              f"reacquired_at_s={reacq[0] if reacq else 'none'} dead_reckoning_reports={dead} "
              f"raw_odometry_end_error_m={_dist(raw, (tx, ty))}", flush=True)


def _raw_end(recording):
    """The bridge's raw wheel odometry at the end: the last /odom the filter read (the recording's)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    dec = DecoderFactory()
    last = None
    with open(recording, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(topics=["/odom"]):
            last = dec.decoder_for(channel.message_encoding, schema)(message.data).pose.pose.position
    return None if last is None else (last.x, last.y)


def _dist(a, b):
    return "n/a" if a is None else f"{math.hypot(a[0] - b[0], a[1] - b[1]):.3f}"


if __name__ == "__main__":
    cost()
    if "--no-drive" not in sys.argv:
        drive()
