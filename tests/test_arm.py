# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Planar arm: FK/Jacobian, analytic 2R IK branches and boundary, DLS IK at and near singularities, limits."""
import math

import numpy as np
import pytest

from viperdrive.motion.arm import PlanarArm, ik_2r

pytestmark = pytest.mark.unit


def test_fk_and_jacobian_against_finite_differences():
    arm = PlanarArm([0.3, 0.25, 0.1])
    q = np.array([0.3, -0.7, 1.1])
    pts = arm.joint_positions(q)
    assert np.allclose(pts[1], [0.3 * math.cos(0.3), 0.3 * math.sin(0.3)])
    assert arm.fk(q)[2] == pytest.approx(0.7)
    J = arm.jacobian(q)
    eps = 1e-7
    for i in range(3):
        d = np.zeros(3)
        d[i] = eps
        assert np.allclose((arm.fk(q + d) - arm.fk(q - d)) / (2 * eps), J[:, i], atol=1e-7)


def test_2r_both_branches_reach_the_target():
    l1, l2, x, y = 0.4, 0.3, 0.5, 0.2
    sol = ik_2r(l1, l2, x, y)
    assert sol.reachable
    arm = PlanarArm([l1, l2])
    for q in (sol.elbow_up, sol.elbow_down):
        assert np.allclose(arm.fk(q)[:2], [x, y], atol=1e-12)
    assert sol.elbow_up[1] < 0 < sol.elbow_down[1]
    # elbow up: the elbow lies on the counter-clockwise (upper) side of the base-target line
    elbow = arm.joint_positions(sol.elbow_up)[1]
    assert x * elbow[1] - y * elbow[0] > 0


def test_2r_boundary_clips_and_out_of_reach_is_a_result():
    sol = ik_2r(0.4, 0.3, 0.7 * math.cos(0.5), 0.7 * math.sin(0.5))      # exactly stretched: acos arg ~1 + 1e-16
    assert sol.reachable and sol.elbow_up[1] == pytest.approx(0.0, abs=1e-7)
    assert sol.elbow_up == pytest.approx(sol.elbow_down, abs=1e-7) and sol.elbow_up[0] == pytest.approx(0.5)
    far = ik_2r(0.4, 0.3, 0.71, 0.0)
    assert not far.reachable and far.elbow_up is None and "beyond" in far.reason
    near = ik_2r(0.4, 0.3, 0.05, 0.0)
    assert not near.reachable and "inside" in near.reason
    base = ik_2r(0.3, 0.3, 0.0, 0.0)
    assert base.reachable and "arbitrary" in base.reason and abs(base.elbow_up[1]) == pytest.approx(math.pi)
    r = PlanarArm([0.4, 0.3]).ik_2r(1.0, 0.0)
    assert not r.converged and not r.ok and "unreachable" in r.reason


def test_2r_limits_checked_after_ik():
    arm = PlanarArm([0.4, 0.3], limits=[(-math.pi, math.pi), (0.0, 2.5)])
    up = arm.ik_2r(0.5, 0.2, "up")
    down = arm.ik_2r(0.5, 0.2, "down")
    assert up.converged and not up.within_limits and not up.ok and "joint 1" in up.reason
    assert down.ok


def test_dls_converges_from_current_state_and_stays_on_its_branch():
    arm = PlanarArm([0.4, 0.3])
    sol = ik_2r(0.4, 0.3, 0.45, 0.25)
    for branch in ("up", "down"):
        q_now = np.array(sol.branch(branch)) + [0.15, -0.1 if branch == "up" else 0.1]
        r = arm.ik_dls([0.45, 0.25], q_now, tol=1e-9)
        assert r.ok and r.error < 1e-9
        assert np.allclose(r.q, sol.branch(branch), atol=1e-6), "DLS must not jump to the other elbow branch"


def test_dls_at_singularity_is_bounded_and_unreachable_is_a_result():
    arm = PlanarArm([0.4, 0.3, 0.2])
    # start stretched out (singular Jacobian): damping still gives a finite step and the solve succeeds
    r = arm.ik_dls([0.5, 0.3], np.zeros(3), tol=1e-8)
    assert r.ok and np.allclose(arm.fk(r.q)[:2], [0.5, 0.3], atol=1e-8)
    # out of reach: no exception, not converged, the best is the arm stretched towards the target
    far = arm.ik_dls([1.2, 0.5], np.array([0.1, 0.2, -0.1]), max_iterations=500)
    assert not far.converged and not far.ok and "beyond the reach" in far.reason
    # within 1 % of the geometric minimum distance (damping slows the last approach to the stretched pose)
    assert far.error == pytest.approx(math.hypot(1.2, 0.5) - 0.9, rel=0.01)
    end = arm.fk(far.q)
    assert np.allclose(far.q[1:], 0.0, atol=0.1) and math.atan2(end[1], end[0]) == pytest.approx(
        math.atan2(0.5, 1.2), abs=0.01)
    assert np.all(np.isfinite(far.q))


def test_dls_with_orientation_and_limits_reported():
    arm = PlanarArm([0.4, 0.3, 0.2], limits=[(-1.0, 1.0), (-1.0, 1.0), (-0.1, 0.1)])
    r = arm.ik_dls([0.5, 0.3, 1.2], np.array([0.2, 0.3, 0.2]), orientation=True, tol=1e-8)
    assert r.converged and abs(arm.fk(r.q)[2] - 1.2) < 1e-7
    assert not r.within_limits and 2 in [v[0] for v in r.violations] and "joint 2" in r.reason
    with pytest.raises(ValueError):
        arm.ik_dls([0.5, 0.3], np.zeros(3), orientation=True)
