# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Host odometry from the wheel positions in rad (Board.read()'s BoardState.position), with covariances a
navigation stack can use. Like wpimath's DifferentialDriveOdometry and diff_drive_controller's update_from_pos,
it takes wheel positions, not encoder counts: Board is the one place counts become radians (and where the int32
counter wrap is undone). counts_per_rev enters only the quantization term of the covariances.

Pose: per step sl = r_l * dphi_l, sr = r_r * dphi_r, ds = (sl + sr)/2, dtheta = (sr - sl)/b, integrated along the
exact arc (the midpoint formula when |dtheta| is tiny, where the arc formula divides by ~0). An optional gyro
heading replaces the encoders' dtheta (its drift is an order of magnitude below wheel slip).

Twist: from the board's own velocity estimate (rad/s per wheel), not from differentiated positions (at 1024 CPR
and 100 Hz a wheel moves 0 or 1 count per period at low speed, so a difference quotient jumps between 0 and
twice the speed: noise, not velocity) and not a lagging rolling mean.

Covariance model (docs/host.md, "Covariance model"), never zero:
- each wheel's travel in one step has variance q^2/12 (one count of quantization, q = 2*pi*r/cpr; only when the
  wheel moved, so a robot standing still does not grow) plus k*|s| (Chong & Kleeman 1997 slip model:
  variance proportional to the distance rolled, k = odometry.slip_variance_per_meter);
- propagated through the Jacobians of the midpoint model: P' = F P F^T + G Q G^T;
- with a gyro: heading variance grows by gyro_variance_rate * dt per step instead;
- twist: per-wheel speed variance (velocity_slip_ratio * |rim speed|)^2 + (q / velocity_window)^2 / 12,
  mapped through the forward kinematics;
- z, roll, pitch (and vy, vz, wx, wy) get planar_variance: known to be ~0 by the planar model, but not 0, so the
  6x6 matrices stay positive definite.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ..robot.config import RobotConfig
from ..transforms import wrap_angle
from .kinematics import wheels_to_twist

ARC_EPS = 1e-6      # rad: below this |dtheta| the arc formula loses digits; the midpoint formula is exact enough


wrap_pi = wrap_angle     # angle to [-pi, pi); the name callers of this module use


def integrate_arc(x: float, y: float, theta: float, ds: float, dtheta: float) -> tuple[float, float, float]:
    """Advance (x, y, theta) by a circular arc of length ds turning by dtheta; theta returned wrapped."""
    if abs(dtheta) < ARC_EPS:
        return integrate_midpoint(x, y, theta, ds, dtheta)
    radius = ds / dtheta
    t1 = theta + dtheta
    return (x + radius * (math.sin(t1) - math.sin(theta)), y - radius * (math.cos(t1) - math.cos(theta)),
            wrap_pi(t1))


def integrate_midpoint(x: float, y: float, theta: float, ds: float, dtheta: float) -> tuple[float, float, float]:
    """Advance (x, y, theta) by ds along the mean heading of the step (second order); theta returned wrapped."""
    mid = theta + dtheta / 2.0
    return x + ds * math.cos(mid), y + ds * math.sin(mid), wrap_pi(theta + dtheta)


def integrate_euler(x, y, theta, ds, dtheta):
    """The naive first-order step (for comparison in tests: O(dt^2) local error)."""
    return x + ds * math.cos(theta), y + ds * math.sin(theta), wrap_pi(theta + dtheta)


class Odometry:
    """update(pos_l, pos_r, vel_l, vel_r, stamp, gyro_yaw=None) once per loop tick.

    pos: wheel positions in rad (BoardState.position: continuous, only their change is used); vel: the board's
    wheel speed estimate in rad/s (BoardState.velocity); stamp: host monotonic seconds; gyro_yaw: an absolute
    heading in rad from a gyro (optional; only its change is used). counts_per_rev (the config's or the board's
    HELLO, Board.counts_per_rev) sets the size of one count for the quantization variance only.
    """

    def __init__(self, config: RobotConfig | None = None, counts_per_rev: int | None = None):
        self.config = config if config is not None else RobotConfig()
        cpr = counts_per_rev if counts_per_rev is not None else self.config.counts_per_rev
        if cpr is None:
            raise ValueError("counts_per_rev is unknown: put it in the robot file or pass the board's "
                             "(Board.counts_per_rev after configure())")
        self.counts_per_rev = int(cpr)
        c = self.config
        self.separation = c.effective_separation
        # m of rim travel per count: the quantization of the positions (covariances only)
        self.left_per_count = 2.0 * math.pi * c.left_radius / self.counts_per_rev
        self.right_per_count = 2.0 * math.pi * c.right_radius / self.counts_per_rev
        self._planar = c.odometry.planar_variance
        self.reset()

    def reset(self, x: float = 0.0, y: float = 0.0, theta: float = 0.0) -> None:
        """Set the pose; the next update() takes its positions as the new baseline (no jump)."""
        self.x, self.y, self.theta = float(x), float(y), wrap_pi(theta)
        self.v = 0.0
        self.w = 0.0
        self.distance = 0.0
        self.stamp: float | None = None
        self._positions: tuple[float, float] | None = None     # rad, the last update's
        self._gyro: float | None = None
        q2 = max(self.left_per_count, self.right_per_count) ** 2 / 12.0
        # the starting pose is known to one count's quantization, not exactly: P stays positive definite. The 3x3
        # pose and 2x2 twist covariances are kept as their distinct entries in floats (p00 p01 p02 p11 p12 p22,
        # t00 t01 t11): a loop updates them every cycle, and numpy's per-call cost is most of a 3x3 product
        self._p = (q2, 0.0, 0.0, q2, 0.0, 2.0 * q2 / self.separation ** 2)
        self._t = (q2, 0.0, q2 / self.separation ** 2)

    def rebase(self) -> None:
        """Forget the position baseline (after the board zeroed its encoders or was re-plugged); pose is kept."""
        self._positions = None
        self._gyro = None

    def update(self, pos_l: float, pos_r: float, vel_l: float, vel_r: float, stamp: float,
               gyro_yaw: float | None = None) -> tuple[float, float, float]:
        """Integrate one step from the wheel positions (rad); returns the pose (x, y, theta)."""
        c = self.config
        rl, rr = c.left_radius, c.right_radius
        if self._positions is None:
            self._positions = (float(pos_l), float(pos_r))
            self._gyro = gyro_yaw
        else:
            dl = pos_l - self._positions[0]         # rad turned by each wheel in this step
            dr = pos_r - self._positions[1]
            self._positions = (float(pos_l), float(pos_r))
            sl = dl * rl
            sr = dr * rr
            ds = (sl + sr) / 2.0
            dth_enc = (sr - sl) / self.separation
            dt = 0.0 if self.stamp is None else max(0.0, stamp - self.stamp)
            if gyro_yaw is not None and self._gyro is not None:
                dth = wrap_pi(gyro_yaw - self._gyro)
                gyro_var = c.odometry.gyro_variance_rate * dt
            else:
                dth = dth_enc
                gyro_var = None
            self._gyro = gyro_yaw
            self._propagate(ds, dth, sl, sr, dl, dr, gyro_var)
            self.x, self.y, self.theta = integrate_arc(self.x, self.y, self.theta, ds, dth)
            self.distance += abs(ds)
        self.stamp = stamp
        self._set_twist(vel_l, vel_r, rl, rr)
        return self.x, self.y, self.theta

    def _propagate(self, ds, dth, sl, sr, dl, dr, gyro_var):
        k = self.config.odometry.slip_variance_per_meter
        var_l = k * abs(sl) + (self.left_per_count ** 2 / 12.0 if dl else 0.0)
        var_r = k * abs(sr) + (self.right_per_count ** 2 / 12.0 if dr else 0.0)
        b = self.separation
        m = self.theta + dth / 2.0
        cm, sm = math.cos(m), math.sin(m)
        if gyro_var is None:
            # inputs (sl, sr): x,y,theta Jacobian G of the midpoint model
            h = ds / (2.0 * b)
            g00, g01 = 0.5 * cm + h * sm, 0.5 * cm - h * sm
            g10, g11 = 0.5 * sm - h * cm, 0.5 * sm + h * cm
            g20, g21 = -1.0 / b, 1.0 / b
            q0, q1 = var_l, var_r
        else:
            # inputs (ds, dtheta): distance from the wheels, heading change from the gyro
            g00, g01 = cm, -0.5 * ds * sm
            g10, g11 = sm, 0.5 * ds * cm
            g20, g21 = 0.0, 1.0
            q0, q1 = (var_l + var_r) / 4.0, gyro_var
        # P' = F P F^T + G diag(q) G^T, written out for F = [[1, 0, fa], [0, 1, fb], [0, 0, 1]] (the midpoint
        # model's Jacobian in the pose) and a symmetric P
        fa, fb = -ds * sm, ds * cm
        p00, p01, p02, p11, p12, p22 = self._p
        self._p = (p00 + 2.0 * fa * p02 + fa * fa * p22 + g00 * q0 * g00 + g01 * q1 * g01,
                   p01 + fa * p12 + fb * p02 + fa * fb * p22 + g00 * q0 * g10 + g01 * q1 * g11,
                   p02 + fa * p22 + g00 * q0 * g20 + g01 * q1 * g21,
                   p11 + 2.0 * fb * p12 + fb * fb * p22 + g10 * q0 * g10 + g11 * q1 * g11,
                   p12 + fb * p22 + g10 * q0 * g20 + g11 * q1 * g21,
                   p22 + g20 * q0 * g20 + g21 * q1 * g21)

    def _set_twist(self, vel_l, vel_r, rl, rr):
        vl = vel_l * rl
        vr = vel_r * rr
        b = self.separation
        self.v, self.w = wheels_to_twist(vl, vr, wheel_separation=b, wheel_radius=1.0)     # rim speeds in, so radius 1
        n = self.config.odometry
        q = max(self.left_per_count, self.right_per_count)
        quant = (q / n.velocity_window) ** 2 / 12.0
        var_l = (n.velocity_slip_ratio * vl) ** 2 + quant
        var_r = (n.velocity_slip_ratio * vr) ** 2 + quant
        # J diag(var) J^T for J = [[0.5, 0.5], [-1/b, 1/b]]: (v, w) from the rim speeds
        self._t = (0.25 * var_l + 0.25 * var_r, (var_r - var_l) / (2.0 * b), (var_l + var_r) / (b * b))

    # ---- outputs ----
    @property
    def pose(self) -> tuple[float, float, float]:
        return self.x, self.y, self.theta

    @property
    def twist(self) -> tuple[float, float]:
        """(v m/s, w rad/s) in base_link."""
        return self.v, self.w

    @property
    def pose_covariance_xytheta(self) -> np.ndarray:
        p00, p01, p02, p11, p12, p22 = self._p
        return np.array([[p00, p01, p02], [p01, p11, p12], [p02, p12, p22]])

    @property
    def pose_covariance(self) -> np.ndarray:
        """6x6 over (x, y, z, roll, pitch, yaw), row-major as in nav_msgs/Odometry."""
        return np.array(self.pose_covariance_values()).reshape(6, 6)

    @property
    def twist_covariance(self) -> np.ndarray:
        """6x6 over (vx, vy, vz, wx, wy, wz) in base_link."""
        return np.array(self.twist_covariance_values()).reshape(6, 6)

    def pose_covariance_values(self) -> list[float]:
        """pose_covariance as 36 floats, row-major (nav_msgs/Odometry's array), without numpy."""
        p00, p01, p02, p11, p12, p22 = self._p
        z = self._planar
        return [p00, p01, 0.0, 0.0, 0.0, p02,
                p01, p11, 0.0, 0.0, 0.0, p12,
                0.0, 0.0, z, 0.0, 0.0, 0.0,
                0.0, 0.0, 0.0, z, 0.0, 0.0,
                0.0, 0.0, 0.0, 0.0, z, 0.0,
                p02, p12, 0.0, 0.0, 0.0, p22]

    def twist_covariance_values(self) -> list[float]:
        """twist_covariance as 36 floats, row-major, without numpy."""
        t00, t01, t11 = self._t
        z = self._planar
        return [t00, 0.0, 0.0, 0.0, 0.0, t01,
                0.0, z, 0.0, 0.0, 0.0, 0.0,
                0.0, 0.0, z, 0.0, 0.0, 0.0,
                0.0, 0.0, 0.0, z, 0.0, 0.0,
                0.0, 0.0, 0.0, 0.0, z, 0.0,
                t01, 0.0, 0.0, 0.0, 0.0, t11]


def lint_covariance(matrix: npt.ArrayLike, name: str = "covariance", huge: float = 1e3,
                    tiny: float = 1e-15) -> list[str]:
    """Warnings about a covariance matrix (6x6 or any square): zero/tiny or huge diagonal entries, asymmetry,
    non-finite values, and not being positive definite. An empty list means it looks usable."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim == 1 and int(round(math.sqrt(m.size))) ** 2 == m.size:
        n = int(round(math.sqrt(m.size)))
        m = m.reshape(n, n)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        return [f"{name}: not a square matrix (shape {m.shape})"]
    if not np.all(np.isfinite(m)):
        return [f"{name}: contains NaN or infinity"]
    warnings = []
    diag = np.diag(m)
    for i, d in enumerate(diag):
        if d <= 0.0:
            warnings.append(f"{name}[{i},{i}] = {d:g}: zero or negative variance (a filter will trust it "
                            f"infinitely)")
        elif d < tiny:
            warnings.append(f"{name}[{i},{i}] = {d:g}: variance below {tiny:g}, effectively zero")
        elif d > huge:
            warnings.append(f"{name}[{i},{i}] = {d:g}: variance above {huge:g} (a sentinel, not a measurement?)")
    if not np.allclose(m, m.T, rtol=1e-9, atol=1e-15):
        warnings.append(f"{name}: not symmetric")
    try:
        np.linalg.cholesky((m + m.T) / 2.0)
    except np.linalg.LinAlgError:
        warnings.append(f"{name}: not positive definite (smallest eigenvalue "
                        f"{float(np.min(np.linalg.eigvalsh((m + m.T) / 2.0))):g})")
    return warnings


__all__ = ["Odometry", "lint_covariance", "wrap_pi", "integrate_arc", "integrate_midpoint", "integrate_euler"]
