# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 QoS profiles as Cyclone DDS QoS, so ROS 2 readers and writers match ours.

rclcpp's defaults (rmw_qos_profile_default): RELIABLE, VOLATILE, KEEP_LAST 10. tf2_ros uses KEEP_LAST 100 for
/tf (DynamicBroadcasterQoS) and TRANSIENT_LOCAL KEEP_LAST 1 for /tf_static (StaticBroadcasterQoS). The data
representation is pinned to XCDR1 (what rmw_cyclonedds_cpp writes and expects).

QoS compatibility (request/offer): a RELIABLE reader does not match a BEST_EFFORT writer, a TRANSIENT_LOCAL
reader does not match a VOLATILE writer. Everything we publish is RELIABLE, so both reliable and best-effort
readers (RViz, rosbag, Nav2) match. cmd_vel is read BEST_EFFORT (`command_qos()`), deliberately not the
reliable default: a best-effort reader matches publishers of either kind (teleop tools differ), and
retransmitting a lost velocity command is pointless because the next one, 20-100 ms later, supersedes it.
"""
from cyclonedds.core import Policy, Qos
from cyclonedds.util import duration

DEFAULT_DEPTH = 10          # rmw_qos_profile_default
TF_DEPTH = 100              # tf2_ros::DynamicBroadcasterQoS
TF_STATIC_DEPTH = 1         # tf2_ros::StaticBroadcasterQoS

# A reliable writer blocks in write() while its unacknowledged backlog is over the high-water mark (a stuck
# reader). The bridge writes from its board loop: block for at most this long, then drop the sample and count
# it, rather than starving the wheels of commands (the board's deadman is ~100 ms).
WRITE_MAX_BLOCKING_S = 0.005

_XCDR1 = Policy.DataRepresentation(use_cdrv0_representation=True)


def _reliable():
    return Policy.Reliability.Reliable(max_blocking_time=duration(seconds=WRITE_MAX_BLOCKING_S))


def default_qos(depth: int = DEFAULT_DEPTH) -> Qos:
    """rmw_qos_profile_default: RELIABLE, VOLATILE, KEEP_LAST depth."""
    return Qos(_reliable(), Policy.Durability.Volatile, Policy.History.KeepLast(depth), _XCDR1)


def tf_qos() -> Qos:
    """/tf: RELIABLE, VOLATILE, KEEP_LAST 100."""
    return default_qos(TF_DEPTH)


def tf_static_qos() -> Qos:
    """/tf_static: RELIABLE, TRANSIENT_LOCAL, KEEP_LAST 1 (late joiners get the latched transforms)."""
    return Qos(_reliable(), Policy.Durability.TransientLocal, Policy.History.KeepLast(TF_STATIC_DEPTH), _XCDR1)


SENSOR_DEPTH = 5            # rclcpp::SensorDataQoS's depth


def clock_qos() -> Qos:
    """/clock: RELIABLE, VOLATILE, KEEP_LAST 1 (only the newest time matters; a RELIABLE writer also matches the
    BEST_EFFORT reader of rclcpp's ClockQoS)."""
    return default_qos(1)


def sensor_qos() -> Qos:
    """imu/data_raw and battery_state: RELIABLE, VOLATILE, KEEP_LAST 5.

    SensorDataQoS's depth, but RELIABLE: many IMU drivers publish BEST_EFFORT (SensorDataQoS), and a RELIABLE
    subscriber (rclcpp's default QoS, which several estimators use for their IMU input) then matches nothing and
    receives nothing. A RELIABLE writer matches readers of both kinds; its cost, a write blocked by a stuck reader,
    is bounded like every other writer of the bridge (WRITE_MAX_BLOCKING_S, then dropped and counted).
    """
    return Qos(_reliable(), Policy.Durability.Volatile, Policy.History.KeepLast(SENSOR_DEPTH), _XCDR1)


def command_qos(depth: int = DEFAULT_DEPTH) -> Qos:
    """Reader QoS for cmd_vel: BEST_EFFORT, VOLATILE, KEEP_LAST depth.

    A BEST_EFFORT reader matches RELIABLE and BEST_EFFORT publishers alike (the request/offer rule), so teleop
    tools with either setting drive the robot. Only the newest command matters, and a late one is stale anyway.
    """
    return Qos(Policy.Reliability.BestEffort, Policy.Durability.Volatile, Policy.History.KeepLast(depth), _XCDR1)
