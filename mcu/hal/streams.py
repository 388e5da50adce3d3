# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Link transports for the MicroPython backends: a hardware UART, or USB CDC through sys.stdin/sys.stdout.
# Both give the stream interface of hal/__init__.py: readinto(buf) -> int|None (never blocks), write(buf),
# close(). Binary frames over USB CDC share the REPL's stream, so while a UsbCdcStream is open Ctrl-C (0x03,
# a byte any frame may contain) must not raise KeyboardInterrupt: kbd_intr(-1) on open, kbd_intr(3) on close.
import sys

try:
    import select
except ImportError:  # very old ports only have uselect
    import uselect as select  # type: ignore[no-redef]


class UartStream:
    """A machine.UART (or anything with any/readinto/write) as the link stream."""

    def __init__(self, uart):
        self.uart = uart

    def readinto(self, buf):
        waiting = self.uart.any()
        if not waiting:
            return None
        if waiting > len(buf):
            waiting = len(buf)
        # readinto(buf, nbytes) returns what it got right away: the UART was opened with timeout=0
        return self.uart.readinto(buf, waiting)

    def write(self, buf):
        return self.uart.write(buf)

    def close(self):
        if hasattr(self.uart, "deinit"):
            self.uart.deinit()


class UsbCdcStream:
    """USB CDC (the REPL's serial port) as the link stream: reads stdin without blocking, writes stdout.

    stdin/stdout default to sys.stdin.buffer/sys.stdout.buffer; kbd_intr to micropython.kbd_intr. Any
    pollable stream with readinto/write works (the tests use a TCP socket). Reads one byte at a time while
    poll says a byte is waiting: the stdio readinto would otherwise block until the whole buffer is full.
    Allocation-free once the first byte has been read (poll allocates its reused result tuple then).
    """

    def __init__(self, stdin=None, stdout=None, kbd_intr=None):
        if kbd_intr is None:
            import micropython
            kbd_intr = micropython.kbd_intr
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._kbd_intr = kbd_intr
        self._poll = select.poll()
        self._poll.register(self._in, select.POLLIN)
        self._one = bytearray(1)
        self.is_open = True
        # from here on 0x03 is data, not Ctrl-C; close() gives the REPL its Ctrl-C back
        kbd_intr(-1)

    def _waiting(self):
        # ipoll: an iterator over a callee-owned tuple, no allocation (poll() would build a list)
        for entry in self._poll.ipoll(0):
            return entry[1] & select.POLLIN
        return 0

    def readinto(self, buf):
        if not self.is_open:
            return None
        n = 0
        one = self._one
        end = len(buf)
        while n < end and self._waiting():
            if not self._in.readinto(one):
                break       # end of stream (a closed pipe or socket): nothing more now
            buf[n] = one[0]
            n += 1
        return n

    def write(self, buf):
        return self._out.write(buf)

    def close(self):
        if not self.is_open:
            return
        self.is_open = False
        try:
            self._poll.unregister(self._in)
        finally:
            self._kbd_intr(3)


def open_uart(link):
    """machine.UART from a validated link config: non-blocking (timeout=0), pins only where given."""
    import machine
    kw = {"baudrate": link.get("baud", 115200), "timeout": 0}
    if "tx" in link:
        kw["tx"] = machine.Pin(link["tx"])
    if "rx" in link:
        kw["rx"] = machine.Pin(link["rx"])
    try:
        # a receive buffer for a burst of frames between two slow-loop passes (512 B = 44 ms at 115200)
        return machine.UART(link["uart_id"], rxbuf=512, **kw)
    except (TypeError, ValueError):
        return machine.UART(link["uart_id"], **kw)


def open_stream(link):
    """The link stream a validated board config's "link" section names."""
    if link.get("type", "usb") == "uart":
        return UartStream(open_uart(link))
    return UsbCdcStream()
