"""Offline fusion: ROS 2 messages from an MCAP file through the EKF, estimates out as CSV (and MCAP).

The run reproduces a live robot_localization node: messages arrive in recording order (MCAP log time); every
1/frequency seconds of arrival time the filter integrates what arrived, in header-stamp order (header stamps are the
measurement times); a message older than the filter is rewound and replayed when smooth_lagged_data is set, or
dropped and counted when it is older than history_length; after sensor_timeout without data the filter predicts
forward (dead reckoning, P grows with Q). One output row per cycle in which the filter time advanced, stamped with
the filter time, as robot_localization stamps /odometry/filtered.

Arrival times are mapped onto the stamp clock by the smallest observed (log time - stamp), so recordings made with
a clock offset (sim time, another machine) still line up; only the differences in latency matter.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import rosmsg_defs
from .ekf import STATE_NAMES, Ekf, FilterConfig, SensorInput
from .ekf.core import LATE_FUSED, NOTHING, REJECTED, TOO_LATE, USED
from .errors import UserError
from .transforms import quat_from_xyzw, quat_to_xyzw

CSV_VARIABLES = STATE_NAMES[:12]
CSV_COLUMNS = ("t",) + CSV_VARIABLES + tuple(f"var_{n}" for n in CSV_VARIABLES)
OUTPUT_TOPIC = "/odometry/filtered"
TYPE_OF_KIND = {
    "odom": rosmsg_defs.ODOMETRY,
    "imu": rosmsg_defs.IMU,
    "pose": rosmsg_defs.POSE_WITH_COVARIANCE_STAMPED,
    "twist": rosmsg_defs.TWIST_WITH_COVARIANCE_STAMPED,
}


class FuseError(UserError):
    """The input or output file cannot be used."""


@dataclass
class SensorTally:
    name: str
    kind: str
    topic: str
    messages: int = 0
    invalid: int = 0
    out_of_order: int = 0
    used: int = 0
    rejected: int = 0
    too_late: int = 0
    late_fused: int = 0
    first_problem: str = ""


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
            lines.append(f"{s.name:<8} {s.topic[:28]:<28} {s.messages:>7} {s.used:>7} {s.rejected:>8} "
                         f"{s.too_late:>8} {s.late_fused:>6} {s.out_of_order:>6} {s.invalid:>7}")
        lines.append("  (used/rejected/too late count measurements: an odometry message gives a pose and a twist one;"
                     " late* = lagged, fused at the current time; order = older than the previous on its topic, "
                     "ignored)")
        if self.final_covariance is not None:
            sd = np.sqrt(np.maximum(np.diag(self.final_covariance), 0.0))
            parts = [f"{n}={sd[i]:.4g}" for i, n in enumerate(CSV_VARIABLES)]
            lines.append("final 1-sigma: " + " ".join(parts))
            st = self.final_state
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


def _cov(values, n) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    if a.size != n * n:
        raise ValueError(f"covariance has {a.size} elements, expected {n * n}")
    return a.reshape(n, n)


def _quat(o) -> np.ndarray:
    q = quat_from_xyzw(o.x, o.y, o.z, o.w)
    n = float(q @ q)
    if not (n > 1e-12 and math.isfinite(n)):
        raise ValueError("orientation quaternion is zero or not finite")
    return q / math.sqrt(n)


def _vec(v) -> np.ndarray:
    return np.array([v.x, v.y, v.z], dtype=float)


def measurements_of(inp: SensorInput, kind: str, msg, t: float):
    """Filter measurements from one decoded ROS 2 message of the sensor's kind."""
    if kind == "odom":
        p, tw = msg.pose, msg.twist
        return inp.odometry(t, _vec(p.pose.position), _quat(p.pose.orientation), _cov(p.covariance, 6),
                            _vec(tw.twist.linear), _vec(tw.twist.angular), _cov(tw.covariance, 6))
    if kind == "pose":
        p = msg.pose
        return inp.pose(t, _vec(p.pose.position), _quat(p.pose.orientation), _cov(p.covariance, 6))
    if kind == "twist":
        tw = msg.twist
        return inp.twist(t, _vec(tw.twist.linear), _vec(tw.twist.angular), _cov(tw.covariance, 6))
    # imu: covariance[0] == -1 marks a part the IMU does not provide (sensor_msgs/Imu convention)
    oc, gc, ac = list(msg.orientation_covariance), list(msg.angular_velocity_covariance), \
        list(msg.linear_acceleration_covariance)
    q = None if oc[0] == -1 else _quat(msg.orientation)
    gyro = None if gc[0] == -1 else _vec(msg.angular_velocity)
    acc = None if ac[0] == -1 else _vec(msg.linear_acceleration)
    return inp.imu(t, q, None if q is None else _cov(oc, 3), gyro, None if gyro is None else _cov(gc, 3),
                   acc, None if acc is None else _cov(ac, 3))


def _open_reader(path: Path):
    from mcap.exceptions import McapError
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    if not path.exists():
        raise FuseError(f"{path}: no such file")
    if path.is_dir():
        raise FuseError(f"{path}: is a directory (give the .mcap file inside a ros2 bag folder)")
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FuseError(f"{path}: cannot open: {e.strerror}") from None
    try:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
    except (McapError, ValueError, EOFError, OSError) as e:
        f.close()
        raise FuseError(f"{path}: not a readable MCAP file ({type(e).__name__}: {e})") from None
    return f, reader, summary


def _topic_match(wanted: str, topics: dict[str, str]) -> str | None:
    """robot_localization topics are often relative ('example/odom'); recordings store '/example/odom'."""
    for cand in (wanted, "/" + wanted.lstrip("/")):
        if cand in topics:
            return cand
    return None


def _odometry_dict(t, state, P, frame, child):
    sec = math.floor(t)
    nsec = int(round((t - sec) * 1e9))
    if nsec >= 1_000_000_000:
        sec, nsec = sec + 1, nsec - 1_000_000_000
    from .transforms import quat_from_euler

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
         progress: Callable[[int, int | None], None] | None = None, uncertainty_limit: float = 1.0) -> FuseSummary:
    """Run the filter over an MCAP file; write the CSV (and optionally an MCAP of nav_msgs/Odometry)."""
    from mcap.exceptions import McapError

    path = Path(input_path)
    f, reader, summary = _open_reader(path)
    result = FuseSummary(input=str(path), uncertainty_limit=uncertainty_limit)
    result.config_notes = config.notes()
    try:
        topics: dict[str, str] = {}
        counts: dict[str, int] = {}
        if summary is not None:
            schemas = summary.schemas
            for ch in summary.channels.values():
                sch = schemas.get(ch.schema_id)
                topics[ch.topic] = sch.name if sch is not None else ""
                if summary.statistics is not None:
                    counts[ch.topic] = summary.statistics.channel_message_counts.get(ch.id, 0)
        inputs: dict[str, tuple[SensorInput, str]] = {}
        topic_to_sensor: dict[str, str] = {}
        for s in config.sensors:
            topic = _topic_match(s.topic, topics) if summary is not None else s.topic
            tally = SensorTally(s.name, s.kind, topic or s.topic)
            result.sensors[s.name] = tally
            if topic is None:
                result.warnings.append(f"{s.name}: topic '{s.topic}' is not in {path.name} (topics: "
                                       f"{', '.join(sorted(topics)) or 'none'})")
                continue
            want = TYPE_OF_KIND[s.kind]
            have = topics.get(topic, want)
            if have.replace("/msg/", "/") != want.replace("/msg/", "/"):
                raise FuseError(f"{s.name}: topic '{topic}' carries {have}, but a {s.kind} sensor reads {want}")
            if topic in topic_to_sensor:
                result.warnings.append(f"{s.name}: topic '{topic}' is also read by {topic_to_sensor[topic]}")
            topic_to_sensor.setdefault(topic, s.name)
            inputs[s.name] = (SensorInput(s), topic)
        readers_of: dict[str, list[str]] = {}
        for name, (_inp, topic) in inputs.items():
            readers_of.setdefault(topic, []).append(name)
        total = sum(counts.get(t, 0) for t in readers_of) if counts else None

        ekf = Ekf(config.ekf_config())
        for s in config.sensors:
            ekf.register_sensor(s.name, s.timeout)
        period = 1.0 / config.frequency
        writer = _Outputs(out_csv, mcap_out, config)
        try:
            batch = []
            batch_cycle = None
            offset = math.inf
            last_stamp: dict[str, float] = {}
            last_row_t = None

            def run_cycle(cycle: int):
                nonlocal last_row_t
                batch.sort(key=lambda m: m.time)
                for m in batch:
                    outcome = ekf.process(m)
                    tally = result.sensors[m.sensor]
                    if outcome == USED:
                        tally.used += 1
                    elif outcome == REJECTED:
                        tally.rejected += 1
                    elif outcome == TOO_LATE:
                        tally.too_late += 1
                    elif outcome == LATE_FUSED:
                        tally.late_fused += 1
                    elif outcome != NOTHING:
                        pass
                batch.clear()
                if not ekf.initialized:
                    return
                now = (cycle + 1) * period - offset       # end of this cycle on the stamp clock
                dead = False
                if now - ekf.time > config.sensor_timeout:
                    # nothing for longer than sensor_timeout: predict forward as robot_localization does
                    ekf.predict_to(now)
                    dead = ekf.dead_reckoning(now)
                if last_row_t is None or ekf.time > last_row_t:
                    writer.row(ekf.time, ekf.state, ekf.covariance)
                    result.rows += 1
                    result.dead_reckoning_rows += dead
                    last_row_t = ekf.time

            n = 0
            for _schema, channel, message, decoded in reader.iter_decoded_messages(
                    topics=list(readers_of), log_time_order=True):
                n += 1
                if progress is not None and n % 2000 == 0:
                    progress(n, total)
                log_t = message.log_time * 1e-9
                cycle = math.floor(log_t / period)
                if batch_cycle is not None and cycle != batch_cycle:
                    run_cycle(batch_cycle)
                    # empty cycles in between: dead reckoning rows once sensor_timeout has passed
                    gap = cycle - batch_cycle - 1
                    if ekf.initialized and gap > 0:
                        for k in range(batch_cycle + 1, cycle):
                            run_cycle(k)
                batch_cycle = cycle
                for name in readers_of[channel.topic]:
                    inp, _ = inputs[name]
                    tally = result.sensors[name]
                    tally.messages += 1
                    try:
                        t = _stamp(decoded.header)
                        if not math.isfinite(t):
                            raise ValueError("header stamp is not finite")
                        if name in last_stamp and t < last_stamp[name]:
                            # robot_localization ignores a message stamped before its topic's previous one
                            tally.out_of_order += 1
                            continue
                        last_stamp[name] = t
                        if result.start is None or t < result.start:
                            result.start = t
                        offset = min(offset, log_t - t)
                        batch.extend(measurements_of(inp, inp.cfg.kind, decoded, t))
                    except (ValueError, AttributeError, TypeError) as e:
                        tally.invalid += 1
                        if not tally.first_problem:
                            tally.first_problem = f"{type(e).__name__}: {e}"
            if batch_cycle is not None:
                run_cycle(batch_cycle)
            result.messages = n
            if progress is not None:
                progress(n, total)
        finally:
            writer.close()
    except McapError as e:
        raise FuseError(f"{path}: cannot read the recording: {type(e).__name__}: {e}") from None
    finally:
        f.close()
    if ekf.initialized:
        result.end = ekf.time
        result.final_state = ekf.state
        result.final_covariance = ekf.covariance
        result.time_to_limit = ekf.time_until_uncertain(uncertainty_limit)
    else:
        result.warnings.append("no usable measurement: the filter never started (check topics and *_config)")
    for s in result.sensors.values():
        if s.invalid:
            result.warnings.append(f"{s.name}: {s.invalid} invalid messages skipped (first: {s.first_problem})")
        if s.too_late:
            result.warnings.append(f"{s.name}: {s.too_late} measurements older than history_length "
                                   f"({config.history_length} s) were dropped")
    return result


class _Outputs:
    def __init__(self, out_csv, mcap_out, config: FilterConfig):
        self._csv_file = self._mcap_file = self._mcap = None
        self.frame, self.child = config.world_frame, config.base_link_frame
        try:
            self._csv_file = open(out_csv, "w", newline="")
        except OSError as e:
            raise FuseError(f"{out_csv}: cannot write: {e.strerror}") from None
        self._csv = csv.writer(self._csv_file)
        self._csv.writerow(CSV_COLUMNS)
        if mcap_out is not None:
            from mcap_ros2.writer import Writer

            try:
                self._mcap_file = open(mcap_out, "wb")
            except OSError as e:
                self.close()
                raise FuseError(f"{mcap_out}: cannot write: {e.strerror}") from None
            self._mcap = Writer(self._mcap_file)
            self._schema = self._mcap.register_msgdef(rosmsg_defs.ODOMETRY,
                                                      rosmsg_defs.DEFINITIONS[rosmsg_defs.ODOMETRY])

    def row(self, t, state, P):
        var = np.diag(P)
        self._csv.writerow([repr(float(t))] + ["%.9g" % v for v in state[:12]] + ["%.9g" % v for v in var[:12]])
        if self._mcap is not None:
            ns = int(round(t * 1e9))
            self._mcap.write_message(OUTPUT_TOPIC, self._schema, _odometry_dict(t, state, P, self.frame, self.child),
                                     log_time=ns, publish_time=ns)

    def close(self):
        if self._mcap is not None:
            self._mcap.finish()
            self._mcap = None
        for fh in (self._csv_file, self._mcap_file):
            if fh is not None:
                fh.close()
        self._csv_file = self._mcap_file = None


def progress_bar(stream) -> Callable[[int, int | None], None]:
    """A one-line progress display for a terminal (carriage return, no scrolling)."""
    width = 30

    def show(n, total):
        if total:
            frac = min(1.0, n / total)
            bar = "#" * int(frac * width)
            stream.write(f"\rfuse [{bar:<{width}}] {frac * 100:5.1f}% {n}/{total} messages")
        else:
            stream.write(f"\rfuse {n} messages")
        if total and n >= total:
            stream.write("\n")
        stream.flush()

    return show


__all__ = ["CSV_COLUMNS", "FuseError", "FuseSummary", "OUTPUT_TOPIC", "SensorTally", "fuse", "measurements_of",
           "progress_bar"]
