# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""viperdrive host package: link, board lifecycle, kinematics, drive control, odometry, estimation, CLI.

SI units everywhere above Board; counts only below it (the wire protocol in viperdrive.shared).
"""
__version__ = "0.1.0"


def __getattr__(name):
    # `viperdrive.Board` without importing pyserial for users of the pure-math modules
    if name == "Board":
        from .board.board import Board
        return Board
    raise AttributeError(name)
