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
viperdrive.estimation.measurements (measurements_of), the reader of damaged recordings and the outputs written whole in
viperdrive.recording.mcap; progress goes to a callback (the CLI draws it with its Progress).
"""
from __future__ import annotations

import csv
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FuseError
from ..messages import definitions as rosmsg_defs
from ..recording.mcap import McapDamage, OutputFile, guarded, open_reader
from ..transforms import quat_from_euler, quat_to_xyzw
from . import FilterConfig
from .schedule import CSV_VARIABLES, FilterSchedule, FuseSummary, finish_summary, norm_topic

CSV_COLUMNS = ("t",) + CSV_VARIABLES + tuple(f"var_{n}" for n in CSV_VARIABLES)
OUTPUT_TOPIC = "/odometry/filtered"
TF_STATIC = "/tf_static"
TYPE_OF_KIND = {
    "odom": rosmsg_defs.ODOMETRY,
    "imu": rosmsg_defs.IMU,
    "pose": rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED,
    "twist": rosmsg_defs.TWIST_WITH_COVARIANCE_STAMPED,
}


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
    (e.g. viperdrive.estimation.lint.RecordingScan) sees every decoded sensor message, message(name, kind, msg, stamp),
    and the static transforms at the end, static(frames): what the config lint checks, without a second pass."""
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
    f, reader, summary, damaged = open_reader(path)
    try:
        fusion = _Fusion(path, config, reader, summary, damaged, progress, uncertainty_limit)
        fusion.observer = observer
        result = fusion.run(out_csv, mcap_out)
        if observer is not None:
            observer.static(fusion.frames)
        return result
    finally:
        f.close()


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
                recorded[norm_topic(ch.topic)] = sch.name if sch is not None else ""
                if summary.statistics is not None:
                    counts[norm_topic(ch.topic)] = summary.statistics.channel_message_counts.get(ch.id, 0)
        self.schedule = sched = FilterSchedule(config, result, on_row=self._row)
        self.readers_of: dict[str, list[str]] = {}      # normalized topic -> sensor names
        for s in config.sensors:
            topic = norm_topic(s.topic)
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
                    topic = norm_topic(channel.topic)
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
            skipped = getattr(self.reader, "skipped_text", None)
            if skipped is not None and skipped():
                result.warnings.append(f"the recording has {skipped()}")
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


class _Outputs:
    """The CSV (and MCAP) of one run; `close(keep)` publishes them together, or discards both."""

    def __init__(self, out_csv, mcap_out, config: FilterConfig):
        self._mcap_file: OutputFile | None = None
        self._mcap: Any = None      # mcap_ros2's Writer (imported only for an MCAP output)
        self.frame, self.child = config.world_frame, config.base_link_frame
        self._csv_file: OutputFile | None = OutputFile(out_csv, "w", newline="")
        self._csv = csv.writer(self._csv_file.file)
        self._csv.writerow(CSV_COLUMNS)
        if mcap_out is not None:
            from mcap_ros2.writer import Writer

            try:
                self._mcap_file = OutputFile(mcap_out, "wb")
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


__all__ = ["CSV_COLUMNS", "FuseSummary", "OUTPUT_TOPIC", "fuse"]
