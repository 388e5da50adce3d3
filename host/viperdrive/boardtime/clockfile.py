# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The clock file of a board that is a program (the virtual board, the emulated Pico): its time, published for the
host, and the host's grant, which keeps the board from running ahead of a host the machine does not run.

Layout (64 bytes, little-endian; sim/world.py and sim/pico/rig.mjs write the board's half):

    off  size  written by  what
     0     4   board       magic b"VDCK"
     4     4   board       layout version (1)
     8     8   board       board time, us
    16     8   board       the same again: a reader takes the time only when both copies agree (no torn read)
    24     4   board       link generation: +1 for every link client the board accepts
    28     4   board       1 while a link client is connected, else 0
    32    16   host        grant: link generation (u32), 0 (u32), board time in us (u64) the board may run to
    48    16   host        the same again: the board honours a grant only when both copies agree

The order of time and bytes: a board writes its time T only after every byte it sent by T is on the line (in the
host's socket), and the host reads the time before it reads the line. So a reply the board sent before the deadline
of a wait is always seen by that wait: a reply is never late only because one side was descheduled between the two.

The grant ("lockstep", docs/virtual-board.md "Board time"): while a link client is connected and the grant names
its generation, the board does not start a control period past the grant's time. The client's host renews it from
a thread as long as the host process runs (LEASE_AHEAD_S ahead of the board's time, every RENEW_S), so a host that
the machine stops for 150 ms does not find the board's deadman tripped by a pause that was not its own; a host that
dies closes its connection, which frees the board at once (the deadman is still the deadman). A client that never
writes a grant (a serial terminal, a third-party tool) runs the board in free time, as a real board.

The lease thread runs beside the host's loop, not in it: a process that runs its lease thread but not, for a
moment, the thread that sends the wheel commands (a busy machine schedules threads one by one; a burst of work
on other threads of the same interpreter holds its lock) would see the board's deadman tripped by a pause that is
not its code's. So while the host commands the wheels (commanding(hold_s) after every SET_VEL), the grant never
runs more than hold_s past the board time of the last command, hold_s inside the board's deadman: the board
waits for the host's next command. A host that stops commanding on purpose (a test of the deadman itself) is let
go after HOLD_RELEASE_S of host time with no command, and the deadman trips in board time as it would on a real
board, only later in wall time.

A host may follow a commander of its own with a deadman of its own: the dashboard drives from a page's commands
and stops the wheels when the page falls silent for 0.5 s of board time. Its hold has its own source name
(commanding(hold_s, source="page")), the grant honours the earliest of the holds in force, and each is let go
after HOLD_RELEASE_S of host time on its own: a page the machine did not run for a moment does not find the
dashboard's deadman run out, and a page that stops sending on purpose still does, in board time.
"""
from __future__ import annotations

import os
import struct
import threading
import time
from pathlib import Path

MAGIC = b"VDCK"
VERSION = 1
SIZE = 64
OFF_TIME = 8
OFF_LINK = 24
OFF_GRANT = 32
LEASE_AHEAD_S = 0.03        # how far the board may run past the host's last renewal (well inside the 100 ms deadman)
RENEW_S = 0.005             # how often the host renews while it runs
HOLD_RELEASE_S = 1.0        # host seconds with no wheel command after which a commanding hold lets the board go
STALL_CHECK_S = 1.0         # board time still for this long (host s): is the board process alive?
STALL_GIVE_UP_S = 30.0      # ...still for this long and alive: treat it as hung (waits run on the host's clock)


def create(path: str | os.PathLike) -> Path:
    """An empty clock file (board time 0, no client, no grant) for a board about to start."""
    p = Path(path)
    p.write_bytes(MAGIC + struct.pack("<I", VERSION) + bytes(SIZE - 8))
    return p


def read_time_us(fd: int) -> int | None:
    """The board time in the file (us), None while it is not a clock file yet or a read saw a write half done."""
    for _ in range(4):
        data = os.pread(fd, 24, 0)
        if len(data) < 24 or data[:4] != MAGIC:
            return None
        a, b = struct.unpack_from("<QQ", data, OFF_TIME)
        if a == b:
            return a
    return None


def read_link(fd: int) -> tuple[int, bool]:
    """(link generation, a client connected)."""
    gen, connected = struct.unpack("<II", os.pread(fd, 8, OFF_LINK))
    return gen, bool(connected)


def write_grant(fd: int, generation: int, until_us: int) -> None:
    one = struct.pack("<IIQ", generation & 0xFFFFFFFF, 0, max(0, int(until_us)))
    os.pwrite(fd, one + one, OFF_GRANT)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return True             # unknown: assume it is (the stall limit still ends a wait)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


SPEED_MAX = 20.0        # the fastest a virtual board runs (sim/vboard.py SPEED_MAX)


class BoardTimeFile:
    """A board's clock read from its clock file (timebase.Clock): now() is the board's time in seconds; sleep()
    waits until that much board time has passed (a board the machine does not run makes it wait longer, never
    time out early). When the board process is gone (board_pid no longer exists) or its time stood still for
    STALL_GIVE_UP_S, the clock goes on at the host's rate from the last board time, so a wait on a dead board
    ends like a wait on a real board that stopped answering.

    attach()/alive()/detach() are the Link's port events: after the first frame from the board on an open port,
    a thread renews the grant (lockstep, above) until the port closes. lockstep=False never writes one."""

    def __init__(self, path: str | os.PathLike, board_pid: int | None = None, lockstep: bool = True):
        self.path = Path(path)
        self.board_pid = board_pid
        self.lockstep = lockstep
        self.speed = 1.0
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._last_us = 0               # the board time last read
        self._moved_at = time.monotonic()   # host time the board time last moved
        self._dead_at: float | None = None  # host time the board was found gone (the clock runs on from there)
        self._speed_ref: tuple[float, int] | None = None
        self._lease: threading.Thread | None = None
        self._lease_stop = threading.Event()
        self._attached = False
        # source -> (board us the grant may not pass, host time it was set): "link" for the host's own wheel
        # commands, other names for commanders of its own (the dashboard's page)
        self._holds: dict[str, tuple[int, float]] = {}
        self._holds_lock = threading.Lock()     # writers (the host's threads); the lease thread reads without it
        self.grants = 0                 # renewals written (diagnostics)
        self.held = 0                   # renewals the commanding hold cut short (diagnostics)

    # ---- reading ----

    def _file(self) -> int | None:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR)
            except OSError:
                return None
        return self._fd

    def board_us(self) -> int:
        """Board time in us (never less than the last reading)."""
        with self._lock:
            host = time.monotonic()
            if self._dead_at is not None:
                return self._last_us + int((host - self._dead_at) * 1e6)
            fd = self._file()
            us = read_time_us(fd) if fd is not None else None
            if us is not None and us > self._last_us:
                self._speed(host, us)
                self._last_us = us
                self._moved_at = host
            elif host - self._moved_at > STALL_CHECK_S and (
                    not _pid_alive(self.board_pid) or host - self._moved_at > STALL_GIVE_UP_S):
                # the board is gone (or hung): from now on its time is the host's, from where it stopped
                self._dead_at = host
            return self._last_us

    def _speed(self, host: float, us: int) -> None:
        ref = self._speed_ref
        if ref is None or host - ref[0] > 2.0:
            self._speed_ref = (host, us)
            return
        if host - ref[0] > 0.25:
            # a virtual board may run faster than real time (VIPERDRIVE_SIM_SPEED above 1)
            self.speed = max(0.01, min(SPEED_MAX, (us - ref[1]) * 1e-6 / (host - ref[0])))
            self._speed_ref = (host, us)

    def now(self) -> float:
        return self.board_us() * 1e-6

    def host_seconds(self, seconds: float) -> float:
        return seconds / self.speed if seconds > 0 else 0.0

    def sleep(self, seconds: float) -> None:
        if not seconds > 0:
            return
        end = self.now() + seconds
        while True:
            left = end - self.now()
            if left <= 0:
                return
            # board time runs at `speed` (measured; faster than the host's only on a virtual board told so):
            # sleeping left / speed host seconds, at most 20 ms at a time, oversleeps by little when it changes
            time.sleep(min(left / max(self.speed, 1.0), 0.02))

    # ---- lockstep: the Link's port events ----

    def attach(self) -> None:
        """The Link opened its port: the lease starts once the board has answered (alive())."""
        self._attached = True

    def alive(self) -> None:
        """A frame came from the board: this host is its link client. Starts the lease thread (once)."""
        if not self.lockstep or not self._attached or self._lease is not None:
            return
        self._lease_stop.clear()
        self._lease = threading.Thread(target=self._renew, name="viperdrive-board-lease", daemon=True)
        self._lease.start()

    def detach(self) -> None:
        """The port closed: the lease stops before this returns (a later client is never held by our grant)."""
        self._attached = False
        with self._holds_lock:
            self._holds = {}
        lease, self._lease = self._lease, None
        if lease is not None:
            self._lease_stop.set()
            lease.join(timeout=2.0)

    def commanding(self, hold_s: float | None, source: str = "link") -> None:
        """The host sent a wheel command the board's deadman counts from: until the next one, the grant does not
        let the board run more than hold_s past now (hold_s inside the deadman). None: the host stopped
        commanding (it disabled, or a board move drives the wheels): no hold. source: whose deadman the hold
        keeps ("link": the board's own; another name: a commander the host follows, with a deadman of its own);
        each source's hold is set, replaced and let go on its own."""
        if hold_s is not None and not self.lockstep:
            return
        entry = None if hold_s is None else (self.board_us() + int(max(0.0, hold_s) * 1e6), time.monotonic())
        with self._holds_lock:
            holds = dict(self._holds)       # replaced whole: the lease thread reads it without the lock
            if entry is None:
                holds.pop(source, None)
            else:
                holds[source] = entry
            self._holds = holds

    def _renew(self) -> None:
        fd = self._file()
        if fd is None:
            return
        try:
            gen, connected = read_link(fd)
        except OSError:
            return
        while not self._lease_stop.is_set():
            until = self.board_us() + int(LEASE_AHEAD_S * 1e6)
            host = time.monotonic()
            held = [us for us, at in self._holds.values() if us < until and host - at < HOLD_RELEASE_S]
            if held:
                until = min(held)       # a commander's next command is due: the board waits for it
                self.held += 1
            try:
                write_grant(fd, gen, until)
            except OSError:
                return
            self.grants += 1
            self._lease_stop.wait(RENEW_S)

    def close(self) -> None:
        self.detach()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


__all__ = ["BoardTimeFile", "create", "read_time_us", "read_link", "write_grant", "LEASE_AHEAD_S", "RENEW_S",
           "HOLD_RELEASE_S", "SIZE"]
