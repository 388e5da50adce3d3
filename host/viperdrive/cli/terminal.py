# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The terminal side of the commands: progress bars on stderr (Progress), single keystrokes from a terminal in
cbreak mode (TerminalKeys) and a block of lines redrawn in place (LiveView) for the live commands (drive,
monitor). On a pipe or in a CI log each prints plain lines instead.

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import os
import select
import sys
import time


class Progress:
    """A progress bar on stderr. On a terminal it redraws one line (at most 10 times a second); elsewhere (a pipe, a
    CI log) it prints plain lines, one per tenth of the way, so logs stay readable. quiet: nothing at all.
    total None: not known yet (update(done, total=...) gives it once it is); until then a terminal shows the count
    and a log only the closing line."""

    def __init__(self, total: float | None, label: str, quiet: bool = False, stream=None, unit: str = "",
                 width: int = 30):
        self.total = None if total is None else max(float(total), 1e-12)
        self.label = label
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.unit = unit
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0.0
        self._last_draw = 0.0
        self._last_tenth = -1
        self._closed = False
        self._t0 = time.monotonic()

    def _fmt(self, v: float) -> str:
        if self.unit in ("files", "messages"):
            return f"{int(v)}"
        return f"{v:.1f}" if self.total is not None and self.total < 100 else f"{v:.0f}"

    def update(self, done: float, note: str = "", total: float | None = None) -> None:
        if self.quiet or self._closed:
            return
        if total is not None:
            self.total = max(float(total), 1e-12)
        now = time.monotonic()
        if self.total is None:
            self.done = max(done, 0.0)
            if self.tty and now - self._last_draw >= 0.1:
                self._last_draw = now
                text = f"{self.label} {self._fmt(self.done)}{(' ' + self.unit) if self.unit else ''} {note}"
                self.stream.write("\r\x1b[2K" + text[:200])
                self.stream.flush()
            return
        self.done = min(max(done, 0.0), self.total)
        frac = self.done / self.total
        if self.tty:
            if now - self._last_draw < 0.1 and frac < 1.0:
                return
            self._last_draw = now
            filled = int(round(frac * self.width))
            bar = "#" * filled + "-" * (self.width - filled)
            text = (f"{self.label} [{bar}] {frac * 100:5.1f}% {self._fmt(self.done)}/{self._fmt(self.total)}"
                    f"{(' ' + self.unit) if self.unit else ''} {note}")
            self.stream.write("\r\x1b[2K" + text[:200])
            self.stream.flush()
        else:
            tenth = int(frac * 10)
            if tenth != self._last_tenth:
                self._last_tenth = tenth
                self.stream.write(f"{self.label}: {frac * 100:.0f}% ({self._fmt(self.done)}/{self._fmt(self.total)}"
                                  f"{(' ' + self.unit) if self.unit else ''}) {note}".rstrip() + "\n")
                self.stream.flush()

    def advance(self, n: float = 1.0, note: str = "") -> None:
        self.update(self.done + n, note)

    def close(self, note: str = "done") -> None:
        if self.quiet or self._closed:
            return
        self._closed = True
        took = time.monotonic() - self._t0
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self.stream.write(f"{self.label}: {note} ({took:.1f} s)\n")
        self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *rest):
        self.close("done" if exc_type is None else "stopped")


KEY_NAMES = {"\x1b[A": "up", "\x1b[B": "down", "\x1b[C": "right", "\x1b[D": "left",
             "\x1bOA": "up", "\x1bOB": "down", "\x1bOC": "right", "\x1bOD": "left"}


class TerminalKeys:
    """Single keystrokes from a terminal (cbreak mode: no Enter, no echo; Ctrl-C still interrupts). Works over SSH.
    read() -> ["up", "q", " ", ...], never blocks. Restores the terminal on exit."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stdin
        self.fd = self.stream.fileno()
        self.tty = os.isatty(self.fd)
        self._saved = None
        self._pending = ""

    def __enter__(self):
        if self.tty:
            import termios
            import tty
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            import termios
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def read(self) -> list[str]:
        data = ""
        while True:
            r, _, _ = select.select([self.fd], [], [], 0)
            if not r:
                break
            chunk = os.read(self.fd, 64)
            if not chunk:
                break
            data += chunk.decode("utf-8", "replace")
        s = self._pending + data
        self._pending = ""
        keys = []
        i = 0
        while i < len(s):
            if s[i] == "\x1b":
                seq = s[i:i + 3]
                if seq in KEY_NAMES:
                    keys.append(KEY_NAMES[seq])
                    i += 3
                    continue
                if len(seq) < 3 and i + len(seq) == len(s):
                    self._pending = seq     # an escape sequence split across reads
                    break
                keys.append("escape")
                i += 1
                continue
            keys.append(s[i])
            i += 1
        return keys


class LiveView:
    """Redraws a block of lines in place on a terminal (ANSI: cursor up, clear line), prints plain blocks at most
    once per `plain_every` seconds elsewhere."""

    def __init__(self, stream=None, plain_every: float = 1.0):
        self.stream = stream if stream is not None else sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.plain_every = plain_every
        self._lines = 0
        self._last_plain = -1e9

    def show(self, lines: list[str], force: bool = False) -> None:
        if self.tty:
            out = []
            if self._lines:
                out.append(f"\x1b[{self._lines}F")
            for ln in lines:
                out.append("\x1b[2K" + ln + "\n")
            for _ in range(self._lines - len(lines)):
                out.append("\x1b[2K\n")
            self._lines = max(len(lines), self._lines)
            self.stream.write("".join(out))
            self.stream.flush()
            return
        now = time.monotonic()
        if force or now - self._last_plain >= self.plain_every:
            self._last_plain = now
            self.stream.write("\n".join(lines) + "\n\n")
            self.stream.flush()
