# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# CircuitPython backend: rotaryio.IncrementalEncoder (divisor 1 = x4), pwmio.PWMOut, digitalio for DIR and
# enable, microcontroller.watchdog. CircuitPython has no hard timer IRQ and no threads: start_periodic only
# arms a SoftPeriodic schedule and idle() (called by the slow loop whenever it has nothing to do) runs the
# control step when it is due, so soft = True and the slow loop must reach idle() at least once per period.
# No viper here either: the firmware runs its plain-Python step on this backend.
# Pins are board pin names ("GP2", "D5", "A1"): getattr(board, name).
# The link: usb_cdc.data (enable it in boot.py: usb_cdc.enable(console=True, data=True)) or a busio.UART.
# write_duty, set_energized, watchdog_feed, free_heap and deinit are portable.BoardBase's.
import time

import board  # type: ignore[import-not-found]
import digitalio  # type: ignore[import-not-found]
import microcontroller  # type: ignore[import-not-found]
import pwmio  # type: ignore[import-not-found]
import rotaryio  # type: ignore[import-not-found]

from . import portable

_TICKS_MASK = 0x3FFFFFFF        # the same 2**30 wrap as MicroPython's ticks


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
        self._enc_l = rotaryio.IncrementalEncoder(_pin(pins["left"]["enc_a"]), _pin(pins["left"]["enc_b"]), divisor=1)
        self._enc_r = rotaryio.IncrementalEncoder(_pin(pins["right"]["enc_a"]), _pin(pins["right"]["enc_b"]),
                                                  divisor=1)
        self._sched = None
        self._fn = None
        self._wdt = None

    def read_counts(self, buf):
        buf[0] = self._enc_l.position & 0xFFFF
        buf[1] = self._enc_r.position & 0xFFFF

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
