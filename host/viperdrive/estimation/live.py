# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The filter on a running robot: robot_localization's EKF fed while the robot drives (`viperdrive ros2 --ekf`,
`viperdrive drive --ekf`), with failover that says what it does.

One scheduler for live and offline: viperdrive.estimation.schedule.FilterSchedule. Every message the filter reads is
given its arrival time on the log clock (the host's monotonic clock on a wall-clock epoch: what the recorder writes as
MCAP log time), and the timer runs the filter period by period on that clock exactly as `viperdrive fuse` replays a
recording: the periods are floor(arrival / period), the messages of a period are fused in header-stamp order at
its end, lagged ones rewound and replayed within history_length (smooth_lagged_data). A recording of the live run
(its inputs with their arrival times) therefore fuses offline into the same estimates (tests/test_live_ekf.py).

Failover (per source, in `sources()` and the diagnostics, with the reason):
  waiting   nothing received yet
  active    a measurement within its timeout, accepted
  lagging   accepted, but it arrives more than LAGGING_PERIODS filter periods after its stamp (fused by rewinding
            the history when smooth_lagged_data, else at the current time)
  rejected  its last measurements were refused by the Mahalanobis gate (how many in a row); with
            <sensor>_reacquire_after N, N consistent ones in a row re-open the gate (viperdrive.estimation.ekf.Ekf)
  stale     silent longer than its timeout
When no absolute source (one that fuses x or y directly, not differentially) is active, the filter is dead
reckoning: the position covariance grows with the process noise, and `dead_reckoning()` says since when, the
position 1-sigma now and how many seconds remain until it passes `uncertainty_limit`. Every change of a source's
state is an event with its time (`events`).
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..recording.mcap import LogClock, SetClock
from .config import FilterConfig
from .ekf import X, Y
from .schedule import FilterSchedule, FuseSummary, finish_summary, norm_topic

HORIZON_EVERY_S = 1.0      # how often the dead-reckoning horizon is recomputed
LAGGING_PERIODS = 3        # a source is lagging when it arrives more than 3 filter periods after its stamp
GROWTH_WINDOW_S = 5.0      # the 1-sigma growth rate is taken over the last 5 s of dead reckoning
FIRST_INTERVAL_S = 5.0     # a source with one message so far is stale after this long (its rate is not known)


class Stepped(Protocol):
    """What replay() drives: a LiveFilter, or a FilterProcess (the filter in a child process)."""
    clock: LogClock
    period: float

    def feed(self, topic: str, msg) -> bool: ...

    def step(self) -> None: ...


def replay(live: Stepped, events, until: float, margin_s: float = 0.0005) -> None:
    """Feed (arrival s, topic, message) events to `live` (a LiveFilter, or a FilterProcess: the same feed and step)
    at their arrival times on its SetClock and step it just after each period boundary, as `run` does in real time,
    up to `until`."""
    clock, period = live.clock, live.period
    assert isinstance(clock, SetClock), "replay() steps a filter made with clock=SetClock()"
    first = events[0][0] if events else until
    next_step = (math.floor(first / period) + 1) * period + margin_s
    for arrival, topic, msg in events:
        while next_step <= arrival:
            clock.t = next_step
            live.step()
            next_step += period
        clock.t = arrival
        live.feed(topic, msg)
    while next_step <= until:
        clock.t = next_step
        live.step()
        next_step += period


@dataclass
class SourceState:
    name: str
    kind: str
    topic: str
    absolute: bool          # fuses x or y directly (a localizer, GPS): the one that bounds the position error
    state: str = "waiting"
    reason: str = "nothing received yet"
    since: float | None = None       # stamp-clock time the state began
    reacquired_seen: int = 0
    arrival: float | None = None     # log time of its last message, at the previous update


def check_uncertainty_limit(limit: float) -> None:
    if not limit > 0 or not math.isfinite(limit):
        raise ValueError(f"uncertainty limit must be a positive number of metres, not {limit!r}")


def topics_of(readers_of: dict, sources: dict) -> dict:
    """normalized topic -> (kind, [sensor names]) from sources_of()'s two maps."""
    return {t: (sources[names[0]].kind, list(names)) for t, names in readers_of.items()}


def sources_of(config: FilterConfig) -> tuple[dict[str, list[str]], dict[str, SourceState]]:
    """(normalized topic -> the names of the sensors reading it, sensor name -> its SourceState, waiting)."""
    readers_of: dict[str, list[str]] = {}
    sources: dict[str, SourceState] = {}
    for s in config.sensors:
        topic = norm_topic(s.topic)
        readers_of.setdefault(topic, []).append(s.name)
        vec = s.update_vector
        absolute = (vec[X] or vec[Y]) and not s.differential and s.kind in ("odom", "pose")
        sources[s.name] = SourceState(s.name, s.kind, topic, bool(absolute))
    return readers_of, sources


@dataclass
class Estimate:
    t: float                  # the filter time (header stamp clock)
    state: np.ndarray         # 15 variables
    covariance: np.ndarray    # 15 x 15
    dead_reckoning: bool


class LiveFilter:
    """The EKF fed live. `feed(topic, msg)` from any thread (a decoded ROS 2 message of the sensor's kind, with
    a header), `step()` from the filter's thread (or `run(stop)`), `on_estimate(Estimate)` for each output.

    pollers: callables returning [(topic, msg)] taken just before each step (DDS readers of external topics).
    recorder(topic, msg, log_ns): writes each input as it arrives, in arrival order (None: no recording).
    """

    def __init__(self, config: FilterConfig, on_estimate=None, recorder=None, clock: LogClock | None = None,
                 uncertainty_limit: float = 1.0, pollers=()):
        check_uncertainty_limit(uncertainty_limit)
        self.config = config
        self.clock = clock or LogClock()
        self.period = 1.0 / config.frequency
        self.result = FuseSummary(input="live", uncertainty_limit=uncertainty_limit)
        self.schedule = FilterSchedule(config, self.result, on_row=self._row)
        self.ekf = self.schedule.ekf
        self.readers_of, self.sources = sources_of(config)
        for s in config.sensors:
            self.schedule.add_input(s)
        self.on_estimate = on_estimate
        self.recorder = recorder
        self.pollers = list(pollers)
        self.uncertainty_limit = uncertainty_limit
        self.events: deque = deque(maxlen=50)     # (stamp-clock time, source, state, reason)
        self.estimate: Estimate | None = None
        self.steps = 0
        self.step_cost: deque = deque(maxlen=4096)   # s per step (the filter's own work)
        self._lock = threading.Lock()
        self._status_lock = threading.Lock()      # events and costs: written here, read by diagnostics threads
        self._pending: list = []
        self._dead_since: float | None = None
        self._horizon: float | None = None
        self._horizon_at = -math.inf
        self._horizon_sigma = 0.0
        self._sigmas: deque = deque()

    # ---- inputs ----
    def topics(self) -> dict:
        """normalized topic -> (kind, [sensor names]) the filter reads."""
        return topics_of(self.readers_of, self.sources)

    def feed(self, topic: str, msg, ns: int | None = None) -> bool:
        """One message on `topic` (normalized or relative) arriving now, or at log time `ns` (a filter process fed
        by the loop's: viperdrive.estimation.process); False when no sensor reads it."""
        topic = norm_topic(topic)
        if topic not in self.readers_of:
            return False
        with self._lock:
            if ns is None:
                ns = self.clock.ns()
            self._pending.append((ns, topic, msg))
            if self.recorder is not None:
                self.recorder(topic, msg, ns)
        return True

    # ---- the timer ----
    def step(self) -> None:
        """Run every filter period that ended: what arrived in it, fused at its end (the schedule's timing)."""
        for poll in self.pollers:
            for topic, msg in poll():
                self.feed(topic, msg)
        started = time.perf_counter()
        with self._lock:
            now_ns = self.clock.ns()
            batch, self._pending = self._pending, []
        sched = self.schedule
        for ns, topic, msg in batch:
            t = ns * 1e-9
            sched.arrive(t)
            for name in self.readers_of[topic]:
                sched.message(name, msg, t)
        sched.flush(now_ns * 1e-9)
        self._update_sources(now_ns * 1e-9)
        with self._status_lock:
            self.steps += 1
            self.step_cost.append(time.perf_counter() - started)

    def run(self, stop: threading.Event, margin_s: float = 0.0005) -> None:
        """step() just after each period boundary of the log clock until stop is set, then once more: every input
        fed by then is stepped (each period that ended has its estimate, however late this thread woke at the
        end), so a recording of the run fuses offline into the same estimates up to the last one."""
        while not stop.is_set():
            now = self.clock.ns() * 1e-9
            boundary = (math.floor(now / self.period) + 1) * self.period
            if stop.wait(max(0.0, boundary - now + margin_s)):
                break
            self.step()
        self.step()

    def _row(self, t, state, P, dead):
        self.estimate = est = Estimate(t, state, P, dead)
        if self.on_estimate is not None:
            self.on_estimate(est)

    # ---- failover ----
    def _update_sources(self, now_log: float) -> None:
        ekf, sched = self.ekf, self.schedule
        now = sched.stamp_time(now_log)
        for name, src in self.sources.items():
            st = ekf.sensors[name]
            timeout = sched.timeouts.get(name, self.config.sensor_timeout)
            learning = sched.intervals.get(name)
            if learning is not None:
                # its rate is still being learned (the schedule: 20 intervals): judge by what was seen so far,
                # and not before a first interval unless it stays silent for FIRST_INTERVAL_S
                timeout = max(timeout, 3.0 * float(np.median(learning)) if learning else FIRST_INTERVAL_S)
            last = sched.last_arrival.get(name)      # silence is judged by arrivals: a lagged source is not silent
            if last is None:
                state, reason = "waiting", "nothing received yet"
            elif now_log - last > timeout:
                state, reason = "stale", f"no message for {now_log - last:.1f} s (timeout {timeout:.3g} s)"
            elif st.consecutive_rejected:
                state = "rejected"
                reason = f"{st.consecutive_rejected} rejected in a row by the gate"
                if st.reacquire_after:
                    reason += f" (the gate re-opens after {st.reacquire_after} consistent ones in a row)"
                else:
                    reason += " (no re-acquisition rule: <sensor>_reacquire_after is 0)"
            elif sched.latency.get(name, 0.0) > LAGGING_PERIODS * self.period:
                state = "lagging"
                how = "rewound and replayed" if self.config.smooth_lagged_data else "fused at the current time"
                reason = f"arrives {sched.latency[name]:.3f} s after its stamp ({how})"
            else:
                state, reason = "active", "ok"
            if state != src.state:
                was = src.state
                if was == "stale" and src.arrival is not None and last is not None:
                    reason += f"; back after {last - src.arrival:.1f} s silent"
                src.state, src.reason, src.since = state, reason, now
                if not (was == "waiting" and state == "active"):
                    self._event((now, name, state, reason))
            else:
                src.reason = reason
            src.arrival = last
            if st.reacquired != src.reacquired_seen:
                src.reacquired_seen = st.reacquired
                self._event((st.last_reacquired, name, "reacquired",
                                    f"gate opened after {st.reacquire_after} consistent rejections in a row"))
        absolute = [s for s in self.sources.values() if s.absolute]
        dead = ekf.initialized and absolute and not any(s.state in ("active", "lagging") for s in absolute)
        if not absolute and ekf.initialized:
            dead = True       # no absolute source configured: always dead reckoning
        if dead and self._dead_since is None:
            self._dead_since = now
            self._event((now, "filter", "dead_reckoning",
                                "no absolute source active: position from the motion model and relative sources"))
        elif not dead and self._dead_since is not None:
            self._event((now, "filter", "absolute", f"absolute source back after {now - self._dead_since:.1f} "
                                                           f"s of dead reckoning"))
            self._dead_since = None
        if ekf.initialized and now - self._horizon_at >= HORIZON_EVERY_S:
            self._horizon_at = now
            sigma = self._horizon_sigma = position_sigma(ekf.covariance)
            if self._dead_since is None:
                self._sigmas.clear()
                self._horizon = None
            else:
                # the 1-sigma's growth over the last GROWTH_WINDOW_S, extrapolated linearly to the limit (measured,
                # not modelled: it holds while the robot keeps moving as it did and the relative sources keep
                # coming)
                self._sigmas.append((now, sigma))
                while self._sigmas and self._sigmas[0][0] < now - GROWTH_WINDOW_S:
                    self._sigmas.popleft()
                (t0, s0), (t1, s1) = self._sigmas[0], self._sigmas[-1]
                if sigma >= self.uncertainty_limit:
                    self._horizon = 0.0
                elif t1 - t0 < HORIZON_EVERY_S or not s1 > s0:
                    self._horizon = math.inf if t1 - t0 >= HORIZON_EVERY_S else None
                else:
                    self._horizon = (self.uncertainty_limit - sigma) * (t1 - t0) / (s1 - s0)

    def _event(self, event) -> None:
        with self._status_lock:
            self.events.append(event)

    def recent_events(self, n: int = 10) -> list:
        """The last n (stamp-clock time, source, state, reason) events (thread-safe)."""
        with self._status_lock:
            return list(self.events)[-n:]

    def dead_reckoning(self) -> dict:
        """{'active': bool, 'since', 'position_sigma_m', 'seconds_to_limit', 'limit_m'} (recomputed every
        HORIZON_EVERY_S). seconds_to_limit, while dead reckoning: the position 1-sigma's growth over the last
        GROWTH_WINDOW_S, extrapolated linearly to limit_m (None in the first second; inf when it does not grow;
        None when not dead reckoning)."""
        return {"active": self._dead_since is not None, "since": self._dead_since,
                "position_sigma_m": self._horizon_sigma, "seconds_to_limit": self._horizon,
                "limit_m": self.uncertainty_limit}

    def summary(self) -> FuseSummary:
        """The run's summary, as `viperdrive fuse` prints it."""
        finish_summary(self.result, self.schedule)
        return self.result

    def cost(self) -> dict:
        """{'steps', 'mean_ms', 'p99_ms', 'max_ms'} of step() over the last 4096 cycles (thread-safe)."""
        with self._status_lock:
            c = sorted(self.step_cost)
        if not c:
            return {"steps": 0}
        return {"steps": self.steps, "mean_ms": 1e3 * sum(c) / len(c), "p99_ms": 1e3 * c[min(len(c) - 1,
                                                                                                int(0.99 * len(c)))],
                "max_ms": 1e3 * c[-1]}


def position_sigma(P: np.ndarray) -> float:
    """The largest axis of the x-y 1-sigma error ellipse, m."""
    return math.sqrt(max(float(np.linalg.eigvalsh(P[np.ix_([X, Y], [X, Y])]).max()), 0.0))
