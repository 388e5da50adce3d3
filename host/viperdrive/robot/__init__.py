# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The robot as its owner describes it, in the files users have: the robot file (viperdrive's YAML/TOML, or a
ros2_control / ROS 1 diff_drive_controller parameter file) and ROS parameter files as ROS reads them.

- config.py: RobotConfig (the robot file, validated: geometry, limits, port, ROS 2 settings)
- rosparams.py: ROS parameter files (YAML 1.2, node layouts and wildcards, typed getters)
- editing.py: writing calibrated values back into a robot file without losing what the user wrote
"""
from .config import RobotConfig

__all__ = ["RobotConfig"]
