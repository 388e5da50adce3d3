# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""viperdrive host package: link, board lifecycle, kinematics, drive control, odometry, estimation, CLI.

SI units everywhere above Board; counts only below it (the wire protocol in viperdrive.shared). The rooms, lowest
layer first (docs/architecture.md):

- errors, stats, transforms, executables, timebase, ranges, extras, tomlread: what everything uses (exit codes,
  percentiles, quaternions and frames, finding installed tools, board time, the ranges of user-given numbers, the
  optional parts, TOML on every Python)
- boardtime/: a board's own time as the host reads it (real, or published by a board that is a program)
- messages/: ROS 2 messages as data; robot/: the robot file and users' files; deploy/: putting the firmware on a board
- board/: talking to a motor board; rigs/: boards that are programs; ports: what --port means, open_board()
- motion/: SI math above the board; tuning/: experiments and fits
- recording/: MCAP and plots; estimation/: robot_localization's EKF, live and offline
- cli/, ros2/, dashboard/, demo, __main__: what users run (the `viperdrive` command, the ROS 2 bridge, the browser
  page, `make demo`, `python -m viperdrive`)
"""
from .shared.version import VERSION

__version__ = VERSION      # one version, the firmware's too: shared/version.py


def __getattr__(name):
    # `viperdrive.Board` without importing pyserial for users of the pure-math modules
    if name == "Board":
        from .board.board import Board
        return Board
    raise AttributeError(name)
