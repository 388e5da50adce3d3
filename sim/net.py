# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# TCP for the virtual board (MicroPython unix port): the serial link's transport (one client at a time, a
# reconnect works, a second client is told it is busy) and the sim control endpoint (JSON lines, one request one
# reply, several clients).
# Everything is non-blocking and polled from the virtual board's main loop.
import errno
import json
import os
import select
import socket
import sys
import time

IPPROTO_TCP = 6
TCP_NODELAY = 1
TCP_QUICKACK = 12
# Linux: the first free port of a random pick in this range when asked for port 0 (the unix port's socket has no
# getsockname, so the kernel's own choice cannot be read back); below the kernel's ephemeral range
PORT_PICK_LO = 20000
PORT_PICK_HI = 32000


class NetError(Exception):
    pass


def parse_hostport(text, what):
    """'127.0.0.1:5000' -> ('127.0.0.1', 5000); NetError naming `what` otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise NetError("%s: expected HOST:PORT, got %r" % (what, text))
    try:
        p = int(port)
    except ValueError:
        raise NetError("%s: port must be a number, got %r" % (what, port)) from None
    if not 0 <= p <= 65535:
        raise NetError("%s: port %d outside 0..65535" % (what, p))
    return host, p


# What a bind/listen failure means, by errno name. MicroPython has no strerror, and its errno module lacks some
# names (EADDRNOTAVAIL), so those numbers are listed per platform.
_ERRNO_TEXT = {
    "EADDRINUSE": "address already in use: another program (or another virtual board) listens there",
    "EADDRNOTAVAIL": "address not available: it is not an address of this machine",
    "EACCES": "permission denied: ports below 1024 need privileges",
    "EPERM": "operation not permitted",
    "EINVAL": "invalid address for this socket",
}
_EXTRA_ERRNO = {"linux": {99: "EADDRNOTAVAIL"}, "darwin": {49: "EADDRNOTAVAIL"}}


def os_error_text(e):
    """An OSError as 'errno N NAME: what it means' (MicroPython's str() of it is only the number)."""
    code = e.args[0] if e is not None and e.args else None
    if not isinstance(code, int):
        return str(e)
    name = errno.errorcode.get(code) or _EXTRA_ERRNO.get(sys.platform, {}).get(code)
    if name is None:
        return "errno %d" % code
    text = _ERRNO_TEXT.get(name)
    return "errno %d %s%s" % (code, name, ": " + text if text else "")


def listen(host, port, backlog=1):
    """A listening non-blocking socket on host:port -> (socket, port). Port 0: a free port picked here."""
    try:
        ai = socket.getaddrinfo(host, 0)
    except OSError as e:
        raise NetError("cannot resolve %r (%s)" % (host, e)) from None
    family = ai[0][0]
    tries = 1 if port else 200
    last = None
    for _ in range(tries):
        p = port
        if not p:
            r = os.urandom(2)
            p = PORT_PICK_LO + ((r[0] << 8) | r[1]) % (PORT_PICK_HI - PORT_PICK_LO)
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(socket.getaddrinfo(host, p)[0][-1])
            s.listen(backlog)
        except OSError as e:
            s.close()
            last = e
            continue
        s.setblocking(False)
        return s, p
    raise NetError("cannot listen on %s:%d (%s)" % (host, port, os_error_text(last)))


def _readable(poller):
    return bool(poller.poll(0))


def _recv(conn, n):
    """Up to n bytes from conn; b"" when the peer closed or the socket failed (both end the connection)."""
    try:
        return conn.recv(n)
    except OSError:
        return b""


def _tune(conn):
    conn.setblocking(False)
    try:
        # small frames go out at once (no Nagle delay waiting for an ACK)
        conn.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
    except OSError:
        pass


class LinkServer:
    """The serial line's far end as a TCP server: the transport of hal.sim.PacedLink.

    recv() -> bytes or None, send(data); `generation` changes whenever a new client is accepted. One client at a
    time, as a serial port: a client that connects while another one holds the line gets busy_frame (the
    protocol's NACK_BUSY) at once and again for every chunk it sends, and is closed when it closes or after
    BUSY_HOLD_MS (not at once: a client reading a reply together with the end of the stream would lose the reply).
    The line is free again when the current client disconnects.
    """

    BUSY_HOLD_MS = 3000
    BUSY_MAX = 4                # second clients kept at once (the oldest is closed first)

    def __init__(self, host, port, busy_frame=b""):
        self.host = host
        self.sock, self.port = listen(host, port, backlog=4)
        self._lpoll = select.poll()
        self._lpoll.register(self.sock, select.POLLIN)
        self.conn = None
        self._cpoll = None
        self.generation = 0
        self.clients = 0
        self.disconnects = 0
        self.busy_frame = bytes(busy_frame)
        self.busy = []              # [socket, poller, ticks_ms deadline] of clients told the line is busy
        self.busy_rejects = 0

    @property
    def url(self):
        return "socket://%s:%d" % (self.host, self.port)

    def connected(self):
        return self.conn is not None

    def _take(self):
        """The next waiting client (tuned) and a poller on it, or None when nobody waits."""
        if not _readable(self._lpoll):
            return None
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return None
        _tune(conn)
        poller = select.poll()
        poller.register(conn, select.POLLIN)
        return conn, poller

    def _accept(self):
        got = self._take()
        if got is None:
            return
        self.conn, self._cpoll = got
        self.generation += 1
        self.clients += 1

    def drop(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
            self.conn = None
            self._cpoll = None
            self.disconnects += 1

    def _reject_waiting(self):
        """A client waiting while the line is held is told it is busy (unless the holder is leaving: a client
        that closed and reconnected sends its FIN before the new SYN, so the holder is readable then)."""
        if self.conn is None or self._cpoll.poll(0):
            return
        got = self._take()
        if got is None:
            return
        conn, poller = got
        self.busy_rejects += 1
        if len(self.busy) >= self.BUSY_MAX:
            self._close_busy(0)
        self.busy.append([conn, poller, time.ticks_add(time.ticks_ms(), self.BUSY_HOLD_MS)])
        self._tell_busy(conn)

    def _tell_busy(self, conn):
        try:
            conn.send(self.busy_frame)
        except OSError:
            pass

    def _close_busy(self, i):
        ent = self.busy.pop(i)
        try:
            ent[0].close()
        except OSError:
            pass

    def _serve_busy(self):
        now = time.ticks_ms()
        i = 0
        while i < len(self.busy):
            conn, poller, deadline = self.busy[i]
            if time.ticks_diff(deadline, now) <= 0:
                self._close_busy(i)
                continue
            if poller.poll(0):
                if not _recv(conn, 256):
                    self._close_busy(i)
                    continue
                self._tell_busy(conn)
            i += 1

    def recv(self):
        if self.busy:
            self._serve_busy()
        if self.conn is None:
            self._accept()
            if self.conn is None:
                return None
        ev = self._cpoll.poll(0)
        if not ev:
            self._reject_waiting()
            return None
        data = _recv(self.conn, 4096)
        if not data:
            # the client closed (or died): wait for the next one
            self.drop()
            return None
        try:
            # Linux: acknowledge at once. A client without TCP_NODELAY (pyserial's socket://) holds its next small
            # frame back until the previous one is acknowledged (Nagle); a delayed ACK would add up to 40 ms
            self.conn.setsockopt(IPPROTO_TCP, TCP_QUICKACK, 1)
        except OSError:
            pass
        return data

    def wait(self, timeout_ms):
        """Block up to timeout_ms for input from the client (or a new client)."""
        poller = self._cpoll if self.conn is not None else self._lpoll
        poller.poll(timeout_ms)

    def send(self, data):
        if self.conn is None:
            return
        try:
            self.conn.send(data)
        except OSError:
            self.drop()

    def close(self):
        self.drop()
        while self.busy:
            self._close_busy(0)
        self.sock.close()


class ControlServer:
    """JSON lines over TCP: each request line gets one reply line from handler(dict) -> dict.

    A line that is not a JSON object gets {"ok": false, "error": ...}; so does a handler exception (the
    virtual board keeps running).
    """

    MAX_LINE = 4096

    def __init__(self, host, port, handler):
        self.host = host
        self.sock, self.port = listen(host, port, backlog=4)
        self.handler = handler
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.clients = {}   # fileno -> [socket, bytearray]
        self.requests = 0

    def poll(self, timeout_ms=0):
        """Serve whatever is waiting; returns the number of requests handled."""
        handled = 0
        for ev in self.poller.poll(timeout_ms):
            obj = ev[0]
            if obj is self.sock or (hasattr(obj, "fileno") and obj.fileno() == self.sock.fileno()):
                self._accept()
                continue
            fd = obj if isinstance(obj, int) else obj.fileno()
            ent = self.clients.get(fd)
            if ent is None:
                continue
            handled += self._read(fd, ent)
        return handled

    def _accept(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        _tune(conn)
        self.clients[conn.fileno()] = [conn, bytearray()]
        self.poller.register(conn, select.POLLIN)

    def _close(self, fd):
        ent = self.clients.pop(fd, None)
        if ent is None:
            return
        try:
            self.poller.unregister(ent[0])
        except (OSError, ValueError, KeyError):
            pass
        try:
            ent[0].close()
        except OSError:
            pass

    def _read(self, fd, ent):
        conn, buf = ent
        data = _recv(conn, 4096)
        if not data:
            self._close(fd)
            return 0
        buf.extend(data)
        handled = 0
        while True:
            i = buf.find(b"\n")
            if i < 0:
                if len(buf) > self.MAX_LINE:
                    buf[:] = b""
                    self._reply(fd, conn, {"ok": False, "error": "request line longer than %d bytes"
                                           % self.MAX_LINE})
                break
            line = bytes(buf[:i]).strip()
            buf[:] = buf[i + 1:]
            if not line:
                continue
            self._reply(fd, conn, self._handle(line))
            handled += 1
        return handled

    def _handle(self, line):
        self.requests += 1
        try:
            req = json.loads(line)
        except ValueError:
            return {"ok": False, "error": "not JSON: %r" % line[:80]}
        if not isinstance(req, dict):
            return {"ok": False, "error": "a request is a JSON object like {\"cmd\": \"truth\"}"}
        try:
            rep = self.handler(req)
        except Exception as e:  # noqa: BLE001 - a bad request must not stop the board
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        return rep

    def _reply(self, fd, conn, rep):
        data = (json.dumps(rep) + "\n").encode()
        try:
            # replies are small; a client that does not read them is dropped rather than blocking the board
            conn.setblocking(True)
            conn.settimeout(1.0)
            conn.sendall(data) if hasattr(conn, "sendall") else conn.write(data)
            conn.setblocking(False)
        except OSError:
            self._close(fd)

    def close(self):
        for fd in list(self.clients):
            self._close(fd)
        self.sock.close()
