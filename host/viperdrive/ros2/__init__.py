"""ROS 2 on the wire without a ROS installation: the host is a native DDS participant (Cyclone DDS).

msgs     ROS 2 message types as IDL structs (`<pkg>::msg::dds_::<Type>_`, final, XCDR1)
qos      ROS 2 QoS profiles (default, tf, tf_static)
node     participant setup: domain id, discovery range (localhost / subnet / off), `rt/` topic names, USER_DATA
bridge   the robot-base node: cmd_vel in; odom, joint_states, tf, diagnostics out (docs/ros2.md)
"""
