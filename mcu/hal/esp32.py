# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# esp32 backend: encoders on the PCNT peripheral through machine.Encoder (MicroPython >= 1.25) where the port
# has it, else x4 decoding in pin IRQs (portable.QuadDecoder); PWM via PWM.duty_u16; the control loop
# from Timer (hard IRQ where the port accepts hard=True, else a scheduled soft callback: soft = True);
# WDT. Encoder counters are 16 bit here (counter_bits 16): both paths keep them small ints. The Board parts
# shared with rp2/stm32 (MachineBoard, DutyU16Bridge) are in hal/portable.py.
import time

import machine
from machine import PWM, Pin, Timer

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

    def edge_us(self):
        return 0

    def deinit(self):
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

    def edge_us(self):
        return self.dec.st[portable.QD_EDGE_US]

    def deinit(self):
        self.pa.irq(None)
        self.pb.irq(None)


def _make_encoder(kind, pins, default_unit):
    if kind != "irq" and hasattr(machine, "Encoder"):
        return _PcntEncoder(pins.get("pcnt_unit", default_unit), pins["enc_a"], pins["enc_b"])
    if kind == "pcnt":
        raise ValueError('board config: encoder = "pcnt" but this firmware has no machine.Encoder (use "auto")')
    return _IrqEncoder(pins["enc_a"], pins["enc_b"])


def repl_pin_held(cfg):
    """The REPL boot switch (hal.repl_pin_held): the board config's repl_pin at its active level."""
    return portable.machine_repl_pin_held(machine, cfg)


@portable.own_per_period_methods
class Board(portable.MachineBoard):
    def __init__(self, cfg):
        super().__init__(cfg, 16, machine)
        pins = cfg["pins"]
        mode = portable.bridge_mode(cfg)
        self._left = portable.DutyU16Bridge(PWM, Pin, mode, pins["left"], cfg["pwm_freq"])
        self._right = portable.DutyU16Bridge(PWM, Pin, mode, pins["right"], cfg["pwm_freq"])
        kind = cfg.get("encoder", "auto")
        self._enc_l = _make_encoder(kind, pins["left"], 0)
        self._enc_r = _make_encoder(kind, pins["right"], 1)
        if isinstance(self._enc_l, _IrqEncoder):
            # only the IRQ decoder times edges; the optional interface method exists only then (hasattr)
            self.edge_times_us = self._edge_times

    def _edge_times(self, buf):
        buf[0] = self._enc_l.edge_us()
        buf[1] = self._enc_r.edge_us()
        buf[2] = buf[3] = time.ticks_us()   # the counts were read just before: their moment

    def _start_timer(self, hz):
        tid = self.cfg.get("control_timer", 0)
        try:
            t = Timer(tid, mode=Timer.PERIODIC, freq=hz, callback=self._tick, hard=True)
            self.soft = False
            return t
        except (TypeError, ValueError):
            # this port's timer only schedules its callback (it runs between bytecodes, can be delayed by the
            # slow loop's long operations): still periodic, reported as TIMER_SOFT in GET_DIAG
            self.soft = True
            return Timer(tid, mode=Timer.PERIODIC, freq=hz, callback=self._tick)

    def idle(self):
        # slow-path upkeep: keep the PCNT counts far from big-int range
        self._enc_l.rebase()
        self._enc_r.rebase()
        super().idle()
