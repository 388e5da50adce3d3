# Runs ON the emulated Pico (MicroPython rp2, REPL mode: bench/bench_pico.py holds the repl pin and runs this with
# `mpremote run`): the control tick's parts, each averaged over N calls, in chip microseconds. Each part's loop
# calls it with the same number of positional arguments as a baseline loop calling an empty function, and the
# baseline (the loop and the call) is subtracted. Prints `key value` lines.
import gc
import time
from array import array

import boardcfg
import control
import fixedstep as fx
import hal
import params_store

N = 200
ticks = time.ticks_us
diff = time.ticks_diff
cfg = boardcfg.load("board.json")
b = hal.load(cfg)
c = control.Controller(b, cfg, params_store.Params().values)
buf = array("i", (0, 0))


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
        fn()
    return diff(ticks(), t0) / N


def loop1(fn, x):
    t0 = ticks()
    for _ in range(N):
        fn(x)
    return diff(ticks(), t0) / N


def loop2(fn, x, y):
    t0 = ticks()
    for _ in range(N):
        fn(x, y)
    return diff(ticks(), t0) / N


def loop5(fn, p, q, r, s, t):
    t0 = ticks()
    for _ in range(N):
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
print("tick_enabled_us", loop0(c.tick) - base0)
c.enable(False)
e0 = b._enc_l.sm
e1 = b._enc_r.sm
raw_l = b._raw_l
raw_r = b._raw_r


def sm_put_get():
    e0.put(1)
    e1.put(1)
    e0.get(raw_l)
    e1.get(raw_r)


print("sm_put_get_us", loop0(sm_put_get) - base0)
gc.collect()
print("free_heap", gc.mem_free())
