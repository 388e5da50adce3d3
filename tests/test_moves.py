# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Moves on the board (issue 24) through the host and the CLI, on the shared virtual board (the default robot:
tyre mismatch, wheelbase x1.04, a gyro 0.3 % fast), against ground truth. Every wait is in board time. The
firmware's engine in simulated time: mcu/tests/mptest_moves.py; the issue's figures: bench/bench_moves.py."""
from __future__ import annotations

import math
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from cli_helpers import VIPERDRIVE, run_cli, until_energized

from viperdrive.board import Board
from viperdrive.board.moves import move_pieces
from viperdrive.errors import BadValue
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board


def _yaw(sim) -> float:
    return sim.truth()["yaw_total"]


def test_move_turn_90_ends_on_the_gyro_heading(sim):
    """`viperdrive move turn 90`: the board turns by its gyro heading. Uncalibrated, the part's 0.3 % scale error
    alone leaves the robot 0.27 degrees short; the encoders' heading would be 4 % off (the wheelbase)."""
    y0 = _yaw(sim)
    r = run_cli("move", "turn", "90", "--rate", "2", "--angular-accel", "5", "--port", sim.url, timeout=120)
    turned = math.degrees(_yaw(sim) - y0)
    print(r.stdout.strip(), f"| truth {turned:.2f} deg")
    assert r.returncode == 0, r.stderr
    assert "move arrived after" in r.stdout and "(gyro)" in r.stdout
    assert abs(turned - 90.0 * (1 - 0.003)) < 0.3, turned


def test_move_straight_and_an_arc_against_ground_truth(sim):
    t0 = sim.truth()
    r = run_cli("move", "straight", "0.4", "--speed", "0.25", "--port", sim.url, timeout=120)
    t1 = sim.truth()
    assert r.returncode == 0, r.stderr
    th = t0["theta"]
    dx, dy = t1["x"] - t0["x"], t1["y"] - t0["y"]
    along, lateral = dx * math.cos(th) + dy * math.sin(th), -dx * math.sin(th) + dy * math.cos(th)
    print(f"straight 0.4 m: {along:.4f} m along, {lateral * 1000:+.1f} mm lateral")
    assert abs(along - 0.4) < 0.005 and abs(lateral) < 0.01
    y0 = _yaw(sim)
    r = run_cli("move", "arc", "--radius", "0.2", "--angle", "-90", "--port", sim.url, timeout=120)
    assert r.returncode == 0, r.stderr
    assert abs(math.degrees(_yaw(sim) - y0) + 90.0 * (1 - 0.003)) < 0.5


def test_move_refuses_what_it_cannot_run_with_a_reason(sim):
    r = run_cli("move", "arc", "--radius", "0", "--angle", "90", "--port", sim.url)
    assert r.returncode == 2 and "argument --radius: 0 is not allowed" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("move", "straight", "inf", "--port", sim.url)
    assert r.returncode == 2 and "not a finite number" in r.stderr
    with Board(sim.url, clock=sim.clock) as b:
        b.activate()
        with pytest.raises(BadValue, match="cannot run as asked"):
            b.move_straight(5000.0, 0.2, 0.5)       # beyond the board's range of wheel travel
        with pytest.raises(BadValue, match="finite"):
            b.move_turn(float("nan"))
        b.deactivate()


def test_a_path_longer_than_one_board_move_is_cut_into_moves_the_board_takes(sim):
    """A 7 m line is past one board move (131072 counts, 6.5 m of wheel travel at the default wheel): whole, the
    board refuses it; cut by move_pieces, it takes every piece (queued, then cancelled: nothing drives 7 m here).
    A turn of 20 turns and an arc the same."""
    with Board(sim.url, clock=sim.clock) as b:
        m_per_count = 2 * math.pi * b.get_param("wheel_radius") / b.counts_per_rev
        half = 0.5 * b.get_param("wheel_separation")
        b.activate()
        with pytest.raises(BadValue, match="cannot run as asked"):
            b.move_straight(7.0, 0.2)
        for kind, a, bb in ((P.MOVE_STRAIGHT, 7.0, 0.0), (P.MOVE_TURN, -40 * math.pi, 0.0),
                            (P.MOVE_ARC, 0.5, 15.0)):
            pieces = move_pieces(kind, a, bb, m_per_count, half)
            print(f"kind {kind} a={a:g} b={bb:g}: {len(pieces)} moves of {pieces[0]}")
            assert len(pieces) >= 2
            if kind == P.MOVE_ARC:
                assert sum(p[1] for p in pieces) == pytest.approx(bb) and all(p[0] == a for p in pieces)
            else:
                assert sum(p[0] for p in pieces) == pytest.approx(a)
            moves = [b.moves.piece(kind, pa, pb) for pa, pb in pieces]
            assert not any(m.done for m in moves), [m.reason for m in moves]     # none refused
            b.write(0.0, 0.0)           # a SET_VEL cancels them all
            assert all(m.reason == "cancelled" or not m.sent for m in moves)
        b.deactivate()
        with pytest.raises(BadValue, match="no length"):
            move_pieces(P.MOVE_STRAIGHT, 0.0, 0.0, m_per_count, half)


def test_the_hosts_move_range_is_the_boards():
    """mcu/moves.py's DELTA_MAX (Q12 counts) and the host's MOVE_COUNTS_MAX name the same range."""
    from viperdrive.board.moves import MOVE_COUNTS_MAX
    text = (Path(__file__).resolve().parents[1] / "mcu" / "moves.py").read_text()
    delta_max = float(re.search(r"^DELTA_MAX = ([0-9.]+)", text, re.M).group(1))
    assert delta_max == MOVE_COUNTS_MAX * 4096


def test_a_script_line_the_board_cannot_run_is_refused_before_the_robot_moves(sim, tmp_path):
    script = tmp_path / "bad.txt"
    script.write_text("forward 0.2\nturn 90\nforward 0\n")
    t0 = sim.truth()
    r = run_cli("drive", "--script", script, "--port", sim.url, timeout=120)
    t1 = sim.truth()
    assert r.returncode == 7 and "segment 3" in r.stderr and "no length" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert abs(t1["distance"] - t0["distance"]) < 1e-3 and abs(t1["yaw_total"] - t0["yaw_total"]) < 1e-3


def test_the_lease_ends_the_moves_braked_when_the_host_stops_renewing(sim):
    """A Board that queues a move and then never polls: within move_lease_ms of board time the move ends (lease
    expired) and the robot is at rest after its braking; the host learns the end at its next poll."""
    with Board(sim.url, clock=sim.clock) as b:
        b.activate()
        lease = b.get_param("move_lease_ms") / 1000.0
        m = b.move_straight(2.0, 0.3, 0.5)
        t_sent = sim.truth()["t"]
        wait_until(lambda: sim.truth()["v"] > 0.05, 10.0, sim.clock, what="the move started")
        b.moves.poll()                  # one renewal, which also reports the progress: under way, far from done
        assert 0.0 < m.progress < 0.5, m.progress
        t_sent = sim.truth()["t"]
        # nothing more from the host: the board's time runs, the lease with it
        wait_until(lambda: abs(sim.truth()["v"]) < 0.002 and sim.truth()["t"] - t_sent > 0.2, 10.0, sim.clock,
                   what="the robot at rest")
        rest_at = sim.truth()["t"] - t_sent
        b.moves.poll()
        print(f"queued, no lease renewed: at rest {rest_at:.2f} s of board time after the MOVE (lease {lease} s); "
              f"the move ended {m.reason}")
        assert m.reason == "lease expired"
        v_max = 0.3
        brake = v_max / (b.get_param("max_accel") * b.get_param("wheel_radius"))
        assert lease <= rest_at <= lease + brake + 0.1
        b.deactivate()


def test_set_vel_cancels_the_moves_and_the_handles_say_so(sim):
    with Board(sim.url, clock=sim.clock) as b:
        b.activate()
        ms = [b.move_straight(0.5, 0.2, 0.5), b.move_turn(1.0), b.move_straight(-0.5), b.move_turn(-1.0),
              b.move_straight(0.1)]
        assert len(b.moves.pending) == 1 and b.moves.active == 4       # the fifth waits on the host for a slot
        b.write(0.0, 0.0)
        b.read()
        assert [m.reason for m in ms] == ["cancelled"] * 5 and not b.moves.busy
        b.deactivate()


def test_drive_script_runs_as_board_moves_and_a_killed_host_stops_the_robot(sim, tmp_path):
    """`drive --script square --record` as board moves closes the square and records each move's states on
    /viperdrive/moves; then `move straight` killed (SIGKILL) while it drives: the board stops the robot braked
    within its lease plus the braking time, in board time."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    t0 = sim.truth()
    out = tmp_path / "square.mcap"
    r = run_cli("drive", "--script", "square", "--side", "0.4", "--port", sim.url, "--record", out, timeout=180)
    t1 = sim.truth()
    assert r.returncode == 0, r.stderr
    assert "8 segments as board moves" in r.stderr + r.stdout and "move 8/8 arrived" in r.stdout
    states: dict[str, list[str]] = {}
    keys: dict[str, set[str]] = {}
    with open(out, "rb") as f:
        for rec in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(
                topics=["/viperdrive/moves"]):
            st = rec.decoded_message.status[0]
            values = {kv.key: kv.value for kv in st.values}
            states.setdefault(st.name, []).append(values["state"])
            keys[values["kind"]] = set(values)
    # each record names its quantities with their units, the ones its kind has
    assert keys["straight"] == {"id", "kind", "distance_m", "speed_m_s", "accel_m_s2", "timeout_s", "state"}, keys
    assert keys["turn"] == {"id", "kind", "angle_rad", "rate_rad_s", "accel_rad_s2", "timeout_s", "state"}, keys
    assert len(states) == 8 and all(v[-1] == "arrived" and "on the board" in v for v in states.values()), states
    assert sum("waiting for a slot" in v for v in states.values()) == 4      # the board's queue holds four
    end = math.hypot(t1["x"] - t0["x"], t1["y"] - t0["y"])
    print(f"square 0.4 m as board moves: ends {end * 1000:.1f} mm from its start in ground truth")
    assert end < 0.03
    p = subprocess.Popen([VIPERDRIVE, "move", "straight", "3", "--speed", "0.3", "--port", sim.url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        until_energized(sim, p)
        wait_until(lambda: sim.truth()["v"] > 0.25, 30.0, sim.clock, what="cruising")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        t_kill = sim.truth()["t"]
        wait_until(lambda: abs(sim.truth()["v"]) < 0.002, 10.0, sim.clock, what="the robot at rest")
        rest = sim.truth()["t"] - t_kill
    finally:
        if p.poll() is None:
            p.kill()
    with Board(sim.url, clock=sim.clock) as b:
        bound = b.get_param("move_lease_ms") / 1000.0 + 0.3 / (b.get_param("max_accel") * b.get_param("wheel_radius"))
    print(f"host killed at 0.3 m/s: at rest {rest:.3f} s of board time later (lease + braking: {bound:.3f} s)")
    assert rest <= bound + 0.05


def test_calibrate_gyro_goes_on_after_a_host_stall_that_outlasted_the_lease(sim):
    """`calibrate gyro` turns by board moves; its host stopped (SIGSTOP, not holding the board's time) for longer
    than the lease mid-turn: the board brakes, and the calibration turns the rest once the robot is at rest, so
    the heading still reads the whole turn at rest."""
    env = dict(os.environ, VIPERDRIVE_LOCKSTEP="0")
    env.pop("VIPERDRIVE_PORT", None)
    p = subprocess.Popen([VIPERDRIVE, "calibrate", "gyro", "--turns", "1", "--rate", "2", "--measured", "0,0",
                          "--no-write", "--port", sim.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True, env=env)
    try:
        wait_until(lambda: abs(sim.truth()["omega"]) > 1.5, 60.0, sim.clock, what="turning")
        p.send_signal(signal.SIGSTOP)
        t0 = sim.truth()["t"]
        wait_until(lambda: sim.truth()["t"] - t0 > 0.8, 10.0, sim.clock, what="0.8 s of board time")
        p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    print(err[-500:], out[-800:])
    assert p.returncode == 0, err
    assert "stalled for over 0.5 s and the board stopped the turn" in err
    read = [float(x) for x in re.findall(r"the gyro heading read ([+-][\d.]+) deg at rest", out)]
    assert len(read) == 2 and abs(read[0] - 360.0) < 0.5 and abs(read[1] + 360.0) < 0.5, read
