# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The config lint: what robot_localization users lose days to, found before (or while) fusing.

`lint(cfg, scan)` checks a FilterConfig (viperdrive.estimation.load_config), and with a RecordingScan of a recording
also what only the data can tell. Each Finding names the key and the fix; none changes what is fused. Rules
(docs/estimation.md, "check-config"):

- vy: a differential-drive (nonholonomic) base's wheel odometry fuses vx but not vy, so vy is unobserved and
  random-walks; the position drifts sideways between absolute fixes.
- absolute-twice: one pose variable fused absolutely from two sources (each drifts its own way; the estimate jumps
  between them).
- twist-differential: a sensor differentiates its pose into a velocity it also fuses from its twist (the same
  motion counted twice), or differential set on a twist (does nothing).
- two-d: two_d_mode with z, roll, pitch (or their rates) selected: held at zero, never used.
- no-gate: an absolute pose source with its rejection threshold left infinite: one bad fix is fused in full.
- process-noise: a velocity's process noise below what the recorded accelerations need: in one message interval
  the velocity changes by a dt, the process noise lets it move sqrt(q dt) (1 sigma); below half of it (q < a^2 dt / 4)
  the estimate lags the manoeuvre and a gate rejects real data (the spin case of docs/examples/ekf.yaml). The
  acceleration a is the largest least-squares slope of the recorded velocity over 50 ms windows.
- frames: a topic that is not in the recording, or a frame id the recording's messages do not use and no static
  transform connects.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ekf import STATE_NAMES, STATE_SIZE, VX, VY

UNITS = {6: "m/s", 7: "m/s", 8: "m/s", 9: "rad/s", 10: "rad/s", 11: "rad/s"}      # a^2 below: per second
THREE_D = (2, 3, 4, 8, 9, 10, 14)           # z roll pitch vz vroll vpitch az: held at zero in two_d_mode


@dataclass
class Finding:
    rule: str
    key: str
    text: str
    fix: str

    def __str__(self) -> str:
        return f"{self.key}: {self.text}; fix: {self.fix}"


# ------------------------------------------------------------------------------------------ the recording

@dataclass
class SensorFacts:
    name: str
    kind: str
    topic: str
    stamps: list = field(default_factory=list)
    frames: dict = field(default_factory=dict)          # (frame_id, child_frame_id) -> count
    velocity: dict = field(default_factory=dict)        # state index 6..11 -> [values], aligned with vstamps
    vstamps: list = field(default_factory=list)

    def interval(self) -> float | None:
        if len(self.stamps) < 3:
            return None
        d = np.diff(np.asarray(self.stamps))
        d = d[d > 0]
        return float(np.median(d)) if d.size else None

    def max_abs(self, j: int) -> float:
        v = self.velocity.get(j)
        return float(np.max(np.abs(v))) if v else 0.0

    def max_acceleration(self, j: int, window: float = 0.05) -> float | None:
        """The largest rate of change of velocity j: least-squares slopes over windows of `window` seconds (at
        least 5 messages), so a single noisy reading does not count as a manoeuvre."""
        v = self.velocity.get(j)
        dt = self.interval()
        if not v or dt is None or len(v) < 5:
            return None
        t = np.asarray(self.vstamps, dtype=float)
        t = t - t[0]
        y = np.asarray(v, dtype=float)
        n = max(5, int(round(window / dt)))
        if len(y) < n:
            return None
        c = np.concatenate([[0.0], np.cumsum(t)])
        cy = np.concatenate([[0.0], np.cumsum(y)])
        ctt = np.concatenate([[0.0], np.cumsum(t * t)])
        cty = np.concatenate([[0.0], np.cumsum(t * y)])
        st, sy = c[n:] - c[:-n], cy[n:] - cy[:-n]
        stt, sty = ctt[n:] - ctt[:-n], cty[n:] - cty[:-n]
        den = n * stt - st * st
        ok = den > 1e-18
        slope = (n * sty[ok] - st[ok] * sy[ok]) / den[ok]
        return float(np.max(np.abs(slope))) if slope.size else None


class RecordingScan:
    """What the lint needs from a recording, collected message by message: `fuse(..., observer=scan)` feeds it
    while fusing; scan_recording() reads a file for `viperdrive check-config --recording`."""

    def __init__(self, cfg, topics: list[str] | None = None, name: str = ""):
        self.name = name
        self.sensors = {s.name: SensorFacts(s.name, s.kind, s.topic) for s in cfg.sensors}
        self.topics = topics              # every topic of the recording (None: unknown)
        self.frames = None                # transforms.StaticFrames

    def message(self, name: str, kind: str, msg, stamp: float) -> None:
        f = self.sensors.get(name)
        if f is None:
            return
        f.stamps.append(stamp)
        header = getattr(msg, "header", None)
        key = (getattr(header, "frame_id", "") or "", getattr(msg, "child_frame_id", "") or "")
        if len(f.frames) < 20 or key in f.frames:
            f.frames[key] = f.frames.get(key, 0) + 1
        if kind in ("odom", "twist"):
            tw = msg.twist.twist
            values = (tw.linear.x, tw.linear.y, tw.linear.z, tw.angular.x, tw.angular.y, tw.angular.z)
        elif kind == "imu":
            if list(msg.angular_velocity_covariance)[:1] == [-1.0]:
                return
            w = msg.angular_velocity
            values = (None, None, None, w.x, w.y, w.z)
        else:
            return
        if not all(v is None or math.isfinite(v) for v in values):
            return
        f.vstamps.append(stamp)
        for j, v in zip(range(6, 12), values, strict=True):
            if v is not None:
                f.velocity.setdefault(j, []).append(float(v))

    def static(self, frames) -> None:
        self.frames = frames


def scan_recording(path, cfg) -> RecordingScan:
    """Read the sensor topics (and /tf_static) of an MCAP recording into a RecordingScan."""
    from pathlib import Path

    from mcap_ros2.decoder import DecoderFactory

    from ..errors import FuseError
    from ..recording.mcap import open_reader
    from ..transforms import StaticFrames
    from .replay import TF_STATIC
    from .schedule import norm_topic

    f, reader, summary, damaged = open_reader(Path(path))
    try:
        topics = None
        if summary is not None:
            topics = sorted({norm_topic(ch.topic) for ch in summary.channels.values()})
        scan = RecordingScan(cfg, topics, name=str(path))
        by_topic: dict[str, list] = {}
        for s in cfg.sensors:
            by_topic.setdefault(norm_topic(s.topic), []).append(s)
        frames = StaticFrames()
        decoders = DecoderFactory()
        decoder_of: dict[int, Callable[[bytes], Any] | None] = {}
        last: dict[str, float] = {}
        wanted = [c for t in list(by_topic) + [TF_STATIC] for c in (t, t.lstrip("/"))]
        try:
            for schema, channel, message in reader.iter_messages(topics=wanted, log_time_order=not damaged):
                topic = norm_topic(channel.topic)
                decode = decoder_of.get(channel.id)
                if decode is None:
                    decode = decoder_of[channel.id] = decoders.decoder_for(channel.message_encoding, schema)
                if decode is None:
                    continue
                try:
                    msg = decode(message.data)
                except Exception:          # noqa: BLE001 -- an undecodable message is fuse's business
                    continue
                if topic == TF_STATIC:
                    try:
                        frames.add_message(msg)
                    except (ValueError, AttributeError, TypeError):
                        pass
                    continue
                for s in by_topic.get(topic, []):
                    try:
                        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
                    except AttributeError:
                        continue
                    if t < last.get(s.name, -math.inf):
                        continue
                    last[s.name] = t
                    scan.message(s.name, s.kind, msg, t)
        except Exception as e:             # noqa: BLE001 -- a damaged tail: lint what was read
            if isinstance(e, FuseError):
                raise
        scan.static(frames)
        return scan
    finally:
        f.close()


# ------------------------------------------------------------------------------------------ the rules

def lint(cfg, scan: RecordingScan | None = None) -> list[Finding]:
    """Findings for a FilterConfig; with `scan`, also the rules that need the recording."""
    out: list[Finding] = []
    at = _at(cfg)
    _vy(cfg, scan, out, at)
    _absolute_twice(cfg, out, at)
    _twist_differential(cfg, out, at)
    _two_d(cfg, out, at)
    _no_gate(cfg, out, at)
    if scan is not None:
        _process_noise(cfg, scan, out, at)
        _frames(cfg, scan, out, at)
    return out


def _at(cfg):
    p = getattr(cfg, "params", None)

    def at(key: str, index: int | None = None) -> str:
        return p.at(key, index) if p is not None else ""
    return at


def _absolute_pose(s) -> list[int]:
    """The pose variables sensor s fuses as absolute values (not differentiated into velocities)."""
    if s.differential:
        return []
    idx = range(3, 6) if s.kind == "imu" else range(0, 6) if s.kind in ("odom", "pose") else ()
    return [i for i in idx if s.update_vector[i]]


def _fused_twist(s) -> list[int]:
    if s.kind == "pose":
        return []
    return [j for j in range(6, 12) if s.update_vector[j] and (s.kind != "imu" or j >= 9)]


def _vy(cfg, scan, out, at):
    q_vy = float(cfg.process_noise_covariance[VY, VY])
    fixes = [s for s in cfg.sensors if s.kind == "pose" and not s.differential and any(s.update_vector[0:2])]
    for s in cfg.sensors:
        if s.kind != "odom":
            continue
        vec = s.update_vector
        fuses_vx = vec[VX] or (s.differential and vec[0])
        fuses_vy = vec[VY] or (s.differential and vec[1]) or (not s.differential and vec[1] and vec[0])
        if not fuses_vx or fuses_vy:
            continue
        evidence = f" (if {s.topic} is the wheel odometry of a differential drive)"
        span = 10.0
        if scan is not None:
            f = scan.sensors.get(s.name)
            if f is None or not f.velocity.get(VY):
                evidence = f" (if {s.topic} is the wheel odometry of a differential drive; the recording has none)"
            else:
                vy, vx = f.max_abs(VY), f.max_abs(VX)
                if vy > max(0.01, 0.05 * vx):
                    continue            # the base moves sideways: holonomic, vy is not 0 by construction
                seen = f"is 0 in all {len(f.stamps)} messages" if vy == 0 else \
                    f"stays within {vy:.2g} m/s over {len(f.stamps)} messages"
                evidence = (f": {s.topic} is a nonholonomic base's odometry (in the recording its vy {seen} while "
                            f"|vx| reaches {vx:.2g} m/s)")
            gaps = [scan.sensors[p.name].interval() for p in fixes if p.name in scan.sensors]
            gaps = [g for g in gaps if g]
            if gaps:
                span = max(gaps)
        between = f"between the {span:g} s absolute fixes" if fixes and span != 10.0 else f"after {span:g} s"
        sd_v = math.sqrt(q_vy * span)
        sd_y = math.sqrt(q_vy * span ** 3 / 3.0)
        out.append(Finding(
            "vy", f"{s.name}_config[7]",
            f"{s.name} fuses vx but not vy{evidence}: vy is then unobserved and random-walks with "
            f"process_noise_covariance's vy ({q_vy:g} per s): {between} its 1-sigma is {sd_v:.2g} m/s and the "
            f"sideways position's {sd_y:.2g} m{at(s.name + '_config', 7)}",
            f"set {s.name}_config[7] (vy) to true: the wheels measure vy = 0 with the odometry's covariance"))


def _absolute_twice(cfg, out, at):
    for i in range(6):
        if cfg.two_d_mode and i in THREE_D:
            continue
        srcs = [s for s in cfg.sensors if i in _absolute_pose(s)]
        if len(srcs) < 2:
            continue
        first, *rest = srcs
        for s in rest:
            out.append(Finding(
                "absolute-twice", f"{s.name}_config[{i}]",
                f"{STATE_NAMES[i]} is fused as an absolute value from {first.name} ({first.topic}) and {s.name} "
                f"({s.topic}){at(s.name + '_config', i)}: each drifts its own way and the estimate jumps between "
                f"them",
                f"keep one absolute source of {STATE_NAMES[i]}: set {s.name}_differential: true (its changes are "
                f"still used), or {s.name}_config[{i}]: false"))


def _twist_differential(cfg, out, at):
    for s in cfg.sensors:
        vec = s.update_vector
        if s.kind == "twist" and s.differential:
            out.append(Finding(
                "twist-differential", f"{s.name}_differential",
                f"true on a twist sensor{at(s.name + '_differential')}: a twist has no pose to differentiate, the "
                f"setting does nothing", f"remove {s.name}_differential"))
        if s.kind == "odom" and s.differential:
            both = [i for i in range(6) if vec[i] and vec[i + 6] and not (cfg.two_d_mode and i in THREE_D)]
            if both:
                names = ", ".join(f"{STATE_NAMES[i]} -> {STATE_NAMES[i + 6]}" for i in both)
                out.append(Finding(
                    "twist-differential", f"{s.name}_differential",
                    f"{s.name} differentiates its pose ({names}) and also fuses the same velocities from its "
                    f"twist{at(s.name + '_differential')}: one motion counted twice, the filter overconfident",
                    f"fuse each velocity once: unselect the pose entries {', '.join(str(i) for i in both)} of "
                    f"{s.name}_config (the twist is the direct measurement)"))


def _two_d(cfg, out, at):
    if not cfg.two_d_mode:
        return
    for s in cfg.sensors:
        held = [i for i in THREE_D if s.update_vector[i]]
        if held:
            names = ", ".join(f"[{i}] {STATE_NAMES[i]}" for i in held)
            out.append(Finding(
                "two-d", f"{s.name}_config",
                f"two_d_mode holds z, roll, pitch and their rates at 0, so {names} of {s.name} are never "
                f"used{at(s.name + '_config', held[0])}",
                "set those entries to false, or two_d_mode: false if the robot really tilts"))


def _no_gate(cfg, out, at):
    for s in cfg.sensors:
        absolute = _absolute_pose(s)
        if not absolute or math.isfinite(s.pose_threshold):
            continue
        key = f"{s.name}_rejection_threshold" if s.kind == "pose" else f"{s.name}_pose_rejection_threshold"
        names = " ".join(STATE_NAMES[i] for i in absolute)
        example = {"imu": "a magnetic disturbance in the heading", "odom": "an odometry reset or a slip",
                   "pose": "a multipath fix, a relocalization jump"}[s.kind]
        out.append(Finding(
            "no-gate", key,
            f"left infinite (unset) while {s.name} fuses absolute {names}: one bad reading ({example}) is fused in "
            f"full and jumps the estimate",
            f"set {key}, e.g. 5 (a Mahalanobis gate; fuse's summary counts what it rejects)"))


def _process_noise(cfg, scan, out, at):
    Q = cfg.process_noise_covariance
    for j in range(6, 12):
        if cfg.two_d_mode and j in THREE_D:
            continue
        worst = None
        for s in cfg.sensors:
            if j not in _fused_twist(s) or s.name not in scan.sensors:
                continue
            f = scan.sensors[s.name]
            a, dt = f.max_acceleration(j), f.interval()
            if a is None or dt is None:
                continue
            need = a * a * dt
            if worst is None or need > worst[0]:
                worst = (need, a, dt, s)
        if worst is None:
            continue
        need, a, dt, s = worst
        q = float(Q[j, j])
        if q >= need / 4:
            continue        # the process noise covers at least half the change per interval (1 sigma)
        unit = UNITS[j]
        entry = j * STATE_SIZE + j
        gate = s.twist_threshold
        gated = (f"; with {s.name}'s twist gate at {gate:g} real data is rejected" if math.isfinite(gate) else
                 "; the estimate lags the manoeuvre")
        out.append(Finding(
            "process-noise", f"process_noise_covariance[{entry}] ({STATE_NAMES[j]})",
            f"{q:g} per s, but the recording's {STATE_NAMES[j]} ({s.name}, {s.topic}) changes at up to {a:.3g} "
            f"{unit}^2: {a * dt:.3g} {unit} between its messages {dt * 1e3:.3g} ms apart, while the process noise lets "
            f"it move {math.sqrt(q * dt):.2g} {unit} (1 sigma){gated}{at('process_noise_covariance', None)}",
            f"raise it to at least a^2 dt = {need:.3g}"))


def _frames(cfg, scan, out, at):
    topics = scan.topics
    from ..transforms import frame_name
    from .schedule import norm_topic

    for s in cfg.sensors:
        topic = norm_topic(s.topic)
        if topics is not None and topic not in topics:
            out.append(Finding("frames", s.name, f"topic '{s.topic}' is not in the recording{at(s.name)}",
                               f"set {s.name} to one of: {', '.join(topics) or '(no topics)'}"))
            continue
        f = scan.sensors.get(s.name)
        if f is None or not f.frames:
            continue
        (frame, child), _ = max(f.frames.items(), key=lambda kv: kv[1])
        frame, child = frame_name(frame), frame_name(child)
        checks = []
        if _absolute_pose(s) and s.kind in ("odom", "pose"):
            checks.append(("world_frame", cfg.world_frame, frame, "header.frame_id"))
        body = child if s.kind == "odom" else frame
        if s.kind != "pose" and (_fused_twist(s) or (s.kind == "imu" and any(s.update_vector[3:6]))):
            checks.append(("base_link_frame", cfg.base_link_frame, body,
                           "child_frame_id" if s.kind == "odom" else "header.frame_id"))
        for key, want, have, field_name in checks:
            if not have or frame_name(want) == have:
                continue
            if scan.frames is not None and scan.frames.lookup(want, have) is not None:
                continue
            if key == "base_link_frame" and s.kind == "imu":
                fix = (f"record the static transform {frame_name(want)} -> {have} (/tf_static), or set "
                       f"{key}: {have} if that is the robot's body frame")
            else:
                fix = f"set {key}: {have}, or record the static transform {frame_name(want)} -> {have} (/tf_static)"
            out.append(Finding(
                "frames", key,
                f"'{want}'{at(key)} but {topic}'s {field_name} is '{have}' ({s.name}) and no static transform in "
                f"the recording connects them: fuse uses the data as if it were in '{want}'", fix))


__all__ = ["Finding", "RecordingScan", "SensorFacts", "lint", "scan_recording"]
