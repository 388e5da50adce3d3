# rp2 (RP2040 / RP2350) backend: quadrature x4 decoding in PIO (the state machine counts, no Python per edge),
# PWM via machine.PWM.duty_u16, control loop from a hard machine.Timer IRQ, machine.WDT.
# See hal/__init__.py for the interface and hal/portable.py for the PIO program (as instruction words, tested
# on the unix port by emulating it) and the Board parts rp2 shares with esp32/stm32 (MachineBoard, DutyU16Bridge).
# mypy: disable-error-code="name-defined"
import sys
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


def _duty_registers(mode, pins):
    """array('i') for _write_duty_registers: the bridge mode, then per wheel (CC word, channel B?, DIR pin mask or
    IN2's CC word, IN2 channel B?). A pin's PWM is slice (pin >> 1) & 7, channel A (even) or B (odd)."""
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
    return array("i", out)


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
        self._pio = pio
        self._wd = _duty_registers(mode, pins)
        if sys.platform == "rp2":
            # on the chip, one viper call each: the FIFOs and the PWM compare/SIO registers directly. Elsewhere
            # (the unix port's tests with stand-in machine/rp2 modules) StateMachine.put/get and machine.PWM /
            # machine.Pin, the same protocol and the same levels (docs/firmware.md, "Timing": on the emulated RP2040
            # the Python calls were 60 % of the control tick)
            self.read_counts = self._read_counts_registers
            self.write_duty = self._write_duty_registers

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

    @micropython.viper
    def _read_counts_registers(self, buf):
        # read_counts on the chip, one viper call from the control tick: a request word into TXF of both wheels'
        # machines, then each answer from RXF once FSTAT says it is there. The protocol of sm.put(1)/sm.get(buf),
        # without their four Python calls in the hard IRQ (on the emulated RP2040 they were most of read_counts:
        # docs/firmware.md, "Timing"). Bounded: a machine that does not answer leaves buf as it was instead of
        # hanging the IRQ. The wheels' machines are 0 and 1 of the block (see __init__).
        pio = int(self._pio)
        p = ptr32((0x5020 + (pio << 4)) << 16)  # PIO0 0x50200000, PIO1 0x50300000 (built from small ints)
        p[4] = 1                                # TXF0 (0x010), TXF1 (0x014)
        p[5] = 1
        b = ptr32(buf)
        n = 0
        while p[1] & 0x100:                     # FSTAT (0x004): RXEMPTY of machine 0
            n += 1
            if n > 2000:
                return
        b[0] = p[8]                             # RXF0 (0x020)
        while p[1] & 0x200:                     # RXEMPTY of machine 1
            n += 1
            if n > 2000:
                return
        b[1] = p[9]                             # RXF1 (0x024)

    @micropython.viper
    def _write_duty_registers(self, left: int, right: int):
        # write_duty on the chip: signed Q15 duty -> each bridge's PWM compare value (cc = |q| * (TOP + 1) / 2**15,
        # rounded: 32767 -> TOP + 1, full on) and, pwm_dir, its DIR pin through SIO GPIO_OUT_SET/CLR; in1_in2
        # drives IN1 forward or IN2 reverse, the other low (bridge_levels' mapping). Ignored while de-energized.
        if not self.energized:
            return
        w = ptr32(self._wd)
        pwm = ptr32(0x4005 << 16)               # PWM 0x40050000: slice n at word 5n, CC +3, TOP +4
        sio = ptr32(0xD000 << 16)               # SIO 0xd0000000: GPIO_OUT_SET word 5, GPIO_OUT_CLR word 6
        mode = w[0]
        i = 0
        while i < 2:
            q = left
            if i == 1:
                q = right
            if q > 32767:
                q = 32767
            if q < -32767:
                q = -32767
            mag = q
            if q < 0:
                mag = 0 - q
            o = 1 + 4 * i
            cc = w[o]
            val = (mag * ((pwm[cc + 1] & 0xFFFF) + 1) + 16383) >> 15
            a = val
            b = 0
            if mode != 0 and q < 0:
                a = 0
                b = val
            v = pwm[cc]
            if w[o + 1]:
                pwm[cc] = (v & 0xFFFF) | (a << 16)
            else:
                pwm[cc] = (v & ~0xFFFF) | a
            if mode == 0:
                if q >= 0:
                    sio[5] = w[o + 2]
                else:
                    sio[6] = w[o + 2]
            else:
                cc2 = w[o + 2]
                v = pwm[cc2]
                if w[o + 3]:
                    pwm[cc2] = (v & 0xFFFF) | (b << 16)
                else:
                    pwm[cc2] = (v & ~0xFFFF) | b
            i += 1

    def _start_timer(self, hz):
        return machine.Timer(self.cfg.get("control_timer", -1), mode=machine.Timer.PERIODIC, freq=hz,
                             callback=self._tick, hard=True)
