# rp2 (RP2040 / RP2350) backend: quadrature x4 decoding in PIO (the state machine counts, no Python per edge),
# PWM via machine.PWM.duty_u16, control loop from a hard machine.Timer IRQ, machine.WDT.
# See hal/__init__.py for the interface and hal/portable.py for the PIO program (as instruction words, tested
# on the unix port by emulating it).
# mypy: disable-error-code="name-defined"
import gc
import time
from array import array

import machine
import micropython
import rp2

from shared import protocol

from . import portable


_QUAD_WORDS = portable.quadrature_pio_program()


@rp2.asm_pio(in_shiftdir=rp2.PIO.SHIFT_LEFT, out_shiftdir=rp2.PIO.SHIFT_RIGHT)
def _quadrature_program(prog=_QUAD_WORDS):
    # The assembler runs this body with its own globals (word, jmp, ...); the default argument carries the
    # instruction words in. Jump targets are absolute: the 32-word program can only load at offset 0.
    for w in prog:
        word(w)


@micropython.viper
def _copy2(dst, src):
    # word copy in machine integers: a count >= 2**30 read through Python would allocate a big int
    d = ptr32(dst)
    s = ptr32(src)
    d[0] = s[0]
    d[1] = s[1]


class _PioEncoder:
    """One wheel's counter: a state machine running the shared quadrature program on pins enc_a, enc_a + 1."""

    def __init__(self, sm_id, pin_a):
        machine.Pin(pin_a, machine.Pin.IN, machine.Pin.PULL_UP)
        machine.Pin(pin_a + 1, machine.Pin.IN, machine.Pin.PULL_UP)
        self.sm = rp2.StateMachine(sm_id, _quadrature_program, in_base=machine.Pin(pin_a))
        self.sm.exec(portable.PIO_PRIME)
        self.sm.active(1)

    def stop(self):
        self.sm.active(0)


class _Bridge:
    """One wheel's H-bridge outputs for the configured driver type."""

    def __init__(self, mode, pins, freq):
        self.mode = mode
        self.levels = array("i", (0, 0))
        if mode == portable.BRIDGE_PWM_DIR:
            self.pwm = machine.PWM(machine.Pin(pins["pwm"]), freq=freq, duty_u16=0)
            self.dir = machine.Pin(pins["dir"], machine.Pin.OUT, value=0)
        else:
            self.pwm = machine.PWM(machine.Pin(pins["in1"]), freq=freq, duty_u16=0)
            self.pwm2 = machine.PWM(machine.Pin(pins["in2"]), freq=freq, duty_u16=0)
        self.enable = machine.Pin(pins["enable"], machine.Pin.OUT, value=0) if "enable" in pins else None

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


class Board:
    soft = False

    def __init__(self, cfg):
        self.cfg = cfg
        self.counter_bits = 32      # the PIO counter is the 32-bit Y register
        pins = cfg["pins"]
        mode = portable.BRIDGE_PWM_DIR if cfg["driver"] == "pwm_dir" else portable.BRIDGE_IN1_IN2
        self.energized = False
        self._left = _Bridge(mode, pins["left"], cfg["pwm_freq"])
        self._right = _Bridge(mode, pins["right"], cfg["pwm_freq"])
        pio = cfg.get("pio", 0)
        # state machines 4*pio and 4*pio+1: one PIO block, one copy of the program for both wheels
        self._enc_l = _PioEncoder(4 * pio, pins["left"]["enc_a"])
        self._enc_r = _PioEncoder(4 * pio + 1, pins["right"]["enc_a"])
        # sm.get(buf) fills a buffer: a one-word view per wheel into our own array, so a count >= 2**30 never
        # becomes a heap int (allocation-free in the hard IRQ)
        self._raw = array("i", (0, 0))
        mv = memoryview(self._raw)
        self._raw_l = mv[0:1]
        self._raw_r = mv[1:2]
        self._timer = None
        self._wdt = None
        self._cause = machine.reset_cause()

    def read_counts(self, buf):
        # request (nonzero word) -> the program pushes Y within ~10 PIO cycles; get() waits for that word
        self._enc_l.sm.put(1)
        self._enc_r.sm.put(1)
        self._enc_l.sm.get(self._raw_l)
        self._enc_r.sm.get(self._raw_r)
        _copy2(buf, self._raw)

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
        self._timer = machine.Timer(self.cfg.get("control_timer", -1), mode=machine.Timer.PERIODIC, freq=hz,
                                    callback=self._tick, hard=True)

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
        self._wdt = machine.WDT(timeout=timeout_ms)

    def watchdog_feed(self):
        if self._wdt is not None:
            self._wdt.feed()

    def reset_cause(self):
        c = self._cause
        if c == machine.WDT_RESET:
            return protocol.RESET_WATCHDOG
        if c == machine.PWRON_RESET:
            return protocol.RESET_POWER_ON
        if c == getattr(machine, "SOFT_RESET", -1):
            return protocol.RESET_SOFT
        return protocol.RESET_OTHER

    def open_link(self):
        from . import streams
        return streams.open_stream(self.cfg["link"])

    def free_heap(self):
        return gc.mem_free()

    def idle(self):
        time.sleep_ms(1)

    def deinit(self):
        """Outputs off, timer stopped, state machines stopped (the watchdog cannot be stopped)."""
        self.stop_periodic()
        self.set_energized(False)
        self._enc_l.stop()
        self._enc_r.stop()
