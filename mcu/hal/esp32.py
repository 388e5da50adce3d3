# esp32 backend: encoders on the PCNT peripheral through machine.Encoder (MicroPython >= 1.25) where the port
# has it, else x4 decoding in pin IRQs (portable.QuadDecoder); PWM via PWM.duty_u16; the control loop
# from Timer (hard IRQ where the port accepts hard=True, else a scheduled soft callback: soft = True);
# WDT. Encoder counters are 16 bit here (counter_bits 16): both paths keep them small ints.
import gc
import time
from array import array

import machine
from machine import PWM, WDT, Pin, Timer

from shared import protocol

from . import portable

_REBASE = 1 << 28       # PCNT: re-zero the hardware count once it is this far from 0 (see Board.idle)


class _PcntEncoder:
    def __init__(self, unit, pin_a, pin_b):
        self.enc = machine.Encoder(unit, Pin(pin_a, Pin.IN, Pin.PULL_UP),
                                   Pin(pin_b, Pin.IN, Pin.PULL_UP), phases=4)
        self.offset = 0

    def count(self):
        # small ints only while |value| < 2**30: idle() re-zeroes long before that
        return (self.enc.value() + self.offset) & 0xFFFF

    def rebase(self):
        v = self.enc.value()
        if -_REBASE < v < _REBASE:
            return
        # Read-and-zero with interrupts off so the control IRQ never sees the half-moved count. Edges in the
        # few microseconds between the hardware read and clear can be lost: once per 2**28 counts.
        state = machine.disable_irq()
        try:
            self.offset = (self.offset + self.enc.value(0)) & 0xFFFF
        finally:
            machine.enable_irq(state)

    def period_us(self):
        return 0

    def stop(self):
        self.enc.deinit()


class _IrqEncoder:
    """x4 decoding in pin-change IRQs: every edge of A or B runs QuadDecoder.edge (allocation-free)."""

    def __init__(self, pin_a, pin_b):
        self.pa = Pin(pin_a, Pin.IN, Pin.PULL_UP)
        self.pb = Pin(pin_b, Pin.IN, Pin.PULL_UP)
        self.dec = portable.QuadDecoder(self.pa.value(), self.pb.value(), 16)
        trig = Pin.IRQ_RISING | Pin.IRQ_FALLING
        try:
            self.pa.irq(self._edge, trig, hard=True)
            self.pb.irq(self._edge, trig, hard=True)
        except TypeError:
            self.pa.irq(self._edge, trig)
            self.pb.irq(self._edge, trig)

    def _edge(self, _pin):
        self.dec.edge(self.pa.value(), self.pb.value(), time.ticks_us())

    def count(self):
        return self.dec.st[portable.QD_COUNT]

    def rebase(self):
        pass

    def period_us(self):
        return self.dec.st[portable.QD_PERIOD_US]

    def stop(self):
        self.pa.irq(None)
        self.pb.irq(None)


class _Bridge:
    def __init__(self, mode, pins, freq):
        self.mode = mode
        self.levels = array("i", (0, 0))
        if mode == portable.BRIDGE_PWM_DIR:
            self.pwm = PWM(Pin(pins["pwm"]), freq=freq, duty_u16=0)
            self.dir = Pin(pins["dir"], Pin.OUT, value=0)
        else:
            self.pwm = PWM(Pin(pins["in1"]), freq=freq, duty_u16=0)
            self.pwm2 = PWM(Pin(pins["in2"]), freq=freq, duty_u16=0)
        self.enable = Pin(pins["enable"], Pin.OUT, value=0) if "enable" in pins else None

    def write(self, q15):
        lv = self.levels
        portable.bridge_levels(self.mode, q15, lv)
        if self.mode == portable.BRIDGE_PWM_DIR:
            self.dir.value(lv[1])
            self.pwm.duty_u16(lv[0])
        else:
            self.pwm.duty_u16(lv[0])
            self.pwm2.duty_u16(lv[1])

    def energize(self, on):
        if not on:
            self.write(0)
        if self.enable is not None:
            self.enable.value(1 if on else 0)


def _make_encoder(kind, pins, default_unit):
    if kind != "irq" and hasattr(machine, "Encoder"):
        return _PcntEncoder(pins.get("pcnt_unit", default_unit), pins["enc_a"], pins["enc_b"])
    if kind == "pcnt":
        raise ValueError('board config: encoder = "pcnt" but this firmware has no machine.Encoder (use "auto")')
    return _IrqEncoder(pins["enc_a"], pins["enc_b"])


class Board:
    def __init__(self, cfg):
        self.cfg = cfg
        self.counter_bits = 16
        self.soft = False
        pins = cfg["pins"]
        mode = portable.BRIDGE_PWM_DIR if cfg["driver"] == "pwm_dir" else portable.BRIDGE_IN1_IN2
        self.energized = False
        self._left = _Bridge(mode, pins["left"], cfg["pwm_freq"])
        self._right = _Bridge(mode, pins["right"], cfg["pwm_freq"])
        kind = cfg.get("encoder", "auto")
        self._enc_l = _make_encoder(kind, pins["left"], 0)
        self._enc_r = _make_encoder(kind, pins["right"], 1)
        if isinstance(self._enc_l, _IrqEncoder):
            # only the IRQ decoder times edges; the optional interface method exists only then (hasattr)
            self.edge_period_us = self._edge_periods
        self._timer = None
        self._wdt = None
        self._cause = machine.reset_cause()

    def read_counts(self, buf):
        buf[0] = self._enc_l.count()
        buf[1] = self._enc_r.count()

    def _edge_periods(self, buf):
        buf[0] = self._enc_l.period_us()
        buf[1] = self._enc_r.period_us()

    def write_duty(self, left, right):
        if not self.energized:
            return
        self._left.write(left)
        self._right.write(right)

    def set_energized(self, on):
        self.energized = bool(on)
        self._left.energize(self.energized)
        self._right.energize(self.energized)

    def start_periodic(self, hz, fn):
        self.stop_periodic()
        self._fn = fn
        tid = self.cfg.get("control_timer", 0)
        try:
            self._timer = Timer(tid, mode=Timer.PERIODIC, freq=hz, callback=self._tick, hard=True)
            self.soft = False
        except (TypeError, ValueError):
            # this port's timer only schedules its callback (it runs between bytecodes, can be delayed by the
            # slow loop's long operations): still periodic, reported as TIMER_SOFT in GET_DIAG
            self._timer = Timer(tid, mode=Timer.PERIODIC, freq=hz, callback=self._tick)
            self.soft = True

    def _tick(self, _t):
        self._fn()

    def stop_periodic(self):
        if self._timer is not None:
            self._timer.deinit()
            self._timer = None

    def ticks_us(self):
        return time.ticks_us()

    def ticks_ms(self):
        return time.ticks_ms()

    def watchdog_start(self, timeout_ms):
        self._wdt = WDT(timeout=timeout_ms)

    def watchdog_feed(self):
        if self._wdt is not None:
            self._wdt.feed()

    def reset_cause(self):
        c = self._cause
        if c == machine.WDT_RESET:
            return protocol.RESET_WATCHDOG
        if c == machine.PWRON_RESET:
            return protocol.RESET_POWER_ON
        if c == machine.SOFT_RESET:
            return protocol.RESET_SOFT
        return protocol.RESET_OTHER

    def open_link(self):
        from . import streams
        return streams.open_stream(self.cfg["link"])

    def free_heap(self):
        return gc.mem_free()

    def idle(self):
        # slow-path upkeep: keep the PCNT counts far from big-int range
        self._enc_l.rebase()
        self._enc_r.rebase()
        time.sleep_ms(1)

    def deinit(self):
        self.stop_periodic()
        self.set_energized(False)
        self._enc_l.stop()
        self._enc_r.stop()
