# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""How a command takes the signals that ask it to stop: one policy for every command.

STOP_SIGNALS are Ctrl-C (SIGINT), SIGTERM (a service manager, `kill`), SIGHUP (the terminal window closed, the SSH
session dropped) and SIGQUIT (Ctrl-\\). Each ends a command the same way: as a KeyboardInterrupt (an `Interrupted`
naming the signal), so its clean-up runs (the board braked and disabled, changed parameters put back) and it exits
with EXIT_INTERRUPTED. SIGHUP means the terminal is gone: writing to it would raise EIO in the middle of the
clean-up, so the standard streams that were that terminal are pointed at /dev/null first (a stream that goes to a
file or a pipe keeps its output). deferred_signals holds every stop signal off while a block must finish (putting
parameters back must not be cut short by a second Ctrl-C).

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys

STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))

REASONS = {"SIGINT": "Ctrl-C", "SIGHUP": "SIGHUP: the terminal closed"}


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def reason(signum: int) -> str:
    """A stop signal in a few words: "Ctrl-C", "SIGTERM", "SIGHUP: the terminal closed", "SIGQUIT"."""
    name = signal_name(signum)
    return REASONS.get(name, name)


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where the command was: it takes the Ctrl-C way out. signum: which one; str() is
    "interrupted (SIGTERM)"."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted ({reason(signum)})")
        self.signum = signum


def detach_from_hung_terminal() -> None:
    """After SIGHUP: stdin/stdout/stderr that are a terminal now point at /dev/null (the terminal is gone; a write
    to it would fail with EIO in the middle of the clean-up). Files and pipes are left alone."""
    for stream in (sys.stdout, sys.stderr, sys.stdin):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        try:
            if not os.isatty(fd):
                continue
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, fd)
            os.close(null)
        except OSError:
            continue


def on_stop_signal(signum: int) -> None:
    """What every stop signal does first, whoever handles it."""
    if signum == getattr(signal, "SIGHUP", None):
        detach_from_hung_terminal()


class deferred_signals:
    """Every stop signal waits while the block runs (putting a board's parameters back must not be cut short by a
    second Ctrl-C); one that came is raised as Interrupted when the block ends, unless the block is already on its
    way out of an exception (which then stays the error)."""

    SIGNALS = STOP_SIGNALS

    def __init__(self):
        self.pending: int | None = None
        self._old: dict = {}

    def _handler(self, signum, frame):
        on_stop_signal(signum)
        self.pending = signum

    def __enter__(self):
        try:
            self._old = {s: signal.signal(s, self._handler) for s in self.SIGNALS}
        except ValueError:      # not the main thread: nothing to defer
            self._old = {}
        return self

    def __exit__(self, exc_type, exc, tb):
        for s, h in self._old.items():
            signal.signal(s, h)
        if self.pending is not None and exc_type is None:
            raise Interrupted(self.pending)
        return False


@contextlib.contextmanager
def handled_signals(handler):
    """Every stop signal calls handler(signum) (after on_stop_signal) while the block runs; the previous handlers
    come back after it. For a command that stops itself (the ROS 2 bridge's loop) instead of taking an exception."""
    def call(signum, frame):
        on_stop_signal(signum)
        handler(signum)
    try:
        old = {s: signal.signal(s, call) for s in STOP_SIGNALS}
    except ValueError:      # not the main thread
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def stop_signals_as_interrupt():
    """Every stop signal takes the same way out as Ctrl-C (Interrupted, a KeyboardInterrupt): the board gets
    disabled and changed parameters put back."""
    def raise_interrupt(signum):
        raise Interrupted(signum)
    with handled_signals(raise_interrupt):
        yield
