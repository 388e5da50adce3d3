# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# rp2 (RP2040 / RP2350) backend: quadrature x4 decoding in PIO (the state machine counts and times the edges, no
# Python per edge),
# PWM via machine.PWM.duty_u16, control loop from a hard machine.Timer IRQ, machine.WDT.
# See hal/__init__.py for the interface and hal/portable.py for the PIO program (as instruction words, tested
# on the unix port by emulating it) and the Board parts rp2 shares with esp32/stm32 (MachineBoard, DutyU16Bridge).
# mypy: disable-error-code="name-defined"
import sys
import time
from array import array

import machine
import micropython
import rp2
from micropython import const

from ..shared import protocol
from . import portable

# WATCHDOG.REASON: why the last reset came through the watchdog. Bit 0 TIMER: it bit (nobody fed it). Bit 1 FORCE: a
# reboot was asked for (machine.reset(), mpremote reset, picotool reboot: the SDK's watchdog_reboot sets
# CTRL.TRIGGER). The rp2 port's machine.reset_cause() says WDT_RESET for both.
_WATCHDOG_REASON = const(0x40058008)
_REASON_TIMER = const(1)
# register blocks of the period function (RP2040 datasheet: PWM 4.5, TIMER 4.6, PIO 3.7, SIO 2.3.1)
_PWM_BASE = 0x40050000
_TIMERAWL_WORD = const(0x4028 // 4)   # TIMER 0x40054000 + TIMERAWL 0x028, in words from PWM's base
_PIO_BASE = (0x50200000, 0x50300000)
_SIO_BASE = 0xD0000000
_WD_ON = const(9)               # _duty_registers: 1 while energized
_WD_SB = const(10)              # _duty_registers: -2**31, sign-extends ptr32 loads on 64-bit hosts ((x ^ sb) - sb)
_WD_MHZ = const(11)             # _duty_registers: system clocks per us (the PIO's edge-timer ticks -> us)
_EXECCTRL = (0x0CC, 0x0E4, 0x0FC, 0x114)   # SMn_EXECCTRL in a PIO block
# edge-timer ticks converted to us at most (portable.PIO_TICKS_MAX, as a constant viper inlines; a test checks
# they agree): the timer is read only in a period whose count changed, so it holds less than one period (125 000
# ticks at 1 ms); the cap keeps ticks * 8 far from 32 bits
PIO_TICKS_MAX = const(16777216)
PIO_LOOP_CYCLES = const(8)      # portable.PIO_LOOP_CYCLES, as a constant viper inlines (a test checks they agree)


_QUAD_WORDS = portable.quadrature_pio_program()


@rp2.asm_pio(in_shiftdir=rp2.PIO.SHIFT_LEFT, out_shiftdir=rp2.PIO.SHIFT_RIGHT, autopush=True, push_thresh=32)
def _quadrature_program(prog=_QUAD_WORDS):
    # The assembler runs this body with its own globals (word, jmp, ...); the default argument carries the
    # instruction words in. Jump targets are absolute: the 32-word program can only load at offset 0.
    for w in prog:
        word(w)


@micropython.viper
def _pairs(raw, c, e, t_us: int, mhz: int):
    """The (timer, count) pairs of both wheels in raw (x_l, y_l, x_r, y_r, as the PIO pushed them), taken at t_us
    -> the counts into c; into e, where a timer holds a recent edge, its time (ticks_us), and t_us as the moment of
    each count (the hal's edge_times_us layout). Machine integers: a count >= 2**30 read through Python would
    allocate a big int."""
    r = ptr32(raw)
    cc = ptr32(c)
    ee = ptr32(e)
    sb = int(-2147483647) - 1
    i = 0
    while i < 2:
        cc[i] = r[2 * i + 1]
        n = -1 - ((int(r[2 * i]) ^ sb) - sb)        # ~X: edge-timer ticks since the last edge
        if n >= 0 and n < PIO_TICKS_MAX:
            ee[i] = (t_us - (n * PIO_LOOP_CYCLES) // mhz) & 0x3FFFFFFF
        ee[2 + i] = t_us
        i += 1


class _PioEncoder:
    """One wheel's counter and edge timer: a state machine running the shared program on pins enc_a, enc_a + 1."""

    def __init__(self, sm_id, pin_a):
        machine.Pin(pin_a, machine.Pin.IN, machine.Pin.PULL_UP)
        machine.Pin(pin_a + 1, machine.Pin.IN, machine.Pin.PULL_UP)
        sm = rp2.StateMachine(sm_id, _quadrature_program, in_base=machine.Pin(pin_a))
        self.sm = sm
        if sys.platform == "rp2":
            # STATUS = the RX FIFO below one word: the program pushes its pair whenever the FIFO is empty
            machine.mem32[_PIO_BASE[sm_id >> 2] + _EXECCTRL[sm_id & 3]] |= portable.PIO_EXECCTRL_STATUS
        # X, Y, OSR and the FIFOs survive a soft reset: the count and the timer start at 0, OSR with the resting
        # state of the pins, and a word left in RX by the previous run is dropped
        sm.exec(portable.PIO_CLEAR_X)
        sm.exec(portable.PIO_CLEAR_Y)
        sm.exec(portable.PIO_PRIME)
        while sm.rx_fifo():
            sm.get()
        sm.active(1)

    def read(self, timer, count):
        """The pair queued since the last read, then the pair the program pushes as soon as that one is taken:
        the timer and the count now, into timer and count (one-word views made once: a slice per call would
        allocate). The period function reads the FIFO itself; this serves read_counts."""
        sm = self.sm
        sm.get(timer)
        sm.get(count)
        sm.get(timer)
        sm.get(count)

    def deinit(self):
        self.sm.active(0)


def _duty_registers(mode, pins):
    """array('i') for the period function's duty writes: the bridge mode, then per wheel (CC word, channel B?, DIR
    pin mask or IN2's CC word, IN2 channel B?), then 1 while energized (_WD_ON, kept by set_energized), -2**31
    (_WD_SB) and the system clock in MHz (_WD_MHZ, set by Board). A pin's PWM is slice (pin >> 1) & 7, channel A
    (even) or B (odd)."""
    def cc(pin):
        return ((pin >> 1) & 7) * 5 + 3, pin & 1

    out = [0 if mode == portable.BRIDGE_PWM_DIR else 1]
    for w in ("left", "right"):
        p = pins[w]
        if mode == portable.BRIDGE_PWM_DIR:
            word, ch = cc(p["pwm"])
            out += [word, ch, 1 << p["dir"], 0]
        else:
            word, ch = cc(p["in1"])
            word2, ch2 = cc(p["in2"])
            out += [word, ch, word2, ch2]
    return array("i", out + [0, -2147483648, 125])


def repl_pin_held(cfg):
    """The REPL boot switch (hal.repl_pin_held): the board config's repl_pin at its active level."""
    return portable.machine_repl_pin_held(machine, cfg)


@portable.own_per_period_methods
class Board(portable.MachineBoard):
    def __init__(self, cfg):
        super().__init__(cfg, 32, machine)      # the PIO counter is the 32-bit Y register
        self._wd_reason = machine.mem32[_WATCHDOG_REASON]     # read once: the reason of THIS boot
        pins = cfg["pins"]
        mode = portable.bridge_mode(cfg)
        self._left = portable.DutyU16Bridge(machine.PWM, machine.Pin, mode, pins["left"], cfg["pwm_freq"])
        self._right = portable.DutyU16Bridge(machine.PWM, machine.Pin, mode, pins["right"], cfg["pwm_freq"])
        pio = cfg.get("pio", 0)
        # state machines 4*pio and 4*pio+1: one PIO block, one copy of the program for both wheels
        self._enc_l = _PioEncoder(4 * pio, pins["left"]["enc_a"])
        self._enc_r = _PioEncoder(4 * pio + 1, pins["right"]["enc_a"])
        # sm.get(buf) fills a buffer: views into our own array (timer, count per wheel), so a count >= 2**30
        # never becomes a heap int
        self._raw = array("i", (0, 0, 0, 0))
        mv = memoryview(self._raw)
        self._raw_words = (mv[0:1], mv[1:2], mv[2:3], mv[3:4])
        self._edges = array("i", (0, 0, 0, 0))    # edge_times_us as of the last read_counts
        self._wd = _duty_registers(mode, pins)
        self._wd[_WD_MHZ] = machine.freq() // 1000000 if hasattr(machine, "freq") else 125
        self._period = None
        # the registers period_fn works on: PWM with TIMER (one view: TIMER is 16 KiB above PWM), the encoders' PIO
        # block, SIO. On the chip, views of the memory (uctypes.bytearray_at: ptr32 of one is its address);
        # elsewhere (the unix port's tests with stand-in machine/rp2 modules) None: read_counts/write_duty go
        # through StateMachine.put/get and machine.PWM / machine.Pin, the same protocol and the same levels
        self._regs = None
        if sys.platform == "rp2":
            import uctypes
            self._regs = (uctypes.bytearray_at(_PWM_BASE, 4 * _TIMERAWL_WORD + 4),
                          uctypes.bytearray_at(_PIO_BASE[pio], 0x28), uctypes.bytearray_at(_SIO_BASE, 0x1C))

    def reset_cause(self):
        code = super().reset_cause()
        if code == protocol.RESET_WATCHDOG and not self._wd_reason & _REASON_TIMER:
            # a reboot somebody asked for, not a hang the watchdog caught: no FAULT_WATCHDOG to latch
            return protocol.RESET_SOFT
        return code

    def read_counts(self, buf):
        w = self._raw_words
        self._enc_l.read(w[0], w[1])
        self._enc_r.read(w[2], w[3])
        _pairs(self._raw, buf, self._edges, time.ticks_us(), self._wd[_WD_MHZ])

    def edge_times_us(self, buf):
        """When each wheel's last counted edge came, then when its count was taken (ticks_us), as of the last
        read_counts (hal interface)."""
        e = self._edges
        buf[0] = e[0]
        buf[1] = e[1]
        buf[2] = e[2]
        buf[3] = e[3]

    def set_energized(self, on):
        # the period function writes the duties while the table's energized word is set: off before the bridges
        # go off (a period that runs in between writes nothing), on once they are on
        if not on:
            self._wd[_WD_ON] = 0
        super().set_energized(on)
        if self.energized:
            self._wd[_WD_ON] = 1

    def period_fn(self, step, st, k, c, e, io, tail, ctl):
        """The whole control period as one viper call (hal interface, optional: hal/__init__.py), on the chip's
        registers: io[0] = ticks_us (TIMERAWL); both wheels' counts from the PIO FIFOs into c and, where a wheel's
        edge timer is recent, its last edge's ticks_us into e (the protocol of _PioEncoder.read); step(st, k, c,
        e, io); the duties io[2], io[3] to the PWM compare and DIR/IN2 registers (cc = |q| * (TOP + 1) / 2**15,
        rounded: 32767 is full on; nothing while de-energized); tail() when ctl[0], or when ctl[1] and
        st[ctl[2]] == 0; io[1] = ticks_us last. None where there are no registers (the unix port's tests give
        _regs arrays standing in for them).

        One call per period instead of eight: on the emulated RP2040 a Python-level call costs ~10 us, and the
        tick's calls around the step were more than half of the period's time (docs/firmware.md, "Timing").
        Bounded: a state machine that does not answer within 2000 polls leaves its count as it was.
        Allocation-free: a closure call copies its closed-over objects and its argument into one array, on the
        C stack only up to 5 of them (on the heap beyond), so the period closes over four, the rest in a tuple."""
        if self._regs is None:
            return None
        perif, pio, sio = self._regs
        env = (st, k, e, ctl, self._wd, pio, sio, perif, tail)
        if "estop" in self.cfg:
            # the pin an input with its pull, once: the period then reads SIO GPIO_IN (one load) for the e-stop
            self.read_inputs()

        @micropython.viper
        def period(_t):
            o = ptr32(io)
            ps = ptr32(env[7])                      # PWM 0x40050000 (slice n at word 5n: CC +3, TOP +4), TIMER
            o[0] = ps[_TIMERAWL_WORD] & 0x3FFFFFFF  # ... at 0x40054000: TIMERAWL, as time.ticks_us() reads it
            sw = ptr32(env[6])                      # SIO 0xd0000000: GPIO_IN word 1, GPIO_OUT_SET 5, GPIO_OUT_CLR 6
            o[4] = sw[1]                            # every GPIO's level, the e-stop's too (the step checks it)
            p = ptr32(env[5])
            b = ptr32(c)
            ed = ptr32(env[2])
            w = ptr32(env[4])                       # _duty_registers: ... sign bit, MHz
            sb = w[_WD_SB]
            i = 0
            while i < 2:
                # machine i's RX FIFO (RXF0 0x020, RXF1 0x024; FSTAT 0x004 bit 8 + i: empty): the pair queued since
                # the last period, then the pair the program pushes as soon as that one is taken (the timer and the
                # count now, read_counts' protocol). Bounded: a machine that does not answer within 2000 polls
                # leaves its count as it was
                j = 0
                x = 0
                y = 0
                while j < 4:
                    n = 0
                    while p[1] & (0x100 << i):
                        n += 1
                        if n > 2000:
                            break
                    if n > 2000:
                        break
                    if j & 1:
                        y = p[8 + i]
                    else:
                        x = p[8 + i]
                    j += 1
                if j == 4:
                    b[i] = y
                    t = ps[_TIMERAWL_WORD] & 0x3FFFFFFF     # the pair's moment: it was pushed a loop ago
                    ed[2 + i] = t
                    n = -1 - ((x ^ sb) - sb)        # ~X: edge-timer ticks since the last edge
                    if n >= 0 and n < PIO_TICKS_MAX:
                        ed[i] = (t - (n * PIO_LOOP_CYCLES) // w[_WD_MHZ]) & 0x3FFFFFFF
                i += 1
            sa = env[0]
            step(sa, env[1], c, env[2], io)
            if w[_WD_ON]:                           # _duty_registers: mode, per wheel 4 words, energized
                mode = w[0]
                sb = w[_WD_SB]
                i = 0
                while i < 2:
                    q = (o[2 + i] ^ sb) - sb
                    if q > 32767:
                        q = 32767
                    if q < -32767:
                        q = -32767
                    mag = q
                    if q < 0:
                        mag = 0 - q
                    j = 1 + 4 * i
                    cc = w[j]
                    val = (mag * ((ps[cc + 1] & 0xFFFF) + 1) + 16383) >> 15
                    hi = val
                    lo = 0
                    if mode != 0 and q < 0:
                        hi = 0
                        lo = val
                    v = ps[cc]
                    if w[j + 1]:
                        ps[cc] = (v & 0xFFFF) | (hi << 16)
                    else:
                        ps[cc] = (v & ~0xFFFF) | hi
                    if mode == 0:
                        if q >= 0:
                            sw[5] = w[j + 2]
                        else:
                            sw[6] = w[j + 2]
                    else:
                        cc2 = w[j + 2]
                        v = ps[cc2]
                        if w[j + 3]:
                            ps[cc2] = (v & 0xFFFF) | (lo << 16)
                        else:
                            ps[cc2] = (v & ~0xFFFF) | lo
                    i += 1
            f = ptr32(env[3])
            if f[0]:
                env[8]()
            elif f[1]:
                s = ptr32(sa)
                if s[f[2]] == 0:
                    env[8]()
            o[1] = ps[_TIMERAWL_WORD] & 0x3FFFFFFF

        self._period = period
        return period

    def _start_timer(self, hz):
        # the period function takes the timer argument itself: one Python-level call less per period
        cb = self._fn if self._fn is self._period else self._tick
        return machine.Timer(self.cfg.get("control_timer", -1), mode=machine.Timer.PERIODIC, freq=hz,
                             callback=cb, hard=True)
