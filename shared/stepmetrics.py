# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Step-response figures: the one definition the board's REPL tuning (mcu/tuning.py), the host's step test
# (viperdrive.tuning.steptest), the gain design's prediction (viperdrive.tuning.design) and the HIL tests use.
# MicroPython and CPython: plain loops over two indexable sequences, no list is built (not a hot path, but a
# board has little heap).
#
#   rise_s         10 % -> 90 % of the step, each crossing interpolated linearly between the samples around it
#   overshoot_pct  how far the response goes beyond the target, in % of the step (0 when it never passes it)
#   settling_s     time from the step until the response enters the band (+-band of the step around the target)
#                  for the last time and stays in it to the end of the window; the entry is interpolated. None
#                  when the last sample is still outside (it never settled within the window)
#   final          mean of the samples in the last 20 % of the window (by time)
#   peak           the sample furthest in the step's direction, in y's units
# A figure the data never reaches is None. Steps may go down (target < start): every figure is taken on the
# response normalised to the step, (y - start) / (target - start).

# the default settling band: 5 % of the step (at 4096 counts/rev and 500 Hz a 2 % band of a 10 rad/s step is
# 0.2 rad/s, a quarter of one count per period: the speed estimate's noise level)
BAND = 0.05
RISE_LO = 0.1
RISE_HI = 0.9
FINAL_SHARE = 0.2


def _cross(t, f, i, level):
    """Time at which the segment from sample i-1 to i reaches level (f: normalised response at each index)."""
    f0 = f(i - 1)
    f1 = f(i)
    if f1 == f0:
        return t[i]
    return t[i - 1] + (level - f0) / (f1 - f0) * (t[i] - t[i - 1])


def step_metrics(t, y, start, target, band=BAND, t_step=0.0, t_end=None):
    """Figures of a step from start to target at t_step, judged on the samples with t_step <= t <= t_end
    (default: to the last sample). t, y: sequences of one length, t increasing (s). -> dict with rise_s,
    overshoot_pct, settling_s (s from t_step), final, peak (y units), band. ValueError for a zero step, a band
    outside (0, 1) or fewer than two samples in the window."""
    span = target - start
    if span == 0:
        raise ValueError("a step needs a nonzero size")
    if not 0.0 < band < 1.0:
        raise ValueError("band is a fraction of the step in (0, 1)")
    n = len(t)
    if len(y) != n:
        raise ValueError("t and y must have one length")
    if t_end is None:
        t_end = t[n - 1] if n else t_step
    lo = 0
    while lo < n and t[lo] < t_step:
        lo += 1
    hi = n
    while hi > lo and t[hi - 1] > t_end:
        hi -= 1
    if hi - lo < 2:
        raise ValueError("fewer than two samples in the step window")

    def f(i):
        return (y[i] - start) / span

    t10 = None
    t90 = None
    ipeak = lo
    fpeak = f(lo)
    last_out = -1
    for i in range(lo, hi):
        fi = f(i)
        if t10 is None and fi >= RISE_LO:
            t10 = t[i] if i == lo else _cross(t, f, i, RISE_LO)
        if t90 is None and fi >= RISE_HI:
            t90 = t[i] if i == lo else _cross(t, f, i, RISE_HI)
        if fi > fpeak:
            fpeak = fi
            ipeak = i
        if fi > 1.0 + band or fi < 1.0 - band:
            last_out = i
    if last_out < 0:
        settling = 0.0
    elif last_out == hi - 1:
        settling = None
    else:
        edge = 1.0 + band if f(last_out) > 1.0 else 1.0 - band
        settling = _cross(t, f, last_out + 1, edge) - t_step
    t_tail = t_end - FINAL_SHARE * (t_end - t_step)
    total = 0.0
    count = 0
    for i in range(lo, hi):
        if t[i] >= t_tail:
            total += y[i]
            count += 1
    return {"rise_s": (t90 - t10) if t10 is not None and t90 is not None else None,
            "overshoot_pct": (fpeak - 1.0) * 100.0 if fpeak > 1.0 else 0.0,
            "settling_s": settling,
            "final": total / count if count else y[hi - 1],
            "peak": y[ipeak],
            "band": band}
