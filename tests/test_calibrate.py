# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Calibrations recover known parameters from simulated recordings (tolerances stated per test) and refuse bad
data with a reason."""
import math

import numpy as np
import pytest

from viperdrive.tuning.calibrate import (
    CalibrationRefused,
    GyroRun,
    SpinRun,
    fit_feedforward,
    gyro_scale,
    relay_autotune,
    simulate_feedforward,
    umbmark,
    wheel_separation_from_spin,
)

pytestmark = pytest.mark.unit

# ----------------------------------------------------------------------------------------------- spin test


def spin(b_odometry, b_true, commanded, slip=0.0):
    """Wheels driven for `commanded` rad of odometry turn; the real robot turns commanded * b_odo / b_true."""
    return SpinRun(commanded, commanded * b_odometry / b_true * (1 - slip))


def test_spin_recovers_true_separation_in_two_iterations():
    b_true, b = 0.1853, 0.152
    for _ in range(2):
        # a direction-dependent 1 % slip in the ccw direction only: averaging the directions halves its effect
        res = wheel_separation_from_spin(b, [spin(b, b_true, 10.0, 0.01), spin(b, b_true, 10.0, 0.01),
                                             spin(b, b_true, -10.0), spin(b, b_true, -10.0)])
        assert res.ok, res.problems
        b = res.new
    assert b == pytest.approx(b_true, rel=0.006)           # tolerance: half the 1 % one-direction slip
    assert res.ccw > res.cw
    assert "wheel separation" in res.summary()


def test_spin_refuses_one_direction_and_wrong_signs():
    res = wheel_separation_from_spin(0.15, [SpinRun(10.0, 9.0), SpinRun(10.0, 9.1)])
    assert not res.ok and any("clockwise" in p for p in res.problems)
    with pytest.raises(CalibrationRefused, match="clockwise"):
        res.require()
    res = wheel_separation_from_spin(0.15, [SpinRun(10.0, -9.0), SpinRun(-10.0, -9.0)])
    assert any("opposite sign" in p for p in res.problems)
    # the summary says it was refused and why; an accepted one does not
    text = res.summary()
    assert text.splitlines()[0].startswith("wheel separation: 0.15 m")
    assert text.splitlines()[1] == "REFUSED: " + "; ".join(res.problems)
    ok = wheel_separation_from_spin(0.15, [SpinRun(10.0, 9.0), SpinRun(-10.0, -9.0)])
    assert ok.ok and "REFUSED" not in ok.summary() and len(ok.summary().splitlines()) == 1


# ----------------------------------------------------------------------------------------------- UMBmark


def _arc(pose, s_left, s_right, b):
    x, y, th = pose
    ds, dth = (s_left + s_right) / 2, (s_right - s_left) / b
    if abs(dth) < 1e-12:
        return x + ds * math.cos(th), y + ds * math.sin(th), th
    r = ds / dth
    return x + r * (math.sin(th + dth) - math.sin(th)), y - r * (math.cos(th + dth) - math.cos(th)), th + dth


def square_run(direction, L, odo, true, rng=None, noise=0.0):
    """Drive an L x L square by odometry (straight legs, 90-degree turns in place, cw: right turns) and return the
    true end position. odo/true: dicts with left and right wheel radius rl, rr and wheelbase b."""
    s = 1 if direction == "ccw" else -1
    pose = (0.0, 0.0, 0.0)
    for _ in range(4):
        # straight leg: equal odometric distances -> wheel angles L / r_odo
        phl, phr = L / odo["rl"], L / odo["rr"]
        pose = _arc(pose, phl * true["rl"], phr * true["rr"], true["b"])
        # turn in place by s * 90 deg according to odometry
        arc = s * odo["b"] * math.pi / 4
        phl, phr = -arc / odo["rl"], arc / odo["rr"]
        pose = _arc(pose, phl * true["rl"], phr * true["rr"], true["b"])
        if rng is not None:
            pose = (pose[0] + rng.normal(0, noise), pose[1] + rng.normal(0, noise), pose[2] + rng.normal(0, noise / 4))
    return np.array(pose[:2])


def test_umbmark_recovers_diameter_ratio_and_wheelbase_and_reduces_error():
    r, b, L = 0.0325, 0.152, 4.0
    ed_true, eb_true = 1.004, 1.03
    true = {"rl": r * 2 / (ed_true + 1), "rr": r * 2 * ed_true / (ed_true + 1), "b": b * eb_true}
    nominal = {"rl": r, "rr": r, "b": b}
    rng = np.random.default_rng(0)
    cw = [square_run("cw", L, nominal, true, rng, 0.005) for _ in range(5)]
    ccw = [square_run("ccw", L, nominal, true, rng, 0.005) for _ in range(5)]
    res = umbmark(cw, ccw, L, b)
    assert res.ok, res.problems
    # tolerance: UMBmark's formulas are first order in alpha and beta. Here beta is 6 deg per 4 m leg and alpha
    # 2.6 deg per corner, so second-order terms leave ~2e-3 on Eb (noise-free: 2.1e-3) and ~5e-5 on Ed;
    # 5 mm / 1.25 mrad of random error per leg adds to that. Asserted: Ed within 5e-4, Eb within 3e-3.
    assert res.diameter_ratio == pytest.approx(ed_true, abs=5e-4)
    assert res.wheelbase_factor == pytest.approx(eb_true, abs=3e-3)
    assert res.left_factor * r == pytest.approx(true["rl"], rel=5e-4)
    # drive again with the corrected parameters: the systematic return error shrinks several-fold
    corrected = {"rl": r * res.left_factor, "rr": r * res.right_factor, "b": res.wheelbase}
    before = max(np.linalg.norm(np.mean(cw, axis=0)), np.linalg.norm(np.mean(ccw, axis=0)))
    after = max(np.linalg.norm(square_run(d, L, corrected, true)) for d in ("cw", "ccw"))
    assert after < before / 5
    assert "Ed" in res.summary()


def test_umbmark_refuses_too_few_runs_and_inconsistent_clusters():
    res = umbmark([[0.1, 0.1]], [[0.1, -0.1]], 4.0, 0.15)
    assert not res.ok and any("at least 3" in p for p in res.problems)
    rng = np.random.default_rng(1)
    res = umbmark(rng.normal(0, 0.3, (5, 2)), rng.normal(0, 0.3, (5, 2)), 4.0, 0.15)
    assert not res.ok


# ----------------------------------------------------------------------------------------------- feedforward

KS, KV, KA = 0.08, 0.05, 0.01       # duty, duty/(rad/s), duty/(rad/s^2)


def motor(u_of_t, duration, rng, dt=0.0005, sample=0.01, noise=0.02, invert=False, kv=KV):
    """dw/dt = (u - kS sign(w) - kV w) / kA, with stiction at rest; speed sampled every `sample` s with noise."""
    w = 0.0
    ts, us, ws = [], [], []
    n_sub = int(round(sample / dt))
    for k in range(int(duration / sample)):
        t = k * sample
        u = u_of_t(t)
        for _ in range(n_sub):
            if abs(w) < 1e-9 and abs(u) <= KS:
                w = 0.0                                  # static friction holds the wheel
                continue
            s = math.copysign(1.0, w) if abs(w) > 1e-9 else math.copysign(1.0, u)
            w += (u - KS * s - kv * w) / KA * dt
        ts.append(t)
        us.append(u)
        ws.append((-w if invert else w) + rng.normal(0, noise))
    return np.array(ts), np.array(us), np.array(ws)


def recordings(rng, directions=(1, -1), steps=True, **kw):
    segs = []
    for d in directions:
        segs.append(motor(lambda t, d=d: d * min(0.9, 0.05 * t), 16.0, rng, **kw))         # quasistatic ramp
        if steps:
            for level in (0.4, 0.7):
                segs.append(motor(lambda t, d=d, level=level: d * level if t < 0.6 else 0.0, 1.2, rng, **kw))
    return segs


def test_feedforward_recovers_gains_from_ramps_and_steps():
    fit = fit_feedforward(recordings(np.random.default_rng(0)))
    assert fit.ok, fit.problems
    # tolerance: 5 % on each gain with 0.02 rad/s speed noise at 100 Hz
    assert fit.ks == pytest.approx(KS, rel=0.05)
    assert fit.kv == pytest.approx(KV, rel=0.05)
    assert fit.ka == pytest.approx(KA, rel=0.05)
    assert fit.r2 > 0.95 and fit.forward > 100 and fit.backward > 100
    assert "kS" in fit.summary()


def test_the_model_run_on_the_commands_gives_the_recorded_speed():
    t, u, w = motor(lambda t: 0.6 if t < 0.5 else (-0.3 if t < 1.0 else 0.05), 1.5, np.random.default_rng(2), noise=0.0)
    sim = simulate_feedforward(t, u, KS, KV, KA)
    # motor() records at t[k] the speed after u[k] was applied for one sample, simulate_feedforward gives it at
    # t[k+1]; the recording integrates in 0.5 ms Euler steps, the simulation steps exactly: within 1 % of the peak
    assert np.max(np.abs(sim[1:] - w[:-1])) < 0.01 * np.max(np.abs(w))
    # 0.05 duty is below kS: the simulated wheel stops at zero and stays (the Euler one dithers within 0.01 rad/s)
    assert sim[-1] == 0.0 and abs(w[-1]) < 0.01
    fit = fit_feedforward(recordings(np.random.default_rng(0)))
    assert fit.speed_error < 0.02 and "within" in fit.summary()
    with pytest.raises(ValueError, match="kV > 0"):
        simulate_feedforward(t, u, KS, 0.0, KA)


def test_a_load_that_changed_is_refused_and_the_simulated_speed_says_by_how_much():
    rng = np.random.default_rng(3)
    # forward on the motor, backward with 60 % more viscous load: one kV cannot give both speeds
    segs = recordings(rng, directions=(1,)) + recordings(rng, directions=(-1,), kv=1.6 * KV)
    fit = fit_feedforward(segs)
    assert fit.speed_error > 0.2 and not fit.ok
    assert any("misses the recorded speed" in p for p in fit.problems), fit.problems


def test_feedforward_refuses_bad_data_and_says_why():
    rng = np.random.default_rng(1)
    one_way = fit_feedforward(recordings(rng, directions=(1,)))
    assert not one_way.ok and any("backward direction" in p for p in one_way.problems)
    inverted = fit_feedforward(recordings(rng, invert=True))
    assert not inverted.ok and any("inverted" in p for p in inverted.problems)
    noisy = fit_feedforward(recordings(rng, noise=0.5))
    assert not noisy.ok and any("R^2" in p for p in noisy.problems)
    few = fit_feedforward([motor(lambda t: 0.5, 0.3, rng), motor(lambda t: -0.5, 0.3, rng)])
    assert not few.ok and any("need at least" in p for p in few.problems)
    with pytest.raises(CalibrationRefused):
        few.require()


# ----------------------------------------------------------------------------------------------- relay


def relay_experiment(d=1.0, hysteresis=0.0, duration=40.0, dt=0.001):
    """Relay feedback on G(s) = 1 / (s + 1)^3: Ku = 8 and Tu = 2 pi / sqrt(3) exactly."""
    x = np.zeros(3)
    u = d
    ts, ys = [], []
    for k in range(int(duration / dt)):
        y = x[2]
        if y > hysteresis:
            u = -d
        elif y < -hysteresis:
            u = d
        x = x + dt * np.array([u - x[0], x[0] - x[1], x[1] - x[2]])
        ts.append(k * dt)
        ys.append(y)
    return np.array(ts), np.array(ys)


def test_relay_recovers_ultimate_gain_and_period():
    t, y = relay_experiment()
    res = relay_autotune(t, y, relay_amplitude=1.0)
    assert res.ok, res.problems
    # tolerance: the describing function is an approximation; 3 % on Tu and 8 % on Ku for this plant
    assert res.tu == pytest.approx(2 * math.pi / math.sqrt(3), rel=0.03)
    assert res.ku == pytest.approx(8.0, rel=0.08)
    assert res.rule == "tyreus-luyben" and res.kp == pytest.approx(res.ku / 3.2)
    assert res.ki == pytest.approx(res.kp / (2.2 * res.tu)) and res.kd == 0.0
    pid = relay_autotune(t, y, 1.0, controller="pid", rule="ziegler-nichols")
    assert pid.kp == pytest.approx(0.6 * pid.ku) and pid.kd == pytest.approx(pid.kp * pid.tu / 8)
    assert "Tyreus" in res.summary()


def test_relay_exact_on_a_pure_sine_and_with_hysteresis():
    t = np.arange(0, 20, 0.001)
    y = 0.25 * np.sin(2 * math.pi * t / 2.0)
    res = relay_autotune(t, y, relay_amplitude=2.0, hysteresis=0.05)
    assert res.tu == pytest.approx(2.0, rel=1e-3)
    assert res.ku == pytest.approx(4 * 2.0 / (math.pi * math.sqrt(0.25 ** 2 - 0.05 ** 2)), rel=1e-3)


def test_relay_refuses_short_or_unsteady_records():
    t = np.arange(0, 3, 0.001)
    res = relay_autotune(t, np.sin(2 * math.pi * t), 1.0)
    assert not res.ok and any("cycles" in p for p in res.problems)
    t = np.arange(0, 20, 0.001)
    res = relay_autotune(t, np.exp(-0.3 * t) * np.sin(2 * math.pi * t), 1.0)
    assert not res.ok and any("amplitude varies" in p for p in res.problems)


def test_relay_period_is_not_fooled_by_noise_at_the_middle():
    """A measured speed with encoder noise crosses its middle several times per cycle; before the Schmitt trigger
    each noisy pair counted as a new cycle (the period then 'varied' and autotune refused the default robot)."""
    t = np.arange(0.0, 4.0, 0.002)
    y = np.sin(2 * np.pi * t / 0.4)
    rng = np.random.default_rng(3)
    y += rng.uniform(-0.08, 0.08, len(t))             # about 8 % of the swing, as the jittery encoder gives
    r = relay_autotune(t, y, relay_amplitude=0.2)
    assert r.ok, r.problems
    assert r.tu == pytest.approx(0.4, rel=0.01) and r.cycles >= 6


# ----------------------------------------------------------------------------------------------- gyro scale

def gyro_run(direction, turns, true_scale, bias_deg, scale_used=1.0):
    """A run that stops when the gyro heading (with scale_used) has read `turns` whole turns: what it read and the
    real turn. The bare gyro reads real / true_scale plus a residual bias's bias_deg over the run."""
    read = direction * 2 * math.pi * turns
    bare = read / scale_used
    real = (bare - math.radians(bias_deg)) * true_scale
    return GyroRun(read, scale_used, real)


def test_gyro_scale_both_ways_cancels_a_residual_bias():
    # an MPU-6050 0.3 % fast (the default robot's): the true turn per turn read is 1 / 1.003; a residual bias adds
    # +0.6 deg to each 3-turn run, turning one direction's estimate up and the other's down
    s_true = 1 / 1.003
    runs = [gyro_run(1, 3, s_true, 0.6), gyro_run(-1, 3, s_true, 0.6)]
    res = gyro_scale(runs).require()
    assert res.scale == pytest.approx(s_true, abs=1e-9)
    assert abs(res.ccw - res.cw) > 1e-3                 # each direction alone is off by the bias
    assert res.error_per_turn_deg(1) == pytest.approx(360 * (1.003 - 1), rel=1e-6)     # 1.08 deg per turn
    # a second calibration on a calibrated board: the old scale in, the same scale out
    runs = [gyro_run(1, 3, s_true, -0.4, res.scale), gyro_run(-1, 3, s_true, -0.4, res.scale)]
    again = gyro_scale(runs, res.scale, res.scale).require()
    assert again.scale == pytest.approx(s_true, abs=1e-9) and abs(again.error_per_turn_deg(-1)) < 1e-6
    assert "gyro scale: 0.99701" in res.summary()


def test_gyro_scale_refuses_one_direction_short_runs_signs_and_a_wrong_full_scale():
    s = 1 / 1.003
    with pytest.raises(CalibrationRefused, match="no valid clockwise run"):
        gyro_scale([gyro_run(1, 3, s, 0.0)]).require()
    res = gyro_scale([GyroRun(math.radians(200), 1.0, math.radians(201)), gyro_run(-1, 3, s, 0.0)])
    assert not res.ok and "less than a full turn" in res.summary()
    res = gyro_scale([GyroRun(6 * math.pi, 1.0, -6 * math.pi), gyro_run(-1, 3, s, 0.0)])
    assert "opposite sign" in "; ".join(res.problems)
    # a gyro at the wrong full-scale (2x): not a scale error to calibrate away
    res = gyro_scale([gyro_run(1, 3, 0.5, 0.0), gyro_run(-1, 3, 0.5, 0.0)])
    assert not res.ok and "outside 0.9-1.1" in res.problems[0]
    res = gyro_scale([GyroRun(float("nan"), 1.0, 6.0), gyro_run(-1, 3, s, 0.0)])
    assert "no turn read" in res.problems[0]
