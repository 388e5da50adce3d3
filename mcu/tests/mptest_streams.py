# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Link streams: UsbCdcStream over a real TCP socket pair standing in for stdin/stdout (a pollable stream, as
# the USB CDC stdio is on a board): non-blocking reads, every byte (0x03 included) delivered in order,
# kbd_intr(-1) while open and kbd_intr(3) restored on close, allocation-free reads. UartStream over a UART
# double with the machine.UART surface (any/readinto/write/deinit).
import random
import socket

import micropython

from viperdrive.hal import streams


def _pair():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    for _ in range(50):
        port = random.randrange(20000, 60000)
        try:
            srv.bind(socket.getaddrinfo("127.0.0.1", port)[0][-1])
            break
        except OSError:
            continue
    srv.listen(1)
    cli = socket.socket()
    cli.connect(socket.getaddrinfo("127.0.0.1", port)[0][-1])
    conn, _ = srv.accept()
    srv.close()
    return cli, conn


def _read_all(stream, buf, want, tries=2000):
    got = bytearray()
    for _ in range(tries):
        n = stream.readinto(buf)
        if n:
            got.extend(buf[:n])
            if len(got) >= want:
                break
    return bytes(got)


def test_usb_cdc_stream_reads_without_blocking_and_restores_ctrl_c():
    cli, conn = _pair()
    calls = []
    s = streams.UsbCdcStream(stdin=conn, stdout=conn, kbd_intr=calls.append)
    assert calls == [-1]                    # Ctrl-C is data while the link runs
    buf = bytearray(16)
    assert s.readinto(buf) == 0             # nothing waiting: returns at once
    data = bytes(range(40)) + b"\x03\xaa\x03"
    cli.send(data)
    assert _read_all(s, buf, len(data)) == data     # 16-byte reads, in order, 0x03 delivered as data
    assert s.write(b"\xaa\x01\x81") == 3
    assert cli.recv(3) == b"\xaa\x01\x81"
    s.close()
    assert calls == [-1, 3]
    s.close()                               # idempotent: kbd_intr restored once
    assert calls == [-1, 3]
    assert s.readinto(buf) is None
    cli.close()
    conn.close()


def test_usb_cdc_stream_read_is_allocation_free():
    cli, conn = _pair()
    s = streams.UsbCdcStream(stdin=conn, stdout=conn, kbd_intr=lambda v: None)
    buf = bytearray(8)
    # warm-up: the poll object allocates its (reused) result tuple the first time it reports an event
    cli.send(b"w")
    assert _read_all(s, buf, 1) == b"w"
    cli.send(b"12345678abc")
    got = bytearray()
    for _ in range(200):
        micropython.heap_lock()
        try:
            n = s.readinto(buf)
        finally:
            micropython.heap_unlock()
        if n:
            got.extend(buf[:n])
        if len(got) == 11:
            break
    assert bytes(got) == b"12345678abc"
    s.close()
    cli.close()
    conn.close()


def test_usb_cdc_stream_end_of_stream_is_not_an_error():
    cli, conn = _pair()
    s = streams.UsbCdcStream(stdin=conn, stdout=conn, kbd_intr=lambda v: None)
    cli.send(b"xy")
    buf = bytearray(8)
    assert _read_all(s, buf, 2) == b"xy"
    cli.close()
    for _ in range(20):
        n = s.readinto(buf)
        assert n == 0                   # the host went away: nothing to read, no exception
    s.close()
    conn.close()


class UartDouble:
    """The machine.UART calls UartStream makes, over two byte buffers."""

    def __init__(self):
        self.rx = bytearray()
        self.tx = bytearray()
        self.deinited = False

    def any(self):
        return len(self.rx)

    def readinto(self, buf, n):
        n = min(n, len(self.rx), len(buf))
        buf[:n] = self.rx[:n]
        self.rx = self.rx[n:]
        return n

    def write(self, data):
        self.tx.extend(data)
        return len(data)

    def deinit(self):
        self.deinited = True


def test_uart_stream():
    u = UartDouble()
    s = streams.UartStream(u)
    buf = bytearray(4)
    assert s.readinto(buf) is None
    u.rx.extend(b"abcdefghij")
    assert s.readinto(buf) == 4 and bytes(buf) == b"abcd"
    assert s.readinto(buf) == 4 and bytes(buf) == b"efgh"
    assert s.readinto(buf) == 2 and bytes(buf[:2]) == b"ij"
    assert s.readinto(buf) is None
    assert s.write(b"\xaa\x05") == 2 and bytes(u.tx) == b"\xaa\x05"
    s.close()
    assert u.deinited


def test_open_stream_picks_usb_by_default():
    # without a board the default stdin/stdout are the test process's: only check the type and the Ctrl-C
    # handling, then close so the interpreter gets its Ctrl-C back
    import micropython as mp
    s = streams.open_stream({"type": "usb"})
    try:
        assert isinstance(s, streams.UsbCdcStream)
        assert s.is_open
    finally:
        s.close()
    assert not s.is_open
    assert hasattr(mp, "kbd_intr")
