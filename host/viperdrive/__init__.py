# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""viperdrive host package: link, board lifecycle, kinematics, drive control, odometry, estimation, CLI.

SI units everywhere above Board; counts only below it (the wire protocol in viperdrive.shared).
"""
from .shared.version import VERSION

__version__ = VERSION      # one version, the firmware's too: shared/version.py


def __getattr__(name):
    # `viperdrive.Board` without importing pyserial for users of the pure-math modules
    if name == "Board":
        from .board.board import Board
        return Board
    raise AttributeError(name)
