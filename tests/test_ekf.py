# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The EKF: algebra against filterpy, consistency (NEES), lag handling, gating, dropout, 2-D mode, Jacobians."""
import logging
import math

import numpy as np
import pytest
from filterpy.kalman import KalmanFilter
from scipy.stats import chi2

from viperdrive.estimation import REJECTED, TOO_LATE, USED, VX, VYAW, YAW, Ekf, EkfConfig, Measurement, X, Y
from viperdrive.estimation import ekf as ekf_module
from viperdrive.estimation.ekf import PLANAR, planar_model, small_inverse, spatial_model

pytestmark = pytest.mark.unit


def meas(t, sensor, values: dict, variances: dict, threshold=math.inf, part="pose"):
    v = np.full(15, np.nan)
    R = np.zeros((15, 15))
    mask = np.zeros(15, dtype=bool)
    for i, val in values.items():
        v[i] = val
        R[i, i] = variances[i]
        mask[i] = True
    return Measurement(t, sensor, v, R, mask, threshold, part)


def numeric_jacobian(f, x, dt, eps=1e-6):
    J = np.zeros((len(x), len(x)))
    for i in range(len(x)):
        d = np.zeros(len(x))
        d[i] = eps
        J[:, i] = (f(x + d, dt)[0] - f(x - d, dt)[0]) / (2 * eps)
    return J


@pytest.mark.parametrize("model,n", [(spatial_model, 15), (planar_model, 8)])
def test_jacobian_matches_finite_differences(model, n):
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.normal(size=n) * 0.7
        _, F = model(x, 0.05)
        assert np.max(np.abs(numeric_jacobian(model, x, 0.05) - F)) < 1e-7


def test_planar_model_is_the_spatial_model_with_3d_variables_zero():
    rng = np.random.default_rng(4)
    x8 = rng.normal(size=8)
    x15 = np.zeros(15)
    x15[list(PLANAR)] = x8
    xn8, F8 = planar_model(x8, 0.1)
    xn15, F15 = spatial_model(x15, 0.1)
    assert np.allclose(xn15[list(PLANAR)], xn8, atol=1e-12)
    assert np.allclose(F15[np.ix_(PLANAR, PLANAR)], F8, atol=1e-12)
    # nothing in the planar block depends on a 3-D variable while those are zero
    others = [i for i in range(15) if i not in PLANAR]
    assert np.allclose(F15[np.ix_(PLANAR, others)], 0.0, atol=1e-12)


def test_linear_subproblem_matches_filterpy_to_1e9():
    """Straight-line motion along x: the x, vx, ax chain of the 15-state filter is a linear Kalman filter."""
    q = np.diag([0.05, 0.05, 0.06, 0.03, 0.03, 0.06, 0.025, 0.025, 0.04, 0.01, 0.01, 0.02, 0.01, 0.01, 0.015])
    cfg = EkfConfig(process_noise=q, initial_covariance=np.eye(15) * 0.5)
    ekf = Ekf(cfg)
    chain = [X, VX, 12]
    kf = KalmanFilter(dim_x=3, dim_z=1)
    kf.P = np.eye(3) * 0.5
    rng = np.random.default_rng(7)
    # first measurement initializes both filters the robot_localization way
    first = meas(0.0, "p", {X: 0.1}, {X: 0.04})
    ekf.process(first)
    kf.x = np.array([0.1, 0.0, 0.0])
    kf.P[0, 0] = 0.04
    t = 0.0
    for k in range(300):
        t += rng.uniform(0.005, 0.03)       # irregular sensor timing
        if k % 3 == 0:
            z, r, H = 0.5 * t + rng.normal(0, 0.1), 0.01, np.array([[1.0, 0.0, 0.0]])
            m = meas(t, "p", {X: z}, {X: r})
        else:
            z, r, H = 0.5 + rng.normal(0, 0.05), 0.0025, np.array([[0.0, 1.0, 0.0]])
            m = meas(t, "v", {VX: z}, {VX: r}, part="twist")
        dt = t - ekf.time_s
        F = np.array([[1, dt, 0.5 * dt * dt], [0, 1, dt], [0, 0, 1]])
        kf.predict(F=F, Q=q[np.ix_(chain, chain)] * dt)
        kf.update(np.array([z]), R=np.array([[r]]), H=H)
        assert ekf.process(m) == USED
        assert np.max(np.abs(ekf.state[chain] - kf.x)) < 1e-9
        assert np.max(np.abs(ekf.covariance[np.ix_(chain, chain)] - kf.P)) < 1e-9
    # and the rest of the state never moved
    assert np.all(ekf.state[[Y, YAW]] == 0.0)


def test_full_state_update_algebra_matches_filterpy():
    """The 15x15 predict/correct with the EKF's own Jacobian is filterpy's Kalman step with that F."""
    rng = np.random.default_rng(11)
    cfg = EkfConfig(initial_covariance=np.eye(15) * 0.3, initial_state=rng.normal(size=15) * 0.2)
    ekf = Ekf(cfg)
    ekf.initialized, ekf.time_s = True, 0.0
    kf = KalmanFilter(dim_x=15, dim_z=6)
    kf.x, kf.P = ekf.x.copy(), ekf.P.copy()
    t = 0.0
    for _ in range(50):
        dt = rng.uniform(0.01, 0.05)
        t += dt
        xpred, F = spatial_model(kf.x, dt)
        kf.P = F @ kf.P @ F.T + cfg.process_noise * dt
        kf.x = xpred
        idx = [X, Y, 5, VX, VYAW, 12]
        z = xpred[idx] + rng.normal(0, 0.05, 6)
        R = np.diag(rng.uniform(0.001, 0.01, 6))
        H = np.zeros((6, 15))
        H[range(6), idx] = 1.0
        kf.update(z, R=R, H=H)
        m = meas(t, "s", dict(zip(idx, z, strict=True)), dict(zip(idx, np.diag(R), strict=True)))
        assert ekf.process(m) == USED
        assert np.max(np.abs(ekf.x - kf.x)) < 1e-9
        assert np.max(np.abs(ekf.P - kf.P)) < 1e-9


def _simulate_consistent_run(seed, steps=150, dt=0.02):
    """Truth from the filter's own planar model plus process noise Q dt; measurements with noise R."""
    rng = np.random.default_rng(seed)
    Q = np.diag([1e-4, 1e-4, 1e-4, 0.02, 0.005, 0.02, 0.05, 0.05])
    cfgQ = np.zeros((15, 15))
    cfgQ[np.ix_(PLANAR, PLANAR)] = Q
    P0 = np.diag([0.01, 0.01, 0.01, 0.04, 0.01, 0.04, 0.1, 0.1])
    P0full = np.eye(15) * 1e-9
    P0full[np.ix_(PLANAR, PLANAR)] = P0
    x0 = np.array([0.0, 0.0, 0.3, 0.5, 0.0, 0.2, 0.0, 0.0])
    truth = x0 + rng.multivariate_normal(np.zeros(8), P0)
    init = np.zeros(15)
    init[list(PLANAR)] = x0
    ekf = Ekf(EkfConfig(process_noise=cfgQ, initial_covariance=P0full, initial_state=init, two_d_mode=True))
    ekf.initialized, ekf.time_s = True, 0.0
    L = np.linalg.cholesky(Q * dt)
    nees = []
    r_pose = np.array([0.02 ** 2, 0.02 ** 2, 0.03 ** 2])
    r_twist = np.array([0.02 ** 2, 0.03 ** 2])
    for k in range(1, steps + 1):
        truth, _ = planar_model(truth, dt)
        truth = truth + L @ rng.normal(size=8)
        t = k * dt
        tw = truth[[3, 5]] + rng.normal(size=2) * np.sqrt(r_twist)
        ekf.process(meas(t, "odom", {VX: tw[0], VYAW: tw[1]}, {VX: r_twist[0], VYAW: r_twist[1]}, part="twist"))
        if k % 5 == 0:
            p = truth[[0, 1, 2]] + rng.normal(size=3) * np.sqrt(r_pose)
            ekf.process(meas(t, "pose", {X: p[0], Y: p[1], YAW: p[2]},
                             {X: r_pose[0], Y: r_pose[1], YAW: r_pose[2]}))
        e = ekf.x - truth
        e[2] = (e[2] + math.pi) % (2 * math.pi) - math.pi
        nees.append(float(e @ np.linalg.solve(ekf.P, e)))
    return np.array(nees)


def test_nees_within_chi_square_bounds():
    runs = 40
    all_nees = np.array([_simulate_consistent_run(seed) for seed in range(runs)])
    n = 8
    lo, hi = chi2.ppf(0.005, runs * n) / runs, chi2.ppf(0.995, runs * n) / runs
    checked = all_nees[:, 9::10].mean(axis=0)          # 15 instants, each averaged over the runs
    inside = np.sum((checked > lo) & (checked < hi))
    assert inside >= 13, (checked, lo, hi)
    # and the time-averaged NEES is the state dimension within 15 %
    assert abs(all_nees[:, 20:].mean() - n) < 0.15 * n


def _stream(seed=5):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(1, 121):
        t = k * 0.02
        out.append(meas(t, "odom", {VX: 0.5 + rng.normal(0, 0.02), VYAW: 0.3 + rng.normal(0, 0.02)},
                        {VX: 4e-4, VYAW: 4e-4}, part="twist"))
        if k % 10 == 0:
            out.append(meas(t - 0.001, "pose", {X: 0.5 * t + rng.normal(0, 0.05), Y: rng.normal(0, 0.05)},
                            {X: 0.0025, Y: 0.0025}))
    return out


def test_lagged_measurement_rewind_equals_in_order_processing():
    cfg = EkfConfig(two_d_mode=True, smooth_lagged_data=True, history_length=1.0, initial_covariance=np.eye(15))
    stream = _stream()
    in_order = Ekf(cfg)
    for m in sorted(stream, key=lambda m: m.time_s):
        in_order.process(m)
    lagged = Ekf(cfg)
    # every pose reading arrives 0.1 s late, i.e. after five newer odometry readings
    arrival = sorted(stream, key=lambda m: m.time_s + (0.1 if m.sensor == "pose" else 0.0))
    outcomes = [lagged.process(m) for m in arrival]
    assert outcomes.count(TOO_LATE) == 0
    assert lagged.time_s == in_order.time_s
    assert np.allclose(lagged.state, in_order.state, atol=1e-12, rtol=0)
    assert np.allclose(lagged.covariance, in_order.covariance, atol=1e-12, rtol=0)
    # without smoothing the same arrival order gives a different (worse-informed) answer
    plain = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15)))
    for m in arrival:
        plain.process(m)
    assert not np.allclose(plain.state, in_order.state, atol=1e-6)


def test_measurement_older_than_history_is_counted_and_logged(caplog):
    cfg = EkfConfig(two_d_mode=True, smooth_lagged_data=True, history_length=0.2, initial_covariance=np.eye(15))
    ekf = Ekf(cfg)
    for m in _stream()[:60]:
        ekf.process(m)
    before = ekf.state.copy()
    old = meas(ekf.time_s - 0.5, "pose", {X: 3.0}, {X: 0.01})
    with caplog.at_level(logging.WARNING, logger="viperdrive.estimation"):
        assert ekf.process(old) == TOO_LATE
        assert ekf.process(meas(ekf.time_s - 0.6, "pose", {X: 3.0}, {X: 0.01})) == TOO_LATE
    assert ekf.sensors["pose"].too_late == 2 and ekf.too_late_total == 2
    assert "older than the history" in caplog.text
    assert np.array_equal(ekf.state, before)


def _turn_then_jump(threshold, jump_at=None):
    """Odometry drives straight, then a sharp 2 rad/s turn; an absolute position sensor is gated.

    Returns the filter, (t, outcome) per position fix, and (t, estimate x, y, true x, y) after each fix."""
    ekf = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15) * 1e-6))
    rng = np.random.default_rng(2)
    x = y = th = 0.0
    dt = 0.01
    outcomes = []
    track = []
    for k in range(1, 401):
        t = k * dt
        v = 0.5
        w = 2.0 if 1.5 <= t < 2.3 else 0.0
        x += v * dt * math.cos(th + w * dt / 2)
        y += v * dt * math.sin(th + w * dt / 2)
        th += w * dt
        ekf.process(meas(t, "odom", {VX: v + rng.normal(0, 0.01), VYAW: w + rng.normal(0, 0.01), 7: 0.0},
                         {VX: 1e-4, VYAW: 1e-4, 7: 1e-4}, part="twist"))
        if k % 10 == 0:
            px, py = x + rng.normal(0, 0.03), y + rng.normal(0, 0.03)
            if jump_at is not None and abs(t - jump_at) < 1e-9:
                px += 5.0
            outcomes.append((t, ekf.process(meas(t, "pose", {X: px, Y: py}, {X: 9e-4, Y: 9e-4}, threshold))))
            track.append((t, ekf.state[X], ekf.state[Y], x, y))
    return ekf, outcomes, track


def test_gating_accepts_a_sharp_turn_and_rejects_a_5m_jump():
    ekf, outcomes, track = _turn_then_jump(threshold=5.0, jump_at=2.0)   # the jump lands in the middle of the turn
    rejected = [t for t, o in outcomes if o == REJECTED]
    assert rejected == [pytest.approx(2.0)]
    assert ekf.sensors["pose"].rejected == 1
    assert ekf.sensors["pose"].used == len(outcomes) - 1
    # the estimate was not dragged towards the jump
    _, ungated, ungated_track = _turn_then_jump(threshold=math.inf, jump_at=2.0)
    assert all(o == USED for _, o in ungated)
    _, _, clean_track = _turn_then_jump(threshold=5.0)           # the same run without the glitch
    k = [i for i, row in enumerate(track) if abs(row[0] - 2.0) < 1e-9][0]

    def error(row):
        return math.hypot(row[1] - row[3], row[2] - row[4])

    def apart(a, b):
        return math.hypot(a[1] - b[1], a[2] - b[2])

    # right after the glitch: the ungated filter is pulled most of the 5 m towards it (4.3 m in x), the gated one
    # stays within 5 cm of the truth
    assert ungated_track[k][1] - ungated_track[k][3] > 4.0
    assert error(track[k]) < 0.05
    # at the end (2 s and 20 fixes later) the ungated run still carries 4 mm of the glitch; the gated one is the
    # glitch-free run to within 0.1 mm
    assert apart(ungated_track[-1], clean_track[-1]) > 2e-3
    assert apart(track[-1], clean_track[-1]) < 1e-4


def test_too_low_a_threshold_rejects_real_data():
    _, outcomes, _ = _turn_then_jump(threshold=0.3)
    assert sum(o == REJECTED for _, o in outcomes) > len(outcomes) // 3


def test_dropout_grows_covariance_and_recovers():
    ekf = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15) * 1e-6, sensor_timeout=0.1))
    ekf.register_sensor("pose", timeout_s=0.15)
    rng = np.random.default_rng(9)
    var_x = {}
    status = {}
    for k in range(1, 1001):
        t = k * 0.01
        ekf.process(meas(t, "odom", {VX: 0.4 + rng.normal(0, 0.01), VYAW: 0.0, 7: 0.0},
                         {VX: 1e-4, VYAW: 1e-4, 7: 1e-4}, part="twist"))
        dropout = 3.0 <= t < 6.0
        if k % 10 == 0 and not dropout:
            ekf.process(meas(t, "pose", {X: 0.4 * t + rng.normal(0, 0.02), Y: rng.normal(0, 0.02)},
                             {X: 4e-4, Y: 4e-4}))
        if k % 50 == 0:
            var_x[round(t, 2)] = ekf.covariance[X, X]
            status[round(t, 2)] = dict((n, s) for n, s, _ in ekf.status(t))["pose"]
    assert status[2.5] == "active" and status[4.0] == "stale" and status[8.0] == "active"
    during = [var_x[t] for t in sorted(var_x) if 3.0 <= t <= 5.5]
    # covariance must grow while the sensor is silent
    assert all(b > a for a, b in zip(during, during[1:], strict=False))
    assert var_x[5.5] > 20 * var_x[2.5]
    assert var_x[8.0] < 2 * var_x[2.5], "covariance must come back once the sensor returns"


def test_time_until_uncertain_and_dead_reckoning_flag():
    ekf = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15) * 1e-4))
    ekf.process(meas(0.0, "odom", {VX: 0.5}, {VX: 1e-4}, part="twist"))
    t_short = ekf.time_until_uncertain(0.1)
    t_long = ekf.time_until_uncertain(0.5)
    assert 0 < t_short < t_long < math.inf
    _, P = ekf.predicted(t_short + 0.1)
    assert math.sqrt(max(np.linalg.eigvalsh(P[:2, :2]))) > 0.1
    assert ekf.time_until_uncertain(1e-6) == 0.0
    assert not ekf.dead_reckoning(0.01) and ekf.dead_reckoning(1.0)


def test_yaw_innovation_is_wrapped():
    ekf = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15)))
    ekf.process(meas(0.0, "imu", {YAW: math.pi - 0.01}, {YAW: 0.01}))
    ekf.process(meas(0.01, "imu", {YAW: -math.pi + 0.01}, {YAW: 0.01}))
    # the two readings are 0.02 rad apart across the wrap, so the estimate stays near +-pi, not near 0
    assert abs(abs(ekf.state[YAW]) - math.pi) < 0.02


def test_covariance_stays_symmetric_positive_definite_under_bad_covariances():
    ekf = Ekf(EkfConfig())
    rng = np.random.default_rng(0)
    for k in range(200):
        idx = rng.choice(15, size=4, replace=False)
        # zero and negative variances, as real drivers publish: repaired, never a singular S
        ekf.process(meas(k * 0.01, "s", {int(i): rng.normal() for i in idx},
                         {int(i): rng.choice([0.0, -0.1, 1e-12, 0.5]) for i in idx}))
        P = ekf.covariance
        assert np.allclose(P, P.T, atol=0)
        assert np.linalg.eigvalsh(P).min() > 0


def test_dynamic_process_noise_scales_pose_noise_with_speed():
    def growth(v):
        ekf = Ekf(EkfConfig(two_d_mode=True, dynamic_process_noise=True))
        ekf.process(meas(0.0, "o", {VX: v}, {VX: 1e-9}, part="twist"))
        _, P = ekf.predicted(1.0)
        return P[Y, Y]
    assert growth(0.0) < 1e-8         # standing still: the pose error stops growing
    assert growth(1.0) == pytest.approx(0.05 * 1.0, rel=0.05)
    assert growth(2.0) == pytest.approx(4 * growth(1.0), rel=0.05)


def test_reading_older_than_the_first_one_is_replayed_from_the_start():
    cfg = EkfConfig(two_d_mode=True, smooth_lagged_data=True, history_length=1.0, initial_covariance=np.eye(15))
    stream = _stream()[:30]
    first_pose = meas(0.0, "pose", {X: 0.0, Y: 0.0, YAW: 0.0}, {X: 1e-3, Y: 1e-3, YAW: 1e-3})
    in_order = Ekf(cfg)
    for m in [first_pose] + stream:
        in_order.process(m)
    late = Ekf(cfg)
    for m in stream[:8] + [first_pose] + stream[8:]:
        late.process(m)
    assert late.sensors["pose"].too_late == 0
    assert np.allclose(late.state, in_order.state, atol=1e-12, rtol=0)
    assert np.allclose(late.covariance, in_order.covariance, atol=1e-12, rtol=0)
    # a reading that selects nothing the filter carries does not start it
    fresh = Ekf(EkfConfig(two_d_mode=True))
    assert fresh.process(meas(0.0, "alt", {2: 1.0}, {2: 0.1})) == "nothing" and not fresh.initialized


def test_a_batch_is_processed_in_timestamp_order():
    cfg = EkfConfig(two_d_mode=True, initial_covariance=np.eye(15))
    stream = _stream()[:40]
    in_order = Ekf(cfg)
    for m in sorted(stream, key=lambda m: m.time_s):
        in_order.process(m)
    shuffled = list(stream)
    np.random.default_rng(3).shuffle(shuffled)
    batched = Ekf(cfg)
    outcomes = batched.process_batch(shuffled)
    assert outcomes.count(USED) == len(stream)
    assert np.array_equal(batched.state, in_order.state) and np.array_equal(batched.covariance, in_order.covariance)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_small_inverse_is_numpys_inverse_and_refuses_a_singular_matrix(k):
    rng = np.random.default_rng(k)
    for floor in (1e-9, 1e-3, 1.0):
        for _ in range(50):
            A = rng.normal(size=(k, k))
            S = A @ A.T + np.eye(k) * floor
            ref = np.linalg.inv(S)
            assert np.abs(small_inverse(S) - ref).max() <= 1e-8 * np.abs(ref).max()
    assert small_inverse(np.zeros((k, k))) is None
    if k > 1:
        assert small_inverse(np.ones((k, k))) is None      # rank one


def test_short_covariance_update_and_joseph_form_give_the_same_filter():
    """The short form P - K H P where the reading is not far more certain than the estimate, the Joseph form where it
    is (JOSEPH_BELOW): the same estimates as the Joseph form everywhere, to rounding."""
    def run(joseph_below):
        ekf = Ekf(EkfConfig(two_d_mode=True, initial_covariance=np.eye(15) * 0.1))
        rng = np.random.default_rng(7)
        old = ekf_module.JOSEPH_BELOW
        ekf_module.JOSEPH_BELOW = joseph_below
        try:
            for k in range(300):
                ekf.process(meas(k * 0.01, "pose", {X: 0.003 * k + rng.normal(0, 0.05), Y: rng.normal(0, 0.05),
                                                    YAW: rng.normal(0, 0.02)}, {X: 0.0025, Y: 0.0025, YAW: 4e-4}))
                ekf.process(meas(k * 0.01 + 0.005, "odom", {VX: 0.3, VYAW: 0.0}, {VX: 1e-4, VYAW: 1e-4}))
        finally:
            ekf_module.JOSEPH_BELOW = old
        return ekf.state, ekf.covariance
    x_short, P_short = run(0.0)              # never Joseph
    x_joseph, P_joseph = run(math.inf)       # always Joseph
    assert np.abs(x_short - x_joseph).max() < 1e-12
    assert np.abs(P_short - P_joseph).max() < 1e-12
    assert np.linalg.eigvalsh(P_short).min() > 0
