# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""How a Board stops: braked, then disabled (deactivate()). The board's own acceleration ramp brings the wheels to
rest under zero commands, so a robot stopped at speed (Ctrl-C, an error, a lost link) is braked along its path
instead of coasting or skidding on locked wheels; only then are its outputs cut. Bounded in the board's time by its
deadman delay plus its ramp from the top speed plus a margin (braking_bound()), then it disables anyway.

Braking is a part of Board (its base class), above BoardServices (it reads the board's ramp through get_param).
"""
from __future__ import annotations

import time
from typing import Any

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from ..errors import LinkLost, NoReplyError, UserError
from ..robot.config import RobotConfig
from ..timebase import Clock
from .link import NackError
from .records import BoardState
from .services import HOLD_MARGIN_S, BoardServices

REST_SPEED = 0.25           # rad/s: both wheels below this (the board's estimate, twice in a row) are at rest
BRAKE_MARGIN_S = 0.25       # on top of the board's braking time max_wheel_speed / max_accel (its parameters,
#                             rad/s and rad/s^2): filter lag, round trips


class Braking(BoardServices):
    """deactivate() and what it needs (see the module's docstring)."""
    # the Board's state this reads and updates (viperdrive.board.board.Board sets them)
    config: RobotConfig
    moves: Any
    last_stop: dict | None

    @property
    def clock(self) -> Clock:
        raise NotImplementedError       # Board's

    def _accept_state(self, payload: bytes, now: float, check: bool = True) -> BoardState:
        raise NotImplementedError       # Board's

    def deactivate(self) -> None:
        """Stop braked, then disable: command zero and let the board's acceleration ramp bring the wheels to rest
        (both STATE velocities below REST_SPEED twice in a row) before cutting the outputs, so a robot stopped at
        speed (Ctrl-C, an error, a lost link) is braked along its path instead of coasting or skidding on locked
        wheels. Bounded (braking_bound()): the board's deadman_ms + max_wheel_speed / max_accel + BRAKE_MARGIN_S,
        then disable anyway. While replies are missing (a failing link) it keeps commanding zero until the bound:
        the board's own deadman ramps the same way once SET_VELs stop reaching it, and a disable that got through
        before that ramp is done would cut it short. An exception
        during the stop (a second Ctrl-C) disables at once. Raises LinkLost if the board never acknowledged the
        disable. last_stop tells how it went."""
        problems = []
        self.last_stop = None
        self.moves.forget()         # the brake's SET_VEL ends every move on the board
        try:
            if self.link is not None and self.link.is_open:
                try:
                    self.last_stop = self._brake()
                except UserError as e:
                    problems.append(str(e))
            else:
                problems.append("the port is closed")
        finally:
            # also on KeyboardInterrupt/SystemExit inside the stop: the outputs go off now
            if self.link is not None and self.link.is_open:
                try:
                    self._io.request(P.pack_enable(False), P.ENABLE_ACK)
                    problems = []   # disabled: that is what matters
                except UserError as e:
                    problems.append(str(e))
            self._not_commanding()
            self.active = False
            self._pending = None
        if problems:
            raise LinkLost("could not confirm the board is disabled: " + "; ".join(problems)
                           + " (its deadman stops the motors on its own)")

    def braking_bound(self) -> float:
        """Seconds deactivate() waits at most for the wheels to come to rest: the board's deadman delay (when the
        host's zero commands do not reach it, its deadman starts the ramp that late) plus its ramp from the top
        speed, plus BRAKE_MARGIN_S."""
        top, acc, deadman = self._ramp if self._ramp is not None else table_ramp()
        return deadman + top / acc + BRAKE_MARGIN_S

    def _read_ramp(self) -> None:
        # the board's own top speed, ramp and deadman, for the braking bound (the table's defaults if it does not
        # answer)
        try:
            self._ramp = (float(self.get_param("max_wheel_speed")), float(self.get_param("max_accel")),
                          self.get_param("deadman_ms") / 1000.0)
            self._hold_s = max(self._ramp[2] - HOLD_MARGIN_S, HOLD_MARGIN_S)
        except UserError:
            self._ramp = None

    def _brake(self) -> dict:
        """SET_VEL 0 once per loop period until both wheels are at rest or the bound passed (the board's time).
        -> last_stop."""
        clock = self.clock
        t0 = clock.now()
        bound = self.braking_bound()
        period = min(self.config.period, 0.02)
        speed0 = None
        rest = 0
        replies = 0
        while True:
            try:
                payload = self._io.request(P.pack_set_vel(0, 0), P.STATE)
                clock.commanding(self._hold_s)
            except NoReplyError:
                payload = None      # keep commanding zero: the board brakes on its deadman anyway
            except NackError:
                payload = None
            now = clock.now()
            if payload is not None:
                replies += 1
                state = self._accept_state(payload, time.monotonic(), check=False)
                fastest = max(abs(state.velocity[0]), abs(state.velocity[1]))
                if speed0 is None:
                    speed0 = fastest
                if not state.status & P.ST_ENABLED:
                    return self._stopped(t0, now, speed0, replies, "the board had turned its outputs off")
                rest = rest + 1 if fastest < REST_SPEED else 0
                if rest >= 2:
                    return self._stopped(t0, now, speed0, replies, "at rest")
            else:
                rest = 0
            if now - t0 >= bound:
                return self._stopped(t0, now, speed0, replies, f"not confirmed at rest within {bound:.2f} s")
            clock.sleep(period - (clock.now() - now))

    def _stopped(self, t0: float, now: float, speed0: float | None, replies: int, how: str) -> dict:
        self._pending = None
        return {"seconds": now - t0, "braked": how == "at rest", "how": how, "speed_rad_s": speed0,
                "replies": replies}


def table_ramp() -> tuple[float, float, float]:
    d = PARAMS.defaults()
    return float(d["max_wheel_speed"]), float(d["max_accel"]), d["deadman_ms"] / 1000.0
