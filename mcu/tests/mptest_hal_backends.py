# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The hardware backends driven end to end on the unix port, with test doubles of the PORT modules (machine,
# rp2, pyb, CircuitPython's board/digitalio/pwmio/rotaryio/microcontroller): the backend code itself runs
# unchanged. The rp2 double runs the real PIO program words on the instruction-level interpreter of
# mptest_hal_portable, so Board.read_counts goes put -> PIO program -> get -> viper copy. This checks every
# backend path (counts, duty mapping per driver, energize, periodic, watchdog, reset cause, link), not the
# port APIs themselves, which only the boards can.
import sys
import time
from array import array

from mptest_hal_portable import Pio, _seq

from viperdrive import boardcfg
from viperdrive.shared import protocol

BOARDS = "mcu/boards/"


# ---- machine (rp2 / esp32 flavour) ----

class FakePin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_RISING = 1
    IRQ_FALLING = 2
    levels: dict = {}
    irqs: dict = {}
    pulls: dict = {}

    def __init__(self, pid, mode=None, pull=None, value=None):
        self.id = pid
        if pull is not None:
            FakePin.pulls[pid] = pull
        if value is not None:
            FakePin.levels[pid] = value

    def value(self, v=None):
        if v is None:
            return FakePin.levels.get(self.id, 0)
        FakePin.levels[self.id] = v

    def irq(self, handler=None, trigger=0, hard=False):
        FakePin.irqs[self.id] = handler


class FakePWM:
    all: dict = {}

    def __init__(self, pin, freq=0, duty_u16=0):
        self.pin = pin.id
        self.freq = freq
        self.duty = duty_u16
        FakePWM.all[pin.id] = self

    def duty_u16(self, v):
        self.duty = v


class FakeTimer:
    PERIODIC = 1
    last = None
    accept_hard = True

    def __init__(self, tid, mode=None, freq=0, callback=None, **kw):
        if "hard" in kw and not FakeTimer.accept_hard:
            raise TypeError("unexpected keyword argument 'hard'")
        self.tid = tid
        self.freq = freq
        self.callback = callback
        self.hard = kw.get("hard", False)
        self.running = True
        FakeTimer.last = self

    def deinit(self):
        self.running = False


class FakeWDT:
    last = None

    def __init__(self, timeout=0):
        self.timeout = timeout
        self.feeds = 0
        FakeWDT.last = self

    def feed(self):
        self.feeds += 1


class FakeEncoder:
    units: dict = {}

    def __init__(self, unit, pa, pb, phases=1):
        assert phases == 4
        self.unit = unit
        self.count = 0
        self.deinited = False
        FakeEncoder.units[unit] = self

    def value(self, v=None):
        old = self.count
        if v is not None:
            self.count = v
        return old

    def deinit(self):
        self.deinited = True


class FakeUART:
    last = None

    def __init__(self, uid, **kw):
        self.id = uid
        self.kw = kw
        FakeUART.last = self

    def any(self):
        return 0


class FakeMachine:
    PWRON_RESET = 1
    HARD_RESET = 2
    WDT_RESET = 3
    DEEPSLEEP_RESET = 4
    SOFT_RESET = 5
    Pin = FakePin
    PWM = FakePWM
    Timer = FakeTimer
    WDT = FakeWDT
    UART = FakeUART
    cause = WDT_RESET
    irq_state = 0
    # RP2040 WATCHDOG.REASON (0x40058008): bit 0 TIMER (the watchdog bit), bit 1 FORCE (a reboot asked for)
    mem32 = {0x40058008: 1}

    def reset_cause(self):
        return FakeMachine.cause

    def disable_irq(self):
        FakeMachine.irq_state += 1
        return 7

    def enable_irq(self, state):
        assert state == 7
        FakeMachine.irq_state -= 1


class FakeMachineWithEncoder(FakeMachine):
    Encoder = FakeEncoder


# ---- rp2: asm_pio collects the words, StateMachine runs them ----

class FakeSM:
    # what a state machine still holds from the previous run (soft reset): {sm_id: (x, y, rx words)}
    leftover: dict = {}

    def __init__(self, sm_id, prog, in_base=None):
        self.id = sm_id
        x, y, rx = FakeSM.leftover.get(sm_id, (0, 0, ()))
        self.pio = Pio(prog["words"], x=x, y=y)
        self.pio.rx.extend(rx)
        self.base = in_base.id
        self.on = False
        self.execs = []

    def _pins(self):
        self.pio.pins = FakePin.levels.get(self.base, 0) | (FakePin.levels.get(self.base + 1, 0) << 1)

    def exec(self, ins):
        # sm.exec: the word runs once, on the current pins, outside the program (PC moves only for a jump)
        assert not self.on, "exec'd while running"
        self.execs.append(ins)
        self._pins()
        self.pio.exec(ins)

    def rx_fifo(self):
        return len(self.pio.rx)

    def active(self, v=None):
        if v is not None:
            self.on = bool(v)
        return self.on

    def run(self, n):
        for _ in range(n):
            self._pins()
            self.pio.step()

    def get(self, buf=None):
        for _ in range(100):
            if self.pio.rx:
                w = self.pio.rx.pop(0)
                if buf is None:
                    return w
                buf[0] = w - (1 << 32) if w & 0x80000000 else w
                return buf
            if not self.on:
                break
            self.run(1)
        raise AssertionError("the PIO program pushed nothing")


class FakeRp2:
    class PIO:
        SHIFT_LEFT = 0
        SHIFT_RIGHT = 1
    StateMachine = FakeSM

    @staticmethod
    def asm_pio(**kw):
        # what the interpreter implements: shift directions, autopush at 32 bits
        assert kw["in_shiftdir"] == 0 and kw["out_shiftdir"] == 1 and kw["autopush"] and kw["push_thresh"] == 32

        def dec(f):
            words = []
            g = f.__globals__
            g["word"] = words.append
            try:
                f()
            finally:
                del g["word"]
            return {"words": words}
        return dec


def _install(**mods):
    # forget the backends imported by an earlier test (module and package attribute), so the next import runs
    # the backend against this test's doubles
    from viperdrive import hal
    for name in ("rp2", "esp32", "stm32", "circuitpython", "streams"):
        if "viperdrive.hal." + name in sys.modules:
            del sys.modules["viperdrive.hal." + name]
        if name in hal.__dict__:
            delattr(hal, name)
    for name, mod in mods.items():
        sys.modules[name] = mod
    FakePin.levels = {}
    FakePin.irqs = {}
    FakePin.pulls = {}
    FakeSM.leftover = {}
    FakePWM.all = {}
    FakeEncoder.units = {}
    FakeTimer.accept_hard = True


def _walk_pins(a, states, settle=None):
    for s in states:
        FakePin.levels[a] = s & 1
        FakePin.levels[a + 1] = s >> 1
        if settle is not None:
            settle()


def test_rp2_counts_through_the_pio_program():
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "pico.json")
    a_r = cfg["pins"]["right"]["enc_a"]
    FakePin.levels[a_r] = 1                         # the right encoder rests at state 1 (A high, B low)
    b = hal.load(cfg)
    assert b.counter_bits == 32 and not b.soft
    sm_l, sm_r = b._enc_l.sm, b._enc_r.sm
    assert (sm_l.id, sm_r.id) == (0, 1) and sm_l.on and sm_r.on
    assert len(sm_l.pio.prog) == 32
    buf = array("i", (9, 9))
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (0, 0)
    sm_r.run(100)
    b.read_counts(buf)
    assert buf[1] == 0                              # primed with the resting state: no edge at boot
    a_l = cfg["pins"]["left"]["enc_a"]
    _walk_pins(a_l, _seq(0, 300, +1), lambda: sm_l.run(24))
    _walk_pins(a_r, _seq(1, 7, -1), lambda: sm_r.run(24))
    sm_l.run(8 * 1250)                              # 10000 cycles (80 us at 125 MHz) after the left's last edge
    t0 = time.ticks_us()
    b.read_counts(buf)
    t1 = time.ticks_us()
    assert (buf[0], buf[1]) == (300, -7)        # 32-bit counter: int32 bit pattern
    e = array("i", (0, 0, 0, 0))
    b.edge_times_us(e)
    # the edge timer: the left's last edge came 80 us of PIO time before the read, which took place (on the
    # double's clock, the host's) somewhere between t0 and t1
    ago1 = (t1 - e[0]) & 0x3FFFFFFF                # (the unix port's ticks_us is not within 2**30; the chip's is)
    ago0 = ((t0 - e[0] + 0x20000000) & 0x3FFFFFFF) - 0x20000000
    assert ago1 >= 79 and ago0 <= 81, (t0, t1, e[0])
    assert (e[2] - e[0]) & 0x3FFFFFFF == 80 and e[3] == e[2]      # and the read's own moment
    b.deinit()
    assert not sm_l.on


def test_rp2_restart_with_leftovers_reads_the_current_count():
    # The previous run was stopped (Ctrl-D) mid-way: X, Y hold its timer and counts and a pair is still in RX.
    # The new run must not see any of it: the first read is the count now, not a word queued before.
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    FakeSM.leftover = {0: (77, 5000, (77, 5000)), 1: (1, 0xFFFFFF00, (0xFFFFFF00,))}
    cfg = boardcfg.load(BOARDS + "pico.json")
    b = hal.load(cfg)
    sm_l, sm_r = b._enc_l.sm, b._enc_r.sm
    # datasheet MOV: 101 00000 ddd oo sss: X=001 Y=010 OSR=111 <- NULL=011 / ~PINS (op 01, source 000)
    assert sm_l.execs == [0xA023, 0xA043, 0xA0E8]
    assert (sm_l.pio.x, sm_r.pio.x, sm_l.pio.y) == (0, 0, 0) and sm_l.rx_fifo() == 0 and sm_r.rx_fifo() == 0
    sm_l.run(200)                                   # the program runs a while before the first period
    sm_r.run(200)
    assert sm_l.rx_fifo() == 2 and sm_l.pio.stalled == 0    # one pair queued, never more, never stalled
    a_l = cfg["pins"]["left"]["enc_a"]
    a_r = cfg["pins"]["right"]["enc_a"]
    _walk_pins(a_l, _seq(0, 40, +1), lambda: sm_l.run(24))
    _walk_pins(a_r, _seq(0, 9, -1), lambda: sm_r.run(24))
    buf = array("i", (7, 7))
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (40, -9)
    _walk_pins(a_l, _seq(0, 4, +1), lambda: sm_l.run(24))
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (44, -9)             # every later read is current too (no pair of lag)


def test_rp2_outputs_timer_watchdog_reset_cause():
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "pico.json")
    b = hal.load(cfg)
    pl = cfg["pins"]["left"]
    pr = cfg["pins"]["right"]
    b.write_duty(16384, -16384)                 # ignored while de-energized
    assert FakePWM.all[pl["pwm"]].duty == 0
    b.set_energized(True)
    b.write_duty(16384, -32767)
    assert FakePWM.all[pl["pwm"]].duty == 32769 and FakePin.levels[pl["dir"]] == 1
    assert FakePWM.all[pr["pwm"]].duty == 65535 and FakePin.levels[pr["dir"]] == 0
    b.set_energized(False)                      # coast: duty 0
    assert FakePWM.all[pl["pwm"]].duty == 0 and FakePWM.all[pr["pwm"]].duty == 0
    calls = []
    b.start_periodic(500, lambda: calls.append(1))
    t = FakeTimer.last
    assert t.freq == 500 and t.hard and t.tid == -1
    t.callback(t)
    t.callback(t)
    assert len(calls) == 2
    b.stop_periodic()
    assert not t.running
    b.watchdog_start(400)
    b.watchdog_feed()
    assert FakeWDT.last.timeout == 400 and FakeWDT.last.feeds == 1
    assert b.reset_cause() == protocol.RESET_WATCHDOG


def test_rp2_requested_reboot_is_not_a_watchdog_fault():
    # machine.reset() (mpremote reset, the last step of `viperdrive flash`) reboots an RP2040 through its watchdog
    # (CTRL.TRIGGER): the rp2 port then reports WDT_RESET. The emulated Pico showed the board coming back from
    # every flash with FAULT_WATCHDOG latched. Only WATCHDOG.REASON tells the two apart: FORCE, not TIMER.
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    FakeMachine.cause = FakeMachine.WDT_RESET
    FakeMachine.mem32 = {0x40058008: 2}         # FORCE: a reboot asked for
    try:
        cfg = boardcfg.load(BOARDS + "pico.json")
        b = hal.load(cfg)
        FakeMachine.mem32 = {0x40058008: 1}     # read once, at boot: a later change is not this boot's cause
        assert b.reset_cause() == protocol.RESET_SOFT
        FakeMachine.mem32 = {0x40058008: 1}     # TIMER: the watchdog bit
        b2 = hal.load(cfg)
        assert b2.reset_cause() == protocol.RESET_WATCHDOG
    finally:
        FakeMachine.mem32 = {0x40058008: 1}


def test_rp2_duty_register_table_names_each_bridges_pwm_slice_channel_and_dir_pin():
    # what the chip's period function writes: PWM slice (pin >> 1) & 7 -> CC at word 5*slice + 3, channel B for
    # odd pins; pwm_dir: the DIR pin's SIO mask; in1_in2: IN2's CC word and channel; last the energized word
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive.hal import portable
    from viperdrive.hal import rp2 as hrp2
    cfg = boardcfg.load(BOARDS + "pico.json")          # left pwm 6 dir 7, right pwm 8 dir 9
    t = hrp2._duty_registers(portable.bridge_mode(cfg), cfg["pins"])
    assert list(t) == [0, 18, 0, 1 << 7, 0, 23, 0, 1 << 9, 0, 0, -1 << 31, 125], list(t)
    cfg = boardcfg.load(BOARDS + "pico_drv8833.json")  # left in1 10 in2 11, right in1 12 in2 13
    t = hrp2._duty_registers(portable.bridge_mode(cfg), cfg["pins"])
    assert list(t) == [1, 28, 0, 28, 1, 33, 0, 33, 1, 0, -1 << 31, 125], list(t)
    assert hrp2.PIO_LOOP_CYCLES == portable.PIO_LOOP_CYCLES     # the viper constant is the program's loop
    assert hrp2.PIO_TICKS_MAX == portable.PIO_TICKS_MAX            # and the edge timer's cap, the CircuitPython one


# ---- rp2: the period function (the control period in one viper call) on stand-in registers ----

TIMERAWL = 0x4028 // 4          # TIMER's TIMERAWL in words from PWM's base (one view on the chip)
TOP = 6249                      # 20 kHz PWM at 125 MHz


class Regs:
    """Arrays standing in for the register blocks period_fn works on: PWM (+ TIMER), the PIO block, SIO."""

    def __init__(self, board):
        self.perif = array("i", [0] * (TIMERAWL + 1))
        self.pio = array("i", [0] * 10)
        self.sio = array("i", [0] * 7)
        for sl in range(8):
            self.perif[5 * sl + 4] = TOP
        board._regs = (self.perif, self.pio, self.sio)


class StepDouble:
    """A step with the real one's signature that records what it got in preallocated arrays (allocation-free):
    the counts and io[0] it saw, how often it ran; it writes the duties from `duty` and moves TIMERAWL on."""

    def __init__(self, regs):
        self.seen = array("i", [0, 0, 0, 0])
        self.duty = array("i", [0, 0])
        self.regs = regs

    def __call__(self, st, k, c, e, io):
        seen = self.seen
        seen[0] = c[0]
        seen[1] = c[1]
        seen[2] = io[0]
        seen[3] += 1
        io[2] = self.duty[0]
        io[3] = self.duty[1]
        self.regs.perif[TIMERAWL] += 37            # the step took 37 us


def _period_setup(board_file):
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + board_file)
    b = hal.load(cfg)
    assert b.period_fn(None, None, None, None, None, None, None, None) is None    # no registers: no period fn
    regs = Regs(b)
    step = StepDouble(regs)
    st = array("i", [1] * 4)
    io = array("i", [0] * 4)
    c = array("i", [0, 0])
    tails = array("i", [0])

    def tail():
        tails[0] += 1

    ctl = array("i", [0, 0, 2])                     # telemetry off, bridges off, the enabled word is st[2]
    regs.e = array("i", [0, 0, 0, 0])               # the edge times (and count times) the period writes
    fn = b.period_fn(step, st, array("i", [0] * 4), c, regs.e, io, tail, ctl)
    return cfg, b, regs, step, fn, st, io, c, tails, ctl


def test_rp2_period_function_reads_the_fifos_runs_the_step_and_writes_the_registers():
    cfg, b, regs, step, fn, st, io, c, tails, ctl = _period_setup("pico.json")
    pio, perif, sio = regs.pio, regs.perif, regs.sio
    # left pwm 6 (slice 3 A: CC word 18), dir 7; right pwm 8 (slice 4 A: CC word 23), dir 9
    perif[TIMERAWL] = (1 << 30) + 1234             # ticks_us is TIMERAWL's low 30 bits
    pio[8] = 300
    pio[9] = -7                                     # RX words: the 32-bit counters' bit patterns
    perif[18] = 0x55550000                          # channel B of slice 3 belongs to another pin: kept
    step.duty[0] = 16384
    step.duty[1] = -32767
    fn(None)
    # the stand-in RX register gives one word to every read: the same word is the timer X and the count Y here.
    # X = 300: ~X < 0, no recent edge (e kept); X = -7: 6 ticks (48 cycles) ago, 0 us before the read
    assert (c[0], c[1]) == (300, -7) and tuple(step.seen) == (300, -7, 1234, 1)     # counts before the step
    assert tuple(regs.e) == (0, 1234, 1234, 1234)
    assert io[0] == 1234 and io[1] == 1234 + 37     # io[1] read after the step
    assert perif[18] == 0x55550000 and perif[23] == 0   # de-energized: no duty written
    b.set_energized(True)
    fn(None)
    assert perif[18] == 0x55550000 | 3125           # 16384 / 32768 of TOP + 1 = 6250, in channel A's half
    assert perif[23] == TOP + 1                     # -32767: full on (cc = TOP + 1), reverse
    assert sio[5] == 1 << 7 and sio[6] == 1 << 9    # DIR: left forward (GPIO_OUT_SET), right reverse (CLR)
    step.duty[0] = -100
    step.duty[1] = 40000                            # beyond Q15: clamped to full on
    fn(None)
    assert perif[18] & 0xFFFF == (100 * 6250 + 16383) >> 15 and sio[6] == 1 << 7
    assert perif[23] == TOP + 1 and sio[5] == 1 << 9
    pio[8] = -1001                                  # ~X = 1000 ticks: 8000 cycles, 64 us at 125 MHz
    now = perif[TIMERAWL] & 0x3FFFFFFF
    fn(None)
    assert c[0] == -1001 and regs.e[0] == now - 64
    b.set_energized(False)                          # the bridges off: the period writes nothing any more
    step.duty[0] = 20000
    fn(None)
    assert perif[18] & 0xFFFF == 19 and tails[0] == 0
    print("pico wiring: duties 16384/-32767 -> CC 3125/%d of TOP %d, DIR set/clear" % (TOP + 1, TOP))


def test_rp2_period_function_does_not_wait_forever_for_a_fifo():
    cfg, b, regs, step, fn, st, io, c, tails, ctl = _period_setup("pico.json")
    regs.pio[8] = 11
    regs.pio[9] = 22
    regs.pio[1] = 0x200                             # machine 1's RX FIFO stays empty
    c[1] = 5
    fn(None)
    assert (c[0], c[1]) == (11, 5) and step.seen[3] == 1    # its count as it was, and the step still ran
    regs.pio[1] = 0x300                             # neither answers
    regs.pio[8] = 12
    fn(None)
    assert (c[0], c[1]) == (11, 5) and step.seen[3] == 2


def test_rp2_period_function_calls_the_tail_only_when_asked():
    cfg, b, regs, step, fn, st, io, c, tails, ctl = _period_setup("pico.json")
    fn(None)
    assert tails[0] == 0                            # nothing to do: no call
    ctl[1] = 1                                      # the bridges are on and st[2] (enabled) is 1
    fn(None)
    assert tails[0] == 0
    st[2] = 0                                       # the step stopped driving: cut the bridges this period
    fn(None)
    assert tails[0] == 1
    ctl[1] = 0
    fn(None)
    assert tails[0] == 1
    ctl[0] = 1                                      # telemetry on: every period
    fn(None)
    fn(None)
    assert tails[0] == 3


def test_rp2_period_function_in1_in2_and_allocation_free_from_its_own_timer():
    import micropython
    cfg, b, regs, step, fn, st, io, c, tails, ctl = _period_setup("pico_drv8833.json")
    perif = regs.perif
    # left in1 10 (slice 5 A: word 28), in2 11 (slice 5 B); right in1 12 (slice 6 A: word 33), in2 13
    b.set_energized(True)
    step.duty[0] = -16384
    step.duty[1] = 8192
    fn(None)
    assert perif[28] == 3125 << 16                  # reverse: IN2 (channel B) driven, IN1 low
    assert perif[33] == (8192 * 6250 + 16383) >> 15     # forward: IN1
    ctl[0] = 1
    n = 0
    micropython.heap_lock()
    try:
        while n < 1000:
            fn(None)
            n += 1
    finally:
        micropython.heap_unlock()
    assert step.seen[3] == 1001 and tails[0] == 1000
    b.start_periodic(1000, fn)                      # its own period function: the timer calls it directly
    assert FakeTimer.last.callback is fn and FakeTimer.last.hard
    b.start_periodic(1000, lambda: None)            # anything else through the board's _tick
    assert FakeTimer.last.callback is not fn
    b.stop_periodic()


def test_rp2_controller_runs_on_the_period_function_and_cuts_the_bridges_on_a_fault():
    # the firmware's Controller on the rp2 backend: its timer runs the board's period function with the real
    # viper step; wheels that do not turn (the counts stand still) under full duty latch FAULT_STALL, and the
    # period cuts the bridges in that same period (its tail), as the generic tick does
    from viperdrive import control
    from viperdrive.shared import params
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "pico.json")
    b = hal.load(cfg)
    regs = Regs(b)
    c = control.Controller(b, cfg, params.defaults())
    assert c.run_period is b._period
    assert c.enable(True) and b.energized
    c.start()
    t = FakeTimer.last
    assert t.callback is c.run_period and t.freq == 500
    periods = 0
    while periods < 400 and not c.fault():
        if periods % 10 == 0:
            c.set_velocity(3000, 3000)
        regs.perif[TIMERAWL] += 2000
        t.callback(t)
        periods += 1
        if periods == 20:
            driving = (regs.perif[18] & 0xFFFF, regs.perif[23] & 0xFFFF, regs.sio[5])
    print("pico wiring, wheels held: after 20 periods CC %d/%d (TOP %d), FAULT %d after %d periods"
          % (driving[0], driving[1], TOP, c.fault(), periods))
    assert driving[0] > 0 and driving[1] > 0
    # right motor mirrored (motor_sign -1): both wheels forward means DIR high on the left, low on the right
    assert driving[2] == 1 << 7 and regs.sio[6] == 1 << 9
    # stall_ms 500: 250 periods saturated without motion, after the ramp and the integrator reach full duty
    assert c.fault() in (protocol.FAULT_STALL_LEFT, protocol.FAULT_STALL_RIGHT) and 250 <= periods < 400
    assert not b.energized and c._ctl[1] == 0 and FakePWM.all[6].duty == 0
    regs.perif[18] = 1234
    t.callback(t)
    assert regs.perif[18] == 1234                   # de-energized: the period writes no duty
    assert c.stats()["exec_max_us"] == 0            # the stand-in TIMERAWL moves only between periods
    c.stop()


def test_rp2_in1_in2_and_uart_link():
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "pico_drv8833.json")
    b = hal.load(cfg)
    pl = cfg["pins"]["left"]
    b.set_energized(True)
    b.write_duty(-100, 0)
    assert FakePWM.all[pl["in1"]].duty == 0 and FakePWM.all[pl["in2"]].duty == 200
    s = b.open_link()
    u = FakeUART.last
    assert u.id == 0 and u.kw["baudrate"] == 460800 and u.kw["timeout"] == 0
    assert u.kw["tx"].id == 0 and u.kw["rx"].id == 1
    assert s.readinto(bytearray(4)) is None


def test_esp32_pcnt_counts_and_rebase():
    _install(machine=FakeMachineWithEncoder())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "esp32_devkit.json")
    b = hal.load(cfg)
    assert b.counter_bits == 16
    assert not hasattr(b, "edge_times_us")          # PCNT does not time edges
    el, er = FakeEncoder.units[0], FakeEncoder.units[1]
    buf = array("i", (0, 0))
    el.count = 1234
    er.count = -3
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (1234, 65533)
    el.count = (1 << 28) + 10                       # far from zero: idle() re-zeroes it, the count does not move
    b.read_counts(buf)
    before = buf[0]
    b.idle()
    assert el.count == 0 and FakeMachine.irq_state == 0
    b.read_counts(buf)
    assert buf[0] == before == ((1 << 28) + 10) & 0xFFFF
    el.count = 5
    b.read_counts(buf)
    assert buf[0] == (before + 5) & 0xFFFF
    pl = cfg["pins"]["left"]
    b.set_energized(True)
    assert FakePin.levels[pl["enable"]] == 1
    b.write_duty(32767, 0)
    assert FakePWM.all[pl["in1"]].duty == 65535 and FakePWM.all[pl["in2"]].duty == 0
    b.set_energized(False)
    assert FakePin.levels[pl["enable"]] == 0 and FakePWM.all[pl["in1"]].duty == 0
    b.deinit()
    assert el.deinited and er.deinited


def test_esp32_irq_decoding_and_soft_timer():
    _install(machine=FakeMachine())                 # firmware without machine.Encoder
    FakeTimer.accept_hard = False
    FakeMachine.cause = FakeMachine.SOFT_RESET     # read once, when the Board is made (the cause of THIS boot)
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "esp32_devkit.json")
    b = hal.load(cfg)
    FakeMachine.cause = FakeMachine.WDT_RESET
    assert b.reset_cause() == protocol.RESET_SOFT
    a = cfg["pins"]["left"]["enc_a"]
    bb = cfg["pins"]["left"]["enc_b"]
    handler = FakePin.irqs[a]
    assert FakePin.irqs[bb] is not None
    for s in _seq(0, 41, +1):
        FakePin.levels[a] = s & 1
        FakePin.levels[bb] = s >> 1
        handler(None)
    buf = array("i", (0, 0))
    b.read_counts(buf)
    assert buf[0] == 41
    buf = array("i", (0, 0, 0, 0))
    b.edge_times_us(buf)                            # present with IRQ decoding: the last edge's ticks_us, then now
    assert buf[0] == b._enc_l.dec.st[hal.portable.QD_EDGE_US] and buf[1] == 0 and buf[2] == buf[3] != 0
    b.start_periodic(500, lambda: None)
    assert b.soft and not FakeTimer.last.hard
    b.deinit()
    assert FakePin.irqs[a] is None


# ---- pyb (stm32) ----

class FakeAF:
    def __init__(self, name, index):
        self._n = name
        self._i = index

    def name(self):
        return self._n

    def index(self):
        return self._i


class FakePybPin:
    AF_PP = 2
    OUT_PP = 1
    PULL_UP = 1
    # pyboard v1.1 alternate functions of the pins the example config uses
    AFS = {"X1": (("TIM2_CH1", 1), ("TIM5_CH1", 2)), "X2": (("TIM2_CH2", 1), ("TIM5_CH2", 2)),
           "Y1": (("TIM8_CH1", 3), ("TIM3_CH1", 2)), "Y2": (("TIM8_CH2", 3), ("TIM3_CH2", 2)),
           "X9": (("TIM4_CH1", 2),), "X10": (("TIM4_CH2", 2),)}
    configured: dict = {}
    levels: dict = {}

    def __init__(self, name, mode=None, pull=None, af=None):
        self._name = name
        if af is not None:
            FakePybPin.configured[name] = af

    def name(self):
        return self._name

    def af_list(self):
        return [FakeAF(n, i) for n, i in FakePybPin.AFS.get(self._name, ())]

    def value(self, v=None):
        if v is None:
            return FakePybPin.levels.get(self._name, 0)
        FakePybPin.levels[self._name] = v


class FakeChannel:
    def __init__(self, n, mode, pin=None, pulse_width=0):
        self.n = n
        self.mode = mode
        self.pw = pulse_width

    def pulse_width(self, v):
        self.pw = v


class FakePybTimer:
    ENC_AB = 3
    PWM = 0
    timers: dict = {}

    def __init__(self, n, prescaler=None, period=None, freq=None):
        self.n = n
        self._period = period if period is not None else 84000000 // freq - 1
        self._counter = 0
        self.channels = {}
        self.cb = None
        FakePybTimer.timers[n] = self

    def period(self):
        return self._period

    def channel(self, n, mode, pin=None, pulse_width=0):
        ch = FakeChannel(n, mode, pin, pulse_width)
        self.channels[n] = ch
        return ch

    def counter(self, v=None):
        if v is None:
            return self._counter
        self._counter = v

    def callback(self, fn):
        self.cb = fn

    def deinit(self):
        self.cb = None


class FakePyb:
    Pin = FakePybPin
    Timer = FakePybTimer


def test_stm32_timer_encoders_pwm_and_control_timer():
    FakePybPin.configured = {}
    FakePybTimer.timers = {}
    _install(machine=FakeMachine(), pyb=FakePyb())
    from viperdrive import hal
    cfg = boardcfg.load(BOARDS + "pyboard.json")
    b = hal.load(cfg)
    assert b.counter_bits == 16
    assert FakePybPin.configured == {"X1": 1, "X2": 1, "Y1": 3, "Y2": 3}     # the TIMx_CH1/CH2 alternate functions
    FakePybTimer.timers[2]._counter = 65530
    FakePybTimer.timers[8]._counter = 17
    buf = array("i", (0, 0))
    b.read_counts(buf)
    assert (buf[0], buf[1]) == (65530, 17)
    pwm = FakePybTimer.timers[4]
    assert pwm.period() == 4199                    # 20 kHz at 84 MHz
    b.set_energized(True)
    b.write_duty(32767, -16384)
    assert 4199 <= pwm.channels[1].pw <= 4201
    assert abs(pwm.channels[2].pw - 2100) <= 2
    assert FakePybPin.levels["X11"] == 1 and FakePybPin.levels["X12"] == 0
    calls = []
    b.start_periodic(1000, lambda: calls.append(1))
    ctl = FakePybTimer.timers[7]
    ctl.cb(ctl)
    assert calls == [1]
    b.stop_periodic()
    assert ctl.cb is None
    b.watchdog_start(1000)
    b.watchdog_feed()
    assert FakeWDT.last.timeout == 1000 and FakeWDT.last.feeds == 1
    assert b.reset_cause() == protocol.RESET_WATCHDOG


def test_stm32_wrong_encoder_pin_names_the_function():
    FakePybTimer.timers = {}
    _install(machine=FakeMachine(), pyb=FakePyb())
    from viperdrive import hal
    d = boardcfg.load(BOARDS + "pyboard.json")
    d["pins"]["left"]["enc_timer"] = 3              # X1 is TIM2/TIM5, not TIM3
    try:
        hal.load(d)
    except ValueError as e:
        assert "X1" in str(e) and "TIM3_CH1" in str(e)
    else:
        raise AssertionError("accepted an encoder pin without the timer's function")


# ---- CircuitPython ----

class _NS:
    pass


def _circuitpython_modules(clock):
    board = _NS()
    for name in ("D4", "D5", "D6", "D9", "D10", "D11", "D12", "D24", "D25"):
        setattr(board, name, "pin-" + name)
    digitalio = _NS()
    digitalio.Direction = _NS()
    digitalio.Direction.OUTPUT = 1
    digitalio.Direction.INPUT = 0
    digitalio.Pull = _NS()
    digitalio.Pull.UP = 1
    digitalio.Pull.DOWN = 2

    class DIO:
        levels = {"pin-D4": True}           # the REPL pin reads high (not held) unless a test says so

        def __init__(self, pin):
            self.pin = pin
            self.value = DIO.levels.get(pin, False)
            self.direction = 0
            self.pull = None

        def deinit(self):
            pass
    digitalio.DigitalInOut = DIO
    pwmio = _NS()

    class PWMOut:
        all = {}

        def __init__(self, pin, frequency=0, duty_cycle=0):
            self.duty_cycle = duty_cycle
            PWMOut.all[pin] = self
    pwmio.PWMOut = PWMOut
    rotaryio = _NS()

    class Enc:
        all = []

        def __init__(self, a, b, divisor=4):
            assert divisor == 1
            self.position = 0
            Enc.all.append(self)

        def deinit(self):
            pass
    rotaryio.IncrementalEncoder = Enc
    mc = _NS()
    mc.ResetReason = _NS()
    mc.ResetReason.WATCHDOG = "wdt"
    mc.ResetReason.POWER_ON = "por"
    mc.ResetReason.SOFTWARE = "sw"
    mc.cpu = _NS()
    mc.cpu.reset_reason = "por"
    mc.watchdog = _NS()
    mc.watchdog.feeds = 0

    def feed():
        mc.watchdog.feeds += 1
    mc.watchdog.feed = feed
    wd = _NS()
    wd.WatchDogMode = _NS()
    wd.WatchDogMode.RESET = "reset"

    class Serial:
        def __init__(self):
            self.timeout = 1
            self.in_waiting = 0
            self.rx = bytearray()

        def readinto(self, mv):
            n = len(mv)
            mv[:] = self.rx[:n]
            self.rx = self.rx[n:]
            self.in_waiting = len(self.rx)
            return n

        def write(self, data):
            return len(data)
    usb_cdc = _NS()
    usb_cdc.data = Serial()
    tm = _NS()
    tm.monotonic_ns = lambda: clock[0]
    tm.sleep = lambda s: None
    return {"board": board, "digitalio": digitalio, "pwmio": pwmio, "rotaryio": rotaryio, "microcontroller": mc,
            "time": tm, "watchdog": wd, "usb_cdc": usb_cdc}, PWMOut, Enc


def test_circuitpython_counts_outputs_and_idle_driven_step():
    import time as real_time
    clock = [5 * 10**9]
    mods, pwm, enc = _circuitpython_modules(clock)
    _install(**mods)
    try:
        from viperdrive import hal
        cfg = boardcfg.load(BOARDS + "circuitpython_feather.json")
        b = hal.load(cfg)
        assert b.soft and b.counter_bits == 16 and not hasattr(b, "edge_times_us")     # no rp2pio: rotaryio
        enc.all[0].position = -2
        enc.all[1].position = 70000
        buf = array("i", (0, 0))
        b.read_counts(buf)
        assert (buf[0], buf[1]) == (65534, 70000 & 0xFFFF)
        b.set_energized(True)
        b.write_duty(-32767, 100)
        assert pwm.all["pin-D10"].duty_cycle == 65535 and pwm.all["pin-D9"].duty_cycle == 0
        assert pwm.all["pin-D11"].duty_cycle == 200
        assert b.reset_cause() == protocol.RESET_POWER_ON
        assert not b.repl_pin_held()
        # 200 Hz from idle(): 100 ms of idle calls every 1 ms -> 20 steps, dt kept on the 5 ms grid
        calls = []
        b.start_periodic(200, lambda: calls.append(b.ticks_us()))
        for _ in range(100):
            b.idle()
            clock[0] += 1000000
        assert len(calls) == 20, len(calls)
        for x, y in zip(calls, calls[1:]):
            assert b.ticks_diff(y, x) == 5000
        # a 50 ms stall of the slow loop: one late step, the skipped periods counted, no burst
        clock[0] += 50000000
        b.idle()
        b.idle()
        assert len(calls) == 21 and b.overruns == 10
        assert b.ticks_diff(5, (1 << 30) - 5) == 10
        b.watchdog_start(1500)
        b.watchdog_feed()
        wdt = mods["microcontroller"].watchdog
        assert wdt.timeout == 1.5 and wdt.mode == "reset" and wdt.feeds == 1
        link = b.open_link()                        # usb_cdc.data, made non-blocking
        ser = mods["usb_cdc"].data
        assert ser.timeout == 0
        buf = bytearray(4)
        assert link.readinto(buf) is None
        ser.rx.extend(b"\xaa\x01\x00\x12\x34\x56")
        ser.in_waiting = 6
        assert link.readinto(buf) == 4 and bytes(buf) == b"\xaa\x01\x00\x12"
        assert link.readinto(buf) == 2 and bytes(buf[:2]) == b"\x34\x56"
        mods["usb_cdc"].data = None
        try:
            b.open_link()
        except ValueError as e:
            assert "usb_cdc.enable" in str(e)
        else:
            raise AssertionError("opened a link without usb_cdc.data")
    finally:
        sys.modules["time"] = real_time
        for name in ("watchdog", "usb_cdc"):
            del sys.modules[name]


# ---- the REPL boot switch: read by the backend (only hal/ imports port modules), before any Board exists ----

class FakeCpSM:
    """rp2pio.StateMachine running the program (mptest_hal_portable.Pio) on pins named as microcontroller.pin's
    GPIOn. The keywords are checked against what the program needs (what the chip's rp2pio configures).
    stalls: ns the board's clock jumps during the next reads (a garbage collection, an interrupt), one per read."""
    all: list = []
    stalls: list = []
    clock: list = [0]

    def __init__(self, program, frequency, **kw):
        assert frequency == 0 and kw["in_pin_count"] == 2 and kw["pull_in_pin_up"] == 3
        assert kw["auto_push"] and kw["push_threshold"] == 32
        assert kw["in_shift_right"] is False and kw["out_shift_right"] is True and kw["offset"] == 0
        assert kw["mov_status_type"] == "rxfifo" and kw["mov_status_n"] == 1
        self.base = kw["first_in_pin"].number
        self.pio = Pio(list(program), x=0x1234, y=77)   # X, Y left over from an earlier program
        # CircuitPython's construct: pio_sm_init (FIFOs cleared, the machine stopped), init run, then enabled
        for ins in kw["init"]:
            self._pins()
            self.pio.exec(ins)
        self.on = True
        FakeCpSM.all.append(self)

    def _pins(self):
        self.pio.pins = FakePin.levels.get(self.base, 0) | (FakePin.levels.get(self.base + 1, 0) << 1)

    def run(self, n):
        for _ in range(n):
            self._pins()
            self.pio.step()

    def readinto(self, buf):
        if FakeCpSM.stalls:
            FakeCpSM.clock[0] += FakeCpSM.stalls.pop(0)
        for i in range(len(buf)):
            for _ in range(100):
                if self.pio.rx:
                    break
                self.run(1)
            w = self.pio.rx.pop(0)
            buf[i] = w - (1 << 32) if w & 0x80000000 else w

    def deinit(self):
        self.on = False


def _circuitpython_pico_modules(clock):
    mods, pwm, _enc = _circuitpython_modules(clock)
    rp2pio = _NS()
    rp2pio.StateMachine = FakeCpSM
    mods["rp2pio"] = rp2pio
    mc = mods["microcontroller"]
    mc.pin = _NS()
    mc.cpu.frequency = 125000000
    for n in range(16):
        pin = _NS()                             # one object per pin, as microcontroller.Pin
        pin.number = n
        setattr(mods["board"], "GP%d" % n, pin)
        setattr(mc.pin, "GPIO%d" % n, pin)
    FakeCpSM.all = []
    FakeCpSM.stalls = []
    FakeCpSM.clock = clock
    return mods, pwm


def test_circuitpython_on_the_rp2040_counts_and_times_edges_in_pio():
    """CircuitPython's rp2pio runs the rp2 backend's program: x4 counts on 32 bits and each wheel's last edge
    time, so the float law takes its speed from edge times and checks edge regularity, as on MicroPython."""
    import time as real_time
    clock = [7 * 10**9]
    mods, pwm = _circuitpython_pico_modules(clock)
    _install(**mods)
    try:
        from viperdrive import hal
        cfg = boardcfg.load(BOARDS + "circuitpython_pico.json")
        a_l = 2
        FakePin.levels[a_l] = 1                 # the left encoder rests at state 1: no count at boot
        b = hal.load(cfg)
        assert b.soft and b.counter_bits == 32 and hasattr(b, "edge_times_us")
        sm_l, sm_r = FakeCpSM.all
        assert (sm_l.base, sm_r.base) == (2, 4)
        buf = array("i", (9, 9))
        b.read_counts(buf)
        assert (buf[0], buf[1]) == (0, 0), buf      # cleared and primed by init: no count at boot
        _walk_pins(a_l, _seq(1, 300, +1), lambda: sm_l.run(24))
        _walk_pins(4, _seq(0, 7, -1), lambda: sm_r.run(24))
        sm_l.run(8 * 1250)                          # 10000 cycles: 80 us at 125 MHz after the left's last edge
        clock[0] += 10**6
        b.read_counts(buf)
        assert (buf[0], buf[1]) == (300, -7), buf
        e = array("i", (0, 0, 0, 0))
        b.edge_times_us(e)
        t = b.ticks_us()
        assert e[2] == e[3] == t and (t - e[0]) & 0x3FFFFFFF == 80, (t, e)
        # a collection during the left's read (the clock 3 ms on): that read is taken again and timed right
        _walk_pins(a_l, _seq(1, 4, +1), lambda: sm_l.run(24))
        sm_l.run(8 * 2500)                          # 160 us after the last edge
        clock[0] += 10**6
        FakeCpSM.stalls = [3 * 10**6]
        b.read_counts(buf)
        b.edge_times_us(e)
        # the clock has not moved since the sample: the edge is 160 us before now
        assert buf[0] == 304 and (b.ticks_us() - e[0]) & 0x3FFFFFFF == 160, (buf[0], b.ticks_us(), e)
        b.deinit()
        assert not sm_l.on and not sm_r.on
        # enc_b not the GPIO after enc_a: rotaryio (counts only, no edge times)
        mods, pwm = _circuitpython_pico_modules(clock)
        _install(**mods)
        from viperdrive import hal as hal2
        cfg2 = dict(cfg, pins=dict(cfg["pins"], left=dict(cfg["pins"]["left"], enc_b="GP9")))
        b2 = hal2.load(cfg2)
        assert b2.counter_bits == 16 and not hasattr(b2, "edge_times_us") and not FakeCpSM.all
    finally:
        sys.modules["time"] = real_time
        for name in ("watchdog", "usb_cdc", "rp2pio"):
            sys.modules.pop(name, None)


def test_repl_pin_read_through_the_machine_backends():
    from viperdrive import app
    no_file = lambda p: False                       # noqa: E731
    for backend, machine, board_file in (("rp2", FakeMachine(), "pico.json"),
                                         ("esp32", FakeMachine(), "esp32_devkit.json"),
                                         ("stm32", FakeMachine(), "pyboard.json")):
        mods = {"machine": machine}
        if backend == "rp2":
            mods["rp2"] = FakeRp2()
        if backend == "stm32":
            mods["pyb"] = FakePyb()
        _install(**mods)
        cfg = boardcfg.load(BOARDS + board_file)
        pin = cfg["repl_pin"]
        FakePin.levels[pin] = 1                     # pulled up, nothing pressed
        assert not app.repl_requested(cfg, exists=no_file), backend
        assert FakePin.pulls[pin] == FakePin.PULL_UP, backend
        FakePin.levels[pin] = 0                     # held low: REPL mode
        assert app.repl_requested(cfg, exists=no_file), backend
        down = dict(cfg)
        down["repl_pull"] = "down"
        assert not app.repl_requested(down, exists=no_file), backend
        assert FakePin.pulls[pin] == FakePin.PULL_DOWN
        FakePin.levels[pin] = 1                     # held high against the pull-down
        assert app.repl_requested(down, exists=no_file), backend
        del cfg["repl_pin"]
        assert not app.repl_requested(cfg, exists=no_file)      # no pin configured: the file switch only
    from viperdrive import hal
    assert "machine" not in app.__dict__ and "Pin" not in app.__dict__
    assert hal.repl_pin_held({"backend": "sim", "repl_pin": 3}) is False    # the virtual board has no pins


def test_repl_pin_read_through_digitalio_on_circuitpython():
    import time as real_time

    from viperdrive import app
    mods, _pwm, _enc = _circuitpython_modules([0])
    _install(**mods)
    sys.modules.pop("machine", None)                # CircuitPython has no machine module at all
    try:
        cfg = boardcfg.load(BOARDS + "circuitpython_feather.json")
        dio = mods["digitalio"].DigitalInOut
        assert not app.repl_requested(cfg, exists=lambda p: False)
        dio.levels["pin-D4"] = False                # held low against the pull-up
        assert app.repl_requested(cfg, exists=lambda p: False)
    finally:
        sys.modules["time"] = real_time
        for name in ("watchdog", "usb_cdc"):
            del sys.modules[name]


def test_machine_board_ticks_are_the_port_functions():
    import time
    _install(machine=FakeMachine(), rp2=FakeRp2())
    from viperdrive import hal
    b = hal.load(boardcfg.load(BOARDS + "pico.json"))
    # no method around the port's function: the control tick's two reads are one call each
    assert b.ticks_us is time.ticks_us and b.ticks_ms is time.ticks_ms
    t0 = b.ticks_us()
    assert 0 <= time.ticks_diff(time.ticks_us(), t0) < 1000000
