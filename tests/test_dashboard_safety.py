# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's control model under a hostile or careless user (docs/dashboard.md, "Who may drive"), through
its JSON API as a page uses it, against a virtual board whose ground truth is read in board time:
- a watcher reading the parameter table never disturbs a driving page (no deadman trip, no dip);
- once the page stops sending and the wheels are at rest they stay at rest: behind a busy watcher, and across a
  dashboard stopped for a second with a command sent meanwhile;
- SIGINT, SIGTERM or SIGHUP during a step test, the controlling page closing or disarming: the wheels at rest
  within 0.35 board s, the step's parameters put back;
- an e-stop while driving is shown, the dashboard goes on, and Clear works once the e-stop closes;
- a non-loopback --listen warns and answers to this machine's own address, a foreign host name is still refused,
  and [::1] works."""
from __future__ import annotations

import json
import signal
import socket
import threading

import pytest
from cli_helpers import run_cli
from dashboard_helpers import Dash, Driver, Events, post

from viperdrive.boardtime.clockfile import HOLD_RELEASE_S
from viperdrive.dashboard.core import DRIVE_TIMEOUT_S, PAGE_HOLD_S
from viperdrive.timebase import HOST_CLOCK, wait_until

pytestmark = pytest.mark.board

REST_RAD_S = 0.1        # a wheel slower than this is at rest
# a page the machine does not run: host seconds without a command, longer than the page's deadman and its hold,
# shorter than the hold's release (the stimulus of the test below, not a wait for anything)
PAGE_STALL_S = 0.55


def _params(sim, *names) -> dict:
    r = run_cli("params", "get", *names, "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["params"]


def _speed(t: dict) -> float:
    return max(abs(t["w_left"]), abs(t["w_right"]))


def _sample(sim, seconds: float, stop=None) -> list[dict]:
    """Ground truth as often as it can be read, for `seconds` of board time (or until stop() is true)."""
    out = []
    end = sim.clock.now() + seconds
    while sim.clock.now() < end and not (stop is not None and stop()):
        out.append(sim.truth())
    return out


def _at_rest_and_off(sim) -> bool:
    t = sim.truth()
    return _speed(t) < REST_RAD_S and not t["energized"]


def _steady(sim, driver: Driver) -> float:
    """Drive at 0.3 m/s until both wheels hold their speed; that speed (rad/s)."""
    driver.drive(0.3)
    driver.dash.driving(sim)

    def settled():
        a = sim.truth()
        sim.clock.sleep(0.1)
        b = sim.truth()
        return a["w_left"] > 1 and abs(b["w_left"] - a["w_left"]) < 0.02 * a["w_left"] and b["w_left"]
    return wait_until(settled, 10.0, sim.clock, what="the wheels at a steady speed")


def _watchers(dash: Dash, n: int, until=None) -> tuple[list, list[threading.Thread]]:
    """n pages that only watch, each reading the parameter table (again and again while until() is false)."""
    answers: list = []

    def watch():
        session, role = dash.hello()
        assert role == "view"
        while True:
            answers.append(dash.post("/api/params", {}, session))
            if until is None or until():
                return
    threads = [threading.Thread(target=watch, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return answers, threads


def test_twenty_watchers_reading_the_table_never_disturb_a_driving_page(sim, dash):
    events = Events(dash)
    driver = Driver(dash, sim)
    speed = _steady(sim, driver)
    wait_until(lambda: events.of("status"), 10.0, sim.clock, what="a status")
    trips0 = events.of("status")[-1]["deadman_trips"]
    answers, threads = _watchers(dash, 20)
    seen = _sample(sim, 1.0)
    for t in threads:
        t.join(timeout=30)
    seen += _sample(sim, 0.5)
    n0 = len(events.of("status"))
    wait_until(lambda: len(events.of("status")) > n0, 5.0, sim.clock, what="a status after the reads")
    last = events.of("status")[-1]
    driver.stop_sending()
    lowest = min(min(t["w_left"], t["w_right"]) for t in seen)
    print(f"20 watchers read the table while driving at {speed:.2f} rad/s: lowest wheel {lowest:.2f} rad/s, "
          f"{len(seen)} truth samples, deadman trips {trips0} -> {last['deadman_trips']}, "
          f"GET_PARAMs {last['param_reads']}")
    assert len(answers) == 20 and all(s == 200 and len(out["params"]) > 30 for s, out in answers), answers[:3]
    assert last["deadman_trips"] == trips0
    assert lowest >= 0.95 * speed
    assert last["param_reads"] == len(answers[0][1]["params"])     # the table read once: a watcher costs nothing
    assert all(s == 200 for s in driver.answers), driver.refusals
    assert dash.alive()
    events.close()


def test_wheels_at_rest_stay_at_rest_when_the_page_stops_sending_behind_a_busy_watcher(sim, dash):
    driver = Driver(dash, sim)
    _steady(sim, driver)
    stop_watching = threading.Event()
    _answers, threads = _watchers(dash, 4, until=stop_watching.is_set)
    driver.stop_sending()
    t0 = sim.clock.now()
    wait_until(lambda: _at_rest_and_off(sim), 5.0, sim.clock, what="the wheels at rest, the outputs off")
    took = sim.clock.now() - t0
    after = _sample(sim, 1.5)
    stop_watching.set()
    for t in threads:
        t.join(timeout=30)
    # a late command after the deadman ran out: refused, nothing moves
    status, out = dash.post("/api/drive", {"v": 0.3, "w": 0.0}, driver.session)
    after += _sample(sim, 0.5)
    top = max(_speed(t) for t in after)
    print(f"page silent: at rest and off {took * 1e3:.0f} ms later (board time); then {top:.3f} rad/s at most over "
          f"{len(after)} samples; a late command: {status} {out}")
    assert took < DRIVE_TIMEOUT_S + 0.5
    assert top < REST_RAD_S
    assert status == 409 and "arm" in out["error"]


def test_a_page_the_machine_did_not_run_for_a_moment_is_not_taken_for_a_stalled_page(sim, dash):
    """On a lockstep board the page is a commander of its own (dashboard/core.py, PAGE_HOLD_S): 0.55 s of host time
    without a command (a busy machine not running the page) holds the board inside the page's deadman; the drive
    goes on, nothing refused, no dip. A page silent on purpose still disarms (the test above), in board time. The
    stall is the stimulus, not a wait: it is longer than the page's deadman and well inside the hold's release
    (HOLD_RELEASE_S, 1 s of host time from the last command)."""
    driver = Driver(dash, sim)
    speed = _steady(sim, driver)
    driver.stop_sending()
    t0 = sim.clock.now()
    assert PAGE_HOLD_S < DRIVE_TIMEOUT_S < PAGE_STALL_S < HOLD_RELEASE_S
    HOST_CLOCK.sleep(PAGE_STALL_S)  # host time: the page does not run (the board's time is held by the page)
    ran = sim.clock.now() - t0
    driver.send_again()
    seen = _sample(sim, 0.5)
    driver.stop_sending()
    lowest = min(min(t["w_left"], t["w_right"]) for t in seen)
    print(f"the page did not run for 0.55 s of host time: the board ran {ran * 1e3:.0f} ms of its time (the page's "
          f"deadman {DRIVE_TIMEOUT_S * 1e3:.0f} ms); lowest wheel after {lowest:.2f} of {speed:.2f} rad/s; "
          f"refused {driver.refusals}")
    assert ran < DRIVE_TIMEOUT_S        # without the page's hold: about 0.6 s, and a disarm
    assert driver.refusals == []
    assert lowest >= 0.95 * speed
    assert not any("disarmed" in line for line in dash.log), dash.log


def test_a_dashboard_stopped_for_a_second_never_restarts_the_wheels(sim):
    # without the lockstep grant the board runs on while the dashboard is stopped, as a real board does
    d = Dash(sim.url, env={"VIPERDRIVE_LOCKSTEP": "0"})
    try:
        driver = Driver(d, sim)
        _steady(sim, driver)
        driver.stop_sending()
        d.proc.send_signal(signal.SIGSTOP)
        t_stop = sim.clock.now()
        # a command the page sent while the dashboard was stopped: it waits in the socket, stale when read
        late: list = []
        sender = threading.Thread(target=lambda: late.append(
            d.post("/api/drive", {"v": 0.3, "w": 0.0}, driver.session)), daemon=True)
        sender.start()
        wait_until(lambda: _speed(sim.truth()) < REST_RAD_S, 5.0, sim.clock,
                   what="the board's own deadman braking the wheels to rest")
        sim.clock.sleep(1.0 - (sim.clock.now() - t_stop))
        d.proc.send_signal(signal.SIGCONT)
        after = _sample(sim, 1.5)
        sender.join(timeout=15)
        top = max(_speed(t) for t in after)
        print(f"dashboard stopped 1 s: {top:.3f} rad/s at most over {len(after)} samples after it went on; the "
              f"command sent meanwhile: {late}")
        assert top < REST_RAD_S
        assert late and late[0][0] == 409, late
        assert d.alive()
    finally:
        d.proc.send_signal(signal.SIGCONT)
        rc, err = d.stop()
    assert rc in (0, 130) and "Traceback" not in err, err


def _start_step(dash: Dash, session: str) -> tuple[list, threading.Thread]:
    answer: list = []
    t = threading.Thread(target=lambda: answer.append(
        dash.post("/api/step", {"size": 10.0, "wheel": "both", "lift_ramp": True}, session, timeout=60)),
        daemon=True)
    t.start()
    return answer, t


def _stepping(sim) -> None:
    wait_until(lambda: sim.truth()["w_left"] > 2.0, 20.0, sim.clock, what="the step test turning the wheels")


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGHUP", "page closed", "disarm"])
def test_a_step_test_stops_at_once_on_a_signal_a_closing_page_or_a_disarm(sim, how):
    before = _params(sim, "max_accel", "ka", "kp")
    d = Dash(sim.url)
    rc = None
    try:
        session, role = d.hello()
        page = Events(d, session)
        answer, t = _start_step(d, session)
        _stepping(sim)
        t0 = sim.clock.now()
        if how.startswith("SIG"):
            d.proc.send_signal(getattr(signal, how))
        elif how == "page closed":
            page.close()
        else:
            status, out = d.post("/api/arm", {"on": False, "why": "the test's disarm"}, session)
            assert status == 200 and out["armed"] is False, out
        wait_until(lambda: _at_rest_and_off(sim), 5.0, sim.clock, poll=0.002,
                   what="the wheels at rest and the outputs off")
        took = sim.clock.now() - t0
        t.join(timeout=30)
        if how.startswith("SIG"):
            rc, err = d.stop()
        print(f"{how} during a 10 rad/s step: at rest and off {took * 1e3:.0f} ms later (board time); the step "
              f"answered {answer[:1] and (answer[0][0], str(answer[0][1])[:100])}")
        assert took < 0.35
        if not how.startswith("SIG"):
            assert answer and answer[0][0] == 409 and "cancelled" in answer[0][1]["error"], answer
            assert d.alive()
        page.close()
    finally:
        if rc is None:
            rc, err = d.stop()
    assert rc in (0, 130), err
    assert "Traceback" not in err, err
    assert _params(sim, "max_accel", "ka", "kp") == before


def test_an_estop_while_driving_is_shown_and_cleared_and_the_dashboard_goes_on(sim, dash):
    events = Events(dash)
    driver = Driver(dash, sim)
    driver.drive(0.2)
    dash.driving(sim)
    try:
        sim.control({"cmd": "fault", "kind": "estop", "open": True})
        wait_until(lambda: [e for e in events.of("disarmed") if e.get("fault")], 5.0, sim.clock,
                   what="the page told of the fault")
        wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, what="the outputs off")
        driver.stop_sending()

        def fault_shown():
            s = events.of("status")
            return s and s[-1]["fault_code"] and s[-1]
        shown = wait_until(fault_shown, 5.0, sim.clock, what="the fault in the status")
        assert dash.alive() and not shown["armed"]
        # while the e-stop is open: the host does not clear it on its own, and arming is refused
        status, out = dash.post("/api/arm", {"on": True}, driver.session)
        assert status == 409, out
    finally:
        sim.control({"cmd": "fault", "kind": "estop", "open": False})
    status, out = dash.post("/api/clear_fault", {}, driver.session)
    assert status == 200 and out["cleared"] != 0, out
    n = len(events.of("status"))
    wait_until(lambda: len(events.of("status")) > n and events.of("status")[-1]["fault_code"] == 0, 5.0,
               sim.clock, what="the status without the fault")
    print(f"e-stop while driving: {shown['fault']!r}; cleared code {out['cleared']}")
    assert driver.arm(True)["armed"] is True
    assert driver.arm(False)["armed"] is False
    events.close()


# ---- where it listens ----

def _own_addresses() -> list[str]:
    names = {socket.gethostname()}
    try:
        names |= {ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None)}
    except OSError:
        pass
    return sorted(names)


def test_listening_on_every_interface_warns_and_answers_to_this_machines_own_address(sim):
    d = Dash(sim.url, listen="0.0.0.0:0")
    try:
        port = d.netloc.rpartition(":")[2]
        answers = {}
        # this machine's names and addresses, and an address literal of a LAN interface (TEST-NET-1 as the Host
        # header only: nothing is sent there): a rebinding page always names a host name, never an address
        for name in [*_own_addresses(), "192.0.2.7"]:
            host = f"[{name}]" if ":" in name else name
            answers[name] = post(d.base, "/api/hello", {}, d.token, {"Host": f"{host}:{port}"})[0]
        foreign = post(d.base, "/api/hello", {}, d.token, {"Host": f"evil.example:{port}"})
        other_port = post(d.base, "/api/hello", {}, d.token, {"Host": f"{socket.gethostname()}:1"})
        cross = post(d.base, "/api/hello", {}, d.token, {"Host": f"{socket.gethostname()}:{port}",
                                                         "Origin": "http://evil.example"})
    finally:
        rc, err = d.stop()
    print(f"--listen 0.0.0.0: {answers}; evil.example {foreign[0]}; warning: {err.splitlines()[:1]}")
    assert "warning: listening on 0.0.0.0:" in err and "token" in err
    assert answers and all(s == 200 for s in answers.values()), answers
    assert foreign[0] == 403 and other_port[0] == 403 and cross[0] == 403
    assert rc in (0, 130)


def test_listening_on_the_ipv6_loopback(sim):
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError as e:
        pytest.fail(f"this machine has no IPv6 loopback ({e}): the test needs one")
    d = Dash(sim.url, listen="[::1]:0")
    try:
        assert d.base.startswith("http://[::1]:"), d.base
        status, out = post(d.base, "/api/hello", {}, d.token)
    finally:
        rc, err = d.stop()
    assert status == 200 and out["role"] == "control", out
    assert "warning" not in err
    assert rc in (0, 130)
