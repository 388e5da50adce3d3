# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Odometry: wheel positions in rad in (as Board.read() gives them), closed-form arcs and circles, integration
order, gyro, covariances; wpimath cross-check. (The int32 counter wrap is Board's: tests/test_board.py.)"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wpimath import geometry as wpig
from wpimath import kinematics as wpik

from viperdrive.motion.odometry import (
    Odometry,
    integrate_arc,
    integrate_euler,
    integrate_midpoint,
    lint_covariance,
    wrap_pi,
)
from viperdrive.robot.config import RobotConfig

pytestmark = pytest.mark.unit

B, R = 0.1853, 0.0325
CFG = RobotConfig(wheel_separation=B, wheel_radius=R)


def drive(odom, v_of_t, w_of_t, duration, dt, cpr, start=(0.0, 0.0)):
    """Feed odom the wheel positions (rad, whole counts as the board measures them) of a robot following v(t),
    w(t) (wheel travel integrated finely, then rounded to counts)."""
    sub = 20
    sl = sr = 0.0
    t = 0.0
    per_m = cpr / (2 * math.pi * R)         # counts per metre of rim travel
    rad = 2 * math.pi / cpr                 # rad per count (Board.read())
    odom.update(start[0], start[1], 0.0, 0.0, 0.0)
    n = int(round(duration / dt))
    for _ in range(n):
        for _ in range(sub):
            tm = t + dt / sub / 2
            v, w = v_of_t(tm), w_of_t(tm)
            sl += (v - w * B / 2) * dt / sub
            sr += (v + w * B / 2) * dt / sub
            t += dt / sub
        odom.update(start[0] + round(sl * per_m) * rad, start[1] + round(sr * per_m) * rad, 0.0, 0.0, t)
    return odom.pose


def test_update_takes_wheel_positions_in_rad():
    """A known sequence of wheel angles gives a known pose whatever counts_per_rev is: 1 m straight (each wheel
    turns 1/R rad), a quarter turn in place (the wheels turn -+ (B/2)(pi/2)/R), 0.5 m straight: (1, 0.5, pi/2).
    counts_per_rev only sizes the quantization variance (a coarser encoder: more pose variance)."""
    quarter = (B / 2) * (math.pi / 2) / R
    seq = [(0.0, 0.0), (1 / R, 1 / R), (1 / R - quarter, 1 / R + quarter),
           (1 / R - quarter + 0.5 / R, 1 / R + quarter + 0.5 / R)]
    poses = {}
    k = CFG.odometry.slip_variance_per_meter
    for cpr in (4096, 100):
        odom = Odometry(CFG, counts_per_rev=cpr)
        odom.update(*seq[0], 0.0, 0.0, 0.0)
        odom.update(*seq[1], 0.0, 0.0, 0.1)
        # 1 m along x at heading 0: var_x grows by (var_l + var_r)/4, each wheel k * 1 m + one count's q^2/12
        q2 = (2 * math.pi * R / cpr) ** 2 / 12
        assert odom.pose_covariance_xytheta[0, 0] == pytest.approx(q2 + (k + q2) / 2, rel=1e-12)
        for i, (pl, pr) in enumerate(seq[2:]):
            odom.update(pl, pr, 0.0, 0.0, 0.2 + 0.1 * i)
        poses[cpr] = odom.pose
        assert odom.pose == pytest.approx((1.0, 0.5, math.pi / 2), abs=1e-12)
        assert odom.distance == pytest.approx(1.5, abs=1e-12)      # |ds| of the spin is 0
    assert poses[4096] == pytest.approx(poses[100], abs=1e-15)


def test_full_circle_closes():
    # v = 0.2 m/s, w = 0.5 rad/s: a circle of radius 0.4 m in 4*pi s
    odom = Odometry(CFG, counts_per_rev=4096)
    x, y, th = drive(odom, lambda t: 0.2, lambda t: 0.5, 4 * math.pi, 0.01, 4096)
    assert math.hypot(x, y) < 2e-3            # back at the start (quantization + last partial step)
    assert abs(wrap_pi(th)) < 2e-3
    assert odom.distance == pytest.approx(0.2 * 4 * math.pi, rel=1e-3)


def test_quarter_arc_matches_closed_form_from_any_start_position():
    odom = Odometry(CFG, counts_per_rev=1 << 20)
    start = (2**31 * 2 * math.pi / (1 << 20), -12345.6)     # only the change of the positions is used
    v, w, T = 0.3, 0.6, 2.62                        # ~ a quarter turn, a whole number of 10 ms steps
    x, y, th = drive(odom, lambda t: v, lambda t: w, T, 0.01, 1 << 20, start=start)
    rad, th_end = v / w, w * T
    assert x == pytest.approx(rad * math.sin(th_end), abs=1e-5)
    assert y == pytest.approx(rad * (1 - math.cos(th_end)), abs=1e-5)
    assert th == pytest.approx(th_end, abs=1e-5)


def _path_error(step, h, total=4.0):
    # a curvature that changes along the way: v = 0.5 + 0.2 sin t, w = cos(1.3 t); reference by tiny steps
    def run(step_fn, hh):
        x = y = th = 0.0
        t = 0.0
        n = int(round(total / hh))
        for _ in range(n):
            # exact wheel travel over the step (analytic integrals), as the encoders would report it
            ds = 0.5 * hh - 0.2 * (math.cos(t + hh) - math.cos(t))
            dth = (math.sin(1.3 * (t + hh)) - math.sin(1.3 * t)) / 1.3
            x, y, th = step_fn(x, y, th, ds, dth)
            t += hh
        return np.array([x, y])
    ref = run(integrate_arc, 1e-4)
    return float(np.linalg.norm(run(step, h) - ref))


def test_integration_order_euler_first_midpoint_and_arc_second():
    hs = [0.08, 0.04, 0.02]
    for fn, order in ((integrate_euler, 1), (integrate_midpoint, 2), (integrate_arc, 2)):
        errs = [_path_error(fn, h) for h in hs]
        ratios = [errs[i] / errs[i + 1] for i in range(len(errs) - 1)]
        for r in ratios:
            assert r == pytest.approx(2 ** order, rel=0.15), (fn.__name__, errs)
    # and the arc step is exact on a constant-curvature arc whatever the step
    x, y, th = integrate_arc(0, 0, 0, 1.0, math.pi / 2)
    assert (x, y, th) == pytest.approx((2 / math.pi, 2 / math.pi, math.pi / 2), abs=1e-12)


def test_gyro_heading_replaces_encoder_turn():
    odom = Odometry(CFG, counts_per_rev=4096)
    odom.update(0.0, 0.0, 0.0, 0.0, 0.0, gyro_yaw=1.0)
    # encoders say "turning" (right wheel ahead) but the gyro says straight: slip; trust the gyro
    odom.update(0.09 / R, 0.11 / R, 0.0, 0.0, 0.1, gyro_yaw=1.0)
    x, y, th = odom.pose
    assert th == 0.0 and y == pytest.approx(0.0, abs=1e-12) and x == pytest.approx(0.1, abs=1e-12)
    # heading variance grows by gyro_variance_rate * dt instead of the encoder model
    p = odom.pose_covariance_xytheta
    assert p[2, 2] > 0 and p[2, 2] < 1e-5


def test_twist_from_board_velocity_with_multipliers():
    cfg = RobotConfig(wheel_separation=0.2, wheel_separation_multiplier=1.1, wheel_radius=0.05,
                      left_wheel_radius_multiplier=0.9, right_wheel_radius_multiplier=1.1)
    odom = Odometry(cfg, counts_per_rev=1000)
    odom.update(0.0, 0.0, 2.0, 4.0, 0.0)
    vl, vr = 2.0 * 0.045, 4.0 * 0.055
    assert odom.twist == pytest.approx(((vl + vr) / 2, (vr - vl) / 0.22))


def test_covariance_positive_grows_with_distance_not_at_rest():
    odom = Odometry(CFG, counts_per_rev=4096)
    p0 = odom.pose_covariance
    assert lint_covariance(p0) == [] and lint_covariance(odom.twist_covariance) == []
    for i in range(100):                                        # standing still for 1 s
        odom.update(0.0, 0.0, 0.0, 0.0, 0.01 * i)
    assert np.allclose(odom.pose_covariance, p0)
    drive(odom, lambda t: 0.3, lambda t: 0.0, 3.0, 0.01, 4096)
    p1 = odom.pose_covariance
    assert lint_covariance(p1) == []
    assert p1[0, 0] > p0[0, 0] and p1[5, 5] > p0[5, 5]
    # driving straight along x: lateral (y) uncertainty comes from heading uncertainty and is correlated with it
    assert p1[1, 5] > 0
    # slip model: along-track variance ~ k * distance / 2 (two wheels averaged)
    k = CFG.odometry.slip_variance_per_meter
    assert p1[0, 0] == pytest.approx(k * 0.9 / 2, rel=0.1)
    odom.update(*odom._positions, 10.0, 10.0, 4.0)
    tw = odom.twist_covariance
    assert tw[0, 0] > 0 and tw[5, 5] > 0 and lint_covariance(tw) == []


def test_lint_flags_zero_huge_and_not_positive_definite():
    assert any("zero" in w for w in lint_covariance(np.zeros((6, 6))))
    assert any("above" in w for w in lint_covariance(np.diag([1e-3] * 5 + [1e6])))
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert any("positive definite" in w for w in lint_covariance(bad))
    assert any("symmetric" in w for w in lint_covariance(np.array([[1.0, 0.5], [0.0, 1.0]])))
    assert lint_covariance(list(np.eye(6).ravel() * 1e-3)) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-300, 300), st.integers(-300, 300)), min_size=1, max_size=40))
def test_against_wpimath_differential_drive_odometry(steps):
    # wpimath integrates each step as a twist along an arc (Pose2d.exp) with the heading we give it
    odom = Odometry(CFG, counts_per_rev=4096)
    rad = 2 * math.pi / 4096                # rad per count, as Board.read() converts
    m = R * rad
    ref = wpik.DifferentialDriveOdometry(wpig.Rotation2d(0.0), 0.0, 0.0)
    cl = cr = 0
    odom.update(0.0, 0.0, 0.0, 0.0, 0.0)
    for i, (dl, dr) in enumerate(steps):
        cl += dl
        cr += dr
        odom.update(cl * rad, cr * rad, 0.0, 0.0, 0.01 * (i + 1))
        heading = (cr - cl) * m / B
        pose = ref.update(wpig.Rotation2d(heading), cl * m, cr * m)
    x, y, th = odom.pose
    assert x == pytest.approx(pose.X(), abs=1e-9) and y == pytest.approx(pose.Y(), abs=1e-9)
    assert math.cos(th - pose.rotation().radians()) == pytest.approx(1.0, abs=1e-12)
