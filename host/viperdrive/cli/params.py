# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive params list|get|set|save|diff FILE`: the board's parameter table (shared/params.py) over the link.

Values are checked against the table before the port is opened, so a typo costs nothing; the board checks again.
`diff FILE` compares the board with a file ({name: value} as JSON, YAML or TOML, or the --json output of
`params list` / `info`) and exits 1 when they differ, like diff(1)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from viperdrive.shared import params as PARAMS

from ..errors import BadValue
from ..robot.files import read_text
from .boardopen import open_board, param_guard
from .options import PARAM_NAMES, add_board_options, check_value, param_spec, parse_assignments
from .output import note, print_json, warn

HELP = "list, get, set, save the board's parameters; restore the saved ones; diff them against a file"


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("list", help="every parameter with value, unit, range and default")
    add_board_options(p, data_output=True)
    p = sub.add_parser("get", help="the value of the named parameters")
    p.add_argument("names", nargs="+", metavar="NAME")
    add_board_options(p, data_output=True)
    p = sub.add_parser("set", help="set parameters live (NAME=VALUE ...); --save also stores them on the board")
    p.add_argument("assignments", nargs="+", metavar="NAME=VALUE")
    p.add_argument("--save", action="store_true", help="store all parameters on the board afterwards")
    add_board_options(p, data_output=True)
    p = sub.add_parser("save", help="store the current parameters in the board's flash (survive a reset)")
    add_board_options(p)
    p = sub.add_parser("restore", help="put every live parameter back to the saved one (what a reset would load), "
                                       "e.g. after a killed tune left its test values live")
    add_board_options(p, data_output=True)
    p = sub.add_parser("diff", help="compare the board's parameters with FILE; exit 1 when they differ")
    p.add_argument("file", metavar="FILE")
    add_board_options(p, data_output=True)


def read_param_file(path: str) -> dict:
    """{name: value} from JSON/YAML/TOML; accepts {"params": {...}} too. BadValue for anything wrong."""
    p = Path(path)
    text = read_text(p, "parameter file")
    try:
        if p.suffix.lower() == ".toml":
            from .. import tomlread
            data = tomlread.loads(text)
        elif p.suffix.lower() in (".yaml", ".yml"):
            from ..robot.rosparams import parse_yaml
            data = parse_yaml(text, str(p)).data
        else:
            data = json.loads(text)
    except Exception as e:
        raise BadValue(f"parameter file {p} cannot be parsed: {' '.join(str(e).split())}") from None
    if isinstance(data, dict) and isinstance(data.get("params"), dict):
        data = data["params"]
    if not isinstance(data, dict):
        raise BadValue(f"parameter file {p} must map parameter names to values")
    out = {}
    for name, raw in data.items():
        try:
            out[name] = check_value(str(name), raw)
        except BadValue as e:
            raise BadValue(f"parameter file {p}: {e}") from None
    return out


def _fmt(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _same(a, b) -> bool:
    # the board stores float32: compare to float32 resolution
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def run(args) -> int:
    action = args.action
    if action == "get":
        for n in args.names:
            param_spec(n)
    elif action == "set":
        values = parse_assignments(args.assignments)
    elif action == "diff":
        wanted = read_param_file(args.file)
    with open_board(args) as board:
        if action == "list":
            values = {n: board.get_param(n) for n in PARAM_NAMES}
            if args.json:
                print_json({"params": values})
                return 0
            print(f"{'NAME':<19} {'VALUE':>10}  {'UNIT':<15} {'RANGE':<18} {'DEFAULT':>8}  MEANING")
            for p in PARAMS.TABLE:
                n = p[PARAMS.NAME]
                mark = " " if _same(values[n], p[PARAMS.DEFAULT]) else "*"
                rng = f"{_fmt(p[PARAMS.MIN])}..{_fmt(p[PARAMS.MAX])}"
                print(f"{n:<19}{mark}{_fmt(values[n]):>10}  {p[PARAMS.UNIT]:<15} {rng:<18} "
                      f"{_fmt(p[PARAMS.DEFAULT]):>8}  {p[PARAMS.HELP]}")
            return 0
        if action == "get":
            values = {n: board.get_param(n) for n in args.names}
            if args.json:
                print_json({"params": values})
            else:
                for n, v in values.items():
                    print(f"{n} = {_fmt(v)} {param_spec(n)[PARAMS.UNIT]}")
            return 0
        if action == "set":
            applied = {}
            # all of them (and the save) or none: interrupted half way, the values already set come back
            with param_guard(board, args) as guard:
                for n, v in values.items():
                    before = board.get_param(n)
                    applied[n] = guard.set(n, v, keep=True)
                    if not args.json:
                        print(f"{n}: {_fmt(before)} -> {_fmt(applied[n])} {param_spec(n)[PARAMS.UNIT]}")
                if args.save:
                    board.save_params()
            if args.save:
                note(args, "saved on the board")
            elif not args.json:
                note(args, "applied live; `viperdrive params save` keeps them across a reset")
            if args.json:
                print_json({"params": applied, "saved": bool(args.save)})
            return 0
        if action == "save":
            board.save_params()
            note(args, "parameters saved on the board")
            return 0
        if action == "restore":
            return _restore(args, board)
        if action == "diff":
            board_values = {n: board.get_param(n) for n in PARAM_NAMES}
            diffs = {n: {"board": board_values[n], "file": v} for n, v in wanted.items()
                     if not _same(board_values[n], v)}
            if args.json:
                print_json({"differences": diffs, "compared": len(wanted)})
            elif diffs:
                print(f"{'NAME':<19} {'BOARD':>10} {'FILE':>10}")
                for n, d in diffs.items():
                    print(f"{n:<19} {_fmt(d['board']):>10} {_fmt(d['file']):>10}")
            else:
                note(args, f"the board matches {args.file} ({len(wanted)} parameters compared)")
            return 1 if diffs else 0
    raise AssertionError(action)


def _restore(args, board) -> int:
    """LOAD_PARAMS, with what changed (each value before and after) and whether the board had saved values."""
    before = {n: board.get_param(n) for n in PARAM_NAMES}
    from_file = board.load_params()
    after = {n: board.get_param(n) for n in PARAM_NAMES}
    changed = {n: {"live": before[n], "restored": after[n]} for n in PARAM_NAMES if not _same(before[n], after[n])}
    flags = board.diag()["flag_names"]
    if args.json:
        print_json({"changed": changed, "from_file": from_file, "flags": flags})
        return 0
    for n, d in changed.items():
        print(f"{n}: {_fmt(d['live'])} -> {_fmt(d['restored'])} {param_spec(n)[PARAMS.UNIT]}")
    if not from_file:
        warn(args, "the board has no (complete) saved parameter file: defaults stood in (flag PARAMS_DEFAULTED); "
                   "`viperdrive params save` stores the values you want")
    note(args, f"restored the saved parameters ({len(changed)} changed)" if changed
         else "the live parameters were the saved ones already")
    return 0
