# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Simulated planar runs with noisy sensors, as ROS 2 messages: to try `viperdrive fuse` without a robot, and for
tests and benchmarks that need a recording whose ground truth is known."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..messages import definitions as rosmsg_defs
from ..transforms import quat_from_euler, quat_to_xyzw, wrap_angle


@dataclass
class SimRun:
    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    yaw: np.ndarray
    v: np.ndarray
    w: np.ndarray
    # (topic, type name, stamp s, log time s, message dict)
    messages: list = field(default_factory=list)

    def truth_at(self, t: float) -> tuple[float, float, float]:
        i = min(len(self.t) - 1, max(0, int(round((t - self.t[0]) / (self.t[1] - self.t[0])))))
        return float(self.x[i]), float(self.y[i]), float(self.yaw[i])


def _header(t, frame):
    sec = math.floor(t)
    return {"stamp": {"sec": int(sec), "nanosec": min(999_999_999, int(round((t - sec) * 1e9)))}, "frame_id": frame}


def _cov6(diag):
    c = np.zeros((6, 6))
    np.fill_diagonal(c, diag)
    return [float(v) for v in c.ravel()]


def _quat_dict(yaw):
    qx, qy, qz, qw = quat_to_xyzw(quat_from_euler(0.0, 0.0, yaw))
    return {"x": qx, "y": qy, "z": qz, "w": qw}


def simulate_run(duration_s: float = 20.0, seed: int = 0, dt: float = 0.001, odom_hz: float = 50.0,
                 imu_hz: float = 100.0, pose_hz: float = 0.0, odom_sigma_v: float = 0.02,
                 odom_sigma_w: float = 0.03, gyro_sigma: float = 0.01, pose_sigma: float = 0.1, t0: float = 100.0,
                 v_of_t=None, w_of_t=None, odom_topic="/odom", imu_topic="/imu", pose_topic="/pose") -> SimRun:
    """Integrate a unicycle (exact at step dt) and sample sensors: wheel odometry (nav_msgs/Odometry, twist noisy,
    pose integrated from the noisy twist so it drifts), an IMU gyro (sensor_msgs/Imu, yaw rate only) and an
    optional absolute position fix (PoseWithCovarianceStamped). Stamps start at t0; log time equals the stamp."""
    rng = np.random.default_rng(seed)
    v_of_t = v_of_t or (lambda t: 0.3 + 0.1 * math.sin(0.2 * t))
    w_of_t = w_of_t or (lambda t: 0.5 * math.sin(0.15 * t))
    n = int(round(duration_s / dt)) + 1
    ts = t0 + np.arange(n) * dt
    v = np.array([v_of_t(t - t0) for t in ts])
    w = np.array([w_of_t(t - t0) for t in ts])
    yaw = np.zeros(n)
    x = np.zeros(n)
    y = np.zeros(n)
    for i in range(1, n):
        th = yaw[i - 1] + 0.5 * w[i - 1] * dt        # midpoint heading
        x[i] = x[i - 1] + v[i - 1] * dt * math.cos(th)
        y[i] = y[i - 1] + v[i - 1] * dt * math.sin(th)
        yaw[i] = yaw[i - 1] + w[i - 1] * dt
    yaw = wrap_angle(yaw)
    run = SimRun(ts, x, y, yaw, v, w)
    msgs = run.messages

    def every(rate):
        if rate <= 0:
            return []
        step = max(1, int(round(1.0 / (rate * dt))))
        return range(0, n, step)

    ox = oy = oth = 0.0
    last = None
    for i in every(odom_hz):
        vm = v[i] + rng.normal(0, odom_sigma_v)
        wm = w[i] + rng.normal(0, odom_sigma_w)
        if last is not None:
            h = ts[i] - ts[last]
            ox += vm * h * math.cos(oth + 0.5 * wm * h)
            oy += vm * h * math.sin(oth + 0.5 * wm * h)
            oth += wm * h
        last = i
        msgs.append((odom_topic, rosmsg_defs.ODOMETRY, ts[i], ts[i], {
            "header": _header(ts[i], "odom"), "child_frame_id": "base_link",
            "pose": {"pose": {"position": {"x": ox, "y": oy, "z": 0.0}, "orientation": _quat_dict(oth)},
                     "covariance": _cov6([0.01, 0.01, 1e6, 1e6, 1e6, 0.03])},
            "twist": {"twist": {"linear": {"x": vm, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": wm}},
                      "covariance": _cov6([odom_sigma_v ** 2, 1e-4, 1e6, 1e6, 1e6, odom_sigma_w ** 2])}}))
    for i in every(imu_hz):
        g = w[i] + rng.normal(0, gyro_sigma)
        gc = [0.0] * 9
        gc[0] = gc[4] = 1e-4
        gc[8] = gyro_sigma ** 2
        msgs.append((imu_topic, rosmsg_defs.IMU, ts[i], ts[i], {
            "header": _header(ts[i], "base_link"),
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
            "orientation_covariance": [-1.0] + [0.0] * 8,
            "angular_velocity": {"x": 0.0, "y": 0.0, "z": g}, "angular_velocity_covariance": gc,
            "linear_acceleration": {"x": 0.0, "y": 0.0, "z": 9.80665},
            "linear_acceleration_covariance": [-1.0] + [0.0] * 8}))
    for i in every(pose_hz):
        msgs.append((pose_topic, rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED, ts[i], ts[i], {
            "header": _header(ts[i], "odom"),
            "pose": {"pose": {"position": {"x": x[i] + rng.normal(0, pose_sigma), "y": y[i] + rng.normal(0, pose_sigma),
                                           "z": 0.0}, "orientation": _quat_dict(0.0)},
                     "covariance": _cov6([pose_sigma ** 2, pose_sigma ** 2, 1e6, 1e6, 1e6, 1e6])}}))
    msgs.sort(key=lambda m: m[3])
    return run


def write_mcap(path, messages) -> None:
    """Write (topic, type, stamp, log_time, dict) messages as a ROS 2 MCAP file (log order as given)."""
    from mcap.records import Schema
    from mcap_ros2.writer import Writer

    with open(path, "wb") as f:
        w = Writer(f)
        schemas: dict[str, Schema] = {}
        for topic, type_name, _stamp, log_time, msg in messages:
            schema = schemas.get(type_name)
            if schema is None:
                schema = schemas[type_name] = w.register_msgdef(type_name, rosmsg_defs.DEFINITIONS[type_name])
            ns = int(round(log_time * 1e9))
            w.write_message(topic, schema, msg, log_time=ns, publish_time=ns)
        w.finish()


def as_message(d):
    """A message dict of `simulate_run` as an object with attributes (what a decoded ROS 2 message is)."""
    from types import SimpleNamespace
    if isinstance(d, dict):
        return SimpleNamespace(**{k: as_message(v) for k, v in d.items()})
    if isinstance(d, list):
        return [as_message(v) for v in d]
    return d
