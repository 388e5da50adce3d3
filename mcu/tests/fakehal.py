# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# A test double of the hal Board interface (mcu/hal/__init__.py) for the firmware's unit tests on the unix port.
# NOT a plant model: the encoder counters are whatever the test sets (counts[]), and time only moves when the
# test fires periods. The virtual board's plant lives in sim/.
from array import array

from viperdrive.shared import protocol


class Stream:
    """The link stream: the test puts bytes in with inject(), takes the board's replies with take()."""

    def __init__(self):
        self.rx = bytearray()
        self.tx = bytearray()
        self.closed = False

    def inject(self, data):
        self.rx.extend(data)

    def readinto(self, buf):
        n = min(len(buf), len(self.rx))
        if n == 0:
            return None
        buf[0:n] = self.rx[0:n]
        self.rx = self.rx[n:]
        return n

    def write(self, buf):
        self.tx.extend(buf)
        return len(buf)

    def take(self):
        out = bytes(self.tx)
        self.tx = bytearray()
        return out

    def close(self):
        self.closed = True


class Board:
    """The hal interface with every effect recorded: duties, energized, watchdog feeds; a fake microsecond clock
    that advances one control period per fired tick (fire()) or per idle() while the loop 'runs'."""

    def __init__(self, cfg=None, counter_bits=32, reset_cause=protocol.RESET_POWER_ON, edge=False):
        self.cfg = cfg or {}
        self.counter_bits = counter_bits
        self.counts = [0, 0]            # raw counters the test sets (wrapped to counter_bits on read)
        self.edges = [0, 0]             # ticks_us of each wheel's last counted edge (only when edge=True)
        self.duty = [0, 0]
        self.duty_log = None            # a list to append (left, right) duties to, when a test wants them
        self.energized = False
        self.energize_calls = []
        self.soft = True
        self.periodic = None
        self.hz = 0
        self.now_us = 1000
        self.wdt_timeout = None
        self.feeds = 0
        self._reset_cause = reset_cause
        self.stream = Stream()
        self.idles = 0
        self.stalled = False            # True: the control timer has died (idle() no longer fires periods)
        self.late = []                  # ticks_us(): the next calls' readings this many us old (a test sets them)
        if edge:
            self.edge_times_us = self._edge_times_us

    # ---- board sensors (the tests set them): inputs word, battery ADC, an I2C bus (I2CBus, sim/imu_parts.py) ----

    inputs = 0
    battery_raw = 0
    bus = None

    def read_inputs(self):
        return self.inputs

    def battery_u16(self):
        return self.battery_raw

    def sensor_bus(self):
        return self.bus

    def read_counts(self, buf):
        m = (1 << self.counter_bits) - 1
        buf[0] = self.counts[0] & m if self.counter_bits < 32 else _wrap32(self.counts[0])
        buf[1] = self.counts[1] & m if self.counter_bits < 32 else _wrap32(self.counts[1])

    def _edge_times_us(self, buf):
        buf[0] = self.edges[0]
        buf[1] = self.edges[1]
        buf[2] = buf[3] = self.now_us & 0x3FFFFFFF     # the counts are the clock's now

    def write_duty(self, left, right):
        if not self.energized:
            left = right = 0
        self.duty[0] = left
        self.duty[1] = right
        if self.duty_log is not None:
            self.duty_log.append((left, right))

    def set_energized(self, on):
        self.energized = bool(on)
        self.energize_calls.append(bool(on))
        if not on:
            self.duty[0] = self.duty[1] = 0

    def start_periodic(self, hz, fn):
        self.hz = hz
        self.periodic = fn

    def stop_periodic(self):
        self.periodic = None

    def fire(self, n=1):
        """Run n control periods now, advancing the fake clock one period before each."""
        fn = self.periodic
        step = 1000000 // (self.hz or 500)
        while n > 0:                    # no range(): fire() runs under heap_lock in the allocation test
            self.now_us += step
            fn()
            n -= 1

    def ticks_us(self):
        if self.late:
            # a clock whose reading is older than its return: CircuitPython's allocates, and a garbage collection
            # between the reading and the return dates it before the collection (late: us per call, in order)
            return (self.now_us - self.late.pop(0)) & 0x3FFFFFFF
        return self.now_us & 0x3FFFFFFF

    def ticks_ms(self):
        return (self.now_us // 1000) & 0x3FFFFFFF

    def watchdog_start(self, timeout_ms):
        self.wdt_timeout = timeout_ms

    def watchdog_feed(self):
        self.feeds += 1

    def reset_cause(self):
        return self._reset_cause

    def open_link(self):
        return self.stream

    def free_heap(self):
        return 123456

    def idle(self):
        # time passes while the slow loop idles: the running control loop gets its period
        self.idles += 1
        if self.periodic is not None and not self.stalled:
            self.fire(1)


def _wrap32(x):
    # the hal contract: raw counters as non-negative ints below 2**32 (array('i') stores the same bits)
    return x & 0xFFFFFFFF


def counts_array():
    return array("i", [0, 0])
