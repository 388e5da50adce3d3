# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Small filters for one angle: a 1-D Kalman filter with gyro bias, and a complementary filter."""
from __future__ import annotations

import numpy as np

from ..transforms import wrap_angle as _wrap


class Kalman1D:
    """Angle (rad) and gyro bias (rad/s): state [angle, bias], angle' = rate - bias.

    predict(rate_rad_s, dt): F = [[1, -dt], [0, 1]], P = F P F^T + Q dt with Q = diag(q_angle_rad2_s,
    q_bias_rad2_s3), the noise densities per second. update(angle_rad): H = [1, 0], R = r_angle_rad2 (the variance
    of an absolute angle, e.g. from the accelerometer or a compass). `wrap_angle=True` for a heading that wraps at
    +-pi (innovation wrapped too).
    """

    def __init__(self, q_angle_rad2_s: float = 1e-3, q_bias_rad2_s3: float = 3e-6, r_angle_rad2: float = 3e-2,
                 angle_rad: float = 0.0, bias_rad_s: float = 0.0, p0=((1.0, 0.0), (0.0, 1.0)),
                 wrap_angle: bool = False):
        self.x = np.array([angle_rad, bias_rad_s], dtype=float)
        self.P = np.array(p0, dtype=float)
        self.Q = np.diag([q_angle_rad2_s, q_bias_rad2_s3])
        self.R = float(r_angle_rad2)
        self.wrap_angle = wrap_angle

    @property
    def angle(self) -> float:
        return float(self.x[0])

    @property
    def bias(self) -> float:
        return float(self.x[1])

    def predict(self, rate_rad_s: float, dt: float) -> float:
        F = np.array([[1.0, -dt], [0.0, 1.0]])
        self.x = np.array([self.x[0] + (rate_rad_s - self.x[1]) * dt, self.x[1]])
        if self.wrap_angle:
            self.x[0] = _wrap(self.x[0])
        self.P = F @ self.P @ F.T + self.Q * dt
        return self.angle

    def update(self, angle_rad: float) -> float:
        y = angle_rad - self.x[0]
        if self.wrap_angle:
            y = _wrap(y)
        S = self.P[0, 0] + self.R
        K = self.P[:, 0] / S
        self.x = self.x + K * y
        if self.wrap_angle:
            self.x[0] = _wrap(self.x[0])
        IKH = np.eye(2) - np.outer(K, [1.0, 0.0])
        self.P = IKH @ self.P @ IKH.T + np.outer(K, K) * self.R     # Joseph form
        return self.angle


class ComplementaryFilter:
    """th = a (th + w dt) + (1 - a) th_abs with a = tau / (tau + dt): the gyro for fast changes, the absolute angle
    (accelerometer tilt, compass) for the slow truth. tau 0.5 s at dt 1 ms gives a ~0.998. Angles in rad, rates in
    rad/s, tau and dt in s.

    With `wrap_angle=True` the blend is done on the wrapped difference so +179 deg and -179 deg average to 180, not 0.
    """

    def __init__(self, tau: float, angle_rad: float = 0.0, wrap_angle: bool = False):
        if tau < 0:
            raise ValueError("tau must be >= 0")
        self.tau = float(tau)
        self.angle = float(angle_rad)
        self.wrap_angle = wrap_angle

    def coefficient(self, dt: float) -> float:
        return self.tau / (self.tau + dt)

    def update(self, rate_rad_s: float, absolute_angle_rad: float, dt: float) -> float:
        a = self.coefficient(dt)
        predicted = self.angle + rate_rad_s * dt
        if self.wrap_angle:
            self.angle = _wrap(predicted + (1.0 - a) * _wrap(absolute_angle_rad - predicted))
        else:
            self.angle = a * predicted + (1.0 - a) * absolute_angle_rad
        return self.angle
