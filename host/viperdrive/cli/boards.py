# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive boards`: the board configs the package ships, without a checkout.

    viperdrive boards                 each shipped config: name, backend, chip, link, what has been proven of it
    viperdrive boards show NAME       the config as shipped, on stdout (> my_board.json, then edit the pins)
    viperdrive boards check FILE      the firmware's own validator (what the board applies at boot) on this host:
                                      exit 0 and a summary, or exit 7 naming the key and the problem
"""
from __future__ import annotations

import argparse
import sys

HELP = "list the shipped board configs and their proof level, write one out to start from, check a board.json"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="the list as JSON on stdout")
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    p = sub.add_parser("show", help="print a shipped config (as its file holds it) on stdout")
    p.add_argument("name", metavar="NAME")
    p = sub.add_parser("check", help="validate a board config with the firmware's own rules (exit 7 when bad)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="the validated config as JSON on stdout")


def run(args) -> int:
    from ..deploy import catalog
    if args.action == "show":
        sys.stdout.write(catalog.config_text(args.name))
        return 0
    if args.action == "check":
        return _check(args)
    rows = catalog.shipped()
    if args.json:
        from .output import print_json
        print_json({"boards": rows, "proof_levels": list(catalog.PROOF_LEVELS)})
        return 0
    w = max(len(r["name"]) for r in rows)
    print(f"{'NAME':<{w}}  {'BACKEND':<13}  {'MCU':<10}  {'LINK':<4}  PROOF")
    for r in rows:
        print(f"{r['name']:<{w}}  {r['backend']:<13}  {r['mcu'].split(' ')[0]:<10}  {r['link']:<4}  "
              f"{r['proof']}: {r['how']}")
    print("\nemulated: runs on an emulated chip in CI; backend emulated: its backend does, with another config; "
          "compiled: compiles for its CPU and is unit-tested on the unix port, never run on the chip.\n"
          "Start your own: viperdrive boards show pico > my_board.json; viperdrive boards check my_board.json")
    return 0


def _check(args) -> int:
    from ..deploy import flashing
    path, cfg = flashing.load_board_config(args.file)
    if getattr(args, "json", False):
        from .output import print_json
        print_json({"file": str(path), "config": cfg})
        return 0
    pins = cfg.get("pins") or {}
    sides = "; ".join(f"{side} " + ", ".join(f"{role} {pin}" for role, pin in (pins.get(side) or {}).items())
                      for side in ("left", "right"))
    print(f"{path}: valid for the {cfg.get('backend')} backend ({cfg.get('name')}, {cfg.get('control_hz')} Hz, "
          f"{cfg.get('counts_per_rev')} counts per wheel revolution; pins {sides})")
    return 0
