# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The wheel loop with the default gains (shared/params.py) meets the figures docs/tuning.md promises, measured on
the board's own telemetry with the step helpers of viperdrive.tuning.steptest: a 10 rad/s step with the ramp lifted
overshoots <= 5 % and settles (5 %) within 150 ms, and after 10 s against a wall the output leaves saturation
within 100 ms of the release. The virtual board's default robot is the robot these gains were designed for; on a
real board (--port) the step runs as well, the stall needs the sim's fault injection."""
from __future__ import annotations

import math

import numpy as np
import pytest

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P
from viperdrive.tuning import design, steptest

pytestmark = pytest.mark.hil

SPEC_OVERSHOOT_PCT = 5.0
SPEC_SETTLE_S = 0.150
SPEC_WINDUP_S = 0.100
# the default gains are `tune --design --settle 100ms --overshoot 5%` at 500 Hz on the default robot's motor
# (docs/tuning.md, "The default gains": kS 0.14, kV 0.05, tau_m 28 ms)
DESIGN_HZ = 500
DEFAULT_MOTOR = {"ks": 0.14, "kv": 0.05, "ka": 0.05 * 0.028}
# A board slower than DESIGN_HZ: the delay bound (SIMC, tau_c >= theta: 15 ms at 100 Hz) caps kp at 0.036, and
# while the default robot accelerates behind its wheels (they slip for the first ~0.2 s of a hard step) the PI
# holds the wheel 4.5-5.5 % under the step, on the 5 % band's edge, until the acceleration ends (~0.24 s):
# measured over 16 steps on the CircuitPython board, 5 % settling 83-194 ms. So its settling spec is the end of
# that load, 0.25 s; the overshoot spec is the same (docs/tuning.md)
SPEC_SETTLE_SLOW_S = 0.250


def test_default_gains_step_overshoot_and_settling(board):
    """The default gains on a board at their design rate or faster; a slower board (CircuitPython's soft loop at
    100 Hz: five times the delay, 8.4 % overshoot with the defaults) runs the gains the same design gives at its
    own rate, which is what docs/tuning.md tells its user to do."""
    for name in ("kp", "ki", "windup_tau", "ks", "kv", "ka"):
        assert board.get_param(name) == pytest.approx(PARAMS.by_name(name)[PARAMS.DEFAULT], rel=1e-6)
    hz = board.info.control_hz
    gains = {}
    settle_spec = SPEC_SETTLE_S if hz >= DESIGN_HZ else SPEC_SETTLE_SLOW_S
    if hz < DESIGN_HZ:
        model = design.MotorModel(control_hz=hz, counts_per_rev=board.counts_per_rev, **DEFAULT_MOTOR)
        d = design.design(model, design.Request(settle=0.1, overshoot=0.05))
        assert d.feasible, d.problems
        gains = {k: round(d.gains[k], 5) for k in ("kp", "ki", "windup_tau")}
        print(f"{hz} Hz board: the design at its rate gives {gains}")
    rate = steptest.telemetry_rate(hz, board.baud)
    with steptest.TemporaryParams(board, gains):
        rec = steptest.run_step(board, ("left", "right"), 10.0, 1.0, rate)
    for w in ("left", "right"):
        m = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, 10.0)
        m2 = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, 10.0, band=0.02)
        which = "designed" if gains else "default"
        print(f"{which} gains, 10 rad/s step, ramp lifted, {w}: rise {m.rise_time_s * 1e3:.0f} ms, overshoot "
              f"{m.overshoot:.1f} % (spec {SPEC_OVERSHOOT_PCT:g}), settling 5 % {m.settling_time_s * 1e3:.0f} ms "
              f"(spec {settle_spec * 1e3:.0f}), 2 % "
              + ("never" if m2.settling_time_s is None else f"{m2.settling_time_s * 1e3:.0f} ms")
              + f", steady-state error {m.steady_state_error:+.3f} rad/s")
        # measured on the virtual board (docs/tuning.md): overshoot 2.0-2.4 %, settling 18-22 ms
        assert m.overshoot <= SPEC_OVERSHOOT_PCT
        assert m.settling_time_s is not None and m.settling_time_s <= settle_spec
        assert abs(m.steady_state_error) < 0.02 * 10.0


def test_default_gains_leave_saturation_quickly_after_a_10_s_stall(board, need_sim):
    """Both wheels blocked for 10 s at a 10 rad/s setpoint (the stall and tracking checks given room), then
    released: the time from the wheels' first motion to the first record without SATURATED, on the board's
    clock (telemetry at its highest rate on this link: +-one record)."""
    rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
    hold, after = 10.0, 1.0
    released = []

    def setpoints(now):
        if now >= hold and not released:
            need_sim.fault("stall", wheel="both", on=False)
            released.append(now)
        return 10.0, 10.0

    room = {"stall_speed": 0.0, "track_err_max": 500.0, "track_err_ms": 10000}
    need_sim.fault("stall", wheel="both", on=True)
    try:
        with steptest.TemporaryParams(board, room):
            records = steptest.run_experiment(board, rate, hold + after, setpoints)
    finally:
        need_sim.fault("stall", wheel="both", on=False)
    rec = steptest.to_recording(records, 2 * math.pi / board.counts_per_rev)
    sat = (rec.status & P.ST_SATURATED) != 0
    moving = np.nonzero((np.abs(rec.measured["left"]) > 0) | (np.abs(rec.measured["right"]) > 0))[0]
    held = rec.t < rec.t[moving[0]] if len(moving) else np.ones(len(rec.t), bool)
    assert len(moving) and rec.t[moving[0]] > hold - 0.5, "the wheels moved before the release"
    gaps = [(round(float(t), 3), int(st)) for t, st, h, s in zip(rec.t, rec.status, held, sat, strict=True)
            if h and t > 1.0 and not s]
    assert sat[held & (rec.t > 1.0)].all(), f"not saturated throughout the stall: (t, status) {gaps[:10]}"
    i0 = moving[0]
    free = np.nonzero(~sat[i0:])[0]
    assert len(free), "still saturated 1 s after the release"
    recovery = rec.t[i0 + free[0]] - rec.t[i0]
    peak = max(rec.measured["left"][i0:].max(), rec.measured["right"][i0:].max())
    # and back at the setpoint: into the 5 % band for good, counted from the first motion
    # (up to the last record still commanding 10 rad/s: the braked stop at the end is not part of the test)
    t_end = rec.t[np.nonzero(rec.setpoint["left"] > 9.99)[0][-1]]
    back = [steptest.step_metrics(rec.t, rec.measured[w], rec.t[i0], t_end, 10.0).settling_time_s
            for w in ("left", "right")]
    ki, windup_tau = board.get_param("ki"), board.get_param("windup_tau")
    print(f"after {hold:g} s stalled at 10 rad/s (ki {ki:g}, windup_tau {windup_tau:g} s): output left saturation "
          f"{recovery * 1e3:.0f} ms after the wheels started to turn (spec {SPEC_WINDUP_S * 1e3:.0f} ms, telemetry "
          f"{rate} Hz); peak speed after the release {peak:.2f} rad/s; within 5 % of the setpoint after "
          + ", ".join("never" if b is None else f"{b * 1e3:.0f} ms" for b in back))
    # measured on the virtual board (docs/tuning.md): <= 6 ms (one record), peak ~10.25 rad/s, back within 5 %
    # after ~25 ms; the previous defaults (ki 0.6, windup_tau 0.1 s, no kS): 30 ms, peak 15.2 rad/s
    assert recovery <= SPEC_WINDUP_S
    assert peak < 10.0 * 1.15 and all(b is not None and b < 0.2 for b in back)
