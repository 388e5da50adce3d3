# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Ride-through (docs/ros2.md, "Recovery"): the bridge keeps its node up when the board goes away and takes the
board back when the policy allows it, and nothing moves after a recovery until a command newer than it arrives.

- the soak (tests/ros2_soak.py): 20 seeded events of cut link, re-plug, reset and one e-stop, against a bridge
  in this process and a peer participant;
- a watchdog reset is taken back (its FAULT_WATCHDOG acknowledged), and a stamped command from before the
  recovery does not move the robot after it;
- `viperdrive ros2` as a user runs it: started before the board exists, the board killed and started again on
  the same port, then SIGTERM; no traceback, and it exits only on the signal;
- `viperdrive monitor` waits out a re-plug the same way (it only watches: the board is left as it is found);
- the policy itself (viperdrive.board.recovery.Recovery) against a stand-in board on a stand-in clock: the
  back-off, one log line per change of state, the watchdog budget, a latched fault waits for the clear, another
  firmware is not taken back, --recover never."""
import logging
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ros2_graph import LOCAL_ENV, Graph
from ros2_soak import STILL_M, Soak, free_port

from viperdrive.board import Board, FaultLatched
from viperdrive.board import recovery as R
from viperdrive.errors import NoReplyError, PortError, VersionMismatch
from viperdrive.robot.config import RobotConfig
from viperdrive.ros2.bridge import Ros2Bridge
from viperdrive.ros2.options import BridgeOptions
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

DOMAIN = random.SystemRandom().randint(120, 220)
VIPERDRIVE = Path(sys.executable).parent / "viperdrive"


def test_soak_twenty_events_every_recoverable_one_recovered_the_estop_only_on_clear():
    # 1-2 board s of driving between events (the long soak drives 2-6 s): the events, not the driving, are the test
    soak = Soak(events=20, seed=7, namespace="soak", domain=DOMAIN, drive_s=(1.0, 2.0))
    events = soak.run()
    rep = soak.report()
    print("soak:", rep)
    assert len(events) == 20 and rep["kinds"]["estop"] == 1 and min(rep["kinds"].values()) >= 1
    # every event recovered, the e-stop one only after its clear (Soak.event asserts that it stayed down until
    # then and that the service refused while the circuit was open)
    assert rep["recoveries"] == 20
    estop = [e for e in events if e.kind == "estop"][0]
    assert "still latched" in estop.clear_refused_open and "close it first" in estop.clear_refused_open
    # no wheel moved without a fresh command: still through every quiet window (a kept command drives 0.1 m)
    quiet = [e.motion_quiet_m for e in events if e.quiet]
    assert quiet and max(quiet) < STILL_M, quiet
    # while down the board's deadman had the wheels: at 0.2 m/s the 0.1 s deadman is 0.02 m, then braking
    assert rep["motion_down_m"]["max"] < 0.05, [(e.kind, e.motion_down_m) for e in events]
    # the odometry is continuous across every recovery: never back (one count of jitter at rest is 0.00005 m),
    # no jump (5 cm is 0.25 s of driving between two 50 Hz messages; a pose restarted at the origin is metres)
    assert -0.001 < rep["odom_step_min_m"] and rep["odom_step_max_m"] <= 0.05, rep
    assert soak.graph.odom[-1][2] > 20 * 0.2 * 0.9     # it drove on after each event: 20 x 1..2 s at 0.2 m/s


def _config(**ros2) -> RobotConfig:
    return RobotConfig.from_dict({"update_rate": 100, "cmd_vel_timeout": 10.0, "max_rim_acceleration": 1.0,
                                  "ros2": {"publish_rate": 50, **ros2}})


def test_a_watchdog_reset_is_taken_back_and_a_command_stamped_before_the_recovery_moves_nothing(caplog):
    from viperdrive.rigs.virtual import VirtualBoard

    lag = 2.0           # the peer's stamps: this far in the past (within cmd_vel_timeout, so driven before)
    cfg = _config(use_stamped_vel=True)
    with VirtualBoard() as vb:
        bridge = Ros2Bridge(Board(vb.url, config=cfg), cfg,
                            BridgeOptions(namespace="rwdt", domain_id=DOMAIN, env=LOCAL_ENV, recover="auto"))
        graph = Graph("rwdt", DOMAIN, stamp_lag=lag)
        runner = threading.Thread(target=bridge.run, daemon=True)

        def spin_until(pred, what, seconds=60.0):
            def step():
                assert runner.is_alive(), bridge.stop_reason
                graph.command(0.2)
                graph.take()
                return pred()
            wait_until(step, seconds, poll=0.02, what=what)

        try:
            with caplog.at_level(logging.INFO, logger="viperdrive.ros2"):
                runner.start()
                spin_until(lambda: vb.truth()["w_left"] > 3.0, "driving on commands stamped 2 s ago")
                vb.fault("freeze_control", on=True)         # the firmware hangs: its watchdog resets the board
                spin_until(lambda: bridge.recovery.history, "recovery from the watchdog reset")
                rec = bridge.recovery.history[-1]
                back = time.monotonic()
                # every command arriving now is stamped before the recovery: none may move the robot
                x0 = vb.truth()["x"]
                spin_until(lambda: time.monotonic() > back + lag - 0.5, "the stale commands' window")
                x1 = vb.truth()["x"]
                spin_until(lambda: vb.truth()["w_left"] > 3.0, "driving on commands newer than the recovery")
                moved_at = time.monotonic()
        finally:
            bridge.stop("test done")
            runner.join(20)
            graph.close()
    assert not runner.is_alive() and bridge.stop_reason == "test done"
    print(f"watchdog reset: down {rec.down_s:.2f} s, {rec.attempts} attempts; still {abs(x1 - x0):.4f} m for "
          f"{lag - 0.5:.1f} s of commands stamped before the recovery; driving again {moved_at - back:.2f} s after")
    assert rec.kind == R.RESTART and abs(x1 - x0) < STILL_M
    assert moved_at - back >= lag - 0.5      # the first stamp newer than the recovery is `lag` after it
    logs = [r.getMessage() for r in caplog.records]
    assert any("board down: the board was reset by its watchdog" in m and "[restart]" in m for m in logs), logs
    assert any(m.startswith("board back after") for m in logs)
    assert bridge.ignored_commands > 10


def test_the_cli_waits_for_a_board_rides_a_replug_and_exits_only_on_a_signal(tmp_path):
    from viperdrive.rigs.virtual import VirtualBoard

    port = free_port()
    url = f"socket://127.0.0.1:{port}"
    log = tmp_path / "bridge.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([str(VIPERDRIVE), "ros2", "--port", url, "--namespace", "rcli", "--domain-id",
                                 str(DOMAIN), "--localhost"], stdout=subprocess.DEVNULL, stderr=err)
    text = log.read_text

    def until_logged(what, start=0, seconds=60.0):
        def logged():
            assert proc.poll() is None, f"the bridge exited ({proc.returncode}):\n{text()}"
            return what in text()[start:]
        wait_until(logged, seconds, poll=0.05, what=f"{what!r} in the log")
        return text().index(what, start) + len(what)

    try:
        # no board on the port yet: the node comes up and waits for it
        mark = until_logged("board down: no board at the start")
        vb = VirtualBoard(listen=f"127.0.0.1:{port}").start()
        try:
            mark = until_logged("board back after", mark)
        finally:
            vb.close()                                  # unplugged
        mark = until_logged("board down: ", mark)
        mark = until_logged("board still down: ", mark)     # retried: the node is up with the board gone
        vb = VirtualBoard(listen=f"127.0.0.1:{port}").start()   # plugged in again
        try:
            mark = until_logged("board back after", mark)
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(30)
        finally:
            vb.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    out = text()
    assert rc == 0, out
    assert "Traceback" not in out and "stopped (SIGTERM); board disabled" in out, out


# ---------------------------------------------------------------------------------------- the policy, alone
class StandInBoard:
    """What Recovery calls: recover(clear) raising what a board would, in the order given."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.calls: list[tuple[int, ...]] = []

    def recover(self, clear=(), activate=True):
        self.calls.append(tuple(clear))
        out = self.outcomes.pop(0)
        if isinstance(out, Exception):
            raise out
        return out


class Clock:
    """A stand-in board time (viperdrive.timebase.Clock's now()) the test moves by hand."""

    def __init__(self):
        self.t = 1000.0

    def now(self):
        return self.t


def _recovery(outcomes, policy="auto"):
    clock = Clock()
    log = logging.getLogger("test.recovery")
    return R.Recovery(StandInBoard(outcomes), policy, log=log, clock=clock), clock


def _poll_until_back(rec, clock, step=0.05, limit=60.0):
    """Poll every `step` of the stand-in clock: (Recovered or None, the times of the board's tries from the
    first poll)."""
    tries = []
    t0 = clock.t
    while clock.t < t0 + limit:
        n = len(rec.board.calls)
        back = rec.poll()
        if len(rec.board.calls) > n:
            tries.append(round(clock.t - t0, 2))
        if back is not None:
            return back, tries
        clock.t += step
    return None, tries


def test_backoff_doubles_to_its_ceiling_with_one_log_line_per_change(caplog):
    fails = [PortError("/dev/ttyACM0 is not back yet")] * 5 + [NoReplyError("no HELLO reply")] * 2 + [None]
    rec, clock = _recovery(fails)
    with caplog.at_level(logging.INFO, logger="test.recovery"):
        rec.lost(R.LINK, "the port vanished")
        back, tries = _poll_until_back(rec, clock, step=0.01)
    assert back is not None and back.attempts == 8 and rec.outage is None
    # the first try 0.5 s after the loss, then every 0.5 s doubling to 4 s (polled every 10 ms here)
    gaps = [b - a for a, b in zip([0.0, *tries], tries, strict=False)]
    assert gaps == pytest.approx([0.5, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0], abs=0.021), tries
    msgs = [r.getMessage() for r in caplog.records]
    # down, two kinds of failure (said once each, not per try), back
    assert len(msgs) == 4, msgs
    assert msgs[0].startswith("board down: the port vanished [link]; retrying every 0.5 s")
    assert "not back yet" in msgs[1] and "no HELLO reply" in msgs[2] and msgs[3].startswith("board back after")


def test_watchdog_resets_are_acknowledged_three_times_in_ten_minutes_then_left_latched():
    rec, clock = _recovery([None, None, None, None])
    for _ in range(3):
        rec.lost(R.FAULT, "the board was reset by its watchdog", P.FAULT_WATCHDOG)
        assert rec.outage.kind == R.RESTART             # its own record of the reset: may be taken back
        back, _ = _poll_until_back(rec, clock)
        assert back is not None and rec.board.calls[-1] == (P.FAULT_WATCHDOG,)   # acknowledged (CLEAR_FAULT)
        clock.t += 60.0
    rec.lost(R.FAULT, "the board was reset by its watchdog", P.FAULT_WATCHDOG)
    # the fourth within 600 s: a firmware that keeps hanging is left latched, and never retried on its own
    assert rec.outage.kind == R.FAULT and rec.status()["recoverable"] is False
    clock.t += 700.0
    assert rec.poll() is None and len(rec.board.calls) == 3
    rec.cleared()                                               # ~/clear_fault, a person's decision
    back, _ = _poll_until_back(rec, clock)
    assert back is not None and len(rec.board.calls) == 4
    # ... and once the window has passed, the budget is whole again
    rec, clock = _recovery([None] * 4)
    for _ in range(4):
        rec.lost(R.FAULT, "the board was reset by its watchdog", P.FAULT_WATCHDOG)
        assert rec.outage.kind == R.RESTART
        assert _poll_until_back(rec, clock)[0] is not None
        clock.t += 250.0


def test_a_latched_safety_fault_waits_for_the_clear_and_another_firmware_is_not_taken_back():
    rec, clock = _recovery([FaultLatched(P.FAULT_ESTOP), None])
    rec.lost(R.RESTART, "the board de-energized")
    _poll_until_back(rec, clock, limit=5.0)
    assert rec.outage.kind == R.FAULT and rec.outage.fault_code == P.FAULT_ESTOP
    n = len(rec.board.calls)
    clock.t += 3600.0
    assert rec.poll() is None and len(rec.board.calls) == n
    assert rec.status()["recoverable"] is False
    rec.cleared()
    assert rec.poll() is not None

    rec, clock = _recovery([VersionMismatch("protocol 3, this host speaks 4")])
    rec.lost(R.LINK, "the port vanished")
    _poll_until_back(rec, clock, limit=5.0)
    assert rec.outage.kind == R.FIRMWARE and len(rec.board.calls) == 1
    clock.t += 3600.0
    assert rec.poll() is None and len(rec.board.calls) == 1


def test_recover_never_takes_nothing_back_and_a_bad_policy_is_refused():
    rec, clock = _recovery([None], policy="never")
    rec.lost(R.LINK, "the port vanished")
    clock.t += 3600.0
    assert rec.poll() is None and rec.board.calls == [] and rec.status()["recoverable"] is False
    with pytest.raises(ValueError, match="auto, never"):
        R.Recovery(StandInBoard([]), "sometimes")


def test_monitor_waits_out_a_replug_and_watches_on():
    """`viperdrive monitor --json` on a board that is unplugged and plugged in again: JSON lines say the board is
    down while it is away, then the telemetry comes back (asked for again), and the command ends on its own
    --duration with no traceback."""
    import json

    from viperdrive.rigs.virtual import VirtualBoard

    port = free_port()
    vb = VirtualBoard(listen=f"127.0.0.1:{port}").start()
    proc = subprocess.Popen([str(VIPERDRIVE), "monitor", "--port", f"socket://127.0.0.1:{port}", "--json",
                             "--duration", "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[dict] = []

    def until(pred, what, seconds=60.0):
        end = time.monotonic() + seconds
        while True:
            line = proc.stdout.readline()
            assert line, f"monitor ended ({proc.poll()}) before {what}: {proc.stderr.read()}"
            lines.append(json.loads(line))
            if pred(lines[-1]):
                return lines[-1]
            assert time.monotonic() < end, f"no {what} within {seconds} s"

    try:
        until(lambda d: "board_down" not in d and d.get("telemetry_hz", 0) > 10, "telemetry")
        vb.close()                                          # unplugged
        down = until(lambda d: "board_down" in d, "a board-down line")
        vb = VirtualBoard(listen=f"127.0.0.1:{port}").start()   # plugged in again
        back = until(lambda d: "board_down" not in d and d.get("telemetry_hz", 0) > 10, "telemetry again")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        vb.close()
    assert down["board_down"]["down_kind"] == "link" and down["board_down"]["recoverable"] is True
    assert back["telemetry_hz"] > 10
    assert "Traceback" not in err and "board down: " in err and "board back after" in err, err
    assert proc.returncode == 130, err          # ended by Ctrl-C (SIGINT), as every command
