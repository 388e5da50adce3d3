# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The edge-timed speed estimate (fixedstep.step with a backend that times edges) fuzzed against the float law
# (floatlaw.FloatLaw, the reference): random edge sequences made from a continuous wheel position (speeds from a
# crawl to 2e5 counts/s, reversals, stops long enough to forget the last edge, the 32-bit counter and the 2**30
# ticks_us wrapping), plus a share of garbage edge times. For every period: the viper raw speed equals the float
# one to a count/s, it is finite and within the speed range, and for honest edges it is never faster than the wheel
# ever was. The suite runs 60 000 periods; bench/bench_edge_fuzz.py runs 10**7 (fuzz() below, several processes).
import random

import fakehal
from viperdrive import control, floatlaw
from viperdrive import fixedstep as fx
from viperdrive.shared import params

M30 = 0x3FFFFFFF


class Wheel:
    """A wheel's true position in counts over time; the edges an edge timer sees: the integer crossings."""

    def __init__(self, pos):
        self.pos = pos + 0.5            # counts (float), between two edges
        self.speed = 0.0                # counts/s
        self.left = 0                   # periods until the next change of speed
        self.edge_t = 0                 # us (unwrapped) of the last crossing
        self.fastest = 0.0              # the largest |speed| so far, counts/s

    def period(self, t0, dt):
        """Advance one period from t0 (us, unwrapped) of dt us. -> (counts crossed, signed; time of the last)."""
        rnd = random
        if self.left <= 0:
            k = rnd.random()
            if k < 0.15:
                self.speed = 0.0                                    # a stop
            elif k < 0.55:
                self.speed = rnd.uniform(-400.0, 400.0)            # a crawl: edges further apart than a period
            elif k < 0.85:
                self.speed = rnd.uniform(-6000.0, 6000.0)
            else:
                self.speed = rnd.uniform(-2e5, 2e5)
            self.left = rnd.randrange(1, 400)
            if abs(self.speed) > self.fastest:
                self.fastest = abs(self.speed)
        self.left -= 1
        p0 = self.pos
        p1 = p0 + self.speed * dt * 1e-6
        self.pos = p1
        f0 = int(p0 // 1)
        f1 = int(p1 // 1)
        d = f1 - f0
        if d != 0:
            last = f1 if d > 0 else f1 + 1          # the last integer crossed
            self.edge_t = t0 + int((last - p0) / (p1 - p0) * dt)
        return d


def _limits(hz):
    v = params.defaults()
    v["vel_tau"] = 0.0                      # the raw speed straight through the filter: the estimate itself
    v["max_wheel_speed"] = 1e9              # no over-speed fault (the wheels are not driven)
    return v


def fuzz(n, seed, hz=1000, garbage=0.02):
    """n periods; -> (periods, largest |viper - float| count/s, largest |raw| count/s, honest periods checked)."""
    random.seed(seed)
    rnd = random
    cfg = {"control_hz": hz, "counts_per_rev": 4096, "edge_timing": True}
    hal = fakehal.Board(cfg, counter_bits=32, edge=True)
    c = control.Controller(hal, cfg, _limits(hz))
    c.start()
    law = floatlaw.FloatLaw(hz, 4096, 32, edge=True)
    law.configure(_limits(hz))
    dt = 1000000 // hz
    # start near the wraps: the 32-bit counter and the 2**30 ticks
    hal.now_us = M30 - rnd.randrange(0, 2000000)
    start = rnd.getrandbits(31) - (1 << 30) + (rnd.getrandbits(1) << 30)     # (randrange hangs on ranges >= 2**31 here)
    wheels = [Wheel(start), Wheel(-start)]
    counts = [start, -start]
    law.prev = [counts[0] & 0xFFFFFFFF, counts[1] & 0xFFFFFFFF]
    hal.counts[0], hal.counts[1] = counts
    c.zero()
    worst = 0.0
    top = 0.0
    honest = 0
    taint = [0, 0]                          # edges until a garbage edge time no longer shapes the estimate
    for i in range(n):
        t0 = hal.now_us + dt                # the period's start, as fire() sets it (unwrapped)
        for w in (0, 1):
            d = wheels[w].period(t0 - dt, dt)
            counts[w] += d
            hal.counts[w] = ((counts[w] + 2 ** 31) % 2 ** 32) - 2 ** 31
            if d != 0:
                if rnd.random() < garbage:
                    hal.edges[w] = rnd.getrandbits(30)              # an edge time from nowhere
                    taint[w] = 2                    # this span and the next one start from it
                else:
                    hal.edges[w] = wheels[w].edge_t & M30
                    if taint[w]:
                        taint[w] -= 1
        hal.fire(1)
        law.step([hal.counts[0] & 0xFFFFFFFF, hal.counts[1] & 0xFFFFFFFF], hal.edges + [t0 & M30] * 2)
        for w in (0, 1):
            raw = c.st[w * fx.WS + fx.W_RAW]
            ref = law.raw[w]
            assert ref == ref and -1048576.0 <= ref <= 1048576.0, (i, w, ref)     # finite, in range
            assert -1048576 <= raw <= 1048576, (i, w, raw)
            e = abs(raw - ref)
            # the fixed step floors a Q8 speed twice (1e6 << 8 // ep, then >> 8): at most one count/s below
            assert e <= 1.0 + 1e-9 * abs(ref), (i, w, raw, ref)
            if e > worst:
                worst = e
            if abs(raw) > top:
                top = abs(raw)
            if not taint[w]:
                honest += 1
                # never faster than the wheel ever was: a span of ad counts is at least ad / fastest, less the
                # whole-us rounding of its two ends (1 us: at 2e5 counts/s and one count, a quarter); counts x rate
                # (no interval yet, or after a reversal) can see one count more in a period than the wheel made
                fastest = wheels[w].fastest
                assert abs(raw) <= fastest / (1.0 - min(0.5, fastest * 1e-6)) + hz, (i, w, raw, fastest)
    return n, worst, top, honest


def test_edge_timed_speed_matches_the_float_law_and_stays_in_range():
    for hz, seed in ((1000, 1), (500, 2)):
        n, worst, top, honest = fuzz(30000, seed, hz)
        print("edge fuzz hz=%d periods=%d max|viper-float|=%.3f count/s max|raw|=%d honest=%d"
              % (hz, n, worst, top, honest))
        assert honest > n
