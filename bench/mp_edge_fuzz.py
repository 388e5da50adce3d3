# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# MicroPython workload of bench/bench_edge_fuzz.py: fuzz() of mcu/tests/mptest_edge_fuzz.py for N periods from a seed.
# argv: repo root, periods, seed, control Hz. Prints one `edge_fuzz_part ...` line.
import sys
import time

root = sys.argv[1]
for p in (root + "/mcu/tests", root + "/sim", root):
    sys.path.insert(0, p)

import firmware_package  # noqa: E402

firmware_package.mount(root)     # the firmware as the package viperdrive, as on a board (sim/firmware_package.py)

import mptest_edge_fuzz  # noqa: E402

n, seed, hz = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.ticks_ms()
periods, worst, top, honest = mptest_edge_fuzz.fuzz(n, seed, hz)
print("edge_fuzz_part periods=%d wheel_periods=%d honest=%d max_diff_counts_s=%.3f max_raw_counts_s=%d seconds=%.1f"
      % (periods, 2 * periods, honest, worst, top, time.ticks_diff(time.ticks_ms(), t0) / 1000))
