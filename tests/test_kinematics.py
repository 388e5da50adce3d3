# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Kinematics: round trips, joint saturation keeps the arc, REP-103 signs, the envelope; wpimath cross-check."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wpimath import kinematics as wpimath_kin

from viperdrive.motion import kinematics as k

pytestmark = pytest.mark.unit

speeds = st.floats(-5.0, 5.0, allow_nan=False)
rates = st.floats(-20.0, 20.0, allow_nan=False)
seps = st.floats(0.05, 1.0)
radii = st.floats(0.01, 0.2)
limits = st.floats(0.01, 3.0)


@given(speeds, rates, seps, radii)
def test_round_trip_twist_wheels_twist(v, w, b, r):
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=r)
    v2, w2 = k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=r)
    assert math.isclose(v2, v, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(w2, w, rel_tol=1e-9, abs_tol=1e-9)


@given(st.floats(-100, 100), st.floats(-100, 100), seps, radii)
def test_round_trip_wheels_twist_wheels(left, right, b, r):
    v, w = k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=r)
    l2, r2 = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=r)
    assert math.isclose(l2, left, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(r2, right, rel_tol=1e-9, abs_tol=1e-9)


@given(speeds, rates, seps, radii, limits)
def test_saturation_keeps_curvature_and_respects_limit(v, w, b, r, vmax):
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=r, max_rim_speed=vmax)
    assert max(abs(left), abs(right)) * r <= vmax * (1 + 1e-9)
    v2, w2 = k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=r)
    # same arc: (v2, w2) is a non-negative multiple of (v, w) (cross product zero, same direction)
    assert abs(v2 * w - w2 * v) <= 1e-9 * (1 + abs(v) + abs(w)) ** 2
    assert v2 * v >= 0 and w2 * w >= 0
    # and only slowed down when a wheel was over the limit
    half = w * b / 2
    if max(abs(v - half), abs(v + half)) <= vmax:
        assert math.isclose(v2, v, abs_tol=1e-9) and math.isclose(w2, w, abs_tol=1e-9)
    else:
        assert math.isclose(max(abs(left), abs(right)) * r, vmax, rel_tol=1e-9)


def test_rep103_signs():
    # v = 0, w > 0 (counter-clockwise): the LEFT wheel turns backwards, the right one forwards
    left, right = k.twist_to_wheels(0.0, 1.0, wheel_separation=0.152, wheel_radius=0.0325)
    assert left < 0 < right
    assert math.isclose(right, 0.076 / 0.0325)
    # forward motion: both wheels positive and equal
    left, right = k.twist_to_wheels(0.3, 0.0, wheel_separation=0.152, wheel_radius=0.0325)
    assert left == right > 0
    # right wheel faster -> turning left (CCW) -> w > 0
    v, w = k.wheels_to_twist(1.0, 2.0, wheel_separation=0.2, wheel_radius=0.05)
    assert w > 0 and math.isclose(w, 0.05 / 0.2) and math.isclose(v, 0.075)


@given(st.floats(0.01, 20.0), st.floats(0.01, 5.0), seps, radii)
def test_rep103_signs_property(w, v, b, r):
    # turning CCW in place: left backwards, right forwards, equal magnitude
    left, right = k.twist_to_wheels(0.0, w, wheel_separation=b, wheel_radius=r)
    assert left < 0 < right and math.isclose(-left, right)
    # CW in place: the mirror image
    left2, right2 = k.twist_to_wheels(0.0, -w, wheel_separation=b, wheel_radius=r)
    assert (left2, right2) == (-left, -right)
    # driving forward while turning left: the right (outer) wheel is faster
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=r)
    assert right > left
    assert wheels_sign(k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=r)) == (1, 1)


def wheels_sign(twist):
    return tuple(int(math.copysign(1, x)) for x in twist)


def test_envelope_of_the_default_robot():
    b, vmax = 0.152, 0.55
    w0 = k.max_angular(0.0, max_rim_speed=vmax, wheel_separation=b)
    assert math.isclose(w0, 2 * 0.55 / 0.152)
    # the default robot (b = 0.152 m, V_MAX = 0.55 m/s): at v = 0.5 only ~12 % of the standstill authority is left
    assert math.isclose(k.max_angular(0.5, max_rim_speed=vmax, wheel_separation=b) / w0, 0.05 / 0.55, rel_tol=1e-12)
    assert 0.09 < k.max_angular(0.5, max_rim_speed=vmax, wheel_separation=b) / w0 < 0.13
    assert k.max_angular(0.6, max_rim_speed=vmax, wheel_separation=b) == 0.0
    env = k.envelope(max_rim_speed=vmax, wheel_separation=b, points=5)
    assert env[0] == (0.0, w0) and env[-1][1] == 0.0


@given(st.floats(-0.55, 0.55), st.floats(0.0, 1.0), seps)
def test_envelope_is_the_saturation_boundary(v, frac, b):
    vmax = 0.55
    w = frac * k.max_angular(v, max_rim_speed=vmax, wheel_separation=b)
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=1.0, max_rim_speed=vmax)
    v2, w2 = k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=1.0)
    assert math.isclose(v2, v, abs_tol=1e-12) and math.isclose(w2, w, abs_tol=1e-12)   # inside: untouched
    too_fast = k.max_angular(v, max_rim_speed=vmax, wheel_separation=b) * 1.01 + 1e-3
    left, right = k.twist_to_wheels(v, too_fast, wheel_separation=b, wheel_radius=1.0, max_rim_speed=vmax)
    assert math.isclose(max(abs(left), abs(right)), vmax, rel_tol=1e-9)                 # outside: scaled


def test_multipliers():
    kin = k.DifferentialDriveKinematics(0.2, 0.05, wheel_separation_multiplier=1.1,
                                        left_wheel_radius_multiplier=0.9, right_wheel_radius_multiplier=1.2)
    left, right = kin.to_wheels(0.0, 1.0)
    assert math.isclose(left, -0.11 / (0.05 * 0.9)) and math.isclose(right, 0.11 / (0.05 * 1.2))
    assert kin.to_twist(left, right) == pytest.approx((0.0, 1.0))
    with pytest.raises(ValueError, match="wheel_radius"):
        k.DifferentialDriveKinematics(0.2, 0.0)


@settings(max_examples=200)
@given(speeds, rates, seps, limits)
def test_against_wpimath_kinematics_and_desaturate(v, w, b, vmax):
    kin = wpimath_kin.DifferentialDriveKinematics(b)
    ws = kin.toWheelSpeeds(wpimath_kin.ChassisSpeeds(v, 0.0, w))
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=1.0)   # r = 1: rad/s == m/s
    assert math.isclose(left, ws.left, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(right, ws.right, rel_tol=1e-9, abs_tol=1e-9)
    ws.desaturate(vmax)
    left, right = k.twist_to_wheels(v, w, wheel_separation=b, wheel_radius=1.0, max_rim_speed=vmax)
    assert math.isclose(left, ws.left, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(right, ws.right, rel_tol=1e-9, abs_tol=1e-9)
    back = kin.toChassisSpeeds(wpimath_kin.DifferentialDriveWheelSpeeds(left, right))
    assert (back.vx, back.omega) == pytest.approx(
        k.wheels_to_twist(left, right, wheel_separation=b, wheel_radius=1.0), abs=1e-9)


def test_saturation_scale_is_the_factor_desaturate_applies():
    assert k.saturation_scale(0.3, -0.2, 0.55) == 1.0                    # within: untouched
    assert k.saturation_scale(0.3, -1.1, 0.55) == pytest.approx(0.5)     # the larger magnitude sets it
    assert k.saturation_scale(0.0, 0.0, 0.0) == 1.0 and k.saturation_scale(5.0, 1.0, None) == 1.0
    assert k.desaturate(0.3, -1.1, 0.55) == pytest.approx((0.15, -0.55))
    with pytest.raises(ValueError, match="limit"):
        k.saturation_scale(1.0, 1.0, -0.1)
    # the twist form: (0.5 m/s, 2 rad/s) on b = 0.2 m has rims 0.3 and 0.7 m/s; 0.7 -> 0.35 halves both
    assert k.twist_scale(0.5, 2.0, wheel_separation=0.2, limit=0.35) == pytest.approx(0.5)
    assert k.twist_scale(0.5, 2.0, wheel_separation=0.2, limit=0.7) == 1.0


def test_functions_with_two_radii_match_the_class():
    kin = k.DifferentialDriveKinematics(0.2, 0.05, left_wheel_radius_multiplier=0.9,
                                        right_wheel_radius_multiplier=1.2, max_rim_speed=0.4)
    rl, rr = kin.left_radius, kin.right_radius          # 0.045 and 0.06 (to rounding)
    left, right = k.twist_to_wheels(0.3, 2.0, wheel_separation=0.2, wheel_radius=rl, max_rim_speed=0.4,
                                    right_radius=rr)
    assert (left, right) == kin.to_wheels(0.3, 2.0)
    # rims 0.1 and 0.5 m/s scaled by 0.8 to 0.08 and 0.4, then per wheel radius
    assert left == pytest.approx(0.08 / 0.045) and right == pytest.approx(0.4 / 0.06)
    assert k.wheels_to_twist(left, right, wheel_separation=0.2, wheel_radius=0.045,
                             right_radius=0.06) == pytest.approx((0.24, 1.6))
    assert kin.to_twist(left, right) == k.wheels_to_twist(left, right, wheel_separation=0.2, wheel_radius=rl,
                                                          right_radius=rr)


def test_the_geometry_is_named_at_every_call():
    # two floats in an order of its own per function were a swap away from a silent wrong answer
    with pytest.raises(TypeError):
        k.twist_to_wheels(0.3, 0.0, 0.152, 0.0325)          # type: ignore[misc]
    with pytest.raises(TypeError):
        k.max_angular(0.3, 0.55, 0.152)                    # type: ignore[misc]
