# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs ON the emulated Pico (MicroPython rp2, REPL mode, with fixedstep_split.mpy copied next to the firmware:
# bench/bench_pico.py does both and runs this with `mpremote run`): the control step as shipped (fixedstep, one
# viper function) against the same step split into a per-wheel function called twice and a statistics function
# (fixedstep_split, made by bench/split_step.py), in one process, in chip microseconds. First both are checked to
# compute the same words on the chip; then the step alone and the whole tick, enabled and driving, each net of a
# loop calling an empty function with as many arguments, the best of 5 interleaved rounds of N calls.
# Prints one `pico_control_step_layout key=value ...` line.
import time
from array import array

import fixedstep_split as fxs

from viperdrive import boardcfg, control, hal, params_store
from viperdrive import fixedstep as fx

N = 200
ticks = time.ticks_us
diff = time.ticks_diff
cfg = boardcfg.load("board.json")
b = hal.load(cfg)
values = dict(params_store.Params().values)
# as bench/mp_control_step.py: every term of the law active, and no deadman stop, stall or tracking fault in the
# thousands of back-to-back periods timed here (each period is ~0.1 ms of chip time, not the 2 ms the law assumes)
values.update({"kd": 0.002, "ks": 0.05, "ka": 0.01, "deadband": 0.03, "deadman_disable_ms": 60000,
               "deadman_ms": 1000, "stall_speed": 0.0, "track_err_max": 500.0})
c = control.Controller(b, cfg, values)          # the tick: the real PIO encoders and PWM
s = control.Controller(b, cfg, values)          # the step alone: encoder counters the loop moves itself
G_CMD_NEW = fx.G_CMD_NEW


def f0():
    pass


def f5(p, q, r, t, u):
    pass


def loop_step(fn, st, k, cnt, e, io):
    """fn(st, k, cnt, e, io) N times, the encoders moving and a fresh command every period."""
    t0 = ticks()
    for _ in range(N):
        cnt[0] += 6
        cnt[1] -= 4
        st[G_CMD_NEW] = 1
        fn(st, k, cnt, e, io)
    return diff(ticks(), t0) / N


def loop_tick(fn, st):
    t0 = ticks()
    for _ in range(N):
        st[G_CMD_NEW] = 1
        fn()
    return diff(ticks(), t0) / N


def same_words(n):
    """Both layouts from the stepping controller's state: equal words every period."""
    a = [array("i", x) for x in (s.st, s.k, s.c, s.e, s.io)]
    z = [array("i", x) for x in a]
    for i in range(n):
        for arrs in (a, z):
            arrs[2][0] += 5 + (i % 7)
            arrs[2][1] -= 3 + (i % 5)
            arrs[4][fx.IO_T0] = i * 2000
            if i % 10 == 0:
                arrs[0][G_CMD_NEW] = 1
        fx.step(*a)
        fxs.step(*z)
        for j in range(5):
            if a[j] != z[j]:
                raise SystemExit("pico_step_layouts: the layouts differ at period %d" % i)
    return n


for x in (c, s):
    x.enable(True)
# the real wheels slowly: between the timed rounds they turn on for milliseconds, which the next tick takes for
# one period's motion (a faster wheel would read as over-speed)
c.set_velocity(300, 300)
s.set_velocity(2000, 2000)
checked = same_words(300)
cnt0 = array("i", (0, 0))
base_step = min(loop_step(f5, s.st, s.k, cnt0, s.e, s.io), loop_step(f5, s.st, s.k, cnt0, s.e, s.io))
base_tick = min(loop_tick(f0, s.st), loop_tick(f0, s.st))
loop_tick(c.tick, c.st)                # warm up
best = {}
for _ in range(5):
    for name, mod in (("inline", fx), ("split", fxs)):
        control.fx = mod              # Controller.tick calls fx.step: this layout's
        st = loop_step(mod.step, s.st, s.k, s.c, s.e, s.io) - base_step
        tt = loop_tick(c.tick, c.st) - base_tick
        best[name + "_step"] = min(best.get(name + "_step", st), st)
        best[name + "_tick"] = min(best.get(name + "_tick", tt), tt)
control.fx = fx
driving = c.enabled() and s.enabled() and not c.fault() and not s.fault() and c.st[fx.G_DEADMAN] == 0
c.enable(False)
s.enable(False)
print("pico_control_step_layout inline_step_us=%.1f split_step_us=%.1f step_ratio=%.2f inline_tick_us=%.1f "
      "split_tick_us=%.1f tick_ratio=%.2f split_calls=3 same_words_periods=%d driving=%d "
      "note=chip_us_repl_mode" % (
          best["inline_step"], best["split_step"], best["split_step"] / best["inline_step"], best["inline_tick"],
          best["split_tick"], best["split_tick"] / best["inline_tick"], checked, driving))
