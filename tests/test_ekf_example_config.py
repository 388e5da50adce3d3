# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""docs/examples/ekf.yaml on the motion this robot really makes: a spin in place with the drive controller's
ramps. With robot_localization's default process noise (vyaw 0.02 per s) the Mahalanobis gate of 6 rejected about
half the odometry twists while the spin accelerated (the classic trap: too low a threshold, or too little
process noise, rejects real manoeuvres) and the fused heading ended 2.9 rad off. The example's process noise is
sized from the robot's acceleration limits instead; this test keeps it honest."""
import math

import numpy as np
import pytest

from viperdrive.estimation import Ekf, SensorInput, load_config

pytestmark = pytest.mark.unit

EXAMPLE = "docs/examples/ekf.yaml"
WHEEL_ACCEL = 1.0           # m/s^2, the drive controller's default max_rim_acceleration
SEPARATION = 0.152          # m, the default robot
ALPHA = 2 * WHEEL_ACCEL / SEPARATION     # rad/s^2 when both wheels accelerate in opposite directions


def spin_profile(dt=0.01, w_max=2.0, hold=2.0):
    """Yaw rate of a spin: ramp up at ALPHA, hold, ramp down, then the same the other way."""
    ramp = np.arange(0.0, w_max, ALPHA * dt)
    one = np.concatenate([ramp, np.full(int(hold / dt), w_max), ramp[::-1], np.zeros(20)])
    return np.concatenate([one, -one])


def test_example_config_tracks_a_spin_with_ramps_without_rejecting_odometry():
    cfg = load_config(EXAMPLE)
    odom = next(s for s in cfg.sensors if s.kind == "odom")
    ekf = Ekf(cfg.ekf_config())
    inp = SensorInput(odom)
    dt = 0.01
    rates = spin_profile(dt)
    twist_cov = np.diag([1e-4, 1e-4, 1e-6, 1e-6, 1e-6, 4e-4])
    pose_cov = np.diag([1e-3] * 6)
    yaw = 0.0
    outcomes = []
    for i, w in enumerate(rates):
        t = (i + 1) * dt
        yaw += w * dt
        q = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
        for m in inp.odometry(t, (0.0, 0.0, 0.0), q, pose_cov, (0.0, 0.0, 0.0), (0.0, 0.0, w), twist_cov):
            outcomes.append(ekf.process(m))
    rejected = outcomes.count("rejected")
    est_yaw = float(ekf.state[5])
    err = math.atan2(math.sin(est_yaw - yaw), math.cos(est_yaw - yaw))
    assert rejected == 0, (f"{rejected} of {len(outcomes)} odometry measurements rejected during ramps of "
                           f"{ALPHA:.1f} rad/s^2")
    assert abs(err) < 0.05, f"fused yaw {est_yaw:.3f} vs integrated {yaw:.3f} rad"
