# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Board odometry (mcu/odometry.py): straight line, spin in place, REP-103 sign of a left-backwards turn, a constant
# arc against the exact circle (midpoint integration vs the naive start-heading version), theta wrapping.
import math

from viperdrive import odometry

R = 0.0325
B = 0.1853
CPR = 4096


def _close(a, b, tol):
    return abs(a - b) <= tol


def test_straight_one_revolution():
    o = odometry.Odometry(R, B, CPR)
    for _ in range(64):
        o.update(64, 64)
    assert _close(o.x, 2 * math.pi * R, 1e-9)
    assert o.y == 0.0 and o.theta == 0.0


def test_spin_in_place_ccw_when_left_goes_backwards():
    o = odometry.Odometry(R, B, CPR)
    # REP-103: v = 0, w > 0 -> left wheel backwards, right forwards, theta grows (CCW)
    o.update(-100, 100)
    step = 2 * (2 * math.pi * R * 100 / CPR) / B
    assert _close(o.theta, step, 1e-12)
    assert _close(o.x, 0.0, 1e-15) and _close(o.y, 0.0, 1e-15)
    o.reset()
    o.update(100, -100)
    assert _close(o.theta, -step, 1e-12)


def test_arc_matches_circle_and_beats_naive():
    # left 30 counts, right 50 counts per step: a constant-curvature arc, 2000 steps (several turns)
    dl, dr = 30, 50
    k = 2 * math.pi * R / CPR
    sl, sr = dl * k, dr * k
    dth = (sr - sl) / B
    radius = 0.5 * (sl + sr) / dth
    steps = 2000
    o = odometry.Odometry(R, B, CPR)
    nx = ny = nth = 0.0
    for _ in range(steps):
        o.update(dl, dr)
        ds = 0.5 * (sl + sr)
        nx += ds * math.cos(nth)
        ny += ds * math.sin(nth)
        nth += dth
    total = steps * dth
    # exact arc endpoint from the origin heading +x
    ex = radius * math.sin(total)
    ey = radius * (1 - math.cos(total))
    err_mid = math.sqrt((o.x - ex) ** 2 + (o.y - ey) ** 2)
    err_naive = math.sqrt((nx - ex) ** 2 + (ny - ey) ** 2)
    print("odometry_arc steps=%d turned_rad=%.3f radius_m=%.4f err_midpoint_m=%.3g err_naive_m=%.3g"
          % (steps, total, radius, err_mid, err_naive))
    # the midpoint step's only error is chord vs arc length (~ds*dth^2/24 per step)
    assert err_mid < 1e-5
    assert err_naive > 50 * err_mid
    wrapped = math.atan2(math.sin(total), math.cos(total))
    if wrapped >= math.pi:
        wrapped -= 2 * math.pi
    assert _close(o.theta, wrapped, 1e-9)


def test_theta_wrapped_half_open():
    assert odometry.wrap_pi(math.pi) == -math.pi
    assert odometry.wrap_pi(-math.pi) == -math.pi
    assert _close(odometry.wrap_pi(3 * math.pi + 0.25), -math.pi + 0.25, 1e-12)
    assert _close(odometry.wrap_pi(-7.0), -7.0 + 2 * math.pi, 1e-12)
    assert odometry.wrap_pi(0.0) == 0.0
    o = odometry.Odometry(R, B, CPR)
    for _ in range(5000):
        o.update(-37, 41)
        assert -math.pi <= o.theta < math.pi


def test_reset_and_configure():
    o = odometry.Odometry(R, B, CPR)
    o.update(1000, 1200)
    o.reset(1.0, -2.0, 4.0)
    assert (o.x, o.y) == (1.0, -2.0)
    assert _close(o.theta, 4.0 - 2 * math.pi, 1e-12)
    o.configure(2 * R, B, CPR)          # new wheel radius: pose kept, later steps use the new scale
    assert o.x == 1.0
    o.reset()
    o.update(100, 100)
    assert _close(o.x, 100 * 2 * math.pi * 2 * R / CPR, 1e-12)
    for bad in ((0.0, B, CPR), (R, 0.0, CPR), (R, B, 0)):
        try:
            odometry.Odometry(*bad)
        except ValueError as e:
            assert "wheel_radius" in str(e)
        else:
            raise AssertionError("accepted %r" % (bad,))
