# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Board odometry for GET_ODOM (docs/firmware.md): midpoint integration of the wheel count deltas, in floats, called
# strictly once per fixed period from a slow task with the signed deltas (direction signs already applied,
# counter wrap already undone by the caller). REP-103: x forward, y left, theta CCW positive.
#
# With a gyro the heading change of a period is the gyro's (bias-corrected z rate integrated by the sensor task,
# passed in as dth_gyro): a wheel-size mismatch turns the encoders' heading a little every metre, the gyro's not.
# The encoders' own heading (theta_enc) is integrated alongside either way, for comparison.
import math

_TWO_PI = 2.0 * math.pi


def wrap_pi(a):
    """a wrapped to [-pi, pi)."""
    a = math.fmod(a + math.pi, _TWO_PI)
    if a < 0.0:
        a += _TWO_PI
    a -= math.pi
    # fmod rounding can land exactly on +pi for inputs a hair below it: keep the interval half-open
    if a >= math.pi:
        a -= _TWO_PI
    return a


class Odometry:
    """Pose (x, y in m, theta in rad, wrapped to [-pi, pi)) from wheel count deltas."""

    def __init__(self, wheel_radius, wheel_separation, counts_per_rev):
        self.configure(wheel_radius, wheel_separation, counts_per_rev)
        self.reset()

    def configure(self, wheel_radius, wheel_separation, counts_per_rev):
        """New geometry (after SET_PARAM of wheel_radius / wheel_separation); the pose is kept."""
        if wheel_radius <= 0 or wheel_separation <= 0 or counts_per_rev <= 0:
            raise ValueError("odometry needs wheel_radius, wheel_separation and counts_per_rev > 0")
        self.m_per_count = _TWO_PI * wheel_radius / counts_per_rev
        self.wheel_separation = float(wheel_separation)

    def reset(self, x=0.0, y=0.0, theta=0.0):
        self.x = float(x)
        self.y = float(y)
        self.theta = wrap_pi(float(theta))
        self.theta_enc = self.theta
        self.gyro_heading = False   # the last update took its heading change from the gyro

    def update(self, dl_counts, dr_counts, dth_gyro=None):
        """Advance by one period's wheel count deltas (left, right; signed, forward positive). dth_gyro: the
        period's heading change from the gyro (rad), None without one (then the encoders' heading change)."""
        sl = dl_counts * self.m_per_count
        sr = dr_counts * self.m_per_count
        ds = 0.5 * (sl + sr)
        dth = (sr - sl) / self.wheel_separation
        self.theta_enc = wrap_pi(self.theta_enc + dth)
        self.gyro_heading = dth_gyro is not None
        if dth_gyro is not None:
            dth = dth_gyro
        # heading at the middle of the step: local error O(dt^3) instead of O(dt^2) for the start heading
        mid = self.theta + 0.5 * dth
        self.x += ds * math.cos(mid)
        self.y += ds * math.sin(mid)
        self.theta = wrap_pi(self.theta + dth)
