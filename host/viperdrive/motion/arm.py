# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Planar manipulator kinematics (docs/estimation.md, "Arm kinematics"): n-link forward kinematics and Jacobian,
analytic 2R IK with both elbow branches, damped-least-squares IK from the current joint state. Failing to reach is
a result, not an exception.

Joint i rotates about z (CCW positive, REP-103); link i has length lengths[i]; all joint angles are relative to the
previous link, q = 0 is the arm stretched along the base x axis.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..transforms import wrap_angle


@dataclass(frozen=True)
class IK2RResult:
    """Both analytic solutions of a 2R arm, or why there is none.

    elbow_up: q2 <= 0, the elbow on the counter-clockwise side of the base-to-target line (above it for a target to
    the right of the base). elbow_down: q2 >= 0, the mirror image. At the edge of the workspace they coincide."""
    reachable: bool
    elbow_up: tuple[float, float] | None
    elbow_down: tuple[float, float] | None
    reason: str = ""

    def branch(self, name: str) -> tuple[float, float] | None:
        if name not in ("up", "down"):
            raise ValueError("branch is 'up' or 'down'")
        return self.elbow_up if name == "up" else self.elbow_down


def ik_2r(l1: float, l2: float, x: float, y: float, tol: float = 1e-9) -> IK2RResult:
    """Analytic inverse kinematics of a planar 2R arm for the end point (x, y)."""
    if l1 <= 0 or l2 <= 0:
        raise ValueError("link lengths must be positive")
    r2 = x * x + y * y
    r = math.sqrt(r2)
    reach, inner = l1 + l2, abs(l1 - l2)
    if r > reach * (1 + tol) or r < inner * (1 - tol) - tol:
        where = "beyond" if r > reach else "inside"
        limit = reach if r > reach else inner
        return IK2RResult(False, None, None,
                          f"unreachable: target at {r:.6g} m is {where} the workspace boundary {limit:.6g} m")
    # law of cosines; clip because a target on the boundary gives |c2| a rounding error above 1
    c2 = max(-1.0, min(1.0, (r2 - l1 * l1 - l2 * l2) / (2 * l1 * l2)))
    reason = ""
    if r < 1e-12:
        # l1 == l2 and the target is the base: every q1 works; report q1 = 0
        reason = "target at the base: q1 is arbitrary (0 reported)"
    sols = []
    for q2 in (-math.acos(c2), math.acos(c2)):
        q1 = math.atan2(y, x) - math.atan2(l2 * math.sin(q2), l1 + l2 * math.cos(q2)) if r >= 1e-12 else 0.0
        sols.append((wrap_angle(q1), q2))
    return IK2RResult(True, sols[0], sols[1], reason)


@dataclass(frozen=True)
class IKResult:
    """Numeric IK outcome. `ok` means converged and within the joint limits; otherwise `reason` says why, and q is
    the best configuration found (the caller decides whether to move there or stay)."""
    converged: bool
    q: np.ndarray
    error: float
    iterations: int
    within_limits: bool = True
    violations: tuple = field(default_factory=tuple)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.converged and self.within_limits


class PlanarArm:
    """An n-link planar arm with optional joint limits [(lo, hi), ...] in rad."""

    def __init__(self, lengths, limits=None):
        self.lengths = np.array(lengths, dtype=float)
        if self.lengths.ndim != 1 or len(self.lengths) == 0 or np.any(self.lengths <= 0):
            raise ValueError("lengths: one positive length per link")
        self.n = len(self.lengths)
        if limits is not None:
            limits = [tuple(map(float, lim)) for lim in limits]
            if len(limits) != self.n or any(lo > hi for lo, hi in limits):
                raise ValueError("limits: one (low, high) pair per joint with low <= high")
        self.limits = limits

    @property
    def reach(self) -> float:
        return float(self.lengths.sum())

    def _q(self, q):
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n,):
            raise ValueError(f"q must have {self.n} joint angles")
        return q

    def joint_positions(self, q) -> np.ndarray:
        """(n+1, 2): the base, every joint and the end point. Each link adds its own transform: O(n)."""
        phi = np.cumsum(self._q(q))
        pts = np.zeros((self.n + 1, 2))
        pts[1:, 0] = np.cumsum(self.lengths * np.cos(phi))
        pts[1:, 1] = np.cumsum(self.lengths * np.sin(phi))
        return pts

    def fk(self, q) -> np.ndarray:
        """End-effector pose (x, y, phi), phi the orientation of the last link."""
        q = self._q(q)
        x, y = self.joint_positions(q)[-1]
        return np.array([x, y, wrap_angle(float(q.sum()))])

    def jacobian(self, q) -> np.ndarray:
        """3 x n: rows d(x, y, phi)/dq. Column i: z x (p_end - p_joint_i), and 1 for phi."""
        pts = self.joint_positions(q)
        end = pts[-1]
        J = np.ones((3, self.n))
        J[0] = -(end[1] - pts[:-1, 1])
        J[1] = end[0] - pts[:-1, 0]
        return J

    def check_limits(self, q) -> tuple:
        """((joint, value, low, high), ...) for every joint outside its limits."""
        if self.limits is None:
            return ()
        return tuple((i, float(v), lo, hi) for i, (v, (lo, hi)) in enumerate(zip(q, self.limits, strict=True))
                     if v < lo - 1e-12 or v > hi + 1e-12)

    def ik_2r(self, x: float, y: float, branch: str = "up") -> IKResult:
        """Analytic IK for a 2-link arm on the chosen elbow branch, joint limits checked afterwards."""
        if self.n != 2:
            raise ValueError("ik_2r needs a 2-link arm")
        sol = ik_2r(self.lengths[0], self.lengths[1], x, y)
        if not sol.reachable:
            return IKResult(False, np.full(2, np.nan), math.inf, 0, True, (), sol.reason)
        q = np.array(sol.branch(branch))
        viol = self.check_limits(q)
        reason = sol.reason or ("" if not viol else "outside joint limits: " + _limits_text(viol))
        return IKResult(True, q, float(np.hypot(*(self.fk(q)[:2] - (x, y)))), 0, not viol, viol, reason)

    def ik_dls(self, target, q0, damping: float = 0.05, tol: float = 1e-6, max_iterations: int = 300,
               max_step: float = 0.2, orientation: bool = False) -> IKResult:
        """Damped least squares, dq = J^T (J J^T + lambda^2 I)^-1 e, from the current joints q0.

        Steps are limited to `max_step` rad so the solution stays on q0's branch instead of jumping across; the
        damping keeps steps bounded at singularities (arm stretched out or folded). Position only unless
        `orientation` (then target is (x, y, phi)). Joint limits are checked afterwards, not enforced."""
        q = self._q(q0).copy()
        target = np.asarray(target, dtype=float)
        rows = 3 if orientation else 2
        if target.shape != (rows,):
            raise ValueError(f"target must be {'(x, y, phi)' if orientation else '(x, y)'}")
        lam2 = damping * damping
        best_q, best_err = q.copy(), math.inf
        it = 0
        while it < max_iterations:
            it += 1
            pose = self.fk(q)
            e = target - pose[:rows]
            if orientation:
                e[2] = wrap_angle(e[2])
            err = float(np.linalg.norm(e))
            if err < best_err:
                best_q, best_err = q.copy(), err
            if err < tol:
                break
            J = self.jacobian(q)[:rows]
            dq = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(rows), e)
            step = float(np.max(np.abs(dq)))
            if step > max_step:
                dq *= max_step / step
            if step < 1e-12:
                break                       # stuck: no direction reduces the error (e.g. target out of reach)
            q = q + dq
        converged = best_err < tol
        viol = self.check_limits(best_q)
        if converged:
            reason = "" if not viol else "outside joint limits: " + _limits_text(viol)
        elif np.hypot(*target[:2]) > self.reach:
            reason = f"did not converge: target is {np.hypot(*target[:2]) - self.reach:.4g} m beyond the reach"
        else:
            reason = f"did not converge in {it} iterations (error {best_err:.3g})"
        return IKResult(converged, best_q, best_err, it, not viol, viol, reason)


def _limits_text(viol) -> str:
    return ", ".join(f"joint {i} = {v:.4g} rad not in [{lo:.4g}, {hi:.4g}]" for i, v, lo, hi in viol)
