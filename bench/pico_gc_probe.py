# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs ON the emulated Pico (MicroPython rp2, REPL mode: bench/bench_pico_sensors.py holds the repl pin and runs this
# with `mpremote run`): what one garbage collection of the slow loop's heap costs, in chip microseconds. The App is
# built from the flashed board.json as main.py builds it (without its link and watchdog, so the REPL keeps the
# USB port), some short-lived garbage is made as the link's frames make it, then gc.collect() is timed five times.
# Prints `gc_us a b c d e`, `free N`, `alloc N`.
import gc
import time

from viperdrive import app, boardcfg, hal

cfg = boardcfg.load("board.json")
board = hal.load(cfg)
a = app.App(board, cfg, link=False, watchdog=False)
times = []
for _ in range(5):
    junk = [bytearray(24) for _ in range(300)]
    del junk
    t0 = time.ticks_us()
    gc.collect()
    times.append(time.ticks_diff(time.ticks_us(), t0))
print("gc_us", " ".join(str(t) for t in times))
print("free", gc.mem_free())
print("alloc", gc.mem_alloc())
