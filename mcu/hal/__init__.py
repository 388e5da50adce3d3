# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Hardware layer: one module per backend (rp2, esp32, stm32, circuitpython, sim). Code that only one port can
# import lives in its backend module and nowhere else. The firmware picks the backend named by the board
# config file ("backend": "rp2" | "esp32" | "stm32" | "circuitpython" | "sim") through load().
#
# Every backend module defines `class Board` with this interface (the firmware uses nothing else):
#
#   Board(cfg)                      cfg: the parsed board config dict (see docs/board-config.md)
#   counter_bits                    16 or 32: the raw encoder counters wrap at 2**counter_bits
#   read_counts(buf)                buf: array('i', 2); writes the RAW counters (left, right) as
#                                   non-negative ints in [0, 2**counter_bits). No allocation. Direction signs
#                                   are applied by the firmware (control.py), in one place, from the config.
#                                   32-bit counters are stored as their int32 bit pattern (array('i') cannot
#                                   hold >= 2**31: those read back negative); wrap-safe deltas mask anyway.
#   write_duty(left, right)         signed duty in Q15 (-32767..32767 = -100%..100%), RAW (sign applied by the
#                                   firmware). No allocation. Ignored while de-energized.
#   set_energized(on)               False: H-bridge outputs off (coast), duty forced to 0
#   start_periodic(hz, fn)          call fn() every 1/hz s: a hard timer IRQ where the port has one (fn is
#                                   allocation-free), a thread or soft timer otherwise; soft = True then
#   stop_periodic()
#   soft                            True when start_periodic is not a hard IRQ (reported in GET_DIAG flags)
#   ticks_us() / ticks_ms()         the port's wrapping tick counters (use time.ticks_diff on them)
#   watchdog_start(timeout_ms)      start the hardware watchdog (cannot be stopped once started)
#   watchdog_feed()
#   reset_cause()                   shared.protocol.RESET_* code of the last reset
#   open_link()                     the host link stream: an object with readinto(buf) -> int|None
#                                   (non-blocking; None or 0 when nothing is waiting), write(buf) -> int,
#                                   close(). UART or USB CDC (stdin/stdout, Ctrl-C disabled) on hardware,
#                                   a TCP socket in the virtual board. hal/streams.py: the USB CDC stream
#                                   calls micropython.kbd_intr(-1) when opened (0x03 is frame data, not
#                                   Ctrl-C) and kbd_intr(3) in close(): close the link to get Ctrl-C back.
#   free_heap()                     bytes free (gc.mem_free() where the port has it)
#   edge_times_us(buf)              optional (hasattr): buf array('i', 4): per wheel, ticks_us of the last
#                                   counted encoder edge (buf[0], buf[1]), then of the moment read_counts took
#                                   that wheel's count (buf[2], buf[3]); called right after read_counts. The step
#                                   takes an edge time where the count changed and times the wheel's rest from the
#                                   sample time (speed from the edges' times, fixedstep.step). rp2 (PIO edge
#                                   timer), esp32 (only with pin-IRQ decoding) and sim have it. No allocation.
#   period_fn(step, st, k, c, e, io, tail, ctl)
#                                   optional (hasattr; rp2 on the chip, None elsewhere): the whole control period
#                                   as one callable fn(t) (t: ignored, the timer's argument) that does what the
#                                   firmware's generic tick does with the calls above: io[0] = ticks_us();
#                                   read_counts(c); step(st, k, c, e, io); write_duty(io[2], io[3]); tail() when
#                                   ctl[0], or when ctl[1] and st[ctl[2]] == 0; io[1] = ticks_us(). No allocation.
#                                   start_periodic(hz, fn) given that fn calls it from the timer directly.
#   read_inputs()                   optional, needed with a board config "estop": the digital inputs word, the
#                                   e-stop pin's level at bit estop.pin (bit 0 for a pin name). Called in the
#                                   control period (allocation-free); rp2's period_fn reads SIO GPIO_IN instead
#   sensor_bus()                    optional, needed with "imu": the I2C bus (machine.I2C interface:
#                                   readfrom_mem_into, writeto_mem; OSError on NACK/timeout). Slow loop only
#   battery_u16()                   optional, needed with "battery": the divider's ADC reading, 0..65535 for
#                                   0..battery.vref volts. Slow loop only
#   idle()                          called by the slow loop when it has nothing to do (sleep ~1 ms).
#                                   circuitpython (no timer IRQ, no threads): start_periodic only arms a
#                                   schedule and idle() runs the step when it is due, so the slow loop must
#                                   reach idle() at least once per control period; that backend also has
#                                   ticks_diff(a, b), as CircuitPython's time module lacks it.
#   repl_pin_held()                 the REPL boot switch: the config's repl_pin at its active level (False
#                                   without one). Each backend module also has repl_pin_held(cfg), which
#                                   app.repl_requested calls through hal.repl_pin_held(cfg) before any Board
#                                   exists (so only hal/ reads pins: machine.Pin, or digitalio on CircuitPython)
#   deinit()                        optional (the hardware backends have it): outputs off, control timer
#                                   stopped, encoder peripherals released; the watchdog cannot be stopped
#
# The sim backend additionally takes the plant and the link stream from the virtual board:
#   Board(cfg, plant=..., link=...)   plant.step(dt_s, duty_l_q15, duty_r_q15) advances the physics one
#                                     control period; plant.counts(buf) gives the raw quadrature counters.


def load(cfg, **kw):
    """The Board of the backend cfg names; extra keywords go to the backend (the sim's plant and link)."""
    return _backend(cfg).Board(cfg, **kw)


def repl_pin_held(cfg):
    """The REPL boot switch of the backend cfg names, read without making a Board (no outputs touched)."""
    return _backend(cfg).repl_pin_held(cfg)


def _backend(cfg):
    name = cfg.get("backend", "sim")
    if name == "rp2":
        from . import rp2 as mod
    elif name == "esp32":
        from . import esp32 as mod
    elif name == "stm32":
        from . import stm32 as mod
    elif name == "circuitpython":
        from . import circuitpython as mod
    elif name == "sim":
        from . import sim as mod
    else:
        raise ValueError("unknown backend %r in the board config" % name)
    return mod
