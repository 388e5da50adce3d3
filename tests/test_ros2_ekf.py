# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive ros2 --ekf` on the virtual board (the default robot: mismatched tyres, wheelbase off, turn scrub):
wheel odometry from the board, a gyro and a 1 Hz lagged pose fix from a stand-in graph (tests/ros2_localizer.py)
that drops out for 10 s while the robot is lifted for 2 s with its wheels driving, so the fix comes back ~0.5 m
from the dead-reckoned estimate. The filter re-acquires it and ends on the ground truth; the diagnostics tell the
dropout and the recovery with their times; `viperdrive fuse` on the run's recording gives the same estimates.
The graph runs on the board's time (`--sim-time`, /clock): a busy machine runs the virtual board slower than real
time, and a filter that integrates rad/s of board time over wall-clock stamps turns more than the robot did.
The 2-minute run with a 20 s dropout is bench/bench_live_ekf.py (a real-time minute is too long for the suite)."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory
from test_ros2_bridge import Bridge
from test_ros2_dds import peer_env

from viperdrive.estimation import load_config
from viperdrive.estimation.replay import fuse
from viperdrive.rigs.virtual import VirtualBoard

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROBOT = """
wheel_separation: 0.152
wheel_radius: 0.0325
max_rim_speed: 0.55
max_rim_acceleration: 1.0
cmd_vel_timeout: 0.3
update_rate: 100
ros2:
  publish_rate: 50
"""


def ekf_yaml(frequency=30.0, reacquire_after=3):
    """The live filter's robot_localization file: wheel odometry (the bridge's own odom) for vx, vy and vyaw, a
    gyro for vyaw, a localizer's x y; small process noise on the pose (the robot stays on the floor)."""
    q = [0.0] * 225
    for i, v in enumerate((2e-4, 2e-4, 0.06, 0.03, 0.03, 2e-4, 0.025, 0.025, 0.04, 0.01, 0.01, 0.5, 0.01, 0.01,
                           0.015)):
        q[i * 16] = v
    false3 = "false, false, false"
    return f"""ekf_filter_node:
  ros__parameters:
    frequency: {frequency}
    sensor_timeout: 0.1
    two_d_mode: true
    publish_tf: true
    smooth_lagged_data: true
    history_length: 2.0
    process_noise_covariance: [{", ".join(repr(v) for v in q)}]
    odom0: odom
    odom0_config: [{false3}, {false3}, true, true, false, false, false, true, {false3}]
    imu0: imu
    imu0_config: [{false3}, {false3}, {false3}, false, false, true, {false3}]
    pose0: pose
    pose0_config: [true, true, false, {false3}, {false3}, {false3}, {false3}]
    pose0_rejection_threshold: 3.0
    pose0_reacquire_after: {reacquire_after}
"""


def localizer(control, *args, timeout=120.0):
    out = subprocess.run([sys.executable, str(HERE / "ros2_localizer.py"), "--namespace", "robot_t", "--control",
                          control, *map(str, args)], env=peer_env(), capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def recorded(path, topic):
    dec = DecoderFactory()
    out = []
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(topics=[topic]):
            out.append(dec.decoder_for(channel.message_encoding, schema)(message.data))
    return out


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ros2ekf")
    (tmp / "ekf.yaml").write_text(ekf_yaml())
    with VirtualBoard() as vb:
        bridge = Bridge(tmp, "--namespace", "robot_t", "--ekf", tmp / "ekf.yaml", "--record",
                        tmp / "run.mcap", "--uncertainty-limit", "0.5", "--sim-time", robot_file=ROBOT, port=vb.url)
        try:
            run = localizer(f"{vb.control_host}:{vb.control_port}", "--duration", 28, "--drop-from", 8,
                            "--drop-to", 18, "--lift", 2.0, "--sim-time", "--port", vb.url)
        finally:
            rc = bridge.stop()
    assert rc == 0, bridge.stderr()
    (tmp / "run.json").write_text(json.dumps(run))      # for a look after a failure
    return run, tmp, bridge.stderr()


def test_live_estimate_ends_on_the_ground_truth_after_a_dropout_and_a_kidnap(live_run):
    run, tmp, log = live_run
    assert run["lift"] and run["lift"][1] - run["lift"][0] == pytest.approx(2.0, abs=0.3)
    _, tx, ty, _ = run["truth"][-1]
    t, x, y, *_ = run["filtered"][-1]
    err = math.hypot(x - tx, y - ty)
    # the raw wheel odometry kept driving while the robot was in the air
    odom = recorded(tmp / "run.mcap", "/odom")[-1].pose.pose.position
    raw_err = math.hypot(odom.x - tx, odom.y - ty)
    print(f"end: live EKF {err * 1e3:.0f} mm from the truth, raw wheel odometry {raw_err * 1e3:.0f} mm")
    assert raw_err > 0.35
    assert err < 0.15, log[-3000:]
    assert "the raw odometry's tf is off" in log and "reads the board's wheel odometry directly" in log


def test_sim_time_the_graph_runs_on_the_board_clock(live_run):
    """/clock carries the board's time, and the filter's estimates are stamped in it: the last one is within
    the run's board time, not on the wall clock."""
    run, tmp, _ = live_run
    assert run["clock"] is not None, "no /clock from the bridge"
    # the last /clock read just before the board time after it: behind it by the DDS delivery, never ahead
    assert 0.0 <= run["clock_board_s"] - run["clock"] < 1.0, (run["clock"], run["clock_board_s"])
    last_truth = run["truth"][-1][0]
    assert abs(run["filtered"][-1][0] - last_truth) < 2.0, (run["filtered"][-1][0], last_truth)


def test_dropout_and_recovery_are_in_the_diagnostics_with_their_times(live_run):
    run, tmp, log = live_run
    t0 = run["t0"]
    events = {}
    for _, _, _, values in run["diagnostics"]:
        for k, v in values.items():
            if k.startswith("event_"):
                events[v] = True
    text = "\n".join(events)
    stale = [e for e in events if " pose0 stale:" in e]
    reacq = [e for e in events if " pose0 reacquired:" in e]
    dead = [e for e in events if " filter dead_reckoning:" in e]
    assert stale and reacq and dead, text

    def at(e):
        return float(e.split()[0][2:]) - t0

    # the last fix before the dropout is at ~7 s (1 Hz from 0); its learned timeout is 3 intervals
    assert 9.0 < at(stale[-1]) < 12.5, text
    assert 18.0 < at(reacq[-1]) < 23.0, text
    dr = [(ts - t0, msg) for ts, level, msg, _ in run["diagnostics"] if msg.startswith("dead reckoning")]
    assert any(10.0 < t < 18.0 for t, _ in dr), dr
    assert any("passes 0.5 m in" in m for _, m in dr)


def test_fuse_on_the_recording_of_the_live_run_gives_its_estimates(live_run):
    _, tmp, _ = live_run
    cfg = load_config(tmp / "ekf.yaml")
    summary = fuse(tmp / "run.mcap", cfg, tmp / "offline.csv")
    live = {}
    for m in recorded(tmp / "run.mcap", "/odometry/filtered"):
        t = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
        live[round(t, 6)] = m
    import csv
    with open(tmp / "offline.csv") as f:
        rows = list(csv.DictReader(f))
    assert summary.rows == len(rows) > 500
    matched = 0
    unmatched = []
    for i, r in enumerate(rows):
        m = live.get(round(float(r["t"]), 6))
        if m is None:
            unmatched.append(i)
            continue
        matched += 1
        where = f"row {matched} of {len(rows)} at t={float(r['t']) - float(rows[0]['t']):.3f} s"
        assert float(r["x"]) == pytest.approx(m.pose.pose.position.x, rel=1e-7, abs=1e-9), where
        assert float(r["y"]) == pytest.approx(m.pose.pose.position.y, rel=1e-7, abs=1e-9)
        assert float(r["vx"]) == pytest.approx(m.twist.twist.linear.x, rel=1e-7, abs=1e-9)
        assert float(r["var_x"]) == pytest.approx(m.pose.covariance[0], rel=1e-7)
    # every offline estimate but the last (the live run stopped mid-period) has its live twin
    assert matched >= len(rows) - 1, f"rows without a live twin: {unmatched} of {len(rows)}"
    assert summary.sensors["pose0"].outcomes.reacquired == 1
