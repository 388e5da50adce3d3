# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The edge-timed speed estimate fuzzed at scale: 10**7 control periods (two wheels each) of random edge sequences
(mcu/tests/mptest_edge_fuzz.py: speeds from a crawl to 2e5 counts/s, reversals, stops past the idle limit, the 32-bit
counter and the 2**30 ticks wrap, 2 % garbage edge times) through the viper step and the float law on the MicroPython
unix port, split over one process per core. Every period asserts: the viper speed equals the float law's to one
count/s, is finite and within +-2**20 counts/s, and for honest edges is never faster than the wheel ever was. A
failure ends the bench with the period, the wheel and the values.

    python bench/bench_edge_fuzz.py [PERIODS]      # default 10**7 (~4 min on 2 cores)
prints: edge_fuzz periods=... wheel_periods=... processes=... max_diff_counts_s=... max_raw_counts_s=...
        failures=0 seconds=...
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from viperdrive import executables

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    total = int(argv[0]) if argv else 10 ** 7
    procs = max(1, len(os.sched_getaffinity(0)))
    exe = executables.require("micropython", SystemExit)
    t0 = time.monotonic()
    share = -(-total // procs)
    runs = [subprocess.Popen([exe, "-X", "heapsize=8M", str(ROOT / "bench" / "mp_edge_fuzz.py"), str(ROOT),
                              str(share), str(1000 + i), "1000" if i % 2 == 0 else "500"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(procs)]
    parts, failures = [], 0
    for r in runs:
        out, err = r.communicate()
        if r.returncode != 0:
            failures += 1
            print(f"bench_edge_fuzz: a part failed:\n{out}{err[-3000:]}", file=sys.stderr)
            continue
        parts.append(dict(kv.split("=") for kv in out.split()[1:]))
    if not parts:
        return 1
    print("edge_fuzz periods=%d wheel_periods=%d processes=%d max_diff_counts_s=%s max_raw_counts_s=%s failures=%d "
          "seconds=%.0f" % (sum(int(p["periods"]) for p in parts), sum(int(p["wheel_periods"]) for p in parts), procs,
                            max(float(p["max_diff_counts_s"]) for p in parts),
                            max(int(p["max_raw_counts_s"]) for p in parts), failures, time.monotonic() - t0),
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
