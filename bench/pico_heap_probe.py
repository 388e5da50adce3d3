# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs ON an emulated or real Pico in REPL mode (`mpremote run bench/pico_heap_probe.py`, the board booted with its
# repl pin held): the free heap once the firmware's modules are imported, and with the App built as main.py builds
# it (not started: no link, no watchdog, no timer). Prints `name value` lines for bench/bench_pico_frozen.py.
import gc
import time

gc.collect()
t0 = time.ticks_us()
from viperdrive import app, boardcfg, hal  # noqa: E402 -- the import is what is timed

cfg = boardcfg.load("board.json")
board = hal.load(cfg)
t1 = time.ticks_us()
gc.collect()
imported = gc.mem_free()
a = app.App(board, cfg, watchdog=False)
gc.collect()
built = gc.mem_free()
print("import_us", time.ticks_diff(t1, t0))
print("free_imported", imported)
print("free_app_built", built)
print("frozen", 1 if a.image & 0x08 else 0)      # GET_DIAG DIAG_FROZEN
