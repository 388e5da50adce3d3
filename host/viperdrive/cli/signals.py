# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""How a command takes Ctrl-C and SIGTERM: SIGTERM (a service manager, `kill`) ends it the way Ctrl-C does, so its
clean-up runs (board disabled, parameters put back); deferred_signals holds both off while a block must finish
(putting parameters back).

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import contextlib
import signal


class deferred_signals:
    """Ctrl-C and SIGTERM wait while the block runs (putting a board's parameters back must not be cut short by a
    second Ctrl-C); one that came is raised as KeyboardInterrupt when the block ends, unless the block is already
    on its way out of an exception (which then stays the error)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.pending = None
        self._old: dict = {}

    def _handler(self, signum, frame):
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
            raise KeyboardInterrupt
        return False


@contextlib.contextmanager
def sigterm_as_interrupt():
    """SIGTERM (a service manager, `kill`) takes the same way out as Ctrl-C: the board gets disabled."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:      # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
