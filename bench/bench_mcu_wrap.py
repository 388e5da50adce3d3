# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The counter-wrap difference inlined vs called, in viper and in plain bytecode, on the MicroPython unix port
(bench/mp_wrap_call.py), side by side in one run: why fixedstep.step keeps its inline copy and every other firmware
path calls hal.portable.wrap_delta (docs/firmware.md, "Counter wrap").

    mcu_wrap_call viper_inline_us=... viper_call_viper_us=... viper_call_python_us=... python_inline_us=...
                  python_call_us=... rounds=5 n=100000        (us per difference, loop overhead subtracted)
"""
from __future__ import annotations

import sys

from mpbench import run_workload


def main() -> int:
    return 0 if run_workload("mp_wrap_call.py", "bench_mcu_wrap", timeout=300, expect="mcu_wrap_call ") else 1


if __name__ == "__main__":
    sys.exit(main())
