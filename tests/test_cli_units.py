# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The CLI's parts that need no board: --port auto selection, progress bars, keystroke decoding on a real pty, the
robot-file editor, the path script parser and follower, step-response metrics, firmware file lists and .mpy
architecture decoding, and the ROS 2 message definitions MCAP files carry."""
from __future__ import annotations

import io
import math
import os
import pty

import numpy as np
import pytest

from viperdrive.cli.terminal import Progress, TerminalKeys
from viperdrive.deploy import flashing
from viperdrive.errors import BadValue, PortError, UserError
from viperdrive.messages import definitions as rosmsg_defs
from viperdrive.motion import scripts as paths
from viperdrive.ports import SerialPortInfo, choose_auto, resolve_port
from viperdrive.robot import editing as robotfile
from viperdrive.robot.config import RobotConfig
from viperdrive.timebase import wait_until
from viperdrive.tuning import steptest

pytestmark = pytest.mark.unit

PICO = SerialPortInfo("/dev/ttyACM0", "Board CDC", 0x2E8A, 0x0005, "MicroPython", "Board in FS mode", "e66")
CP2102 = SerialPortInfo("/dev/ttyUSB0", "CP2102", 0x10C4, 0xEA60, "Silicon Labs", "CP2102 USB to UART", "0001")
MOUSE = SerialPortInfo("/dev/ttyACM1", "Some modem", 0x1234, 0x5678, "Acme", "Modem", None)
BOOTSEL = SerialPortInfo("/dev/ttyACM2", "RP2 Boot", 0x2E8A, 0x0003, "Raspberry Pi", "RP2 Boot", None)
UART = SerialPortInfo("/dev/ttyS0", "ttyS0")


# ------------------------------------------------------------------------------------------ ports

def test_auto_picks_the_single_board_and_ignores_other_devices():
    assert choose_auto([UART, MOUSE, PICO, BOOTSEL]).device == "/dev/ttyACM0"
    assert choose_auto([CP2102, UART]).device == "/dev/ttyUSB0"
    assert "Pico" in PICO.guess and "ESP32" in CP2102.guess
    assert not MOUSE.looks_like_board and not BOOTSEL.looks_like_board and not UART.looks_like_board


def test_auto_with_no_board_lists_what_exists():
    with pytest.raises(PortError) as e:
        choose_auto([UART, MOUSE])
    msg = str(e.value)
    assert "no USB serial device looks like a MicroPython board" in msg
    assert "/dev/ttyS0" in msg and "/dev/ttyACM1 [1234:5678]" in msg
    assert e.value.exit_code == 3
    with pytest.raises(PortError, match="serial ports present: none"):
        choose_auto([])


def test_auto_with_several_boards_lists_them_all():
    with pytest.raises(PortError) as e:
        choose_auto([PICO, CP2102, UART])
    msg = str(e.value)
    assert "2 devices look like a MicroPython board" in msg
    assert "/dev/ttyACM0 [2e8a:0005]" in msg and "/dev/ttyUSB0 [10c4:ea60]" in msg and "ttyS0" not in msg


def test_resolve_port_passes_urls_and_refuses_a_missing_device():
    assert resolve_port("socket://127.0.0.1:1").url == "socket://127.0.0.1:1"
    assert resolve_port("loop://").url == "loop://"
    with pytest.raises(PortError) as e:
        resolve_port("/dev/ttyNOPE9", ports=[PICO])
    assert "port /dev/ttyNOPE9 does not exist" in str(e.value) and "/dev/ttyACM0" in str(e.value)
    assert resolve_port("auto", ports=[PICO, UART]).url == "/dev/ttyACM0"


# ------------------------------------------------------------------------------------------ progress, keys

def test_progress_prints_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    bar = Progress(20, "copying", stream=out, unit="files")
    for i in range(1, 21):
        bar.update(i, f"f{i}")
    bar.close()
    lines = out.getvalue().splitlines()
    # one line per tenth of the way (0 is never reached here: the first update is 1/20 = 5 %), then the summary
    assert [ln.split(":")[1].split("%")[0].strip() for ln in lines[:-1]] == [
        "5", "10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]
    assert lines[-1].startswith("copying: done (")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    quiet = io.StringIO()
    q = Progress(5, "x", quiet=True, stream=quiet)
    q.update(5)
    q.close()
    assert quiet.getvalue() == ""


def test_progress_redraws_one_line_on_a_terminal():
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=True) as tty:
            bar = Progress(4, "flash", stream=tty, unit="files")
            bar.update(4, "all")
            bar.close()
        data = _read_to_the_end(master)
    finally:
        os.close(master)
    assert "\r\x1b[2Kflash [" + "#" * 30 + "] 100.0% 4/4 files all" in data.replace("\r\n", "\n")
    assert "flash: done" in data


def test_progress_with_a_total_learned_on_the_way():
    # what `viperdrive fuse` gives it: the message count is known once the recording's summary is read (never for a
    # damaged file without one)
    out = io.StringIO()
    bar = Progress(None, "fuse", stream=out, unit="messages")
    bar.update(2000)                                # total unknown: a log gets nothing until the end
    assert out.getvalue() == ""
    bar.update(4000, total=20000)
    bar.update(20000)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["fuse: 20% (4000/20000 messages)", "fuse: 100% (20000/20000 messages)"], lines
    assert lines[2].startswith("fuse: done (") and len(lines) == 3
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=True) as tty:
            bar = Progress(None, "fuse", stream=tty, unit="messages")
            bar.update(1234)
            bar.close("stopped")
        data = _read_to_the_end(master)
    finally:
        os.close(master)
    assert "\r\x1b[2Kfuse 1234 messages" in data and "fuse: stopped (" in data, repr(data)


def _read_to_the_end(master: int) -> str:
    """Everything written to a pty whose other end is closed: read until it says so (EIO), however the kernel
    splits the bytes (one os.read got only the first part of the progress bar's output on a quiet machine)."""
    data = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:         # EIO: the slave side is closed and everything was read
            break
        if not chunk:
            break
        data += chunk
    return data.decode()


def _keys(keys: TerminalKeys, n: int) -> list[str]:
    """The next n keys (waiting until they are readable: the pty delivers the bytes when it does)."""
    got: list[str] = []

    def enough():
        got.extend(keys.read())
        return len(got) >= n
    wait_until(enough, 10.0, poll=0.001, what=f"{n} keys")
    return got


def test_terminal_keys_decode_arrows_letters_and_split_escape_sequences():
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "r", closefd=False) as stream:
            keys = TerminalKeys(stream)
            assert keys.tty
            with keys:
                os.write(master, b"\x1b[Aw \x1b[D")
                assert _keys(keys, 4) == ["up", "w", " ", "left"]
                os.write(master, b"q\x1b[")         # an arrow split across two reads
                assert _keys(keys, 1) == ["q"]
                os.write(master, b"B")
                assert _keys(keys, 1) == ["down"]
                assert keys.read() == []
    finally:
        os.close(slave)
        os.close(master)


# ------------------------------------------------------------------------------------------ robot file

def test_robot_file_edit_keeps_comments_and_other_keys(tmp_path):
    p = tmp_path / "robot.yaml"
    p.write_text("# my robot\nwheel_separation: 0.152   # ruler\nmax_wheel_speed: 0.5\n")
    robotfile.update_values(p, {"wheel_separation": 0.1547, "left_wheel_radius_multiplier": 1.002})
    text = p.read_text()
    assert text.startswith("# my robot\nwheel_separation: 0.1547   # ruler\nmax_wheel_speed: 0.5\n")
    assert text.endswith("left_wheel_radius_multiplier: 1.002\n")
    cfg = RobotConfig.load(p)
    assert cfg.wheel_separation == 0.1547 and cfg.left_wheel_radius_multiplier == 1.002
    assert cfg.max_rim_speed == 0.5
    # writing the value a line already has changes nothing (no second line for the key)
    robotfile.update_values(p, {"wheel_separation": 0.1547, "left_wheel_radius_multiplier": 1.002})
    assert p.read_text() == text


def test_robot_file_edit_toml_goes_before_the_first_table(tmp_path):
    p = tmp_path / "robot.toml"
    p.write_text("wheel_radius = 0.03\n\n[linear.x]\nmax_velocity = 0.4\n")
    robotfile.update_values(p, {"wheel_separation": 0.2})
    text = p.read_text()
    assert text.index("wheel_separation = 0.2") < text.index("[linear.x]")
    cfg = RobotConfig.load(p)
    assert cfg.wheel_separation == 0.2 and cfg.linear.max_velocity == 0.4


def test_robot_file_edit_refuses_what_it_cannot_place_and_writes_nothing(tmp_path):
    p = tmp_path / "ddc.yaml"
    original = "diff_drive:\n  ros__parameters:\n    wheel_radius: 0.03\n    wheel_separation: 0.2\n"
    p.write_text(original)
    with pytest.raises(BadValue, match="set wheel_separation_multiplier = 1.01 by hand"):
        robotfile.update_values(p, {"wheel_separation_multiplier": 1.01})
    assert p.read_text() == original
    bad = tmp_path / "bad.yaml"
    bad.write_text("wheel_separation: -1\n")
    with pytest.raises(BadValue, match="wheel_separation"):
        robotfile.update_values(bad, {"wheel_radius": 0.03})
    assert bad.read_text() == "wheel_separation: -1\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["bad.yaml", "ddc.yaml"]     # no temp files left


# ------------------------------------------------------------------------------------------ scripts

def test_script_parser_reads_every_segment_and_names_bad_lines():
    segs = paths.parse_script("# demo\nforward 0.5\nturn -90 2\narc 0.3 180 0.1\ntwist 0.1 0.5 2\nwait 1\n",
                              speed_m_s=0.2, turn_rate_rad_s=1.0)
    assert [s.kind for s in segs] == ["forward", "turn", "arc", "twist", "wait"]
    assert segs[0].b == 0.2 and math.isclose(segs[1].a, -math.pi / 2) and segs[1].b == 2
    assert math.isclose(segs[2].a, math.pi) and segs[2].b == 0.3 and segs[2].c == 0.1
    assert math.isclose(segs[3].nominal_duration(), 2.0)
    with pytest.raises(BadValue, match=r"line 2: 'jump 3': unknown segment"):
        paths.parse_script("forward 1\njump 3\n")
    with pytest.raises(BadValue, match=r"line 1.*the radius 0 m is outside \(0, 1000\] m"):
        paths.parse_script("arc 0 90\n")
    # every number finite and in range: a typo is refused, it does not drive (or wait) for ever
    for line, what in (("forward 1e308", r"the distance 1e\+308 m is outside \[0, 1000\] m"),
                       ("forward nan", "must be finite"), ("wait inf", "must be finite"),
                       ("wait 1e6", r"the duration 1e\+06 s is outside \[0, 86400\] s"),
                       ("twist 0.1 0 -1", r"the duration -1 s is outside"), ("turn 90 0", r"the rate 0 rad/s"),
                       ("turn 1e9", "the angle"), ("arc 0.3 90 20", r"the speed 20 m/s is outside \(0, 10\]")):
        with pytest.raises(BadValue, match="line 1: .*" + what):
            paths.parse_script(line + "\n")
    with pytest.raises(BadValue, match=r"script square .*the distance nan m"):
        paths.builtin("square", side_m=float("nan"))
    with pytest.raises(BadValue, match="twist takes 3 numbers"):
        paths.parse_script("twist 1 2\n")
    with pytest.raises(BadValue, match="no segments"):
        paths.parse_script("# nothing\n")


def test_follower_closes_a_square_on_an_ideal_robot():
    """The follower against a perfect unicycle integrated at 100 Hz: the square closes within its tolerances."""
    segs = paths.builtin("square", side_m=0.5, speed_m_s=0.3, turn_rate_rad_s=1.5)
    f = paths.ScriptFollower(segs, max_accel_m_s2=1.0, wheel_separation=0.152)
    x = y = th = 0.0
    v_out = w_out = 0.0
    dt = 0.01
    t = 0.0
    corners = []
    while not f.done and t < 60:
        v, w = f.update(t, (x, y, th), (v_out, w_out))
        # a first-order lag of 30 ms stands for the wheels' response
        v_out += (v - v_out) * dt / 0.03
        w_out += (w - w_out) * dt / 0.03
        th += w_out * dt
        x += v_out * math.cos(th) * dt
        y += v_out * math.sin(th) * dt
        t += dt
        if f.current is not None and f.current.kind == "forward" and (not corners or corners[-1][0] != f.index):
            corners.append((f.index, x, y))
    assert f.done
    assert math.hypot(x, y) < 0.02, (x, y)
    assert abs(math.remainder(th, 2 * math.pi)) < math.radians(2)
    xs = [round(c[1], 1) for c in corners]
    ys = [round(c[2], 1) for c in corners]
    assert list(zip(xs, ys, strict=True)) == [(0.0, 0.0), (0.5, 0.0), (0.5, 0.5), (0.0, 0.5)]


# ------------------------------------------------------------------------------------------ step metrics

def test_step_metrics_of_a_first_order_response():
    tau, a, t_step, t_end = 0.05, 8.0, 0.2, 1.2
    t = np.arange(0, 1.4, 0.001)
    y = np.where(t < t_step, 0.0, a * (1 - np.exp(-(t - t_step) / tau)))
    y[t > t_end] = 0.0
    m = steptest.step_metrics(t, y, t_step, t_end, a, band=0.05)
    assert math.isclose(m.rise_time_s, tau * math.log(9), rel_tol=0.01)        # 10 % -> 90 %
    assert math.isclose(m.settling_time_s, tau * math.log(20), rel_tol=0.01)   # into the 5 % band
    assert m.overshoot == 0.0
    assert abs(m.steady_state_error) < 1e-6


def test_step_metrics_of_an_underdamped_response_and_a_negative_step():
    zeta, wn, a = 0.3, 40.0, -5.0
    t = np.arange(0, 1.0, 0.0005)
    wd = wn * math.sqrt(1 - zeta ** 2)
    y = a * (1 - np.exp(-zeta * wn * t) * (np.cos(wd * t) + zeta / math.sqrt(1 - zeta ** 2) * np.sin(wd * t)))
    m = steptest.step_metrics(t, y + 0.0, 0.0, 0.99, a)
    assert math.isclose(m.overshoot, 100 * math.exp(-zeta * math.pi / math.sqrt(1 - zeta ** 2)), rel_tol=0.01)
    assert m.peak < a                           # negative step: the peak is below it
    assert m.settling_time_s is not None and 0.1 < m.settling_time_s < 0.4
    off = steptest.step_metrics(t, y * 0.9, 0.0, 0.99, a)    # settles 10 % short: never within 5 %
    assert off.settling_time_s is None
    assert math.isclose(off.steady_state_error_pct, 10.0, abs_tol=0.5)
    with pytest.raises(UserError, match="telemetry samples"):
        steptest.step_metrics(t[:3], y[:3], 0.0, 0.001, a)


def test_telemetry_rate_stays_within_the_line_budget():
    # 500 Hz control, 115200 baud: 36-byte frames at >= 60 % of 11520 B/s would be 192/s -> 500/3 = 166 Hz
    assert steptest.telemetry_rate(500, 115200) == 166
    assert steptest.telemetry_rate(500, 921600) == 500
    assert steptest.telemetry_rate(1000, 9600) == 1000 // math.ceil(1000 / (0.6 * 960 / 36))


# ------------------------------------------------------------------------------------------ flashing

def test_decode_mpy_of_this_machines_micropython_and_known_boards():
    assert flashing.decode_mpy(2822) == (6, 3, "x64")       # the unix port here: sys.implementation._mpy
    assert flashing.decode_mpy((4 << 10) | (3 << 8) | 6) == (6, 3, "armv6m")       # RP2040
    assert flashing.decode_mpy((10 << 10) | (3 << 8) | 6) == (6, 3, "xtensawin")   # ESP32
    assert flashing.decode_mpy(6)[2] is None
    assert flashing.mpy_cross_version() == (6, 3)
    with pytest.raises(UserError, match="loads .mpy v6.1"):
        flashing.check_mpy_compatible((4 << 10) | (1 << 8) | 6, (6, 3))
    with pytest.raises(UserError, match="no native code emitter"):
        flashing.check_mpy_compatible((3 << 8) | 6, (6, 3))
    assert flashing.parse_detect_output("noise\r\nVD_MPY 4358\r\n") == 4358
    with pytest.raises(BadValue, match="not an mpy-cross architecture"):
        flashing.check_arch("armv9")


def test_firmware_files_take_only_the_boards_backend_and_compile_all_but_main_and_boot():
    files = flashing.firmware_files("rp2", mpy=True)
    dests = [f.dest for f in files]
    pkg = "lib/viperdrive/"         # the firmware's package on the board; the entry files at the root
    assert {pkg + "hal/rp2.mpy", pkg + "hal/portable.mpy", pkg + "hal/__init__.mpy"} <= set(dests)
    assert not any(d.startswith(tuple(pkg + "hal/" + b for b in ("esp32", "stm32", "sim", "circuitpython")))
                   for d in dests)
    assert "main.py" in dests and "boot.py" in dests and pkg + "app.mpy" in dests
    assert pkg + "shared/protocol.mpy" in dests and not any("tests" in d for d in dests)
    assert all(d.startswith(pkg) for d in dests if d not in ("main.py", "boot.py"))
    assert all(f.compile == f.dest.endswith(".mpy") for f in files)
    plain = flashing.firmware_files("esp32")
    assert all(f.dest.endswith(".py") for f in plain) and pkg + "hal/esp32.py" in [f.dest for f in plain]


# ------------------------------------------------------------------------------------------ ROS 2 message definitions

def test_every_mcap_definition_round_trips_through_the_ros2_encoder_and_decoder():
    """Each schema in rosmsg_defs.DEFINITIONS parses in mcap_ros2 (every dependency present) and a message with a
    distinct value in a nested field comes back with that value."""
    from mcap_ros2._dynamic import generate_dynamic, serialize_dynamic
    samples = {
        rosmsg_defs.JOINT_STATE: ({"header": {"stamp": {"sec": 3, "nanosec": 7}}, "name": ["l", "r"],
                                   "position": [1.5, -2.0], "velocity": [0.25, 0.5], "effort": []},
                                  lambda m: (m.header.stamp.nanosec, m.name, m.position), (7, ["l", "r"], [1.5, -2.0])),
        rosmsg_defs.DIAGNOSTIC_ARRAY: ({"status": [{"level": 2, "name": "b", "values": [{"key": "k", "value": "v"}]}]},
                                       lambda m: (m.status[0].level, m.status[0].values[0].value), (2, "v")),
        rosmsg_defs.WHEEL_TELEMETRY: ({"seq": 65535, "board_time_us": 4_000_000_000, "output_right": -0.75,
                                       "status": 9},
                                      lambda m: (m.seq, m.board_time_us, m.output_right, m.status),
                                      (65535, 4_000_000_000, -0.75, 9)),
        rosmsg_defs.ODOMETRY: ({"pose": {"pose": {"position": {"x": 1.25}}}, "child_frame_id": "base_link"},
                               lambda m: (m.pose.pose.position.x, m.pose.pose.orientation.w, m.child_frame_id),
                               (1.25, 1.0, "base_link")),
    }
    for name, text in rosmsg_defs.DEFINITIONS.items():
        encoders = serialize_dynamic(name, text)
        decoders = generate_dynamic(name, text)
        if name not in samples:
            assert decoders[name](encoders[name]({})) is not None, name
            continue
        msg, read, want = samples[name]
        assert read(decoders[name](encoders[name](msg))) == want, name


def test_mcap_definitions_have_the_dds_structs_fields_in_the_same_order():
    """ros2/msgs.py describes the same types as IDL structs for DDS; a field added to one table and not the other
    would make a recording and a live topic disagree."""
    from viperdrive.ros2 import msgs
    shared = sorted(set(rosmsg_defs._MSG) & set(msgs.TYPES_BY_ROS_NAME))
    assert len(shared) >= 15, shared
    for name in shared:
        text_fields = [line.split("#", 1)[0].split()[1] for line in rosmsg_defs._MSG[name].splitlines()
                       if line.split("#", 1)[0].strip() and "=" not in line]
        assert text_fields == list(msgs.TYPES_BY_ROS_NAME[name].__annotations__), name
