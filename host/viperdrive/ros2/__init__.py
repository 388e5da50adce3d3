# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 on the wire without a ROS installation: the host is a native DDS participant (Cyclone DDS).

msgs      ROS 2 message types as IDL structs (`<pkg>::msg::dds_::<Type>_`, final, XCDR1); rmw_dds_common graph types
qos       ROS 2 QoS profiles (default, tf, tf_static, the cmd_vel reader)
node      participant setup: domain id, discovery range (localhost / subnet / off), `rt/` topic names, enclave
          USER_DATA, ros_discovery_info (the node name)
typehash  REP-2011 RIHS01 type hashes (endpoint USER_DATA, as Iron and later)
bridge    the robot-base node: its loop, start, board outages and shutdown (docs/ros2.md)
options   BridgeOptions: how a bridge is run (graph, commands, filter, recording, recovery, thread)
cmdvel    its cmd_vel input: the reader, stale and out-of-order stamps refused, the allowed publishers, who may drive
topics    what it publishes: odom, joint_states, tf, imu, battery, /diagnostics, /clock (frames, covariances, counts)
boardsensors  the board's sensor stream into imu/data_raw and battery_state
diagnostics   the /diagnostics it publishes: board, sensors, loop, cmd_vel, filter, the shutdown's account
clearfault    ~/clear_fault, the graph's one way to clear a latched fault (a person's decision)
filterlink    the live EKF inside it (--ekf): its inputs, odometry/filtered, the tf it may own, its thread
cdr       struct-built CDR for the messages the bridge publishes every cycle (the serializer's own bytes)
"""
