# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""mcu/fixedstep.py, generated from the template in tools/fixedstep/: the control step's repeated blocks written
once, and its mechanisms one file each.

    python tools/gen_fixedstep.py            # write mcu/fixedstep.py from the template
    python tools/gen_fixedstep.py --check    # exit 1, with a diff, if mcu/fixedstep.py is not the tool's output
    python tools/gen_fixedstep.py --stdout   # print the output
    python tools/gen_fixedstep.py --where N  # the template file and line that mcu/fixedstep.py's line N comes from

Why generated: the step runs every control period as one @micropython.viper function. A viper function calling
another viper function goes through MicroPython's generic call path (arguments boxed into objects, looked up by
name, checked, unboxed), which costs more than the block it would call (docs/firmware.md, "Control step: one
function, generated"). So the gain term (clamp + split multiply) is written out at each of its eight places, and
the ptr32 sign extension at each of its loads. Written out by this tool from one definition, not pasted: the
template says `tp = GAIN(err, K_P)`, the board runs the expansion. The output is plain MicroPython, exactly the
file that is deployed (no templating at run time); the template's comments are carried over unchanged.

Why one file per mechanism: the step is one function for speed, not for reading. tools/fixedstep/fixedstep.py.in
is the module's outline (the step's locals, its statistics, its per-wheel loop), and each mechanism is a file of
its own that the outline includes where it runs: layout (the fixed-point scaling and every array's layout),
requests, moves, intake (command intake and the deadman), setpoint (gain bank, joint acceleration limit), encoder
(count delta, speed, filter), pid, checks (plausibility, e-stop, faults, status), move_end_all, log. The output
marks where each block starts (`# >> tools/fixedstep/moves.py.in:5`) and where the outline resumes, so a line of
mcu/fixedstep.py (a traceback, a profile) leads back to the line to edit; --where N names it exactly.

Template syntax: the template is the module as it will read, with these macros (nothing else is rewritten):

  SX(p[i])                  expression: the signed value of the 32-bit word p[i] of a ptr32, which the unix
                            port's 64-bit ptr32 load zero-extends: `(int(p[i]) ^ sb) - sb` with the function's
                            local `sb` = -2**31 (a no-op on a 32-bit board). Parenthesized, except when it is the
                            whole right-hand side of an assignment.
  CLAMP(v, lim)             statement: `v` (a local name) clamped to +-lim (a name or an integer literal).
  out = GAIN(x0, K_X)       statement: one gain term of the bank word triple K_X (m, s, xl at k[kb + K_X ...]):
                            x = x0, clamped to +-xl, then out = floor(x * m / 2**s) from x's 15-bit halves.
                            Uses (and overwrites) the locals x, m, sh, xl; needs k and kb.
  out = GAIN(x, K_X)        ... the input is already in x: no copy.
  out = GAIN(x0, K_X, md)   ... the multiplier is already loaded in the local md: no load, md is used.
  END_MOVE(o, why)          statement: the move in queue slot o (the slot's offset in st) ends with reason why:
                            recorded in the ends ring (MOVE_STATE), its slot freed. Uses the local ne.

  #@include NAME.py.in      a line of its own: the file NAME.py.in beside the outline written in here, each of its
                            lines indented as the directive is (the file itself is written at indentation 0).

A statement macro stands alone on its line (a trailing comment goes onto the first line of its expansion).
A `#` starts a line's comment, where nothing is expanded (the template has no `#` inside a string).
Lines starting with `#@` are comments of the template only and are dropped.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tools" / "fixedstep" / "fixedstep.py.in"
OUTPUT = ROOT / "mcu" / "fixedstep.py"

HEADER = """\
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# GENERATED FILE, do not edit: made by tools/gen_fixedstep.py from tools/fixedstep/*.py.in (edit the template,
# then run `python tools/gen_fixedstep.py`; tests/test_gen_fixedstep.py fails while this file and the tool's
# output differ; a `# >> FILE:LINE` line says where the lines after it come from). The template's SX / CLAMP /
# GAIN macros are written out here, one copy per use, because a viper-to-viper call costs more than the block
# (docs/firmware.md, "Control step: one function, generated").
"""

MACROS = ("SX", "CLAMP", "GAIN", "END_MOVE")
NAME = re.compile(r"[A-Za-z_]\w*")
KWORD = re.compile(r"K_[A-Z0-9_]+")
LIMIT = re.compile(r"[A-Za-z_]\w*|\d+")
STATEMENT = re.compile(r"(?P<ind>[ ]*)(?:(?P<out>[A-Za-z_]\w*) = )?(?P<name>CLAMP|GAIN|END_MOVE)\(")
# the left side of an assignment whose whole right-hand side SX is: `v = `, `st[b + W_X] = `, `ig += `
ASSIGN_TARGET = re.compile(r"[ ]*[A-Za-z_][\w\[\] +]*? (?:[-+|&^]|<<|>>)?= ")


INCLUDE = re.compile(r"(?P<ind>[ ]*)#@include (?P<name>[A-Za-z0-9_]+\.py\.in)[ ]*")
MARKER = "# >> "


class TemplateError(ValueError):
    """A malformed macro use or include; the message names the template line, `path` the file (None: the text given
    to generate())."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


def _where(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def template_lines(text: str, path: Path, ind: str = "", within: tuple[Path, ...] = ()) -> list[tuple[str, Path, int]]:
    """The template's lines with every #@include written in, each with the file and line it comes from; a block's
    start and the outline's resumption carry a marker line (`# >> FILE:LINE`) naming where the lines after it come
    from. `#@` lines are dropped here."""
    out: list[tuple[str, Path, int]] = []
    resume = False      # a marker is owed before the outline's next line of text
    for lineno, line in enumerate(text.splitlines(), 1):
        inc = INCLUDE.fullmatch(line)
        if inc is not None:
            sub = path.parent / inc["name"]
            if sub in within or sub == path:
                raise TemplateError(f"line {lineno}: #@include {inc['name']} includes itself", path)
            try:
                sub_text = sub.read_text()
            except OSError as e:
                raise TemplateError(f"line {lineno}: #@include {inc['name']}: {e.strerror}", path) from None
            block = template_lines(sub_text, sub, ind + inc["ind"], within + (path,))
            first = next((n for _, p, n in block if p == sub), 1)
            out.append((f"{ind}{inc['ind']}{MARKER}{_where(sub)}:{first}", sub, first))
            out += block
            resume = True
            continue
        if line.lstrip().startswith("#@"):
            continue
        if resume and line.strip():
            lead = line[:len(line) - len(line.lstrip())]      # the marker stands where the outline resumes
            out.append((f"{ind}{lead}{MARKER}{_where(path)}:{lineno}", path, lineno))
            resume = False
        out.append((f"{ind}{line}" if line.strip() else "", path, lineno))
    return out


def template_text() -> str:
    """Every template file's text, the outline first and each included file once, in the order they are included
    (what the tests count macros and comments in)."""
    seen: list[Path] = []

    def walk(p: Path) -> None:
        seen.append(p)
        for m in INCLUDE.finditer(p.read_text()):
            walk(p.parent / m["name"])
    walk(TEMPLATE)
    return "".join(p.read_text() for p in seen)


def _close(text: str, start: int, lineno: int) -> int:
    """Index of the parenthesis closing the one opened just before text[start]."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    raise TemplateError(f"line {lineno}: unbalanced parentheses in {text.strip()!r}")


def _split_args(text: str, lineno: int) -> list[str]:
    """Top-level comma-separated arguments, stripped."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    args.append(cur.strip())
    if any(not a for a in args):
        raise TemplateError(f"line {lineno}: empty macro argument in ({text})")
    return args


def expand_sx(line: str, lineno: int) -> str:
    """Every SX(e) in the code of one line written out (a comment is left as it is)."""
    code, hash_, comment = line.partition("#")
    return _expand_sx(code, lineno) + hash_ + comment


def _expand_sx(line: str, lineno: int) -> str:
    out = ""
    rest = line
    while True:
        m = re.search(r"\bSX\(", rest)
        if m is None:
            return out + rest
        end = _close(rest, m.end(), lineno)
        arg = rest[m.end():end]
        if not arg.strip():
            raise TemplateError(f"line {lineno}: SX() needs the ptr32 item to load")
        arg = _expand_sx(arg, lineno)
        before = out + rest[:m.start()]
        after = rest[end + 1:]
        whole_rhs = ASSIGN_TARGET.fullmatch(before) is not None and re.fullmatch(r"\s*(#.*)?", after) is not None
        core = f"(int({arg}) ^ sb) - sb"
        out = before + (core if whole_rhs else f"({core})")
        rest = after


def _clamp(ind: str, v: str, lim: str) -> list[str]:
    return [f"{ind}if {v} > {lim}:", f"{ind}    {v} = {lim}", f"{ind}elif {v} < -{lim}:", f"{ind}    {v} = -{lim}"]


def _gain(ind: str, out: str, x0: str, kw: str, m: str | None) -> list[str]:
    lines = [] if x0 == "x" else [f"{ind}x = {x0}"]
    if m is None:
        m = "m"
        lines.append(f"{ind}m = int(k[kb + {kw}])")
    lines += [f"{ind}sh = int(k[kb + {kw} + 1])", f"{ind}xl = int(k[kb + {kw} + 2])"]
    lines += _clamp(ind, "x", "xl")
    lines += [f"{ind}if sh >= 15:",
              f"{ind}    {out} = (((x >> 15) * {m}) + (((x & 0x7FFF) * {m}) >> 15)) >> (sh - 15)",
              f"{ind}else:",
              f"{ind}    {out} = (((x >> 15) * {m}) << (15 - sh)) + (((x & 0x7FFF) * {m}) >> sh)"]
    return lines


def _end_move(ind: str, o: str, why: str) -> list[str]:
    """The move in slot o ends with reason why: its (id, why) appended to the ends ring, the count written last
    (what MOVE_STATE reports), the slot freed."""
    return [f"{ind}ne = int(st[M_NENDS])",
            f"{ind}st[M_ENDS + (ne & 3) * 2] = st[{o} + S_ID]",
            f"{ind}st[M_ENDS + (ne & 3) * 2 + 1] = {why}",
            f"{ind}st[M_NENDS] = (ne + 1) & TMASK",
            f"{ind}st[{o} + S_ST] = 0"]


def expand_statement(line: str, lineno: int) -> list[str] | None:
    """The lines a CLAMP / GAIN statement stands for, or None if the line is not one."""
    st = STATEMENT.match(line)
    if st is None:
        return None
    end = _close(line, st.end(), lineno)
    tail = line[end + 1:]
    if not re.fullmatch(r"(\s*#.*)?", tail):
        raise TemplateError(f"line {lineno}: {st['name']}(...) is a statement: nothing may follow it but a comment")
    args = _split_args(line[st.end():end], lineno)
    ind, out, name = st["ind"], st["out"], st["name"]
    if name == "CLAMP":
        if out is not None:
            raise TemplateError(f"line {lineno}: CLAMP(v, lim) clamps v in place and has no value")
        if len(args) != 2 or not NAME.fullmatch(args[0]) or not LIMIT.fullmatch(args[1]):
            raise TemplateError(f"line {lineno}: CLAMP takes (local name, limit name or literal), got {args}")
        lines = _clamp(ind, args[0], args[1])
    elif name == "END_MOVE":
        if out is not None or len(args) != 2 or not NAME.fullmatch(args[0]) or not NAME.fullmatch(args[1]):
            raise TemplateError(f"line {lineno}: END_MOVE takes (slot offset local, reason local or const), got "
                                f"{args}")
        lines = _end_move(ind, args[0], args[1])
    else:
        if out is None:
            raise TemplateError(f"line {lineno}: GAIN is used as `out = GAIN(x0, K_X[, m])`")
        if len(args) not in (2, 3) or not KWORD.fullmatch(args[1]) or (len(args) == 3 and not NAME.fullmatch(args[2])):
            raise TemplateError(f"line {lineno}: GAIN takes (input, K_ bank word[, multiplier local]), got {args}")
        if out in ("x", "m", "sh", "xl"):
            raise TemplateError(f"line {lineno}: GAIN's result cannot go to its scratch local {out!r}")
        lines = _gain(ind, out, args[0], args[1], args[2] if len(args) == 3 else None)
    if tail:
        lines[0] += tail
    return lines


def generate_with_origins(template: str, path: Path | None = None) -> tuple[str, list[tuple[Path, int] | None]]:
    """(mcu/fixedstep.py's text, for each of its lines the template file and line it comes from; None: the tool's
    header). `template`: the outline's text, read as the file `path` (default TEMPLATE: its includes are found
    beside it)."""
    where = path if path is not None else TEMPLATE
    out = HEADER.rstrip("\n").splitlines()
    origins: list[tuple[Path, int] | None] = [None] * len(out)
    for line, src, lineno in template_lines(template, where):
        try:
            expanded = expand_statement(line, lineno)
            for piece in expanded if expanded is not None else [line]:
                piece = expand_sx(piece, lineno)
                left = re.search(r"\b(%s)\(" % "|".join(MACROS), piece.split("#", 1)[0])
                if left:
                    raise TemplateError(f"line {lineno}: {left[1]}(...) is a statement macro and stands on its own "
                                        f"line")
                out.append(piece)
                origins.append((src, lineno))
        except TemplateError as e:
            if e.path is None and (path is not None or src != where):
                e.path = src
            raise
    return "\n".join(out) + "\n", origins


def generate(template: str, path: Path | None = None) -> str:
    """mcu/fixedstep.py's text for the template's text (see generate_with_origins)."""
    return generate_with_origins(template, path)[0]


def _shown(path: Path) -> str:
    """path as a reader runs it: relative to the repo when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if mcu/fixedstep.py differs from the output")
    mode.add_argument("--stdout", action="store_true", help="print the output instead of writing it")
    mode.add_argument("--where", type=int, metavar="N", help="the template file and line of mcu/fixedstep.py's line N")
    a = ap.parse_args(argv)
    try:
        text, origins = generate_with_origins(TEMPLATE.read_text(), TEMPLATE)
    except TemplateError as e:
        print(f"{_shown(e.path or TEMPLATE)}: {e}", file=sys.stderr)
        return 2
    if a.where is not None:
        if not 1 <= a.where <= len(origins):
            print(f"{_shown(OUTPUT)} has lines 1..{len(origins)}, not {a.where}", file=sys.stderr)
            return 2
        origin = origins[a.where - 1]
        print(f"{_shown(OUTPUT)}:{a.where}: " + (f"{_shown(origin[0])}:{origin[1]}" if origin is not None
                                                  else "the tool's header (tools/gen_fixedstep.py, HEADER)"))
        return 0
    if a.stdout:
        sys.stdout.write(text)
        return 0
    rel = _shown(OUTPUT)
    if a.check:
        have = OUTPUT.read_text() if OUTPUT.exists() else ""
        if have == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), text.splitlines(True),
                                                   f"{rel} (checked in)", f"{rel} (generated)"))
        print(f"{rel} is not what tools/gen_fixedstep.py makes of the template: run python tools/gen_fixedstep.py",
              file=sys.stderr)
        return 1
    OUTPUT.write_text(text)
    print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
