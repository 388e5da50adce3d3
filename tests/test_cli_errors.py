# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every error a user can cause, asserted by its message and exit code, and never a traceback: port missing,
permission denied, port busy, no reply, protocol version mismatch, board in FAULT, invalid parameter value, invalid
and corrupt robot files, a link lost while driving."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import subprocess

import pytest
from board_responder import Responder
from cli_helpers import VIPERDRIVE, cut_link_during, no_traceback, run_cli, until_energized

from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board


@pytest.mark.parametrize("command", ["info", "ros2"])
def test_port_missing_lists_the_ports_that_exist(command):
    r = run_cli(command, "--port", "/dev/ttyNOPE7")
    assert r.returncode == 3
    assert r.stderr.startswith(f"viperdrive {command}: error: port /dev/ttyNOPE7 does not exist; serial ports "
                               f"present: ")
    no_traceback(r)


def test_port_auto_without_a_board_says_what_it_found():
    r = run_cli("params", "list")          # no --port, no $VIPERDRIVE_PORT, no robot file: auto
    assert r.returncode == 3
    assert "--port auto: no USB serial device looks like a MicroPython board; serial ports present:" in r.stderr
    no_traceback(r)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to drop the override of file permissions")
def test_permission_denied_gives_the_dialout_hint():
    master, slave = pty.openpty()
    try:
        path = os.ttyname(slave)
        os.chown(path, 65534, 65534)            # another user's tty, mode 0600: as for a user not in dialout
        os.chmod(path, 0o600)
        drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                "--inh-caps=-dac_override,-dac_read_search"]
        r = subprocess.run([*drop, VIPERDRIVE, "info", "--port", path], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 3, r.stderr
        assert f"permission denied opening {path}: add your user to the dialout group" in r.stderr
        assert "sudo usermod -aG dialout $USER" in r.stderr
        no_traceback(r)
    finally:
        os.close(slave)
        os.close(master)


def test_port_busy_names_the_process_holding_it():
    master, slave = pty.openpty()
    try:
        path = os.ttyname(slave)
        holder = os.open(path, os.O_RDWR | os.O_NOCTTY)
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)     # what another pyserial program holds
        r = run_cli("info", "--port", path)
        assert r.returncode == 3, r.stderr
        assert f"port {path} is busy: in use by pid {os.getpid()} (" in r.stderr
        assert "close that program first" in r.stderr
        no_traceback(r)
        os.close(holder)
    finally:
        os.close(slave)
        os.close(master)


def test_no_reply_says_check_baud_and_firmware():
    master, slave = pty.openpty()        # a serial line with nothing on the other end
    try:
        r = run_cli("info", "--port", os.ttyname(slave), "--baud", "57600")
        assert r.returncode == 4, r.stderr
        assert "no reply from the board on" in r.stderr and "at 57600 baud" in r.stderr
        assert "Check --baud" in r.stderr and "viperdrive flash" in r.stderr
        no_traceback(r)
    finally:
        os.close(slave)
        os.close(master)


def test_protocol_version_mismatch_says_reflash():
    with Responder(version=P.PROTOCOL_VERSION + 1) as resp:
        r = run_cli("info", "--port", resp.url)
    assert r.returncode == 5, r.stderr
    assert f"speaks protocol v{P.PROTOCOL_VERSION + 1}" in r.stderr and "Reflash the board with `viperdrive flash`" \
        in r.stderr
    no_traceback(r)
    with Responder(schema=0x12345678) as resp:
        r = run_cli("params", "list", "--port", resp.url)
    assert r.returncode == 5 and "parameter schema 12345678" in r.stderr


def test_board_in_fault_is_decoded_and_cleared(sim, tmp_path):
    script = tmp_path / "f.txt"
    script.write_text("twist 0.2 0 3\n")
    sim.control({"cmd": "fault", "kind": "stall", "wheel": "left", "on": True})
    try:
        r = run_cli("drive", "--port", sim.url, "--script", script)
        assert r.returncode == 6, r.stdout + r.stderr
        assert "the board is in FAULT: left wheel stalled (output saturated, no motion). Free the left wheel" \
            in r.stderr
        assert "then clear it with `viperdrive info --clear-fault --port socket://" in r.stderr
        no_traceback(r)
    finally:
        sim.control({"cmd": "fault", "kind": "stall", "wheel": "left", "on": False})
    r = run_cli("info", "--port", sim.url)
    assert r.returncode == 0
    assert re.search(r"^fault\s+FAULT 1: left wheel stalled", r.stdout, re.M)
    assert re.search(r"^status\s+.*FAULT", r.stdout, re.M) and "what to do: free the left wheel" in r.stdout
    r = run_cli("tune", "--port", sim.url)        # a command that would enable refuses with the same words
    assert r.returncode == 6 and "left wheel stalled" in r.stderr
    r = run_cli("info", "--port", sim.url, "--clear-fault")
    assert r.returncode == 0 and "cleared: left wheel stalled (output saturated, no motion)" in r.stdout
    r = run_cli("info", "--port", sim.url, "--json")
    assert '"fault_code": 0' in r.stdout


def test_invalid_parameter_value_names_the_range(sim):
    r = run_cli("tune", "--port", sim.url, "--set", "ki=abc")
    assert r.returncode == 7 and "invalid value for ki: 'abc' is not a number (allowed [0.0, 100.0] duty/rad)" \
        in r.stderr
    r = run_cli("params", "set", "deadman_ms=5", "--port", sim.url)
    assert r.returncode == 7 and "deadman_ms=5 outside [20, 1000] ms" in r.stderr
    no_traceback(r)


def test_invalid_robot_file_names_key_and_reason(sim, tmp_path):
    bad = tmp_path / "robot.yaml"
    bad.write_text("wheel_separation: -0.1\n")
    r = run_cli("info", "--port", sim.url, "--config", bad)
    assert r.returncode == 7
    assert f"invalid robot file: {bad}: wheel_separation=-0.1 is outside [0.02, 5.0] m" in r.stderr
    typo = tmp_path / "typo.toml"
    typo.write_text("wheel_seperation = 0.15\n")
    r = run_cli("drive", "--port", sim.url, "--script", "spin", "--config", typo)
    assert r.returncode == 7 and "unknown key 'wheel_seperation' (did you mean 'wheel_separation'?)" in r.stderr
    r = run_cli("info", "--port", sim.url, "--config", tmp_path / "missing.yaml")
    assert r.returncode == 7 and "does not exist" in r.stderr
    no_traceback(r)


def test_corrupt_robot_file_is_an_error_not_the_defaults(sim, tmp_path):
    # it used to fall back to the built-in defaults with a warning (and drive on them): now it stops
    corrupt = tmp_path / "robot.yaml"
    corrupt.write_bytes(b"\xff\xfe\x00garbage: [unclosed\n")
    r = run_cli("params", "get", "kp", "--port", sim.url, "--config", corrupt)
    assert r.returncode == 7 and f"invalid robot file: {corrupt} is not UTF-8 text" in r.stderr
    broken = tmp_path / "robot.toml"
    broken.write_text("wheel_radius = = 3\n")
    r = run_cli("params", "get", "kp", "--port", sim.url, "--config", broken)
    assert r.returncode == 7 and "is not valid TOML" in r.stderr
    no_traceback(r)


def _scripted_drive(sim, tmp_path, script_text: str) -> subprocess.Popen:
    """`viperdrive drive --script` on the shared board, running in the background."""
    script = tmp_path / "long.txt"
    script.write_text(script_text)
    return subprocess.Popen([VIPERDRIVE, "drive", "--port", sim.url, "--script", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_link_lost_while_driving_stops_with_exit_8(sim, tmp_path):
    proc = _scripted_drive(sim, tmp_path, "twist 0.1 0 1.0\nwait 0.5\ntwist 0.1 0 5\n")
    until_energized(sim, proc)
    out, err = cut_link_during(sim, proc, after_s=2.0, timeout=20)
    assert proc.returncode == 8, err
    assert "no STATE from the board" in err and "check the cable" in err and "Traceback" not in err
    # the board stopped on its own: deadman ramp to zero, then de-energized after deadman_disable_ms (2 s)
    truth = sim.control({"cmd": "truth"})
    assert abs(truth["w_left"]) < 0.5 and abs(truth["w_right"]) < 0.5

    def disabled():
        status = json.loads(run_cli("info", "--port", sim.url, "--json").stdout)["status_names"]
        assert "ENABLED" not in status or "DEADMAN" in status, status
        return "ENABLED" not in status
    wait_until(disabled, 5.0, sim.clock, poll=0.3, what="the board's long-silence disable")


def test_bad_baud_is_a_usage_error():
    r = run_cli("info", "--port", "loop://", "--baud", "12")
    assert r.returncode == 2 and "argument --baud: 12 is outside 300..12000000" in r.stderr


def test_keyboard_drive_shows_a_fault_and_c_clears_it(sim):
    from cli_helpers import PtyProcess
    sim.control({"cmd": "fault", "kind": "stall", "wheel": "right", "on": True})
    p = PtyProcess([VIPERDRIVE, "drive", "--port", sim.url], clock=sim.clock)
    try:
        p.expect(r"keys: w/s")
        p.send("wwww")
        m = p.expect(r"the board is in FAULT: right wheel stalled", timeout=15)
        p.expect(r"c: clear the fault and re-enable   q: quit", start=m.start())
        sim.control({"cmd": "fault", "kind": "stall", "wheel": "right", "on": False})
        start = len(p.output)
        p.send("c")
        p.expect(r"command   v \+0\.000 m/s", start=start)        # re-enabled from zero, nothing replayed
        p.expect(r"status    ENABLED ", start=start)
        p.send("q")
        assert p.wait() == 0, p.output[-2000:]
    finally:
        p.close()
        sim.control({"cmd": "fault", "kind": "stall", "wheel": "right", "on": False})
    r = run_cli("info", "--port", sim.url, "--json")
    d = json.loads(r.stdout)
    assert d["fault_code"] == 0 and "ENABLED" not in d["status_names"]


def test_sigterm_while_driving_disables_the_board(sim, tmp_path):
    import signal
    proc = _scripted_drive(sim, tmp_path, "twist 0.15 0 20\n")
    try:
        until_energized(sim, proc)
        sim.clock.sleep(1.0)
        assert abs(sim.truth()["w_left"]) > 2.0                         # driving
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "viperdrive drive: interrupted" in err and "Traceback" not in err
    r = run_cli("info", "--port", sim.url, "--json")
    assert "ENABLED" not in json.loads(r.stdout)["status_names"]       # disabled by the host, not by the deadman


def test_port_comes_from_the_environment_or_the_robot_file(sim, tmp_path):
    r = run_cli("params", "get", "kp", env={"VIPERDRIVE_PORT": sim.url})
    assert r.returncode == 0 and r.stdout.startswith("kp = ")
    robot = tmp_path / "robot.yaml"
    robot.write_text(f"port: {sim.url}\n")
    r = run_cli("params", "get", "kp", "--config", robot)
    assert r.returncode == 0 and r.stdout.startswith("kp = ")
    r = run_cli("params", "get", "kp", "--config", robot, "--port", "/dev/ttyNOPE5")    # --port wins
    assert r.returncode == 3
