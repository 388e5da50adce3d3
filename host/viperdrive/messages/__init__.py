# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 messages as data, shared by the MCAP recordings and the ROS 2 bridge (no DDS here):

- definitions.py: the .msg definitions and type names of every message viperdrive writes (MCAP ros2msg schemas)
- sensors.py: the board's sensor readings as sensor_msgs/Imu, sensor_msgs/BatteryState and diagnostics fields
"""
