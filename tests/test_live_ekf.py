# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live filter (viperdrive.estimation.live): the same estimates as `viperdrive fuse` on its recording, failover
states with their times, and the re-acquisition of a source the gate had locked out. Driven on the log clock by a
simulated run (viperdrive.estimation.simruns: wheel odometry 50 Hz, gyro 100 Hz, a 1 Hz pose fix that arrives 0.35 s
late); the virtual-board run through `viperdrive ros2 --ekf` is in tests/test_ros2_ekf.py."""
import csv
import math
from types import SimpleNamespace

import numpy as np
import pytest

from viperdrive.estimation import config_from_dict
from viperdrive.estimation.live import LiveFilter, SetClock, replay
from viperdrive.estimation.replay import fuse
from viperdrive.estimation.simruns import as_message, simulate_run
from viperdrive.recording.mcap import McapRecorder

pytestmark = pytest.mark.unit

POSE_LAG_S = 0.35
DROP_FROM, DROP_TO = 20.0, 40.0       # s after the start: the pose source is silent
KIDNAP_Y = 0.5                        # the robot is pushed 0.5 m sideways while the source is silent


def ekf_yaml(reacquire_after=3):
    q = np.diag([1e-4, 1e-4, 0.06, 0.03, 0.03, 1e-4, 0.025, 0.025, 0.04, 0.01, 0.01, 0.02, 0.01, 0.01, 0.015])
    return {"ekf_filter_node": {"ros__parameters": {
        "frequency": 30.0, "sensor_timeout": 0.1, "two_d_mode": True, "publish_tf": True,
        "smooth_lagged_data": True, "history_length": 2.0,
        "process_noise_covariance": [float(v) for v in q.ravel()],
        "odom0": "odom", "odom0_config": [False] * 6 + [True, True, False, False, False, True] + [False] * 3,
        "imu0": "imu", "imu0_config": [False] * 11 + [True] + [False] * 3,
        "pose0": "pose", "pose0_config": [True, True] + [False] * 13,
        "pose0_rejection_threshold": 3.0, "pose0_reacquire_after": reacquire_after,
    }}}


def scenario(duration=60.0, **motion):
    run = simulate_run(duration_s=duration, seed=3, odom_hz=50, imu_hz=100, pose_hz=1, pose_sigma=0.05,
                       t0=1000.0, **motion)
    t0 = run.t[0]
    events = []
    for topic, typ, stamp, _log, body in run.messages:
        rel = stamp - t0
        arrival = stamp + 0.002
        if topic == "/pose":
            if DROP_FROM <= rel < DROP_TO:
                continue
            arrival = stamp + POSE_LAG_S
            if rel >= DROP_TO:
                body["pose"]["pose"]["position"]["y"] += KIDNAP_Y
        events.append((arrival, topic, typ, body))
    events.sort(key=lambda e: e[0])
    return run, events


def drive(live, clock, events, until):
    replay(live, [(arrival, topic, as_message(body)) for arrival, topic, _typ, body in events], until)


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("live")
    run, events = scenario()
    cfg = config_from_dict(ekf_yaml())
    rec = McapRecorder(d / "live.mcap")
    clock = SetClock()
    out = []
    live = LiveFilter(cfg, clock=clock, on_estimate=out.append,
                      recorder=lambda topic, msg, ns: rec.message(topic, types[topic], msg, ns))
    types = {topic: typ for _, topic, typ, _ in events}
    drive(live, clock, events, until=run.t[-1] + 0.5)
    rec.close()
    return SimpleNamespace(run=run, live=live, estimates=out, mcap=d / "live.mcap", dir=d, cfg=cfg)


def test_fuse_on_the_recording_gives_the_live_estimates(live_run):
    out_csv = live_run.dir / "offline.csv"
    summary = fuse(live_run.mcap, live_run.cfg, out_csv)
    with open(out_csv) as f:
        rows = list(csv.DictReader(f))
    assert summary.rows == len(rows) > 1500          # 30 Hz over ~60 s
    live = {round(e.t, 6): e for e in live_run.estimates}
    compared = 0
    for r in rows:
        e = live[round(float(r["t"]), 6)]          # every offline estimate has its live twin at the same time
        for i, name in enumerate(("x", "y", "z", "roll", "pitch", "yaw", "vx", "vy")):
            assert float(r[name]) == pytest.approx(float(e.state[i]), rel=1e-8, abs=1e-9), (r["t"], name)
        assert float(r["var_x"]) == pytest.approx(float(e.covariance[0, 0]), rel=1e-8)
        compared += 1
    assert compared == len(rows)
    # the lagged pose was rewound, not dropped: the live filter's and the offline run's counters agree
    st = live_run.live.ekf.sensors["pose0"]
    assert st.too_late == 0 and st.used == summary.sensors["pose0"].outcomes.used > 30


def truth_xy(run, t):
    x, y, _ = run.truth_at(t)
    return x, y + (KIDNAP_Y if t - run.t[0] >= DROP_TO - 1.0 else 0.0)


def test_dropout_dead_reckoning_and_reacquisition_in_the_events(live_run):
    live, run = live_run.live, live_run.run
    t0 = run.t[0]
    ev = [(t - t0, name, state, reason) for t, name, state, reason in live.events]
    stale = [e for e in ev if e[1] == "pose0" and e[2] == "stale"]
    assert stale and DROP_FROM < stale[0][0] < DROP_FROM + 4.0, ev     # timeout: 3 of its 1 s intervals
    dead = [e for e in ev if e[1] == "filter" and e[2] == "dead_reckoning" and e[0] > DROP_FROM]
    assert dead and abs(dead[0][0] - stale[0][0]) < 0.1
    back = [e for e in ev if e[1] == "pose0" and e[0] > DROP_TO and e[2] != "stale"]
    assert back and "back after" in back[0][3], ev
    # the first fixes after the gap are 0.5 m off the dead-reckoned estimate: refused, three in a row agree,
    # the third opens the gate
    rejected = [e for e in ev if e[1] == "pose0" and e[2] == "rejected"]
    reacq = [e for e in ev if e[1] == "pose0" and e[2] == "reacquired"]
    assert rejected and reacq, ev
    assert DROP_TO + 1.5 < reacq[0][0] < DROP_TO + 3.5, ev
    assert live.ekf.sensors["pose0"].reacquired == 1
    # the end: on the truth again
    e = live_run.estimates[-1]
    tx, ty = truth_xy(run, e.t)
    assert math.hypot(e.state[0] - tx, e.state[1] - ty) < 0.15
    assert not live.dead_reckoning()["active"]


def test_dead_reckoning_horizon_while_the_source_is_gone():
    """The position 1-sigma grows during the dropout; the seconds left until it passes the limit, extrapolated
    from its growth, are what then happens (a steady drive: constant speed and turn rate)."""
    run, events = scenario(duration=DROP_FROM + 16.0, v_of_t=lambda t: 0.3, w_of_t=lambda t: 0.1)
    t0 = run.t[0]
    at, ahead = DROP_FROM + 8.0, 6.0

    def until(t, limit=1.0):
        live = LiveFilter(config_from_dict(ekf_yaml()), clock=SetClock(), uncertainty_limit=limit)
        drive(live, live.clock, [e for e in events if e[0] < t0 + t], until=t0 + t)
        return live.dead_reckoning()

    reached = until(at + ahead)["position_sigma_m"]       # what the 1-sigma is 6 s later
    early = until(at, limit=reached)
    assert early["active"] and early["since"] - t0 == pytest.approx(DROP_FROM + 2.4, abs=0.2)  # 3 s timeout
    assert reached > early["position_sigma_m"] > 0.0
    assert early["seconds_to_limit"] == pytest.approx(ahead, rel=0.35)


def test_without_the_rule_the_gate_locks_the_source_out(live_run):
    """robot_localization's behaviour (reacquire_after 0): the estimate moved, the fixes are refused until the
    dead-reckoning covariance has grown enough to let the truth in; the rule re-acquires at the third fix."""
    run, events = scenario(duration=DROP_TO + 12.0)
    cfg = config_from_dict(ekf_yaml(reacquire_after=0))
    clock = SetClock()
    out = []
    live = LiveFilter(cfg, clock=clock, on_estimate=out.append)
    end = run.t[0] + DROP_TO + 4.0
    drive(live, clock, [e for e in events if e[0] < end], until=end)
    st = live.ekf.sensors["pose0"]
    assert st.consecutive_rejected >= 4 and st.reacquired == 0
    assert live.sources["pose0"].state == "rejected"
    assert "no re-acquisition rule" in live.sources["pose0"].reason

    def error(estimates, t):
        e = min(estimates, key=lambda e: abs(e.t - t))
        tx, ty = truth_xy(run, e.t)
        return math.hypot(e.state[0] - tx, e.state[1] - ty)

    t = run.t[0] + DROP_TO + 3.9
    assert error(out, t) > 0.35                      # locked out, 0.5 m off
    assert error(live_run.estimates, t) < 0.15       # the same run with pose0_reacquire_after: 3


@pytest.mark.parametrize("value, message", [(1, "1 would open the gate for every reading"),
                                            (2.5, "expected a whole number of measurements"),
                                            (-1, "expected a number >= 0")])
def test_reacquire_after_is_refused_with_a_reason(value, message):
    from viperdrive.estimation import ConfigError
    doc = ekf_yaml()
    doc["ekf_filter_node"]["ros__parameters"]["pose0_reacquire_after"] = value
    with pytest.raises(ConfigError, match=message):
        config_from_dict(doc)
