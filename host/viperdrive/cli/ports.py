# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive ports`: the serial ports, with USB vendor/product and a guess of the board type."""
from __future__ import annotations

import argparse

from ..errors import PortError
from ..ports import choose_auto, list_serial_ports
from .options import add_output_options
from .output import print_json

HELP = "list serial ports with USB vendor/product and a guess of the board on each"


def register(parser: argparse.ArgumentParser) -> None:
    add_output_options(parser, data_output=True)
    parser.add_argument("--all", action="store_true",
                        help="also list ports that do not look like a board (built-in UARTs, unknown USB devices)")


def run(args) -> int:
    ports = list_serial_ports()
    try:
        auto = choose_auto(ports).device
    except PortError:
        auto = None
    shown = ports if args.all else [p for p in ports if p.vid is not None]
    if args.json:
        print_json({"ports": [dict(p.to_dict(), auto=(p.device == auto)) for p in shown], "auto": auto,
                    "hidden": len(ports) - len(shown)})
        return 0
    if not shown:
        if not args.quiet:
            extra = f" ({len(ports)} non-USB ports hidden; --all lists them)" if ports else ""
            print(f"no USB serial ports found{extra}. Plug the board in (a data cable, not a charge-only one); "
                  f"`dmesg | tail` shows what the kernel saw. Without a board: --port sim")
        return 0
    w = max(len(p.device) for p in shown)
    print(f"{'PORT':<{w}}  {'USB ID':<9}  {'VENDOR / PRODUCT':<40}  GUESS")
    for p in shown:
        vp = " / ".join(x for x in (p.vendor or p.manufacturer, p.product) if x) or p.description
        mark = "  <- auto" if p.device == auto else ""
        print(f"{p.device:<{w}}  {p.usb_id or '-':<9}  {vp[:40]:<40}  {p.guess}{mark}")
    if not args.quiet and auto is None:
        print("(--port auto needs exactly one device that looks like a MicroPython board: name the port instead)")
    return 0
