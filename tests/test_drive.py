# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""DriveController: joint limits keep the arc through saturation and ramp; stale commands are never replayed."""
import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viperdrive.motion.drive import DriveController
from viperdrive.robot.config import AxisLimits, RobotConfig

pytestmark = pytest.mark.unit

B, R = 0.152, 0.0325


def make(**kw):
    base = dict(wheel_separation=B, wheel_radius=R, max_rim_speed=0.55, max_rim_acceleration=1.0,
                update_rate=100.0, cmd_vel_timeout=0.5)
    base.update(kw)
    return DriveController(RobotConfig(**base))


def rim(left, right):
    return left * R, right * R


opt = st.one_of(st.none(), st.floats(0.05, 5.0))


@settings(max_examples=150, deadline=None)
@given(v=st.floats(-2.0, 2.0), w=st.floats(-15.0, 15.0), lin_v=opt, lin_a=opt, ang_v=opt, ang_a=opt,
       jerk=st.one_of(st.none(), st.floats(1.0, 50.0)), wheel_a=st.floats(0.2, 5.0), vmax=st.floats(0.1, 1.0))
def test_curvature_kept_through_saturation_and_ramp(v, w, lin_v, lin_a, ang_v, ang_a, jerk, wheel_a, vmax):
    d = make(max_rim_speed=vmax, max_rim_acceleration=wheel_a,
             linear=AxisLimits(lin_v, lin_a, None, jerk), angular=AxisLimits(ang_v, ang_a, None, None))
    dt = d.dt
    prev = (0.0, 0.0)
    now = 0.0
    d.command(v, w, now=now)
    for _ in range(600):   # >= vmax / (wheel_a * dt) = 500 ticks: enough to arrive
        now += dt
        d.command(v, w, now=now)          # a fresh command every tick: no timeout involved
        left, right = d.update(now)
        vl, vr = rim(left, right)
        out_v, out_w = d.v, d.w
        # on the commanded arc: (out_v, out_w) is a non-negative multiple of (v, w)
        assert abs(out_v * w - out_w * v) <= 1e-9 * (1 + abs(v) + abs(w)) ** 2
        assert out_v * v >= -1e-15 and out_w * w >= -1e-15
        # wheel speed and joint wheel acceleration limits
        assert max(abs(vl), abs(vr)) <= vmax * (1 + 1e-9)
        assert max(abs(vl - prev[0]), abs(vr - prev[1])) <= wheel_a * dt * (1 + 1e-9) + 1e-12
        if lin_v is not None:
            assert abs(out_v) <= lin_v * (1 + 1e-9)
        if ang_v is not None:
            assert abs(out_w) <= ang_v * (1 + 1e-9)
        prev = (vl, vr)
    # it arrives at the (jointly scaled) target
    tv, tw = d.target
    assert abs(tv * w - tw * v) <= 1e-9 * (1 + abs(v) + abs(w)) ** 2
    if abs(tv) + abs(tw) > 0 and lin_a is None and ang_a is None and jerk is None:
        assert (d.v, d.w) == pytest.approx((tv, tw), abs=1e-9)


def test_per_axis_limit_scales_both_axes():
    # diff_drive_controller would clamp v to 0.2 and keep w = 2.0: a tighter circle. Here the radius is kept.
    d = make(linear=AxisLimits(max_velocity=0.2), max_rim_acceleration=100.0)
    d.command(0.4, 2.0, now=0.0)
    for i in range(50):
        d.update(0.01 * (i + 1))
    assert d.v == pytest.approx(0.2) and d.w == pytest.approx(1.0)
    assert d.v / d.w == pytest.approx(0.4 / 2.0)
    assert d.status()["saturation_scale"] == pytest.approx(0.5)


def hold(d, v, ticks, now):
    """Command (v, 0) every tick for `ticks` ticks from `now`; the commanded v of each tick, and the end time."""
    out = []
    for _ in range(ticks):
        now += 0.01
        d.command(v, 0.0, now=now)
        d.update(now)
        out.append(d.v)
    return out, now


def test_ramp_rate_and_deceleration_limit():
    d = make(linear=AxisLimits(max_acceleration=0.5, max_deceleration=2.0), max_rim_acceleration=100.0)
    out, now = hold(d, 0.4, 150, 0.0)
    steps = [b - a for a, b in pairwise([0.0] + out)]
    assert max(steps) == pytest.approx(0.5 * 0.01)          # accelerating at 0.5 m/s^2
    assert out[-1] == pytest.approx(0.4)
    assert abs(out[79] - 0.4) < 1e-9 and out[78] < 0.4       # 0.4 / 0.5 = 0.8 s = 80 ticks
    down, now = hold(d, 0.0, 50, now)
    assert min(b - a for a, b in pairwise([0.4] + down)) == pytest.approx(-2.0 * 0.01)   # slowing at 2.0
    assert down[19] == pytest.approx(0.0, abs=1e-12)


def test_jerk_limit_s_curve_without_overshoot():
    j = 5.0
    d = make(linear=AxisLimits(max_acceleration=1.0, max_jerk=j), max_rim_acceleration=100.0)
    now, vs = 0.0, [0.0]
    for _ in range(300):
        now += 0.01
        d.command(0.3, 0.0, now=now)
        d.update(now)
        vs.append(d.v)
    acc = [(b - a) / 0.01 for a, b in pairwise(vs)]
    rise = [b - a for a, b in pairwise(acc)]
    assert max(rise) <= j * 0.01 * (1 + 1e-9)                 # acceleration grows at most j*dt per tick
    assert max(vs) <= 0.3 + 1e-12                               # no overshoot
    assert vs[-1] == pytest.approx(0.3)
    assert acc[0] == pytest.approx(j * 0.01)                    # starts gently, not with a step


def test_timeout_stops_and_never_replays():
    d = make(max_rim_acceleration=100.0)
    assert d.command(0.3, 0.0, now=0.0)
    left, right = d.update(0.01)
    assert left > 0 and right > 0
    left, right = d.update(0.6)                 # 0.6 s without a new command > 0.5 s timeout
    assert (left, right) == (0.0, 0.0)
    assert d.timeouts == 1 and "cmd_vel_timeout" in d.last_reason
    for t in (0.61, 0.7, 5.0):                  # the old command is gone: it does not come back
        assert d.update(t) == (0.0, 0.0)
    assert d.timeouts == 1
    assert d.status()["command"] is None


def test_timeout_zero_disables():
    d = make(cmd_vel_timeout=0.0, max_rim_acceleration=100.0)
    d.command(0.2, 0.0, now=0.0)
    assert d.update(100.0)[0] == pytest.approx(0.2 / R)
    assert d.timeouts == 0


def test_stamped_commands_rejected_when_stale_out_of_order_or_future():
    d = make()
    assert not d.command(0.2, 0.0, stamp=9.0, now=10.0)        # 1 s old > 0.5 s
    assert d.rejected == 1 and "old" in d.last_reason
    assert d.command(0.2, 0.0, stamp=9.9, now=10.0)
    assert not d.command(0.1, 0.0, stamp=9.8, now=10.01)       # older than the previous accepted
    assert "out of order" in d.last_reason
    assert not d.command(0.1, 0.0, stamp=12.0, now=10.02)      # 2 s in the future
    assert "future" in d.last_reason
    assert not d.command(float("nan"), 0.0, now=10.03)
    assert d.rejected == 4 and d.accepted == 1
    # the accepted stamp (9.9) is what ages: at 10.41 it is 0.51 s old -> dropped
    d.update(10.40)
    assert d.status()["command"] is not None
    d.update(10.41)
    assert d.status()["command"] is None and d.timeouts == 1


def test_output_rate_independent_of_command_rate_and_of_update_jitter():
    # dt is the configured period: the ramp after N ticks is the same however late the ticks are
    a, b = make(), make()
    a.command(0.5, 0.0, now=0.0)
    b.command(0.5, 0.0, now=0.0)
    for i in range(20):
        a.update(0.01 * (i + 1))
        b.update(0.01 * (i + 1) + (0.004 if i % 2 else -0.003))
    assert a.v == b.v == pytest.approx(20 * 1.0 * 0.01)      # wheel acceleration 1.0 m/s^2 for 20 ticks


def test_reset_drops_command_and_output():
    d = make()
    d.command(0.3, 1.0, now=0.0)
    d.update(0.01)
    d.reset()
    assert d.update(0.02) == (0.0, 0.0)
    assert d.max_angular(0.5) == pytest.approx(2 * 0.05 / B)
    assert math.isinf(make().config.cmd_vel_timeout) is False
