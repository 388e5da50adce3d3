# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive sim`: the listening line, a host connecting to it, start-up errors as exit codes, and the REPL mode
driven through a pseudo-terminal (a live speed read and a gain change, as in docs/tuning.md)."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial

from viperdrive.rigs.virtual import vboard_command
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.board

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")


def _hello(url):
    parser = P.Parser()
    with serial.serial_for_url(url, timeout=0.05) as ser:
        ser.write(P.pack_hello())
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            for cmd, payload in parser.feed(ser.read(64)):
                if cmd == P.INFO:
                    return P.unpack_info(payload)
    return None


def test_sim_command_prints_the_listening_line_and_serves_the_link():
    proc = subprocess.Popen([VIPERDRIVE, "sim", "--listen", "127.0.0.1:0", "--baud", "921600"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().rstrip("\n")
        m = re.fullmatch(r"listening on socket://127\.0\.0\.1:(\d+)", line)
        assert m, line
        port = int(m.group(1))
        assert 0 < port < 65536
        info = _hello(f"socket://127.0.0.1:{port}")
        assert info is not None and info[5] == "viperdrive-sim"
        # a second connection after the first closed (a reconnect) is served too
        assert _hello(f"socket://127.0.0.1:{port}") is not None
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert "Traceback" not in proc.stderr.read()


def test_sim_command_errors_have_exit_codes_and_no_traceback(tmp_path):
    r = subprocess.run([VIPERDRIVE, "sim", "--listen", "127.0.0.1:70000"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 3 and "70000" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "robot.json"
    bad.write_text('{"wheel_radius_m": -1}')
    r = subprocess.run([VIPERDRIVE, "sim", "--robot", str(bad)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 7 and "wheel_radius_m" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([VIPERDRIVE, "sim", "--baud", "12"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--baud" in r.stderr
    # a board config the user named must exist (no silent fall back to a built-in one)
    missing = tmp_path / "no-such-board.json"
    r = subprocess.run([VIPERDRIVE, "sim", "--board", str(missing)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 7, (r.returncode, r.stderr)
    assert str(missing) in r.stderr and "no such file" in r.stderr and "Traceback" not in r.stderr
    assert "listening" not in r.stdout


@pytest.mark.parametrize("speed", ["abc", "nan", "inf", "0", "1e400", "-2", "21"])
def test_a_board_speed_outside_its_range_is_refused_with_no_traceback(speed):
    """VIPERDRIVE_SIM_SPEED as whatever starts a virtual board has it (here `--port sim`): refused, with the range;
    `viperdrive sim --time-ratio` the same, as a usage error."""
    env = {**os.environ, "VIPERDRIVE_SIM_SPEED": speed}
    r = subprocess.run([VIPERDRIVE, "info", "--port", "sim"], capture_output=True, text=True, timeout=60, env=env,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and ("VIPERDRIVE_SIM_SPEED" in r.stderr or "0.05..20" in r.stderr), r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([VIPERDRIVE, "sim", "--time-ratio", speed], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--time-ratio" in r.stderr and "Traceback" not in r.stderr


def test_sim_listen_error_names_the_errno():
    # an address that is not this machine's: the reason in words, not MicroPython's bare "(99)"
    r = subprocess.run([VIPERDRIVE, "sim", "--listen", "192.0.2.1:8080"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "EADDRNOTAVAIL" in r.stderr and "not an address of this machine" in r.stderr, r.stderr
    assert "(99)" not in r.stderr and "Traceback" not in r.stderr
    # a port already taken: its own reason
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([VIPERDRIVE, "sim", "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True,
                           timeout=30)
    assert r.returncode == 3 and "EADDRINUSE" in r.stderr and "already in use" in r.stderr, r.stderr


class Pty:
    """A process on a pseudo-terminal, read up to a prompt."""

    def __init__(self, cmd, cwd):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, close_fds=True, cwd=cwd)
        os.close(slave)
        self.buf = b""

    def until(self, token: bytes, timeout=20.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if token in self.buf:
                i = self.buf.index(token) + len(token)
                out, self.buf = self.buf[:i], self.buf[i:]
                return out.decode(errors="replace")
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    self.buf += os.read(self.master, 4096)
                except OSError:
                    break
        raise AssertionError(f"no {token!r} within {timeout} s; got:\n{self.buf.decode(errors='replace')}")

    def run(self, line: str) -> str:
        os.write(self.master, line.encode() + b"\r")
        return self.until(b">>> ")

    def close(self):
        if self.proc.poll() is None:
            os.write(self.master, b"\x04")      # Ctrl-D: leave the REPL
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)


def test_repl_mode_reads_live_speeds_and_changes_a_gain(tmp_path):
    cmd = vboard_command(repl=True, control=None, params=tmp_path / "params.json")
    term = Pty(cmd, tmp_path)
    try:
        banner = term.until(b">>> ")
        assert "tuning.start()" in banner
        assert "True" in term.run("t.enable()")
        # one line: the speeds are read as the drive ends, in the board's own sequence. As two lines the second
        # came one pty round trip later, and past the 100 ms deadman on a busy machine the wheels were ramping down
        out = term.run("t.drive(8.0, 8.0, 1.0); print('SPEEDS %.3f %.3f' % t.speeds())")
        m = re.search(r"SPEEDS (-?[\d.]+) (-?[\d.]+)", out)
        assert m, out
        left, right = float(m.group(1)), float(m.group(2))
        assert abs(left - 8.0) < 1.0 and abs(right - 8.0) < 1.0, out
        term.run("t.set('kp', 0.07)")
        out = term.run("print('KP %.4f' % t.app.params.values['kp'])")
        assert "KP 0.0700" in out, out
        term.run("t.save()")
        term.run("t.stop()")
    finally:
        term.close()
    assert term.proc.returncode == 0
    saved = json.loads((tmp_path / "params.json").read_text())
    kp = saved.get("kp", saved.get("values", {}).get("kp"))
    assert abs(kp - 0.07) < 1e-9, saved
