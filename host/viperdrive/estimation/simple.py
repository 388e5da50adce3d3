# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Small filters for one angle: a 1-D Kalman filter with gyro bias, and a complementary filter."""
from __future__ import annotations

import numpy as np

from ..transforms import wrap_angle as _wrap


class Kalman1D:
    """Angle and gyro bias: state [angle, bias], angle' = rate - bias.

    predict(rate, dt): F = [[1, -dt], [0, 1]], P = F P F^T + Q dt with Q = diag(q_angle, q_bias) per second.
    update(angle): H = [1, 0], R = r_angle (an absolute angle, e.g. from the accelerometer or a compass).
    `wrap_angle=True` for a heading that wraps at +-pi (innovation wrapped too).
    """

    def __init__(self, q_angle: float = 1e-3, q_bias: float = 3e-6, r_angle: float = 3e-2, angle: float = 0.0,
                 bias: float = 0.0, p0=((1.0, 0.0), (0.0, 1.0)), wrap_angle: bool = False):
        self.x = np.array([angle, bias], dtype=float)
        self.P = np.array(p0, dtype=float)
        self.Q = np.diag([q_angle, q_bias])
        self.R = float(r_angle)
        self.wrap_angle = wrap_angle

    @property
    def angle(self) -> float:
        return float(self.x[0])

    @property
    def bias(self) -> float:
        return float(self.x[1])

    def predict(self, rate: float, dt: float) -> float:
        F = np.array([[1.0, -dt], [0.0, 1.0]])
        self.x = np.array([self.x[0] + (rate - self.x[1]) * dt, self.x[1]])
        if self.wrap_angle:
            self.x[0] = _wrap(self.x[0])
        self.P = F @ self.P @ F.T + self.Q * dt
        return self.angle

    def update(self, angle: float) -> float:
        y = angle - self.x[0]
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
    (accelerometer tilt, compass) for the slow truth. tau 0.5 s at dt 1 ms gives a ~0.998.

    With `wrap_angle=True` the blend is done on the wrapped difference so +179 deg and -179 deg average to 180, not 0.
    """

    def __init__(self, tau: float, angle: float = 0.0, wrap_angle: bool = False):
        if tau < 0:
            raise ValueError("tau must be >= 0")
        self.tau = float(tau)
        self.angle = float(angle)
        self.wrap_angle = wrap_angle

    def coefficient(self, dt: float) -> float:
        return self.tau / (self.tau + dt)

    def update(self, rate: float, absolute_angle: float, dt: float) -> float:
        a = self.coefficient(dt)
        predicted = self.angle + rate * dt
        if self.wrap_angle:
            self.angle = _wrap(predicted + (1.0 - a) * _wrap(absolute_angle - predicted))
        else:
            self.angle = a * predicted + (1.0 - a) * absolute_angle
        return self.angle
