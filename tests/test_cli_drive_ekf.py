# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive drive --ekf`: the live filter beside the raw wheel odometry on the virtual board, both in the
recording, and `viperdrive fuse` on that recording gives the estimates the drive made."""
import csv
import math
import re

import pytest
from cli_helpers import run_cli
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from viperdrive.estimation import load_config
from viperdrive.estimation.replay import fuse

pytestmark = pytest.mark.board

EKF = """ekf_filter_node:
  ros__parameters:
    frequency: 25.0
    two_d_mode: true
    odom0: odom
    odom0_config: [false, false, false, false, false, false, true, true, false, false, false, true,
                   false, false, false]
    pose0: localizer/pose
    pose0_config: [true, true, false, false, false, false, false, false, false, false, false, false,
                   false, false, false]
"""


def topics(path):
    dec = DecoderFactory()
    out = {}
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            out.setdefault(channel.topic, []).append(dec.decoder_for(channel.message_encoding, schema)(message.data))
    return out


def test_drive_ekf_shows_fused_beside_raw_and_records_both(sim, tmp_path):
    (tmp_path / "ekf.yaml").write_text(EKF)
    script = tmp_path / "path.txt"
    script.write_text("forward 0.3 0.25\nturn 90 1.5\nforward 0.2\n")
    out = tmp_path / "run.mcap"
    sim.control({"cmd": "reset", "what": "pose"})
    r = run_cli("drive", "--port", sim.url, "--script", script, "--record", out, "--ekf", tmp_path / "ekf.yaml",
                timeout=90)
    assert r.returncode == 0, r.stderr
    # the config's pose0 is a ROS topic: drive says it cannot read it (ros2 --ekf does)
    assert "pose0 read /localizer/pose, a ROS topic" in r.stderr
    raw = re.search(r"stopped .*?: pose x ([+-]\d\.\d+) m  y ([+-]\d\.\d+) m", r.stdout)
    fused = re.search(r"fused \(--ekf\): pose x ([+-]\d\.\d+) m  y ([+-]\d\.\d+) m .*; raw - fused ([\d.]+) mm; "
                      r"(\d+) filter cycles", r.stdout)
    assert raw and fused, r.stdout
    # wheel odometry alone: the filter integrates the same twist, so it ends within a few mm of the raw pose. On a
    # virtual board the odometry is stamped in board time and the filter runs on it (cli/session.py): a machine
    # that stalls the board for 100 ms stalls the stamps alike, where host-time stamps had made the filter drive
    # on for those 100 ms (33 mm apart on a loaded machine)
    print(f"raw - fused {fused.group(3)} mm after {fused.group(4)} filter cycles")
    assert float(fused.group(3)) < 20.0
    assert float(fused.group(1)) == pytest.approx(float(raw.group(1)), abs=0.02)
    assert int(fused.group(4)) > 50

    rec = topics(out)
    assert len(rec["/odom"]) > 100 and len(rec["/odometry/filtered"]) > 50 and len(rec["/tf"]) == len(rec["/odom"])
    f = rec["/odometry/filtered"][-1]
    assert f.header.frame_id == "odom" and f.child_frame_id == "base_link"
    summary = fuse(out, load_config(tmp_path / "ekf.yaml"), tmp_path / "offline.csv")
    live = {round(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9, 6): m for m in rec["/odometry/filtered"]}
    with open(tmp_path / "offline.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert summary.rows == len(rows)
    matched = 0
    for row in rows:
        m = live.get(round(float(row["t"]), 6))
        if m is not None:
            matched += 1
            assert float(row["x"]) == pytest.approx(m.pose.pose.position.x, rel=1e-7, abs=1e-9)
            assert float(row["yaw"]) == pytest.approx(
                2 * math.atan2(m.pose.pose.orientation.z, m.pose.pose.orientation.w), abs=1e-7)
    assert matched >= len(rows) - 1


def test_monitor_ekf_shows_fused_beside_the_board_odometry(sim, tmp_path):
    """monitor does not drive: the board's odometry (GET_ODOM) is the filter's odom input; wheels turned by a push
    move both the raw and the fused pose, the fused one following the raw within its filtering lag."""
    import subprocess
    import threading

    from cli_helpers import VIPERDRIVE
    # the board's pose as well as its twist: the fused pose follows the raw one
    pose_too = EKF.replace("odom0_config: [false, false, false, false, false, false, true, true",
                           "odom0_config: [true, true, false, false, false, true, true, true")
    (tmp_path / "ekf.yaml").write_text(pose_too)
    p = subprocess.Popen([VIPERDRIVE, "monitor", "--port", sim.url, "--duration", "4", "--ekf", tmp_path / "ekf.yaml"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    threading.Timer(1.5, lambda: sim.control({"cmd": "push", "wheel": "both", "torque": 0.3,
                                              "duration": 0.8})).start()
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    m = re.search(r"raw pose x ([+-]\d+\.\d+) m  y ([+-]\d+\.\d+) m .*; fused \(--ekf\) x ([+-]\d+\.\d+) m  "
                  r"y ([+-]\d+\.\d+) m", out)
    assert m, out[-2000:]
    rx, ry, fx, fy = map(float, m.groups())
    assert math.hypot(rx, ry) > 0.05                       # the push moved the wheels
    assert math.hypot(fx - rx, fy - ry) < 0.03 + 0.1 * math.hypot(rx, ry)
    assert "pose0 read /localizer/pose, a ROS topic" in err
