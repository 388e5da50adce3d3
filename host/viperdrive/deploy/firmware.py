# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Where the firmware's files are on this computer: the folder holding mcu/ (the board's package, its board
configs) and sim/ (the virtual board that runs the same files on the MicroPython unix port). A checkout has them at
its root; an installed wheel ships them in viperdrive/firmware/ (pyproject.toml); VIPERDRIVE_ROOT overrides both.

`flash` copies from here, `viperdrive boards` lists the configs here, and the rigs start the virtual board from here:
one answer for all three.
"""
import os
from pathlib import Path

from ..errors import UserError


class FirmwareNotFound(UserError):
    """Neither a checkout nor the installed package holds mcu/ and sim/vboard.py."""


def firmware_root() -> Path:
    """The folder holding mcu/ and sim/: VIPERDRIVE_ROOT, else viperdrive/firmware/ of an installed wheel, else the
    checkout this package runs from. FirmwareNotFound when none holds both."""
    env = os.environ.get("VIPERDRIVE_ROOT")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve()
    candidates += [here.parents[1] / "firmware", *here.parents]
    for c in candidates:
        if (c / "sim" / "vboard.py").is_file() and (c / "mcu").is_dir():
            return c
    raise FirmwareNotFound("cannot find the firmware and the virtual board (mcu/ and sim/vboard.py): reinstall "
                           "viperdrive, run from a viperdrive checkout, or set VIPERDRIVE_ROOT to one")
