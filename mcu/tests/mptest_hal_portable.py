# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The port-independent logic the hardware backends run on the chip (hal/portable.py): the rp2 PIO quadrature
# program executed by a small PIO interpreter, the pin-IRQ decoder, duty conversions, bridge mappings, counter
# wrap, the soft periodic schedule, and the Board parts the backends share (driven with small doubles of the
# port's classes: the backends pass theirs in).
import random
from array import array

import micropython

from viperdrive.hal import portable
from viperdrive.shared import protocol

M32 = 0xFFFFFFFF
UP = portable.QUAD_UP           # counting-up state sequence 0 -> 1 -> 3 -> 2


# ---- a PIO interpreter for the subset the program uses (RP2040 datasheet semantics) ----

class Pio:
    """One state machine as hal/rp2.py configures it: in_shiftdir LEFT with autopush at 32 bits, out_shiftdir
    RIGHT, STATUS = all ones while the RX FIFO holds fewer than status_n words, 4-deep FIFOs. One instruction per
    cycle (the program has no delays)."""

    def __init__(self, prog, pins=0, y=0, x=0, status_n=1):
        assert len(prog) == 32
        self.prog = prog
        self.pc = 0
        self.x = x & M32
        self.y = y & M32
        self.isr = 0
        self.isr_count = 0
        self.osr = 0
        self.pins = pins
        self.rx = []
        self.status_n = status_n
        self.cycles = 0
        self.stalled = 0

    def _src(self, s):
        if s == 0:
            return self.pins & M32
        if s == 1:
            return self.x
        if s == 2:
            return self.y
        if s == 3:
            return 0
        if s == 5:
            return M32 if len(self.rx) < self.status_n else 0
        if s == 6:
            return self.isr
        if s == 7:
            return self.osr
        raise AssertionError("unsupported source %d" % s)

    def step(self):
        self.pc = self._execute(self.prog[self.pc])

    def exec(self, ins):
        """What sm.exec(ins) does: run one instruction word now; only a jump or a write to PC moves PC."""
        new = self._execute(ins)
        if ins >> 13 == 0 or (ins >> 13 in (3, 5) and (ins >> 5) & 7 == 5):
            self.pc = new

    def _execute(self, ins):
        """Run one instruction at the current PC; returns the PC that follows it."""
        assert ins & 0x1F00 == 0, "no delay/side-set expected"
        op = ins >> 13
        nxt = (self.pc + 1) & 31
        self.cycles += 1
        if op == 0:                                     # JMP
            cond = (ins >> 5) & 7
            if cond == 0:
                take = True
            elif cond == 2:
                take = self.x != 0
                self.x = (self.x - 1) & M32
            elif cond == 4:
                take = self.y != 0
                self.y = (self.y - 1) & M32
            else:
                raise AssertionError("unsupported jmp condition %d" % cond)
            return (ins & 31) if take else nxt
        elif op == 2:                                   # IN (shift left), autopush at 32
            n = (ins & 31) or 32
            v = self._src((ins >> 5) & 7) & ((1 << n) - 1)
            self.isr = ((self.isr << n) | v) & M32
            self.isr_count = min(32, self.isr_count + n)
            if self.isr_count >= 32:
                if len(self.rx) >= 4:
                    self.stalled += 1                   # the program must never get here
                else:
                    self.rx.append(self.isr)
                self.isr = 0
                self.isr_count = 0
            return nxt
        elif op == 3:                                   # OUT (shift right)
            dst = (ins >> 5) & 7
            n = ins & 31
            val = self.osr & ((1 << n) - 1)
            self.osr >>= n
            if dst == 6:
                self.isr = val
                self.isr_count = n
                return nxt
            assert dst == 5, "only `out isr` and `out pc` expected"
            return val
        elif op == 5:                                   # MOV
            dst = (ins >> 5) & 7
            val = self._src(ins & 7)
            if (ins >> 3) & 3 == 1:
                val = ~val & M32
            if dst == 1:
                self.x = val
            elif dst == 2:
                self.y = val
            elif dst == 5:
                return val & 31
            elif dst == 6:
                self.isr = val
                self.isr_count = 0
            elif dst == 7:
                self.osr = val
            else:
                raise AssertionError("unsupported mov destination %d" % dst)
            return nxt
        raise AssertionError("unexpected opcode %d at %d" % (op, self.pc))

    def run(self, n):
        for _ in range(n):
            self.step()

    def pop(self):
        for _ in range(64):
            if self.rx:
                return self.rx.pop(0)
            self.step()
        raise AssertionError("nothing pushed within 64 cycles")

    def read_pair(self):
        """What the CPU does (rp2 _PioEncoder.read): the pair queued since the last read, then the one pushed as
        soon as that is taken. -> (timer X, count Y) now."""
        self.pop()
        self.pop()
        return self.pop(), self.pop()

    def read_count(self):
        return self.read_pair()[1]


def _signed32(v):
    return v - (1 << 32) if v & 0x80000000 else v


def _walk(pio, states, spacing=24):
    for s in states:
        pio.pins = s
        pio.run(spacing)


def _seq(start, n, direction):
    """n quadrature states after start, moving up (+1) or down (-1)."""
    out = []
    s = start
    for _ in range(n):
        if direction > 0:
            s = UP[s]
        else:
            s = UP.index(s)
        out.append(s)
    return out


def _started(prog, pins=0, x=0, y=0, rx=()):
    """A state machine started the way rp2._PioEncoder starts one (whatever the previous run left in X, Y, RX)."""
    pio = Pio(prog, pins=pins, x=x, y=y)
    pio.rx.extend(rx)
    for ins in (portable.PIO_CLEAR_X, portable.PIO_CLEAR_Y, portable.PIO_PRIME):
        pio.exec(ins)
    pio.rx = []
    return pio


def test_pio_prime_takes_the_resting_state():
    prog = portable.quadrature_pio_program()
    # the words rp2.py executes, against the datasheet's MOV layout: 101 | delay 00000 | dest | op | source
    mov = lambda dest, op, src: (0b101 << 13) | (dest << 5) | (op << 3) | src     # noqa: E731
    assert portable.PIO_CLEAR_X == mov(0b001, 0, 0b011)         # X <- NULL
    assert portable.PIO_CLEAR_Y == mov(0b010, 0, 0b011)         # Y <- NULL
    assert portable.PIO_PRIME == mov(0b111, 1, 0b000)           # OSR <- ~PINS
    for rest in (1, 2, 3):
        cold = Pio(prog, pins=rest)
        primed = _started(prog, pins=rest)
        # without priming the first sample reads as an edge from state 0 (OSR = 0: the inverted state 3)
        assert abs(_signed32(cold.read_count())) in (1, 0) and primed.read_count() == 0
    assert _signed32(Pio(prog, pins=1).read_count()) != 0


def test_pio_restart_with_leftovers_reads_the_current_count():
    # the previous run was stopped (Ctrl-D) with a count in Y, a timer in X and a pair still in RX: the start
    # sequence clears them, so the first read is the count since the start
    prog = portable.quadrature_pio_program()
    stale = Pio(prog, x=12345, y=5000)
    stale.rx.extend((7, 5000))
    _walk(stale, _seq(0, 40, +1))
    assert stale.read_count() != 40
    pio = _started(prog, x=12345, y=5000, rx=(7, 5000))
    _walk(pio, _seq(0, 40, +1))
    assert pio.read_count() == 40


def test_pio_program_shape():
    prog = portable.quadrature_pio_program()
    assert len(prog) == 32          # fills the PIO memory: loaded at offset 0, as the absolute table needs
    for w in prog:
        assert 0 <= w <= 0xFFFF and w & 0x1F00 == 0     # no delays: rp2040js ignores them, the timer needs none
    for i in range(16):
        ins = prog[portable.PIO_TABLE + i]
        assert ins >> 5 == 0, "table entries are unconditional jumps"
        prev, cur = i >> 2, 3 - (i & 3)
        d = portable.QUAD_STEP[(prev << 2) | cur]
        want = portable.PIO_INCR if d > 0 else portable.PIO_DECR if d < 0 else portable.PIO_IDLE
        if portable.QUAD_ILLEGAL[(prev << 2) | cur]:
            want = portable.PIO_SAMPLE
        assert ins & 31 == want, (i, ins & 31, want)
    assert prog[31] & 31 == portable.PIO_SAMPLE         # also where a full FIFO sends the loop


def test_transition_table_x4():
    # every legal edge counts once, same-state counts nothing, the four double changes are illegal
    ups = downs = illegal = 0
    for prev in range(4):
        for cur in range(4):
            i = (prev << 2) | cur
            d = portable.QUAD_STEP[i]
            if d > 0:
                ups += 1
                assert UP[prev] == cur
            elif d < 0:
                downs += 1
                assert UP[cur] == prev
            if portable.QUAD_ILLEGAL[i]:
                illegal += 1
                assert d == 0 and (prev ^ cur) == 3
    assert (ups, downs, illegal) == (4, 4, 4)


def test_pio_counts_x4_both_directions():
    pio = _started(portable.quadrature_pio_program())
    _walk(pio, _seq(0, 1000, +1))
    assert pio.read_count() == 1000
    _walk(pio, _seq(pio.pins, 1600, -1))
    assert _signed32(pio.read_count()) == -600
    assert pio.read_count() == 0xFFFFFFFF & -600     # a second read gets the same count
    assert pio.stalled == 0


def test_pio_ignores_illegal_jumps_and_holds():
    pio = _started(portable.quadrature_pio_program())
    _walk(pio, _seq(0, 8, +1))      # ends at state 0
    pio.pins = 3                    # both channels at once: direction unknown
    pio.run(40)
    pio.pins = 0
    pio.run(40)
    assert pio.read_count() == 8
    pio.run(500)                    # no edges: nothing counts, however long it loops
    assert pio.read_count() == 8


def test_pio_count_wraps_at_32_bits():
    pio = _started(portable.quadrature_pio_program())
    pio.y = 0xFFFFFFFD
    _walk(pio, _seq(0, 5, +1))
    assert pio.read_count() == 2
    _walk(pio, _seq(pio.pins, 4, -1))
    assert pio.read_count() == 0xFFFFFFFE
    assert portable.wrap_delta(2, 0xFFFFFFFE, 32) == 4


def test_pio_timer_ticks_every_loop_and_restarts_at_each_edge():
    # ~X after an edge counts idle loops of PIO_LOOP_CYCLES cycles: the time since the edge to one loop
    pio = _started(portable.quadrature_pio_program())
    for gap in (1, 7, 100, 3000):
        s = _seq(pio.pins, 1, +1)[0]
        pio.pins = s
        t_edge = pio.cycles
        pio.run(24)                 # the edge is sampled and the timer restarted
        pio.run(gap * portable.PIO_LOOP_CYCLES)
        x, _ = pio.read_pair()
        ticks = ~x & M32
        elapsed = pio.cycles - t_edge
        # the read's own pushes add a cycle each; the edge's loop is longer than an idle one
        assert abs(ticks * portable.PIO_LOOP_CYCLES - elapsed) <= 3 * portable.PIO_LOOP_CYCLES, (gap, ticks, elapsed)


def test_pio_reads_at_random_times_lose_no_edge_and_time_each():
    # edges arrive asynchronously, at least 20 PIO cycles apart (6 MHz edge rate at 125 MHz), while the CPU reads
    # at random moments: every edge is counted, every count is the count at that moment, and the timer says how
    # long ago the last edge was, within two loops
    random.seed(7)
    rand = random.randrange
    pio = _started(portable.quadrature_pio_program())
    expected = 0
    state = 0
    t_edge = 0
    for _ in range(1500):
        direction = 1 if rand(0, 3) else -1
        state = UP[state] if direction > 0 else UP.index(state)
        pio.pins = state
        expected += direction
        t_edge = pio.cycles
        gap = rand(20, 45)
        if rand(0, 4) == 0:
            x, y = pio.read_pair()
            got = _signed32(y)
            # the edge just applied may or may not have been sampled yet when the pair was pushed
            assert got in (expected, expected - direction), (got, expected)
            if got == expected:
                assert abs((~x & M32) * portable.PIO_LOOP_CYCLES - (pio.cycles - t_edge)) <= 20
        pio.run(gap)
    assert _signed32(pio.read_count()) == expected and pio.stalled == 0


def test_pio_loop_is_short():
    # the longest path between two samples bounds the edge rate the counter follows; an idle loop is exactly
    # PIO_LOOP_CYCLES long (the timer's tick)
    pio = _started(portable.quadrature_pio_program())
    longest = 0
    idle = set()
    last = None
    state = 0
    for k in range(400):
        if k % 3 == 0:
            state = UP[state]
            pio.pins = state
        if k % 5 == 0:
            pio.rx = []             # the CPU took the pair: the next loop pushes
        for _ in range(20):
            if pio.pc == portable.PIO_SAMPLE:
                if last is not None:
                    longest = max(longest, pio.cycles - last)
                last = pio.cycles
            pio.step()
    quiet = _started(portable.quadrature_pio_program())
    quiet.pop()
    quiet.pop()
    quiet.run(3)
    for _ in range(50):
        at = None
        for _ in range(20):
            if quiet.pc == portable.PIO_SAMPLE:
                if at is not None:
                    idle.add(quiet.cycles - at)
                at = quiet.cycles
            quiet.step()
    print("pio_loop longest_cycles_between_samples=%d idle_loop_cycles=%s" % (longest, sorted(idle)))
    assert idle == {portable.PIO_LOOP_CYCLES} and 8 <= longest <= 13


# ---- software decoder (esp32 pin IRQs) ----

def test_quad_decoder_x4_and_illegal():
    dec = portable.QuadDecoder(0, 0, 16)
    t = 0
    for s in _seq(0, 400, +1):
        t += 100
        dec.edge(s & 1, s >> 1, t)
    assert dec.st[portable.QD_COUNT] == 400
    assert dec.st[portable.QD_PERIOD_US] == 100
    s = dec.st[portable.QD_STATE]
    for s2 in _seq(s, 3, -1):
        t += 250
        dec.edge(s2 & 1, s2 >> 1, t)
    assert dec.st[portable.QD_COUNT] == 397
    assert dec.st[portable.QD_PERIOD_US] == 250      # two reversed edges after the first reversal
    cur = dec.st[portable.QD_STATE]
    bad = cur ^ 3
    dec.edge(bad & 1, bad >> 1, t + 10)
    assert dec.st[portable.QD_ILLEGAL] == 1
    assert dec.st[portable.QD_COUNT] == 397
    # repeated level (an IRQ for a glitch that settled back): nothing counted, nothing illegal
    dec.edge(bad & 1, bad >> 1, t + 20)
    assert dec.st[portable.QD_ILLEGAL] == 1 and dec.st[portable.QD_COUNT] == 397


def test_quad_decoder_reversal_resets_edge_period():
    dec = portable.QuadDecoder(0, 0)
    dec.edge(1, 0, 1000)
    dec.edge(1, 1, 1300)
    assert dec.st[portable.QD_PERIOD_US] == 300
    dec.edge(1, 0, 1400)        # back: a reversal says nothing about speed
    assert dec.st[portable.QD_PERIOD_US] == 0
    assert dec.st[portable.QD_COUNT] == 1


def test_quad_decoder_wraps_at_16_bits_and_is_allocation_free():
    dec = portable.QuadDecoder(0, 0, 16)
    states = _seq(0, 8, -1)
    micropython.heap_lock()
    try:
        for s in states:
            dec.edge(s & 1, s >> 1, 5)
    finally:
        micropython.heap_unlock()
    assert dec.st[portable.QD_COUNT] == 65536 - 8
    assert portable.wrap_delta(dec.st[portable.QD_COUNT], 0, 16) == -8


def test_wrap_delta_16_and_32():
    assert portable.wrap_delta(5, 65530, 16) == 11
    assert portable.wrap_delta(65530, 5, 16) == -11
    assert portable.wrap_delta(32767 + 100, 100, 16) == 32767
    assert portable.wrap_delta(100, 32768 + 100, 16) == -32768
    # 32-bit readings as array('i') holds them (signed bit patterns) and as unsigned
    a = array("i", (0x7FFFFFF0, 0))
    a[1] = -0x7FFFFFF0      # 0x80000010 as int32
    assert portable.wrap_delta(a[1], a[0], 32) == 0x20
    assert portable.wrap_delta(0x80000010, 0x7FFFFFF0, 32) == 0x20
    assert portable.wrap_delta(-3, 4, 32) == -7
    assert portable.wrap_delta(0xFFFFFFFD, 4, 32) == -7


# ---- duty conversion and bridge mapping ----

def test_q15_to_u16_error_at_most_one():
    worst = 0
    for m in range(32768):
        exact = (m * 65535 + 16383) // 32767
        err = abs(portable.q15_to_u16(m) - exact)
        if err > worst:
            worst = err
    assert worst <= 1
    assert portable.q15_to_u16(0) == 0
    assert portable.q15_to_u16(32767) == 65535
    assert portable.q15_to_u16(16384) == 32769


def test_duty_scale_timer_ticks():
    # 16-bit timer periods (pyboard PWM at 20 kHz: ~4200); at full scale the result may pass the period by 1,
    # which a timer compare treats as 100 %
    for period in (100, 999, 4200, 8400, 65535, 65536):
        mult, shift = portable.duty_scale(period)
        assert mult * 32767 < (1 << 30), (period, mult)
        worst = 0
        for m in range(0, 32768, 61):
            got = portable.scale_duty(m, mult, shift)
            exact = m * period // 32767
            worst = max(worst, abs(got - exact))
        assert worst <= 2, (period, worst)
        full = portable.scale_duty(32767, mult, shift)
        assert period - 2 <= full <= period + 1, (period, full)
        assert portable.scale_duty(0, mult, shift) == 0


def test_bridge_pwm_dir_and_in1_in2():
    out = array("i", (0, 0))
    portable.bridge_levels(portable.BRIDGE_PWM_DIR, 16384, out)
    assert (out[0], out[1]) == (32769, 1)
    portable.bridge_levels(portable.BRIDGE_PWM_DIR, -16384, out)
    assert (out[0], out[1]) == (32769, 0)
    portable.bridge_levels(portable.BRIDGE_PWM_DIR, 0, out)
    assert out[0] == 0
    portable.bridge_levels(portable.BRIDGE_PWM_DIR, -40000, out)     # clamped to full reverse
    assert (out[0], out[1]) == (65535, 0)
    portable.bridge_levels(portable.BRIDGE_IN1_IN2, 32767, out)
    assert (out[0], out[1]) == (65535, 0)
    portable.bridge_levels(portable.BRIDGE_IN1_IN2, -100, out)
    assert (out[0], out[1]) == (0, portable.q15_to_u16(100))
    portable.bridge_levels(portable.BRIDGE_IN1_IN2, 0, out)
    assert (out[0], out[1]) == (0, 0)                                 # both low: coast
    portable.bridge_levels(portable.BRIDGE_IN1_IN2, 99999, out)
    assert (out[0], out[1]) == (65535, 0)


def test_bridge_levels_allocation_free():
    out = array("i", (0, 0))
    micropython.heap_lock()
    try:
        for q in (-32767, -1, 0, 1, 12345, 32767, 40000):
            portable.bridge_levels(portable.BRIDGE_PWM_DIR, q, out)
            portable.bridge_levels(portable.BRIDGE_IN1_IN2, q, out)
    finally:
        micropython.heap_unlock()
    assert (out[0], out[1]) == (65535, 0)


# ---- soft periodic schedule ----

def test_soft_periodic_keeps_the_period_and_counts_skips():
    s = portable.SoftPeriodic(500, 1000)        # 2000 us
    assert s.due(1000)
    assert not s.due(2000)
    assert s.due(3100)                          # 100 us late: runs, schedule stays on the 2000 us grid
    assert s.next_us == 5000
    assert not s.due(4999)
    assert s.due(5000)
    assert s.overruns == 0
    # 10 periods late: one call, the missed ones counted, no burst
    assert s.due(7000 + 20000)
    assert s.overruns == 10
    assert not s.due(7000 + 20001)
    assert s.due(7000 + 22000)


def test_soft_periodic_across_tick_wrap():
    start = (1 << 30) - 3000
    s = portable.SoftPeriodic(1000, start)      # 1000 us
    calls = 0
    now = start
    for _ in range(60):
        if s.due(now):
            calls += 1
        now = (now + 250) & 0x3FFFFFFF
    # 60 * 250 us = 15 ms: 15 calls, across the wrap at 2**30
    assert calls == 15
    assert s.overruns == 0


# ---- the Board parts the backends share ----

class _Out:
    """An output pin (machine.Pin-like): value(v) sets, value() reads; records every write."""
    OUT = 1

    def __init__(self, pid, mode=None, value=None):
        self.id = pid
        self.level = value
        self.writes = []

    def value(self, v=None):
        if v is None:
            return self.level
        self.level = v
        self.writes.append(v)


class _Pwm:
    def __init__(self, pin, freq=0, duty_u16=0):
        self.pin = pin.id
        self.freq = freq
        self.duty = duty_u16

    def duty_u16(self, v):
        self.duty = v


def test_bridge_mode_from_the_driver():
    assert portable.bridge_mode({"driver": "pwm_dir"}) == portable.BRIDGE_PWM_DIR
    assert portable.bridge_mode({"driver": "in1_in2"}) == portable.BRIDGE_IN1_IN2


def test_reset_code_maps_the_three_causes_and_the_rest():
    for cause, want in ((3, protocol.RESET_WATCHDOG), (1, protocol.RESET_POWER_ON), (5, protocol.RESET_SOFT),
                        (2, protocol.RESET_OTHER), (4, protocol.RESET_OTHER)):
        assert portable.reset_code(cause, 3, 1, 5) == want, cause
    assert portable.reset_code("sw", "wdt", "por", "sw") == protocol.RESET_SOFT     # CircuitPython's enum values


def test_duty_u16_bridge_pwm_dir_with_enable():
    br = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_PWM_DIR, {"pwm": 2, "dir": 3, "enable": 4}, 20000)
    assert br.pwm.pin == 2 and br.pwm.freq == 20000 and br.pwm.duty == 0
    assert br.dir.level == 0 and br.enable.level == 0               # made off: no pulse before energize
    br.energize(True)
    assert br.enable.level == 1
    br.write(-16384)
    assert (br.pwm.duty, br.dir.level) == (32769, 0)
    br.write(32767)
    assert (br.pwm.duty, br.dir.level) == (65535, 1)
    br.energize(False)
    assert br.pwm.duty == 0 and br.enable.level == 0
    assert br.enable.writes[-1] == 0


def test_duty_u16_bridge_in1_in2_without_enable_coasts():
    br = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_IN1_IN2, {"in1": 6, "in2": 7}, 1000)
    assert br.enable is None and (br.pwm.pin, br.pwm2.pin) == (6, 7)
    br.energize(True)
    br.write(-100)
    assert (br.pwm.duty, br.pwm2.duty) == (0, 200)
    br.write(100)
    assert (br.pwm.duty, br.pwm2.duty) == (200, 0)
    br.write(-100)
    br.energize(False)                                              # both inputs low: coast
    assert (br.pwm.duty, br.pwm2.duty) == (0, 0)


def test_duty_u16_bridge_write_is_allocation_free():
    a = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_PWM_DIR, {"pwm": 2, "dir": 3}, 20000)
    b = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_IN1_IN2, {"in1": 6, "in2": 7}, 20000)
    a.dir.writes = None                 # the recording list would allocate; a real Pin does not
    a.dir.value = lambda v: None
    micropython.heap_lock()
    try:
        for q in (-32767, -5, 0, 7, 32767):
            a.write(q)
            b.write(q)
    finally:
        micropython.heap_unlock()
    assert a.pwm.duty == 65535 and (b.pwm.duty, b.pwm2.duty) == (65535, 0)


class _Enc:
    def __init__(self, n):
        self.n = n
        self.released = False

    def count(self):
        return self.n

    def deinit(self):
        self.released = True


class _Timer:
    def __init__(self, callback):
        self.callback = callback
        self.running = True

    def deinit(self):
        self.running = False


class _Wdt:
    def __init__(self, timeout=0):
        self.timeout = timeout
        self.feeds = 0

    def feed(self):
        self.feeds += 1


class _Machine:
    """The machine-module names MachineBoard uses."""
    PWRON_RESET = 1
    WDT_RESET = 3
    SOFT_RESET = 5
    WDT = _Wdt

    def __init__(self, cause):
        self.cause = cause

    def reset_cause(self):
        return self.cause


class _NoSoftResetMachine:
    """A port whose machine module has no SOFT_RESET."""
    PWRON_RESET = 1
    WDT_RESET = 3
    WDT = _Wdt

    def __init__(self, cause):
        self.cause = cause

    def reset_cause(self):
        return self.cause


class _MachineTestBoard(portable.MachineBoard):
    def __init__(self, machine):
        super().__init__({"pwm_freq": 20000}, 16, machine)
        self._left = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_PWM_DIR, {"pwm": 2, "dir": 3}, 20000)
        self._right = portable.DutyU16Bridge(_Pwm, _Out, portable.BRIDGE_IN1_IN2, {"in1": 6, "in2": 7}, 20000)
        self._enc_l = _Enc(123)
        self._enc_r = _Enc(65000)
        self.timers = []

    def _start_timer(self, hz):
        t = _Timer(self._tick)
        t.hz = hz
        self.timers.append(t)
        return t


def test_board_base_counts_duty_gate_and_deinit():
    b = _MachineTestBoard(_Machine(1))
    assert b.counter_bits == 16 and not b.soft and not b.energized
    buf = array("i", (0, 0))
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (123, 65000)
    b.write_duty(16384, -100)                   # ignored while de-energized
    assert b._left.pwm.duty == 0 and b._right.pwm2.duty == 0
    b.set_energized(1)
    assert b.energized is True
    b.write_duty(16384, -100)
    assert b._left.pwm.duty == 32769 and b._left.dir.level == 1 and b._right.pwm2.duty == 200
    b.start_periodic(250, lambda: None)
    b.deinit()                                  # timer stopped, outputs coast, encoders released
    assert not b.timers[0].running and b._timer is None
    assert not b.energized and b._left.pwm.duty == 0 and b._right.pwm2.duty == 0
    assert b._enc_l.released and b._enc_r.released
    assert b.free_heap() > 0


def test_machine_board_periodic_restarts_and_ticks():
    b = _MachineTestBoard(_Machine(1))
    calls = []
    b.start_periodic(500, lambda: calls.append("a"))
    b.timers[0].callback(b.timers[0])
    b.timers[0].callback(b.timers[0])
    b.start_periodic(100, lambda: calls.append("b"))   # a second start stops the first timer
    assert not b.timers[0].running and b.timers[1].running and b.timers[1].hz == 100
    b.timers[1].callback(b.timers[1])
    assert calls == ["a", "a", "b"]
    b.stop_periodic()
    b.stop_periodic()                                   # twice is harmless
    assert not b.timers[1].running
    import time
    t0 = b.ticks_us()
    time.sleep_ms(3)
    assert 2000 <= time.ticks_diff(b.ticks_us(), t0) < 1000000
    assert time.ticks_diff(b.ticks_ms(), time.ticks_ms()) <= 0


def test_machine_board_watchdog_and_reset_cause():
    m = _Machine(5)
    b = _MachineTestBoard(m)
    b.watchdog_feed()                           # not started: nothing to feed, no error
    b.watchdog_start(750)
    b.watchdog_feed()
    b.watchdog_feed()
    assert b._wdt.timeout == 750 and b._wdt.feeds == 2
    m.cause = 3                                 # read when the Board was made: the cause of this boot
    assert b.reset_cause() == protocol.RESET_SOFT
    assert _MachineTestBoard(_Machine(3)).reset_cause() == protocol.RESET_WATCHDOG
    assert _MachineTestBoard(_Machine(1)).reset_cause() == protocol.RESET_POWER_ON
    assert _MachineTestBoard(_Machine(2)).reset_cause() == protocol.RESET_OTHER
    assert _MachineTestBoard(_NoSoftResetMachine(5)).reset_cause() == protocol.RESET_OTHER
    assert _MachineTestBoard(_NoSoftResetMachine(3)).reset_cause() == protocol.RESET_WATCHDOG


def test_own_per_period_methods_moves_only_inherited_ones():
    @portable.own_per_period_methods
    class Own(_MachineTestBoard):
        def read_counts(self, buf):
            buf[0] = 7
            buf[1] = 8

    d = Own.__dict__
    assert d["write_duty"] is portable.BoardBase.write_duty         # the base's code, found one lookup earlier
    assert d["ticks_us"] is portable.MachineBoard.ticks_us
    assert "start_periodic" not in d and "write_duty" not in _MachineTestBoard.__dict__
    b = Own(_Machine(1))
    buf = array("i", (0, 0))
    b.read_counts(buf)                                              # its own read_counts is kept
    assert (buf[0], buf[1]) == (7, 8)
    b.set_energized(True)
    b.write_duty(-32767, 0)
    assert b._left.pwm.duty == 65535 and b._left.dir.level == 0
