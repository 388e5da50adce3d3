# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Rigid transforms and quaternions (docs/estimation.md, "Transforms").

Conventions, fixed here and nowhere else:
- Quaternions are numpy arrays in (w, x, y, z) order (Hamilton, w the scalar part). ROS messages store x, y, z, w:
  use `quat_from_xyzw` / `quat_to_xyzw` at that border.
- Euler angles are ZYX (yaw about z, then pitch about the new y, then roll about the new x), i.e. R = Rz Ry Rx,
  the roll/pitch/yaw of REP-103 and robot_localization. Euler is for display and for the EKF state; accumulate
  orientation in quaternions or matrices.
- A transform named a_T_b maps coordinates in frame b to frame a: p_a = a_T_b @ p_b. Its inverse is b_T_a, computed
  by transpose (R^T, -R^T p), never by a general matrix inverse.

Frame trees (the end of the module): StaticFrames, a recording's static transforms (/tf_static) with cached
target_T_source lookups, and FrameContext, which puts sensor readings into a filter's world and body frames with it.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "FrameMismatch", "SE2", "SE3", "wrap_angle",
    "quat_identity", "quat_multiply", "quat_conjugate", "quat_normalize", "quat_rotate", "quat_slerp",
    "quat_same_rotation", "quat_angle_between", "quat_from_euler", "quat_to_euler", "quat_from_matrix",
    "quat_to_matrix", "quat_from_xyzw", "quat_to_xyzw", "euler_to_matrix", "matrix_to_euler",
    "rot2", "is_rotation", "StaticFrames", "FrameContext",
]


def wrap_angle(a):
    """Angle (float or numpy array, elementwise) wrapped to [-pi, pi): +pi becomes -pi.

    The one angle wrap of the host package (odometry, the EKF, the small filters and the arm all use it)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


class FrameMismatch(ValueError):
    """Composition of transforms whose frames do not chain (a_T_b @ c_T_d with b != c)."""


# ---------------------------------------------------------------------------------------------------- quaternions

def quat_identity() -> np.ndarray:
    return np.array([1.0, 0.0, 0.0, 0.0])


def quat_from_xyzw(x, y, z, w) -> np.ndarray:
    """From ROS field order (geometry_msgs/Quaternion) to this module's (w, x, y, z)."""
    return np.array([w, x, y, z], dtype=float)


def quat_to_xyzw(q) -> tuple[float, float, float, float]:
    return float(q[1]), float(q[2]), float(q[3]), float(q[0])


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product a*b: rotate by b first, then by a."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_conjugate(q) -> np.ndarray:
    """The inverse rotation of a unit quaternion."""
    return np.array([q[0], -q[1], -q[2], -q[3]], dtype=float)


def quat_normalize(q) -> np.ndarray:
    """Unit quaternion; normalize after every accumulation so rounding does not scale the rotation."""
    q = np.asarray(q, dtype=float)
    n = math.sqrt(float(q @ q))
    if n < 1e-12 or not math.isfinite(n):
        raise ValueError(f"cannot normalize quaternion {q!r}: norm {n}")
    return q / n


def quat_rotate(q, v) -> np.ndarray:
    """Vector v (3,) or (N, 3) rotated by unit quaternion q."""
    return np.asarray(v, dtype=float) @ quat_to_matrix(q).T


def quat_same_rotation(a, b, tol: float = 1e-9) -> bool:
    """q and -q are the same rotation: compare by |dot|, never component-wise."""
    a = quat_normalize(a)
    b = quat_normalize(b)
    return abs(float(a @ b)) >= 1.0 - tol


def quat_angle_between(a, b) -> float:
    """Rotation angle (rad, in [0, pi]) that takes a to b, sign-safe."""
    d = min(1.0, abs(float(quat_normalize(a) @ quat_normalize(b))))
    return 2.0 * math.acos(d)


def quat_slerp(a, b, t: float) -> np.ndarray:
    """Spherical interpolation from a (t=0) to b (t=1) along the shorter arc."""
    a = quat_normalize(a)
    b = quat_normalize(b)
    d = float(a @ b)
    if d < 0.0:         # take the short way: -b is the same rotation as b
        b = -b
        d = -d
    if d > 1.0 - 1e-7:  # nearly parallel (under 0.05 deg apart): sin(theta) ~ 0; normalized linear interpolation
        # is off the arc by about theta^3, 1e-11 rad here (from d > 0.9995, 3.6 deg, it was 1e-6 rad)
        return quat_normalize(a + t * (b - a))
    theta = math.acos(d)
    s = math.sin(theta)
    return (math.sin((1.0 - t) * theta) / s) * a + (math.sin(t * theta) / s) * b


def quat_from_euler(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """ZYX Euler (R = Rz(yaw) Ry(pitch) Rx(roll)) to a unit quaternion."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return np.array([
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ])


def quat_to_euler(q) -> tuple[float, float, float]:
    """(roll, pitch, yaw) ZYX of a quaternion; pitch is clipped to [-pi/2, pi/2] at the gimbal-lock boundary."""
    w, x, y, z = quat_normalize(q)
    roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    s = max(-1.0, min(1.0, 2 * (w * y - z * x)))
    pitch = math.asin(s)
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return roll, pitch, yaw


def quat_to_matrix(q) -> np.ndarray:
    w, x, y, z = quat_normalize(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def quat_from_matrix(R) -> np.ndarray:
    """Rotation matrix to unit quaternion (w >= 0), branching on the largest diagonal term for accuracy."""
    R = np.asarray(R, dtype=float)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    qn = quat_normalize(q)
    return -qn if qn[0] < 0 else qn


def euler_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """R = Rz(yaw) Ry(pitch) Rx(roll): body-to-world rotation of a body with that attitude."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_to_euler(R) -> tuple[float, float, float]:
    R = np.asarray(R, dtype=float)
    pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw


def rot2(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def is_rotation(R, tol: float = 1e-9) -> bool:
    R = np.asarray(R, dtype=float)
    n = R.shape[0]
    return bool(np.allclose(R.T @ R, np.eye(n), atol=tol) and abs(np.linalg.det(R) - 1.0) < tol)


# ---------------------------------------------------------------------------------------------------- transforms

def _chain(a_parent, a_child, b_parent, b_child, kind):
    """Frames of a @ b; named frames must chain (a's child is b's parent), unnamed ones compose freely."""
    if a_child is not None and b_parent is not None and a_child != b_parent:
        raise FrameMismatch(
            f"cannot compose {kind} {a_parent or '?'}_T_{a_child} @ {b_parent}_T_{b_child or '?'}: "
            f"'{a_child}' is not '{b_parent}' (a_T_b @ b_T_c needs the inner frames to match)")
    return a_parent, b_child


class SE2:
    """Planar rigid transform parent_T_child: rotation theta (rad, CCW) and translation (x, y)."""

    __slots__ = ("x", "y", "theta", "parent", "child")

    def __init__(self, x: float = 0.0, y: float = 0.0, theta: float = 0.0, parent: str | None = None,
                 child: str | None = None):
        self.x, self.y, self.theta = float(x), float(y), float(wrap_angle(theta))
        self.parent, self.child = parent, child

    @classmethod
    def from_matrix(cls, T, parent=None, child=None) -> SE2:
        T = np.asarray(T, dtype=float)
        if T.shape != (3, 3) or not is_rotation(T[:2, :2], 1e-6):
            raise ValueError("an SE(2) matrix is 3x3 with an orthonormal 2x2 rotation block")
        return cls(T[0, 2], T[1, 2], math.atan2(T[1, 0], T[0, 0]), parent, child)

    @property
    def rotation(self) -> np.ndarray:
        return rot2(self.theta)

    @property
    def translation(self) -> np.ndarray:
        return np.array([self.x, self.y])

    def matrix(self) -> np.ndarray:
        T = np.eye(3)
        T[:2, :2] = self.rotation
        T[:2, 2] = (self.x, self.y)
        return T

    def inverse(self) -> SE2:
        R = self.rotation
        p = -R.T @ self.translation       # by transpose: (R^T, -R^T p)
        return SE2(p[0], p[1], -self.theta, self.child, self.parent)

    def apply(self, points) -> np.ndarray:
        """Points (2,) or (N, 2) given in the child frame, expressed in the parent frame."""
        return np.asarray(points, dtype=float) @ self.rotation.T + self.translation

    def __matmul__(self, other):
        if isinstance(other, SE2):
            parent, child = _chain(self.parent, self.child, other.parent, other.child, "SE2")
            c, s = math.cos(self.theta), math.sin(self.theta)
            return SE2(self.x + c * other.x - s * other.y, self.y + s * other.x + c * other.y,
                       self.theta + other.theta, parent, child)
        return self.apply(other)

    def __repr__(self):
        name = f"{self.parent or '?'}_T_{self.child or '?'}"
        return f"SE2({name}: x={self.x:.6g}, y={self.y:.6g}, theta={self.theta:.6g})"


class SE3:
    """Rigid transform parent_T_child in 3-D: rotation matrix R (3x3) and translation p (3,)."""

    __slots__ = ("R", "p", "parent", "child")

    def __init__(self, R=None, p=None, parent: str | None = None, child: str | None = None):
        self.R = np.eye(3) if R is None else np.array(R, dtype=float)
        self.p = np.zeros(3) if p is None else np.array(p, dtype=float).reshape(3)
        if self.R.shape != (3, 3):
            raise ValueError("R must be 3x3")
        self.parent, self.child = parent, child

    @classmethod
    def from_matrix(cls, T, parent=None, child=None) -> SE3:
        T = np.asarray(T, dtype=float)
        if T.shape != (4, 4) or not is_rotation(T[:3, :3], 1e-6) or not np.allclose(T[3], (0, 0, 0, 1)):
            raise ValueError("an SE(3) matrix is 4x4 with an orthonormal rotation block and last row 0 0 0 1")
        return cls(T[:3, :3], T[:3, 3], parent, child)

    @classmethod
    def from_quaternion(cls, q, p=(0.0, 0.0, 0.0), parent=None, child=None) -> SE3:
        return cls(quat_to_matrix(q), p, parent, child)

    @classmethod
    def from_euler(cls, roll, pitch, yaw, p=(0.0, 0.0, 0.0), parent=None, child=None) -> SE3:
        return cls(euler_to_matrix(roll, pitch, yaw), p, parent, child)

    @property
    def quaternion(self) -> np.ndarray:
        return quat_from_matrix(self.R)

    @property
    def euler(self) -> tuple[float, float, float]:
        return matrix_to_euler(self.R)

    def matrix(self) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = self.R
        T[:3, 3] = self.p
        return T

    def inverse(self) -> SE3:
        Rt = self.R.T
        return SE3(Rt, -Rt @ self.p, self.child, self.parent)    # by transpose: (R^T, -R^T p)

    def apply(self, points) -> np.ndarray:
        """Points (3,) or (N, 3) given in the child frame, expressed in the parent frame."""
        return np.asarray(points, dtype=float) @ self.R.T + self.p

    def __matmul__(self, other):
        if isinstance(other, SE3):
            parent, child = _chain(self.parent, self.child, other.parent, other.child, "SE3")
            return SE3(self.R @ other.R, self.R @ other.p + self.p, parent, child)
        return self.apply(other)

    def __repr__(self):
        name = f"{self.parent or '?'}_T_{self.child or '?'}"
        r, p, y = self.euler
        return (f"SE3({name}: p=({self.p[0]:.6g}, {self.p[1]:.6g}, {self.p[2]:.6g}), "
                f"rpy=({r:.6g}, {p:.6g}, {y:.6g}))")


# ---------------------------------------------------------------------------------------------------- frame trees
# A recording's static transform tree (/tf_static) and readings put into a filter's frames with it

def quat_of_msg(o) -> np.ndarray:
    """A ROS geometry_msgs/Quaternion (x, y, z, w fields) as a unit (w, x, y, z) array; ValueError if zero or not
    finite."""
    q = quat_from_xyzw(o.x, o.y, o.z, o.w)
    n = float(q @ q)
    if not (n > 1e-12 and math.isfinite(n)):
        raise ValueError("orientation quaternion is zero or not finite")
    return q / math.sqrt(n)


def vec_of_msg(v) -> np.ndarray:
    """A ROS geometry_msgs/Vector3 or Point (x, y, z fields) as an array."""
    return np.array([v.x, v.y, v.z], dtype=float)


def frame_name(name: str) -> str:
    """A tf frame id as tf2 compares them: without a leading '/'."""
    return name.lstrip("/")


class StaticFrames:
    """The static transform tree of a recording (/tf_static): target_T_source lookups, cached."""

    def __init__(self):
        self.parent_of: dict[str, tuple[str, SE3]] = {}
        self._cache: dict[tuple[str, str], SE3 | None] = {}

    def add(self, parent: str, child: str, T: SE3) -> None:
        self.parent_of[frame_name(child)] = (frame_name(parent), T)
        self._cache.clear()

    def add_message(self, msg) -> None:
        """A decoded tf2_msgs/TFMessage."""
        for ts in msg.transforms:
            tr = ts.transform
            q = quat_of_msg(tr.rotation)
            self.add(ts.header.frame_id, ts.child_frame_id, SE3.from_quaternion(q, vec_of_msg(tr.translation)))

    def _to_root(self, frame: str) -> tuple[str, SE3]:
        T = SE3()
        seen = set()
        while frame in self.parent_of and frame not in seen:
            seen.add(frame)
            parent, parent_T_frame = self.parent_of[frame]
            T = parent_T_frame @ T
            frame = parent
        return frame, T

    def lookup(self, target: str, source: str) -> SE3 | None:
        """target_T_source, or None when the two frames are not connected by static transforms."""
        target, source = frame_name(target), frame_name(source)
        key = (target, source)
        if key not in self._cache:
            if target == source:
                self._cache[key] = SE3()
            else:
                root_a, root_T_target = self._to_root(target)
                root_b, root_T_source = self._to_root(source)
                self._cache[key] = root_T_target.inverse() @ root_T_source if root_a == root_b else None
        return self._cache[key]


class FrameContext:
    """Puts readings into the filter's frames (world_frame for poses, base_link_frame for twists and IMU data) with
    the recording's static transforms, and says once per sensor and frame when it cannot."""

    def __init__(self, world: str, base: str, frames: StaticFrames | None = None, warn=None):
        self.world, self.base = frame_name(world), frame_name(base)
        self.frames = frames or StaticFrames()
        self._warn = warn or (lambda text: None)
        self._warned: set = set()

    def _lookup(self, sensor, frame, fixed, what, fixed_is_source=False):
        """fixed_T_frame (frame_T_fixed when fixed_is_source), frame being the sensor's and fixed the filter's; None
        when no transform is needed (the frame is the filter's own, or unnamed) or none is known (warned once)."""
        if frame_name(frame) in ("", fixed):
            return None
        target, source = (frame, fixed) if fixed_is_source else (fixed, frame)
        T = self.frames.lookup(target, source)
        if T is None and (sensor, target, source) not in self._warned:
            self._warned.add((sensor, target, source))
            self._warn(f"{sensor}: {what} is in frame '{frame_name(source)}', not '{target}', and no static transform "
                       f"connects them (/tf_static): used as if it were in '{target}'")
        return T

    def world_pose(self, sensor, frame, position, q, cov6):
        """A pose given in `frame` as world_T_body."""
        T = self._lookup(sensor, frame, self.world, "its pose")
        if T is None:
            return position, q, cov6
        pose = T @ SE3.from_quaternion(q, position)
        return pose.p, pose.quaternion, _rotate6(cov6, T.R)

    def body_pose(self, sensor, child, position, q, cov6):
        """world_T_child -> world_T_base (a pose of the sensor's body frame, e.g. odometry's child_frame_id)."""
        T = self._lookup(sensor, child, self.base, "its body frame", fixed_is_source=True)
        if T is None:
            return position, q, cov6
        pose = SE3.from_quaternion(q, position) @ T
        return pose.p, pose.quaternion, cov6

    def body_twist(self, sensor, frame, linear, angular, cov6):
        """A twist of `frame` (expressed in it) -> the twist of base_link: w_b = R w, v_b = R v - w_b x r."""
        T = self._lookup(sensor, frame, self.base, "its twist")
        if T is None:
            return linear, angular, cov6
        w = T.R @ angular
        return T.R @ linear - np.cross(w, T.p), w, _rotate6(cov6, T.R)

    def imu(self, sensor, frame, q, q_cov, gyro, gyro_cov, acc, acc_cov):
        """IMU data in the sensor's frame -> base_link (rotation only; lever-arm accelerations are not added)."""
        T = self._lookup(sensor, frame, self.base, "its data")
        if T is None:
            return q, q_cov, gyro, gyro_cov, acc, acc_cov
        R = T.R
        if q is not None:
            # world_T_imu @ imu_T_base = world_T_base
            q = quat_multiply(q, T.inverse().quaternion)
            q_cov = R @ q_cov @ R.T
        if gyro is not None:
            gyro, gyro_cov = R @ gyro, R @ gyro_cov @ R.T
        if acc is not None:
            acc, acc_cov = R @ acc, R @ acc_cov @ R.T
        return q, q_cov, gyro, gyro_cov, acc, acc_cov


def _rotate6(cov6, R):
    rot = np.zeros((6, 6))
    rot[:3, :3] = R
    rot[3:, 3:] = R
    return rot @ cov6 @ rot.T
