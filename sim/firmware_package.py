# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The firmware as a board holds it, on the MicroPython unix port: the package `viperdrive` (on a board
# lib/viperdrive/, here the checkout's mcu/) with the protocol as its subpackage `viperdrive.shared` (on a board
# lib/viperdrive/shared/, here shared/). The firmware's modules import each other relatively (`from . import
# control`, `from .shared import protocol`), so the same files run unchanged in both places.
#
# The unix port has no os.symlink to lay the two folders out as one, so each package is a module object whose
# __path__ names its folder (MicroPython looks a package's submodules up in its __path__): made from an empty
# module file (package_stub.py), renamed, and registered in sys.modules. The virtual board (vboard.py), the
# MicroPython test runner (tests/mp_runner.py) and the MicroPython benchmarks call mount(ROOT) first.
import sys


def _package(name, path):
    sys.modules.pop("package_stub", None)
    stub = __import__("package_stub")
    sys.modules.pop("package_stub", None)
    stub.__path__ = path
    stub.__name__ = name
    sys.modules[name] = stub
    return stub


def mount(root):
    """Make `viperdrive` (root/mcu) and `viperdrive.shared` (root/shared) importable; idempotent."""
    if "viperdrive" not in sys.modules:
        _package("viperdrive", root + "/mcu")
    if "viperdrive.shared" not in sys.modules:
        _package("viperdrive.shared", root + "/shared")
