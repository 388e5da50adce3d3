# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What the bridge publishes, in the frames and with the covariances the robot file names:

  odom          nav_msgs/Odometry (pose + twist with the odometry's propagated covariances)
  joint_states  sensor_msgs/JointState (wheel positions rad, velocities rad/s)
  /tf           tf2_msgs/TFMessage (odom -> base_link), when enable_odom_tf
  /diagnostics  diagnostic_msgs/DiagnosticArray (viperdrive.ros2.diagnostics)
  imu/data_raw  sensor_msgs/Imu, every SENSORS_DATA record while the IMU works (ros2.sensor_rate, 50 Hz)
  battery_state sensor_msgs/BatteryState, every SENSORS_DATA record when the board has a battery input
  /clock        rosgraph_msgs/Clock, on sim time

One DDS writer per topic,
written through the struct-built CDR (viperdrive.ros2.cdr); a write that fails (a reader stuck with our reliable
backlog) is dropped and counted, never raised into the loop.

The bridge decides what to publish and when (its loop, its outage state); this room only builds the messages and
counts what went out.
"""
from collections.abc import Callable
from typing import Any

from ..messages.sensors import IMU_NOISE, battery_msg, imu_msg
from . import cdr, msgs, qos
from .node import RosNode

LEFT_JOINT = "left_wheel_joint"     # diff_drive_controller's usual names; robot_state_publisher uses them
RIGHT_JOINT = "right_wheel_joint"


def frame_with_prefix(prefix: str, frame: str) -> str:
    """diff_drive_controller's tf_frame_prefix: 'robot1' + 'odom' -> 'robot1/odom'; '' leaves the frame as is."""
    p = prefix.strip("/")
    return f"{p}/{frame}" if p else frame


def covariance(values, diagonal_override) -> list:
    """36 floats row-major: the propagated 6x6's 36 values, or diff_drive_controller's fixed diagonal when
    configured."""
    if diagonal_override is not None:
        out = [0.0] * 36
        for i, v in enumerate(diagonal_override):
            out[i * 7] = float(v)
        return out
    flat = [float(v) for v in values]
    if len(flat) != 36:
        raise ValueError(f"covariance must be 36 values (6x6 row-major), got {len(flat)}")
    return flat


class BridgeTopics:
    """The bridge's writers. node: its RosNode; ros: the robot file's ros2 settings (viperdrive.robot.config
    Ros2Settings); sensors: the sensor topics exist (ros2.sensor_rate > 0); sim_clock: /clock is published;
    warn(key, text): the bridge's rate-limited warning. The tf writer is made by add_tf(), once the bridge knows
    whether the raw odometry or the live filter owns odom -> base_link."""

    def __init__(self, node: RosNode, ros, sensors: bool, sim_clock: bool, warn: Callable[[str, str], object]):
        self._warn = warn
        self.odom_frame = frame_with_prefix(ros.tf_frame_prefix, ros.odom_frame_id)
        self.base_frame = frame_with_prefix(ros.tf_frame_prefix, ros.base_frame_id)
        self.imu_frame = frame_with_prefix(ros.tf_frame_prefix, ros.imu_frame_id)
        self.imu_noise = IMU_NOISE[ros.imu_part]
        self.pose_cov_override = ros.pose_covariance_diagonal
        self.twist_cov_override = ros.twist_covariance_diagonal
        self.published = {"odom": 0, "joint_states": 0, "tf": 0, "diagnostics": 0, "imu": 0, "battery_state": 0}
        self.dropped_writes = 0
        self.odom = node.publisher("odom", msgs.Odometry, qos.default_qos())
        self.joints = node.publisher("joint_states", msgs.JointState, qos.default_qos())
        self.diag = node.publisher("/diagnostics", msgs.DiagnosticArray, qos.default_qos())
        self.tf: Any = None
        self.clock: Any = None
        if sim_clock:
            self.clock = node.publisher("/clock", msgs.Clock, qos.clock_qos())
            self.published["clock"] = 0
        self.imu: Any = None
        self.battery: Any = None
        if sensors:
            self.imu = node.publisher("imu/data_raw", msgs.Imu, qos.sensor_qos())
            self.battery = node.publisher("battery_state", msgs.BatteryState, qos.sensor_qos())
        self._node = node

    def add_tf(self) -> None:
        self.tf = self._node.publisher("/tf", msgs.TFMessage, qos.tf_qos())

    def writers(self) -> list:
        return [w for w in (self.odom, self.joints, self.tf, self.diag, self.imu, self.battery) if w is not None]

    def write(self, writer, sample, what: str) -> None:
        """One sample; a failure is counted and warned about (rate-limited), not raised."""
        try:
            cdr.write(writer, sample)       # odom, tf, joints, imu, battery, diagnostics: struct-built CDR
            self.published[what] = self.published.get(what, 0) + 1
        except Exception as e:       # DDS timeout (a reader stuck with our reliable backlog): drop, count, go on
            self.dropped_writes += 1
            self._warn("write_" + what, f"{what}: sample dropped ({type(e).__name__}: {e})")

    def publish_odometry(self, stamp: msgs.Time, odometry, twist: tuple[float, float],
                         wheel_position_rad: tuple[float, float], wheel_velocity_rad_s: tuple[float, float],
                         tf: bool) -> msgs.Odometry:
        """odom (the odometry's pose, `twist`, their covariances or the configured diagonals), joint_states and,
        when `tf` and the writer exists, odom -> base_link; all with one stamp. Returns the odom message."""
        x, y, th = odometry.pose
        pose_cov = covariance(odometry.pose_covariance_values(), self.pose_cov_override)
        twist_cov = covariance(odometry.twist_covariance_values(), self.twist_cov_override)
        odom = msgs.odometry(stamp, self.odom_frame, self.base_frame, (x, y, th), twist, pose_cov, twist_cov)
        self.write(self.odom, odom, "odom")
        joints = msgs.JointState(header=msgs.Header(stamp=stamp, frame_id=""), name=[LEFT_JOINT, RIGHT_JOINT],
                                 position=[float(wheel_position_rad[0]), float(wheel_position_rad[1])],
                                 velocity=[float(wheel_velocity_rad_s[0]), float(wheel_velocity_rad_s[1])],
                                 effort=[])
        self.write(self.joints, joints, "joint_states")
        if tf and self.tf is not None:
            msg = msgs.TFMessage(transforms=[msgs.TransformStamped(
                header=msgs.Header(stamp=stamp, frame_id=self.odom_frame), child_frame_id=self.base_frame,
                transform=msgs.Transform(translation=msgs.Vector3(x, y, 0.0), rotation=odom.pose.pose.orientation))])
            self.write(self.tf, msg, "tf")
        return odom

    def publish_sensors(self, reading, stamp: msgs.Time, battery_cutoff: bool) -> None:
        """One SENSORS_DATA record: imu/data_raw while the IMU works, battery_state when the board measures one."""
        s = {"sec": stamp.sec, "nanosec": stamp.nanosec}
        if reading.imu_ok and self.imu is not None:
            self.write(self.imu, msgs.from_fields(msgs.Imu, imu_msg(reading, s, self.imu_frame, self.imu_noise)),
                       "imu")
        if reading.battery_v is not None and self.battery is not None:
            self.write(self.battery, msgs.from_fields(msgs.BatteryState,
                                                      battery_msg(reading, s, self.base_frame, battery_cutoff)),
                       "battery_state")

    def publish_clock(self, now_s: float) -> None:
        if self.clock is not None:
            self.write(self.clock, msgs.Clock(clock=msgs.time_from_s(now_s)), "clock")
