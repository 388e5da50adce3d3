# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live filter in its own process (viperdrive.estimation.process.FilterProcess): the same estimates as the
filter in the loop's process, step for step; a real-time run whose recording fuses offline into the estimates it
produced; a child that fails or dies is reported, never raised into the loop; the child ends with its parent.
Inputs: the simulated run of tests/test_live_ekf.py (wheel odometry 50 Hz, gyro 100 Hz, a 1 Hz pose fix 0.35 s
late, a dropout and a kidnap)."""
import csv
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_live_ekf import ekf_yaml, scenario

from viperdrive.estimation import config_from_dict
from viperdrive.estimation.live import LiveFilter, SetClock, replay
from viperdrive.estimation.process import MARGIN_S, FilterProcess
from viperdrive.estimation.replay import fuse
from viperdrive.estimation.simruns import as_message
from viperdrive.recording.mcap import LogClock, McapRecorder
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.unit


def test_the_process_gives_the_in_process_filters_estimates_exactly():
    run, events = scenario(duration=30.0)
    msgs = [(arrival, topic, as_message(body)) for arrival, topic, _typ, body in events]
    cfg = config_from_dict(ekf_yaml())
    here = []
    live = LiveFilter(cfg, clock=SetClock(), on_estimate=here.append)
    replay(live, msgs, until=run.t[-1] + 0.5)
    there = []
    clock = SetClock()
    proc = FilterProcess(cfg, clock=clock, on_estimate=there.append)
    proc.start()
    replay(proc, msgs, until=run.t[-1] + 0.5, margin_s=MARGIN_S)
    proc.finish()
    assert proc.error is None
    print(f"{len(there)} estimates from the process, {len(here)} in process; {proc.steps} steps, cost "
          f"{proc.cost()}")
    assert len(there) == len(here) > 800                    # 30 Hz over ~30 s
    for a, b in zip(here, there, strict=True):
        assert a.t == b.t and a.dead_reckoning == b.dead_reckoning
        assert np.array_equal(a.state, b.state) and np.array_equal(a.covariance, b.covariance)
    assert [(s.name, s.state, s.reason) for s in proc.sources.values()] == \
        [(s.name, s.state, s.reason) for s in live.sources.values()]
    assert proc.recent_events(50) == live.recent_events(50) and len(live.recent_events(50)) >= 4
    assert proc.dead_reckoning() == live.dead_reckoning()
    a, b = proc.summary(), live.summary()
    assert a.rows == b.rows and a.sensors["pose0"].outcomes.used == b.sensors["pose0"].outcomes.used > 10


def test_a_real_time_run_fuses_offline_into_the_estimates_it_produced(tmp_path):
    """run(stop) on the host's clock, fed from another thread at the messages' own pace (6 s of the run): the
    recording holds each message at the arrival time the loop gave it, and the child fused exactly what arrived
    before each of its steps, however late the pipe delivered it."""
    run, events = scenario(duration=6.0)
    cfg = config_from_dict(ekf_yaml())
    rec = McapRecorder(tmp_path / "live.mcap")
    clock = LogClock()
    types = {topic: typ for _, topic, typ, _ in events}
    out = []
    proc = FilterProcess(cfg, clock=clock, on_estimate=out.append,
                         recorder=lambda topic, msg, ns: rec.message(topic, types[topic], msg, ns))
    stop = threading.Event()
    errors = []

    def filt():
        try:
            proc.run(stop)
        except RuntimeError as e:
            errors.append(e)

    th = threading.Thread(target=filt)
    th.start()
    t_start = time.monotonic() - events[0][0]
    for arrival, topic, _typ, body in events:
        time.sleep(max(0.0, arrival + t_start - time.monotonic()))
        proc.feed(topic, as_message(body))
    stop.set()                  # run() steps once more at its end: every input fed is fused
    th.join(10)
    rec.close()
    assert not th.is_alive() and not errors and proc.error is None
    summary = fuse(tmp_path / "live.mcap", cfg, tmp_path / "offline.csv")
    with open(tmp_path / "offline.csv") as f:
        rows = list(csv.DictReader(f))
    live = {round(e.t, 6): e for e in out}
    print(f"real time: {len(out)} estimates live, {len(rows)} offline; {proc.steps} steps")
    assert summary.rows == len(rows) > 100
    # every offline estimate has its live twin but the last: the live run stopped mid-period, which the offline
    # replay closes at the end of the recording
    assert round(float(rows[-2]["t"]), 6) in live
    for r in rows[:-1]:
        e = live[round(float(r["t"]), 6)]
        for i, name in enumerate(("x", "y", "yaw")):
            assert float(r[name]) == pytest.approx(float(e.state[(0, 1, 5)[i]]), rel=1e-8, abs=1e-9), (r["t"], name)


def test_a_failing_child_is_a_reported_error_and_a_killed_one_too():
    cfg = config_from_dict(ekf_yaml())
    clock = SetClock(1000.0)
    proc = FilterProcess(cfg, clock=clock)
    proc.start()
    proc.feed("/odom", Undecodable())           # (a bad message is only counted: the filter's own rule)
    clock.t = 1000.1
    proc.step()
    proc.finish()
    assert proc.error is not None and proc.error.startswith("ValueError: invalid literal"), proc.error
    with pytest.raises(RuntimeError, match="has not finished"):
        proc.summary()

    proc = FilterProcess(cfg)
    stop = threading.Event()
    errors = []
    th = threading.Thread(target=lambda: _run_into(proc, stop, errors))
    th.start()
    wait_until(lambda: proc.child is not None and proc.steps > 0, 30.0, what="the child's first step")
    proc.child.kill()
    th.join(10)
    assert not th.is_alive() and errors and "filter process" in str(errors[0]), errors


class Undecodable:
    """A message the child cannot take off the pipe (its unpickling raises): the child's failure."""

    def __reduce__(self):
        return (int, ("not a number",))


def _run_into(proc, stop, errors):
    try:
        proc.run(stop)
    except RuntimeError as e:
        errors.append(e)


PARENT = """
import threading
from viperdrive.timebase import wait_until
from test_live_ekf import ekf_yaml
from viperdrive.estimation import config_from_dict
from viperdrive.estimation.process import FilterProcess
p = FilterProcess(config_from_dict(ekf_yaml()))
threading.Thread(target=p.run, args=(threading.Event(),), daemon=True).start()
wait_until(lambda: p.steps > 0, 60.0)
print(p.child.pid, flush=True)
threading.Event().wait()        # until killed
"""


def test_the_child_ends_with_its_parent_even_a_killed_one(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=str(tmp_path), stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        pid = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_until(lambda: not _alive(pid), 20.0, poll=0.05, what="the filter process gone with its killed parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False
