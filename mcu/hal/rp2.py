# rp2 (RP2040 / RP2350) backend: quadrature x4 decoding in PIO (the state machine counts, no Python per edge),
# PWM via machine.PWM.duty_u16, control loop from a hard machine.Timer IRQ, machine.WDT.
# See hal/__init__.py for the interface and hal/portable.py for the PIO program (as instruction words, tested
# on the unix port by emulating it) and the Board parts rp2 shares with esp32/stm32 (MachineBoard, DutyU16Bridge).
# mypy: disable-error-code="name-defined"
from array import array

import machine
import micropython
import rp2
from micropython import const

from shared import protocol

from . import portable

# WATCHDOG.REASON: why the last reset came through the watchdog. Bit 0 TIMER: it bit (nobody fed it). Bit 1 FORCE: a
# reboot was asked for (machine.reset(), mpremote reset, picotool reboot: the SDK's watchdog_reboot sets
# CTRL.TRIGGER). The rp2 port's machine.reset_cause() says WDT_RESET for both.
_WATCHDOG_REASON = const(0x40058008)
_REASON_TIMER = const(1)


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
        sm = rp2.StateMachine(sm_id, _quadrature_program, in_base=machine.Pin(pin_a))
        self.sm = sm
        # X, Y and the FIFOs survive a soft reset: a run stopped mid-request (X != 0, a request in TX, an answer
        # in RX) would otherwise leave one unrequested word queued, and every read_counts would then return the
        # count of the period before. Start with no request (X = 0), the count at 0 and both FIFOs empty.
        sm.exec(portable.PIO_CLEAR_X)
        sm.exec(portable.PIO_CLEAR_Y)
        while sm.tx_fifo():
            sm.exec(portable.PIO_DISCARD_TX)
        sm.exec(portable.PIO_PRIME)
        sm.active(1)
        while sm.rx_fifo():
            sm.get()

    def deinit(self):
        self.sm.active(0)


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
        # sm.get(buf) fills a buffer: a one-word view per wheel into our own array, so a count >= 2**30 never
        # becomes a heap int (allocation-free in the hard IRQ)
        self._raw = array("i", (0, 0))
        mv = memoryview(self._raw)
        self._raw_l = mv[0:1]
        self._raw_r = mv[1:2]

    def reset_cause(self):
        code = super().reset_cause()
        if code == protocol.RESET_WATCHDOG and not self._wd_reason & _REASON_TIMER:
            # a reboot somebody asked for, not a hang the watchdog caught: no FAULT_WATCHDOG to latch
            return protocol.RESET_SOFT
        return code

    def read_counts(self, buf):
        # request (nonzero word) -> the program pushes Y within ~10 PIO cycles; get() waits for that word
        self._enc_l.sm.put(1)
        self._enc_r.sm.put(1)
        self._enc_l.sm.get(self._raw_l)
        self._enc_r.sm.get(self._raw_r)
        _copy2(buf, self._raw)

    def _start_timer(self, hz):
        return machine.Timer(self.cfg.get("control_timer", -1), mode=machine.Timer.PERIODIC, freq=hz,
                             callback=self._tick, hard=True)
