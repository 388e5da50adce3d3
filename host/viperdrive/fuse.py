# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Offline fusion: ROS 2 messages from an MCAP file through the EKF, estimates out as CSV (and MCAP).

The run reproduces a live robot_localization node: messages arrive in recording order (MCAP log time); every
1/frequency seconds of arrival time the filter integrates what arrived, in header-stamp order (header stamps are the
measurement times); a message older than the filter is rewound and replayed when smooth_lagged_data is set, or
dropped and counted when it is older than history_length; after sensor_timeout without data the filter predicts
forward (dead reckoning, P grows with Q). One output row per cycle in which the filter time advanced, stamped with
the filter time, as robot_localization stamps /odometry/filtered.

Arrival times are mapped onto the stamp clock by the smallest observed (log time - stamp), so recordings made with
a clock offset (sim time, another machine) still line up; only the differences in latency matter.

This module is the scheduler and its summary. What it uses lives with what it belongs to: the recording's TF tree
and the frame conversion in viperdrive.transforms (StaticFrames, FrameContext), the message adapters in
viperdrive.ekf.sensors (measurements_of), the reader of damaged recordings and the outputs written whole in
viperdrive.logs; progress goes to a callback (the CLI draws it with its Progress).
"""
from __future__ import annotations

import csv
import math
import struct
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import rosmsg_defs
from .ekf import STATE_NAMES, Ekf, FilterConfig, SensorInput
from .ekf.core import Measurement, SensorStatus
from .ekf.sensors import measurements_of
from .errors import FuseError
from .logs import McapDamage, _open_reader, _OutputFile, guarded
from .transforms import FrameContext, StaticFrames, quat_from_euler, quat_to_xyzw

CSV_VARIABLES = STATE_NAMES[:12]
CSV_COLUMNS = ("t",) + CSV_VARIABLES + tuple(f"var_{n}" for n in CSV_VARIABLES)
OUTPUT_TOPIC = "/odometry/filtered"
TF_STATIC = "/tf_static"
TYPE_OF_KIND = {
    "odom": rosmsg_defs.ODOMETRY,
    "imu": rosmsg_defs.IMU,
    "pose": rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED,
    "twist": rosmsg_defs.TWIST_WITH_COVARIANCE_STAMPED,
}


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


def _stamp(header) -> float:
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def _norm_topic(topic: str) -> str:
    """robot_localization topics are often relative ('example/odom'); recordings store '/example/odom'."""
    return "/" + topic.lstrip("/")


def _odometry_dict(t, state, P, frame, child):
    sec = math.floor(t)
    nsec = int(round((t - sec) * 1e9))
    if nsec >= 1_000_000_000:
        sec, nsec = sec + 1, nsec - 1_000_000_000
    qx, qy, qz, qw = quat_to_xyzw(quat_from_euler(state[3], state[4], state[5]))
    return {
        "header": {"stamp": {"sec": int(sec), "nanosec": nsec}, "frame_id": frame},
        "child_frame_id": child,
        "pose": {"pose": {"position": {"x": state[0], "y": state[1], "z": state[2]},
                          "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                 "covariance": [float(v) for v in P[0:6, 0:6].ravel()]},
        "twist": {"twist": {"linear": {"x": state[6], "y": state[7], "z": state[8]},
                            "angular": {"x": state[9], "y": state[10], "z": state[11]}},
                  "covariance": [float(v) for v in P[6:12, 6:12].ravel()]},
    }


def fuse(input_path, config: FilterConfig, out_csv, mcap_out=None,
         progress: Callable[[int, int | None], None] | None = None, uncertainty_limit: float = 1.0,
         observer=None) -> FuseSummary:
    """Run the filter over an MCAP file; write the CSV (and optionally an MCAP of nav_msgs/Odometry). `observer`
    (e.g. viperdrive.lint.RecordingScan) sees every decoded sensor message, message(name, kind, msg, stamp), and
    the static transforms at the end, static(frames): what the config lint checks, without a second pass."""
    path = Path(input_path)
    outputs = [Path(o) for o in (out_csv, mcap_out) if o is not None]
    if len(outputs) == 2 and outputs[0].resolve() == outputs[1].resolve():
        raise FuseError(f"--out and --mcap-out are the same file: {outputs[0]}")
    for o in outputs:
        # never overwrite the recording (or the config) with the results
        if path.exists() and o.exists() and o.resolve() == path.resolve():
            raise FuseError(f"{o}: is the input recording; choose another output file")
        if config.source and o.exists() and o.resolve() == Path(config.source).resolve():
            raise FuseError(f"{o}: is the parameter file; choose another output file")
    f, reader, summary, damaged = _open_reader(path)
    try:
        fusion = _Fusion(path, config, reader, summary, damaged, progress, uncertainty_limit)
        fusion.observer = observer
        result = fusion.run(out_csv, mcap_out)
        if observer is not None:
            observer.static(fusion.frames)
        return result
    finally:
        f.close()


class FilterSchedule:
    """robot_localization's timing, in one place for the offline replay (`fuse`) and the live filter
    (viperdrive.ekf.live): messages arrive with an arrival time (log time, s); every 1/frequency seconds of arrival
    time, the filter integrates what arrived in that period in header-stamp order, predicts forward after
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
            result.sensors.setdefault(s.name, SensorTally(s.name, s.kind, _norm_topic(s.topic)))
            result.sensors[s.name].outcomes = self.ekf.register_sensor(s.name, s.timeout, s.reacquire_after)

    def add_input(self, s) -> None:
        """Read sensor `s` (a SensorConfig of the filter's config)."""
        self.inputs[s.name] = SensorInput(s)
        self.timeouts[s.name] = s.timeout if s.timeout is not None else self.config.sensor_timeout
        if s.timeout is None:
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
            tally.first_problem = f"{type(e).__name__}: {e}"

    def message(self, name, decoded, log_t):
        tally = self.result.sensors[name]
        tally.messages += 1
        self.last_arrival[name] = log_t
        inp = self.inputs[name]
        last_stamp = self.last_stamp
        try:
            t = _stamp(decoded.header)
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
        self.batch.sort(key=lambda m: m.time)
        for m in self.batch:
            ekf.process(m)          # counted per sensor by the filter (SensorTally.outcomes)
        self.batch.clear()
        if not ekf.initialized:
            return
        now = (cycle + 1) * self.period - self.offset       # end of this cycle on the stamp clock
        assert ekf.time is not None         # an initialized filter has a time
        dead = False
        if now - ekf.time > self.config.sensor_timeout:
            # nothing for longer than sensor_timeout: predict forward as robot_localization does
            ekf.predict_to(now)
            dead = ekf.dead_reckoning(now)
        if self.last_row_t is None or ekf.time > self.last_row_t:
            if self.on_row is not None:
                self.on_row(ekf.time, ekf.state, ekf.covariance, dead)
            result.rows += 1
            result.dead_reckoning_rows += dead
            self.last_row_t = ekf.time


class _Fusion:
    def __init__(self, path, config: FilterConfig, reader, summary, damaged, progress, uncertainty_limit):
        self.path, self.config, self.reader, self.progress = path, config, reader, progress
        self.observer = None
        self.damaged = bool(damaged)
        self.result = result = FuseSummary(input=str(path), uncertainty_limit=uncertainty_limit)
        result.config_notes = config.notes()
        if damaged:
            result.warnings.append(f"the recording has no readable index ({damaged}): read from the start up to "
                                   f"the damage")
        self.total: int | None = None
        recorded: dict[str, str] = {}        # normalized topic -> schema name (when the file has a summary)
        counts: dict[str, int] = {}
        if summary is not None:
            for ch in summary.channels.values():
                sch = summary.schemas.get(ch.schema_id)
                recorded[_norm_topic(ch.topic)] = sch.name if sch is not None else ""
                if summary.statistics is not None:
                    counts[_norm_topic(ch.topic)] = summary.statistics.channel_message_counts.get(ch.id, 0)
        self.schedule = sched = FilterSchedule(config, result, on_row=self._row)
        self.readers_of: dict[str, list[str]] = {}      # normalized topic -> sensor names
        for s in config.sensors:
            topic = _norm_topic(s.topic)
            if summary is not None and topic not in recorded:
                result.warnings.append(f"{s.name}: topic '{s.topic}' is not in {path.name} (topics: "
                                       f"{', '.join(sorted(recorded)) or 'none'})")
                continue
            if topic in recorded:
                self._check_type(s.name, topic, recorded[topic])
            if topic in self.readers_of:
                result.warnings.append(f"{s.name}: topic '{topic}' is also read by {self.readers_of[topic][0]}")
            self.readers_of.setdefault(topic, []).append(s.name)
            sched.add_input(s)
        if counts:
            self.total = sum(counts.get(t, 0) for t in self.readers_of)
        self.checked_topics = set(recorded)
        self.frames = sched.frames
        self.has_tf_static = TF_STATIC in recorded
        self.ekf = sched.ekf

    def _row(self, t, state, P, dead):
        self.writer.row(t, state, P)

    def _check_type(self, name, topic, have):
        _check_type(self.config, name, topic, have)

    def run(self, out_csv, mcap_out) -> FuseSummary:
        from mcap.exceptions import McapError
        from mcap_ros2.decoder import DecoderFactory

        result, config, sched = self.result, self.config, self.schedule
        sched.observer = self.observer
        self.writer = _Outputs(out_csv, mcap_out, config)
        decoders = DecoderFactory()
        decoder_of: dict[int, Callable | None] = {}
        wanted = [c for t in self.readers_of for c in (t, t.lstrip("/"))]
        if self.damaged:
            wanted += [TF_STATIC, TF_STATIC.lstrip("/")]      # no index to find it first: take it as it comes
        elif self.has_tf_static:
            self._read_static_transforms(decoders)
        n = 0
        finished = False
        try:
            try:
                # a damaged file is streamed in file order (sorting would need the whole, unreadable, file first)
                for schema, channel, message in guarded(self.reader.iter_messages(topics=wanted,
                                                                                  log_time_order=not self.damaged)):
                    topic = _norm_topic(channel.topic)
                    if topic == TF_STATIC:
                        self._static_transform(decoders, schema, channel, message)
                        continue
                    names = self.readers_of.get(topic)
                    if names is None:
                        continue
                    if topic not in self.checked_topics:
                        for name in names:
                            self._check_type(name, topic, schema.name if schema is not None else "")
                        self.checked_topics.add(topic)
                    decode = decoder_of.get(channel.id)
                    if decode is None:
                        decode = decoder_of[channel.id] = decoders.decoder_for(channel.message_encoding, schema)
                        if decode is None:
                            raise FuseError(f"{topic}: cannot decode {channel.message_encoding} messages with schema "
                                            f"encoding {schema.encoding if schema else 'none'}")
                    n += 1
                    if self.progress is not None and n % 2000 == 0:
                        self.progress(n, self.total)
                    log_t = message.log_time * 1e-9
                    sched.arrive(log_t)
                    try:
                        decoded = decode(message.data)
                    except Exception as e:          # noqa: BLE001 -- any undecodable payload is counted, not fatal
                        for name in names:
                            sched.invalid(name, e)
                        continue
                    for name in names:
                        sched.message(name, decoded, log_t)
            except (McapError, EOFError, struct.error, ValueError, McapDamage) as e:
                result.warnings.append(f"the recording ends in damaged data after {n} messages "
                                       f"({type(e).__name__}: {e}): fused what came before")
            sched.finish()
            result.messages = n
            if self.progress is not None:
                self.progress(n, self.total)
            finished = True
        finally:
            # an existing output is replaced only by a run that produced estimates: an error or an empty run
            # must not turn last run's results into a header-only file
            self.writer.close(keep=finished and result.rows > 0)
        if finished and result.rows == 0:
            for out in (out_csv, mcap_out):
                if out is not None:
                    result.warnings.append(f"no estimates: {out} was not written"
                                           + (" (the existing file is unchanged)" if Path(out).exists() else ""))
        finish_summary(result, sched)
        return result

    def _read_static_transforms(self, decoders):
        """Sensor mounts: every /tf_static message, before the sensors (they are valid for the whole run)."""
        try:
            for schema, channel, message in guarded(self.reader.iter_messages(topics=[TF_STATIC,
                                                                                      TF_STATIC.lstrip("/")])):
                self._static_transform(decoders, schema, channel, message)
        except McapDamage as e:
            self.result.warnings.append(f"{TF_STATIC}: not all of it could be read (damaged data: {e})")

    def _static_transform(self, decoders, schema, channel, message):
        decode = decoders.decoder_for(channel.message_encoding, schema)
        if decode is None or schema is None or schema.name.replace("/msg/", "/") != "tf2_msgs/TFMessage":
            return
        try:
            self.frames.add_message(decode(message.data))
        except (ValueError, AttributeError, TypeError) as e:
            self.result.warnings.append(f"{TF_STATIC}: a transform could not be read ({type(e).__name__}: {e})")


def _check_type(config, name, topic, have):
    kind = config.sensors[[s.name for s in config.sensors].index(name)].kind
    want = TYPE_OF_KIND[kind]
    if have.replace("/msg/", "/") != want.replace("/msg/", "/"):
        raise FuseError(f"{name}: topic '{topic}' carries {have or 'an unknown type'}, but a {kind} sensor "
                        f"reads {want}")


def finish_summary(result: FuseSummary, sched: FilterSchedule) -> None:
    """The end of a run (offline or live): final estimate, dead-reckoning horizon, the warnings per sensor."""
    ekf, config = sched.ekf, sched.config
    if ekf.initialized:
        result.end = ekf.time
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


class _Outputs:
    """The CSV (and MCAP) of one run; `close(keep)` publishes them together, or discards both."""

    def __init__(self, out_csv, mcap_out, config: FilterConfig):
        self._mcap_file: _OutputFile | None = None
        self._mcap: Any = None      # mcap_ros2's Writer (imported only for an MCAP output)
        self.frame, self.child = config.world_frame, config.base_link_frame
        self._csv_file: _OutputFile | None = _OutputFile(out_csv, "w", newline="")
        self._csv = csv.writer(self._csv_file.file)
        self._csv.writerow(CSV_COLUMNS)
        if mcap_out is not None:
            from mcap_ros2.writer import Writer

            try:
                self._mcap_file = _OutputFile(mcap_out, "wb")
            except FuseError:
                self.close(keep=False)
                raise
            self._mcap = Writer(self._mcap_file.file)
            self._schema = self._mcap.register_msgdef(rosmsg_defs.ODOMETRY,
                                                      rosmsg_defs.DEFINITIONS[rosmsg_defs.ODOMETRY])

    def row(self, t, state, P):
        var = np.diag(P)
        self._csv.writerow([repr(float(t))] + ["%.9g" % v for v in state[:12]] + ["%.9g" % v for v in var[:12]])
        if self._mcap is not None:
            ns = int(round(t * 1e9))
            self._mcap.write_message(OUTPUT_TOPIC, self._schema, _odometry_dict(t, state, P, self.frame, self.child),
                                     log_time=ns, publish_time=ns)

    def close(self, keep: bool) -> None:
        """keep: rename the finished files over the targets; otherwise delete them and leave the targets alone."""
        try:
            if self._mcap is not None and keep:
                self._mcap.finish()
        finally:
            self._mcap = None
            for out in (self._csv_file, self._mcap_file):
                if out is not None:
                    out.close(keep)
            self._csv_file = self._mcap_file = None


__all__ = ["CSV_COLUMNS", "FilterSchedule", "FuseError", "FuseSummary", "OUTPUT_TOPIC", "SensorTally", "fuse",
           "measurements_of", "StaticFrames", "FrameContext"]
