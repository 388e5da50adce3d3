# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Lockstep with the host's loop (docs/virtual-board.md, "Lockstep with the host"): while a Board commands the
wheels, a virtual board never runs past its deadman beyond the last SET_VEL, so a busy machine that runs the
host's lease thread but not, for a moment, the thread that commands (the flake of a dashboard behind twenty page
requests) never trips the board's deadman; a host that stops commanding on purpose still sees the deadman trip,
in board time, exactly where a real board trips it."""
from __future__ import annotations

import time

import pytest

from viperdrive.board import Board
from viperdrive.boardtime.clockfile import HOLD_RELEASE_S
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board

SPEED = 5.0             # rad/s, both wheels


def _drive(b: Board, clock, seconds: float) -> None:
    """Command SPEED every 20 ms of board time for `seconds` of it, reading each STATE."""
    end = clock.now() + seconds
    while clock.now() < end:
        b.write(SPEED, SPEED)
        b.read()
        clock.sleep(0.02)


def _driving(b: Board, clock, seconds: float) -> tuple[float, int]:
    """Activate, drive `seconds` of board time, send one more command: (the deadman in s, deadman trips so far)."""
    b.activate()
    deadman = b.get_param("deadman_ms") / 1000.0
    trips0 = b.diag()["deadman_trips"]
    _drive(b, clock, seconds)
    b.write(SPEED, SPEED)
    b.read()
    return deadman, trips0


def test_a_commanding_thread_that_does_not_run_for_a_while_holds_the_board_inside_its_deadman(sim):
    with Board(sim.url, clock=sim.clock) as b:
        deadman, trips0 = _driving(b, sim.clock, 0.5)
        t0 = sim.clock.now()
        time.sleep(0.4)             # this thread stalls 0.4 s of host time; the lease thread runs on meanwhile
        ran = sim.clock.now() - t0
        _drive(b, sim.clock, 0.2)
        trips = b.diag()["deadman_trips"] - trips0
        low = min(sim.truth()["w_left"], sim.truth()["w_right"])
        b.deactivate()
    print(f"the commanding thread stalled 0.4 s of host time: the board ran {ran * 1e3:.0f} ms of its time "
          f"(deadman {deadman * 1e3:.0f} ms), deadman trips {trips}, wheels at {low:.2f} rad/s after")
    assert ran < deadman            # without the hold: about 400 ms, and a trip
    assert trips == 0
    assert low > 0.95 * SPEED


def test_a_host_that_stops_commanding_on_purpose_still_sees_the_deadman_trip_in_board_time(sim):
    with Board(sim.url, clock=sim.clock) as b:
        deadman, trips0 = _driving(b, sim.clock, 1.0)
        t_cmd = sim.truth()["t"]
        host0 = time.monotonic()
        # no more commands, the board enabled: the hold lets the board go after HOLD_RELEASE_S of host time
        truth = wait_until(lambda: (t := sim.truth())["w_left"] < 0.9 * SPEED and t, 20.0, sim.clock,
                           what="the wheels slowing on the board's deadman")
        after = truth["t"] - t_cmd
        took = time.monotonic() - host0
        trips = b.diag()["deadman_trips"] - trips0
        b.deactivate()
    print(f"silent host: the wheels slowed {after * 1e3:.0f} ms of board time after the last command (deadman "
          f"{deadman * 1e3:.0f} ms), {took:.2f} s of host time (the hold lets go after {HOLD_RELEASE_S} s); "
          f"trips {trips}")
    assert deadman <= after <= deadman + 0.1
    assert trips == 1
