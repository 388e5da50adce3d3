# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# stm32 / pyboard backend: encoders in timer encoder mode (pyb.Timer ENC_AB: the timer counts x4 in hardware,
# 16-bit counters, counter_bits 16), PWM from timer channels, the control loop in a pyb.Timer callback (a hard
# IRQ), machine.WDT (IWDG). Pins are names ("X1", "Y4", "PA0"); each wheel names the timers it uses
# (enc_timer, pwm_timer, pwm_channel [, in2_channel]): the encoder pins must be that timer's CH1 and CH2.
# The Board parts shared with rp2/esp32 (MachineBoard, Bridge) are in hal/portable.py.
from array import array

import machine
import pyb  # type: ignore[import-not-found]

from . import portable


def _timer_af(pin, timer, channel):
    """The alternate-function index that connects pin to TIMx_CHy; ValueError naming both when it cannot."""
    want = "TIM%d_CH%d" % (timer, channel)
    for af in pin.af_list():
        if af.name() == want:
            return af.index()
    raise ValueError("board config: pin %s cannot be %s (check the pin's alternate functions)" % (pin.name(), want))


class _TimerEncoder:
    def __init__(self, timer, pin_a, pin_b):
        for name, ch in ((pin_a, 1), (pin_b, 2)):
            p = pyb.Pin(name)
            pyb.Pin(name, pyb.Pin.AF_PP, pull=pyb.Pin.PULL_UP, af=_timer_af(p, timer, ch))
        # period 0xFFFF: the counter wraps at 16 bits on 16- and 32-bit timers alike (counter() stays a small int)
        self.tim = pyb.Timer(timer, prescaler=0, period=0xFFFF)
        self.tim.channel(1, pyb.Timer.ENC_AB)
        self.tim.counter(0)

    def count(self):
        return self.tim.counter()

    def deinit(self):
        self.tim.deinit()


class _Bridge(portable.Bridge):
    """One wheel's H-bridge on pyb.Timer PWM channels (pulse widths in timer ticks)."""

    def __init__(self, mode, pins, freq, timers):
        self.mode = mode
        self.levels = array("i", (0, 0))
        t = pins["pwm_timer"]
        if t not in timers:
            timers[t] = pyb.Timer(t, freq=freq)
        tim = timers[t]
        # (mult, shift): Q15 -> timer ticks without leaving small-int range (hard IRQ, no allocation)
        self.mult, self.shift = portable.duty_scale(tim.period() + 1)
        if mode == portable.BRIDGE_PWM_DIR:
            self.ch = tim.channel(pins["pwm_channel"], pyb.Timer.PWM, pin=pyb.Pin(pins["pwm"]), pulse_width=0)
            self.dir = pyb.Pin(pins["dir"], pyb.Pin.OUT_PP)
            self.dir.value(0)
        else:
            self.ch = tim.channel(pins["pwm_channel"], pyb.Timer.PWM, pin=pyb.Pin(pins["in1"]), pulse_width=0)
            self.ch2 = tim.channel(pins["in2_channel"], pyb.Timer.PWM, pin=pyb.Pin(pins["in2"]), pulse_width=0)
        self.enable = None
        if "enable" in pins:
            self.enable = pyb.Pin(pins["enable"], pyb.Pin.OUT_PP)
            self.enable.value(0)

    def write(self, q15):
        lv = self.levels
        portable.bridge_levels(self.mode, q15, lv)
        # levels are duty_u16 (0..65535); back to Q15 magnitude (>> 1) and on to this timer's ticks
        if self.mode == portable.BRIDGE_PWM_DIR:
            self.dir.value(lv[1])
            self.ch.pulse_width(((lv[0] >> 1) * self.mult) >> self.shift)
        else:
            self.ch.pulse_width(((lv[0] >> 1) * self.mult) >> self.shift)
            self.ch2.pulse_width(((lv[1] >> 1) * self.mult) >> self.shift)


def repl_pin_held(cfg):
    """The REPL boot switch (hal.repl_pin_held): the board config's repl_pin at its active level."""
    return portable.machine_repl_pin_held(machine, cfg)


@portable.own_per_period_methods
class Board(portable.MachineBoard):
    def __init__(self, cfg):
        super().__init__(cfg, 16, machine)
        pins = cfg["pins"]
        mode = portable.bridge_mode(cfg)
        timers = {}
        self._left = _Bridge(mode, pins["left"], cfg["pwm_freq"], timers)
        self._right = _Bridge(mode, pins["right"], cfg["pwm_freq"], timers)
        self._enc_l = _TimerEncoder(pins["left"]["enc_timer"], pins["left"]["enc_a"], pins["left"]["enc_b"])
        self._enc_r = _TimerEncoder(pins["right"]["enc_timer"], pins["right"]["enc_a"], pins["right"]["enc_b"])

    def _start_timer(self, hz):
        t = pyb.Timer(self.cfg.get("control_timer", 7), freq=hz)
        t.callback(self._tick)          # pyb.Timer callbacks are hard IRQs
        return t

    def stop_periodic(self):
        if self._timer is not None:
            self._timer.callback(None)  # detach the IRQ before the timer goes
        super().stop_periodic()
