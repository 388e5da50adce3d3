# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Moves on the board (docs/host.md, "Moves"; the board's side: docs/firmware.md, "Moves"): a straight line, a turn
in place or an arc, planned and run by the board in its control period, with its own heading (the gyro where it
has one). The host queues them and holds a lease: the board stops, braked, when no MOVE or MOVE_LEASE came for
move_lease_ms (0.5 s by default), so a host that stalls for less changes nothing and a host that dies stops the
robot.

    with open_board("sim") as b:        # viperdrive.ports
        b.activate()
        b.move_straight(0.5)
        turn = b.move_turn(math.radians(90))
        print(turn.wait())          # "arrived": each wait() renews the lease while it waits

MoveQueue keeps the moves the board has no slot for yet (it holds MOVE_SLOTS) and sends each as one frees, so a
path of any length can be queued at once and runs without a stop between moves. A SET_VEL (Board.write) cancels
every move on the board; while moves drive, a loop watches with Board.observe() (GET_STATE) instead.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from viperdrive.shared import protocol as P

from ..errors import BadValue, BoardFault
from ..robot.config import RobotConfig
from ..timebase import Clock
from .link import NackError


class MoveBoard(Protocol):
    """What the move queue needs of a Board (board.Board)."""
    config: RobotConfig

    def link_request(self, frame: bytes, reply_cmd: int) -> bytes: ...

    def get_param(self, name: str) -> float: ...

    @property
    def clock(self) -> Clock: ...


MOVE_SLOTS = 4                  # the board's queue (mcu/control.py MOVE_SLOTS)
LEASE_SHARE = 0.2               # renew at this share of the lease: 100 ms of the default 500 ms
SPEED_SHARE = 0.5               # default speed and acceleration: this share of the robot file's rim limits


SPLIT_SHARE = 0.99              # a piece of a split path is at most this share of one move's range (rounding)
MOVE_COUNTS_MAX = 131072        # one move's change on its primary axis (wheel travel) is below this many counts: the
#                                 board's engine range (mcu/moves.py DELTA_MAX in Q12; tests/test_moves.py checks)


def move_pieces(kind: int, a: float, b: float, m_per_count: float,
                half_separation_m: float) -> list[tuple[float, float]]:
    """One path (a MOVE's kind, a, b: protocol.MOVE_*) as the moves the board can run: the board runs a move whose
    primary axis (wheel travel: the distance, or the heading change times half the wheel separation) changes by
    less than MOVE_COUNTS_MAX counts (6.5 m at the default wheel), so a longer one is cut into equal
    pieces run back to back (the queue chains them without a stop). BadValue for a path of no length, which the
    board refuses. m_per_count: wheel travel per encoder count (2 pi r / cpr)."""
    if kind == P.MOVE_STRAIGHT:
        length = abs(a)
    elif kind == P.MOVE_TURN:
        length = abs(a) * half_separation_m
    else:
        length = max(abs(a * b), abs(b) * half_separation_m)
    if not length > 0:
        raise BadValue(f"a {P.MOVE_KIND_NAMES.get(kind, 'move')} of no length: the board runs no such move")
    limit = SPLIT_SHARE * MOVE_COUNTS_MAX * m_per_count
    n = max(1, math.ceil(length / limit))
    if kind == P.MOVE_ARC:
        return [(a, b / n)] * n
    return [(a / n, b)] * n


def one_move_range_m(m_per_count: float) -> float:
    """The longest wheel travel one board move covers, m (MOVE_COUNTS_MAX counts)."""
    return MOVE_COUNTS_MAX * m_per_count


@dataclass
class Move:
    """One move: its board id, what it is, and how it ended (None while queued or running). Every quantity is named
    with its unit; the ones a kind has not are None (a turn has no distance_m, a line no angle_rad)."""
    id: int
    kind: int                   # protocol.MOVE_*
    timeout_s: float            # board seconds; 0: twice the planned time + 1 s
    queue: MoveQueue
    distance_m: float | None = None     # a line: signed (negative: backwards)
    angle_rad: float | None = None      # a turn or an arc: the heading change (REP-103: positive turns left)
    radius_m: float | None = None       # an arc: signed (negative: backwards)
    speed_m_s: float | None = None      # a line or an arc: along the path
    accel_m_s2: float | None = None     # a line or an arc: along the path
    rate_rad_s: float | None = None     # a turn
    accel_rad_s2: float | None = None   # a turn
    end: int | None = None      # protocol.MOVE_END_*
    sent: bool = False
    progress: float = 0.0       # share of its length done, as the board last said (0 before it starts; 1 at its end)

    @property
    def done(self) -> bool:
        return self.end is not None

    @property
    def reason(self) -> str | None:
        """"arrived", "stalled", "timed out", "cancelled", "faulted", "lease expired"; None while it runs."""
        return None if self.end is None else P.MOVE_END_NAMES.get(self.end, f"unknown ({self.end})")

    @property
    def arrived(self) -> bool:
        return self.end == P.MOVE_END_ARRIVED

    def frame_fields(self) -> tuple[float, float, float, float]:
        """(a, b, speed, accel) as the MOVE frame carries them (protocol.pack_move), whose units are the kind's: a
        line (distance_m, 0, m/s, m/s^2), a turn (angle_rad, 0, rad/s, rad/s^2), an arc (radius_m, angle_rad, m/s,
        m/s^2)."""
        if self.kind == P.MOVE_TURN:
            return _f(self.angle_rad), 0.0, _f(self.rate_rad_s), _f(self.accel_rad_s2)
        if self.kind == P.MOVE_ARC:
            return _f(self.radius_m), _f(self.angle_rad), _f(self.speed_m_s), _f(self.accel_m_s2)
        return _f(self.distance_m), 0.0, _f(self.speed_m_s), _f(self.accel_m_s2)

    def quantities(self) -> list[tuple[str, float]]:
        """(name, value) of the quantities this kind has, in the order a person reads them (the recording's
        fields)."""
        names = {P.MOVE_STRAIGHT: ("distance_m", "speed_m_s", "accel_m_s2"),
                 P.MOVE_TURN: ("angle_rad", "rate_rad_s", "accel_rad_s2"),
                 P.MOVE_ARC: ("radius_m", "angle_rad", "speed_m_s", "accel_m_s2")}.get(self.kind, ())
        return [(n, getattr(self, n)) for n in names] + [("timeout_s", self.timeout_s)]

    def describe(self) -> str:
        if self.kind == P.MOVE_STRAIGHT:
            return f"straight {_f(self.distance_m):+.3f} m at {_f(self.speed_m_s):.2f} m/s"
        if self.kind == P.MOVE_TURN:
            return f"turn {math.degrees(_f(self.angle_rad)):+.1f} deg at {_f(self.rate_rad_s):.2f} rad/s"
        return (f"arc r={_f(self.radius_m):+.3f} m through {math.degrees(_f(self.angle_rad)):+.1f} deg at "
                f"{_f(self.speed_m_s):.2f} m/s")

    def wait(self, timeout_s: float | None = None) -> str:
        """Until the move has ended (renewing the lease meanwhile); its reason. TimeoutError after `timeout_s` board
        seconds (the move keeps running: cancel it, or wait again)."""
        self.queue.wait(lambda: self.done, timeout_s)
        return self.reason or ""


def _f(x: float | None) -> float:
    return 0.0 if x is None else x


def _finite(*named: tuple[str, float]) -> None:
    for name, x in named:
        if not math.isfinite(x):
            raise BadValue(f"a move's {name} must be a finite number, got {x}")


class MoveQueue:
    """The host's side of the board's move queue (Board.moves)."""

    def __init__(self, board: MoveBoard):
        self.board = board
        self.pending: deque[Move] = deque()         # not sent yet (the board's slots were full)
        self.running: dict[int, Move] = {}          # sent, not ended
        self.ended: list[Move] = []                 # in the order the board ended them (the last 100)
        # (move, state) as they happen: "waiting for a slot", "on the board", its end reason (take_events(); the
        # recording drains it, the oldest go when nobody does)
        self.events: deque[tuple[Move, str]] = deque(maxlen=1000)
        self.active = 0                             # moves on the board not ended, as it last said
        self._next_id = 1
        self._n_ends: int | None = None             # the board's end counter at the last report
        self._last_poll = -math.inf
        self.lease_s = 0.5

    # ---- queueing ----

    def straight(self, distance_m: float, speed_m_s: float | None = None, accel_m_s2: float | None = None,
                 timeout_s: float = 0.0) -> Move:
        """Queue a line of distance_m (Board.move_straight)."""
        _finite(("distance_m", distance_m))
        return self._add(P.MOVE_STRAIGHT, {"distance_m": distance_m}, speed_m_s, accel_m_s2, timeout_s)

    def turn(self, angle_rad: float, rate_rad_s: float | None = None, accel_rad_s2: float | None = None,
             timeout_s: float = 0.0) -> Move:
        """Queue a turn in place by angle_rad (Board.move_turn)."""
        _finite(("angle_rad", angle_rad))
        return self._add(P.MOVE_TURN, {"angle_rad": angle_rad}, rate_rad_s, accel_rad_s2, timeout_s)

    def arc(self, radius_m: float, angle_rad: float, speed_m_s: float | None = None,
            accel_m_s2: float | None = None, timeout_s: float = 0.0) -> Move:
        """Queue an arc of radius_m through angle_rad (Board.move_arc)."""
        _finite(("radius_m", radius_m), ("angle_rad", angle_rad))
        return self._add(P.MOVE_ARC, {"radius_m": radius_m, "angle_rad": angle_rad}, speed_m_s, accel_m_s2,
                         timeout_s)

    def piece(self, kind: int, a: float, b: float) -> Move:
        """Queue one piece of move_pieces() (the MOVE frame's a, b for `kind`) at the default speed."""
        if kind == P.MOVE_TURN:
            return self.turn(a)
        if kind == P.MOVE_ARC:
            return self.arc(a, b)
        return self.straight(a)

    def _add(self, kind: int, path: dict, speed: float | None, accel: float | None, timeout_s: float) -> Move:
        # speed and accel in the kind's units: m/s and m/s^2 along a line or an arc, rad/s and rad/s^2 for a turn
        c = self.board.config
        turn = kind == P.MOVE_TURN
        half = 0.5 * c.effective_separation
        rim_v, rim_a = (c.max_rim_speed / half, c.max_rim_acceleration / half) if turn else \
            (c.max_rim_speed, c.max_rim_acceleration)
        speed = SPEED_SHARE * rim_v if speed is None else speed
        accel = SPEED_SHARE * rim_a if accel is None else accel
        sname, aname = ("rate_rad_s", "accel_rad_s2") if turn else ("speed_m_s", "accel_m_s2")
        _finite((sname, speed), (aname, accel), ("timeout_s", timeout_s))
        if not (speed > 0 and accel > 0):
            raise BadValue(f"a move's {sname} and {aname} must be > 0, got {speed} and {accel}")
        speed, accel = self._limited(turn, speed, accel, rim_v, rim_a)
        if timeout_s < 0:
            raise BadValue(f"a move's timeout_s must be >= 0 (0: twice the planned time + 1 s), got {timeout_s}")
        if self._n_ends is None:
            self.lease_s = self.board.get_param("move_lease_ms") / 1000.0
        m = Move(self._take_id(), kind, timeout_s, self)
        for name, value in (*path.items(), (sname, speed), (aname, accel)):
            setattr(m, name, value)
        self.pending.append(m)
        self.pump()
        if not m.sent and not m.done:
            self.events.append((m, "waiting for a slot"))
        return m

    def _limited(self, turn: bool, speed: float, accel: float, rim_v: float, rim_a: float) -> tuple[float, float]:
        """speed and accel within the robot file's limits, as the host's drive controller holds a twist to them:
        the rim speed and acceleration, and linear.x (a line, an arc) or angular.z (a turn) max_velocity /
        max_acceleration / max_deceleration. The board applies its own (max_wheel_speed, max_accel) on top."""
        axis = self.board.config.angular if turn else self.board.config.linear
        speed = min(speed, rim_v)
        accel = min(accel, rim_a)
        if axis.max_velocity is not None:
            speed = min(speed, axis.max_velocity)
        for lim in (axis.max_acceleration, axis.deceleration):
            if lim is not None:
                accel = min(accel, lim)
        return speed, accel

    def _take_id(self) -> int:
        i = self._next_id
        self._next_id = i % 0xFFFF + 1          # 1..65535: 0 means "none" on the wire
        return i

    def pump(self) -> None:
        """Send pending moves while the board has free slots."""
        while self.pending and self.active < MOVE_SLOTS:
            m = self.pending[0]
            try:
                payload = self.board.link_request(P.pack_move(m.id, m.kind, *m.frame_fields(), m.timeout_s),
                                                  P.MOVE_STATE)
            except NackError as e:
                self.pending.popleft()
                m.end = P.MOVE_END_CANCELLED
                self._cancel_pending()
                if e.code == P.NACK_OUT_OF_RANGE:
                    raise BadValue(f"the board refused {m.describe()}: it cannot run as asked (no length, or beyond "
                                   f"its ranges: docs/firmware.md, \"Moves\")") from None
                raise BoardFault(f"the board refused {m.describe()}: its outputs are off or a fault is latched "
                                 f"(viperdrive info shows which)") from None
            self.pending.popleft()
            m.sent = True
            self.running[m.id] = m
            self.events.append((m, "on the board"))
            self._take(payload)

    # ---- the lease and the reports ----

    def poll(self, cancel: bool = False) -> None:
        """MOVE_LEASE: renew the lease (or cancel every move), learn the ends, send what waits for a slot."""
        self._take(self.board.link_request(P.pack_move_lease(cancel), P.MOVE_STATE))
        if cancel:
            self._cancel_pending()
        self.pump()

    def keep(self) -> None:
        """poll() when a share of the lease has passed since the last one (call it every loop cycle)."""
        now = self.board.clock.now()
        if self.busy and now - self._last_poll >= LEASE_SHARE * self.lease_s:
            self.poll()

    @property
    def busy(self) -> bool:
        """Moves are queued or running (on the board or waiting for a slot)."""
        return bool(self.pending or self.running)

    def cancel(self) -> None:
        """End every move, braked (the board's acceleration limit). Nothing is left waiting on the host."""
        if self.running or self.active:
            self.poll(cancel=True)
        self._cancel_pending()

    def _cancel_pending(self) -> None:
        while self.pending:
            m = self.pending.popleft()
            m.end = P.MOVE_END_CANCELLED
            self._ended(m)

    def forget(self) -> None:
        """What the board had is gone (cancelled): a SET_VEL or a disable ended it, or the board restarted."""
        for m in list(self.running.values()):
            m.end = P.MOVE_END_CANCELLED
            self._ended(m)
        self.running.clear()
        self._cancel_pending()
        self.active = 0
        self._n_ends = None

    def _take(self, payload: bytes) -> None:
        self._last_poll = self.board.clock.now()
        running, active, n_ends, ends, progress = P.unpack_move_state(payload)
        self.active = active
        m = self.running.get(running)
        if m is not None:
            m.progress = progress / 1000.0
        # the first report only sets the baseline: the ends it lists belong to earlier sessions (whose ids this
        # session may be reusing), never to a move sent with it
        new = 0 if self._n_ends is None else min((n_ends - self._n_ends) & 0xFFFF, len(ends))
        self._n_ends = n_ends
        for mid, why in ends[len(ends) - new:]:
            m = self.running.pop(mid, None)
            if m is not None:
                m.end = why
                if why == P.MOVE_END_ARRIVED:
                    m.progress = 1.0
                self._ended(m)
        if active == 0 and self.running:
            # the board holds none of them any more, and never said how they ended (it restarted)
            for m in list(self.running.values()):
                m.end = P.MOVE_END_CANCELLED
                self._ended(m)
            self.running.clear()

    def take_events(self) -> list[tuple[Move, str]]:
        """The moves' changes of state since the last call, in order."""
        out = list(self.events)
        self.events.clear()
        return out

    def _ended(self, m: Move) -> None:
        self.events.append((m, m.reason or ""))
        self.ended.append(m)
        del self.ended[:-100]

    def wait(self, cond, timeout_s: float | None) -> None:
        """Poll (lease renewed) until cond() holds; TimeoutError after timeout_s board seconds."""
        clock = self.board.clock
        t_end = None if timeout_s is None else clock.now() + timeout_s
        while not cond():
            self.poll()
            if cond():
                break
            if t_end is not None and clock.now() >= t_end:
                raise TimeoutError(f"moves still running after {timeout_s:g} s")
            clock.sleep(min(LEASE_SHARE * self.lease_s, 0.02))

    def wait_all(self, timeout_s: float | None = None) -> list[Move]:
        """Until every queued move has ended; the moves that ended meanwhile."""
        start = len(self.ended)
        self.wait(lambda: not self.busy, timeout_s)
        return self.ended[start:]
