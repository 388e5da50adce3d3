"""The firmware's control step: viper (fixed point) vs the float reference of the same law, on the MicroPython unix
port, side by side in one run (bench/mp_control_step.py), and the RP2040 budget on paper.

Prints:
  mcu_control_step viper_us=... float_us=... ratio=... alloc_bytes=...
  mcu_control_step_detail viper_step_only_us=... float_alloc_bytes_per_step=... heap_lock=ok steps=... note=...
  mcu_control_step_raw ...
  mcu_link_garbage quiet_period_max_us=... flood_period_max_us=... ... commands_answered_flood=.../...
  mcu_control_step_rp2040 est_us=... share_of_1khz_period=... native_us=... native_instr=... ...

The RP2040 estimate (docs/firmware.md, "Timing budget") is built from:
  - the native code of fixedstep.step compiled by mpy-cross -march=armv6m: its size, and the size of its
    per-wheel loop body, measured by compiling the module with the function (or the loop body) removed. Thumb-1
    instructions are 2 bytes, so executed instructions <= (step - loop)/2 + 2 * loop/2 (both wheels; every
    branch counted: native_bound). The estimate removes the code a steady driving period skips (measured the
    same way: rare branches, the disabled path, one of each term's two multiply variants), at CPI_M0PLUS
    cycles per instruction, plus DIVISIONS runtime divisions;
  - the Python-level calls one period makes on the rp2 backend (timer callback, tick(), ticks_us x2, the PIO
    encoder reads, the PWM writes, the telemetry log) at CALL_US each: bytecode calls dominate the period.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

from mpbench import run_workload

from viperdrive import executables

ROOT = Path(__file__).resolve().parent.parent
F_CPU_HZ = 125_000_000
CPI_M0PLUS = 1.5        # Cortex-M0+: ALU/MUL 1 cycle (RP2040 has the single-cycle multiplier), LDR/STR 2, taken B 2
DIVISIONS = 4           # joint slew (2 when limiting) + edge-period speeds (2 at low speed), via the runtime
DIV_CYCLES = 60         # call into the runtime's floor division + the SIO hardware divider
CALL_US = 2.5           # one Python-level call on MicroPython/RP2040 at 125 MHz (bytecode dispatch + call setup)
# Python-level calls per period on the rp2 backend: timer IRQ -> Board._tick -> Controller.tick (2), ticks_us x2
# (hal method + time.ticks_us: 4), read_counts (1 + 4 PIO put/get + 1 copy: 6), fixedstep.step (1),
# write_duty (1 + 2 bridge writes of 2 calls each: 5), fixedstep.log (1)
PYTHON_CALLS = 2 + 4 + 6 + 1 + 5 + 1


def mpy_size(source: str, arch: str, cross: str) -> int:
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "fixedstep.py"
        src.write_text(source)
        out = Path(d) / "fixedstep.mpy"
        subprocess.run([cross, "-march=" + arch, "-o", str(out), str(src)], check=True, capture_output=True)
        return out.stat().st_size


def _blank(lines: list[str], spans: list[tuple[int, int, int]]) -> str:
    """lines with each (first, last, indent) 1-based line span replaced by a `pass` at that indent."""
    out = list(lines)
    for first, last, col in sorted(spans, reverse=True):
        out[first - 1:last] = [" " * col + "pass\n"]
    return "".join(out)


def _body_span(stmts: list[ast.stmt]) -> tuple[int, int, int]:
    return stmts[0].lineno, stmts[-1].end_lineno or stmts[-1].lineno, stmts[0].col_offset


def native_sizes(cross: str) -> tuple[int, int, int]:
    """Bytes of fixedstep.step in the armv6m build: (whole function, its per-wheel loop body, the code a
    steady driving period skips: first-sample statistics, requests, gain switch, deadman, edge timing, the
    disabled path, fault latching, the back-calculation term while unsaturated, kA at a constant setpoint, D
    with kd = 0 (the defaults), and one arm of every term's two multiply variants)."""
    path = ROOT / "mcu" / "fixedstep.py"
    src = path.read_text()
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    step = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step")
    loop = next(n for n in ast.walk(step) if isinstance(n, ast.While)
                and isinstance(n.test, ast.Compare) and getattr(n.test.left, "id", "") == "w")
    full = mpy_size(src, "armv6m", cross)
    # step reduced to a viper function that does nothing (same signature and decorator)
    no_step = _blank(lines, [_body_span(step.body[1:])])
    # the wheel loop's body reduced to nothing but the counter increment
    ind = " " * loop.body[0].col_offset
    no_loop = "".join(lines[:loop.body[0].lineno - 1]) + ind + "w += 1\n" + "".join(lines[loop.end_lineno:])
    skipped = []
    for n in ast.walk(step):
        if not isinstance(n, ast.If):
            continue
        test = ast.unparse(n.test)
        if test in ("int(st[G_NSTAT]) == 0", "int(st[G_REQ]) != 0", "bank != int(st[G_BANK])",
                    "age > int(k[kb + K_DM_N])", "int(k[K_EDGE]) and d > -2 and d < 2", "bump",
                    "fault != 0 and enabled", "sat", "m != 0 and x != 0", "md != 0"):
            skipped.append(_body_span(n.body))
        elif test in ("enabled",) and n.orelse:
            skipped.append(_body_span(n.orelse))
        elif test == "sh >= 15" and n.orelse:
            skipped.append(_body_span(n.orelse))
    in_loop = [sp for sp in skipped if loop.lineno < sp[0] <= (loop.end_lineno or 0)]
    skip_bytes = full - mpy_size(_blank(lines, skipped), "armv6m", cross)
    skip_loop = full - mpy_size(_blank(lines, in_loop), "armv6m", cross)
    return (full - mpy_size(no_step, "armv6m", cross), full - mpy_size(no_loop, "armv6m", cross),
            skip_bytes + skip_loop)    # loop-body code skipped counts twice (two wheels)


def main() -> int:
    cross = executables.require("mpy-cross", SystemExit)
    if not run_workload("mp_control_step.py", "bench_mcu_control", timeout=600, expect="mcu_control_step "):
        return 1
    # a burst of garbage on the link vs the control loop's timing (App on the sim backend, real threads)
    if not run_workload("mp_link_garbage.py", "bench_mcu_control", timeout=120, expect="mcu_link_garbage "):
        return 1
    step_bytes, loop_bytes, skip_bytes = native_sizes(str(cross))
    bound = (step_bytes - loop_bytes) // 2 + 2 * (loop_bytes // 2)     # every instruction, loop twice
    instr = bound - skip_bytes // 2                                     # a steady driving period
    native_us = (instr * CPI_M0PLUS + DIVISIONS * DIV_CYCLES) / F_CPU_HZ * 1e6
    bound_us = (bound * CPI_M0PLUS + DIVISIONS * DIV_CYCLES) / F_CPU_HZ * 1e6
    est_us = native_us + PYTHON_CALLS * CALL_US
    print("mcu_control_step_rp2040 est_us=%.1f share_of_1khz_period=%.3f native_us=%.1f native_instr=%d "
          "native_bound_us=%.1f native_bound_instr=%d step_bytes=%d loop_bytes=%d python_calls=%d call_us=%.1f "
          "cpi=%.1f f_cpu_mhz=%d" % (est_us, est_us / 1000.0, native_us, instr, bound_us, bound, step_bytes,
                                     loop_bytes, PYTHON_CALLS, CALL_US, CPI_M0PLUS, F_CPU_HZ // 1_000_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
