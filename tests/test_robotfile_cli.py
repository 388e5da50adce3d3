# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The robot file at the command line (issue 17 item 8, issue 12): a file that exists and cannot be read stops every
command that takes it, before anything moves; a good one's limits are the ones the robot drives with; a ros2_control
file with several nodes drives the robot with its controller's values. On a shared virtual board."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import VIPERDRIVE, SharedSim, run_cli

pytestmark = pytest.mark.board

DATA = Path(__file__).resolve().parent / "data" / "ros"
RADIUS = 0.0325         # the virtual board's default robot


@pytest.fixture(scope="module")
def sim():
    s = SharedSim()
    yield s
    s.close()


def _still(sim) -> dict:
    t = sim.control({"cmd": "truth"})
    assert abs(t["w_left"]) < 1e-6 and abs(t["w_right"]) < 1e-6
    return t


COMMANDS = [
    ("drive", "--script", "square", "--duration", "2"),
    ("tune", "--duration", "0.5", "--yes"),
    ("calibrate", "wheelbase", "--yes"),
    ("log", "record", "{tmp}/out.mcap", "--script", "spin", "--duration", "1"),
    ("ros2", "--duration", "1"),
    ("info",),
    ("params", "get", "kp"),
]


@pytest.mark.parametrize("fixture, words", [
    ("robot_tab.yaml", ["not valid YAML: found character '\\t' that cannot start any token: YAML does not allow a "
                        "tab for indentation; indent with spaces (line 5, column 1)"]),
    ("robot_duplicate.yaml", ["duplicate key 'max_rim_speed' (line 3 and line 5)"]),
])
def test_a_corrupt_robot_file_stops_every_command_before_anything_moves(sim, tmp_path, fixture, words):
    # before: the robot drove with the built-in 0.55 m/s wheel limit instead of the file's 0.2 (a warning only)
    bad = tmp_path / fixture
    shutil.copy(DATA / fixture, bad)
    before = _still(sim)
    for cmd in COMMANDS:
        args = [a.replace("{tmp}", str(tmp_path)) for a in cmd]
        r = run_cli(*args, "--port", sim.url, "--config", bad, timeout=60)
        assert r.returncode == 7, (cmd, r.stdout, r.stderr)
        assert r.stderr.startswith(f"viperdrive {cmd[0]}: error: invalid robot file: {bad}: "), (cmd, r.stderr)
        for w in words:
            assert w in r.stderr, (cmd, r.stderr)
        assert "Traceback" not in r.stderr and "defaults" not in r.stderr
    after = _still(sim)
    assert (after["x"], after["y"], after["theta"]) == (before["x"], before["y"], before["theta"])
    assert not (tmp_path / "out.mcap").exists()


def test_unreadable_and_missing_robot_files_are_errors_too(sim, tmp_path):
    # (not UTF-8 and invalid TOML: test_cli_errors.py::test_corrupt_robot_file_is_an_error_not_the_defaults)
    folder = tmp_path / "robot_dir.yaml"
    folder.mkdir()
    r = run_cli("drive", "--script", "spin", "--port", sim.url, "--config", folder)
    assert r.returncode == 7 and f"invalid robot file: {folder} is a directory, not a file" in r.stderr
    r = run_cli("drive", "--script", "spin", "--port", sim.url, "--config", tmp_path / "nope.yaml")
    assert r.returncode == 7 and "does not exist" in r.stderr
    _still(sim)


def _peak_rim_speed(sim, argv, seconds) -> tuple[float, subprocess.CompletedProcess]:
    proc = subprocess.Popen([VIPERDRIVE, *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    peak = 0.0
    clock = sim.clock
    deadline = clock.now() + seconds
    while clock.now() < deadline and proc.poll() is None:
        t = sim.control({"cmd": "truth"})
        peak = max(peak, abs(t["w_left"]) * RADIUS, abs(t["w_right"]) * RADIUS)
        clock.sleep(0.02)
    out, err = proc.communicate(timeout=30)
    return peak, subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_the_files_wheel_limit_is_the_one_driven_with(sim, tmp_path):
    good = tmp_path / "robot.yaml"
    good.write_text((DATA / "robot_tab.yaml").read_text().replace("\t", "    "))      # the tab fixed
    peak, r = _peak_rim_speed(sim, ["drive", "--script", "square", "--side", "1.0", "--speed", "0.5",
                                    "--duration", "2.5", "--port", sim.url, "--config", good], 4.0)
    assert r.returncode == 0, r.stderr
    # the file's linear.x.max_velocity 0.15 m/s (under its max_rim_speed 0.2), not the script's 0.5 or the
    # built-in 0.55 the corrupt file used to fall back to (measured: 0.151 m/s; 0.516 with the defaults)
    assert 0.12 < peak < 0.15 * 1.06, peak


def test_a_file_with_the_old_key_name_still_limits_the_robot_with_a_note(sim, tmp_path):
    """max_wheel_speed (m/s at the rim) was renamed max_rim_speed at 0.1: a file that still says max_wheel_speed
    drives with its value (not the built-in 0.55) and the command says what to rename."""
    old = tmp_path / "robot.yaml"
    old.write_text("# written for viperdrive before 0.1\nmax_wheel_speed: 0.15   # m/s at the rim\n")
    peak, r = _peak_rim_speed(sim, ["drive", "--script", "square", "--side", "1.0", "--speed", "0.5",
                                    "--duration", "2.5", "--port", sim.url, "--config", old], 20.0)
    assert r.returncode == 0, r.stderr
    assert (f"robot file {old}: note: max_wheel_speed: renamed max_rim_speed in viperdrive 0.1 (same value, m/s "
            f"at the rim); read as max_rim_speed: rename the key in the file") in r.stderr
    assert 0.12 < peak < 0.15 * 1.06, peak


def test_a_ros2_control_file_drives_with_its_controllers_values(sim, tmp_path):
    f = tmp_path / "controllers.yaml"
    text = (DATA / "ros2_control_two_controllers.yaml").read_text()
    f.write_text(text.replace("0.40", "0.152").replace("0.05", "0.0325"))      # the virtual robot's geometry
    r = run_cli("drive", "--script", "spin", "--port", sim.url, "--config", f)
    assert r.returncode == 7
    assert "2 diff-drive controllers (base_controller, base_controller_slow): choose one with --node" in r.stderr
    peak, r = _peak_rim_speed(sim, ["drive", "--script", "square", "--side", "1.0", "--speed", "0.5",
                                    "--duration", "2.5", "--port", sim.url, "--config", f,
                                    "--node", "base_controller_slow"], 4.0)
    assert r.returncode == 0, r.stderr
    assert 0.15 < peak < 0.2 * 1.06, peak        # base_controller_slow's linear.x.max_velocity 0.2
    assert "base_controller_slow" in r.stderr and "update_rate" in r.stderr      # the notes say what was read


# ------------------------------------------------------------------------------------------ read once

_watched: set[str] = set()
_opens: list[str] = []


def _audit(event, args):
    # every way Python opens a file (open, Path.read_bytes/read_text, os.open) raises the audit event "open"
    if event == "open" and _watched and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path in _watched:
            _opens.append(path)


sys.addaudithook(_audit)        # for the life of the process; it only looks at paths while a test watches


@contextlib.contextmanager
def _reads_of(path: Path, monkeypatch):
    """{"opens": times the file was opened, "parses": times its text was parsed as YAML} while the block runs (the
    parse is counted where every YAML load of the package ends: ruamel.yaml's compose)."""
    from ruamel.yaml import YAML

    text = path.read_text()
    counts = {"opens": 0, "parses": 0}
    compose = YAML.compose

    def counting_compose(self, stream):
        if stream == text:
            counts["parses"] += 1
        return compose(self, stream)

    monkeypatch.setattr(YAML, "compose", counting_compose)
    _opens.clear()
    _watched.add(str(path.resolve()))
    try:
        yield counts
    finally:
        _watched.clear()
        counts["opens"] = len(_opens)
        monkeypatch.setattr(YAML, "compose", compose)


def _main(capsys, *argv) -> tuple[int, str]:
    from viperdrive.cli import main

    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("argv", [
    ("check-config", "{file}"),
    ("check-config", "{file}", "--json"),
    ("flash", "--dry-run", "--board", "pico", "--config", "{file}", "--port", "/dev/null"),
    ("info", "--config", "{file}", "--port", "{sim}"),
    ("params", "get", "kp", "--config", "{file}", "--port", "{sim}"),
])
def test_every_command_reads_and_parses_the_robot_file_once(sim, tmp_path, capsys, monkeypatch, argv):
    # before: check-config parsed the file once to tell a robot file from a robot_localization one, then loaded it
    # again (2 opens, 2 parses)
    robot = tmp_path / "robot.yaml"
    robot.write_text("# a robot\nwheel_separation: 0.152\nmax_rim_speed: 0.5\n")
    args = [a.replace("{file}", str(robot)).replace("{sim}", sim.url) for a in argv]
    with _reads_of(robot, monkeypatch) as n:
        code, out = _main(capsys, *args)
    assert code == 0, out
    assert n == {"opens": 1, "parses": 1}, (argv, n)


def test_check_config_reads_a_robot_localization_file_once(tmp_path, capsys, monkeypatch):
    ekf = tmp_path / "ekf.yaml"
    ekf.write_text((Path(__file__).resolve().parents[1] / "docs" / "examples" / "ekf.yaml").read_text())
    with _reads_of(ekf, monkeypatch) as n:
        code, out = _main(capsys, "check-config", ekf)
    assert "robot_localization parameters" in out, out
    assert n == {"opens": 1, "parses": 1}, n


def test_calibrate_parses_the_robot_file_once_and_writes_it(sim, tmp_path, capsys, monkeypatch):
    # before: the CLI's robot_config (then named load_config) parsed the file, then update_values read it and parsed
    # it again before editing it
    # (3 opens, 2 parses). Now: one parse when the command starts; the edit reads the text as it is then (1 open;
    # a file edited during the spins keeps the edit) and the edited copy is parsed before it replaces the file.
    robot = tmp_path / "robot.yaml"
    robot.write_text("# a robot\nwheel_separation: 0.152  # nominal\n")
    try:
        with _reads_of(robot, monkeypatch) as n:
            code, out = _main(capsys, "calibrate", "wheelbase", "--rate", "3", "--time", "1.2", "--measured",
                              "200,200", "--yes", "-q", "--config", robot, "--port", sim.url)
        assert code == 0, out
        assert f"robot file {robot}: updated" in out
        assert n == {"opens": 2, "parses": 1}, n
        new = float(re.search(r"wheel_separation: ([\d.]+)  # nominal", robot.read_text()).group(1))
        assert new != 0.152 and 0.1 < new < 0.2      # odometry's turn (about 206 deg) over the 200 deg "measured"
    finally:
        assert _main(capsys, "params", "set", "wheel_separation=0.152", "--save", "--port", sim.url)[0] == 0
