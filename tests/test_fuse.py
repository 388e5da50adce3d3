# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive fuse` as a user runs it: a subprocess on an MCAP file written here with mcap_ros2.writer."""
import csv
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcap.reader import make_reader
from mcap_ros2.decoder import DecoderFactory

from viperdrive.estimation.replay import CSV_COLUMNS
from viperdrive.estimation.simruns import simulate_run, write_mcap

pytestmark = pytest.mark.unit

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")     # the console script of the venv, as users run it

CONFIG = """\
ekf_filter_node:
  ros__parameters:
    frequency: 20.0
    sensor_timeout: 0.2
    two_d_mode: true
    publish_tf: true
    smooth_lagged_data: {smooth}
    history_length: {history}
    odom0: odom
    odom0_config: [false, false, false, false, false, false, true, true, false, false, false, true,
                   false, false, false]
    imu0: imu
    imu0_config: [false, false, false, false, false, false, false, false, false, false, false, true,
                  false, false, false]
    pose0: pose
    pose0_config: [true, true, false, false, false, false, false, false, false, false, false, false,
                   false, false, false]
    pose0_rejection_threshold: 5.0
{extra}"""


def run_fuse(*args):
    proc = subprocess.run([VIPERDRIVE, "fuse", *map(str, args)], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr
    return proc


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuse")
    run = simulate_run(duration_s=20.0, seed=1, odom_hz=50, imu_hz=100, pose_hz=5)
    msgs = list(run.messages)
    # one pose fix jumps 5 m (a multipath/relocalization glitch)
    i = [k for k, m in enumerate(msgs) if m[0] == "/pose"][40]
    topic, typ, stamp, log, body = msgs[i]
    body = dict(body)
    body["pose"] = {"pose": {"position": dict(body["pose"]["pose"]["position"]),
                             "orientation": body["pose"]["pose"]["orientation"]},
                    "covariance": body["pose"]["covariance"]}
    body["pose"]["pose"]["position"]["x"] += 5.0
    msgs[i] = (topic, typ, stamp, log, body)
    # the position fixes arrive 0.3 s after their stamps (a slow localizer)
    msgs = [(tp, ty, st, lg + (0.3 if tp == "/pose" else 0.0), b) for tp, ty, st, lg, b in msgs]
    msgs.sort(key=lambda m: m[3])
    path = d / "run.mcap"
    write_mcap(path, msgs)
    return d, path, run


def config_file(d, name="ekf.yaml", smooth="true", history=1.0, extra=""):
    p = d / name
    p.write_text(CONFIG.format(smooth=smooth, history=history, extra=textwrap.indent(extra, "    ")))
    return p


def test_fuse_writes_csv_and_mcap_and_a_summary(recording):
    d, path, run = recording
    cfg = config_file(d, extra="odom0_confg: [true]\n")
    out, mout = d / "fused.csv", d / "fused.mcap"
    proc = run_fuse(path, "--config", cfg, "--out", out, "--mcap-out", mout)
    assert proc.returncode == 0, proc.stderr
    assert "odom0_confg" in proc.stderr and "unknown" in proc.stderr      # reported, not silently ignored
    rows = list(csv.reader(open(out)))
    assert tuple(rows[0][:25]) == CSV_COLUMNS
    assert rows[0][:13] == "t,x,y,z,roll,pitch,yaw,vx,vy,vz,vroll,vpitch,vyaw".split(",")
    data = [[float(v) for v in r] for r in rows[1:]]
    assert 20 * 20 * 0.9 < len(data) < 20 * 20 * 1.1 + 5          # one estimate per 1/frequency
    ts = [r[0] for r in data]
    assert all(b > a for a, b in zip(ts, ts[1:], strict=False))
    t_end, x_end, y_end, yaw_end = data[-1][0], data[-1][1], data[-1][2], data[-1][6]
    tx, ty, tyaw = run.truth_at(t_end)
    assert math.hypot(x_end - tx, y_end - ty) < 0.25
    assert abs(math.remainder(yaw_end - tyaw, 2 * math.pi)) < 0.15
    assert all(r[13 + k] > 0 for r in data for k in range(12))    # variances
    # summary: per sensor used / rejected / too late
    out_text = proc.stdout
    pose_line = next(line for line in out_text.splitlines() if line.startswith("pose0"))
    msgs, used, rejected, too_late = (int(v) for v in pose_line.split()[2:6])
    assert (msgs, rejected, too_late) == (101, 1, 0) and used == 100
    assert "final 1-sigma" in out_text
    # the MCAP output decodes as nav_msgs/Odometry on /odometry/filtered, one per CSV row
    with open(mout, "rb") as f:
        decoded = [(ch.topic, sch.name, m) for sch, ch, _, m in
                   make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages()]
    assert len(decoded) == len(data)
    assert {(t, s) for t, s, _ in decoded} == {("/odometry/filtered", "nav_msgs/msg/Odometry")}
    last = decoded[-1][2]
    assert last.header.frame_id == "odom" and last.child_frame_id == "base_link"
    assert last.pose.pose.position.x == pytest.approx(x_end, abs=1e-6)
    assert last.header.stamp.sec + last.header.stamp.nanosec * 1e-9 == pytest.approx(t_end, abs=1e-6)
    assert last.pose.covariance[0] == pytest.approx(data[-1][13], rel=1e-6)


def test_lagged_fixes_beyond_the_history_are_counted_and_reported(recording):
    d, path, _ = recording
    cfg = config_file(d, "short.yaml", history=0.1)
    proc = run_fuse(path, "--config", cfg, "--out", d / "short.csv")
    assert proc.returncode == 0, proc.stderr
    pose_line = next(line for line in proc.stdout.splitlines() if line.startswith("pose0"))
    too_late = int(pose_line.split()[5])
    assert too_late > 90
    assert "older than history_length" in proc.stdout
    # each one is logged, but stderr shows the first five per sensor and then says the rest are counted
    assert proc.stderr.count("is older than the history") == 5
    assert "pose0: further lagged-measurement warnings are only counted" in proc.stderr


def test_strict_refuses_unknown_keys(recording):
    d, path, _ = recording
    cfg = config_file(d, "typo.yaml", extra="imu0_remove_gravity: true\n")
    proc = run_fuse(path, "--config", cfg, "--out", d / "x.csv", "--strict")
    assert proc.returncode == 7
    assert "imu0_remove_gravity" in proc.stderr


@pytest.mark.parametrize("case", ["missing", "not_mcap", "yaml", "type", "topic_type", "unwritable", "overwrite",
                                  "limit"])
def test_bad_input_is_a_message_and_an_exit_code(recording, case):
    d, path, _ = recording
    cfg = config_file(d)
    out = d / "bad.csv"
    if case == "missing":
        proc = run_fuse(d / "nope.mcap", "--config", cfg, "--out", out)
        assert proc.returncode == 7 and "no such file" in proc.stderr
    elif case == "not_mcap":
        junk = d / "junk.mcap"
        junk.write_text("this is not a recording\n")
        proc = run_fuse(junk, "--config", cfg, "--out", out)
        assert proc.returncode == 7 and "not a readable MCAP" in proc.stderr
    elif case == "yaml":
        bad = d / "bad.yaml"
        bad.write_text("ekf:\n  ros__parameters:\n    frequency: [1,\n")
        proc = run_fuse(path, "--config", bad, "--out", out)
        assert proc.returncode == 7 and "not valid YAML" in proc.stderr
    elif case == "type":
        bad = config_file(d, "type.yaml", extra="gravitational_acceleration: fast\n")
        proc = run_fuse(path, "--config", bad, "--out", out)
        assert proc.returncode == 7
        assert "ekf_filter_node: gravitational_acceleration: expected a number, got 'fast' (line 19)" in proc.stderr
        twice = config_file(d, "twice.yaml", extra="frequency: 50.0\n")          # frequency is set above too
        proc = run_fuse(path, "--config", twice, "--out", out)
        assert proc.returncode == 7 and "duplicate key 'frequency' (line 3 and line 19)" in proc.stderr
    elif case == "topic_type":
        bad = config_file(d, "swap.yaml", extra="twist0: imu\ntwist0_config: [false, false, false, false, false, "
                                                "false, true, false, false, false, false, false, false, false, "
                                                "false]\n")
        proc = run_fuse(path, "--config", bad, "--out", out)
        assert proc.returncode == 1 and "carries sensor_msgs/msg/Imu" in proc.stderr
    elif case == "unwritable":
        proc = run_fuse(path, "--config", cfg, "--out", d / "no_such_dir" / "x.csv")
        assert proc.returncode == 1 and "cannot write" in proc.stderr
    elif case == "overwrite":
        before = path.read_bytes()
        proc = run_fuse(path, "--config", cfg, "--out", d / "ok.csv", "--mcap-out", path)
        assert proc.returncode == 1 and "is the input recording" in proc.stderr
        assert path.read_bytes() == before                   # bad input loses nothing
    else:
        proc = run_fuse(path, "--config", cfg, "--out", out, "--uncertainty-limit", "-1")
        assert proc.returncode == 2 and "argument --uncertainty-limit: -1 is outside (0, 1e+06] m" in proc.stderr
        return
    assert proc.stderr.startswith("viperdrive fuse") or "error:" in proc.stderr


@pytest.fixture(scope="module")
def gap_recording(tmp_path_factory):
    """Every sensor silent from t0+8 s to t0+11 s (a cable pulled), recorded in small chunks."""
    d = tmp_path_factory.mktemp("gap")
    run = simulate_run(duration_s=16.0, seed=2, odom_hz=50, imu_hz=100, pose_hz=5)
    msgs = [m for m in run.messages if not (108.0 <= m[2] < 111.0)]
    path = d / "gap.mcap"
    write_mcap(path, msgs)
    return d, path


def test_a_silent_stretch_is_dead_reckoned_with_growing_variance(gap_recording):
    d, path = gap_recording
    cfg = config_file(d)
    out = d / "gap.csv"
    proc = run_fuse(path, "--config", cfg, "--out", out, "--progress")
    assert proc.returncode == 0, proc.stderr
    # the CLI's progress bar, on stderr only; a pipe gets plain lines (tenths of the messages), then the closing one
    assert re.search(r"^fuse: 100% \((\d+)/\1 messages\)$", proc.stderr, re.M) and "fuse: done (" in proc.stderr
    assert "fuse: 100%" not in proc.stdout
    data = [[float(v) for v in r] for r in list(csv.reader(open(out)))[1:]]
    during = [r for r in data if 108.3 <= r[0] < 111.0]
    # robot_localization's rule: after sensor_timeout (0.2 s) of silence, predict to the current time; so the
    # estimates keep coming, one per sensor_timeout + one period at most
    gaps = [b[0] - a[0] for a, b in zip(during, during[1:], strict=False)]
    assert len(during) >= 10 and max(gaps) <= 0.2 + 0.05 + 1e-9
    var_x = [r[13] for r in during]
    assert all(b > a for a, b in zip(var_x, var_x[1:], strict=False)) and var_x[-1] > 10 * var_x[0]
    after = [r for r in data if r[0] > 112.5]
    assert after[0][13] < var_x[-1] / 10           # the fixes come back and the variance with them
    assert "estimates were dead reckoning" in proc.stdout
    assert "pose0: silent longer than its timeout 1 times (longest 3.200 s)" in proc.stdout


def test_a_truncated_recording_is_fused_up_to_the_damage(gap_recording):
    d, path = gap_recording
    cut = d / "cut.mcap"
    data = path.read_bytes()
    cut.write_bytes(data[: int(len(data) * 0.7)])
    proc = run_fuse(cut, "--config", config_file(d), "--out", d / "cut.csv")
    assert proc.returncode == 0, proc.stderr
    assert "no readable index" in proc.stdout and "damaged data" in proc.stdout
    rows = list(csv.reader(open(d / "cut.csv")))
    assert len(rows) > 50


def test_nothing_usable_is_an_error(gap_recording):
    d, path = gap_recording
    cfg = d / "none.yaml"
    cfg.write_text("odom0: /not_recorded\nodom0_config: [true, true, false, false, false, true, false, false, false,"
                   " false, false, false, false, false, false]\n")
    proc = run_fuse(path, "--config", cfg, "--out", d / "none.csv")
    assert proc.returncode == 1
    assert "'/not_recorded' is not in gap.mcap" in proc.stdout and "no estimate" in proc.stderr


def test_a_run_with_no_estimates_leaves_existing_outputs_untouched(gap_recording, tmp_path):
    d, path = gap_recording
    cfg = tmp_path / "none.yaml"
    cfg.write_text("odom0: /not_recorded\nodom0_config: [true, true, false, false, false, true, false, false, false,"
                   " false, false, false, false, false, false]\n")
    out, mout = tmp_path / "keep.csv", tmp_path / "keep.mcap"
    out.write_text("t,x\n1.0,2.0\n")
    mout.write_bytes(b"last run's odometry")
    out.chmod(0o640)
    proc = run_fuse(path, "--config", cfg, "--out", out, "--mcap-out", mout)
    assert proc.returncode == 1 and "no estimate" in proc.stderr
    assert out.read_text() == "t,x\n1.0,2.0\n" and mout.read_bytes() == b"last run's odometry"
    assert f"{out} was not written (the existing file is unchanged)" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv", "keep.mcap", "none.yaml"]   # no temp left
    # nothing there before: nothing created
    proc = run_fuse(path, "--config", cfg, "--out", tmp_path / "new.csv")
    assert proc.returncode == 1 and not (tmp_path / "new.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv", "keep.mcap", "none.yaml"]
    # a run that produces estimates replaces both, keeping the old file's permissions
    proc = run_fuse(path, "--config", config_file(d), "--out", out, "--mcap-out", mout)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(open(out)))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) > 100
    assert (out.stat().st_mode & 0o777) == 0o640
    with open(mout, "rb") as f:
        assert sum(1 for _ in make_reader(f).iter_messages()) == len(rows) - 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv", "keep.mcap", "none.yaml"]


def test_a_new_output_gets_the_usual_file_mode(gap_recording, tmp_path):
    import os

    d, path = gap_recording
    out = tmp_path / "new.csv"
    proc = run_fuse(path, "--config", config_file(d), "--out", out)
    assert proc.returncode == 0, proc.stderr
    mask = os.umask(0)
    os.umask(mask)
    assert (out.stat().st_mode & 0o777) == 0o666 & ~mask          # as open() would have made it, not mkstemp's 0600


def test_rosmsg_definitions_are_the_rosbag2_concatenated_form_and_round_trip(tmp_path):
    from viperdrive.messages import definitions as rosmsg_defs

    odom = rosmsg_defs.DEFINITIONS[rosmsg_defs.ODOMETRY]
    blocks = odom.split("=" * 80 + "\n")
    assert blocks[0].startswith("#") and "std_msgs/Header header" in blocks[0]
    names = [b.splitlines()[0] for b in blocks[1:]]
    assert all(n.startswith("MSG: ") and "/msg/" in n for n in names)
    assert {"MSG: builtin_interfaces/msg/Time", "MSG: geometry_msgs/msg/Quaternion",
            "MSG: geometry_msgs/msg/TwistWithCovariance"} <= set(names)
    assert len(names) == len(set(names))                      # each dependency once
    # write one message of every type, read it back with the mcap ROS 2 decoder
    msgs = {
        rosmsg_defs.IMU: {"header": {"stamp": {"sec": -5, "nanosec": 7}, "frame_id": "imu"},
                          "orientation_covariance": [-1.0] + [0.0] * 8,
                          "angular_velocity": {"z": 0.5}, "angular_velocity_covariance": [0.1] * 9,
                          "linear_acceleration_covariance": [0.2] * 9},
        rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED: {
            "header": {"frame_id": "map"}, "pose": {"pose": {"position": {"x": 1.5}}, "covariance": [0.0] * 36}},
        rosmsg_defs.TWIST_WITH_COVARIANCE_STAMPED: {"twist": {"twist": {"angular": {"z": -0.25}},
                                                              "covariance": [1.0] * 36}},
    }
    path = tmp_path / "types.mcap"
    write_mcap(path, [(f"/t{i}", typ, 0.0, float(i), body) for i, (typ, body) in enumerate(msgs.items())])
    with open(path, "rb") as f:
        got = {sch.name: m for sch, _, _, m in make_reader(f, decoder_factories=[DecoderFactory()])
               .iter_decoded_messages()}
    imu = got[rosmsg_defs.IMU]
    assert imu.header.stamp.sec == -5 and imu.header.stamp.nanosec == 7      # int32 sec, as ROS 2 defines it
    assert imu.orientation.w == 1.0 and imu.angular_velocity.z == 0.5       # Quaternion's default w = 1
    assert got[rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED].pose.pose.position.x == 1.5
    assert got[rosmsg_defs.TWIST_WITH_COVARIANCE_STAMPED].twist.twist.angular.z == -0.25


def _upside_down_imu_recording(path, with_tf_static):
    """Odometry gives only vx (no yaw rate); the yaw rate comes from an IMU mounted upside down in imu_link."""
    run = simulate_run(duration_s=12.0, seed=4, odom_hz=50, imu_hz=100, pose_hz=0)
    msgs = []
    for topic, typ, st, lg, body in run.messages:
        if topic == "/imu":
            body = dict(body)
            body["header"] = dict(body["header"], frame_id="imu_link")
            w = body["angular_velocity"]
            body["angular_velocity"] = {"x": w["x"], "y": -w["y"], "z": -w["z"]}
        msgs.append((topic, typ, st, lg, body))
    if with_tf_static:
        tf = {"transforms": [{"header": {"stamp": {"sec": 100, "nanosec": 0}, "frame_id": "base_link"},
                              "child_frame_id": "imu_link",
                              "transform": {"translation": {"x": 0.1, "y": 0.0, "z": 0.05},
                                            "rotation": {"x": 1.0, "y": 0.0, "z": 0.0, "w": 0.0}}}]}
        msgs.insert(0, ("/tf_static", "tf2_msgs/msg/TFMessage", 100.0, 100.0, tf))
    write_mcap(path, msgs)
    return run


def test_fuse_applies_tf_static_and_warns_without_it(tmp_path):
    cfg = tmp_path / "imu.yaml"
    cfg.write_text(textwrap.dedent("""\
        frequency: 20.0
        two_d_mode: true
        odom0: odom
        odom0_config: [false, false, false, false, false, false, true, true, false,
                       false, false, false, false, false, false]
        imu0: imu
        imu0_config: [false, false, false, false, false, false, false, false, false,
                      false, false, true, false, false, false]
    """))
    for with_tf in (True, False):
        rec = tmp_path / f"imu_{with_tf}.mcap"
        run = _upside_down_imu_recording(rec, with_tf)
        out = tmp_path / f"imu_{with_tf}.csv"
        proc = run_fuse(rec, "--config", cfg, "--out", out)
        assert proc.returncode == 0, proc.stderr
        last = [float(v) for v in list(csv.reader(open(out)))[-1]]
        _, _, true_yaw = run.truth_at(last[0])
        yaw_error = abs(math.remainder(last[6] - true_yaw, 2 * math.pi))
        if with_tf:
            assert yaw_error < 0.05 and "imu_link" not in proc.stdout
        else:
            assert yaw_error > 0.3               # the yaw rate has the wrong sign: the warning says why
            assert "imu0: its data is in frame 'imu_link', not 'base_link'" in proc.stdout
