# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The control step split into functions, made from mcu/fixedstep.py for bench_mcu_control.py to measure against the
one-function step it ships (docs/firmware.md, "Control step: one function, generated").

    split_source(text of mcu/fixedstep.py) -> text of a module `fixedstep_split` with the same names, where
      step() calls _stats(st, k, io) once (the loop statistics) and _wheel(...) once per wheel (the per-wheel loop
      body, moved verbatim), and the rest of step is unchanged.

The per-wheel function gets what the loop body reads from the step as arguments (the wheel, the bank offset, the
enabled and bumpless flags, the fault so far) and reloads the constants it reads from k itself (sb, hz, mask,
half: what the one-function step loads once per period, the split loads once per wheel; that is part of its
cost). It returns fault | saturated << 4. The bench checks that both layouts compute the same words, period by
period, before it times them (what the loop body leaves to the step after it, fault and sat_any, is returned);
the builder refuses a step whose loop body reads anything else from the step.
"""
from __future__ import annotations

import ast
import textwrap

PER_WHEEL_ARGS = ("w", "kb", "enabled", "bump", "fault")        # ints the loop body reads from the step
RELOADED = {"sb": "K_SB", "hz": "K_HZ", "mask": "K_MASK", "half": "K_HALF"}
PTRS = ("st", "k", "c", "e")


def _stmt_text(lines: list[str], stmts: list[ast.stmt]) -> str:
    first = stmts[0].lineno
    # comments directly above the first statement belong to it
    while first > 1 and lines[first - 2].strip().startswith("#"):
        first -= 1
    return "".join(lines[first - 1:stmts[-1].end_lineno])


def _names(stmts: list[ast.stmt], ctx: type) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def split_source(src: str) -> str:
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    step = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "step")
    body = step.body
    # the loop statistics: from the first read of io[IO_T0] through the G_TICKS update
    i0 = next(i for i, s in enumerate(body) if ast.unparse(s) == "t0 = int(io[IO_T0])")
    i1 = next(i for i, s in enumerate(body) if ast.unparse(s).startswith("st[G_TICKS] = "))
    stats = body[i0:i1 + 1]
    if _names(body[i1 + 1:], ast.Load) & (_names(stats, ast.Store) - {"st", "k", "io"}):
        raise ValueError("the step reads a local of its statistics block after it: cannot split there")
    # the wheel loop and the constants only it reads
    il = next(i for i, s in enumerate(body) if isinstance(s, ast.While) and ast.unparse(s.test) == "w < 2")
    loop = body[il]
    if ast.unparse(loop.body[-1]) != "w += 1":
        raise ValueError("the wheel loop does not end with w += 1")
    wheel = loop.body[:-1]
    consts = [i for i, s in enumerate(body[:il])
              if isinstance(s, ast.Assign) and len(s.targets) == 1
              and getattr(s.targets[0], "id", None) in ("hz", "mask", "half")]
    free = _names(wheel, ast.Load) - _names(wheel, ast.Store)
    allowed = set(PER_WHEEL_ARGS) | set(RELOADED) | set(PTRS) | {"int"}
    consts_used = {n.id for s in wheel for n in ast.walk(s) if isinstance(n, ast.Name) and n.id.isupper()}
    free -= consts_used
    if free - allowed:
        raise ValueError(f"the wheel loop reads {sorted(free - allowed)} from the step: extend PER_WHEEL_ARGS")
    ind = " " * wheel[0].col_offset
    stats_fn = ("@micropython.viper\n"
                "def _stats(st_a, k_a, io_a):\n"
                '    """The loop statistics of step() (split layout, for the bench)."""\n'
                "    st = ptr32(st_a)\n    k = ptr32(k_a)\n    io = ptr32(io_a)\n"
                + textwrap.indent(textwrap.dedent(_stmt_text(lines, stats)), "    ") + "\n\n")
    args = ", ".join(f"{a}: int" for a in PER_WHEEL_ARGS)
    wheel_fn = ("@micropython.viper\n"
                f"def _wheel(st_a, k_a, c_a, e_a, {args}) -> int:\n"
                '    """One wheel of step() (split layout, for the bench): -> fault | saturated << 4."""\n'
                + "".join(f"    {p} = ptr32({p}_a)\n" for p in PTRS)
                + "".join(f"    {n} = int(k[{kk}])\n" for n, kk in RELOADED.items())
                + "    sat_any = 0\n"
                + textwrap.indent(textwrap.dedent(_stmt_text(lines, wheel)), "    ")
                + "    return fault | (sat_any << 4)\n\n\n")
    call = (f"{ind}r = int(_wheel(st_a, k_a, c_a, e_a, {', '.join(PER_WHEEL_ARGS)}))\n"
            f"{ind}fault = r & 15\n"
            f"{ind}if r & 16:\n"
            f"{ind}    sat_any = 1\n")
    # step rewritten: the statistics and the loop body replaced by the calls, the constants only the loop read
    # dropped (the wheel function loads its own)
    out = list(lines)
    edits = [(wheel[0].lineno, wheel[-1].end_lineno, call),
             (stats[0].lineno, stats[-1].end_lineno, " " * stats[0].col_offset + "_stats(st_a, k_a, io_a)\n")]
    edits += [(body[i].lineno, body[i].end_lineno, "") for i in consts]
    for first, last, text in sorted(edits, reverse=True):
        while first > 1 and out[first - 2].strip().startswith("#"):
            first -= 1
        out[first - 1:last] = [text]
    start = step.decorator_list[0].lineno - 1
    text = "".join(out[:start]) + stats_fn + wheel_fn + "".join(out[start:])
    # the step's own views of the arrays only the wheel function reads now are dropped
    new_step = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "step")
    unused = [s for s in new_step.body if isinstance(s, ast.Assign) and ast.unparse(s.value) in ("ptr32(c_a)",
              "ptr32(e_a)") and s.targets[0].id not in _names(new_step.body, ast.Load)]
    out = text.splitlines(keepends=True)
    for s in sorted(unused, key=lambda s: -s.lineno):
        del out[s.lineno - 1]
    return "".join(out)
