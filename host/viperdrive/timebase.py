# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board time, for host code that waits on a board.

Every host wait that stands for a span of the board's time goes through a clock: a reply timeout, a loop period,
the miss budget, a braking bound, an experiment's length, a test waiting for the wheels to stop. A real board's
time is the host's own (HostClock, time.monotonic: it runs whatever the host does). A board that is a program keeps
its own time: the virtual board counts whole control periods and simply stops while the machine does not run it,
the emulated Pico counts its chip's cycles at about half real speed. Both publish their time in a clock file
(viperdrive.boardtime.clockfile.BoardTimeFile reads it), so a host waiting on them waits for the board, not for a wall
clock the board does not follow.

A clock has now() (board seconds, monotonic), sleep(seconds) (until that much board time has passed),
host_seconds(seconds) (the host seconds that span of board time takes now: a deadline for select()) and speed
(board seconds per host second, 1 for every real board). The Link hands a clock the events of its port
(attach/alive/detach), and the Board tells it when it commands the wheels (commanding), so that a board whose time
is a program's can follow its host and its host's loop (docs/virtual-board.md, "Lockstep with the host").

wait_until() is the one way to wait for a condition: until it holds, or until a deadline in board time passes.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    """What host code needs of a board's time (HostClock, boardtime.clockfile.BoardTimeFile)."""

    speed: float

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def host_seconds(self, seconds: float) -> float: ...

    def attach(self) -> None: ...

    def alive(self) -> None: ...

    def detach(self) -> None: ...

    def commanding(self, hold_s: float | None, source: str = "link") -> None: ...


class HostClock:
    """The host's monotonic clock: the time of every real board (its clock runs whether the host runs or not)."""

    speed = 1.0                 # board seconds per host second

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def host_seconds(self, seconds: float) -> float:
        return seconds

    # a real board's time does not follow its host: nothing to do with the port's events
    def attach(self) -> None:
        pass

    def alive(self) -> None:
        pass

    def detach(self) -> None:
        pass

    def commanding(self, hold_s: float | None, source: str = "link") -> None:
        pass


HOST_CLOCK = HostClock()


class WaitTimeout(TimeoutError):
    """wait_until gave up: the message names what it waited for, how long, and the last value it saw."""

    def __init__(self, message: str, last: object):
        super().__init__(message)
        self.last = last


def wait_until(condition: Callable[[], T], seconds: float, clock: Clock | None = None, poll: float = 0.005,
               what: str | None = None) -> T:
    """Call condition() until it returns something true, and return that; WaitTimeout (naming `what`, the board
    seconds waited and the last value seen) when `seconds` of the clock's time passed first. The deadline is
    board time: a board the machine does not run does not time out. Polls every `poll` board seconds; the
    condition is always called once more after the deadline, so a condition that became true while the waiter
    was not scheduled is not reported as a timeout."""
    clock = clock or HOST_CLOCK
    end = clock.now() + seconds
    while True:
        last = condition()
        if last:
            return last
        now = clock.now()
        if now >= end:
            last = condition()
            if last:
                return last
            name = what or getattr(condition, "__name__", "the condition")
            raise WaitTimeout(f"{name}: not true within {seconds:g} s of board time; last seen: {last!r}", last)
        clock.sleep(min(poll, end - now))


__all__ = ["Clock", "HostClock", "HOST_CLOCK", "WaitTimeout", "wait_until"]
