# Runs ON the emulated Pico (MicroPython rp2, REPL mode: bench/bench_pico.py holds the repl pin and runs this with
# `mpremote run`): the control tick's parts, each averaged over N calls, in chip microseconds, net of the cost of the
# timing loop's own call. Prints `key value` lines.
import gc
import time
from array import array

import boardcfg
import control
import fixedstep as fx
import hal
import params_store

N = 200
cfg = boardcfg.load("board.json")
b = hal.load(cfg)
c = control.Controller(b, cfg, params_store.Params().values)
buf = array("i", (0, 0))


def per_call(fn, *a):
    t0 = time.ticks_us()
    for _ in range(N):
        fn(*a)
    return time.ticks_diff(time.ticks_us(), t0) / N


def nothing(*a):
    pass


loop = per_call(nothing, buf)
print("call_overhead_us", loop)
print("read_counts_us", per_call(b.read_counts, buf) - loop)
b.set_energized(True)
print("write_duty_us", per_call(b.write_duty, 1000, -1000) - loop)
b.set_energized(False)
print("step_disabled_us", per_call(fx.step, c.st, c.k, c.c, c.e, c.io) - loop)
c.enable(True)
c.set_velocity(2000, 2000)
print("step_enabled_us", per_call(fx.step, c.st, c.k, c.c, c.e, c.io) - loop)
print("tick_enabled_us", per_call(c.tick) - loop)
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


print("sm_put_get_us", per_call(sm_put_get) - loop)
gc.collect()
print("free_heap", gc.mem_free())
