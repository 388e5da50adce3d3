# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""robot_localization's timing, in one place for the offline replay (viperdrive.estimation.replay, `viperdrive fuse`)
and the live filter (viperdrive.estimation.live): FilterSchedule runs the EKF period by period over messages that
arrive with an arrival time; FuseSummary and SensorTally are what a run found; finish_summary closes a run."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..transforms import FrameContext, StaticFrames
from .config import FilterConfig
from .ekf import STATE_NAMES, Ekf, Measurement, SensorStatus
from .measurements import SensorInput, measurements_of

CSV_VARIABLES = STATE_NAMES[:12]     # the estimate's variables a run reports (x .. vyaw): the CSV's and the summary's


def problem_text(e: Exception) -> str:
    """An exception from decoding a message, in words. mcap_ros2's decoder names a field whose type the schema does
    not define with an unformatted template ('type "{ftype.type}"': a missing f-prefix in the library): said
    plainly instead."""
    text = str(e)
    m = re.match(r'Message definition not found for field "([^"]*)"', text)
    if m:
        return (f"the recording's schema does not define the type of field {m.group(1)!r} (a damaged or foreign "
                f"schema)")
    return f"{type(e).__name__}: {text}"


@dataclass
class SensorTally:
    """What happened to one sensor's messages before the filter; what the filter did with the measurements
    (used, rejected, too late, late fused) is the filter's own count, `outcomes`."""
    name: str
    kind: str
    topic: str
    messages: int = 0
    invalid: int = 0
    out_of_order: int = 0
    stale_gaps: int = 0            # silences longer than the sensor's timeout
    longest_gap: float = 0.0
    first_problem: str = ""
    outcomes: SensorStatus | None = None     # the EKF's counters for this sensor (set when the run starts)


@dataclass
class FuseSummary:
    input: str
    rows: int = 0
    messages: int = 0
    start: float | None = None
    end: float | None = None
    sensors: dict[str, SensorTally] = field(default_factory=dict)
    final_state: np.ndarray | None = None
    final_covariance: np.ndarray | None = None
    dead_reckoning_rows: int = 0
    time_to_limit: float | None = None
    uncertainty_limit: float = 1.0
    config_notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"fused {self.messages} messages from {self.input} into {self.rows} estimates"]
        if self.start is not None and self.end is not None:
            lines[0] += f" over {self.end - self.start:.3f} s"
        lines.append(f"{'sensor':<8} {'topic':<28} {'msgs':>7} {'used':>7} {'rejected':>8} {'too late':>8} "
                     f"{'late*':>6} {'order':>6} {'invalid':>7}")
        for s in self.sensors.values():
            f = s.outcomes if s.outcomes is not None else SensorStatus(s.name, 0.0)     # zeros before a run
            lines.append(f"{s.name:<8} {s.topic[:28]:<28} {s.messages:>7} {f.used:>7} {f.rejected:>8} "
                         f"{f.too_late:>8} {f.late_fused:>6} {s.out_of_order:>6} {s.invalid:>7}")
        lines.append("  (used/rejected/too late count measurements: an odometry message gives a pose and a twist one;"
                     " late* = lagged, fused at the current time; order = older than the previous on its topic, "
                     "ignored)")
        if self.final_covariance is not None:
            sd = np.sqrt(np.maximum(np.diag(self.final_covariance), 0.0))
            parts = [f"{n}={sd[i]:.4g}" for i, n in enumerate(CSV_VARIABLES)]
            lines.append("final 1-sigma: " + " ".join(parts))
            st = self.final_state
            assert st is not None           # set with final_covariance
            lines.append(f"final pose: x={st[0]:.4f} m y={st[1]:.4f} m yaw={st[5]:.4f} rad")
        if self.time_to_limit is not None:
            ttl = "never (within 600 s)" if math.isinf(self.time_to_limit) else f"{self.time_to_limit:.1f} s"
            lines.append(f"dead reckoning from the final estimate: position 1-sigma passes {self.uncertainty_limit} m "
                         f"after {ttl}")
        if self.dead_reckoning_rows:
            lines.append(f"{self.dead_reckoning_rows} estimates were dead reckoning (no sensor within its timeout)")
        for w in self.warnings:
            lines.append(f"warning: {w}")
        return "\n".join(lines)


def header_stamp(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def norm_topic(topic: str) -> str:
    """robot_localization topics are often relative ('example/odom'); recordings store '/example/odom'."""
    return "/" + topic.lstrip("/")


class FilterSchedule:
    """robot_localization's timing, in one place for the offline replay (`fuse`) and the live filter
    (viperdrive.estimation.live): messages arrive with an arrival time (log time, s); every 1/frequency seconds of
    arrival time, the filter integrates what arrived in that period in header-stamp order, predicts forward after
    sensor_timeout of silence, and emits a row when its time advanced. `arrive(log_t)` runs the periods that ended
    before log_t, then `message(name, decoded, log_t)` queues a decoded message for the period it arrived in;
    `flush(log_t)` runs the periods that ended before log_t with nothing new (the live filter's timer);
    `finish()` runs the last one. `on_row(t, state, covariance, dead_reckoning)` receives each estimate."""

    def __init__(self, config: FilterConfig, result: FuseSummary, on_row=None):
        self.config, self.result = config, result
        self.on_row = on_row
        self.observer = None
        self.inputs: dict[str, SensorInput] = {}
        self.timeouts: dict[str, float] = {}
        self.intervals: dict[str, list[float]] = {}
        self.frames = StaticFrames()
        self.frame_warnings: list[str] = []
        self.fc = FrameContext(config.world_frame, config.base_link_frame, self.frames,
                               warn=self.frame_warnings.append)
        self.ekf = Ekf(config.ekf_config())
        self.period = 1.0 / config.frequency
        self.batch: list[Measurement] = []
        self.batch_cycle: int | None = None
        self.offset = math.inf
        self.last_row_t: float | None = None
        self.last_stamp: dict[str, float] = {}
        self.latency: dict[str, float] = {}      # the last message's arrival - stamp - offset, per sensor (s)
        self.last_arrival: dict[str, float] = {}     # log time of each sensor's last message
        for s in config.sensors:
            result.sensors.setdefault(s.name, SensorTally(s.name, s.kind, norm_topic(s.topic)))
            result.sensors[s.name].outcomes = self.ekf.register_sensor(s.name, s.timeout_s, s.reacquire_after)

    def add_input(self, s) -> None:
        """Read sensor `s` (a SensorConfig of the filter's config)."""
        self.inputs[s.name] = SensorInput(s)
        self.timeouts[s.name] = s.timeout_s if s.timeout_s is not None else self.config.sensor_timeout
        if s.timeout_s is None:
            self.intervals[s.name] = []

    def arrive(self, log_t: float) -> None:
        """A message arrives at log_t: first the periods that ended before it."""
        cycle = math.floor(log_t / self.period)
        b = self.batch_cycle
        if b is not None and cycle != b:
            self._cycle(b)
            if self.ekf.initialized:
                # empty cycles in between: dead reckoning once sensor_timeout has passed
                for k in range(b + 1, cycle):
                    self._cycle(k)
        self.batch_cycle = cycle

    def flush(self, log_t: float) -> None:
        """Run every period that ended before log_t (nothing arrived since the last message)."""
        if self.batch_cycle is not None:
            self.arrive(log_t)

    def finish(self) -> None:
        if self.batch_cycle is not None:
            self._cycle(self.batch_cycle)
            self.batch_cycle = None
        for name in list(self.intervals):
            self._settle_timeout(name)          # sensors with fewer than 20 messages

    def invalid(self, name, e):
        tally = self.result.sensors[name]
        tally.invalid += 1
        if not tally.first_problem:
            tally.first_problem = problem_text(e)

    def message(self, name, decoded, log_t):
        tally = self.result.sensors[name]
        tally.messages += 1
        self.last_arrival[name] = log_t
        inp = self.inputs[name]
        last_stamp = self.last_stamp
        try:
            t = header_stamp(decoded.header)
            if not math.isfinite(t):
                raise ValueError("header stamp is not finite")
            prev = last_stamp.get(name)
            if prev is not None and t < prev:
                # robot_localization ignores a message stamped before its topic's previous one
                tally.out_of_order += 1
                return
            if prev is not None:
                gap = t - prev
                if name in self.intervals:
                    self._learn_rate(name, gap)
                else:
                    self._count_gap(tally, gap, self.timeouts[name])
            last_stamp[name] = t
            if self.observer is not None:
                self.observer.message(name, inp.cfg.kind, decoded, t)
            if self.result.start is None or t < self.result.start:
                self.result.start = t
            self.offset = min(self.offset, log_t - t)
            self.latency[name] = log_t - t - self.offset
            self.batch.extend(measurements_of(inp, inp.cfg.kind, decoded, t, self.fc))
        except (ValueError, AttributeError, TypeError, IndexError) as e:
            self.invalid(name, e)

    def _learn_rate(self, name, gap):
        """Without an explicit <sensor>_timeout, a sensor is stale after max(sensor_timeout, 3 of its usual
        intervals): sensor_timeout alone (often one filter period) would call every 5 Hz fix late. The first 20
        intervals set it; they are then judged by it too."""
        intervals = self.intervals[name]
        intervals.append(gap)
        if len(intervals) == 20:
            self._settle_timeout(name)

    def _settle_timeout(self, name):
        intervals = self.intervals.pop(name)
        if intervals:
            self.timeouts[name] = max(self.config.sensor_timeout, 3.0 * float(np.median(intervals)))
            self.ekf.register_sensor(name, self.timeouts[name])
        for gap in intervals:
            self._count_gap(self.result.sensors[name], gap, self.timeouts[name])

    @staticmethod
    def _count_gap(tally, gap, timeout):
        if gap > timeout:
            tally.stale_gaps += 1
            tally.longest_gap = max(tally.longest_gap, gap)

    def stamp_time(self, log_t: float) -> float:
        """An arrival time on the stamp clock."""
        return log_t - (self.offset if math.isfinite(self.offset) else 0.0)

    def _cycle(self, cycle: int):
        """One filter period: integrate what arrived (in stamp order), predict after silence, emit a row."""
        ekf, result = self.ekf, self.result
        self.batch.sort(key=lambda m: m.time_s)
        for m in self.batch:
            ekf.process(m)          # counted per sensor by the filter (SensorTally.outcomes)
        self.batch.clear()
        if not ekf.initialized:
            return
        now = (cycle + 1) * self.period - self.offset       # end of this cycle on the stamp clock
        assert ekf.time_s is not None         # an initialized filter has a time
        dead = False
        if now - ekf.time_s > self.config.sensor_timeout:
            # nothing for longer than sensor_timeout: predict forward as robot_localization does
            ekf.predict_to(now)
            dead = ekf.dead_reckoning(now)
        if self.last_row_t is None or ekf.time_s > self.last_row_t:
            if self.on_row is not None:
                self.on_row(ekf.time_s, ekf.state, ekf.covariance, dead)
            result.rows += 1
            result.dead_reckoning_rows += dead
            self.last_row_t = ekf.time_s


def finish_summary(result: FuseSummary, sched: FilterSchedule) -> None:
    """The end of a run (offline or live): final estimate, dead-reckoning horizon, the warnings per sensor."""
    ekf, config = sched.ekf, sched.config
    if ekf.initialized:
        result.end = ekf.time_s
        result.final_state = ekf.state
        result.final_covariance = ekf.covariance
        result.time_to_limit = ekf.time_until_uncertain(result.uncertainty_limit)
    else:
        result.warnings.append("no usable measurement: the filter never started (check topics and *_config)")
    result.warnings.extend(sched.frame_warnings)
    for s in result.sensors.values():
        if s.invalid:
            result.warnings.append(f"{s.name}: {s.invalid} invalid messages skipped (first: {s.first_problem})")
        if s.outcomes is not None and s.outcomes.too_late:
            result.warnings.append(f"{s.name}: {s.outcomes.too_late} measurements older than history_length "
                                   f"({config.history_length} s) were dropped")
        if s.stale_gaps:
            result.warnings.append(f"{s.name}: silent longer than its timeout {s.stale_gaps} times "
                                   f"(longest {s.longest_gap:.3f} s)")


__all__ = ["FilterSchedule", "FuseSummary", "SensorTally", "finish_summary", "norm_topic", "header_stamp"]
