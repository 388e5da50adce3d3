# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Port-independent logic of the hardware backends: quadrature decoding, the PIO encoder program as data, duty
# conversion, H-bridge mappings, counter wrap, a soft periodic scheduler, and the parts of Board the backends
# share (BoardBase, MachineBoard, DutyU16Bridge: the port's classes and modules are passed in). Nothing here
# imports a port module, so the unix port tests every function that the rp2/esp32/stm32/circuitpython backends
# run on the chip. No viper here: CircuitPython imports this module too.
#
# Quadrature state: s = A | (B << 1). Counting UP is A leading B: 0 -> 1 -> 3 -> 2 -> 0 (x4: every edge of
# both channels counts). A transition index is (previous << 2) | current.
import gc
import time
from array import array

from micropython import const

from ..shared import protocol

# ---- quadrature transition table ----

QUAD_UP = (1, 3, 0, 2)          # next state when counting up, indexed by the current state: 0->1->3->2->0


def _make_quad_tables():
    step = [0] * 16
    illegal = [0] * 16
    for prev in range(4):
        up = QUAD_UP[prev]
        for cur in range(4):
            i = (prev << 2) | cur
            if cur == prev:
                continue                    # no edge (or an edge and its glitch back: nothing to count)
            if cur == up:
                step[i] = 1
            elif QUAD_UP[cur] == prev:
                step[i] = -1
            else:
                illegal[i] = 1              # both channels changed at once: direction unknown, count nothing
    return tuple(step), tuple(illegal)


QUAD_STEP, QUAD_ILLEGAL = _make_quad_tables()


def quad_state(a, b):
    return (a & 1) | ((b & 1) << 1)


# QuadDecoder.st indices (array('i')): the IRQ handler writes them, the control step reads COUNT
QD_STATE = const(0)             # last quadrature state
QD_COUNT = const(1)             # x4 count, wrapped to [0, 2**bits)
QD_ILLEGAL = const(2)           # transitions with both channels changed (missed edge: too fast or noise)
QD_EDGE_US = const(3)           # ticks_us of the last counted edge
QD_PERIOD_US = const(4)         # us between the last two counted edges in the same direction, 0 if none
QD_DIR = const(5)               # direction of the last counted edge: +1, -1, 0 before the first


class QuadDecoder:
    """Software x4 quadrature decoder, driven with the pin levels at every edge of either channel.

    edge(a, b, t_us) is what a pin IRQ calls: small-int arithmetic on one preallocated array, no allocation,
    so it may run in a hard IRQ. The count wraps at 2**bits (16 by default: stays a small int on every port).
    """

    def __init__(self, a=0, b=0, bits=16):
        self.mask = (1 << bits) - 1
        self.st = array("i", (quad_state(a, b), 0, 0, 0, 0, 0))

    def edge(self, a, b, t_us=0):
        st = self.st
        cur = (a & 1) | ((b & 1) << 1)
        i = (st[QD_STATE] << 2) | cur
        st[QD_STATE] = cur
        d = QUAD_STEP[i]
        if d == 0:
            if QUAD_ILLEGAL[i]:
                st[QD_ILLEGAL] += 1
            return
        st[QD_COUNT] = (st[QD_COUNT] + d) & self.mask
        # Edge period only between two edges in the same direction: a reversal says nothing about speed.
        if st[QD_DIR] == d:
            st[QD_PERIOD_US] = (t_us - st[QD_EDGE_US]) & 0x3FFFFFFF
        else:
            st[QD_PERIOD_US] = 0
        st[QD_DIR] = d
        st[QD_EDGE_US] = t_us


def ticks_diff(a, b):
    """a - b of two hal tick readings (ticks_us/ticks_ms) for short intervals: the tick counters wrap at 2**30 on
    some ports (small ints), and CircuitPython's time module has no ticks_diff."""
    return ((a - b + 0x20000000) & 0x3FFFFFFF) - 0x20000000


def wrap_delta(now, prev, bits):
    """Signed difference now - prev of two raw counter readings of a counter wrapping at 2**bits.

    Correct while the true motion between the readings is below half the counter range. Slow-path helper
    (the control step does the same in viper); readings may be given as signed or unsigned bit patterns.
    """
    half = 1 << (bits - 1)
    return ((now - prev + half) & ((1 << bits) - 1)) - half


# ---- the rp2 PIO program, as instruction words ----
# One state machine per wheel counts the x4 quadrature edges and times them: the time since the last edge comes
# from a loop counter, because a state machine cannot read the chip's timer. The technique (a loop of a fixed
# number of cycles that counts down a register, reset at every edge) is the one of the RP2040 SDK's example
# pio/quadrature_encoder_substep; the program below is our own, for the layout this firmware needs.
#
# Registers: Y = the count (32 bit, wraps); X = the edge timer: ~0 at an edge, one less every idle loop, so ~X is
# the number of idle loops since the last edge (each PIO_LOOP_CYCLES system clocks); OSR's low 2 bits = the
# previous pin state, inverted; ISR = scratch.
# The pair (X, Y) is pushed (autopush at 32 bits, two `in` of 32) whenever the RX FIFO is empty (EXECCTRL
# STATUS_SEL = RX, STATUS_N = 1: `mov pc, ~status` goes to 0 when it is empty, else to 31), so the FIFO holds one
# pair from just after the CPU's last read; the CPU pops it and waits for the next pair, pushed within one loop,
# which is the count and the timer now. Nothing is ever asked of the program and it never stalls.
# Layout: 0-15 code, 16-31 a jump table. Each sample makes ISR = ~prev << 2 | cur (`out isr, 2` takes the
# inverted previous state from OSR and sets ISR's bit count to 2, `in pins, 2` adds the current one), then OSR =
# ~ISR = prev << 2 | ~cur with every higher bit set, so `mov pc, osr` jumps to 16 + (prev << 2 | ~cur), and OSR's
# low bits are already the next sample's inverted previous state. Entry 31 (prev 3, cur 0: both channels changed,
# illegal) is also where `mov pc, ~status` lands when the FIFO is full: both go back to the sample.
# Every path of a loop without an edge takes PIO_LOOP_CYCLES = 8 instructions (one cycle each, no delays; a loop
# that pushes takes one more), so the timer is a clock: ~X * 8 system clocks since the last edge (64 ns at
# 125 MHz). The count and timer survive from sample to push unchanged: a pair is consistent.

PIO_PUSH = const(0)             # in x, 32; in y, 32: the pair
PIO_SAMPLE = const(2)
PIO_INCR = const(6)
PIO_DECR = const(11)
PIO_IDLE = const(14)
PIO_TABLE = const(16)
PIO_LOOP_CYCLES = const(8)      # system clocks per idle loop: one timer tick

_PIO_JMP = const(0x0000)
_PIO_IN = const(0x4000)
_PIO_OUT = const(0x6000)
_PIO_MOV = const(0xA000)
# jmp conditions
_C_ALWAYS = const(0)
_C_X_DEC = const(2)
_C_Y_DEC = const(4)
# sources / destinations
_R_PINS = const(0)
_R_X = const(1)
_R_Y = const(2)
_R_NULL = const(3)
_R_PC = const(5)
_R_STATUS = const(5)
_R_ISR = const(6)
_R_OSR = const(7)
_MOV_INVERT = const(0x08)

# Executed by the CPU (sm.exec) before the state machine starts. A state machine keeps X, Y, OSR and its FIFOs
# across a soft reset (Ctrl-D) and a new StateMachine(): the count starts at 0 (`mov y, null`), the timer at 0
# (`mov x, null`: no edge yet; the CPU takes a time from the timer only in a period whose count changed), and OSR
# with the encoder's real resting state (`mov osr, ~pins`), so the first sample is not taken for an edge from
# state 0 (which would count +-1 at boot for an encoder resting at state 1 or 2).
PIO_CLEAR_X = const(0xA023)
PIO_CLEAR_Y = const(0xA043)
PIO_PRIME = const(0xA0E8)
# EXECCTRL's STATUS_SEL (bit 4: the RX FIFO) and STATUS_N (bits 3:0: level below which STATUS is all ones): 1
PIO_EXECCTRL_STATUS = const(0x11)


# edge-timer ticks converted to us at most: the timer is read only in a period whose count changed, so it holds
# less than one period; the cap keeps ticks * PIO_LOOP_CYCLES far from 32 bits
PIO_TICKS_MAX = const(16777216)


def pio_edge_us(t_us, x, mhz):
    """ticks_us of a wheel's last edge from its PIO timer word x (signed, as pushed: ~x loops since the edge)
    read at t_us, the system clock in MHz; -1 where the timer holds no recent edge."""
    n = -1 - x
    if n < 0 or n >= PIO_TICKS_MAX:
        return -1
    return (t_us - (n * PIO_LOOP_CYCLES) // mhz) & 0x3FFFFFFF


def _jmp(cond, addr):
    return _PIO_JMP | (cond << 5) | addr


def _mov(dst, src, op=0):
    return _PIO_MOV | (dst << 5) | op | src


def quadrature_pio_program():
    """The 32 PIO instruction words of the x4 quadrature counter with its edge timer (see the comment above)."""
    prog = [
        _PIO_IN | (_R_X << 5),                      # 0 push: X (autopush at 32)
        _PIO_IN | (_R_Y << 5),                      # 1        Y
        _PIO_OUT | (_R_ISR << 5) | 2,               # 2 sample: ISR = ~prev (2 bits)
        _PIO_IN | (_R_PINS << 5) | 2,               # 3          ISR = ~prev << 2 | B A
        _mov(_R_OSR, _R_ISR, _MOV_INVERT),          # 4          OSR = prev << 2 | ~cur, bit 4 set
        _mov(_R_PC, _R_OSR),                        # 5          -> 16 + (prev << 2 | ~cur)
        _mov(_R_Y, _R_Y, _MOV_INVERT),              # 6 incr: Y += 1 as Y = ~(~Y - 1)
        _jmp(_C_Y_DEC, 8),
        _mov(_R_Y, _R_Y, _MOV_INVERT),
        _mov(_R_X, _R_NULL, _MOV_INVERT),           # 9        the timer restarts: X = ~0
        _mov(_R_PC, _R_STATUS, _MOV_INVERT),        # 10       RX FIFO empty -> 0 (push), else -> 31
        _jmp(_C_Y_DEC, 12),                         # 11 decr: Y -= 1 (Y = 0 falls through: the same place)
        _mov(_R_X, _R_NULL, _MOV_INVERT),           # 12       the timer restarts
        _mov(_R_PC, _R_STATUS, _MOV_INVERT),        # 13
        _jmp(_C_X_DEC, 15),                         # 14 idle: the timer ticks (X = 0 falls through: the same)
        _mov(_R_PC, _R_STATUS, _MOV_INVERT),        # 15
    ]
    for i in range(16):
        prev = i >> 2
        cur = 3 - (i & 3)                           # the table is indexed by the inverted current state
        j = (prev << 2) | cur
        d = QUAD_STEP[j]
        if d > 0:
            prog.append(_jmp(_C_ALWAYS, PIO_INCR))
        elif d < 0:
            prog.append(_jmp(_C_ALWAYS, PIO_DECR))
        elif QUAD_ILLEGAL[j]:
            prog.append(_jmp(_C_ALWAYS, PIO_SAMPLE))    # direction unknown: count nothing (31: no push either)
        else:
            prog.append(_jmp(_C_ALWAYS, PIO_IDLE))
    return prog


# ---- duty conversion and H-bridge mapping ----
# Duty arrives as signed Q15: -32767..32767 = full reverse..full forward. Conversions stay below 2**30 so
# every intermediate is a small int (no allocation in a hard IRQ on a 32-bit port).

Q15_MAX = const(32767)

BRIDGE_PWM_DIR = const(0)       # one PWM pin (magnitude) + one DIR pin (sign): Cytron MDD10, many carriers
BRIDGE_IN1_IN2 = const(1)       # two PWM inputs, the idle one low (fast decay): DRV8833, TB6612-less L298N use


def bridge_mode(cfg):
    """The BRIDGE_* mapping of a validated board config: "driver" "pwm_dir", else two PWM inputs (in1_in2)."""
    return BRIDGE_PWM_DIR if cfg["driver"] == "pwm_dir" else BRIDGE_IN1_IN2


def clamp_q15(q):
    if q > Q15_MAX:
        return Q15_MAX
    if q < -Q15_MAX:
        return -Q15_MAX
    return q


def q15_to_u16(mag):
    """|duty| in 0..32767 -> 0..65535 (duty_u16, CircuitPython duty_cycle); error <= 1 count, 32767 -> 65535."""
    return (mag << 1) + (mag >> 14)


def duty_scale(period):
    """(mult, shift) so that (mag * mult) >> shift maps 0..32767 onto 0..period (timer ticks), error <= 2.

    mult stays <= 32768, so mag * mult < 2**30: a small-int product on every port (no allocation in an IRQ).
    """
    shift = 0
    while shift < 30 and (period << (shift + 1)) // Q15_MAX < 32768:
        shift += 1
    mult = ((period << shift) + Q15_MAX // 2) // Q15_MAX
    return mult, shift


def scale_duty(mag, mult, shift):
    return (mag * mult) >> shift


def bridge_levels(mode, q15, out):
    """Map a signed Q15 duty to the bridge inputs, written into out (array of 2): no allocation.

    BRIDGE_PWM_DIR: out = (pwm duty_u16, dir level 1 forward / 0 reverse).
    BRIDGE_IN1_IN2: out = (in1 duty_u16, in2 duty_u16); forward drives IN1, reverse IN2, the other stays low so
    the bridge coasts between pulses (fast decay), and 0 leaves both low (coast).
    """
    q = clamp_q15(q15)
    if mode == BRIDGE_PWM_DIR:
        if q >= 0:
            out[0] = q15_to_u16(q)
            out[1] = 1
        else:
            out[0] = q15_to_u16(-q)
            out[1] = 0
    else:
        if q >= 0:
            out[0] = q15_to_u16(q)
            out[1] = 0
        else:
            out[0] = 0
            out[1] = q15_to_u16(-q)


# ---- soft periodic scheduling (ports without a usable hard timer) ----

class SoftPeriodic:
    """Fixed-rate schedule kept on a wrapping microsecond tick: due(now) -> True when a call is due.

    The schedule advances by exactly one period per call (dt stays the constant period); when it falls more
    than `max_late` periods behind it jumps to now and counts the skipped periods in `overruns` rather than
    running a burst of catch-up calls (a burst would compute many steps on one stale measurement).
    """

    def __init__(self, hz, now_us, max_late=2):
        self.period_us = 1000000 // hz
        self.next_us = now_us
        self.max_late = max_late
        self.overruns = 0

    def due(self, now_us):
        late = ((now_us - self.next_us + 0x20000000) & 0x3FFFFFFF) - 0x20000000
        if late < 0:
            return False
        if late >= self.max_late * self.period_us:
            skipped = late // self.period_us
            self.overruns += skipped
            self.next_us = (self.next_us + (skipped + 1) * self.period_us) & 0x3FFFFFFF
            return True
        self.next_us = (self.next_us + self.period_us) & 0x3FFFFFFF
        return True


# ---- the parts of Board the hardware backends share ----

def reset_code(cause, watchdog, power_on, soft):
    """shared.protocol RESET_* of a port's reset cause, given that port's values for the three we tell apart."""
    if cause == watchdog:
        return protocol.RESET_WATCHDOG
    if cause == power_on:
        return protocol.RESET_POWER_ON
    if cause == soft:
        return protocol.RESET_SOFT
    return protocol.RESET_OTHER


class Bridge:
    """One wheel's H-bridge outputs. A subclass sets mode (BRIDGE_*), levels (2 ints for bridge_levels) and enable
    (an output pin with value(v), or None), and defines write(q15): the signed Q15 duty, no allocation."""

    def energize(self, on):
        # duty 0 before the enable pin drops: the outputs coast even on a bridge without an enable pin
        if not on:
            self.write(0)
        if self.enable is not None:
            self.enable.value(1 if on else 0)


class DutyU16Bridge(Bridge):
    """A Bridge on machine.PWM outputs (duty_u16) and machine.Pin pins, as rp2 and esp32 have them.

    pwm_cls, pin_cls: the port's PWM and Pin classes; pins: one wheel's pins of the board config.
    """

    def __init__(self, pwm_cls, pin_cls, mode, pins, freq):
        self.mode = mode
        self.levels = array("i", (0, 0))
        if mode == BRIDGE_PWM_DIR:
            self.pwm = pwm_cls(pin_cls(pins["pwm"]), freq=freq, duty_u16=0)
            self.dir = pin_cls(pins["dir"], pin_cls.OUT, value=0)
        else:
            self.pwm = pwm_cls(pin_cls(pins["in1"]), freq=freq, duty_u16=0)
            self.pwm2 = pwm_cls(pin_cls(pins["in2"]), freq=freq, duty_u16=0)
        self.enable = pin_cls(pins["enable"], pin_cls.OUT, value=0) if "enable" in pins else None

    def write(self, q15):
        lv = self.levels
        bridge_levels(self.mode, q15, lv)
        if self.mode == BRIDGE_PWM_DIR:
            self.dir.value(lv[1])
            self.pwm.duty_u16(lv[0])
        else:
            self.pwm.duty_u16(lv[0])
            self.pwm2.duty_u16(lv[1])


class BoardBase:
    """What every hardware backend's Board does the same way (the interface is in hal/__init__.py).

    The subclass's __init__ sets cfg, counter_bits, energized = False, _wdt = None, _left/_right (Bridge-like:
    write(q15), energize(on)) and _enc_l/_enc_r (encoders with deinit(), and count() -> raw counter unless the
    subclass has its own read_counts), and defines the periodic, ticks, watchdog_start, reset_cause, open_link
    and idle methods.
    """
    soft = False

    def read_counts(self, buf):
        buf[0] = self._enc_l.count()
        buf[1] = self._enc_r.count()

    def write_duty(self, left, right):
        # de-energized means outputs off: a control step still running after set_energized(False) is ignored
        if not self.energized:
            return
        self._left.write(left)
        self._right.write(right)

    def set_energized(self, on):
        self.energized = bool(on)
        self._left.energize(self.energized)
        self._right.energize(self.energized)

    def watchdog_feed(self):
        if self._wdt is not None:
            self._wdt.feed()

    def free_heap(self):
        return gc.mem_free()

    def deinit(self):
        """Outputs off, control timer stopped, encoders released (the watchdog cannot be stopped)."""
        self.stop_periodic()
        self.set_energized(False)
        self._enc_l.deinit()
        self._enc_r.deinit()


class MachineBoard(BoardBase):
    """BoardBase on MicroPython's machine module: rp2, esp32, stm32.

    machine: the backend's machine module (passed in: this module imports no port module). The subclass makes
    its bridges and encoders and defines _start_timer(hz) -> a periodic timer that calls self._tick, with
    deinit(); it sets self.soft when that timer is not a hard IRQ.
    """

    def __init__(self, cfg, counter_bits, machine):
        self.cfg = cfg
        self.counter_bits = counter_bits
        self.energized = False
        self._machine = machine
        self._timer = None
        self._wdt = None
        self._cause = machine.reset_cause()     # read once: the cause of THIS boot

    def start_periodic(self, hz, fn):
        self.stop_periodic()
        self._fn = fn
        self._timer = self._start_timer(hz)

    def _tick(self, _t):
        self._fn()

    def stop_periodic(self):
        if self._timer is not None:
            self._timer.deinit()
            self._timer = None

    # the port's own functions, not methods wrapping them: a builtin found on the class is not bound to the
    # instance, so board.ticks_us() is one call instead of two (the control tick reads it twice per period).
    # getattr: this module is imported on CircuitPython too, whose time has no ticks (its backend keeps its own)
    ticks_us = getattr(time, "ticks_us", None)
    ticks_ms = getattr(time, "ticks_ms", None)

    def repl_pin_held(self):
        return machine_repl_pin_held(self._machine, self.cfg)

    def watchdog_start(self, timeout_ms):
        self._wdt = self._machine.WDT(timeout=timeout_ms)

    def reset_cause(self):
        m = self._machine
        return reset_code(self._cause, m.WDT_RESET, m.PWRON_RESET, getattr(m, "SOFT_RESET", -1))

    def open_link(self):
        from . import streams
        return streams.open_stream(self.cfg["link"])

    def idle(self):
        time.sleep_ms(1)

    # ---- board sensors (optional hal methods; the firmware calls them only when the board config has the part) ----

    def read_inputs(self):
        """The digital inputs word: the e-stop pin's level at bit estop.pin (a GPIO number; bit 0 for a pin name).
        Called in the control period: one Pin.value(), no allocation."""
        pin = self._estop_pin
        if pin is None:
            est = self.cfg["estop"]
            pull = {"up": self._machine.Pin.PULL_UP, "down": self._machine.Pin.PULL_DOWN}.get(est["pull"])
            pin = self._machine.Pin(est["pin"], self._machine.Pin.IN, pull)
            self._estop_pin = pin
            self._estop_shift = est["pin"] if isinstance(est["pin"], int) else 0
        return pin.value() << self._estop_shift

    _estop_pin = None
    _estop_shift = 0

    def sensor_bus(self):
        """The IMU's I2C bus (machine.I2C: readfrom_mem_into / writeto_mem raise OSError on a NACK or a timeout).
        A short transfer timeout: a dead bus costs the slow loop milliseconds, not the default 50 ms."""
        imu = self.cfg["imu"]
        m = self._machine
        kw = {"sda": m.Pin(imu["sda"]), "scl": m.Pin(imu["scl"]), "freq": imu["freq"]}
        try:
            return m.I2C(imu["i2c"], timeout=5000, **kw)
        except TypeError:           # a port whose I2C takes no timeout
            return m.I2C(imu["i2c"], **kw)

    def battery_u16(self):
        """The battery divider's ADC reading, 0..65535 for 0..battery.vref volts at the pin."""
        adc = self._adc
        if adc is None:
            adc = self._machine.ADC(self._machine.Pin(self.cfg["battery"]["adc"]))
            self._adc = adc
        return adc.read_u16()

    _adc = None


def machine_repl_pin_held(machine, cfg):
    """The boot switch on a machine.Pin port (rp2, esp32, stm32): the board config's repl_pin at its active level
    (low with repl_pull "up", the default; high with "down"). False without a repl_pin.

    machine: the port's machine module (the backend passes it in: this module imports no port module)."""
    if "repl_pin" not in cfg:
        return False
    pin_cls = machine.Pin
    up = cfg.get("repl_pull", "up") == "up"
    pin = pin_cls(cfg["repl_pin"], pin_cls.IN, pin_cls.PULL_UP if up else pin_cls.PULL_DOWN)
    return pin.value() == (0 if up else 1)


PER_PERIOD_METHODS = ("read_counts", "write_duty", "ticks_us")


def own_per_period_methods(cls):
    """Class decorator for a backend's Board: the PER_PERIOD_METHODS it inherits become entries of its own dict.

    The fallback controller (control_float.py) looks them up on the board every control period, and an
    attribute lookup that has to walk up to BoardBase costs more (unix port: ~0.08 us per call two levels up).
    The code stays the base class's; only where the lookup finds it moves. A method the backend defines itself
    is set to itself (no change). Plain methods only (getattr on the class gives the function itself); no use of
    cls.__dict__, which small CircuitPython builds lack.
    """
    for name in PER_PERIOD_METHODS:
        if hasattr(cls, name):
            setattr(cls, name, getattr(cls, name))
    return cls
