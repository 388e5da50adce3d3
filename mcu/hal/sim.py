# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The sim backend: the hardware of the virtual board (sim/vboard.py), on the MicroPython unix port.
#
# The motors and encoders are a physical model (sim/plant.py) stepped by the virtual board's world (sim/world.py),
# which also keeps board time: the control "timer" is the world calling the firmware's step once per period, every
# clock here (ticks_us/ticks_ms, the watchdog, the link's byte pacing) is the world's board time, which stops when
# the machine does not run the virtual board. The watchdog is a deadline the virtual board checks, and the link is
# a byte stream paced at the emulated serial baud rate (PacedLink over a transport: the virtual board's TCP
# server). This module never imports sim/: the virtual board hands the world and the link in, either as keywords
# or, for code that builds the Board itself (tuning.start() in the REPL), through DEFAULTS.
import _thread
import gc
import time

try:
    from ..shared.protocol import RESET_POWER_ON
except ImportError:  # pragma: no cover - the firmware's layout always has shared/
    RESET_POWER_ON = 0

# Set by the virtual board before the firmware builds its Board: {"world": ..., "link": ..., "reset_cause": ...}
DEFAULTS = {}  # type: dict

Q15_FULL = 32767
BITS_PER_BYTE = 10          # start bit, 8 data bits, stop bit
US_PER_S = 1000000
USB_FRAME_US = 1000         # the bridge's packet period toward the host


class PacedLink:
    """A byte stream that moves at a serial line's speed, over a transport that moves bytes at once.

    transport: an object with recv() -> bytes or None (non-blocking), send(data) -> None, and an integer
    `generation` that changes when a new peer connects (its buffered bytes are dropped then, as unplugging a
    cable drops what was on it). None: a line with nothing attached (writes vanish, nothing arrives).

    Both directions take BITS_PER_BYTE / baud per byte: the board sees a host byte only when its last bit has
    arrived, and a byte the board writes leaves toward the host only when its last bit has been sent. The board's
    transmit buffer holds tx_buffer bytes; write() blocks (pumping the line) while it is full, as a UART with a
    full ring buffer does. Faults: cut (every byte dropped both ways), corrupt_rate (each byte, either direction,
    gets one random bit flipped with this probability), inject(data) (garbage toward the board).
    """

    def __init__(self, transport=None, baud=115200, clock=time.ticks_us, rng=None, tx_buffer=256, sleep_us=None):
        if baud <= 0:
            raise ValueError("baud must be positive")
        self.transport = transport
        self.baud = baud
        self.clock = clock
        self.sleep_us = sleep_us or time.sleep_us
        self.tx_buffer = tx_buffer
        self.rng = rng
        self.cut = False
        self.corrupt_rate = 0.0
        self.lock = _thread.allocate_lock()
        self._generation = getattr(transport, "generation", 0)
        # receive side: bytes that came from the transport, arriving bit by bit
        self._rx = bytearray()
        self._rx_start = 0          # ticks_us at which the first byte of the current burst started arriving
        self._rx_done = 0           # bytes of this burst that have fully arrived and were handed on
        self._rx_burst = 0          # bytes in this burst (arrived + still arriving)
        self._rx_ready = bytearray()  # arrived, not yet read by the firmware
        # transmit side: bytes the board wrote, leaving at the line rate
        self._tx = bytearray()
        self._tx_start = 0
        self._tx_sent = 0
        self._tx_chunk_t = clock()  # when the last chunk went to the transport
        self.rx_bytes = 0           # bytes delivered to the firmware
        self.tx_bytes = 0           # bytes the firmware wrote
        self.tx_line_bytes = 0      # bytes that left on the line (reached the transport, or the void when cut)
        self.dropped_rx = 0
        self.dropped_tx = 0
        self.corrupted = 0
        self.injected = 0
        self.reconnects = 0

    # ---- faults ----

    def inject(self, data):
        """Garbage toward the board: it takes line time like any other byte."""
        with self.lock:
            self._rx_append(bytes(data))
            self.injected += len(data)

    def _flip(self, data):
        # corrupt a copy: each byte with probability corrupt_rate gets one random bit flipped
        rate = self.corrupt_rate
        rng = self.rng
        if rate <= 0.0 or rng is None:
            return data
        out = bytearray(data)
        for i in range(len(out)):
            if rng.uniform() < rate:
                out[i] ^= 1 << (rng.next32() & 7)
                self.corrupted += 1
        return out

    # ---- line timing ----

    def _due(self, start, now):
        """Whole bytes the line has carried since start (ticks_us)."""
        el = time.ticks_diff(now, start)
        if el <= 0:
            return 0
        return el * self.baud // (BITS_PER_BYTE * US_PER_S)

    def _rx_append(self, data):
        if self._rx_burst == self._rx_done:
            # the line is idle (every earlier byte has fully arrived, so before now): a new burst starts now
            self._rx_start = self.clock()
            self._rx_burst = 0
            self._rx_done = 0
        self._rx.extend(data)
        self._rx_burst += len(data)

    def _check_peer(self):
        t = self.transport
        gen = getattr(t, "generation", 0)
        if gen != self._generation:
            # a new peer: what was on the old line is gone
            self._generation = gen
            self.reconnects += 1
            self._rx = bytearray()
            self._rx_ready = bytearray()
            self._rx_burst = self._rx_done = 0
            self._tx = bytearray()
            self._tx_sent = 0

    def pump(self):
        """Move bytes whose time has come, both directions. Called by readinto/write and the board's idle()."""
        with self.lock:
            self._pump()

    def _pump(self):
        t = self.transport
        now = self.clock()
        # receive: hand on the bytes whose last bit has arrived (before taking new ones, so a burst that has
        # ended is seen as ended and the new bytes start a burst of their own)
        if self._rx_burst > self._rx_done:
            n = min(self._due(self._rx_start, now), self._rx_burst) - self._rx_done
            if n > 0:
                self._rx_ready.extend(self._rx[:n])
                self._rx = self._rx[n:]
                self._rx_done += n
        if t is not None:
            data = t.recv()
            # after recv(): a client accepted inside it may already have sent bytes, which must survive
            self._check_peer()
            if data:
                if self.cut:
                    self.dropped_rx += len(data)
                else:
                    self._rx_append(self._flip(data))
        # transmit: send the bytes whose last bit has left, in USB-frame chunks: when the burst is complete or
        # the oldest waiting byte has waited a frame (a UART-USB bridge or CDC port delivers ~1 ms packets, not
        # single bytes; single-byte TCP segments would also reach the host's read() split mid-frame)
        if self._tx:
            n = min(self._due(self._tx_start, now), self._tx_sent + len(self._tx)) - self._tx_sent
            if n > 0 and n < len(self._tx) and time.ticks_diff(now, self._tx_chunk_t) < USB_FRAME_US:
                n = 0
            if n > 0:
                self._tx_chunk_t = now
                chunk = self._tx[:n]
                self._tx = self._tx[n:]
                self._tx_sent += n
                self.tx_line_bytes += n
                if self.cut or t is None:
                    self.dropped_tx += n
                else:
                    t.send(self._flip(chunk))

    # ---- the stream the firmware sees ----

    def readinto(self, buf):
        with self.lock:
            self._pump()
            ready = self._rx_ready
            if not ready:
                return None
            n = min(len(buf), len(ready))
            buf[:n] = ready[:n]
            self._rx_ready = ready[n:]
            self.rx_bytes += n
            return n

    def any(self):
        with self.lock:
            self._pump()
            return len(self._rx_ready)

    def write(self, buf):
        n = len(buf)
        i = 0
        while i < n:
            with self.lock:
                self._pump()
                if not self._tx:
                    # idle transmitter (every earlier byte has left, so before now): this byte starts now
                    self._tx_start = self.clock()
                    self._tx_sent = 0
                room = self.tx_buffer - len(self._tx)
                k = min(room, n - i)
                if k > 0:
                    self._tx.extend(buf[i:i + k])
                    i += k
                    self.tx_bytes += k
            if i < n:
                # the UART's buffer is full: wait for a byte time, as a blocking UART write does
                self.sleep_us(max(1, BITS_PER_BYTE * US_PER_S // self.baud))
        return n

    def next_due_us(self):
        """Microseconds until the next byte completes on the line (either direction), None if the line is idle."""
        with self.lock:
            now = self.clock()
            best = None
            per = BITS_PER_BYTE * US_PER_S
            if self._rx_burst > self._rx_done:
                t = (self._rx_done + 1) * per // self.baud - time.ticks_diff(now, self._rx_start)
                best = t
            if self._tx:
                el = time.ticks_diff(now, self._tx_start)
                # the burst's end, or the next USB frame boundary once a byte is due, whichever is first
                end_all = (self._tx_sent + len(self._tx)) * per // self.baud - el
                next_byte = (self._tx_sent + 1) * per // self.baud - el
                frame = USB_FRAME_US - time.ticks_diff(now, self._tx_chunk_t)
                t = min(end_all, max(next_byte, frame))
                best = t if best is None or t < best else best
            return None if best is None else max(0, best)

    def wait(self, max_us=1000):
        """Sleep until a byte is due on the line, the transport has input, or max_us passed."""
        due = self.next_due_us()
        if due is not None and due < max_us:
            if due > 0:
                self.sleep_us(due)
            return
        t = self.transport
        if t is not None and hasattr(t, "wait"):
            t.wait(max(1, max_us // 1000))
        else:
            self.sleep_us(max_us)

    def flush(self):
        """Block until every written byte has left."""
        while True:
            with self.lock:
                self._pump()
                if not self._tx:
                    return
            self.sleep_us(max(1, BITS_PER_BYTE * US_PER_S // self.baud))

    def close(self):
        # the firmware closing its end does not unplug the cable: the virtual board owns the transport
        pass

    def stats(self):
        return {"rx_bytes": self.rx_bytes, "tx_bytes": self.tx_bytes, "tx_line_bytes": self.tx_line_bytes,
                "dropped_rx": self.dropped_rx, "dropped_tx": self.dropped_tx, "corrupted": self.corrupted,
                "injected": self.injected, "reconnects": self.reconnects, "rx_pending": len(self._rx),
                "tx_pending": len(self._tx), "baud": self.baud}


def repl_pin_held(cfg):
    """The virtual board has no pins: the REPL boot switch is the repl_mode file (or `viperdrive sim --repl`)."""
    return False


class Board:
    """The sim hardware (interface: mcu/hal/__init__.py). world=, link= and reset_cause= come from the virtual
    board (keywords, else DEFAULTS): the world holds the plant and board time."""

    soft = True     # the control period comes from the world, not a hard timer IRQ

    def __init__(self, cfg, world=None, link=None, reset_cause=None):
        if world is None:
            world = DEFAULTS.get("world")
        if world is None:
            raise ValueError("the sim backend needs the virtual board's world: start the firmware through "
                             "sim/vboard.py")
        if link is None:
            link = DEFAULTS.get("link")
        if reset_cause is None:
            reset_cause = DEFAULTS.get("reset_cause", RESET_POWER_ON)
        self.cfg = cfg
        self.world = world
        self.plant = plant = world.plant
        self.link = link
        self.counter_bits = plant.counter_bits
        self._reset_cause = reset_cause
        self.duty_l = 0             # Q15, what the world's next plant step runs on
        self.duty_r = 0
        self._energized = False
        plant.energized = False
        est = cfg.get("estop")
        self._in_closed = self._in_open = 0
        if est is not None:
            bit = 1 << est["pin"]
            self._in_closed = bit if est["closed"] else 0
            self._in_open = bit ^ self._in_closed
        self.hz = 0
        # watchdog
        self.wdt_timeout_ms = 0
        self._wdt_deadline = 0
        self.wdt_feeds = 0
        # the firmware's clock is the world's board time (the port's time functions stay the world's methods:
        # one call each, as on a chip)
        self.ticks_us = world.ticks_us
        self.ticks_ms = world.ticks_ms

    # ---- outputs and encoders ----

    def read_counts(self, buf):
        self.plant.counts(buf)

    def write_duty(self, left, right):
        if self._energized:
            self.duty_l = left
            self.duty_r = right

    def set_energized(self, on):
        self._energized = bool(on)
        if not on:
            self.duty_l = 0
            self.duty_r = 0
        self.plant.energized = self._energized

    def edge_times_us(self, buf):
        # the plant's last step ended where this period started (board time t_us): the counts are of that moment,
        # however much host time the world took before the firmware's step read its clock
        self.plant.edge_times(buf, self.world.t_us)
        buf[2] = buf[3] = self.world.t_us & 0x3FFFFFFF

    # ---- board sensors: the plant's emulated parts ----

    def read_inputs(self):
        """The inputs word the control period reads: the e-stop circuit's level at bit estop.pin (closed: the
        config's closed level; open: the other one, as the pull makes it)."""
        if self.plant.estop_open:
            return self._in_open
        return self._in_closed

    def sensor_bus(self):
        """The plant's emulated I2C bus (sim/imu_parts.py). No lock: the world swaps a part's data registers in
        whole, so a burst read sees one sample and never waits for the plant's step."""
        return self.plant.i2c

    def battery_u16(self):
        """The ADC reading of the plant's terminal volts through the config's divider (vref full scale)."""
        bat = self.cfg["battery"]
        u = int(self.plant.battery_terminal_v / bat["divider"] / bat["vref"] * 65535.0 + 0.5)
        return 65535 if u > 65535 else (0 if u < 0 else u)

    # ---- the control "timer": the world runs the step once per period ----

    def start_periodic(self, hz, fn):
        if hz != self.world.hz:
            raise ValueError("the virtual board's world runs at %d Hz (the board config's control_hz), not %d"
                             % (self.world.hz, hz))
        self.hz = hz
        self.world.attach(fn, self)

    def stop_periodic(self):
        if self.world.board is self:
            self.world.detach()

    @property
    def frozen(self):
        return self.world.frozen

    @frozen.setter
    def frozen(self, on):
        self.world.frozen = on

    def loop_stats(self):
        return self.world.stats()

    def reset_loop_stats(self):
        self.world.reset_stats()

    def repl_pin_held(self):
        return repl_pin_held(self.cfg)

    # ---- watchdog (the virtual board checks watchdog_expired() and restarts the firmware); board time ----

    def watchdog_start(self, timeout_ms):
        self.wdt_timeout_ms = timeout_ms
        self._wdt_deadline = self.world.ticks_ms() + timeout_ms

    def watchdog_feed(self):
        if self.wdt_timeout_ms:
            self._wdt_deadline = self.world.ticks_ms() + self.wdt_timeout_ms
            self.wdt_feeds += 1

    def watchdog_expired(self):
        return bool(self.wdt_timeout_ms) and self.world.ticks_ms() > self._wdt_deadline

    def reset_cause(self):
        return self._reset_cause

    # ---- link, memory, idle ----

    def open_link(self):
        if self.link is None:
            self.link = PacedLink(None, clock=self.world.ticks_us, sleep_us=self.world.sleep_us)
        return self.link

    def free_heap(self):
        return gc.mem_free()

    def idle(self):
        # the slow loop has nothing to do: the world moves the line bytes whose time has come and waits until the
        # next period, the next byte on the line or the host sends something (at most ~1 ms)
        self.world.idle(self.link)
