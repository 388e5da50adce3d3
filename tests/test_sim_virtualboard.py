# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The virtual board from the host: the real firmware on MicroPython with the simulated robot, reached through
pyserial's socket:// URL like a serial board, and its control endpoint (ground truth, faults, watchdog)."""
from __future__ import annotations

import os
import socket
import time

import pytest
import serial

from viperdrive.board import Board
from viperdrive.errors import BadValue, PortError
from viperdrive.rigs.virtual import SimError, VirtualBoard
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board


@pytest.fixture(scope="module")
def vb():
    with VirtualBoard() as v:
        yield v


def _request(ser, frame, reply, timeout=2.0):
    parser = P.Parser()
    ser.reset_input_buffer()
    ser.write(frame)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = ser.read(ser.in_waiting or 1)
        for cmd, payload in parser.feed(data):
            if cmd == reply:
                return payload
    return None


def test_url_and_hello_over_raw_pyserial(vb):
    assert vb.url.startswith("socket://127.0.0.1:")
    with serial.serial_for_url(vb.url, timeout=0.05) as ser:
        info = P.unpack_info(_request(ser, P.pack_hello(), P.INFO))
    version, schema, hz, cpr, firmware, board = info
    assert version == P.PROTOCOL_VERSION and hz == 500 and cpr == 4096
    assert board == "viperdrive-sim"


def test_reconnect_works(vb):
    for _ in range(3):
        with serial.serial_for_url(vb.url, timeout=0.05) as ser:
            assert _request(ser, P.pack_hello(), P.INFO) is not None
    assert vb.stats()["link_clients"] >= 3


def test_control_endpoint_replies_ok_or_error(vb):
    t = vb.control({"cmd": "truth"})
    assert t["ok"] is True
    for k in ("x", "y", "theta", "w_left", "w_right", "t"):
        assert isinstance(t[k], float), k
    t2 = vb.control({"cmd": "truth"})
    assert t2["t"] >= t["t"]                     # sim time runs
    for bad, word in (({"cmd": "fly"}, "unknown cmd"), ({"nocmd": 1}, "missing"),
                      ({"cmd": "fault", "kind": "meteor"}, "unknown fault kind"),
                      ({"cmd": "fault", "kind": "corrupt", "rate": 2}, "rate"),
                      ({"cmd": "fault", "kind": "stall", "wheel": "middle", "on": True}, "wheel"),
                      ({"cmd": "push", "wheel": "left"}, "torque")):
        rep = vb.control(bad)
        assert rep["ok"] is False and word in rep["error"], (bad, rep)
    # a line that is not JSON gets an error reply too, and the endpoint keeps serving
    with socket.create_connection((vb.control_host, vb.control_port), timeout=5) as s:
        s.sendall(b"this is not json\n")
        line = s.makefile("rb").readline()
    assert b'"ok": false' in line
    assert vb.control({"cmd": "ping"}) == {"ok": True}


def _drive(b, left, right, seconds):
    st = None
    clock = b.clock
    t_end = clock.now() + seconds
    while clock.now() < t_end:
        b.write(left, right)
        clock.sleep(0.01)
        st = b.read()
    return st


def test_drive_through_board_matches_ground_truth(vb):
    vb.reset()
    with Board(vb.url) as b:
        b.activate()
        st = _drive(b, 10.0, 10.0, 1.5)
        truth = vb.truth()
        # the firmware's speed loop holds 10 rad/s on the physical model
        assert abs(truth["w_left"] - 10.0) < 1.0 and abs(truth["w_right"] - 10.0) < 1.0, truth
        assert abs(st.velocity[0] - 10.0) < 1.0 and abs(st.velocity[1] - 10.0) < 1.0, st
        st = _drive(b, 0.0, 0.0, 0.8)
        truth = vb.truth()
        b.deactivate()
    # standing still: the encoders agree with the real wheel angles (no slip on the firmware's ramp)
    assert abs(truth["w_left"]) < 0.05, truth
    assert abs(st.position[0] - truth["angle_left"]) < 0.01 and abs(st.position[1] - truth["angle_right"]) < 0.01
    assert truth["x"] > 0.2 and abs(truth["y"]) < 0.02
    assert vb.truth()["energized"] is False       # deactivate de-energized the outputs (and said so)


def test_cut_link_drops_everything_until_restored(vb):
    with serial.serial_for_url(vb.url, timeout=0.05) as ser:
        vb.fault("cut_link", on=True)
        assert _request(ser, P.pack_hello(), P.INFO, timeout=0.5) is None
        vb.fault("cut_link", on=False)
        assert _request(ser, P.pack_hello(), P.INFO) is not None
    st = vb.stats()
    assert st["dropped_rx"] >= 5


def test_garbage_is_counted_by_the_firmware(vb):
    with Board(vb.url) as b:
        before = b.diag()["garbage_bytes"]
        vb.fault("garbage", n=500)
        # 500 bytes at 115200 baud take 43 ms of line time; the board's parser counts what no frame claims
        after = wait_until(lambda: (lambda n: n if n - before >= 400 else None)(b.diag()["garbage_bytes"]), 2.0,
                           b.clock, what="the garbage counted")
    assert after - before >= 400, (before, after)


def test_frozen_control_task_trips_the_watchdog_and_the_board_comes_back_disabled(vb):
    vb.reset()
    resets = vb.stats()["watchdog_resets"]
    with Board(vb.url) as b:
        b.activate()
        b.write(5.0, 5.0)
        vb.fault("freeze_control", on=True)
        st = wait_until(lambda: (lambda s: s if s["watchdog_resets"] != resets else None)(vb.stats()), 5.0,
                        vb.clock, what="a watchdog reset")
        assert st["watchdog_resets"] == resets + 1
        assert st["last_reset_cause"] == "watchdog" and st["frozen"] is False
        assert vb.truth()["energized"] is False
        # the link stayed connected: the same serial connection talks to the restarted firmware
        d = b.diag()
        assert d["reset_cause"] == P.RESET_WATCHDOG
    print(f"watchdog recovery (reset to new firmware running): {st['last_wdt_recovery_ms']} ms")


def test_baud_rate_is_emulated():
    # at 9600 baud one byte is 1.04 ms: a HELLO (5 B) and its INFO reply take their line time, never less
    with VirtualBoard(baud=9600) as slow, serial.serial_for_url(slow.url, timeout=0.05) as ser:
        _request(ser, P.pack_hello(), P.INFO)    # warm up
        n = 10
        t0 = slow.clock.now()           # board time: the line's pace is the board's, at any VIPERDRIVE_SIM_SPEED
        for _ in range(n):
            payload = _request(ser, P.pack_hello(), P.INFO)
            assert payload is not None
        elapsed = slow.clock.now() - t0
    line_s = n * (5 + len(payload) + P.OVERHEAD) * 10 / 9600
    print(f"9600 baud: {n} HELLO/INFO exchanges in {elapsed * 1e3:.0f} ms, line time {line_s * 1e3:.0f} ms")
    assert elapsed >= 0.95 * line_s


def test_robot_description_and_start_errors(tmp_path):
    with pytest.raises(BadValue, match="wheel_separation_m"):
        VirtualBoard(robot={"wheel_radius_m": 0.03}).start()
    bad = tmp_path / "robot.json"
    bad.write_text("{not json")
    with pytest.raises(BadValue, match="not valid JSON"):
        VirtualBoard(robot=bad).start()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(PortError, match=str(port)):
            VirtualBoard(listen=f"127.0.0.1:{port}").start()


def test_close_kills_the_process():
    vb = VirtualBoard().start()
    pid = vb.proc.pid
    vb.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(SimError):
        vb.control({"cmd": "truth"})
