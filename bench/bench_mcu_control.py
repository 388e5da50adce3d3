# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The firmware's control step: viper (fixed point) vs the float reference of the same law, on the MicroPython unix
port, side by side in one run (bench/mp_control_step.py), and the RP2040 budget on paper.

Prints:
  mcu_control_step viper_us=... float_us=... ratio=... alloc_bytes=...
  mcu_control_step_detail viper_step_only_us=... float_alloc_bytes_per_step=... heap_lock=ok steps=... note=...
  mcu_control_step_raw ...
  mcu_link_garbage quiet_period_max_us=... flood_period_max_us=... ... commands_answered_flood=.../...
  mcu_control_step_layout inline_step_us=... split_step_us=... step_ratio=... inline_tick_us=... ...
  mcu_control_step_rp2040 est_us=... share_of_1khz_period=... native_us=... native_instr=... ...
  mcu_control_step_layout_rp2040 inline_native_instr=... split_native_instr=... ...

The layout lines compare the step as shipped (one viper function, mcu/fixedstep.py) with the same step split into
a per-wheel function called twice and a statistics function (bench/split_step.py), in the same process: x64 time
on the unix port, and the armv6m native code estimate below for both (emitted code only: a viper-to-viper call
also runs the runtime's generic call path, which the x64 timing includes and no code size shows).

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
from split_step import split_source

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


def _blank(lines: list[str], spans: list[tuple[int, int, int, str]]) -> str:
    """lines with each (first, last, indent, text) 1-based line span replaced by text at that indent."""
    out = list(lines)
    for first, last, col, text in sorted(spans, reverse=True):
        out[first - 1:last] = [" " * col + text + "\n"]
    return "".join(out)


def _body_span(stmts: list[ast.stmt], text: str = "pass") -> tuple[int, int, int, str]:
    return stmts[0].lineno, stmts[-1].end_lineno or stmts[-1].lineno, stmts[0].col_offset, text


# `if` tests whose body a steady driving period skips (default gains, a constant command, unsaturated)
SKIPPED_IF = ("int(st[G_NSTAT]) == 0", "int(st[G_REQ]) != 0", "bank != int(st[G_BANK])", "age > int(k[kb + K_DM_N])",
              "int(k[K_EDGE]) and d > -2 and d < 2", "bump", "fault != 0 and enabled", "sat", "m != 0 and x != 0",
              "md != 0", "r & 16")


def native_sizes(src: str, cross: str) -> tuple[int, int, int]:
    """Bytes of the control step in the armv6m build of a fixedstep module's source: (every function of the step,
    the per-wheel code, the code a steady driving period skips). The step is fixedstep.step, with _stats and
    _wheel where the split layout (bench/split_step.py) has them; the per-wheel code is the wheel loop's body, or
    _wheel. The code a steady period skips: first-sample statistics, requests, gain switch, deadman, edge timing,
    the disabled path, fault latching, the back-calculation term while unsaturated, kA at a constant setpoint, D
    with kd = 0 (the defaults), and one arm of every term's two multiply variants. Per-wheel code counts twice."""
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("step", "_stats", "_wheel")}
    full = mpy_size(src, "armv6m", cross)

    def gone(spans):
        return full - mpy_size(_blank(lines, spans), "armv6m", cross)

    def body(fn):       # a function's body after its docstring, reduced to nothing (an int function returns 0)
        stmts = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body
        return _body_span(stmts, "return 0" if fn.returns is not None else "pass")

    total = sum(gone([body(fn)]) for fn in fns.values())
    if "_wheel" in fns:
        wheel = fns["_wheel"]
        wheel_bytes = gone([body(wheel)])
        in_wheel = (wheel.lineno, wheel.end_lineno or 0)
    else:
        loop = next(n for n in ast.walk(fns["step"]) if isinstance(n, ast.While)
                    and isinstance(n.test, ast.Compare) and getattr(n.test.left, "id", "") == "w")
        # the wheel loop's body reduced to nothing but the counter increment
        wheel_bytes = gone([_body_span(loop.body, "w += 1")])
        in_wheel = (loop.lineno, loop.end_lineno or 0)
    skipped = []
    for fn in fns.values():
        for n in ast.walk(fn):
            if not isinstance(n, ast.If):
                continue
            test = ast.unparse(n.test)
            if test in SKIPPED_IF:
                skipped.append(_body_span(n.body))
            elif test in ("enabled", "sh >= 15") and n.orelse:
                skipped.append(_body_span(n.orelse))
    per_wheel = [sp for sp in skipped if in_wheel[0] < sp[0] <= in_wheel[1]]
    return total, wheel_bytes, gone(skipped) + gone(per_wheel)     # per-wheel code skipped counts twice


def rp2040_estimate(src: str, cross: str) -> dict:
    """Executed instructions and µs of one steady driving period of the step's native code at 125 MHz."""
    step_bytes, loop_bytes, skip_bytes = native_sizes(src, cross)
    bound = (step_bytes - loop_bytes) // 2 + 2 * (loop_bytes // 2)     # every instruction, per-wheel code twice
    instr = bound - skip_bytes // 2                                     # a steady driving period
    return {"step_bytes": step_bytes, "loop_bytes": loop_bytes, "bound": bound, "instr": instr,
            "native_us": (instr * CPI_M0PLUS + DIVISIONS * DIV_CYCLES) / F_CPU_HZ * 1e6,
            "bound_us": (bound * CPI_M0PLUS + DIVISIONS * DIV_CYCLES) / F_CPU_HZ * 1e6}


def main() -> int:
    cross = executables.require("mpy-cross", SystemExit)
    src = (ROOT / "mcu" / "fixedstep.py").read_text()
    split = split_source(src)
    with tempfile.TemporaryDirectory() as d:
        # the step as shipped and split into functions (bench/split_step.py), side by side in one process
        (Path(d) / "fixedstep_split.py").write_text(split)
        if not run_workload("mp_control_step.py", "bench_mcu_control", timeout=900, expect="mcu_control_step_layout ",
                            args=(d,)):
            return 1
    # a burst of garbage on the link vs the control loop's timing (App on the sim backend, real threads)
    if not run_workload("mp_link_garbage.py", "bench_mcu_control", timeout=120, expect="mcu_link_garbage "):
        return 1
    e = rp2040_estimate(src, str(cross))
    est_us = e["native_us"] + PYTHON_CALLS * CALL_US
    print("mcu_control_step_rp2040 est_us=%.1f share_of_1khz_period=%.3f native_us=%.1f native_instr=%d "
          "native_bound_us=%.1f native_bound_instr=%d step_bytes=%d loop_bytes=%d python_calls=%d call_us=%.1f "
          "cpi=%.1f f_cpu_mhz=%d" % (est_us, est_us / 1000.0, e["native_us"], e["instr"], e["bound_us"], e["bound"],
                                     e["step_bytes"], e["loop_bytes"], PYTHON_CALLS, CALL_US, CPI_M0PLUS,
                                     F_CPU_HZ // 1_000_000))
    s = rp2040_estimate(split, str(cross))
    # emitted code only: the split's three calls also run the runtime's call path, which no code size shows
    print("mcu_control_step_layout_rp2040 inline_native_instr=%d split_native_instr=%d inline_native_us=%.1f "
          "split_native_us=%.1f inline_bytes=%d split_bytes=%d inline_wheel_bytes=%d split_wheel_bytes=%d "
          "split_calls=3 note=emitted_code_only" % (e["instr"], s["instr"], e["native_us"], s["native_us"],
                                                   e["step_bytes"], s["step_bytes"], e["loop_bytes"],
                                                   s["loop_bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
