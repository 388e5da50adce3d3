# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive tune --design` as a user runs it against a virtual board of its own (this module's): refused before
the motor is identified, then `calibrate feedforward` followed by the design command; what every way of ending it
leaves on the board (the gains it had, outputs off), and --save only for gains that meet the request."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import time

import pytest
from cli_helpers import VIPERDRIVE, SharedSim, run_cli

pytestmark = pytest.mark.board

DESIGNED = ("kp", "ki", "kd", "kd_tau", "windup_tau")
OTHERS = ("max_accel", "ks", "kv", "ka", "vel_tau")


@pytest.fixture(scope="module")
def sim():
    s = SharedSim()
    yield s
    s.close()


@pytest.fixture
def calibrated(sim):
    """The module's board with its motor identified (calibrate feedforward once, as a user would)."""
    if params(sim, ("ka",))["ka"] == 0.0:
        r = run_cli("calibrate", "feedforward", "--port", sim.url, "--ramp-time", "1.0", "--yes", "-q", timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
    return sim


def params(sim, names=DESIGNED + OTHERS) -> dict:
    r = run_cli("params", "get", *names, "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["params"]


def info(sim) -> dict:
    r = run_cli("info", "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_design_before_the_motor_is_identified_says_what_to_run(sim):
    before = params(sim)
    assert before["ka"] == 0.0                              # the table's default: no inertia model yet
    r = run_cli("tune", "--design", "--port", sim.url)
    assert r.returncode == 7 and "run `viperdrive calibrate feedforward` first" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and params(sim) == before


def test_calibrate_then_design_meets_the_request_and_saves(sim, tmp_path):
    r = run_cli("calibrate", "feedforward", "--port", sim.url, "--ramp-time", "1.0", "--yes", "-q", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    model = params(sim)
    assert model["ka"] > 0 and 0.05 < model["ks"] < 0.3
    png = tmp_path / "b.png"
    r = run_cli("tune", "--design", "--settle", "150ms", "--overshoot", "5%", "--save", "--png", png, "--json",
                "--port", sim.url, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    design = d["design"]
    assert design["feasible"] and design["motor_limit"] == "acceleration"
    assert d["meets"] and d["saved"]
    for w in ("left", "right"):
        b = d["b"][w]
        print(f"{w}: A rise {d['a'][w]['rise_time_s'] * 1e3:.0f} ms overshoot {d['a'][w]['overshoot']:.1f} % "
              f"settling {d['a'][w]['settling_time_s'] * 1e3:.0f} ms | B rise {b['rise_time_s'] * 1e3:.0f} ms "
              f"overshoot {b['overshoot']:.1f} % settling {b['settling_time_s'] * 1e3:.0f} ms "
              f"(predicted {design['predicted']['overshoot_pct']:.1f} %, "
              f"{design['predicted']['settling_s'] * 1e3:.0f} ms)")
        # the request within 20 %: settling <= 180 ms, overshoot <= 6 %
        assert b["settling_time_s"] is not None and b["settling_time_s"] <= 0.150 * 1.2
        assert b["overshoot"] <= 5.0 * 1.2
    after = params(sim)
    for name in DESIGNED:
        assert after[name] == pytest.approx(d["new_gains"][name], rel=1e-6)
        assert after[name] == pytest.approx(design["gains"].get(name, model[name]), rel=1e-5)
    # what the step test lifted (the ramp, and kA with it) came back; the model was not touched
    assert {k: after[k] for k in OTHERS} == {k: model[k] for k in OTHERS}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sim.control({"cmd": "reset", "what": "board"})           # power cycle: --save kept them
    assert params(sim) == after
    assert "ENABLED" not in info(sim)["status_names"]


def test_design_without_save_and_an_infeasible_one_leave_the_gains(calibrated, tmp_path):
    sim = calibrated
    before = params(sim)
    r = run_cli("tune", "--design", "--settle", "100ms", "--duration", "0.6", "--png", tmp_path / "b.png", "--port",
                sim.url, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "predicted (model)" in r.stdout and "B right" in r.stdout and "add --save" in r.stderr
    assert params(sim) == before
    r = run_cli("tune", "--design", "--settle", "10ms", "--port", sim.url)
    assert r.returncode == 7 and "faster than the motor allows" in r.stderr and "Nothing was changed" in r.stderr
    assert "NOT FEASIBLE" in r.stdout and "best settling" in r.stdout
    assert params(sim) == before
    r = run_cli("tune", "--design", "--settle", "soon", "--port", sim.url)
    assert r.returncode == 2 and "is not a time" in r.stderr


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_design_stopped_during_the_trial_step_puts_everything_back(calibrated, how, tmp_path):
    sim = calibrated
    before = params(sim)
    p = subprocess.Popen([VIPERDRIVE, "tune", "--design", "--settle", "100ms", "--duration", "2", "--port",
                          sim.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen = ""
    deadline = time.monotonic() + 60
    while not re.search(r"step B \(designed gains\): [1-9]\d%", seen):   # the designed gains are on the board
        line = p.stderr.readline()
        assert line and time.monotonic() < deadline, seen
        seen += line
    p.send_signal(how)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert params(sim) == before                                  # gains, ramp and kA as they were
    assert "ENABLED" not in info(sim)["status_names"] and sim.control({"cmd": "truth"})["energized"] is False


def test_design_with_the_link_lost_during_the_trial_says_so_and_the_board_stops(calibrated, tmp_path):
    sim = calibrated
    before = params(sim)
    p = subprocess.Popen([VIPERDRIVE, "tune", "--design", "--settle", "100ms", "--duration", "2", "--port",
                          sim.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen = ""
    deadline = time.monotonic() + 60
    while not re.search(r"step B \(designed gains\): [1-9]\d%", seen):
        line = p.stderr.readline()
        assert line and time.monotonic() < deadline, seen
        seen += line
    sim.control({"cmd": "fault", "kind": "cut_link", "on": True})
    try:
        out, err = p.communicate(timeout=60)
        sim.clock.sleep(0.5)                                     # past the deadman and its ramp (board time)
        truth = sim.control({"cmd": "truth"})
    finally:
        sim.control({"cmd": "fault", "kind": "cut_link", "on": False})
    assert p.returncode in (4, 8), (p.returncode, err)          # link lost / no reply
    assert "could not put back" in err and "until it is reset" in err and "Traceback" not in err, err
    assert abs(truth["w_left"]) < 0.2 and abs(truth["w_right"]) < 0.2     # the deadman stopped the wheels
    # the trial gains were never saved: a reset brings back the stored ones
    sim.control({"cmd": "reset", "what": "board"})
    assert params(sim) == before
