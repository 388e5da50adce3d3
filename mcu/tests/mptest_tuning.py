# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# REPL tuning helpers: the step-response figures, and the Tuner's plumbing over the App with the hal test double
# (time passes only when the Tuner sleeps: each millisecond fires the control periods it spans).
import os

import fakehal
from viperdrive import app as app_mod
from viperdrive import fixedstep as fx
from viperdrive import tuning

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 500}


def test_step_figures_are_the_shared_definition():
    # one definition for board and host (shared/stepmetrics.py, tested against a hand-computed response there)
    from viperdrive.shared import stepmetrics
    assert tuning.step_metrics is stepmetrics.step_metrics and tuning.BAND == stepmetrics.BAND == 0.05


def test_smooth_removes_single_period_spikes_without_lag():
    ramp = [float(i) for i in range(50)]
    assert tuning.smooth(ramp, 5)[10:40] == ramp[10:40]         # centred: a ramp passes unchanged (no lag)
    noisy = [10.0 + (0.77 if i == 20 else 0.0) - (0.77 if i == 21 else 0.0) for i in range(50)]
    peak = max(tuning.smooth(noisy, 5))
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
