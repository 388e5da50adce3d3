# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Link: the host end of the serial line (docs/protocol.md). Any pyserial URL, frames from viperdrive.shared.protocol.

- open(): serial.serial_for_url for /dev/tty*, socket://, loop://, rfc2217://; a failure becomes a PortError that
  says what to do (the ports that exist, the dialout group, which process holds a busy port).
- The reader never blocks the control loop: the port runs with timeout=0 and poll() takes what has arrived.
  (bench/bench_host.py measures this against a reader thread feeding a queue; docs/host.md has the numbers.)
- request(): send, then wait for the reply command (or a NACK for the request) within a timeout derived from the
  baud rate and both frame sizes plus a margin for the board's slow-task period, counted in the board's time (the
  Link's `clock`, viperdrive.timebase: the host's own clock for a real board; a virtual board's or an emulated
  chip's board time, which stops when the machine does not run it, so a starved board is not a dead one). Frames
  that arrive meanwhile (STATE, TELEMETRY_DATA) are kept for poll(), never dropped silently.
- Counters (stats()): frames, CRC/length errors, garbage bytes, resyncs, timeouts, NACKs, round-trip percentiles.
- A partial frame whose bytes stopped arriving for longer than the frame gap (protocol.frame_gap_us at the baud,
  at least HOST_FRAME_GAP_MIN_US) is dropped and counted (frame_timeouts): a board that reset mid-frame cannot
  hold back the frames that follow.
- A NACK_BUSY from the far end (the virtual board's answer to a second client) raises BoardBusy at once.
- Clock sync through TIME (sync_clock()): NTP-style offset, drift by regression over bursts, u32 wrap handled, so
  board_to_host() maps a board ticks_us stamp to time.monotonic().
- reconnect(): after the port disappears (USB re-plug) wait for it to come back and reopen cleanly.
Not thread-safe beyond one lock around each call: one loop thread plus occasional requests from another is fine.
"""
from __future__ import annotations

import collections
import errno
import math
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Iterable
from typing import Any

import serial

from viperdrive.shared import protocol as P

from ..errors import BoardBusy, LinkLost, NoReplyError, PortError, UserError
from ..stats import percentile
from ..timebase import HOST_CLOCK, Clock

U32 = 1 << 32
_FRAME_EXTRA = 5    # SYNC, LEN, CMD, CRC16


def _frame_size(fmt: str) -> int:
    return struct.calcsize(fmt) + _FRAME_EXTRA


# Largest reply frame for each reply command (bytes on the wire), for timeouts. Unknown: MAX_FRAME.
REPLY_SIZES = {
    P.INFO: P.MAX_FRAME, P.STATE: _frame_size(P.FMT_STATE), P.ENABLE_ACK: _frame_size(P.FMT_U8),
    P.ZERO_ACK: _FRAME_EXTRA, P.TIME_ACK: _frame_size(P.FMT_TIME_ACK), P.PARAM: _frame_size("<Bf"),
    P.PARAM_SET: _frame_size("<Bf"), P.SAVE_ACK: _FRAME_EXTRA, P.FAULT_CLEARED: _frame_size(P.FMT_U8),
    P.DIAG: _frame_size(P.FMT_DIAG), P.TELEMETRY_ACK: _frame_size(P.FMT_U16), P.ODOM: _frame_size(P.FMT_ODOM),
    P.SENSORS_ACK: _frame_size(P.FMT_U16), P.MOVE_STATE: _frame_size(P.FMT_MOVE_STATE),
}
# Extra time some commands need on the board itself (s): saving parameters writes flash; GET_DIAG is built on the
# slow path (dicts, the heap's free size) and its 67-byte reply is two USB packets: on the emulated RP2040 the first
# one after a boot took 62-68 ms of chip time, a later one 15-19 ms (the generic margin is 50 ms).
COMMAND_EXTRA_S: dict[int | None, float] = {P.SAVE_PARAMS: 1.0, P.HELLO: 0.1, P.GET_DIAG: 0.1}
# The host sees bytes through USB and the OS: a USB-serial adapter holds a partial packet for its latency timer
# (16 ms by default on FTDI chips), and the virtual board is a process a loaded machine deschedules for tens of ms
# (48 ms seen), so a frame may reach the host in two pieces that far apart. 100 ms is longer than the host loop's
# miss budget (6 cycles at 100 Hz = 60 ms): a frame that was only delayed is never dropped before the loop would
# have given up on it anyway, and what the gap is for (a board that reset mid-frame takes 0.5 s or more to speak
# again) is still caught.
HOST_FRAME_GAP_MIN_US = 100000


class NackError(UserError):
    """The board refused a command: cmd/code (numbers) and their names."""

    def __init__(self, cmd: int, code: int, detail: str = ""):
        self.cmd = cmd
        self.code = code
        self.cmd_name = P.COMMAND_NAMES.get(cmd, "0x%02X" % cmd)
        self.code_name = P.NACK_NAMES.get(code, "code %d" % code)
        more = f" ({detail})" if detail else ""
        super().__init__(f"the board refused {self.cmd_name}: {self.code_name}{more}")


class Link:
    """Link(url, baud, margin, exclusive, inbox_size, clock). clock: the board's time (viperdrive.timebase.Clock)
    every timeout is counted in; the host's clock by default (a real board). The Link tells it when the port opens,
    when the board answers and when the port closes (attach/alive/detach), and knows nothing else about it."""

    def __init__(self, url: str, baud: int = 115200, margin: float = 0.05, exclusive: bool = True,
                 inbox_size: int = 4096, clock: Clock | None = None):
        self.url = url
        self.baud = int(baud)
        self.margin = margin              # s: the board's slow-task period plus OS scheduling slack
        self.exclusive = exclusive
        self._ser: serial.SerialBase | None = None
        self._lock = threading.RLock()
        self.parser = P.Parser(P.frame_gap_us(self.baud, HOST_FRAME_GAP_MIN_US))
        self._inbox: collections.deque = collections.deque()
        self._inbox_size = inbox_size
        self._rtts: collections.deque = collections.deque(maxlen=2000)
        self.rtt_min = math.inf             # s: the shortest round trip seen, the line's own latency and no waiting
        self._clock: list[tuple[float, float]] = []    # (host s, board s unwrapped) per sync burst
        self._fit = (0.0, 1.0)                          # board_s = a + b * host_s
        self._ref: tuple[float, int] | None = None      # (host s, board us unwrapped) for unwrapping
        self.counts: collections.Counter[str] = collections.Counter()
        self.clock: Clock = clock if clock is not None else HOST_CLOCK
        self._answered = False          # a frame came since the port opened (the clock's alive() was called)
        self._late: collections.Counter[int] = collections.Counter()     # reply codes of timed-out requests, per code
        self._garbage_at_frame = 0

    # ---- open / close ----
    @property
    def is_open(self) -> bool:
        return self._ser is not None

    def open(self) -> Link:
        with self._lock:
            if self._ser is not None:
                return self
            kwargs: dict[str, Any] = {"baudrate": self.baud, "timeout": 0, "write_timeout": 1.0}
            if "://" not in self.url and self.exclusive:
                kwargs["exclusive"] = True
            try:
                self._ser = serial.serial_for_url(self.url, **kwargs)
            except (serial.SerialException, OSError, ValueError) as e:
                raise explain_open_error(self.url, e) from None
            sock = getattr(self._ser, "_socket", None)
            if sock is not None:
                # pyserial's socket:// leaves Nagle on: a small SET_VEL after an unanswered one then waits for
                # the peer's delayed ACK (40 ms on Linux), which turns one lost reply into several misses
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            self.parser.reset()
            self.counts["opens"] += 1
            self._answered = False
            self.clock.attach()
            return self

    def close(self, wait: bool = True) -> None:
        """Close the port. wait=False: the port is dropped now and closed in a daemon thread (pyserial's socket://
        close sleeps 300 ms "for quick reconnects", which inside the control loop would be 30 missed periods)."""
        with self._lock:
            ser, self._ser = self._ser, None
            if ser is None:
                return
            self.clock.detach()
            if wait:
                _close_quietly(ser)
            else:
                threading.Thread(target=_close_quietly, args=(ser,), name="viperdrive-link-close",
                                 daemon=True).start()

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    def reconnect(self, timeout_s: float = 10.0, interval_s: float = 0.2) -> None:
        """Close, then reopen until the port is back (USB re-plug) or timeout_s: PortError naming the last reason.
        The parser is reset and the clock model dropped (the board may have rebooted: its clock restarted)."""
        self.close()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.open()
                break
            except PortError as e:
                if time.monotonic() >= deadline:
                    raise PortError(f"{self.url} did not come back within {timeout_s:g} s: {e}") from None
                time.sleep(interval_s)
        self._forget_board()
        self.counts["reconnects"] += 1

    def try_reopen(self) -> bool:
        """One quick attempt to reopen a lost port (never waits); True when open. Like reconnect(), a reopened
        port drops the clock model and the frames kept from before (the board may have rebooted): call
        sync_clock() again before board_to_host() gives times."""
        if self._ser is not None:
            return True
        try:
            self.open()
        except PortError:
            return False
        self._forget_board()
        self.counts["reconnects"] += 1
        return True

    def _forget_board(self) -> None:
        # what we knew about the board on the other end no longer holds after the port went away: its clock may
        # have restarted (a clock fit across a reboot maps stamps to wrong times) and kept frames are stale
        with self._lock:
            self._clock.clear()
            self._fit = (0.0, 1.0)
            self._ref = None
            self._inbox.clear()
            self._late.clear()

    def _lost(self, e: Exception, doing: str) -> LinkLost:
        self.close(wait=False)      # called from the control loop: never block it
        self.counts["io_errors"] += 1
        return LinkLost(f"{self.url}: the port went away while {doing} ({_reason(e)}); "
                        f"check the cable, then reconnect")

    # ---- frames ----
    def send(self, frame: bytes) -> None:
        with self._lock:
            if self._ser is None:
                raise LinkLost(f"{self.url} is not open")
            try:
                self._ser.write(frame)
            except (serial.SerialException, OSError) as e:
                raise self._lost(e, "writing") from None
            self.counts["frames_tx"] += 1
            self.counts["bytes_tx"] += len(frame)

    def _read_available(self) -> list[tuple[int, bytes]]:
        # caller holds the lock
        if self._ser is None:
            raise LinkLost(f"{self.url} is not open")
        try:
            data = self._ser.read(65536)
        except (serial.SerialException, OSError) as e:
            raise self._lost(e, "reading") from None
        p = self.parser
        out: list[tuple[int, bytes]] = []
        now = int(time.monotonic() * 1e6)
        if not data:
            # nothing arrived since the last read: a partial frame older than the frame gap is dropped
            self._collect(p.expire(now), out)
            return out
        p.mark(now)
        self.counts["bytes_rx"] += len(data)
        if not self._answered:
            self._answered = True
            self.clock.alive()      # the board answers this port: a board whose time follows its host may follow us
        for b in data:
            self._collect(p.feed_byte(b), out)
        return out

    def _collect(self, cmd: int, out: list) -> None:
        # the frame cmd completed and every further one the parser holds; caller holds the lock
        p = self.parser
        while cmd >= 0:
            # a frame after discarded bytes: the parser lost sync and found it again
            if p.garbage_bytes > self._garbage_at_frame:
                self.counts["resyncs"] += 1
            self._garbage_at_frame = p.garbage_bytes
            payload = bytes(p.buf[3:3 + p.payload_len])
            if cmd == P.NACK:
                self.counts["nacks"] += 1
                if len(payload) == 2 and payload[1] == P.NACK_BUSY:
                    raise BoardBusy(f"busy: another client holds the virtual board at {self.url}; close that "
                                    f"program first (the virtual board serves one link client at a time)")
            out.append((cmd, payload))
            cmd = p.poll()

    def _stash(self, frames: Iterable[tuple[int, bytes]]) -> None:
        for f in frames:
            if self._late[f[0]] > 0 and f[0] != P.STATE:
                # the late reply to a request that already timed out: drop it (STATE is always current data)
                self._late[f[0]] -= 1
                self.counts["late_replies"] += 1
                continue
            if len(self._inbox) >= self._inbox_size:
                self._inbox.popleft()
                self.counts["inbox_dropped"] += 1
            self._inbox.append(f)

    def poll(self) -> list[tuple[int, bytes]]:
        """Every frame that has arrived (including ones kept during request()), oldest first. Never blocks."""
        with self._lock:
            self._stash(self._read_available())
            out = list(self._inbox)
            self._inbox.clear()
            return out

    def push_back(self, frames: Iterable[tuple[int, bytes]]) -> None:
        """Return frames to the front of the inbox (a consumer took more than it handles)."""
        with self._lock:
            self._inbox.extendleft(reversed(list(frames)))

    def bytes_to_come(self) -> int:
        """Bytes still missing from a frame the parser holds in part (0: none held, or its length not known yet)."""
        p = self.parser
        start = p.consumed
        held = p.n - start
        if held < 2 or p.buf[start] != P.SYNC:
            return 0
        ln = p.buf[start + 1]
        if ln < 1 or ln > P.MAX_LEN:
            return 0
        return max(0, ln + P.OVERHEAD - held)

    def wait_readable(self, seconds: float) -> None:
        """Sleep until bytes may be readable or seconds passed (select on the fd where there is one). While a frame
        has begun, its other bytes come at the line's rate: one sleep until the last is due, not a wake-up per
        byte (a serial line delivers a few bytes per read; each wake-up is a select and a read of CPU)."""
        if seconds <= 0:
            return
        left = self.bytes_to_come()
        if left:
            time.sleep(min(seconds, left * 10.0 / self.baud))
            return
        ser = self._ser
        try:
            fd = ser.fileno() if ser is not None else None
        except Exception:
            fd = None
        if fd is not None:
            try:
                select.select([fd], [], [], seconds)
                return
            except (OSError, ValueError):
                pass
        time.sleep(min(seconds, 0.0005))

    def timeout_for(self, request_len: int, reply_cmd: int, cmd: int | None = None) -> float:
        """Board seconds to wait for a reply: twice the line time of both frames + margin + the command's own work."""
        line = (request_len + REPLY_SIZES.get(reply_cmd, P.MAX_FRAME)) * 10.0 / self.baud
        return 2.0 * line + self.margin + COMMAND_EXTRA_S.get(cmd, 0.0)

    def request(self, frame: bytes, reply_cmd: int, timeout_s: float | None = None, stale: int | None = None) -> bytes:
        """Send frame, return the payload of the first reply_cmd frame. NackError if the board refuses this
        command, NoReplyError on timeout (counted), LinkLost if the port goes away.

        stale: a reply code whose frames that came before the reply in the stream are out of date once the reply
        is there (the board answers in order): e.g. STATE before ZERO_ACK carries positions from before the zero.
        They are dropped (counted) instead of being kept for poll()."""
        cmd = frame[2]
        if timeout_s is None:
            timeout_s = self.timeout_for(len(frame), reply_cmd, cmd)
        clock = self.clock
        with self._lock:
            self.send(frame)
            t0 = time.monotonic()
            now = clock.now()
            deadline = now + timeout_s        # board time: a board the machine does not run is not late
            # a reply may already sit in the inbox: read together with an earlier reply (loop://, bursts)
            frames = list(self._inbox)
            self._inbox.clear()
            frames += self._read_available()
            seen: list[tuple[int, bytes]] = []     # frames that came before the reply, in stream order
            while True:
                for i, (c, payload) in enumerate(frames):
                    if c == reply_cmd or (c == P.NACK and len(payload) == 2 and payload[0] == cmd):
                        before = seen + frames[:i]
                        if stale is not None and c == reply_cmd:
                            kept = [f for f in before if f[0] != stale]
                            self.counts["stale_dropped"] += len(before) - len(kept)
                            before = kept
                        self._stash(before)
                        self._stash(frames[i + 1:])
                        if c == P.NACK:
                            raise NackError(cmd, payload[1])
                        self.record_rtt(time.monotonic() - t0)
                        return payload
                seen += frames
                if now >= deadline:
                    self._stash(seen)
                    self.counts["timeouts"] += 1
                    # if the reply still comes, it must not answer a later request of the same kind
                    self._late[reply_cmd] += 1
                    raise NoReplyError(
                        f"no {P.COMMAND_NAMES.get(reply_cmd, hex(reply_cmd))} reply to "
                        f"{P.COMMAND_NAMES.get(cmd, hex(cmd))} from {self.url} within {timeout_s * 1000:.0f} ms "
                        f"(is the board running viperdrive firmware at {self.baud} baud?)")
                self.wait_readable(min(clock.host_seconds(deadline - now), 0.002))
                # the board's time before its bytes: a board publishes its time only after the bytes it sent by
                # then are on the line (boardtime.clockfile), so a reply sent before `now` is in what is read next
                now = clock.now()
                frames = self._read_available()

    def record_rtt(self, seconds: float) -> None:
        """Add a round trip measured outside request() (the loop's SET_VEL -> STATE exchange)."""
        self._rtts.append(seconds)
        if seconds < self.rtt_min:
            self.rtt_min = seconds

    def sampled_at(self, sent: float, arrived: float) -> float:
        """When the board took the values of a reply, on the host's monotonic clock: the request's send time plus
        half the shortest round trip seen (the board answers a request as it reads it), never after the arrival.
        The arrival alone is late by however long this process was not scheduled before it read the reply: on a
        busy machine, tens to hundreds of ms, which a pose stamped with it carries as an error of speed x delay.
        Before any round trip was measured it is the arrival."""
        if self.rtt_min == math.inf:
            return arrived
        return min(arrived, sent + 0.5 * self.rtt_min)

    def stats(self) -> dict:
        p = self.parser
        rtts = sorted(self._rtts)

        def pct(q):
            return percentile(rtts, q)

        c = self.counts
        return {
            "url": self.url, "baud": self.baud, "open": self.is_open,
            "frames_rx": p.frames, "frames_tx": c["frames_tx"], "bytes_rx": c["bytes_rx"], "bytes_tx": c["bytes_tx"],
            "crc_errors": p.crc_errors, "length_errors": p.length_errors, "garbage_bytes": p.garbage_bytes,
            "frame_timeouts": p.timeouts,
            "resyncs": c["resyncs"], "timeouts": c["timeouts"], "nacks": c["nacks"], "io_errors": c["io_errors"],
            "reconnects": c["reconnects"], "inbox_dropped": c["inbox_dropped"], "late_replies": c["late_replies"],
            "stale_dropped": c["stale_dropped"],
            "rtt_n": len(rtts), "rtt_unmeasured": c["rtt_unmeasured"],
            "rtt_p50_ms": _ms(pct(0.5)), "rtt_p90_ms": _ms(pct(0.9)),
            "rtt_p99_ms": _ms(pct(0.99)), "rtt_max_ms": _ms(rtts[-1] if rtts else None),
            "clock_offset_s": self.clock_offset, "clock_drift_ppm": self.clock_drift_ppm,
        }

    # ---- clock sync ----
    def _unwrap(self, raw_us: int, host_now: float) -> int:
        """A board u32 microsecond stamp as an unwrapped integer, resolved against the host clock."""
        raw_us &= 0xFFFFFFFF
        if self._ref is None:
            return raw_us
        ref_host, ref_board = self._ref
        predicted = ref_board + (host_now - ref_host) * 1e6 * self._fit[1]
        k = round((predicted - raw_us) / U32)
        return raw_us + k * U32

    def sync_clock(self, samples: int = 8) -> dict:
        """One burst of TIME exchanges; keeps the least-delayed one. Offset = ((t2-t1) - (t4-t3))/2, board minus
        host; drift from a regression over the bursts so far (call it again every few seconds to follow drift)."""
        best = None
        for _ in range(samples):
            t1 = time.monotonic()
            host_us = int(t1 * 1e6) & 0xFFFFFFFF
            payload = self.request(P.pack_time(host_us), P.TIME_ACK)
            t4 = time.monotonic()
            echo, b_rx, b_tx = P.unpack_time_ack(payload)
            if echo != host_us:
                self.counts["clock_stale"] += 1      # a late reply to an earlier request: not this exchange
                continue
            held = ((b_tx - b_rx) & 0xFFFFFFFF) * 1e-6
            delay = (t4 - t1) - held
            if best is None or delay < best[0]:
                best = (delay, t1, t4, b_rx, held)
        if best is None:
            raise NoReplyError(f"clock sync with {self.url}: no TIME_ACK echoed our stamp")
        delay, t1, t4, b_rx, held = best
        t2 = self._unwrap(b_rx, (t1 + t4) / 2) * 1e-6
        t3 = t2 + held
        offset = ((t2 - t1) - (t4 - t3)) / 2.0
        host_mid = (t1 + t4) / 2.0
        board_mid = host_mid + offset
        self._clock.append((host_mid, board_mid))
        del self._clock[:-64]
        self._fit = _fit_line(self._clock)
        self._ref = (host_mid, int(round(board_mid * 1e6)))
        return {"offset_s": offset, "delay_s": delay, "drift_ppm": self.clock_drift_ppm,
                "bursts": len(self._clock)}

    @property
    def clock_offset(self) -> float | None:
        """board - host (s) now, or None before the first sync."""
        if not self._clock:
            return None
        a, b = self._fit
        now = time.monotonic()
        return a + b * now - now

    @property
    def clock_drift_ppm(self) -> float | None:
        if len(self._clock) < 2:
            return None
        return (self._fit[1] - 1.0) * 1e6

    def board_to_host(self, board_us: int) -> float | None:
        """A board ticks_us stamp (u32, wraps every 71.6 min) as time.monotonic() seconds; None while the clock is
        not synchronised (before the first sync_clock(), and after a reconnect/reopen until the next one): the
        caller then has only the time the frame arrived (a missing sync is a state, not a failed exchange)."""
        if not self._clock:
            return None
        board_s = self._unwrap(board_us, time.monotonic()) * 1e-6
        a, b = self._fit
        return (board_s - a) / b


def _close_quietly(ser: serial.SerialBase) -> None:
    try:
        ser.close()
    except (serial.SerialException, OSError):
        pass


def _fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares board = a + b*host; b = 1 until the points span enough host time to see a drift."""
    n = len(points)
    hx = [p[0] for p in points]
    if n < 2 or max(hx) - min(hx) < 0.5:
        a = sum(p[1] - p[0] for p in points) / n
        return a, 1.0
    mx = sum(hx) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((x - mx) ** 2 for x in hx)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    b = sxy / sxx
    return my - b * mx, b


def _ms(x):
    return None if x is None else round(x * 1000.0, 3)


def _reason(e: Exception) -> str:
    s = str(e).strip()
    return s or type(e).__name__


# ---- turning an open failure into something a user can act on ----

def available_ports() -> list[str]:
    try:
        from serial.tools import list_ports
        return sorted(p.device for p in list_ports.comports())
    except Exception:
        return []


def port_holders(path: str) -> list[tuple[int, str]]:
    """(pid, command name) of the processes that have path open (Linux: scan /proc/*/fd). Empty elsewhere."""
    try:
        target = os.path.realpath(path)
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []
    holders = []
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") == target:
                    try:
                        with open(f"/proc/{pid}/comm") as f:
                            name = f.read().strip()
                    except OSError:
                        name = "?"
                    holders.append((int(pid), name))
                    break
            except OSError:
                continue
    return holders


def explain_open_error(url: str, e: Exception) -> PortError:
    """A PortError for a failed open: missing (with the ports that exist), not permitted (dialout), busy (who)."""
    code = getattr(e, "errno", None)
    text = _reason(e)
    low = text.lower()
    if url.startswith(("socket://", "rfc2217://")):
        return PortError(f"cannot connect to {url}: {text} (is the board or the virtual board running there?)")
    if code == errno.ENOENT or "no such file" in low or "could not open port" in low and code is None:
        ports = available_ports()
        have = ", ".join(ports) if ports else "none found (is the board plugged in? `dmesg | tail` shows it)"
        return PortError(f"port {url} does not exist; serial ports present: {have}")
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in low:
        return PortError(f"permission denied opening {url}: add your user to the dialout group "
                         f"(sudo usermod -aG dialout $USER, then log out and back in)")
    if code in (errno.EBUSY, errno.EAGAIN) or "busy" in low or "exclusively lock" in low:
        holders = port_holders(url)
        who = ", ".join(f"pid {pid} ({name}{', this process' if pid == os.getpid() else ''})"
                        for pid, name in holders)
        return PortError(f"port {url} is busy{': in use by ' + who if who else ' (another program has it open)'}; "
                         f"close that program first")
    return PortError(f"cannot open {url}: {text}")


__all__ = ["Link", "NackError", "HOST_FRAME_GAP_MIN_US", "explain_open_error", "port_holders"]
