# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A tiny board that speaks the viperdrive protocol over TCP (socket://), for host tests and the host bench.

A test helper, not a product mock: it uses the real shared protocol and a trivial plant (positions integrate the
commanded counts/s), with knobs to misbehave: drop STATE replies, answer with another version/schema, latch a
fault, go away and come back (a USB re-plug), a board clock with an offset, a drift and a u32 wrap.
"""
from __future__ import annotations

import socket
import struct
import threading
import time

from viperdrive.shared import params
from viperdrive.shared import protocol as P


class Responder:
    def __init__(self, cpr: int = 4096, version: int = P.PROTOCOL_VERSION, schema: int | None = None,
                 clock_offset_us: int = 0, clock_drift_ppm: float = 0.0, reply_delay: float = 0.0):
        self.cpr = cpr
        self.version = version
        self.schema = params.schema_hash() if schema is None else schema
        self.clock_offset_us = clock_offset_us
        self.clock_drift_ppm = clock_drift_ppm
        self.reply_delay = reply_delay
        self.drop_state = 0             # drop this many coming STATE replies
        self.mute = False               # answer nothing at all
        self.fault = 0                  # latched fault code
        self.enabled = False
        self.pos = [0, 0]
        self.zero_counts = [0, 0]       # what ZERO sets the counters to (near +-2**31: a wrap comes soon)
        self.vel = [0, 0]
        self.last_set_vel = None
        self.set_vel_count = 0
        self.values = params.defaults()
        self.saved = None
        self.telemetry_hz = 0
        self.received = []              # command codes in arrival order
        self._t_last = time.monotonic()
        self._t0 = time.monotonic()
        self._srv = None
        self._conn = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.port = None
        self._listen()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # ---- harness ----
    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def _listen(self):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", self.port or 0))
        srv.listen(1)
        srv.settimeout(0.05)
        self.port = srv.getsockname()[1]
        self._srv = srv

    def unplug(self):
        """The port disappears: drop the connection and stop listening (connections are refused)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._srv.close()
            self._srv = None

    def replug(self, reboot: bool = True):
        """The port comes back (same URL); reboot: the board restarts (encoders zero, disabled)."""
        with self._lock:
            if reboot:
                self.pos = [0, 0]
                self.vel = [0, 0]
                self.enabled = False
                self._t0 = time.monotonic()
            self._listen()

    def close(self):
        self._stop.set()
        self._thread.join(2.0)
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            if self._srv is not None:
                self._srv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def board_us(self) -> int:
        t = time.monotonic() - self._t0
        return int(t * 1e6 * (1 + self.clock_drift_ppm * 1e-6) + self.clock_offset_us) & 0xFFFFFFFF

    # ---- serving ----
    def _serve(self):
        parser = P.Parser()
        next_tel = 0.0
        seq = 0
        while not self._stop.is_set():
            with self._lock:
                srv, conn = self._srv, self._conn
            if conn is None:
                if srv is None:
                    time.sleep(0.01)
                    continue
                try:
                    c, _ = srv.accept()
                except (TimeoutError, OSError):
                    continue
                c.settimeout(0.002)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self._lock:
                    self._conn = c
                parser = P.Parser()
                continue
            try:
                data = conn.recv(4096)
                if not data:
                    with self._lock:
                        self._conn = None
                    conn.close()
                    continue
            except TimeoutError:
                data = b""
            except OSError:
                with self._lock:
                    self._conn = None
                continue
            self._advance()
            for cmd, payload in parser.feed(data):
                self.received.append(cmd)
                reply = self._handle(cmd, payload)
                if reply is not None and not self.mute:
                    if self.reply_delay:
                        time.sleep(self.reply_delay)
                    self._send(conn, reply)
            if self.telemetry_hz and time.monotonic() >= next_tel:
                next_tel = time.monotonic() + 1.0 / self.telemetry_hz
                seq += 1
                self._send(conn, P.pack_telemetry_data(seq, self.board_us(), self.vel[0], self.vel[0], 1000, 10,
                                                       self.vel[1], self.vel[1], 1000, 10, self._status()))

    def _send(self, conn, frame):
        try:
            conn.sendall(frame)
        except OSError:
            pass

    def _advance(self):
        now = time.monotonic()
        dt = now - self._t_last
        self._t_last = now
        for i in (0, 1):
            self.pos[i] = ((self.pos[i] + int(round(self.vel[i] * dt)) + 2**31) % 2**32) - 2**31

    def _status(self):
        return (P.ST_ENABLED if self.enabled else 0) | (P.ST_FAULT if self.fault else 0)

    def _handle(self, cmd, payload):
        try:
            if cmd == P.HELLO:
                return P.pack_info(self.version, self.schema, 1000, self.cpr, "responder-1", "tcp")
            if cmd == P.SET_VEL:
                vl, vr = P.unpack_set_vel(payload)
                self.last_set_vel = (vl, vr)
                self.set_vel_count += 1
                self.vel = [vl, vr] if self.enabled else [0, 0]
                if self.drop_state > 0:
                    self.drop_state -= 1
                    return None
                return P.pack_state(self.pos[0], self.pos[1], self.vel[0], self.vel[1], self._status())
            if cmd == P.ENABLE:
                on = P.unpack_enable(payload)
                if on and self.fault:
                    return P.pack_nack(cmd, P.NACK_NOT_ALLOWED)
                self.enabled = on
                if not on:
                    self.vel = [0, 0]
                return P.pack_enable_ack(on)
            if cmd == P.ZERO:
                self.pos = list(self.zero_counts)
                return P.pack_zero_ack()
            if cmd == P.TIME:
                host = P.unpack_time(payload)
                rx = self.board_us()
                time.sleep(0.0002)
                return P.pack_time_ack(host, rx, self.board_us())
            if cmd == P.GET_PARAM:
                pid = P.unpack_get_param(payload)
                p = params.by_id(pid)
                if p is None:
                    return P.pack_nack(cmd, P.NACK_UNKNOWN_PARAM)
                return P.pack_param(pid, self.values[p[params.NAME]])
            if cmd == P.SET_PARAM:
                pid, value = P.unpack_param_value(payload)
                if params.check(pid, value) is not None:
                    return P.pack_nack(cmd, P.NACK_OUT_OF_RANGE)
                p = params.by_id(pid)
                applied = struct.unpack("<f", struct.pack("<f", value))[0] if p[params.TYPE] == "f" else value
                self.values[p[params.NAME]] = applied
                return P.pack_param_set(pid, applied)
            if cmd == P.SAVE_PARAMS:
                self.saved = dict(self.values)
                return P.pack_save_ack()
            if cmd == P.CLEAR_FAULT:
                code, self.fault = self.fault, 0
                return P.pack_fault_cleared(code)
            if cmd == P.GET_DIAG:
                d = {name: 0 for name, _ in P.DIAG_FIELDS}
                d.update(fault_code=self.fault, uptime_ms=int((time.monotonic() - self._t0) * 1000),
                         reset_cause=P.RESET_SOFT, flags=P.DIAG_TIMER_SOFT)
                return P.pack_diag(d)
            if cmd == P.TELEMETRY:
                self.telemetry_hz = P.unpack_telemetry(payload)
                return P.pack_telemetry_ack(self.telemetry_hz)
            if cmd == P.GET_ODOM:
                return P.pack_odom(self.board_us(), 1500000, -250000, 785398, 785398, P.ODOM_HEADING_ENCODERS)
            return P.pack_nack(cmd, P.NACK_UNKNOWN)
        except (ValueError, KeyError):
            return P.pack_nack(cmd, P.NACK_BAD_LENGTH)
