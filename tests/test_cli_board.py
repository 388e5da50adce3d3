# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every board command as a subprocess (`viperdrive ...`) against one virtual board shared by this module (`viperdrive
sim`, its control endpoint gives ground truth and faults); drive and monitor through a pseudo-terminal with
keystrokes; the recorded MCAP read back with the ROS 2 decoder."""
from __future__ import annotations

import base64
import json
import math
import os
import re
import socket
import struct

import pytest
from cli_helpers import VIPERDRIVE, PtyProcess, run_cli

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.board


@pytest.fixture(autouse=True)
def no_fault_left_behind(request):
    """Each test leaves the shared board without a latched fault (checked, then cleared so that one failure does
    not cascade into the next tests)."""
    yield
    if "sim" not in request.fixturenames:
        return
    s = request.getfixturevalue("sim")
    d = _info(s)
    if d["fault_code"]:
        run_cli("info", "--port", s.url, "--clear-fault")
        pytest.fail(f"{request.node.name} left the board in FAULT: {d['fault']}")


def _info(sim) -> dict:
    r = run_cli("info", "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_help_lists_every_command_with_a_description():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("ports", "info", "flash", "repl", "sim", "drive", "monitor", "tune", "calibrate", "params", "log",
                "fuse"):
        assert re.search(rf"^\s+{cmd}\s+\S", r.stdout, re.M), f"{cmd} missing from --help:\n{r.stdout}"


def test_ports_json_is_data():
    r = run_cli("ports", "--json", "--all")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) == {"ports", "auto", "hidden"}
    for p in d["ports"]:
        assert {"device", "usb_id", "guess", "looks_like_board"} <= set(p)


def test_info_reports_hello_status_diag_and_every_parameter(sim):
    d = _info(sim)
    assert d["board"] == "viperdrive-sim" and d["protocol_version"] == P.PROTOCOL_VERSION
    assert d["schema_hash"] == f"{PARAMS.schema_hash():08x}"
    assert d["control_hz"] == 500 and d["counts_per_rev"] == 4096
    assert "ENABLED" not in d["status_names"] and d["fault_code"] == 0 and d["fault"] == "none"
    assert set(d["params"]) == {p[PARAMS.NAME] for p in PARAMS.TABLE}
    assert d["diag"]["period_min_us"] <= 2000 <= d["diag"]["period_max_us"]
    r = run_cli("info", "--port", sim.url)
    assert r.returncode == 0
    assert re.search(r"^fault\s+none$", r.stdout, re.M)
    assert re.search(r"^control\s+500 Hz, 4096 counts per wheel revolution$", r.stdout, re.M)
    assert re.search(r"^  kp\s", r.stdout, re.M)


def test_params_set_get_list_diff_save(sim, tmp_path):
    r = run_cli("params", "set", "kd_tau=0.02", "stall_ms=600", "--port", sim.url)
    assert r.returncode == 0, r.stderr
    assert "kd_tau: 0.01 -> 0.02 s" in r.stdout and "stall_ms: 500 -> 600 ms" in r.stdout
    r = run_cli("params", "get", "kd_tau", "stall_ms", "--port", sim.url, "--json")
    assert json.loads(r.stdout)["params"] == {"kd_tau": pytest.approx(0.02, rel=1e-6), "stall_ms": 600}
    r = run_cli("params", "list", "--port", sim.url, "--json")
    listed = json.loads(r.stdout)["params"]
    assert len(listed) == len(PARAMS.TABLE)
    f = tmp_path / "p.json"
    f.write_text(r.stdout)          # the --json output of list is a valid diff file
    r = run_cli("params", "diff", f, "--port", sim.url)
    assert r.returncode == 0 and "matches" in r.stderr
    y = tmp_path / "p.yaml"
    y.write_text("kd_tau: 0.01\nstall_ms: 600\n")
    r = run_cli("params", "diff", y, "--port", sim.url)
    assert r.returncode == 1
    assert re.search(r"^kd_tau\s+0\.02\s+0\.01$", r.stdout, re.M) and "stall_ms" not in r.stdout
    r = run_cli("params", "save", "--port", sim.url)
    assert r.returncode == 0 and "saved" in r.stderr
    run_cli("params", "set", "kd_tau=0.01", "stall_ms=500", "--port", sim.url, "--save")


def test_params_refuse_bad_values_before_touching_the_board(sim):
    r = run_cli("params", "set", "kp=12", "--port", sim.url)
    assert r.returncode == 7
    assert r.stderr.strip() == ("viperdrive params: error: invalid value for kp: kp=12.0 outside [0.0, 10.0] "
                                "duty/(rad/s)")
    r = run_cli("params", "set", "stall_ms=50.5", "--port", sim.url)
    assert r.returncode == 7 and "stall_ms" in r.stderr and "whole number in [50, 10000] ms" in r.stderr
    r = run_cli("params", "get", "kpp", "--port", sim.url)
    assert r.returncode == 7 and "unknown parameter 'kpp' (did you mean 'kp'?)" in r.stderr
    r = run_cli("params", "set", "kp", "--port", sim.url)
    assert r.returncode == 2 and "NAME=VALUE" in r.stderr
    assert _info(sim)["params"]["kp"] == pytest.approx(0.04, rel=1e-6)


def test_drive_keyboard_through_a_pty_then_q_disables(sim):
    p = PtyProcess([VIPERDRIVE, "drive", "--port", sim.url], clock=sim.clock)
    try:
        p.expect(r"keys: w/s")
        start = len(p.output)
        p.send("w")
        p.send("w")
        p.send("\x1b[A")              # Up: the third step of 0.05 m/s
        m = p.expect(r"command   v \+0\.150 m/s", start=start)
        # wheel speed at 0.15 m/s: 0.15 / 0.0325 = 4.6 rad/s; wait until the measured speed is there
        p.expect(r"measured L\s+\+4\.[4-8]\d R\s+\+4\.[4-8]\d rad/s", start=m.end(), timeout=10)
        assert re.search(r"status    ENABLED", p.output[m.end():])
        truth = sim.control({"cmd": "truth"})
        assert truth["w_left"] > 3.0 and truth["w_right"] > 3.0      # the simulated wheels really turn
        start = len(p.output)
        p.send("a")                   # turn left: w = +0.25 rad/s -> the LEFT wheel slower (REP-103)
        p.expect(r"w \+0\.250 rad/s", start=start)
        # v -+ w b / 2 over r: (0.15 -+ 0.25 * 0.076) / 0.0325 = 4.03 and 5.20 rad/s once the ramp is through
        p.expect(r"commanded L\s+\+4\.03 R\s+\+5\.20", start=start)
        seg = p.output[start:]
        wl, wr = map(float, re.findall(r"commanded L\s+([+-]\d+\.\d+) R\s+([+-]\d+\.\d+)", seg)[-1])
        assert wl < wr
        p.send(" ")
        p.expect(r"command   v \+0\.000 m/s   w \+0\.000", start=start)
        # speed steps: '+' to the large step (0.1 m/s, 0.5 rad/s), '-' twice to the small one (0.02, 0.1);
        # s / Down and d / Right are the other directions
        start = len(p.output)
        p.send("+")
        p.expect(r"step 0\.10 m/s / 0\.50 rad/s", start=start)
        p.send("s")
        p.send("d")
        p.expect(r"command   v -0\.100 m/s   w -0\.500", start=start)
        p.send("-")
        p.send("-")
        p.expect(r"step 0\.02 m/s / 0\.10 rad/s", start=start)
        p.send("\x1b[B")             # Down
        p.send("\x1b[C")             # Right
        p.expect(r"command   v -0\.120 m/s   w -0\.600", start=start)
        p.send(" ")
        p.send("q")
        assert p.wait() == 0, p.output[-3000:]
        assert "stopped (quit)" in p.output and "-> disabling" in p.output
    finally:
        p.close()
    assert "ENABLED" not in _info(sim)["status_names"]


def test_drive_ctrl_c_leaves_the_board_disabled(sim):
    p = PtyProcess([VIPERDRIVE, "drive", "--port", sim.url], clock=sim.clock)
    try:
        p.expect(r"keys: w/s")
        p.send("wwww")
        p.expect(r"status    ENABLED")
        p.send("\x03")
        rc = p.wait()
        assert rc == 130 and "viperdrive drive: interrupted" in p.output and "Traceback" not in p.output
    finally:
        p.close()
    d = _info(sim)
    assert "ENABLED" not in d["status_names"]


def test_drive_needs_a_terminal_or_a_script(sim):
    r = run_cli("drive", "--port", sim.url)
    assert r.returncode == 2 and "needs a terminal" in r.stderr and "--script" in r.stderr
    r = run_cli("drive", "--port", sim.url, "--script", "octagon")
    assert r.returncode == 7 and "not a built-in (square, spin, figure8)" in r.stderr


def test_drive_script_with_recording_reads_back_as_ros2_messages(sim, tmp_path):
    script = tmp_path / "path.txt"
    script.write_text("forward 0.25 0.25\nturn 90 1.5\nforward 0.1\n")
    out = tmp_path / "run.mcap"
    sim.control({"cmd": "reset", "what": "pose"})
    # closed on the host (its commands are the recording's /cmd_vel; board moves: tests/test_moves.py)
    r = run_cli("drive", "--port", sim.url, "--script", script, "--record", out, "--follower", "host", timeout=60)
    assert r.returncode == 0, r.stderr
    m = re.search(r"pose x ([+-]\d\.\d+) m  y ([+-]\d\.\d+) m  heading ([+-]\d+\.\d+) deg", r.stdout)
    x, y, th = map(float, m.groups())
    assert x == pytest.approx(0.25, abs=0.015) and y == pytest.approx(0.1, abs=0.015)
    assert th == pytest.approx(90, abs=3)
    truth = sim.control({"cmd": "truth"})
    assert math.hypot(truth["x"] - 0.25, truth["y"] - 0.1) < 0.05     # the simulated robot went there too

    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    class Rec:
        def __init__(self, schema, channel, message, ros_msg):
            self.schema, self.channel, self.ros_msg, self.log_time_ns = schema, channel, ros_msg, message.log_time

    msgs: dict = {}
    with open(out, "rb") as f:
        for rec in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            msgs.setdefault(rec[1].topic, []).append(Rec(*rec))
    assert {"/odom", "/tf", "/joint_states", "/cmd_vel", "/diagnostics", "/viperdrive/telemetry"} <= set(msgs)
    assert msgs["/odom"][0].schema.name == "nav_msgs/msg/Odometry"
    assert msgs["/viperdrive/telemetry"][0].schema.encoding == "ros2msg"
    last = msgs["/odom"][-1].ros_msg
    assert last.pose.pose.position.x == pytest.approx(x, abs=0.002)
    assert last.header.frame_id == "odom" and last.child_frame_id == "base_link"
    assert 2 * math.atan2(last.pose.pose.orientation.z, last.pose.pose.orientation.w) == pytest.approx(
        math.radians(th), abs=0.01)
    js = msgs["/joint_states"][-1].ros_msg
    assert list(js.name) == ["left_wheel_joint", "right_wheel_joint"] and len(js.velocity) == 2
    cmds = [c.ros_msg.twist for c in msgs["/cmd_vel"]]
    assert max(c.linear.x for c in cmds) == pytest.approx(0.25, abs=0.01)
    assert max(c.angular.z for c in cmds) > 1.0
    diag = msgs["/diagnostics"][-1].ros_msg.status[0]
    # OK, or WARN when the loaded test machine made the simulated board overrun a control period
    assert (diag.level, diag.message) == (0, "ok") or (
        diag.level == 1 and re.fullmatch(r"\d+ new control overruns", diag.message))
    assert {kv.key for kv in diag.values} >= {"period_max_us", "host_misses", "status"}
    tele = [t.ros_msg for t in msgs["/viperdrive/telemetry"]]
    assert len(tele) > 20 and max(t.setpoint_left for t in tele) > 5.0
    # log time grows, stamps are wall clock
    times = [rec.log_time_ns for rec in msgs["/odom"]]
    assert times == sorted(times) and times[0] > 1.6e18

    r = run_cli("log", "plot", out, "--out-dir", tmp_path / "png", "--json")
    assert r.returncode == 0, r.stderr
    pngs = json.loads(r.stdout)["png"]
    assert [os.path.basename(p) for p in pngs] == ["run_path.png", "run_wheels.png", "run_pid.png"]
    for p in pngs:
        with open(p, "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24])[0] >= 500


def test_log_record_duration_and_a_bad_output(sim, tmp_path):
    out = tmp_path / "idle.mcap"
    r = run_cli("log", "record", out, "--duration", "1.0", "--port", sim.url)
    assert r.returncode == 0, r.stderr
    assert "recording" in r.stderr and "done" in r.stderr
    counts = dict(re.findall(r"(/\S+) (\d+)", r.stdout))
    assert 80 <= int(counts["/odom"]) <= 105 and int(counts["/viperdrive/telemetry"]) >= 10
    r = run_cli("log", "record", tmp_path / "x.txt", "--duration", "1", "--port", sim.url)
    assert r.returncode == 7 and "must end in .mcap" in r.stderr
    bad = tmp_path / "bad.mcap"
    bad.write_bytes(b"not an mcap file at all")
    r = run_cli("log", "plot", bad)
    assert r.returncode == 7 and "not a readable MCAP file" in r.stderr and "Traceback" not in r.stderr


def test_monitor_shows_a_wheel_turned_by_hand(sim):
    p = PtyProcess([VIPERDRIVE, "monitor", "--port", sim.url], clock=sim.clock)
    try:
        p.expect(r"telemetry\s+\d+ records/s")
        # a hand turning the left wheel forward (the board is disabled: only the measurement moves)
        sim.control({"cmd": "push", "wheel": "left", "torque": 0.4, "duration": 1.5})
        m = p.expect(r"left\s+\+0\.00\s+\+([1-9]\d*\.\d\d) rad/s", timeout=10)
        assert float(m.group(1)) > 1.0
        assert re.search(r"right\s+\+0\.00\s+[+-]0\.\d\d rad/s", p.output[m.start():])
        p.expect(r"loop\s+period \d+\.\.\d+ us \(jitter \d+ us\)")
        p.expect(r"link\s+board: frames \d+, CRC 0")
        start = len(p.output)
        p.send(" ")                   # pause: the frame on screen says so and stays
        p.expect(r"viperdrive monitor  \S+  \[paused\]", start=start)
        p.send(" ")
        p.expect(r"viperdrive monitor  \S+   \(q quit", start=start)
        p.send("q")
        assert p.wait() == 0, p.output[-3000:]
        m = re.search(r"monitor: (\d+) telemetry records at 50/s requested, (\d+) lost", p.output)
        assert int(m.group(1)) > 5 and int(m.group(2)) <= int(m.group(1)) // 10
    finally:
        p.close()


def _ws_frame(sock) -> tuple[int, bytes]:
    head = sock.recv(2)
    op, n = head[0] & 0x0F, head[1] & 0x7F
    if n == 126:
        n = struct.unpack(">H", sock.recv(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", sock.recv(8))[0]
    data = b""
    while len(data) < n:
        data += sock.recv(n - len(data))
    return op, data


def test_monitor_serves_foxglove_over_websocket(sim):
    p = PtyProcess([VIPERDRIVE, "monitor", "--port", sim.url, "--foxglove", "127.0.0.1:0", "--duration", "4"],
                   clock=sim.clock)
    try:
        m = p.expect(r"foxglove: serving on ws://127\.0\.0\.1:(\d+)")
        port = int(m.group(1))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            key = base64.b64encode(os.urandom(16)).decode()
            s.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                       f"Sec-WebSocket-Protocol: foxglove.sdk.v1\r\n\r\n").encode())
            resp = b""
            while b"\r\n\r\n" not in resp:
                resp += s.recv(1)
            assert b" 101 " in resp.split(b"\r\n")[0] and b"foxglove.sdk.v1" in resp
            topics = set()
            for _ in range(10):
                op, data = _ws_frame(s)
                if op == 1:
                    msg = json.loads(data)
                    if msg.get("op") == "advertise":
                        topics |= {c["topic"] for c in msg["channels"]}
                if {"/viperdrive/wheels", "/viperdrive/status", "/tf"} <= topics:
                    break
            assert {"/viperdrive/wheels", "/viperdrive/status", "/tf"} <= topics
        assert p.wait(timeout=15) == 0
    finally:
        p.close()


def test_tune_step_test_metrics_json_and_png(sim, tmp_path):
    png = tmp_path / "step.png"
    r = run_cli("tune", "--port", sim.url, "--wheel", "left", "--step", "8", "--duration", "0.8", "--png", png,
                "--set", "kp=0.05", "--save", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    m = d["wheels"]["left"]
    assert d["gains"]["kp"] == pytest.approx(0.05, rel=1e-6) and list(d["wheels"]) == ["left"] and d["saved"]
    assert 0.005 < m["rise_time_s"] < 0.4 and m["overshoot"] >= 0.0
    assert m["settling_time_s"] is not None and m["settling_time_s"] < 0.8
    assert abs(m["steady_state_error"]) < 0.4 and m["peak"] >= 8 * 0.95
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run_cli("params", "get", "kp", "max_accel", "--port", sim.url, "--json")
    got = json.loads(r.stdout)["params"]
    assert got["kp"] == pytest.approx(0.05, rel=1e-6)
    assert got["max_accel"] == pytest.approx(30.0)          # the ramp lifted for the test came back
    sim.control({"cmd": "reset", "what": "board"})          # power cycle: --save kept the gain in the board's flash
    r = run_cli("params", "get", "kp", "max_accel", "--port", sim.url, "--json")
    got = json.loads(r.stdout)["params"]
    assert got["kp"] == pytest.approx(0.05, rel=1e-6) and got["max_accel"] == pytest.approx(30.0)
    r = run_cli("params", "set", "kp=0.04", "--port", sim.url, "--save")
    assert r.returncode == 0, r.stderr
    r = run_cli("tune", "--port", sim.url, "--step", "40")
    assert r.returncode == 7 and "above the robot's max_rim_speed" in r.stderr


def test_tune_autotune_on_a_private_board(tmp_path):
    r = run_cli("tune", "--port", "sim", "--autotune", "--yes", "--wheel", "right", "--png", tmp_path / "a.png",
                "--json", timeout=90)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    a = d["autotune"]
    assert a["ok"] and a["applied"] and a["cycles"] >= 3 and a["ku"] > 0 and a["tu"] > 0
    assert d["gains"]["kp"] == pytest.approx(a["kp"], rel=1e-5)
    assert d["gains"]["ki"] == pytest.approx(a["ki"], rel=1e-5)
    m = d["wheels"]["right"]
    assert m["settling_time_s"] is not None and abs(m["steady_state_error_pct"]) < 5


def test_autotune_on_a_stalled_wheel_refuses_says_what_the_wheel_did_and_changes_nothing(sim, tmp_path):
    """A stalled wheel does not oscillate: the refusal (exit 7, after its repeats) says what the wheel did, not only
    the count of cycles; the gains and the experiment's parameters are what they were, no fault latched."""
    names = ["kp", "ki", "max_accel", "max_duty", "vel_edges", "stall_speed"]
    get = ["params", "get", *names, "--port", sim.url, "--json"]
    before = json.loads(run_cli(*get).stdout)["params"]
    sim.control({"cmd": "fault", "kind": "stall", "wheel": "right", "on": True})
    try:
        r = run_cli("tune", "--port", sim.url, "--autotune", "--yes", "--wheel", "right", "--json",
                    "--png", tmp_path / "a.png", timeout=90)
    finally:
        sim.control({"cmd": "fault", "kind": "stall", "wheel": "right", "on": False})
    after = json.loads(run_cli(*get).stdout)["params"]
    print(f"autotune on a stalled wheel: exit {r.returncode}: {r.stderr.strip()}")
    assert r.returncode == 7 and "autotune refused" in r.stderr and "Traceback" not in r.stderr, r.stderr
    span = re.search(r"right wheel's speed spanned (\S+) \.\. (\S+) rad/s over (\S+) s of board time \((\d+) records\)",
                     r.stderr)
    assert span, r.stderr
    lo, hi, seconds, n = float(span[1]), float(span[2]), float(span[3]), int(span[4])
    assert -0.5 < lo <= hi < 0.5 and seconds > 1.0 and n > 100       # a wheel that barely moved, seen throughout
    assert after == before
    assert json.loads(run_cli("info", "--port", sim.url, "--json").stdout)["fault_code"] == P.FAULT_NONE


def test_calibrate_wheelbase_guided_with_ground_truth(sim, tmp_path):
    robot = tmp_path / "robot.yaml"
    robot.write_text("# test robot\nwheel_separation: 0.152  # nominal\n")
    p = PtyProcess([VIPERDRIVE, "calibrate", "wheelbase", "--port", sim.url, "--time", "4", "--config", robot],
                   clock=sim.clock)
    sent = []
    try:
        for run in (1, 2):
            p.expect(rf"run {run}/2 \(\w+-?\w*\); press Enter to start")
            before = sim.control({"cmd": "truth"})["theta"]
            p.send("\n")
            p.expect(rf"run {run}: odometry turned")
            p.expect(r"how many degrees did it really turn\? ", start=len(p.output) - 200)
            after = sim.control({"cmd": "truth"})["theta"]
            turn = math.degrees(after - before)
            turn = turn % 360 if run == 1 else -((-turn) % 360)       # ccw first, then cw; both < 360 deg
            sent.append(abs(turn))
            p.send(f"{abs(turn):.2f}\n")
        p.expect(r"write these values\? \[y/N\] ")
        p.send("y\n")
        assert p.wait() == 0, p.output[-3000:]
    finally:
        p.close()
    odo = [abs(float(v)) for v in re.findall(r"odometry turned ([+-]\d+\.\d)", p.output)]
    expected = 0.152 * (odo[0] / sent[0] + odo[1] / sent[1]) / 2
    new = float(re.search(r"wheel_separation: ([\d.]+)", robot.read_text()).group(1))
    assert new == pytest.approx(expected, rel=2e-3)
    assert robot.read_text().startswith("# test robot\nwheel_separation: ") and "  # nominal" in robot.read_text()
    r = run_cli("params", "get", "wheel_separation", "--port", sim.url, "--json")
    assert json.loads(r.stdout)["params"]["wheel_separation"] == pytest.approx(new, rel=1e-5)
    run_cli("params", "set", "wheel_separation=0.152", "--port", sim.url, "--save")


def _calibrate_gyro(sim, *extra) -> tuple[list[float], str]:
    """`viperdrive calibrate gyro --turns 3` on the virtual board, the user's answers from ground truth: how far
    past the mark each run came to rest. -> (per run, ccw then cw: the true turn less the turn the gyro heading read
    at rest, degrees; the output)."""
    p = PtyProcess([VIPERDRIVE, "calibrate", "gyro", "--port", sim.url, "--turns", "3", "--rate", "3", *extra],
                   clock=sim.clock)
    errors = []
    try:
        for run in (1, 2):
            p.expect(rf"run {run}/2 \(\w+-?\w*\): the robot on its mark; press Enter to start")
            before = sim.control({"cmd": "truth"})["yaw_total"]
            p.send("\n")
            p.expect(rf"run {run}: the gyro heading read")
            p.expect(r"how many degrees past the mark did it come to rest\? \(negative: short of it\) ",
                     start=len(p.output) - 200)
            turned = math.degrees(sim.control({"cmd": "truth"})["yaw_total"] - before)
            read = float(re.findall(r"the gyro heading read ([+-][\d.]+) deg at rest", p.output)[-1])
            assert (turned > 0) == (run == 1) and (read > 0) == (run == 1), (turned, read)   # ccw first: +
            errors.append(abs(turned) - abs(read))
            p.send(f"{abs(turned) - 3 * 360.0:.3f}\n")
        if "--no-write" not in extra:
            p.expect(r"write these values\? \[y/N\] ")
            p.send("y\n")
        assert p.wait() == 0, p.output[-3000:]
    finally:
        p.close()
    return errors, p.output


def test_calibrate_gyro_against_a_mark_with_ground_truth(sim):
    """The default robot's MPU-6050 reads ~0.3 % fast (sim/robots/default.json): over 3 turns its heading reads
    ~3.2 deg more than the robot turned. After the calibration the heading and the truth agree: the mean of both
    directions (a residual bias moves them apart by the same amount) within 0.3 deg over 3 turns."""
    run_cli("params", "set", "gyro_scale_ccw=1", "gyro_scale_cw=1", "--port", sim.url)
    try:
        before, out = _calibrate_gyro(sim)
        got = json.loads(run_cli("params", "get", "gyro_scale_ccw", "gyro_scale_cw", "--port", sim.url,
                                 "--json").stdout)["params"]
        after, out2 = _calibrate_gyro(sim, "--no-write")
    finally:
        run_cli("params", "set", "gyro_scale_ccw=1", "gyro_scale_cw=1", "--port", sim.url, "--save")
    print(f"3 turns, true turn less the gyro heading's at rest (ccw, cw): before {before[0]:+.2f} {before[1]:+.2f} "
          f"deg; after calibration {after[0]:+.2f} {after[1]:+.2f} deg; scale {got['gyro_scale_ccw']:.5f}")
    assert -4.5 < (before[0] + before[1]) / 2 < -2.5
    assert got["gyro_scale_ccw"] == got["gyro_scale_cw"] == pytest.approx(1 / 1.003, abs=1e-3)
    assert abs((after[0] + after[1]) / 2) < 0.3 and max(abs(x) for x in after) < 1.5
    assert "board: parameters set and saved" in out and "nothing written" in out2


def test_calibrate_feedforward_identifies_the_simulated_motor(sim):
    # on a board that already has a kA live (a previous calibration's, as on the second run): the run lifts it with
    # the ramp, else every setpoint jump is a one-period impulse of saturated duty that the telemetry rarely records
    # (R^2 0.47-0.59, and a kA twice the first run's)
    assert run_cli("params", "set", "ka=0.001", "--port", sim.url).returncode == 0
    try:
        r = run_cli("calibrate", "feedforward", "--port", sim.url, "--ramp-time", "1.0", "--yes", "--no-write", "-q",
                    timeout=60)
        got = run_cli("params", "get", "ka", "--port", sim.url, "--json")
        ka_after = json.loads(got.stdout)["params"]["ka"]
    finally:
        run_cli("params", "set", "ka=0", "--port", sim.url)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ka_after == pytest.approx(0.001)                 # --no-write: the live kA came back
    fits = re.findall(r"kS = ([\d.]+), kV = ([\d.]+) /\(rad/s\), kA = ([\d.]+) /\(rad/s\^2\); R\^2 = ([\d.]+).*"
                      r"gives the speed within ([\d.]+) % RMS", r.stdout)
    assert len(fits) == 2, r.stdout
    # sim/robots/default.json: 0.55 m/s at full duty on 32.5 mm wheels = 16.9 rad/s, so kS + kV * 16.9 = 1 duty
    for ks, kv, ka, r2, speed_error in fits:
        assert float(r2) >= 0.5 and float(speed_error) <= 12.0
        ks, kv, ka = float(ks), float(kv), float(ka)
        assert ks + kv * 0.55 / 0.0325 == pytest.approx(1.0, abs=0.1)
        assert 0.05 < ks < 0.3 and 0 < ka < 0.0015         # 0.0009-0.0012 lifted or not; 0.0018 with kA live
    assert "nothing written" in r.stdout
    assert "feedforward run" not in r.stderr and "Traceback" not in r.stderr     # -q: no progress lines


def test_calibrate_umbmark_refuses_too_few_runs_and_writes_nothing(sim, tmp_path):
    robot = tmp_path / "robot.toml"
    robot.write_text("wheel_separation = 0.152\n")
    r = run_cli("calibrate", "umbmark", "--port", sim.url, "--side", "0.05", "--runs", "1", "--speed", "0.3",
                "--turn-rate", "4", "--measured", "0.01,0.02;0.0,-0.01", "--yes", "--config", robot,
                "-q", timeout=60)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "UMBmark refused" in r.stderr and "use at least 3" in r.stderr and "nothing written" in r.stderr
    assert len(re.findall(r"run \d: odometry end x", r.stdout)) == 2
    assert robot.read_text() == "wheel_separation = 0.152\n"
