# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The step-response figures against a response computed by hand, on CPython and on MicroPython (the same
# file runs under both): a piecewise-linear step 0 -> 10 whose crossings fall between samples.
import math

from shared.stepmetrics import BAND, step_metrics

T = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
Y = [0.0, 2.0, 6.0, 10.0, 11.2, 10.6, 9.6, 10.3, 10.0, 10.0, 10.0]


def close(a, b, tol=1e-9):
    return a is not None and abs(a - b) <= tol


def test_hand_computed_response():
    m = step_metrics(T, Y, 0.0, 10.0)
    assert BAND == 0.05 and m["band"] == 0.05
    # 10 % (1.0) between t=0 (0) and 0.1 (2): 0.05 s; 90 % (9.0) between 0.2 (6) and 0.3 (10): 0.275 s
    assert close(m["rise_s"], 0.225), m
    assert close(m["overshoot_pct"], 12.0) and m["peak"] == 11.2, m          # peak 11.2: 12 % of the step
    # 5 % band = [9.5, 10.5]: the last sample outside is 10.6 at 0.5 s; 9.6 at 0.6 s is inside; the line between
    # them reaches 10.5 a tenth of the way: 0.51 s
    assert close(m["settling_s"], 0.51), m
    assert close(m["final"], 10.0), m                        # mean of t >= 0.8 s (the last 20 % of the window)
    # 2 % band = [9.8, 10.2]: last outside 10.3 at 0.7 s, next 10.0 at 0.8 s: 10.2 a third of the way
    m2 = step_metrics(T, Y, 0.0, 10.0, band=0.02)
    assert close(m2["settling_s"], 0.7 + 0.1 / 3), m2
    assert close(m2["rise_s"], 0.225) and close(m2["overshoot_pct"], 12.0)


def test_downward_step_and_a_window_that_starts_later():
    # the same response mirrored (10 -> 0) and shifted by 0.3 s after 0.3 s of samples that must be ignored
    t = [i * 0.1 for i in range(3)] + [0.3 + x for x in T]
    y = [10.0, 30.0, -5.0] + [10.0 - v for v in Y]
    m = step_metrics(t, y, 10.0, 0.0, t_step=0.3)
    assert close(m["rise_s"], 0.225) and close(m["overshoot_pct"], 12.0), m
    assert close(m["settling_s"], 0.51) and close(m["final"], 0.0) and close(m["peak"], -1.2), m
    # a window that ends early (0.85 s): still outside the band at its end -> not settled; its last 20 %
    # (t >= 0.74 s) holds one sample, 10 - 10.6 at 0.8 s
    m = step_metrics(t, y, 10.0, 0.0, t_step=0.3, t_end=0.3 + 0.55)
    assert m["settling_s"] is None and close(m["final"], -0.6), m


def test_first_order_lag_matches_its_closed_form():
    tau = 0.05
    t = [i * 0.0005 for i in range(2001)]
    y = [10.0 * (1.0 - math.exp(-x / tau)) for x in t]
    m = step_metrics(t, y, 0.0, 10.0)
    # 10 -> 90 %: tau ln 9; within 5 %: tau ln 20; within 2 %: tau ln 50; no overshoot
    assert abs(m["rise_s"] - tau * math.log(9)) < 1e-5, m
    assert abs(m["settling_s"] - tau * math.log(20)) < 1e-5, m
    assert abs(step_metrics(t, y, 0.0, 10.0, band=0.02)["settling_s"] - tau * math.log(50)) < 1e-5
    assert m["overshoot_pct"] == 0.0


def test_figures_never_reached_and_bad_input():
    m = step_metrics([0.0, 0.1, 0.2], [0.0, 0.5, 0.8], 0.0, 10.0)
    assert m["rise_s"] is None and m["settling_s"] is None and m["overshoot_pct"] == 0.0
    assert step_metrics([0.0, 0.1], [10.0, 10.0], 0.0, 10.0)["settling_s"] == 0.0     # in the band throughout
    for args, kw in (((T, Y, 1.0, 1.0), {}), ((T, Y, 0.0, 1.0), {"band": 0.0}), ((T, Y, 0.0, 1.0), {"band": 1.0}),
                     (([0.0], [0.0], 0.0, 1.0), {}), ((T, Y[:3], 0.0, 1.0), {}),
                     ((T, Y, 0.0, 1.0), {"t_step": 0.95})):
        try:
            step_metrics(*args, **kw)
        except ValueError:
            continue
        raise AssertionError("accepted %r %r" % (args[2:], kw))


def test_underdamped_second_order_overshoot_matches_theory():
    zeta, wn = 0.3, 40.0
    wd = wn * math.sqrt(1 - zeta * zeta)
    phi = math.acos(zeta)
    t = [i * 0.0005 for i in range(4000)]
    y = [-2.0 + 4.0 * (1 - math.exp(-zeta * wn * x) / math.sqrt(1 - zeta * zeta) * math.sin(wd * x + phi))
         for x in t]                                                         # a step from -2 to 2
    m = step_metrics(t, y, -2.0, 2.0, band=0.02)
    expect = 100 * math.exp(-zeta * math.pi / math.sqrt(1 - zeta * zeta))
    assert abs(m["overshoot_pct"] - expect) < 0.05, (m, expect)
    # the envelope exp(-zeta wn t)/sqrt(1 - zeta^2) reaches 2 % at 3.3 / (zeta wn); the response itself enters the
    # band for good no later than that
    assert 3.0 / (zeta * wn) < m["settling_s"] <= math.log(50 / math.sqrt(1 - zeta * zeta)) / (zeta * wn), m
