# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The float fallback (CircuitPython has no viper emitter): with fixedstep unavailable, control.controller()
# returns FloatController, and the App behaves the same through the link: enable, drive, deadman, faults,
# telemetry, statistics.
import fakehal
from viperdrive import app as app_mod
from viperdrive import control, control_float
from viperdrive.shared import protocol as P
from viperdrive.shared.params import IRREGULAR_UP as P_IRREGULAR_UP

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 500}


def make():
    saved = control.fx
    control.fx = None               # what a failed `import fixedstep` leaves behind
    try:
        hal = fakehal.Board(CFG)
        a = app_mod.App(hal, CFG, params_path="/tmp/viperdrive-mptest-fallback.json")
    finally:
        control.fx = saved
    a.start()
    return hal, a


def test_fallback_controller_is_chosen_and_drives():
    hal, a = make()
    assert isinstance(a.ctrl, control_float.FloatController)
    par = P.Parser()

    def xfer(frame, periods=1):
        hal.stream.inject(frame)
        a.service()
        hal.fire(periods)
        a.service()
        return [f for f in par.feed(hal.stream.take()) if f[0] != P.TELEMETRY_DATA]

    assert xfer(P.pack_enable(True)) == [(P.ENABLE_ACK, b"\x01")]
    assert hal.energized
    for _ in range(50):
        hal.counts[0] += 4
        hal.counts[1] += 4
        (cmd, payload), = xfer(P.pack_set_vel(2000, 2000))
    pl, pr, vl, vr, st = P.unpack_state(payload)
    assert st & P.ST_ENABLED and pl > 0 and 1900 <= vl <= 2100, (pl, vl, st)
    assert hal.duty[0] > 0
    # the speeds the sensor task's gyro witness reads, as the viper Controller gives them (Q8 counts/s)
    buf = [0, 0, 0, 0]
    a.ctrl.speeds_into(buf)
    assert abs(buf[0] - (vl << 8)) < 256 and abs(buf[1] - (vr << 8)) < 256, buf
    assert buf[2] == buf[3] and 0 < buf[2] <= 2000 << 8, buf            # the setpoint on its ramp to 2000
    # deadman: no command for 100 ms -> DEADMAN
    hal.fire(60)
    assert a.ctrl.status() & P.ST_DEADMAN
    d = P.unpack_diag(xfer(P.pack_get_diag())[0][1])
    assert d["deadman_trips"] == 1 and d["period_min_us"] == 2000 and d["flags"] & P.DIAG_TIMER_SOFT
    # telemetry through the ring's plain-Python writer
    assert xfer(P.pack_telemetry(100)) == [(P.TELEMETRY_ACK, b"d\x00")]
    hal.stream.inject(P.pack_set_vel(1000, 1000))
    a.service()
    hal.fire(20)
    a.service()
    data = [P.unpack_telemetry_data(p) for c, p in par.feed(hal.stream.take()) if c == P.TELEMETRY_DATA]
    assert len(data) >= 3 and data[-1][10] & P.ST_ENABLED, data


def test_fallback_latches_stall_fault():
    hal, a = make()
    a.ctrl.configure(dict(a.params.values, stall_ms=100, max_accel=5000.0))
    assert a.enable(True)
    # one period at rest first: the new gains switch in bumplessly against the last period's terms, and a
    # setpoint step taken in the same period would be cancelled by that transfer
    hal.fire(1)
    for _ in range(200):
        a.ctrl.set_velocity(8000, 8000)     # wheels held: saturated, no motion
        hal.fire(1)
        if a.ctrl.fault():
            break
    assert a.ctrl.fault() in (P.FAULT_STALL_LEFT, P.FAULT_STALL_RIGHT) and not hal.energized
    assert not a.enable(True)
    assert a.clear_fault() in (P.FAULT_STALL_LEFT, P.FAULT_STALL_RIGHT)
    assert a.enable(True) and hal.energized


def test_fallback_controller_latches_the_slow_paths_fault_and_status_bits():
    # the battery cut-off and warning bit on the float law (CircuitPython's controller; it has no e-stop input)
    hal, a = make()
    a.ctrl.enable(True)
    for _ in range(20):
        hal.counts[0] += 4
        hal.counts[1] += 4
        a.ctrl.set_velocity(2000, 2000)
        hal.fire(1)
    assert hal.energized and hal.duty[0] > 0
    a.ctrl.set_status_bits(P.ST_BATTERY_LOW)
    a.ctrl.latch_fault(P.FAULT_BATTERY_LOW)
    hal.fire(1)
    assert a.ctrl.fault() == P.FAULT_BATTERY_LOW and not hal.energized and hal.duty == [0, 0]
    st = a.ctrl.state()[4]
    assert st & P.ST_FAULT and st & P.ST_BATTERY_LOW and not st & P.ST_ENABLED
    assert a.ctrl.clear_fault() == P.FAULT_BATTERY_LOW and a.ctrl.estop_open() is False


def _float_app(cfg, soft):
    saved = control.fx
    control.fx = None
    try:
        hal = fakehal.Board(cfg)
        hal.soft = not soft
        a = app_mod.App(hal, cfg, params_path="/tmp/viperdrive-mptest-fallback-soft.json")
    finally:
        control.fx = saved
    # a machine backend knows whether its timer is soft only once it runs (esp32: a timer that refused a hard
    # IRQ): the controller takes the flag when it starts, not when it is built
    hal.soft = soft
    a.start()
    return hal, a


def _raw_speeds(hal, a, spans):
    pos = 0.0
    raws = []
    for span in spans:
        hal.now_us += span
        pos += 2000 * span / 1e6            # the wheel's true counts at 2000 counts/s
        hal.counts[0] = hal.counts[1] = int(pos)
        hal.periodic()
        raws.append(a.ctrl.law.raw[0])
    return raws


def test_a_soft_schedule_that_runs_late_measures_speed_over_the_real_span():
    """CircuitPython's control step runs from the slow loop: 18 ms after the last one, then 2 ms after that, at a
    nominal 10 ms (measured on the emulated Pico: periods 2.7-32.7 ms at 100 Hz). A wheel turning at a steady
    2000 counts/s must read 2000 whatever the span: counts over the nominal period read 3600 and then 400, and the
    PI pulled the true wheel down to 0.7x of its command. On a timer's exact periods (hal.soft False) the span is
    the period and the speed is counts x hz, as in the fixed-point step."""
    cfg = dict(CFG, control_hz=100)
    spans = (18000, 2000, 10000, 31000, 4000, 10000, 12000, 8000) * 6
    hal, a = _float_app(cfg, True)
    raws = _raw_speeds(hal, a, spans)
    worst = max(abs(r - 2000) for r in raws[1:])
    # one count of quantization over the shortest span (2 ms: 500 counts/s) is the measurement's resolution
    assert worst <= 1000000 / 2000 + 1, (worst, raws[:10])
    hal, a = _float_app(cfg, False)
    raws = _raw_speeds(hal, a, spans)
    assert raws[1] == 4 * 100 and raws[3] == 62 * 100, raws[:4]       # 2 ms: 4 counts; 31 ms: 62 counts (x hz)


def _crawl(hal, a, spans, drop_every, seed, rate=660, late=None):
    """A wheel at a steady rate counts/s (660: 0.09 m/s on the Pico rig's robot) on a soft schedule's spans, both
    wheels' edges timed; drop_every: lose each edge with probability 1/drop_every (0: none); late(k): the ticks_us
    lags period k's tick meets (fakehal.Board.late), none by default. -> the fault, the periods run."""
    period = 1000000 / rate
    t_edge = hal.now_us + period
    n = 0
    counted = list(hal.counts)
    for span in spans:
        end = hal.now_us + span
        while t_edge <= end:
            for w in range(2):
                # a small linear congruential generator: the unix port's random module is optional
                seed[0] = (seed[0] * 1103515245 + 12345) & 0x7FFFFFFF
                if not drop_every or (seed[0] >> 16) % drop_every:
                    counted[w] += 1
                    hal.edges[w] = int(t_edge) & 0x3FFFFFFF
            t_edge += period
        hal.now_us = end
        hal.counts[0], hal.counts[1] = counted
        a.ctrl.set_velocity(rate, rate)
        if late is not None:
            hal.late = late(n)
        hal.periodic()
        n += 1
        if a.ctrl.fault():
            break
    return a.ctrl.fault(), n


# a soft schedule's periods as the emulated Pico's CircuitPython ran them at a nominal 10 ms (us)
SOFT_SPANS = (10000, 10000, 27000, 2700, 10000, 32700, 5000, 10000, 18000, 2000, 10000, 12000, 8000, 10000)


def _soft_float_app(cfg, edge):
    saved = control.fx
    control.fx = None
    try:
        hal = fakehal.Board(cfg, edge=edge)
        hal.soft = True
        a = app_mod.App(hal, cfg, params_path="/tmp/viperdrive-mptest-fallback-soft.json")
    finally:
        control.fx = saved
    a.start()
    assert a.enable(True)
    return hal, a


def test_edge_regularity_on_a_soft_schedule_takes_each_periods_span():
    """CircuitPython on the RP2040 times edges in PIO (hal/circuitpython.py), and its control step runs from the
    slow loop: periods of 2.7-32.7 ms at a nominal 10 ms. The edge regularity check compares a period's counts
    with the last period's: over unequal spans a healthy wheel's counts jump as much as lost counts make them
    (a 30 ms period counts 3x a 10 ms one), so the last period's counts are scaled to this one's span. A steady
    wheel over those spans stays quiet for 20 s; half its counts lost latches FAULT_ENCODER within a second."""
    cfg = dict(CFG, control_hz=100)
    spans = SOFT_SPANS
    hal, a = _soft_float_app(cfg, True)
    assert a.ctrl.law.use_edges
    seed = [7]
    fault, n = _crawl(hal, a, spans * 143, 0, seed)       # 20 s
    assert fault == 0, (fault, n)
    t0 = hal.now_us
    fault, n = _crawl(hal, a, spans * 100, 2, seed)
    took = hal.now_us - t0
    assert fault in (P.FAULT_ENCODER_LEFT, P.FAULT_ENCODER_RIGHT) and took < 1000000, (fault, took)


def test_a_collection_after_the_ticks_clock_read_moves_neither_span_nor_check():
    """CircuitPython's clock allocates: a garbage collection after the tick's clock read dates it up to 15 ms
    before the counts are taken (measured on the emulated Pico: 53 counts in a 10.2 ms span at 514 us per
    count). The span of the counts must be the span between the moments they were taken (the edge backend's
    per-wheel moments), or a healthy wheel's counts jump against it and latch FAULT_ENCODER: here the tick's clock
    reads 15 ms old in one period of 4 at 1905 counts/s (8 rad/s on the Pico rig's robot) for 20 s, and the
    speeds the step takes stay within one count of the true rate over the shortest span."""
    cfg = dict(CFG, control_hz=100)
    spans = SOFT_SPANS
    hal, a = _soft_float_app(cfg, True)
    fault, n = _crawl(hal, a, spans * 143, 0, [7], rate=1905, late=lambda k: [15000] if k % 4 == 1 else [])
    assert fault == 0 and n == len(spans) * 143, (fault, n)
    law = a.ctrl.law
    assert law.irr[0] < 2 * P_IRREGULAR_UP and law.irr[1] < 2 * P_IRREGULAR_UP, law.irr
    assert abs(law.vel[0] - 1905) < 40 and abs(law.vel[1] - 1905) < 40, law.vel
    # and the check still sees lost counts through the same lags: half the edges lost latches within a second
    t0 = hal.now_us
    fault, n = _crawl(hal, a, spans * 100, 2, [7], rate=1905, late=lambda k: [15000] if k % 4 == 1 else [])
    assert fault in (P.FAULT_ENCODER_LEFT, P.FAULT_ENCODER_RIGHT) and hal.now_us - t0 < 1000000, (fault, n)


def test_without_edge_times_a_late_clock_read_is_read_again():
    """A soft schedule without edge times (rotaryio) times its counts by two clock reads around them, read again
    when those are further apart than COUNT_WINDOW_US (a collection dated one of them early): a steady 2000
    counts/s reads 2000 within one count over the shortest span, whichever read comes back late."""
    cfg = dict(CFG, control_hz=100)
    hal, a = _soft_float_app(cfg, False)
    pos = 0.0
    worst = 0.0
    spans = (18000, 2000, 10000, 31000, 4000, 10000, 12000, 8000) * 6
    for k, span in enumerate(spans):
        hal.now_us += span
        pos += 2000 * span / 1e6
        hal.counts[0] = hal.counts[1] = int(pos)
        # the tick's own read, then the bracket's first, then its second comes back 15 ms old
        hal.late = ([15000], [0, 15000], [0, 0, 15000], [])[k % 4]
        hal.periodic()
        if k > 1:
            worst = max(worst, abs(a.ctrl.law.raw[0] - 2000))
    assert worst <= 1000000 / 2000 + 1, worst
