# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# CircuitPython backend: the encoders on the RP2040/RP2350 in PIO through rp2pio (the same program as the rp2
# backend's, hal/portable.py: x4 counts and each edge's time, so the speed comes from edge times and the edge
# regularity check works), elsewhere rotaryio.IncrementalEncoder (divisor 1 = x4; counts only, no edge times);
# pwmio.PWMOut, digitalio for DIR and enable, microcontroller.watchdog. CircuitPython has no hard timer IRQ
# and no threads: start_periodic only arms a SoftPeriodic schedule and idle() (called by the slow loop whenever
# it has nothing to do) runs the control step when it is due, so soft = True and the slow loop must reach idle()
# at least once per period.
# No viper here either: the firmware runs its plain-Python step on this backend.
# Pins are board pin names ("GP2", "D5", "A1"): getattr(board, name).
# The link: usb_cdc.data (enable it in boot.py: usb_cdc.enable(console=True, data=True)) or a busio.UART.
# write_duty, set_energized, watchdog_feed, free_heap and deinit are portable.BoardBase's.
import time
from array import array

import board  # type: ignore[import-not-found]
import digitalio  # type: ignore[import-not-found]
import microcontroller  # type: ignore[import-not-found]
import pwmio  # type: ignore[import-not-found]
import rotaryio  # type: ignore[import-not-found]

from . import portable

_TICKS_MASK = 0x3FFFFFFF        # the same 2**30 wrap as MicroPython's ticks
READ_WINDOW_US = 400            # a PIO read bracketed by clock reads this close: its moment known to +-200 us


def _pin(name):
    if not isinstance(name, str) or not hasattr(board, name):
        raise ValueError("board config: pin %s is not a pin name of this board (see dir(board))" % (name,))
    return getattr(board, name)


def _out(name):
    p = digitalio.DigitalInOut(_pin(name))
    p.direction = digitalio.Direction.OUTPUT
    p.value = False
    return p


class _Bridge:
    def __init__(self, mode, pins, freq):
        self.mode = mode
        self.levels = [0, 0]
        if mode == portable.BRIDGE_PWM_DIR:
            self.pwm = pwmio.PWMOut(_pin(pins["pwm"]), frequency=freq, duty_cycle=0)
            self.dir = _out(pins["dir"])
        else:
            self.pwm = pwmio.PWMOut(_pin(pins["in1"]), frequency=freq, duty_cycle=0)
            self.pwm2 = pwmio.PWMOut(_pin(pins["in2"]), frequency=freq, duty_cycle=0)
        self.enable = _out(pins["enable"]) if "enable" in pins else None

    def write(self, q15):
        lv = self.levels
        portable.bridge_levels(self.mode, q15, lv)
        if self.mode == portable.BRIDGE_PWM_DIR:
            self.dir.value = bool(lv[1])
            self.pwm.duty_cycle = lv[0]
        else:
            self.pwm.duty_cycle = lv[0]
            self.pwm2.duty_cycle = lv[1]

    def energize(self, on):
        if not on:
            self.write(0)
        if self.enable is not None:
            self.enable.value = bool(on)


class _SerialStream:
    """usb_cdc.Serial or busio.UART (timeout 0) as the link stream."""

    def __init__(self, port):
        self.port = port
        self.port.timeout = 0

    def readinto(self, buf):
        n = self.port.in_waiting
        if not n:
            return None
        if n > len(buf):
            n = len(buf)
        return self.port.readinto(memoryview(buf)[0:n])

    def write(self, buf):
        return self.port.write(buf)

    def close(self):
        if hasattr(self.port, "deinit"):
            self.port.deinit()


@portable.own_per_period_methods
def repl_pin_held(cfg):
    """The REPL boot switch (hal.repl_pin_held): repl_pin at its active level (low with repl_pull "up"), read
    through digitalio (CircuitPython has no machine.Pin). The pin is released again: the firmware may use it."""
    if "repl_pin" not in cfg:
        return False
    up = cfg.get("repl_pull", "up") == "up"
    p = digitalio.DigitalInOut(_pin(cfg["repl_pin"]))
    try:
        p.direction = digitalio.Direction.INPUT
        p.pull = digitalio.Pull.UP if up else digitalio.Pull.DOWN
        return p.value == (not up)
    finally:
        p.deinit()


def _gpio_number(pin):
    """The GPIO number of a board pin (microcontroller.pin.GPIOn is the same object), None if it has none."""
    for name in dir(microcontroller.pin):
        if name.startswith("GPIO") and getattr(microcontroller.pin, name) is pin:
            return int(name[4:])
    return None


def _pio_ready(pins):
    """rp2pio where the port has it and each wheel's enc_b is the GPIO after its enc_a (one PIO `in pins, 2`)."""
    try:
        import rp2pio  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    for w in ("left", "right"):
        a = _gpio_number(_pin(pins[w]["enc_a"]))
        b = _gpio_number(_pin(pins[w]["enc_b"]))
        if a is None or b != a + 1:
            return False
    return True


class _PioEncoder:
    """One wheel's x4 counter and edge timer: a state machine running the rp2 backend's program (hal/portable.py)
    on enc_a, enc_a + 1. rp2pio sets what MicroPython writes to registers: STATUS = RX FIFO below one word
    (mov_status_type/n); it runs init (CLEAR_X, CLEAR_Y, PRIME) after clearing the FIFOs and before it starts
    the machine, as the rp2 backend's sm.exec calls."""

    def __init__(self, pin_a):
        import rp2pio  # type: ignore[import-not-found]
        sm = rp2pio.StateMachine(
            array("H", portable.quadrature_pio_program()), 0, first_in_pin=_pin(pin_a), in_pin_count=2,
            pull_in_pin_up=3, auto_push=True, push_threshold=32, in_shift_right=False, out_shift_right=True,
            offset=0,  # the program's jumps are absolute
            init=array("H", (portable.PIO_CLEAR_X, portable.PIO_CLEAR_Y, portable.PIO_PRIME)),
            mov_status_type="rxfifo", mov_status_n=1)
        self.sm = sm
        # readinto(words): the pair queued since the last read, then the one the program pushes at once, the
        # (timer, count) now in words[2], words[3]. The bound method is made once: a call allocates nothing
        self.readinto = sm.readinto
        self.words = array("i", (0, 0, 0, 0))

    def deinit(self):
        self.sm.deinit()


class _RotaryEncoder:
    def __init__(self, pin_a, pin_b):
        self.enc = rotaryio.IncrementalEncoder(_pin(pin_a), _pin(pin_b), divisor=1)

    def count(self):
        return self.enc.position & 0xFFFF

    def deinit(self):
        self.enc.deinit()


class Board(portable.BoardBase):
    soft = True

    def __init__(self, cfg):
        self.cfg = cfg
        self.counter_bits = 16
        pins = cfg["pins"]
        mode = portable.bridge_mode(cfg)
        self.energized = False
        self._left = _Bridge(mode, pins["left"], cfg["pwm_freq"])
        self._right = _Bridge(mode, pins["right"], cfg["pwm_freq"])
        if _pio_ready(pins):
            self.counter_bits = 32
            self._enc_l = _PioEncoder(pins["left"]["enc_a"])
            self._enc_r = _PioEncoder(pins["right"]["enc_a"])
            self._mhz = microcontroller.cpu.frequency // 1000000
            self._edges = array("i", (0, 0, 0, 0))
            self.edge_times_us = self._edge_times_us    # hal interface, optional: only with edge times
        else:
            self._enc_l = _RotaryEncoder(pins["left"]["enc_a"], pins["left"]["enc_b"])
            self._enc_r = _RotaryEncoder(pins["right"]["enc_a"], pins["right"]["enc_b"])
            self._edges = None
        self._sched = None
        self._fn = None
        self._wdt = None

    def read_counts(self, buf):
        if self._edges is None:
            super().read_counts(buf)
            return
        self._read_pio(0, self._enc_l, buf)
        self._read_pio(1, self._enc_r, buf)

    def _read_pio(self, i, enc, buf):
        # The pair is the program's at the moment readinto takes the queued one (it pushes the next within 64 ns),
        # and that moment must be timed to a fraction of an edge interval. CircuitPython's clock allocates (a big
        # int of ns): a garbage collection between the clock and the read moved the moment by milliseconds, one
        # wheel's speed from edge times jumped to twice the true one and latched FAULT_OVERSPEED. So each read is
        # bracketed by two clock reads with nothing allocated between them, taken again when they are more than
        # READ_WINDOW_US apart, and timed at their middle.
        w = enc.words
        for _ in range(3):
            t0 = self.ticks_us()
            enc.readinto(w)
            t1 = self.ticks_us()
            span = (t1 - t0) & _TICKS_MASK
            if span <= READ_WINDOW_US:
                break
        t = (t0 + span // 2) & _TICKS_MASK
        buf[i] = w[3]
        e = self._edges
        edge = portable.pio_edge_us(t, w[2], self._mhz)
        if edge >= 0:
            e[i] = edge
        e[2 + i] = t

    def _edge_times_us(self, buf):
        """When each wheel's last counted edge came, then when its count was taken (ticks_us), as of the last
        read_counts."""
        e = self._edges
        for i in range(4):
            buf[i] = e[i]

    def start_periodic(self, hz, fn):
        self._fn = fn
        self._sched = portable.SoftPeriodic(hz, self.ticks_us())

    def stop_periodic(self):
        self._sched = None
        self._fn = None

    @property
    def overruns(self):
        """Control periods skipped because the slow loop reached idle() too late."""
        return self._sched.overruns if self._sched is not None else 0

    def ticks_us(self):
        return (time.monotonic_ns() // 1000) & _TICKS_MASK

    def ticks_ms(self):
        return (time.monotonic_ns() // 1000000) & _TICKS_MASK

    @staticmethod
    def ticks_diff(a, b):
        """a - b for two ticks of this backend (CircuitPython's time has no ticks_diff)."""
        return ((a - b + 0x20000000) & _TICKS_MASK) - 0x20000000

    def watchdog_start(self, timeout_ms):
        from watchdog import WatchDogMode  # type: ignore[import-not-found]
        wdt = microcontroller.watchdog
        wdt.timeout = timeout_ms / 1000
        wdt.mode = WatchDogMode.RESET
        self._wdt = wdt

    def reset_cause(self):
        rr = microcontroller.ResetReason
        return portable.reset_code(microcontroller.cpu.reset_reason, rr.WATCHDOG, rr.POWER_ON, rr.SOFTWARE)

    def open_link(self):
        link = self.cfg["link"]
        if link["type"] == "uart":
            import busio  # type: ignore[import-not-found]
            uart = busio.UART(_pin(link["tx"]), _pin(link["rx"]), baudrate=link["baud"], timeout=0,
                              receiver_buffer_size=512)
            return _SerialStream(uart)
        import usb_cdc  # type: ignore[import-not-found]
        if usb_cdc.data is None:
            raise ValueError("usb_cdc.data is off: add usb_cdc.enable(console=True, data=True) to boot.py")
        return _SerialStream(usb_cdc.data)

    def repl_pin_held(self):
        return repl_pin_held(self.cfg)

    def idle(self):
        # the control step runs here: no timer IRQ on CircuitPython
        s = self._sched
        if s is not None and s.due(self.ticks_us()):
            self._fn()
            return
        time.sleep(0.0002)
