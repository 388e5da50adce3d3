# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Sensor inputs: turn one reading of an odometry, IMU, pose or twist source into filter measurements, the way
robot_localization prepares them (selection vector, relative and differential modes, gravity removal), plus an
optional low-pass prefilter for vibrating IMUs.

Frames: SensorInput takes readings already expressed in the filter's frames (pose in the world frame, twist and IMU
in the body frame). measurements_of adapts one decoded ROS 2 message (nav_msgs/Odometry, sensor_msgs/Imu,
geometry_msgs/PoseWithCovarianceStamped or TwistWithCovarianceStamped) and puts it there first with a
transforms.FrameContext, the recording's static transforms (docs/estimation.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import transforms as tf
from ..transforms import FrameContext, quat_of_msg, vec_of_msg
from .ekf import AX, AZ, STATE_SIZE, VROLL, VX, VYAW, YAW, Measurement, X

KINDS = ("odom", "imu", "pose", "twist")
DIFFERENTIAL_COVARIANCE = ("statistical", "robot_localization")
GRAVITY = 9.80665


@dataclass
class SensorConfig:
    """One input, named as robot_localization names it (odom0, imu1, ...)."""
    name: str
    kind: str
    topic: str = ""
    update_vector: tuple = field(default_factory=lambda: (False,) * STATE_SIZE)
    differential: bool = False
    relative: bool = False
    pose_threshold: float = math.inf
    twist_threshold: float = math.inf
    accel_threshold: float = math.inf
    remove_gravity: bool = False
    gravity: float = GRAVITY
    # viperdrive extension: how a differentiated pose's covariance is formed. "statistical": the difference of two
    # independent readings per unit time, (R_prev + R_cur) / dt^2. "robot_localization": (R_prev + R_cur) * dt, what
    # robot_localization computes (not a variance of a velocity, but what existing tunings were made against).
    differential_covariance: str = "statistical"
    lowpass_tau: float = 0.0          # viperdrive extension: IMU one-pole prefilter time constant, s (0 = off)
    timeout_s: float | None = None    # viperdrive extension: per-sensor stale timeout, s (None = sensor_timeout)
    reacquire_after: int = 0          # viperdrive extension: N consistent gated readings in a row open the gate

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.differential_covariance not in DIFFERENTIAL_COVARIANCE:
            raise ValueError(f"{self.name}: differential_covariance is one of {DIFFERENTIAL_COVARIANCE}")
        if len(self.update_vector) != STATE_SIZE:
            raise ValueError(f"{self.name}: the update vector has {STATE_SIZE} booleans, not {len(self.update_vector)}")
        self.update_vector = tuple(bool(b) for b in self.update_vector)


def _pose_of(position, q):
    return tf.SE3.from_quaternion(q, position)


class SensorInput:
    """Stateful converter for one sensor: call the method for its message kind, get a list of Measurements."""

    def __init__(self, config: SensorConfig):
        self.cfg = config
        self.mask = np.array(config.update_vector, dtype=bool)
        self._first_pose: tf.SE3 | None = None
        self._prev_pose: tuple[float, tf.SE3, np.ndarray] | None = None
        self._lp_time: float | None = None
        self._lp_gyro: np.ndarray | None = None
        self._lp_accel: np.ndarray | None = None
        self.selects_pose = bool(self.mask[X:YAW + 1].any())
        self.selects_twist = bool(self.mask[VX:VYAW + 1].any())
        self.selects_accel = bool(self.mask[AX:AZ + 1].any())

    # ---------------------------------------------------------------------------------------------- parts

    def _measurement(self, t, start, values, cov, selected, threshold, part) -> Measurement:
        """A measurement of the consecutive state variables from `start` (full-state order): their values (a tuple
        of sequences that follow each other, e.g. (position, euler)), their covariance block and which of them to
        fuse; every other variable is NaN and unselected."""
        full_values = np.full(STATE_SIZE, np.nan)
        end = start
        for chunk in values:
            full_values[end:end + len(chunk)] = chunk
            end += len(chunk)
        n = end - start
        full_cov = np.zeros((STATE_SIZE, STATE_SIZE))
        full_cov[start:end, start:end] = np.asarray(cov, dtype=float).reshape(n, n)
        mask = np.zeros(STATE_SIZE, dtype=bool)
        mask[start:end] = selected
        return Measurement(t, self.cfg.name, full_values, full_cov, mask, threshold, part)

    def _pose(self, t, position, q, cov6, selected=None) -> list[Measurement]:
        """Pose (world frame) -> pose measurement, or in differential mode a body-frame velocity measurement.
        `selected`: the 6 pose entries of the update vector to use (default: this sensor's)."""
        selected = self.mask[:6] if selected is None else selected
        if not selected.any():
            return []
        pose = _pose_of(position, q)
        cov6 = np.asarray(cov6, dtype=float).reshape(6, 6)
        if self.cfg.differential:
            prev = self._prev_pose
            self._prev_pose = (t, pose, cov6)
            if prev is None or t <= prev[0]:
                return []
            dt = t - prev[0]
            delta = prev[1].inverse() @ pose          # motion in the previous body frame
            rates = np.concatenate([delta.p, np.array(delta.euler)]) / dt
            # the difference of two independent readings has the sum of their covariances (the linear part rotated
            # into the previous body frame); as a rate it is divided by dt^2, or, robot_localization's way, times dt
            Rb = prev[1].R.T
            rot = np.zeros((6, 6))
            rot[:3, :3] = Rb
            rot[3:, 3:] = np.eye(3)
            summed = rot @ (cov6 + prev[2]) @ rot.T
            cov = summed / (dt * dt) if self.cfg.differential_covariance == "statistical" else summed * dt
            # a differentiated x becomes vx, yaw becomes vyaw, ...
            return [self._measurement(t, VX, (rates,), cov, selected, self.cfg.twist_threshold, "twist")]
        if self.cfg.relative:
            if self._first_pose is None:
                self._first_pose = pose
            pose = self._first_pose.inverse() @ pose      # the first reading is the zero point
        return [self._measurement(t, X, (pose.p, pose.euler), cov6, selected,
                                  self.cfg.pose_threshold, "pose")]

    def _twist(self, t, linear, angular, cov6) -> list[Measurement]:
        if not self.selects_twist:
            return []
        return [self._measurement(t, VX, (linear, angular), cov6, self.mask[VX:VYAW + 1],
                                  self.cfg.twist_threshold, "twist")]

    # ---------------------------------------------------------------------------------------------- messages

    def odometry(self, t, position, q, pose_cov6, linear, angular, twist_cov6) -> list[Measurement]:
        """nav_msgs/Odometry: pose (world) and twist (body), each gated by its own threshold."""
        return self._pose(t, position, q, pose_cov6) + self._twist(t, linear, angular, twist_cov6)

    def pose(self, t, position, q, cov6) -> list[Measurement]:
        return self._pose(t, position, q, cov6)

    def twist(self, t, linear, angular, cov6) -> list[Measurement]:
        return self._twist(t, linear, angular, cov6)

    def imu(self, t, q=None, q_cov3=None, gyro_rad_s=None, gyro_cov3=None, accel_m_s2=None,
            accel_cov3=None) -> list[Measurement]:
        """sensor_msgs/Imu: orientation q (x, y, z, w), angular velocity (rad/s) and linear acceleration (m/s^2),
        each with its 3x3 covariance. Pass None for a part the IMU does not provide (ROS: covariance[0] == -1)."""
        out: list[Measurement] = []
        gyro = None if gyro_rad_s is None else np.asarray(gyro_rad_s, dtype=float)
        accel = None if accel_m_s2 is None else np.asarray(accel_m_s2, dtype=float)
        if self.cfg.lowpass_tau > 0.0:
            gyro, accel = self._lowpass(t, gyro, accel)
        if q is not None and self.mask[3:6].any():
            cov6 = np.zeros((6, 6))
            cov6[3:, 3:] = np.asarray(q_cov3, dtype=float).reshape(3, 3)
            cov6[:3, :3] = np.eye(3)        # unused: an IMU never measures position, whatever its config says
            out += self._pose(t, np.zeros(3), q, cov6, selected=np.r_[False, False, False, self.mask[3:6]])
        if gyro is not None and self.mask[VROLL:VYAW + 1].any():
            out.append(self._measurement(t, VROLL, (gyro,), gyro_cov3, self.mask[VROLL:VYAW + 1],
                                         self.cfg.twist_threshold, "twist"))
        if accel is not None and self.selects_accel:
            a = accel
            if self.cfg.remove_gravity:
                # a resting accelerometer reads +g up; express world gravity in the body frame with the IMU's own
                # orientation (level if it reports none) and subtract it
                Rwb = tf.quat_to_matrix(q) if q is not None else np.eye(3)
                a = a - Rwb.T @ np.array([0.0, 0.0, self.cfg.gravity])
            out.append(self._measurement(t, AX, (a,), accel_cov3, self.mask[AX:AZ + 1], self.cfg.accel_threshold,
                                         "accel"))
        return out

    def _lowpass(self, t, gyro, accel):
        """One-pole low-pass y += alpha (x - y), alpha = dt / (tau + dt), dt from successive stamps."""
        if self._lp_time is None or t <= self._lp_time:
            alpha = 1.0
        else:
            dt = t - self._lp_time
            alpha = dt / (self.cfg.lowpass_tau + dt)
        self._lp_time = t
        if gyro is not None:
            self._lp_gyro = gyro.copy() if self._lp_gyro is None else self._lp_gyro + alpha * (gyro - self._lp_gyro)
            gyro = self._lp_gyro
        if accel is not None:
            self._lp_accel = accel.copy() if self._lp_accel is None else \
                self._lp_accel + alpha * (accel - self._lp_accel)
            accel = self._lp_accel
        return gyro, accel


def _cov(values, n) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.size != n * n:
        raise ValueError(f"covariance has {a.size} elements, expected {n * n}")
    return a.reshape(n, n)


def measurements_of(inp: SensorInput, kind: str, msg, t: float, frames: FrameContext | None = None):
    """Filter measurements from one decoded ROS 2 message of the sensor's kind, put into the filter's frames."""
    fc = frames or FrameContext("", "")
    name = inp.cfg.name
    if kind in ("odom", "pose"):
        p = msg.pose
        pos, q, pcov = fc.world_pose(name, msg.header.frame_id, vec_of_msg(p.pose.position),
                                     quat_of_msg(p.pose.orientation),
                                     _cov(p.covariance, 6))
    if kind == "odom":
        child = msg.child_frame_id
        pos, q, pcov = fc.body_pose(name, child, pos, q, pcov)
        tw = msg.twist
        lin, ang, tcov = fc.body_twist(name, child, vec_of_msg(tw.twist.linear), vec_of_msg(tw.twist.angular),
                                       _cov(tw.covariance, 6))
        return inp.odometry(t, pos, q, pcov, lin, ang, tcov)
    if kind == "pose":
        return inp.pose(t, pos, q, pcov)
    if kind == "twist":
        tw = msg.twist
        lin, ang, tcov = fc.body_twist(name, msg.header.frame_id, vec_of_msg(tw.twist.linear),
                                       vec_of_msg(tw.twist.angular),
                                       _cov(tw.covariance, 6))
        return inp.twist(t, lin, ang, tcov)
    # imu: covariance[0] == -1 marks a part the IMU does not provide (sensor_msgs/Imu convention)
    oc, gc, ac = list(msg.orientation_covariance), list(msg.angular_velocity_covariance), \
        list(msg.linear_acceleration_covariance)
    q = None if oc[0] == -1 else quat_of_msg(msg.orientation)
    gyro = None if gc[0] == -1 else vec_of_msg(msg.angular_velocity)
    acc = None if ac[0] == -1 else vec_of_msg(msg.linear_acceleration)
    parts = fc.imu(name, msg.header.frame_id, q, None if q is None else _cov(oc, 3), gyro,
                   None if gyro is None else _cov(gc, 3), acc, None if acc is None else _cov(ac, 3))
    return inp.imu(t, *parts)
