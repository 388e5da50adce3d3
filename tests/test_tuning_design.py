# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""viperdrive.tuning.design against numbers worked out by hand (the arithmetic is in the comments) and against
closed forms of the model it simulates."""
from __future__ import annotations

import math

import pytest

from viperdrive.errors import BadValue
from viperdrive.shared import params as PARAMS
from viperdrive.shared.stepmetrics import step_metrics
from viperdrive.tuning import design as D

pytestmark = pytest.mark.unit

# kS 0.15, kV 0.05, kA 0.0013 at 500 Hz, 4096 counts/rev, vel_tau 10 ms, PWM 20 kHz, max_duty 1
M = D.MotorModel(0.15, 0.05, 0.0013, 500, 4096)


def test_model_and_half_rule():
    assert M.gain == pytest.approx(20.0) and M.tau_motor == pytest.approx(0.026)
    assert M.delay == pytest.approx(0.002 + 0.5 / 20000)             # ZOH T/2 + count difference T/2 + PWM
    assert M.top_speed == pytest.approx((1 - 0.15) / 0.05)            # 17 rad/s
    tau, theta = D.fopdt(M)
    # half rule: the filter (10 ms) is the smaller lag: half to tau (26 + 5), half to theta (2.025 + 5)
    assert tau == pytest.approx(0.031) and theta == pytest.approx(0.007025)
    # the lags swapped: a 4 ms motor behind the 10 ms filter -> tau 10 + 2, theta 2.025 + 2
    tau2, theta2 = D.fopdt(D.MotorModel(0.15, 0.05, 0.0002, 500, 4096))
    assert tau2 == pytest.approx(0.012) and theta2 == pytest.approx(0.004025)
    # settling theta + tau_c ln 20 = 150 ms -> tau_c = 142.975 ms / 2.99573 = 47.726 ms
    assert D.Request(0.15, 0.05).tau_c(theta) == pytest.approx(0.0477262, rel=1e-5)


def test_limits_hand_computed():
    lim = {x.name: x for x in D.limits(M, 10.0)}
    assert lim["speed"].settle_min == 0.0                               # 0.15 + 0.05 x 10 = 0.65 duty <= 1
    # full duty from rest: w(t) = 17 (1 - exp(-t/26 ms)); 9.5 rad/s after 26 ms ln(17/7.5) = 21.276 ms, + theta
    assert lim["acceleration"].settle_min == pytest.approx(0.026 * math.log(17 / 7.5) + 0.007025, rel=1e-9)
    assert lim["acceleration"].settle_min == pytest.approx(0.028301, abs=1e-6)
    assert lim["delay"].tau_c_min == pytest.approx(0.007025)
    # one count per period through alpha = 2/12: 1/6 x 500 x 2 pi/4096 = 0.127832 rad/s; kp <= 0.02/0.127832 =
    # 0.156455; kp = kV tau/(tau_c + theta) -> tau_c >= 0.05 x 0.031/0.156455 - 0.007025 = 2.882 ms
    assert lim["noise"].tau_c_min == pytest.approx(0.0028820, abs=1e-7)
    # 18 rad/s would need 0.15 + 0.9 = 1.05 duty
    assert math.isinf({x.name: x for x in D.limits(M, 18.0)}["speed"].settle_min)


def test_overshoot_of_the_pole_ratio_against_the_response_itself():
    for rho in (3.0, 10.0, 40.0):
        p1, p2 = rho, 1.0
        worst = max(-(p1 * math.exp(-p1 * t) - p2 * math.exp(-p2 * t)) / (p1 - p2)
                    for t in (i * 1e-4 for i in range(100000)))
        assert D.overshoot_of_rho(rho) == pytest.approx(worst, rel=1e-6)
        assert D.rho_for_overshoot(D.overshoot_of_rho(rho)) == pytest.approx(rho, rel=1e-6)
    assert D.overshoot_of_rho(10.0) == pytest.approx(0.059948, abs=1e-6)


def test_pi_gains_hand_computed():
    g = D.pi_gains(M, 0.02, 10.0, feedforward=True, step=10.0)
    # SIMC: kp = kV tau/(tau_c + theta) = 0.05 x 0.031/0.027025 = 0.0573543
    assert g["kp"] == pytest.approx(0.0573543, rel=1e-6)
    # poles: p1 + p2 = (1 + kp/kV)/tau = 2.147086/0.031 = 69.2608; rho 10: p1 = 62.9644, p2 = 6.29644;
    # ki = kV tau p1 p2 = 0.00155 x 396.4515 = 0.614500 (below SIMC's kp/tau = 1.85014)
    assert g["ki"] == pytest.approx(0.614500, rel=1e-5)
    # windup_tau = (kS + kV r + kp r - 1)/(ki r) = (0.65 + 0.573543 - 1)/6.14500 = 0.036378, inside [2 ms, kp/ki 93 ms]
    assert g["windup_tau"] == pytest.approx(0.036378, rel=1e-4) and g["kd"] == 0.0
    # no feedforward: SIMC as published, ki = kp/tau; windup_tau = 0.223543/18.5014 = 12.08 ms
    g0 = D.pi_gains(M, 0.02, 10.0, feedforward=False, step=10.0)
    assert g0["ki"] == pytest.approx(0.0573543 / 0.031, rel=1e-6)
    assert g0["windup_tau"] == pytest.approx(0.0120825, rel=1e-4)
    # a step that does not saturate at a stalled start (0.15 + 0.5 + 0.033 < 1): the shortest windup_tau, one period
    assert D.pi_gains(M, 0.04, 10.0, step=10.0)["windup_tau"] == pytest.approx(0.002)


def test_pid_gains_hand_computed():
    g = D.pid_gains(M, 0.02, 10.0, feedforward=False, step=10.0)
    # second order, both lags: tau1 26 ms, tau2 10 ms, theta 2.025 ms; Kc = 0.05 x 0.026/0.022025 = 0.0590238;
    # tau_I = 26 ms, tau_D = 10 ms -> kp = Kc (1 + 10/26), ki = Kc/0.026, kd = Kc x 0.01, kd_tau = 1 ms
    kc = 0.05 * 0.026 / 0.022025
    assert g["kp"] == pytest.approx(kc * (1 + 0.01 / 0.026)) and g["ki"] == pytest.approx(kc / 0.026)
    assert g["kd"] == pytest.approx(kc * 0.01) and g["kd_tau"] == pytest.approx(0.001)
    assert 0.01 <= g["windup_tau"] <= g["kp"] / g["ki"]          # Tt between Td and Ti


def test_predict_matches_the_closed_form_of_the_feedforward_alone():
    # no feedback, no filter: the duty kS + kV r from the first period on (held: it acts from t = 0 to T on);
    # the estimate at k T is the count difference, the mean of w = r (1 - exp(-t/tau_m)) over the last period
    m0 = D.MotorModel(0.15, 0.05, 0.0013, 500, 4096, vel_tau=0.0)
    t, y = D.predict(m0, {"kp": 0.0, "ki": 0.0, "windup_tau": 10.0}, 10.0, seconds=0.2)
    T, tau = 0.002, 0.026
    expect = [0.0] + [10.0 * (1 - tau / T * (math.exp(-(k - 1) * T / tau) - math.exp(-k * T / tau)))
                      for k in range(1, len(t))]
    assert max(abs(a - b) for a, b in zip(y, expect, strict=True)) < 1e-9
    # with the 10 ms filter: the board's one-pole recursion on the same averages
    t, y = D.predict(M, {"kp": 0.0, "ki": 0.0, "windup_tau": 10.0}, 10.0, seconds=0.2)
    alpha, v, filtered = T / (0.01 + T), 0.0, []
    for x in expect:
        v += alpha * (x - v)
        filtered.append(v)
    assert max(abs(a - b) for a, b in zip(y, filtered, strict=True)) < 1e-9
    # kS alone does not move the wheel (static friction holds it)
    t, y = D.predict(D.MotorModel(0.15, 0.0001, 0.0013, 500, 4096), {"kp": 0.0, "ki": 0.0, "windup_tau": 10.0}, 1e-6)
    assert max(abs(v) for v in y) < 1e-6


def test_design_meets_the_request_on_the_model():
    d = D.design(M, D.Request(0.15, 0.05))
    assert d.feasible and not d.problems
    assert d.predicted["overshoot_pct"] <= 5.0 + 1e-9 and d.predicted["settling_s"] <= 0.15
    for name, value in d.gains.items():
        p = PARAMS.by_name(name)
        assert p[PARAMS.MIN] <= value <= p[PARAMS.MAX], (name, value)
    # the figures are those of the model under the returned gains (nothing else was simulated)
    t, y = D.predict(M, d.gains, 10.0)
    assert step_metrics(t, y, 0.0, 10.0) == d.predicted
    assert d.motor_limit.name == "acceleration" and d.feedback_limit.name == "delay"
    assert "acceleration binds" in d.summary() and "NOT FEASIBLE" not in d.summary()
    pid = D.design(M, D.Request(0.15, 0.05), "pid")
    assert pid.feasible and pid.gains["kd"] > 0 and pid.predicted["overshoot_pct"] <= 5.0 + 1e-9


def test_design_refuses_what_the_motor_cannot_do_and_says_the_best():
    d = D.design(M, D.Request(0.02, 0.05))
    assert not d.feasible and d.gains == {}
    assert "acceleration" in d.problems[0] and "28 ms" in d.problems[0]
    assert d.best_settle == pytest.approx(0.028301, abs=1e-6)
    d = D.design(M, D.Request(0.15, 0.05, step=18.0))
    assert not d.feasible and d.problems[0].startswith("speed") and "17.00 rad/s" in d.problems[0]
    # a coarse encoder: the noise limit holds the feedback back (48 counts/rev: one count = 10.9 rad/s)
    coarse = D.design(D.MotorModel(0.15, 0.05, 0.0013, 500, 48), D.Request(0.15, 0.05))
    assert coarse.feedback_limit.name == "noise" and coarse.gains["kp"] <= 0.02 / (500 / 6 * 2 * math.pi / 48)


def test_bad_models_and_requests_are_refused_with_the_reason():
    with pytest.raises(BadValue, match="calibrate feedforward"):
        D.MotorModel(0.15, 0.05, 0.0, 500, 4096)
    with pytest.raises(BadValue, match="cannot be driven"):
        D.MotorModel(1.0, 0.05, 0.001, 500, 4096)
    for kw in ({"settle": math.nan, "overshoot": 0.05}, {"settle": 0.0, "overshoot": 0.05},
               {"settle": 0.1, "overshoot": 5.0}, {"settle": 0.1, "overshoot": 0.05, "step": 0.0}):
        with pytest.raises(BadValue):
            D.Request(**kw)
