# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs ON the emulated Pico (MicroPython rp2, REPL mode: bench/bench_pico.py holds the repl pin and runs this with
# `mpremote run`): the control period and its parts, each averaged over N calls, in chip microseconds. Each part's
# loop calls it with the same number of positional arguments as a baseline loop calling an empty function, and the
# baseline (the loop, the call, and the fresh command every loop writes) is subtracted. Prints `key value` lines.
#
# The periods here run back to back (~10x the control rate), so the wheels cannot follow: the deadman, stall,
# tracking and encoder checks are set out of the way (they would trip on what is not a period of real time), and
# every loop stages a fresh command, so every timed period runs the whole law, enabled and driving.
import gc
import time
from array import array

import machine
import micropython

from viperdrive import boardcfg, control, hal, params_store
from viperdrive import fixedstep as fx

N = 200
ticks = time.ticks_us
diff = time.ticks_diff
cfg = boardcfg.load("board.json")
b = hal.load(cfg)
vals = dict(params_store.Params().values)
vals.update({"deadman_ms": 1000, "deadman_disable_ms": 60000, "stall_speed": 0.0, "track_err_max": 500.0,
             "enc_ms": 0})
c = control.Controller(b, cfg, vals)
buf = array("i", (0, 0))
st = c.st
CMD = fx.G_CMD_NEW


def f0():
    pass


def f1(x):
    pass


def f2(x, y):
    pass


def f5(p, q, r, s, t):
    pass


def loop0(fn):
    t0 = ticks()
    for _ in range(N):
        st[CMD] = 1
        fn()
    return diff(ticks(), t0) / N


def loop1(fn, x):
    t0 = ticks()
    for _ in range(N):
        st[CMD] = 1
        fn(x)
    return diff(ticks(), t0) / N


def loop2(fn, x, y):
    t0 = ticks()
    for _ in range(N):
        st[CMD] = 1
        fn(x, y)
    return diff(ticks(), t0) / N


def loop5(fn, p, q, r, s, t):
    t0 = ticks()
    for _ in range(N):
        st[CMD] = 1
        fn(p, q, r, s, t)
    return diff(ticks(), t0) / N


# warm up, then the lower of two runs for each baseline (the first timing can catch the USB stack still busy)
loop0(f0)
base0 = min(loop0(f0), loop0(f0))
base1 = min(loop1(f1, buf), loop1(f1, buf))
base2 = min(loop2(f2, 1, 2), loop2(f2, 1, 2))
base5 = min(loop5(f5, 1, 2, 3, 4, 5), loop5(f5, 1, 2, 3, 4, 5))
print("python_call_us", base1)
print("read_counts_us", loop1(b.read_counts, buf) - base1)
b.set_energized(True)
print("write_duty_us", loop2(b.write_duty, 1000, -1000) - base2)
b.set_energized(False)
print("step_disabled_us", loop5(fx.step, c.st, c.k, c.c, c.e, c.io) - base5)
c.enable(True)
c.set_velocity(2000, 2000)
print("step_enabled_us", loop5(fx.step, c.st, c.k, c.c, c.e, c.io) - base5)
period = c.run_period
print("period_enabled_us", loop1(period, None) - base1)
print("period_generic_us", loop1(c._period, None) - base1)      # the same period through the hal's methods


def locked(n):
    # the period allocates nothing: n of them with the heap locked (a hard IRQ could not allocate either). In a
    # function: a loop variable at module level is a global, whose first store may grow the module's dict
    micropython.heap_lock()
    try:
        for _ in range(n):
            st[CMD] = 1
            period(None)
    except MemoryError:
        return "MemoryError"
    finally:
        micropython.heap_unlock()
    return "ok"


print("period_heap_lock", locked(1000))
print("driving", 1 if c.enabled() and not c.fault() else 0)


def spin(us):
    # iterations of a Python loop in `us` of chip time: what the CPU gives the main loop. Each stages a fresh
    # command, as the link does, so the periods in between drive
    n = 0
    t0 = ticks()
    while diff(ticks(), t0) < us:
        st[CMD] = 1
        n += 1
    return n


# the whole CPU cost of a period as the firmware runs it, interrupt entry and MicroPython's hard-callback dispatch
# included: the main loop's lost share with the period in a hard machine.Timer IRQ at 1 kHz (the counters above
# start at the period function's first register read)
# a fresh start at a command the wheels can follow (the back-to-back periods above wound the law up: at real time
# it would overspeed)
c.enable(False)
c.clear_fault()
c.enable(True)
c.set_velocity(1000, 1000)
free0 = spin(100000)
tim = machine.Timer(mode=machine.Timer.PERIODIC, freq=1000, callback=period, hard=True)
try:
    busy = spin(200000)
finally:
    tim.deinit()
free = (free0 + spin(100000)) // 2
share = 1.0 - busy / (2 * free)
print("irq_share_1khz_pct", share * 100)
print("irq_period_cpu_us", share * 1000)
print("driving_irq", 1 if c.enabled() and not c.fault() else 0)
print("fault_irq", c.fault())
c.enable(False)
gc.collect()
print("free_heap", gc.mem_free())
