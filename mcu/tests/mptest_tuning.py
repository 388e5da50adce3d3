# REPL tuning helpers: the step-response figures, and the Tuner's plumbing over the App with the hal test double
# (time passes only when the Tuner sleeps: each millisecond fires the control periods it spans).
import math
import os

import app as app_mod
import fakehal
import fixedstep as fx
import tuning

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 500}


def test_step_metrics_first_order():
    tau = 0.05
    samples = [(i * 0.001, 10.0 * (1 - math.exp(-i * 0.001 / tau))) for i in range(1000)]
    m = tuning.step_metrics(samples, 0.0, 10.0)
    # 10 % -> 90 % of a first-order step: tau*ln(9); within 2 %: tau*ln(50); no overshoot
    assert abs(m["rise_s"] - tau * math.log(9)) < 0.002, m
    assert abs(m["settling_s"] - tau * math.log(50)) < 0.002, m
    assert m["overshoot_pct"] == 0.0 and abs(m["final"] - 10.0) < 0.01


def test_step_metrics_underdamped():
    zeta, wn = 0.3, 40.0
    wd = wn * math.sqrt(1 - zeta * zeta)
    phi = math.acos(zeta)

    def y(t):
        return 1 - math.exp(-zeta * wn * t) / math.sqrt(1 - zeta * zeta) * math.sin(wd * t + phi)

    samples = [(i * 0.0005, -2.0 + 4.0 * y(i * 0.0005)) for i in range(4000)]    # a step from -2 to 2
    m = tuning.step_metrics(samples, -2.0, 2.0)
    expect = 100 * math.exp(-zeta * math.pi / math.sqrt(1 - zeta * zeta))
    print("overshoot %.2f %% (theory %.2f %%), settling %.3f s" % (m["overshoot_pct"], expect, m["settling_s"]))
    assert abs(m["overshoot_pct"] - expect) < 0.2, (m, expect)
    assert 3.0 / (zeta * wn) < m["settling_s"] < 4.6 / (zeta * wn) * 1.2, m
    try:
        tuning.step_metrics([], 0.0, 0.0)
        raise AssertionError("a zero step must be refused")
    except ValueError:
        pass


def test_smooth_removes_single_period_spikes_without_lag():
    ramp = [(i * 0.002, float(i)) for i in range(50)]
    assert tuning.smooth(ramp, 5)[10:40] == ramp[10:40]         # centred: a ramp passes unchanged (no lag)
    noisy = [(i * 0.002, 10.0 + (0.77 if i == 20 else 0.0) - (0.77 if i == 21 else 0.0)) for i in range(50)]
    peak = max(y for _, y in tuning.smooth(noisy, 5))
    assert abs(peak - (10.0 + 0.77 / 5)) < 1e-9, peak             # a one-period spike shrinks 5x
    assert tuning.smooth(noisy, 1) == noisy


def make_tuner(path):
    hal = fakehal.Board(CFG)
    a = app_mod.App(hal, CFG, params_path=path, link=False)
    a.start()

    def sleep_ms(ms):
        # an ideal wheel: the encoders advance by the slewed setpoint (Q8 counts/s) every period
        n = ms * 500 // 1000
        while n > 0:
            for w in (0, 1):
                acc = a.ctrl.st[w * fx.WS + fx.W_SP]
                hal.counts[w] += acc // (500 << fx.VQ)
            hal.fire(1)
            n -= 1
        a.service()

    return hal, a, tuning.Tuner(a, sleep_ms=sleep_ms)


def test_tuner_set_save_and_step():
    path = "/tmp/viperdrive-mptest-tuning.json"
    try:
        os.remove(path)
    except OSError:
        pass
    hal, a, t = make_tuner(path)
    assert t.set("kp", 0.05) and abs(a.ctrl.values["kp"] - 0.05) < 1e-9
    assert not t.set("kp", 50.0) and abs(a.params.values["kp"] - 0.05) < 1e-9
    assert not t.set("no_such_gain", 1.0)
    assert t.save()
    with open(path) as f:
        assert '"kp": 0.05' in f.read()
    res = t.step(10.0, seconds=1.0)
    left = res[0]
    # the wheel follows the slewed setpoint: 10 % -> 90 % of 10 rad/s at max_accel 30 rad/s^2 = 0.267 s,
    # plus the velocity filter's lag (vel_tau 10 ms) on both ends
    print("tuner step on an ideal wheel: rise %.3f s, overshoot %.1f %%, settling %.3f s"
          % (left["rise_s"], left["overshoot_pct"], left["settling_s"]))
    assert abs(left["rise_s"] - 0.8 * 10.0 / 30.0) < 0.02, left
    assert left["overshoot_pct"] < 1.0 and abs(left["final"] - 10.0) < 0.1, left
    assert not a.ctrl.enabled() and not hal.energized       # the step test leaves the outputs off
    t._sleep_ms(100)                    # disabled, the wheel rests: the live estimate follows it to zero
    sl, sr = t.speeds()
    assert abs(sl) < 0.05 and abs(sr) < 0.05, (sl, sr)


def test_start_without_a_thread_serves_the_loop_while_waiting():
    # CircuitPython has no _thread: the Tuner runs the slow loop (and idle(), where such ports run the control
    # step) whenever it waits
    hal = fakehal.Board(CFG)
    t = tuning.start(hal_board=hal, cfg=dict(CFG), params_path="/tmp/viperdrive-mptest-tuning2.json",
                     background=False)
    assert hal.wdt_timeout is None      # nothing would feed it at the prompt: not started
    assert t.enable(True) and hal.energized
    before = t.ctrl.ticks()
    seen = []
    hal.duty_log = seen
    t.drive(3.0, 3.0, 0.1)             # 100 ms of driving = 50 control periods served, then brought to rest
    assert t.ctrl.ticks() - before >= 50, t.ctrl.ticks() - before
    assert max(d[0] for d in seen) > 0  # it drove
    # ... and nothing is left driven between calls: outputs off
    assert not hal.energized and not t.ctrl.enabled() and hal.duty == [0, 0]
    t.stop()
    assert not hal.energized
