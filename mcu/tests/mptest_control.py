# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The viper control step (fixedstep.py via control.Controller) on the MicroPython unix port, against the float
# reference of the same law (floatlaw.FloatLaw), with the hal test double (no plant: the tests set the
# encoder counters themselves).
import random
from array import array

import micropython

import fakehal
from viperdrive import control, floatlaw
from viperdrive import fixedstep as fx
from viperdrive.shared import params, protocol

TWO_PI = 6.283185307179586


def values(**kw):
    v = params.defaults()
    v.update(kw)
    return v


def make(hz=500, cpr=4096, bits=32, ms=(1, 1), es=(1, 1), edge=False, **kw):
    cfg = {"control_hz": hz, "counts_per_rev": cpr, "motor_sign": list(ms), "encoder_sign": list(es)}
    hal = fakehal.Board(cfg, counter_bits=bits, edge=edge)
    c = control.Controller(hal, cfg, values(**kw))
    c.start()
    return hal, c


def counts_per_s(c, rad_s):
    return rad_s * c.cpr / TWO_PI


def compare(hz, cpr, bits, ms, es, n, seed, edge=False, **kw):
    """Run the viper controller and the float law on the same random inputs; max |duty difference| in Q15.
    The continuous part of the law: kS (a step at sp = 0, which the two number formats reach in different
    periods) is off unless asked for; test_discontinuous_terms_match_away_from_their_switch_points covers it."""
    kw.setdefault("ks", 0.0)
    hal, c = make(hz, cpr, bits, ms, es, edge=edge, **kw)
    f = floatlaw.FloatLaw(hz, cpr, bits, ms, es, edge=edge)
    f.configure(values(**kw))
    assert c.enable(True)
    f.enable([hal.counts[0], hal.counts[1]])
    random.seed(seed)
    rnd = random.randint
    pos = [0, 0]
    sp = [0, 0]
    worst = 0.0
    vmax = int(counts_per_s(c, 18.0))
    for i in range(n):
        if i % 150 == 0:
            sp = [rnd(-vmax, vmax), rnd(-vmax, vmax)]
        if i % 10 == 0:
            c.set_velocity(sp[0], sp[1])
            f.set_velocity(sp[0], sp[1])
        for w in (0, 1):
            # encoder motion: roughly the setpoint with noise, open loop (both controllers see the same counts)
            pos[w] += sp[w] // hz + rnd(-25, 25)
            hal.counts[w] = pos[w]
        t0 = hal.now_us + 1000000 // hz          # the period's start, as fire() sets it
        if edge:
            # the last counted edge somewhere in the period just ended (read where the count changed)
            hal.edges[0] = (t0 - rnd(0, 1000000 // hz)) & 0x3FFFFFFF
            hal.edges[1] = (t0 - rnd(0, 1000000 // hz)) & 0x3FFFFFFF
        hal.fire(1)
        dl, dr = f.step([hal.counts[0] & ((1 << bits) - 1), hal.counts[1] & ((1 << bits) - 1)],
                        hal.edges + [t0 & 0x3FFFFFFF] * 2)
        e = max(abs(dl - hal.duty[0]), abs(dr - hal.duty[1]))
        if e > worst:
            worst = e
        # the same state machine (SATURATED may differ when an output lands exactly on the clamp)
        assert c.status() & ~protocol.ST_SATURATED == f.status() & ~protocol.ST_SATURATED, (i, c.status(),
                                                                                          f.status())
    return worst, c, f


def test_viper_matches_float_reference():
    # The continuous part of the law (PID with filtered D on the measurement, kV feedforward, back-calculation,
    # velocity filter, joint slew, output clamp): 20000 periods of random setpoints and noisy encoders.
    # Tolerance: 64 Q15 LSB = 0.2 % of full duty (the fixed point rounds velocities to 1/256 count/s and gains
    # to 15 bits; the difference does not grow with the run length because the loop state is bounded).
    worst, c, f = compare(500, 4096, 32, (1, 1), (1, 1), 20000, 1, kd=0.002, windup_tau=0.05)
    print("max |viper - float| duty: %.1f Q15 LSB (%.4f %% of full duty) over 20000 periods at 500 Hz"
          % (worst, worst / 327.68))
    assert worst <= 64, worst
    # a different rate, resolution, counter width and mirrored motor/encoder: the same law
    worst2, c, f = compare(1000, 1024, 16, (-1, 1), (1, -1), 20000, 2, kd=0.001, kp=0.1, ki=2.0)
    print("max |viper - float| duty: %.1f Q15 LSB at 1 kHz, 1024 cpr, 16-bit counters, mirrored signs" % worst2)
    assert worst2 <= 64, worst2


def test_viper_matches_float_with_edge_timing():
    worst, c, f = compare(500, 4096, 32, (1, 1), (1, 1), 5000, 3, edge=True)
    print("max |viper - float| duty with edge-period speed estimates: %.1f Q15 LSB" % worst)
    assert worst <= 64, worst


def test_discontinuous_terms_match_away_from_their_switch_points():
    # kS*sign(sp), deadband compensation and kA*dsp/dt switch with a sign or at the ramp's end; away from those
    # instants both implementations agree as closely as the continuous part
    kw = {"ks": 0.08, "deadband": 0.05, "ka": 0.02, "max_accel": 20.0}
    hal, c = make(**kw)
    f = floatlaw.FloatLaw(500, 4096)
    f.configure(values(**kw))
    c.enable(True)
    f.enable([0, 0])
    sp = int(counts_per_s(c, 8.0))
    worst = 0.0
    for i in range(300):            # mid-ramp: 8 rad/s at 20 rad/s^2 takes 200 periods
        c.set_velocity(sp, -sp // 2)
        f.set_velocity(sp, -sp // 2)
        hal.counts[0] += 20
        hal.counts[1] -= 10
        hal.fire(1)
        dl, dr = f.step(hal.counts)
        if 5 < i < 190 or i > 210:
            worst = max(worst, abs(dl - hal.duty[0]), abs(dr - hal.duty[1]))
    print("max |viper - float| duty with kS, deadband, kA: %.1f Q15 LSB" % worst)
    assert worst <= 64, worst


def test_antiwindup_leaves_saturation_quickly():
    # 10 s against a wall (the wheel does not turn, output saturated), then released: at full duty the wheel
    # runs 2 % faster than the setpoint. With back-calculation the output leaves saturation within a bounded
    # time; the same law without it (float reference with the back-calculation gain zeroed) is still saturated
    # 10 s later: it drives "on the integral".
    hz = 500
    # (the encoder check off: a saturated output at a speed kV explains with half the duty is what it latches)
    kw = {"stall_speed": 0.0, "track_err_max": 500.0, "max_accel": 5000.0, "enc_ms": 0}
    hal, c = make(hz=hz, **kw)
    c.enable(True)
    sp = int(counts_per_s(c, 10.0))
    fast = sp * 102 // 100          # counts/s after the release
    for _ in range(10 * hz):
        c.set_velocity(sp, sp)
        hal.fire(1)
    assert c.status() & protocol.ST_SATURATED
    leave = None
    moved = 0
    for i in range(10 * hz):
        c.set_velocity(sp, sp)
        moved += fast
        hal.counts[0] = moved // hz
        hal.counts[1] = moved // hz
        hal.fire(1)
        if i > 50 and not c.status() & protocol.ST_SATURATED and leave is None:
            leave = i
            break
    assert leave is not None
    t_with = leave / hz
    print("with back-calculation: output leaves saturation %.3f s after release" % t_with)
    assert t_with < 0.5, t_with

    f = floatlaw.FloatLaw(hz, 4096)
    f.configure(values(**kw))
    f.g["aw"] = 0.0                 # the same PID without back-calculation
    f.enable([0, 0])
    cnt = [0, 0]
    for _ in range(10 * hz):
        f.set_velocity(sp, sp)
        f.step(cnt)
    leave_without = None
    moved = 0
    for i in range(10 * hz):
        f.set_velocity(sp, sp)
        moved += fast
        cnt[0] = cnt[1] = moved // hz
        f.step(cnt)
        if i > 50 and not f.saturated:
            leave_without = i
            break
    print("without back-calculation: %s" % ("leaves after %.3f s" % (leave_without / hz) if leave_without
                                           else "still saturated 10 s after release"))
    assert leave_without is None or leave_without / hz > 20 * t_with


def test_no_derivative_kick_on_setpoint_step():
    # A big D gain: a setpoint step at standstill changes the output only by P and feedforward. D acts on the
    # measurement, which did not move.
    hal, c = make(kd=0.2, max_accel=5000.0, kd_tau=0.002)
    c.enable(True)
    for _i in range(20):
        c.set_velocity(0, 0)
        hal.fire(1)
    sp = int(counts_per_s(c, 5.0))
    c.set_velocity(sp, sp)
    hal.fire(1)
    w = c.wheel(0)
    v = c.values
    rpc = TWO_PI / 4096
    err_rad = w["setpoint"] * rpc
    expect = v["kp"] * err_rad + v["ks"] + v["kv"] * err_rad + v["ka"] * 0 + v["ki"] * 0
    print("output right after a 5 rad/s step: %.4f duty (P + FF = %.4f, D = 0)" % (w["output"], expect))
    assert c.st[fx.W_DF] == 0
    assert abs(w["output"] - expect) < 0.002, (w["output"], expect)


def _wrap_case(bits):
    hal, c = make(bits=bits)
    top = 1 << bits
    start = top - 700
    hal.counts = [start, start]
    c.zero()
    for _i in range(50):
        hal.counts[0] += 37            # crosses the wrap forwards
        hal.counts[1] -= 23            # and backwards from the start (no wrap) - then we test below
        hal.fire(1)
    pl, pr = c.positions()
    assert pl == 50 * 37, pl
    assert pr == -50 * 23, pr
    hal.counts = [5, 5]
    c.zero()
    for _i in range(50):
        hal.counts[1] -= 29            # crosses zero backwards: raw goes to 2**bits - ...
        hal.fire(1)
    assert c.positions()[1] == -50 * 29, c.positions()
    vl, vr = c.velocities()
    assert abs(vr - (-29 * 500)) <= 60, vr      # the filtered estimate has converged on -14500 counts/s


def test_encoder_wrap_16_bits():
    _wrap_case(16)


def test_encoder_wrap_32_bits():
    _wrap_case(32)


def test_encoder_and_motor_signs_applied_once():
    hal, c = make(ms=(-1, 1), es=(-1, 1), max_accel=5000.0)
    c.enable(True)
    sp = int(counts_per_s(c, 5.0))
    for _i in range(10):
        c.set_velocity(sp, sp)
        hal.counts[0] -= 3              # mirrored encoder: raw counts go down while the wheel goes forward
        hal.counts[1] += 3
        hal.fire(1)
    pl, pr = c.positions()
    assert pl == 30 and pr == 30, (pl, pr)
    # the left motor is mirrored too: a forward command drives its raw duty negative
    assert hal.duty[0] < 0 < hal.duty[1], hal.duty


def test_joint_acceleration_limit_keeps_ratio():
    hal, c = make(max_accel=10.0, stall_speed=0.0, track_err_max=500.0)
    c.enable(True)
    acc = c.k[c.st[fx.G_BANK] * fx.KB + fx.K_ACC]     # Q8 counts/s per period, active bank
    c.set_velocity(8000, 2000)
    prev = (0, 0)
    for i in range(800):            # 8000 counts/s at 10 rad/s^2 (1630 counts/s^2): 614 periods
        c.set_velocity(8000, 2000)
        hal.fire(1)
        sl = c.st[fx.W_SP]
        sr = c.st[fx.WS + fx.W_SP]
        dl = sl - prev[0]
        dr = sr - prev[1]
        prev = (sl, sr)
        if sl < 8000 << 8:
            # ramping: the larger step is the limit, the other keeps the 4:1 ratio of the command
            assert abs(dl - acc) <= 1, (i, dl, acc)
            assert abs(dl - 4 * dr) <= 4, (i, dl, dr)
            assert sl > 0 and abs(sl - 4 * sr) <= 4 * (i + 1), (i, sl, sr)
    assert c.st[fx.W_SP] == 8000 << 8 and c.st[fx.WS + fx.W_SP] == 2000 << 8


def test_deadman_timing_and_ramp():
    hz = 500
    # (the wheels do not turn in this test: stall and tracking checks off)
    hal, c = make(hz=hz, deadman_ms=100, deadman_disable_ms=2000, max_accel=30.0, stall_speed=0.0,
                  track_err_max=500.0)
    c.enable(True)
    sp = int(counts_per_s(c, 6.0))
    for _ in range(hz):
        c.set_velocity(sp, sp)
        hal.fire(1)
    assert c.st[fx.W_SP] == sp << 8
    # the host goes quiet: count periods, no sleeping
    trip = None
    stopped = None
    off = None
    for i in range(1, 3 * hz):
        hal.fire(1)
        st = c.status()
        if trip is None and st & protocol.ST_DEADMAN:
            trip = i
        if trip is not None and stopped is None and c.st[fx.W_SP] == 0:
            stopped = i
        if off is None and not st & protocol.ST_ENABLED:
            off = i
            assert not hal.energized and hal.duty == [0, 0]
    ramp_expect = 6.0 / 30.0 * hz
    print("deadman: DEADMAN after %d periods (%.0f ms), setpoints at zero %.0f ms later (6 rad/s at 30 rad/s^2 "
          "-> %.0f ms), de-energized after %.0f ms" % (trip, trip * 1000 / hz, (stopped - trip) * 1000 / hz,
                                                        ramp_expect * 1000 / hz, off * 1000 / hz))
    assert trip == 100 * hz // 1000 + 1, trip
    assert abs((stopped - trip) - ramp_expect) <= 2, (stopped, trip)
    assert off == 2000 * hz // 1000 + 1, off
    assert c.stats()["deadman_trips"] == 1
    # a new SET_VEL clears DEADMAN but a de-energized board needs ENABLE again
    c.set_velocity(sp, sp)
    hal.fire(1)
    assert not c.status() & protocol.ST_DEADMAN
    assert not c.status() & protocol.ST_ENABLED and hal.duty == [0, 0]


def test_deadman_disable_waits_for_the_ramp():
    # deadman_disable_ms (100) shorter than deadman_ms (500), and a braking time (10 rad/s at 20 rad/s^2 =
    # 500 ms) longer than either: the board must still ramp both wheels to zero before it de-energizes (stop
    # category 1), never cut power on time alone (category 0: the robot would coast). Both laws alike.
    hz = 500
    kw = dict(deadman_ms=500, deadman_disable_ms=100, max_accel=20.0, stall_speed=0.0, track_err_max=500.0)
    hal, c = make(hz=hz, **kw)
    f = floatlaw.FloatLaw(hz, 4096, 32, (1, 1), (1, 1))
    f.configure(values(**kw))
    c.enable(True)
    f.enable([0, 0])
    spl = int(counts_per_s(c, 10.0))
    spr = int(counts_per_s(c, -4.0))
    for _ in range(hz):
        c.set_velocity(spl, spr)
        f.set_velocity(spl, spr)
        hal.fire(1)
        f.step([0, 0])
    assert c.st[fx.W_SP] == spl << 8 and c.st[fx.WS + fx.W_SP] == spr << 8
    trip = stopped = off = f_off = None
    for i in range(1, 3 * hz):
        hal.fire(1)
        f.step([0, 0])
        st = c.status()
        if trip is None and st & protocol.ST_DEADMAN:
            trip = i
        if stopped is None and c.st[fx.W_SP] == 0 and c.st[fx.WS + fx.W_SP] == 0:
            stopped = i
        if off is None and not st & protocol.ST_ENABLED:
            off = i
            assert not hal.energized and hal.duty == [0, 0]
        if f_off is None and not f.status() & protocol.ST_ENABLED:
            f_off = i
        if off is None:
            # still energized: the setpoints only ever move toward zero, never jump there
            assert abs(c.st[fx.W_SP]) <= spl << 8
    ramp = 10.0 / 20.0 * hz
    print("deadman 500 ms / disable 100 ms: DEADMAN at %d ms, setpoints at zero at %d ms (ramp %d ms), "
          "de-energized at %d ms" % (trip * 2, stopped * 2, ramp * 2, off * 2))
    assert trip == 500 * hz // 1000 + 1, trip
    assert abs((stopped - trip) - ramp) <= 2, (stopped, trip)
    assert stopped < off, (stopped, off)            # zero setpoints first, then ENABLED clears
    assert off == stopped + 1, (stopped, off)       # the period after the ramp ended (the gap is long over)
    assert f_off == off, (f_off, off)               # the float reference decides the same period


def _deadman_rest_run(motion, n_quiet, **kw):
    """Both laws: drive, then let the host go quiet while `motion(i)` (counts per period, both wheels) keeps the
    encoders going; -> (period of the viper step's outputs off, the float law's), None if never."""
    hz = 500
    kw.setdefault("stall_speed", 0.0)
    kw.setdefault("track_err_max", 500.0)
    hal, c = make(hz=hz, **kw)
    f = floatlaw.FloatLaw(hz, 4096, 32, (1, 1), (1, 1))
    f.configure(values(**kw))
    c.enable(True)
    f.enable([0, 0])
    pos = 0
    for _ in range(hz // 5):
        c.set_velocity(0, 0)
        f.set_velocity(0, 0)
        hal.fire(1)
        f.step([0, 0])
    off = f_off = None
    for i in range(1, n_quiet):
        pos += motion(i)
        hal.counts[0] = hal.counts[1] = pos
        hal.fire(1)
        f.step([pos & 0xFFFFFFFF, pos & 0xFFFFFFFF])
        if off is None and not c.status() & protocol.ST_ENABLED:
            off = i
            assert not hal.energized and hal.duty == [0, 0]
        if f_off is None and not f.status() & protocol.ST_ENABLED:
            f_off = i
    return off, f_off


def test_deadman_cuts_a_wheel_that_keeps_moving_after_the_ramp():
    # The relay experiment's settings (kp at its maximum, max_duty 0.9, no feedforward, the ramp lifted) hold a
    # ZERO setpoint by oscillating at full relay duty: the deadman's ramp to zero changed nothing, and the wheel
    # drove at +-0.9 duty until deadman_disable_ms. Now, DEADMAN_REST_MS after the ramp reached zero, a wheel
    # still moving (here: an oscillation of +-30 counts) turns the outputs off. Both laws, the same period.
    relay = dict(kp=10.0, ki=0.0, ks=0.0, kv=0.0, max_duty=0.9, max_accel=5000.0, deadman_ms=100,
                 deadman_disable_ms=2000)

    def oscillate(i):
        return 3 if (i // 10) % 2 else -3       # +-30 counts about the rest position, 20 ms period

    off, f_off = _deadman_rest_run(oscillate, 1500, **relay)
    rest_n = params.rest_periods(500)
    dm_n = 100 * 500 // 1000
    print("relay settings, wheel oscillating: outputs off %d ms after the host went quiet (deadman %d ms + rest "
          "window %d ms); disable_ms would have been 2000 ms" % (off * 2, dm_n * 2, rest_n * 2))
    assert off is not None and off <= dm_n + rest_n + 3, off
    assert off >= dm_n + rest_n, off            # not before the window: a braking wheel gets its time
    assert f_off == off, (f_off, off)
    assert fx.REST_COUNTS == params.DEADMAN_REST_COUNTS


def test_deadman_holds_a_wheel_at_rest_until_disable_ms():
    # The normal case: the wheels at rest after the ramp, the encoder dithering one count on an edge (the default
    # robot's jitter): the board keeps braking them until deadman_disable_ms, as before.
    def dither(i):
        return (1 if i % 2 else -1) if i > 5 else 0

    off, f_off = _deadman_rest_run(dither, 1500, deadman_ms=100, deadman_disable_ms=2000)
    assert off == 2000 * 500 // 1000 + 1, off
    assert f_off == off, (f_off, off)


# ---- the law's rates checked against numbers worked out by hand from the SI parameters (not against FloatLaw,
# which shares the design): the wheels do not turn, so the measured speed stays 0 and the error is the setpoint ----

RPC = TWO_PI / 4096             # rad per count at the tests' 4096 counts/rev
Q28 = float(1 << 28)
STILL = dict(stall_speed=0.0, track_err_max=500.0)      # no stall/tracking fault on a wheel held still


def hold(hal, c, left, right, n):
    """n periods with the command refreshed every period (the deadman never trips)."""
    for _ in range(n):
        c.set_velocity(left, right)
        hal.fire(1)


def test_integrator_rate_is_ki_err_dt():
    # kp = kv = 0, constant error e: after N periods W_I = ki*e*N*dt (Q28). The ramp is one period (5000 rad/s^2
    # allows 10 rad/s per period), so the error is e from the first period on.
    hz = 500
    n = 250
    ki = 0.6
    hal, c = make(hz=hz, kp=0.0, kv=0.0, ki=ki, max_accel=5000.0, **STILL)
    c.enable(True)
    hold(hal, c, 652, -1304, n)                 # 1.0 and -2.0 rad/s: I = 0.3 and -0.6 duty, below the clamp
    kb = c.st[fx.G_BANK] * fx.KB
    m, s = c.k[kb + fx.K_I], c.k[kb + fx.K_I + 1]
    for w, sp in ((0, 652), (1, -1304)):
        got = c.st[w * fx.WS + fx.W_I]
        hand = ki * (sp * RPC) * n / hz * Q28
        # the step's own arithmetic: the same floored term every period
        assert got == n * ((sp << fx.VQ) * m >> s), (w, got)
        # against the SI value: ki is held as a 15-bit mantissa (relative error <= 2**-15) and each period
        # floors, so a Q28 LSB is out of reach; the difference stays below one LSB of the Q16 duty it feeds
        print("integrator %+.1f rad/s, %d periods: W_I %d, ki*e*N*dt %.0f (Q28), diff %.0f = %.3f Q16 LSB"
              % (sp * RPC, n, got, hand, got - hand, (got - hand) / (1 << fx.IQ)))
        assert abs(got - hand) < 1 << fx.IQ, (w, got, hand)
        assert abs(got - hand) <= n * (abs(hand) / n * 2.0 ** -15 + 1), (w, got, hand)


def test_clamped_period_back_calculation():
    # the feedforward alone exceeds max_duty (kv*sp = 0.5 * 3 rad/s = 1.5 duty > 0.8): the output clamps and
    # one period moves I by (ki*e + (out - u)/Tt)*dt with u = kv*sp + I (kp = 0)
    hz = 500
    ki, kv, windup_tau, maxd = 0.6, 0.5, 0.01, 0.8
    hal, c = make(hz=hz, kp=0.0, ks=0.0, kv=kv, ki=ki, windup_tau=windup_tau, max_duty=maxd, max_accel=5000.0, **STILL)
    c.enable(True)
    sp = 1956                                   # counts/s: 3.0 rad/s
    hold(hal, c, sp, -sp, 20)                   # in saturation, I has wound to its back-calculated level
    for w, sgn in ((0, 1), (1, -1)):
        assert c.st[w * fx.WS + fx.W_OUT] == sgn * int(maxd * 65536 + 0.5)
    i0 = [c.st[fx.W_I], c.st[fx.WS + fx.W_I]]
    hold(hal, c, sp, -sp, 1)
    dt = 1.0 / hz
    for w, sgn in ((0, 1), (1, -1)):
        e = sgn * sp * RPC
        u = kv * e + i0[w] / Q28
        out = sgn * maxd
        hand = (ki * e + (out - u) / windup_tau) * dt * Q28
        got = c.st[w * fx.WS + fx.W_I] - i0[w]
        print("clamped period: u %.4f out %.2f dI %d, hand %.0f (Q28), diff %.3f Q16 LSB"
              % (u, out, got, hand, (got - hand) / (1 << fx.IQ)))
        assert abs(hand) > 100 * (1 << fx.IQ)           # a real correction, not a rounding-sized one
        assert abs(got - hand) < 1 << fx.IQ, (w, got, hand)


def test_static_friction_deadband_and_acceleration_feedforward():
    # kp = ki = kv = kd = 0: the duty is kS*sign(sp) + kA*dsp/dt, plus the deadband in the direction of that sum
    # while a motion is commanded. The ramp at max_accel makes dsp/dt = max_accel exactly.
    hz = 500
    ks, db, ka, acc = 0.1, 0.05, 0.01, 30.0
    hal, c = make(hz=hz, kp=0.0, ki=0.0, kv=0.0, kd=0.0, ks=ks, deadband=db, ka=ka, max_accel=acc, **STILL)
    c.enable(True)

    def q15(duty):
        return duty * 32768.0

    def near(got, duty, what):
        print("%s: duty %d Q15, hand %.1f" % (what, got, q15(duty)))
        assert abs(got - q15(duty)) <= 1.5, (what, got, q15(duty))

    hold(hal, c, 0, 0, 3)
    assert hal.duty == [0, 0]                   # at rest nothing is added: no kS, no deadband kick
    sp = 1956                                   # 3 rad/s: the ramp takes 3/30 s = 50 periods
    hold(hal, c, sp, -sp, 10)                   # ramping up: kS + kA*acc + deadband, mirrored on the right
    near(hal.duty[0], ks + ka * acc + db, "ramp up left")
    near(hal.duty[1], -(ks + ka * acc + db), "ramp up right")
    hold(hal, c, sp, -sp, 60)                   # on the setpoint: kA drops out
    near(hal.duty[0], ks + db, "steady left")
    near(hal.duty[1], -(ks + db), "steady right")
    hold(hal, c, 0, 0, 10)                      # ramping down, sp still > 0: kS - kA*acc = -0.2, deadband follows u
    near(hal.duty[0], ks - ka * acc - db, "ramp down left")
    near(hal.duty[1], -(ks - ka * acc - db), "ramp down right")
    hold(hal, c, 0, 0, 60)
    assert hal.duty == [0, 0]


def test_stall_fault_latches_until_clear():
    hz = 500
    hal, c = make(hz=hz, stall_ms=200, stall_speed=0.5, max_accel=5000.0, track_err_max=500.0)
    c.enable(True)
    sp = int(counts_per_s(c, 15.0))
    n = 0
    while not c.fault() and n < 2 * hz:
        c.set_velocity(sp, sp)      # the wheels do not move: saturated, no motion
        hal.fire(1)
        n += 1
    assert c.fault() in (protocol.FAULT_STALL_LEFT, protocol.FAULT_STALL_RIGHT), c.fault()
    print("stall fault after %d ms of saturation without motion (stall_ms 200)" % (n * 1000 // hz))
    assert 190 <= n * 1000 // hz <= 260, n
    assert c.status() & protocol.ST_FAULT and not c.status() & protocol.ST_ENABLED
    assert not hal.energized and hal.duty == [0, 0]
    # latched: commands and time do not clear it, ENABLE is refused
    for _i in range(100):
        c.set_velocity(sp, sp)
        hal.fire(1)
    assert c.fault() and not c.enable(True) and not hal.energized
    assert c.clear_fault() in (protocol.FAULT_STALL_LEFT, protocol.FAULT_STALL_RIGHT)
    hal.fire(1)
    assert c.fault() == 0 and not c.status() & protocol.ST_FAULT
    assert c.enable(True) and hal.energized


def test_tracking_and_overspeed_faults():
    hal, c = make(track_err_max=2.0, track_err_ms=100, stall_ms=10000, max_accel=5000.0)
    c.enable(True)
    sp = int(counts_per_s(c, 5.0))
    for _i in range(200):
        c.set_velocity(sp, sp)
        hal.counts[0] += sp // 500      # left follows, right does not: tracking error on the right
        hal.fire(1)
        if c.fault():
            break
    assert c.fault() == protocol.FAULT_TRACKING_RIGHT, c.fault()
    c.clear_fault()
    hal2, c2 = make(max_wheel_speed=5.0)
    c2.enable(True)
    for _i in range(100):
        c2.set_velocity(0, 0)
        hal2.counts[1] += int(counts_per_s(c2, 10.0)) // 500    # pushed to twice the speed limit
        hal2.fire(1)
        if c2.fault():
            break
    assert c2.fault() == protocol.FAULT_OVERSPEED_RIGHT, c2.fault()


def test_enable_zeroes_everything_stale():
    hal, c = make(max_accel=5000.0)
    sp = int(counts_per_s(c, 5.0))
    # disabled: SET_VEL moves nothing and the state is still reported
    for _i in range(20):
        c.set_velocity(sp, sp)
        hal.counts[0] += 10
        hal.fire(1)
    assert hal.duty == [0, 0] and not hal.energized
    assert c.status() & protocol.ST_ENABLED == 0
    assert c.positions()[0] == 200
    # enable: positions zero, command zero (the stale one is not replayed), integrator zero
    assert c.enable(True)
    assert c.positions() == (0, 0)
    hal.fire(5)
    assert c.st[fx.W_SP] == 0 and c.st[fx.W_SPC] == 0
    assert hal.duty[0] <= 0     # only the measured speed (decaying) acts: never a jump forward
    assert c.st[fx.W_I] <= 0


def test_bumpless_gain_change():
    hal, c = make(max_accel=5000.0)
    c.enable(True)
    sp = int(counts_per_s(c, 8.0))
    for _i in range(400):
        c.set_velocity(sp, sp)
        hal.counts[0] += sp // 500 - 2      # a steady tracking error keeps the P term busy
        hal.counts[1] += sp // 500 - 2
        hal.fire(1)
    before = hal.duty[0]
    v = dict(c.values)
    v["kp"] = v["kp"] * 8
    v["kv"] = v["kv"] * 0.5
    c.configure(v)
    hal.counts[0] += sp // 500 - 2
    hal.counts[1] += sp // 500 - 2
    c.set_velocity(sp, sp)
    hal.fire(1)
    jump = abs(hal.duty[0] - before)
    print("output change at an 8x kp / 0.5x kv change: %d Q15 LSB (%.3f %% duty)" % (jump, jump / 327.68))
    assert jump < 100, jump
    # without the integrator transfer the same change would move the output by the P and kV terms' jump
    rpc = TWO_PI / 4096
    naive = abs(7 * c.values["kp"] / 8 * 2 * 500 * rpc - 0.5 * v["kv"] * 2 * sp * rpc) * 32768
    print("(a gain switch without the transfer would jump by about %d Q15 LSB)" % naive)
    assert naive > 10 * jump


def test_setpoint_step_with_a_gain_change_in_the_same_period():
    """A new setpoint and a gain-bank switch taken in the same period: the transfer moves the integrator by the
    jump of the other terms, and before the fix it counted the setpoint step as part of that jump and cancelled
    it (the output stayed where it was). The switch now waits one period; the step goes through with the old
    gains, and the switch one period later is bumpless."""
    for law in ("viper", "float"):
        hal, c = make(max_accel=5000.0, ks=0.0)
        f = floatlaw.FloatLaw(500, 4096, 32, (1, 1), (1, 1))
        f.configure(values(max_accel=5000.0, ks=0.0))
        c.enable(True)
        f.enable([hal.counts[0], hal.counts[1]])
        sp1 = int(counts_per_s(c, 4.0))
        sp2 = int(counts_per_s(c, 8.0))

        def period(sp, hal=hal, c=c, f=f, law=law, sp1=sp1):     # this iteration's objects (ruff B023)
            hal.counts[0] += sp1 // 500
            hal.counts[1] += sp1 // 500
            if law == "viper":
                c.set_velocity(sp, sp)
                hal.fire(1)
                return hal.duty[0]
            f.set_velocity(sp, sp)
            return f.step([hal.counts[0], hal.counts[1]])[0]

        for _i in range(400):
            before = period(sp1)
        old = dict(c.values)
        v = dict(c.values, ks=0.0, max_accel=5000.0)
        v["kp"] = v["kp"] * 8
        v["kv"] = v["kv"] * 0.5
        if law == "viper":
            c.set_velocity(sp2, sp2)        # staged: the next period takes it ...
            c.configure(v)                  # ... and the bank request with it
            hal.counts[0] += sp1 // 500
            hal.counts[1] += sp1 // 500
            hal.fire(1)
            first = hal.duty[0]
        else:
            f.set_velocity(sp2, sp2)
            f.configure(v)
            hal.counts[0] += sp1 // 500
            hal.counts[1] += sp1 // 500
            first = f.step([hal.counts[0], hal.counts[1]])[0]
        second = period(sp2)
        # the old gains' answer to a 4 rad/s step: kV and kp on 4 rad/s (the wheel still turns at 4 rad/s)
        rpc = TWO_PI / 4096
        want = (old["kv"] + old["kp"]) * (sp2 - sp1) * rpc * 32768
        print("%s: step with a gain change in the same period: %d Q15 LSB (old gains' step %d), then %d" % (
            law, first - before, want, second - first))
        assert abs((first - before) - want) < 0.05 * want, (first - before, want)
        assert abs(second - first) < 100, second - first


def test_loop_statistics_and_overruns():
    hal, c = make(hz=500)
    hal.fire(10)
    hal.now_us += 2000                  # one period twice as long: an overrun
    hal.fire(1)
    s = c.stats()
    assert s["period_min_us"] == 2000 and s["period_max_us"] == 4000, s
    assert s["overruns"] == 1, s


def test_low_speed_edge_timing():
    # 1 count every 5 periods (100 counts/s at 500 Hz): counting alone sees 0,0,0,0,500 counts/s; the edges' times
    # (10 ms apart) give the speed directly, from the second edge on (a lone count is no speed)
    hal, c = make(edge=True, vel_tau=0.0)
    seen = []
    for i in range(100):
        if i % 5 == 0:
            hal.counts[0] += 1
            hal.edges[0] = hal.now_us + 2000 - 700         # 0.7 ms before the period that reads it starts
        hal.fire(1)
        seen.append(c.velocities()[0])
    assert seen[:5] == [0] * 5, seen[:10]
    vl = seen[-1]
    print("edge-timed speed at 100 counts/s: %d counts/s" % vl)
    assert 99 <= vl <= 101 and min(seen[5:]) >= 99, (vl, seen)
    # stopped: no edge comes; once the next one is a whole interval overdue (20 ms after the last) it reads zero
    last = hal.edges[0]
    zero_at = None
    for _ in range(40):
        hal.fire(1)
        v = c.velocities()[0]
        assert 0 <= v <= 101
        if v == 0 and zero_at is None:
            zero_at = hal.now_us - last
    print("reads zero %d us after the last edge (interval 10000 us)" % zero_at)
    assert 20000 < zero_at <= 22000, zero_at


def test_edge_timed_steps_allocate_nothing():
    # the edge path under heap_lock: counts at 0, 1 and several per period, reversals, a rest long enough to reach
    # zero and to forget the last edge, and the 2**30 wrap of ticks_us, while driving
    hal, c = make(edge=True, deadman_disable_ms=60000)
    c.enable(True)
    c.set_velocity(500, -500)
    hal.now_us = 0x3FFFFFFF - 3000000                   # the wrap comes 3 s into the run
    counts = hal.counts
    edges = hal.edges
    lo = array("i", [0, 0])
    n = 0
    micropython.heap_lock()
    try:
        while n < 3000:
            if n < 1000 or n > 1300:
                step = (n % 7) - 2 if n < 500 else (n % 3)      # -2..4 counts a period, then 0..2
                counts[0] += step
                counts[1] -= step
                if step != 0:
                    edges[0] = (hal.now_us + 1500) & 0x3FFFFFFF
                    edges[1] = edges[0]
            hal.fire(1)
            v = c.st[fx.W_VEL]
            if v < lo[0]:
                lo[0] = v
            n += 1
    finally:
        micropython.heap_unlock()
    assert c.st[fx.G_TICKS] > 3000 and lo[0] > -(40000 << fx.VQ)


def test_heap_lock_around_10000_steps():
    # 10000 periods under heap_lock with telemetry on, and inside them everything the step does at a period
    # boundary on the slow path's behalf (on rp2 the step runs in the hard timer IRQ, so these may not allocate
    # either): a DISABLE, CLEAR, ENABLE and ZERO request, a new command, and two gain-bank switches (the first
    # left pending by configure(), the second asked for the way configure() asks: one word). The slow-path halves
    # (configure's conversion, set_velocity's scaling) allocate and stay outside the lock: their stores are
    # written directly here. The deadman ramps the first command to zero but de-energizes only after 60 s.
    hal, c = make(kd=0.01, ks=0.05, deadband=0.02, ka=0.01, deadman_disable_ms=60000)
    from viperdrive import telemetry
    ring = telemetry.Ring(32)
    c.attach_ring(ring.buf, ring.hdr, ring)
    c.set_telemetry_div(5)
    c.enable(True)
    c.set_velocity(3000, -2000)
    hal.fire(1)
    bank0 = c.st[fx.G_BANK]
    c.configure(values(kd=0.01, ks=0.05, deadband=0.02, ka=0.01, deadman_disable_ms=60000, kp=0.3, kv=0.02))
    assert c.st[fx.G_BANK_REQ] != bank0                 # pending: the step switches in the first locked period
    st = c.st
    counts = hal.counts
    # what the loop saw at each event: bank after the pending switch, enabled after DISABLE, fault after CLEAR,
    # enabled after ENABLE, position right after ZERO, bank after the second switch, setpoint and duty 40
    # periods after the new command
    seen = array("i", [-1] * 8)
    n = 0
    micropython.heap_lock()
    try:
        while n < 10000:
            if n == 2000:
                st[fx.G_REQ] = fx.REQ_DISABLE
            elif n == 2100:
                st[fx.G_REQ] = fx.REQ_CLEAR
            elif n == 2200:
                st[fx.G_REQ] = fx.REQ_ENABLE
            elif n == 2300:
                st[fx.W_SPN] = 2500 << fx.VQ                 # a new command, as set_velocity stages it
                st[fx.WS + fx.W_SPN] = 1000 << fx.VQ
                st[fx.G_CMD_NEW] = 1
            elif n == 5000:
                st[fx.G_REQ] = fx.REQ_ZERO
            elif n == 6000:
                st[fx.G_BANK_REQ] = bank0                   # back to the first bank (still holds its gains)
            counts[0] += 6
            counts[1] -= 4
            hal.fire(1)
            if n == 0:
                seen[0] = st[fx.G_BANK]
            elif n == 2000:
                seen[1] = st[fx.G_ENABLED]
            elif n == 2100:
                seen[2] = st[fx.G_REQ] | st[fx.G_FAULT]
            elif n == 2200:
                seen[3] = st[fx.G_ENABLED]
            elif n == 2340:
                seen[6] = st[fx.W_SP]
                seen[7] = c.io[fx.IO_DL]
            elif n == 5000:
                seen[4] = st[fx.W_POS]
            elif n == 6000:
                seen[5] = st[fx.G_BANK]
            n += 1
    finally:
        micropython.heap_unlock()
    assert n == 10000
    assert ring.hdr[0] == 2000, ring.hdr[0]
    assert seen[0] == 1 - bank0 and seen[5] == bank0, list(seen)       # both bank switches happened
    assert seen[1] == 0 and seen[2] == 0 and seen[3] == 1, list(seen)   # DISABLE, CLEAR, ENABLE served
    assert hal.energize_calls[-1] is False          # the DISABLE period cut the bridges from inside tick()
    assert seen[4] == 0, seen[4]                    # ZERO: the position restarts from that period's counters
    assert st[fx.W_POS] == 6 * 4999 and st[fx.WS + fx.W_POS] == -4 * 4999
    assert seen[6] > 0 and seen[7] != 0, list(seen)  # the new command drives again after ENABLE
    print("10000 control steps (both wheels, telemetry on, 4 requests, 2 bank switches) under heap_lock: "
          "no allocation")


def test_products_fit_32_bits_for_documented_ranges():
    # The unix port is 64-bit, so an overflow there would pass silently: check every product of the step in
    # Python integers for extreme gains (parameter table bounds) and extreme inputs, against +-2**31.
    lim = 1 << 31
    worst = 0
    for hz in (100, 500, 1000):
        for cpr in (16, 4096, 65536, 1 << 20):
            for pick in ("min", "max", "default"):
                v = {}
                for p in params.TABLE:
                    v[p[params.NAME]] = {"min": p[params.MIN], "max": p[params.MAX],
                                         "default": p[params.DEFAULT]}[pick]
                words = control.fixed_gains(v, hz, cpr)
                for g in (fx.K_AV, fx.K_P, fx.K_I, fx.K_AW, fx.K_AD, fx.K_D, fx.K_V, fx.K_A):
                    m, s, xl = words[g], words[g + 1], words[g + 2]
                    assert 0 <= m <= 32768 and 0 <= s <= 45 and 0 < xl < (1 << 30), (g, m, s, xl)
                    for x in (xl, -xl, xl // 3, -(xl // 7), 1, -1):
                        hi = (x >> 15) * m
                        lo = (x & 0x7FFF) * m
                        if s >= 15:
                            t = (hi + (lo >> 15)) >> (s - 15)
                            parts = (hi, lo, hi + (lo >> 15), t)
                        else:
                            t = (hi << (15 - s)) + (lo >> s)
                            parts = (hi, lo, hi << (15 - s), t)
                        for q in parts:
                            worst = max(worst, abs(q))
                            assert -lim <= q < lim, (hz, cpr, pick, g, x, q)
                        # the term is the exact floor of x*m/2**s
                        assert t == (x * m) >> s
                # sums in the step: P - D + FF terms (each <= TERM_MAX + 1 LSB) + integrator (>> IQ)
                assert 5 * (fx.TERM_MAX + 32768) < lim
                # integrator: I (<= I_MAX) plus two terms of at most I_TERM_MAX (+ one LSB of gain rounding)
                assert fx.I_MAX + 2 * (fx.I_TERM_MAX + 32768) < lim
                # bumpless jump: bounded to TERM_MAX before the shift
                assert fx.I_MAX + (fx.TERM_MAX << fx.IQ) < lim
                # speeds in Q8: setpoints and raw speeds <= 2**28, so errors and derivative inputs < 2**30
                assert words[fx.K_SPMAX] <= fx.V_MAX_COUNTS << fx.VQ
                # joint slew: acc <= 2**28, ratios |r| <= 2**15 -> both partial products < 2**31
                acc = words[fx.K_ACC]
                assert 0 < acc <= fx.V_MAX_COUNTS << fx.VQ
                for q in ((acc >> 15) * 32768, (acc & 0x7FFF) * 32768 + 16384, (16383 << 16)):
                    worst = max(worst, q)
                    assert q < lim, (hz, cpr, pick, acc, q)
                # encoder plausibility: the duties multiplied are |out| less kS + deadband (>= 0), and only when
                # positive: 0 < x <= max_duty <= 2**16; times 1/kV or 1/kV/enc_ratio, multipliers below 2**14
                if words[fx.K_ENC_N]:
                    assert words[fx.K_ENC_0] >= 0 and words[fx.K_ENC_M] >= 0
                    for mul in (words[fx.K_ENC_IV], words[fx.K_ENC_IR]):
                        assert 0 < mul < (1 << 14) and 0 <= words[fx.K_ENC_SH] <= 30, (hz, cpr, pick, mul)
                        q = words[fx.K_MAXD] * mul
                        assert q < lim, (hz, cpr, pick, q)
                        worst = max(worst, q)
                # raw speed: |d| <= 2**20 before d*hz, hz <= 1000
                assert fx.V_MAX_COUNTS * hz < (1 << 30)
                assert 4 * (fx.V_MAX_COUNTS << fx.VQ) <= (1 << 30)
    print("largest intermediate over the documented ranges: %d (< 2**31 = %d)" % (worst, lim))


def test_encoder_glitch_is_clamped_not_wrapped():
    # a counter jump far beyond any real speed (a glitch, a hal bug): the raw speed clamps at the documented
    # range with the right sign; on a 32-bit board d*hz would otherwise wrap into a random value
    hal, c = make(vel_tau=0.0)
    for jump in (40000000, -40000000, 3000, -3000):
        hal.counts[0] += jump
        hal.fire(1)
        raw = c.st[fx.W_RAW]
        expect = max(-fx.V_MAX_COUNTS, min(fx.V_MAX_COUNTS, jump * 500))
        assert raw == expect, (jump, raw, expect)
    c.enable(True)
    hal.counts[1] += 40000000
    hal.fire(1)
    assert c.fault() == protocol.FAULT_OVERSPEED_RIGHT
