# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Quaternion identities (hypothesis), rigid transforms with frame checking, and a static frame tree putting sensor
data into base_link."""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from viperdrive import transforms as tf

pytestmark = pytest.mark.unit

finite = st.floats(-1.0, 1.0, allow_nan=False)
quats = st.tuples(finite, finite, finite, finite).filter(lambda q: sum(c * c for c in q) > 1e-3).map(
    lambda q: tf.quat_normalize(np.array(q)))
angles = st.floats(-math.pi, math.pi, allow_nan=False)
pitches = st.floats(-1.5, 1.5, allow_nan=False)
vectors = st.tuples(st.floats(-10, 10), st.floats(-10, 10), st.floats(-10, 10)).map(np.array)


@settings(max_examples=200, deadline=None)
@given(quats, quats, quats)
def test_multiplication_is_associative_and_norm_preserving(a, b, c):
    ab_c = tf.quat_multiply(tf.quat_multiply(a, b), c)
    a_bc = tf.quat_multiply(a, tf.quat_multiply(b, c))
    assert np.allclose(ab_c, a_bc, atol=1e-12)
    assert abs(np.linalg.norm(ab_c) - 1.0) < 1e-12


@settings(max_examples=200, deadline=None)
@given(quats, vectors)
def test_conjugate_is_inverse_and_rotation_matches_matrix(q, v):
    assert tf.quat_same_rotation(tf.quat_multiply(q, tf.quat_conjugate(q)), tf.quat_identity())
    assert np.allclose(tf.quat_rotate(q, v), tf.quat_to_matrix(q) @ v, atol=1e-9)
    # rotating by q then by q^-1 gives v back, and length is kept
    back = tf.quat_rotate(tf.quat_conjugate(q), tf.quat_rotate(q, v))
    assert np.allclose(back, v, atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(quats, quats, vectors)
def test_product_composes_rotations(a, b, v):
    assert np.allclose(tf.quat_rotate(tf.quat_multiply(a, b), v), tf.quat_rotate(a, tf.quat_rotate(b, v)), atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(quats)
def test_q_and_minus_q_are_the_same_rotation(q):
    assert tf.quat_same_rotation(q, -q)
    assert np.allclose(tf.quat_to_matrix(q), tf.quat_to_matrix(-q), atol=1e-12)
    assert tf.quat_angle_between(q, -q) < 1e-6
    assert tf.quat_same_rotation(tf.quat_from_matrix(tf.quat_to_matrix(q)), q)


@settings(max_examples=200, deadline=None)
@given(angles, pitches, angles)
def test_euler_round_trips(roll, pitch, yaw):
    q = tf.quat_from_euler(roll, pitch, yaw)
    r2, p2, y2 = tf.quat_to_euler(q)
    assert abs(tf.wrap_angle(r2 - roll)) < 1e-9 and abs(p2 - pitch) < 1e-9 and abs(tf.wrap_angle(y2 - yaw)) < 1e-9
    R = tf.euler_to_matrix(roll, pitch, yaw)
    assert np.allclose(R, tf.quat_to_matrix(q), atol=1e-12)
    assert tf.is_rotation(R)
    r3, p3, y3 = tf.matrix_to_euler(R)
    assert abs(tf.wrap_angle(r3 - roll)) < 1e-9 and abs(p3 - pitch) < 1e-9 and abs(tf.wrap_angle(y3 - yaw)) < 1e-9


def test_euler_is_zyx():
    # yaw first about z, then pitch about the new y: the x axis ends up at (cos p cos y, cos p sin y, -sin p)
    R = tf.euler_to_matrix(0.0, 0.4, 0.7)
    assert np.allclose(R[:, 0], [math.cos(0.4) * math.cos(0.7), math.cos(0.4) * math.sin(0.7), -math.sin(0.4)])


@settings(max_examples=200, deadline=None)
@given(quats, quats, st.floats(0.0, 1.0))
# two rotations 3.6 deg apart: linear interpolation (then used below 3.6 deg) was 1e-6 rad off the constant speed
@example(np.array([0.50203583, 0.7266308, 0.0, 0.46900715]), np.array([0.47446999, 0.73959052, 0.0, 0.47737206]),
         0.1875)
def test_slerp_endpoints_constant_speed_and_short_arc(a, b, t):
    assert tf.quat_same_rotation(tf.quat_slerp(a, b, 0.0), a, 1e-9)
    assert tf.quat_same_rotation(tf.quat_slerp(a, b, 1.0), b, 1e-9)
    total = tf.quat_angle_between(a, b)
    mid = tf.quat_slerp(a, b, t)
    assert abs(np.linalg.norm(mid) - 1.0) < 1e-12
    assert tf.quat_angle_between(a, mid) == pytest.approx(t * total, abs=1e-6)
    assert tf.quat_angle_between(a, tf.quat_slerp(a, -b, t)) == pytest.approx(t * total, abs=1e-6)


def test_normalize_refuses_zero():
    with pytest.raises(ValueError):
        tf.quat_normalize([0, 0, 0, 0])


def test_ros_order_conversion():
    q = tf.quat_from_xyzw(0.0, 0.0, math.sin(0.25), math.cos(0.25))
    assert tf.quat_to_euler(q)[2] == pytest.approx(0.5)
    assert tf.quat_to_xyzw(q) == pytest.approx((0.0, 0.0, math.sin(0.25), math.cos(0.25)))


@settings(max_examples=100, deadline=None)
@given(angles, pitches, angles, vectors)
def test_se3_inverse_by_transpose(r, p, y, t):
    T = tf.SE3.from_euler(r, p, y, t, parent="odom", child="base_link")
    inv = T.inverse()
    assert (inv.parent, inv.child) == ("base_link", "odom")
    assert np.allclose(inv.R, T.R.T) and np.allclose(inv.p, -T.R.T @ t)
    assert np.allclose((T @ inv).matrix(), np.eye(4), atol=1e-9)
    assert np.allclose(inv.matrix(), np.linalg.inv(T.matrix()), atol=1e-9)


def test_se3_composition_and_frames():
    odom_T_base = tf.SE3.from_euler(0, 0, math.pi / 2, (1.0, 2.0, 0.0), "odom", "base_link")
    base_T_laser = tf.SE3(p=(0.2, 0.0, 0.1), parent="base_link", child="laser")
    odom_T_laser = odom_T_base @ base_T_laser
    assert (odom_T_laser.parent, odom_T_laser.child) == ("odom", "laser")
    assert np.allclose(odom_T_laser.p, [1.0, 2.2, 0.1])
    assert np.allclose(odom_T_laser @ np.zeros(3), [1.0, 2.2, 0.1])
    assert np.allclose(odom_T_laser.matrix(), odom_T_base.matrix() @ base_T_laser.matrix())
    with pytest.raises(tf.FrameMismatch, match="'laser' is not 'odom'"):
        base_T_laser @ odom_T_base
    with pytest.raises(ValueError):
        tf.SE3.from_matrix(np.ones((4, 4)))


def test_se2():
    a = tf.SE2(1.0, 0.0, math.pi / 2, "map", "odom")
    b = tf.SE2(1.0, 0.0, 0.0, "odom", "base_link")
    ab = a @ b
    assert (ab.x, ab.y) == pytest.approx((1.0, 1.0)) and ab.theta == pytest.approx(math.pi / 2)
    assert np.allclose(ab.matrix(), a.matrix() @ b.matrix())
    assert np.allclose((ab @ ab.inverse()).matrix(), np.eye(3), atol=1e-12)
    assert np.allclose(a.apply([[1.0, 0.0], [0.0, 1.0]]), [[1.0, 1.0], [0.0, 0.0]])
    assert tf.SE2.from_matrix(ab.matrix()).theta == pytest.approx(ab.theta)
    with pytest.raises(tf.FrameMismatch):
        b @ a
    # unnamed transforms compose freely
    assert (tf.SE2(1, 0, 0) @ tf.SE2(0, 1, 0)).y == 1.0


def test_wrap_angle_boundaries_scalar_and_array_alike():
    # [-pi, pi): +pi maps to -pi, the same for a float and for every element of an array (the EKF wraps arrays)
    cases = [math.pi, -math.pi, 3 * math.pi + 0.25, -7.0, 0.0, 2 * math.pi, 1e-12 - math.pi]
    want = [-math.pi, -math.pi, -math.pi + 0.25, -7.0 + 2 * math.pi, 0.0, 0.0, 1e-12 - math.pi]
    scalar = [tf.wrap_angle(a) for a in cases]
    assert scalar == pytest.approx(want, abs=1e-12)
    assert scalar[0] == -math.pi and scalar[1] == -math.pi
    arr = tf.wrap_angle(np.array(cases))
    assert arr.tolist() == scalar                       # bit for bit the scalar results
    assert all(-math.pi <= a < math.pi for a in scalar)


def test_static_frames_put_sensor_data_into_base_link():
    from viperdrive.transforms import (
        SE3,
        FrameContext,
        StaticFrames,
        quat_from_euler,
        quat_multiply,
        quat_same_rotation,
    )

    frames = StaticFrames()
    frames.add("base_link", "imu_link", SE3.from_euler(math.pi, 0.0, 0.0, (0.1, 0.0, 0.05)))   # upside down
    frames.add("/base_link", "/laser", SE3(p=(0.2, 0.0, 0.0)))
    warned = []
    fc = FrameContext("odom", "base_link", frames, warn=warned.append)
    assert frames.lookup("imu_link", "laser") is not None and frames.lookup("odom", "laser") is None
    # an upside-down IMU reads yaw rate and z acceleration with the opposite sign
    q_imu = quat_multiply(quat_from_euler(0.0, 0.0, 0.7), quat_from_euler(math.pi, 0.0, 0.0))
    q, _, gyro, _, acc, _ = fc.imu("imu0", "imu_link", q_imu, np.eye(3), np.array([0.0, 0.0, -0.5]), np.eye(3),
                                   np.array([0.0, 0.0, -9.8]), np.eye(3))
    assert quat_same_rotation(q, quat_from_euler(0.0, 0.0, 0.7), 1e-12)
    assert np.allclose(gyro, [0.0, 0.0, 0.5]) and np.allclose(acc, [0.0, 0.0, 9.8])
    # a velocity sensor 0.2 m ahead of base_link sees 0.2 m/s sideways when the base spins at 1 rad/s in place
    lin, ang, _ = fc.body_twist("twist0", "laser", np.array([0.0, 0.2, 0.0]), np.array([0.0, 0.0, 1.0]),
                                np.eye(6))
    assert np.allclose(lin, 0.0) and np.allclose(ang, [0, 0, 1])
    # an unknown frame is used as is, and said once
    fc.body_twist("twist0", "camera", np.zeros(3), np.zeros(3), np.eye(6))
    fc.body_twist("twist0", "camera", np.zeros(3), np.zeros(3), np.eye(6))
    assert len(warned) == 1 and "'camera'" in warned[0] and "/tf_static" in warned[0]
