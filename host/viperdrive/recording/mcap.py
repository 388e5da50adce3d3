# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Recording a run as MCAP with ROS 2 message types (Foxglove and PlotJuggler open it; `ros2 bag` reads it with the
mcap storage plugin), reading it back, and plotting it to PNG.

Topics written by McapRecorder (ros2msg schemas, all from viperdrive.messages.definitions.DEFINITIONS):

    /odom                    nav_msgs/msg/Odometry                 host odometry with covariance
    /tf                      tf2_msgs/msg/TFMessage                odom -> base_link
    /joint_states            sensor_msgs/msg/JointState            wheel position (rad) and velocity (rad/s)
    /cmd_vel                 geometry_msgs/msg/TwistStamped        what the host commanded
    /diagnostics             diagnostic_msgs/msg/DiagnosticArray   board status, faults, loop and link counters
    /viperdrive/telemetry    viperdrive_msgs/msg/WheelTelemetry    raw control-step records (setpoint,
                                                                   measurement, output, integrator per wheel)
    /imu/data_raw            sensor_msgs/msg/Imu                   every SENSORS_DATA record with a working IMU
    /battery_state           sensor_msgs/msg/BatteryState          every SENSORS_DATA record, when the board
                                                                   has a battery input
    /tf_static               tf2_msgs/msg/TFMessage                base_link -> imu_link, once, before the
                                                                   first Imu: the board config's imu.axes turn
                                                                   the part's axes into the robot's, so the
                                                                   rotation is the identity (the mounting
                                                                   position is not known here: zero)
(the Imu and BatteryState fields are viperdrive.messages.sensors': the same numbers `viperdrive ros2` publishes)

Stamps are wall-clock (UNIX epoch) nanoseconds, mapped from the host's monotonic clock once at the start; board
records (telemetry, sensors) are stamped with the board's own sample time (mapped to the host clock by the link).

A recording survives its process being killed: the open chunk is closed and handed to the kernel every
FLUSH_PERIOD_S (1 s), so a SIGKILL (or a crash) loses at most the last second; the file then has no summary or
footer. `read_mcap_partial` reads such a file up to its last complete chunk and says what was cut; `log plot`
uses it. `viperdrive fuse` and the config lint open a recording with `open_reader`, which streams a damaged one
from the start, and write their outputs with `OutputFile`, which replaces its target only when complete.
"""
from __future__ import annotations

import math
import os
import struct
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from ..errors import EXIT_BAD_VALUE, BadValue, FuseError, UserError
from ..messages import definitions as rosmsg_defs
from ..messages import sensors as sensormsgs
from ..timebase import HOST_CLOCK, Clock

JOINT_STATE = rosmsg_defs.JOINT_STATE
DIAGNOSTIC_ARRAY = rosmsg_defs.DIAGNOSTIC_ARRAY
WHEEL_TELEMETRY = rosmsg_defs.WHEEL_TELEMETRY
TF_MESSAGE = rosmsg_defs.TF_MESSAGE

TOPICS = {
    "/odom": rosmsg_defs.ODOMETRY,
    "/tf": TF_MESSAGE,
    "/joint_states": JOINT_STATE,
    "/cmd_vel": rosmsg_defs.TWIST_STAMPED,
    "/diagnostics": DIAGNOSTIC_ARRAY,
    "/viperdrive/telemetry": WHEEL_TELEMETRY,
    "/tf_static": TF_MESSAGE,
    "/imu/data_raw": rosmsg_defs.IMU,
    "/battery_state": rosmsg_defs.BATTERY_STATE,
    "/viperdrive/moves": DIAGNOSTIC_ARRAY,
}

JOINT_NAMES = ("left_wheel_joint", "right_wheel_joint")
Q15 = 32768.0
FLUSH_PERIOD_S = 1.0    # close the open chunk and write it out this often: what a SIGKILL can cost at most


def _stamp(ns: int) -> dict:
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


def _quaternion(theta: float) -> dict:
    return {"x": 0.0, "y": 0.0, "z": math.sin(theta / 2), "w": math.cos(theta / 2)}


def _cov(m) -> list[float]:
    if m is None:
        return [0.0] * 36
    return [float(v) for v in (m.ravel() if hasattr(m, "ravel") else m)]


class LogClock:
    """A time source (viperdrive.timebase.Clock: the host's for a real board, a board's own for a virtual board or an
    emulated chip) as MCAP log time: integer ns on the wall-clock epoch of its start. The log time of a recording
    (McapRecorder.clock) and the arrival time of every input of the live filter (viperdrive.estimation.live), so a
    live run and `fuse` on its recording see the same times; on a board's time, the odometry the filter is fed,
    stamped in board time, and the periods it fuses them in agree when the machine stalls the board.

    use_sim_time: no wall-clock epoch: ns(t) is the clock's time itself (ROS sim time, as a simulator's /clock starts
    at 0), so every process that reads the board's clock agrees on the time of an instant (`viperdrive ros2
    --sim-time`). wall0_ns, t0: the epoch (tests, a clock sharing another's)."""

    def __init__(self, clock: Clock = HOST_CLOCK, use_sim_time: bool = False, wall0_ns: int | None = None,
                 t0: float | None = None):
        self.source = clock         # the time source: the host's clock or a board's own
        if use_sim_time:
            wall0_ns, t0 = 0, 0.0
        self.wall0 = time.time_ns() if wall0_ns is None else int(wall0_ns)
        self.mono0 = clock.now() if t0 is None else float(t0)

    def ns(self, t: float | None = None) -> int:
        """The log time of `t` (s on this clock; None: now)."""
        t = self.source.now() if t is None else t
        return self.wall0 + int(round((t - self.mono0) * 1e9))

    def seconds(self) -> float:
        """Now, in the seconds this clock counts (the host's monotonic; a board's time for a board's clock)."""
        return self.source.now()

    def sample_ns(self, mono: float, board_us: int | None = None) -> int:
        """The log time of a board sample: its host time (mono); a clock on a board's own time uses the board's
        stamp (board_us) where it can."""
        return self.ns(mono)


SAMPLE_AGE_MAX_S = 5.0      # HostTimesOnBoard.sample_ns: a board stamp older than this is not trusted


class HostTimesOnBoard(LogClock):
    """A recorder's clock for a board that is a program (a virtual board, an emulated chip): the host's monotonic
    times its callers hand it (a state's sample time, a command's) mapped onto the board's time, on the epoch of
    `log` (the LogClock on the board's time that the live filter of the same run uses). A rate or a span read off the
    recording is then the board's, whatever speed it ran at (VIPERDRIVE_SIM_SPEED) and however busy the machine
    was. A host time a few ms old maps through the board's measured speed (BoardTimeFile.speed)."""

    def __init__(self, log: LogClock):
        self.log = log
        super().__init__(log.source, wall0_ns=log.wall0, t0=log.mono0)

    def ns(self, mono: float | None = None) -> int:
        t = self.source.now()
        if mono is not None:
            t -= (time.monotonic() - mono) * getattr(self.source, "speed", 1.0)
        return self.log.ns(t)

    def seconds(self) -> float:
        return self.source.now()

    def sample_ns(self, mono: float, board_us: int | None = None) -> int:
        """A board sample stamped with the board's own time: its ticks_us (u32) is the board's clock (the virtual
        board's ticks are its board time), so it is unwrapped against the board's time now and logged as is. Going
        through a host time instead mixes two speeds (the clock sync's fit, made earlier, and the board's speed now):
        on a loaded machine 40 ms between two samples came out as 27. A stamp more than SAMPLE_AGE_MAX_S old or in
        the future (another timeline: an emulated chip reset under its clock file) falls back to the host time."""
        if board_us is None:
            return self.ns(mono)
        now_us = int(self.source.now() * 1e6)
        age_us = (now_us - board_us) % (1 << 32)
        if age_us > SAMPLE_AGE_MAX_S * 1e6:
            return self.ns(mono)
        return self.log.ns((now_us - age_us) * 1e-6)


class SetClock(LogClock):
    """A log clock that reads what it is set to (`t`, s): the live filter replayed on a known schedule (tests,
    benchmarks: `replay`)."""

    def __init__(self, t: float = 0.0):
        super().__init__(HOST_CLOCK, wall0_ns=0, t0=0.0)
        self.t = t

    def ns(self, mono=None) -> int:
        return int(round(self.t * 1e9))


class McapRecorder:
    """Write a run as MCAP. Every method takes the host monotonic time of the data (time.monotonic())."""

    def __init__(self, path, odom_frame: str = "odom", base_frame: str = "base_link",
                 joint_names: tuple[str, str] = JOINT_NAMES, imu_frame: str = "imu_link", imu_part: str = "mpu6050",
                 flush_period_s: float | None = FLUSH_PERIOD_S):
        """flush_period_s: end the open chunk this often (wall clock), so a kill loses at most that much; None:
        only when flush() is called (a recording whose chunks must not depend on how fast it was written)."""
        from mcap_ros2.writer import Writer
        self.path = Path(path)
        if self.path.suffix.lower() != ".mcap":
            raise BadValue(f"{self.path}: the output file must end in .mcap")
        try:
            self._file = open(self.path, "wb")
        except OSError as e:
            raise UserError(f"cannot write {self.path}: {e.strerror or e}") from None
        self._writer = Writer(self._file)
        self._schemas = {t: self._writer.register_msgdef(t, rosmsg_defs.DEFINITIONS[t]) for t in set(TOPICS.values())}
        self.odom_frame = odom_frame
        self.base_frame = base_frame
        self.joint_names = list(joint_names)
        self.imu_frame = imu_frame
        self.imu_noise = sensormsgs.IMU_NOISE[imu_part]
        self.clock: LogClock = LogClock()   # monotonic host time -> MCAP log time (ns), for every message
        #                                   (use_clock: a board's time for a board that is a program)
        self.counts: dict[str, int] = defaultdict(int)
        self._closed = False
        self._overruns: int | None = None
        self._flush_period = flush_period_s
        self._next_flush = math.inf if flush_period_s is None else self.clock.seconds() + flush_period_s
        self.flushes = 0
        self._lock = threading.RLock()

    @classmethod
    def for_robot(cls, path, config) -> McapRecorder:
        """A recorder with the robot file's frame ids and IMU part (config: RobotConfig)."""
        r = config.ros2
        return cls(path, r.odom_frame_id, r.base_frame_id, imu_frame=r.imu_frame_id, imu_part=r.imu_part)

    def ns(self, mono: float) -> int:
        return self.clock.ns(mono)

    def use_clock(self, clock: LogClock) -> None:
        """Log on `clock` from now on (before the first message: HostTimesOnBoard for a virtual board)."""
        self.clock = clock
        if self._flush_period is not None:
            self._next_flush = clock.seconds() + self._flush_period

    def _write(self, topic: str, msg: dict, mono: float) -> None:
        self.message(topic, TOPICS[topic], msg, self.ns(mono))

    def message(self, topic: str, ros_type: str, msg, log_ns: int) -> None:
        """Any ROS 2 message (a dict, or an object with the fields: a viperdrive.ros2.msgs struct) of ros_type at
        log time log_ns (the live filter's inputs, stamped with their arrival). Thread-safe."""
        with self._lock:
            if self._closed:
                return
            schema = self._schemas.get(ros_type)
            if schema is None:
                schema = self._schemas[ros_type] = self._writer.register_msgdef(ros_type,
                                                                                rosmsg_defs.DEFINITIONS[ros_type])
            self._writer.write_message(topic, schema, msg, log_time=log_ns, publish_time=log_ns,
                                       sequence=self.counts[topic])
            self.counts[topic] += 1
            # once a second of the log clock's time (the board's, for a board that is a program)
            now = self.clock.seconds()
            if now >= self._next_flush:
                self.flush()
                self._next_flush = now + (self._flush_period or math.inf)

    def flush(self) -> None:
        """End the open chunk and hand everything written so far to the kernel: a killed process keeps it (the
        file is then readable up to here by read_mcap_partial). ~1 ms per second of a 100 Hz drive."""
        if self._closed:
            return
        self._writer._writer.flush()        # mcap.writer.Writer.flush (mcap >= 1.2); mcap_ros2 does not wrap it
        self.flushes += 1

    def _header(self, mono: float, frame: str) -> dict:
        return {"stamp": _stamp(self.ns(mono)), "frame_id": frame}

    def odometry(self, mono: float, pose, twist, pose_covariance=None, twist_covariance=None,
                 odom: bool = True) -> None:
        """/odom and /tf (odom False: /tf only, when the live filter records /odom as its input)."""
        x, y, th = pose
        v, w = twist
        if odom:
            self._odom(mono, pose, twist, pose_covariance, twist_covariance)
        self._write("/tf", {"transforms": [{
            "header": self._header(mono, self.odom_frame), "child_frame_id": self.base_frame,
            "transform": {"translation": {"x": x, "y": y, "z": 0.0}, "rotation": _quaternion(th)}}]}, mono)

    def _odom(self, mono, pose, twist, pose_covariance, twist_covariance) -> None:
        x, y, th = pose
        v, w = twist
        self._write("/odom", {
            "header": self._header(mono, self.odom_frame), "child_frame_id": self.base_frame,
            "pose": {"pose": {"position": {"x": x, "y": y, "z": 0.0}, "orientation": _quaternion(th)},
                     "covariance": _cov(pose_covariance)},
            "twist": {"twist": {"linear": {"x": v, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": w}},
                      "covariance": _cov(twist_covariance)}}, mono)

    def joint_states(self, mono: float, position, velocity) -> None:
        self._write("/joint_states", {"header": self._header(mono, ""), "name": self.joint_names,
                                      "position": [float(p) for p in position],
                                      "velocity": [float(v) for v in velocity], "effort": []}, mono)

    def command(self, mono: float, v: float, w: float) -> None:
        self._write("/cmd_vel", {"header": self._header(mono, self.base_frame),
                                 "twist": {"linear": {"x": v, "y": 0.0, "z": 0.0},
                                           "angular": {"x": 0.0, "y": 0.0, "z": w}}}, mono)

    def telemetry(self, rec: dict, counts_per_rev: int) -> None:
        """One Board.telemetry_frames() record (counts/s and Q15 on the wire) in SI units."""
        k = 2 * math.pi / counts_per_rev
        mono = rec["t"] if rec.get("t") is not None else rec["handled"]
        self._write("/viperdrive/telemetry", {
            "header": self._header(mono, ""), "seq": rec["seq"], "board_time_us": rec["t_us"],
            "setpoint_left": rec["setpoint_l"] * k, "measured_left": rec["measured_l"] * k,
            "output_left": rec["output_l"] / Q15, "integrator_left": rec["integrator_l"] / Q15,
            "setpoint_right": rec["setpoint_r"] * k, "measured_right": rec["measured_r"] * k,
            "output_right": rec["output_r"] / Q15, "integrator_right": rec["integrator_r"] / Q15,
            "status": rec["status"]}, mono)

    def sensors(self, r, cutoff_latched: bool = False) -> None:
        """One SensorReading: /imu/data_raw while its IMU works, /battery_state when the board has a battery input;
        stamped with the board's sample time (the host's receive time if the clock is not synced)."""
        mono = r.host_time
        stamp = _stamp(self.clock.sample_ns(mono, r.board_us))
        if r.imu_ok:
            if not self.counts["/imu/data_raw"] and self.imu_frame != self.base_frame:
                self._write("/tf_static", {"transforms": [{
                    "header": self._header(mono, self.base_frame), "child_frame_id": self.imu_frame,
                    "transform": {"translation": {"x": 0.0, "y": 0.0, "z": 0.0}, "rotation": _quaternion(0.0)}}]},
                    mono)
            self._write("/imu/data_raw", sensormsgs.imu_msg(r, stamp, self.imu_frame, self.imu_noise), mono)
        if r.battery_v is not None:
            self._write("/battery_state", sensormsgs.battery_msg(r, stamp, self.base_frame, cutoff_latched), mono)

    def diagnostics(self, mono: float, diag: dict, status: int | None = None, hardware_id: str = "",
                    sensors: list | None = None) -> None:
        """Board.diag() as one DiagnosticStatus: ERROR on a fault, WARN on deadman/overruns, else OK; sensors:
        sensormsgs.sensor_statuses (e-stop, battery, IMU) as a status each."""
        from viperdrive.shared import protocol as P
        level, message = 0, "ok"
        overruns = diag.get("overruns", 0)
        new_overruns = overruns - self._overruns if self._overruns is not None else 0
        self._overruns = overruns
        if diag.get("fault_code"):
            level, message = 2, f"FAULT: {diag.get('fault')}"
        elif status is not None and status & P.ST_DEADMAN:
            level, message = 1, "deadman: no velocity command"
        elif new_overruns > 0:
            # the counter is since boot: only overruns during this recording are news
            level, message = 1, f"{new_overruns} new control overruns"
        values = [{"key": k, "value": str(v)} for k, v in diag.items() if not isinstance(v, (dict, list))]
        if status is not None:
            values.append({"key": "status", "value": " ".join(P.status_names(status)) or "disabled"})
        statuses = [{"level": level, "name": "viperdrive: motor board", "message": message,
                     "hardware_id": hardware_id, "values": values}]
        for name, lvl, text, kv in sensors or ():
            statuses.append({"level": lvl, "name": f"viperdrive: {name}", "message": text,
                             "hardware_id": hardware_id, "values": [{"key": k, "value": v} for k, v in kv]})
        self._write("/diagnostics", {"header": self._header(mono, ""), "status": statuses}, mono)

    def move(self, mono: float, m, state: str) -> None:
        """A board move (board.moves.Move) reached `state` ("waiting for a slot", "on the board", or its end
        reason): one DiagnosticStatus on /viperdrive/moves named by its id; WARN for a timeout, a cancel or the
        lease, ERROR for a stall or a fault."""
        from viperdrive.shared import protocol as P
        level = 0
        if m.end in (P.MOVE_END_STALLED, P.MOVE_END_FAULTED):
            level = 2
        elif m.end is not None and m.end != P.MOVE_END_ARRIVED:
            level = 1
        values = [("id", m.id), ("kind", P.MOVE_KIND_NAMES.get(m.kind, m.kind)), *m.quantities(), ("state", state)]
        self._write("/viperdrive/moves", {"header": self._header(mono, ""), "status": [{
            "level": level, "name": f"viperdrive: move {m.id}", "message": f"{m.describe()}: {state}",
            "hardware_id": "", "values": [{"key": k, "value": str(v)} for k, v in values]}]}, mono)

    def close(self) -> dict:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._writer.finish()
                self._file.close()
            return dict(self.counts)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------------------------------ files written whole

class OutputFile:
    """An output file written beside its target under a temporary name and renamed over it only by
    `close(keep=True)`: a run that fails or produces nothing leaves an existing file exactly as it was (and creates
    none). A target that exists but is not a regular file (/dev/null, a pipe) is written directly: there is nothing
    in it to protect, and renaming over a device would replace the device."""

    def __init__(self, path, mode: str, **kwargs):
        target = Path(path)
        self.target = target.resolve() if target.is_symlink() else target     # update the file the link points to
        self.existed = self.target.exists()
        self.tmp: Path | None = None
        try:
            if self.existed and not self.target.is_file():
                self.file = open(self.target, mode, **kwargs)
            else:
                fd, tmp = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".part",
                                           dir=self.target.parent)
                self.tmp = Path(tmp)
                self.file = os.fdopen(fd, mode, **kwargs)
        except OSError as e:
            raise FuseError(f"{path}: cannot write: {e.strerror}") from None

    def close(self, keep: bool) -> None:
        if self.file.closed:
            return
        self.file.close()
        if self.tmp is None:
            return
        if not keep:
            self.tmp.unlink(missing_ok=True)
            return
        # mkstemp makes the file 0600; give it the mode the replaced file had, or a new file's usual one
        mode = self.target.stat().st_mode & 0o7777 if self.existed else 0o666 & ~_umask()
        os.chmod(self.tmp, mode)
        os.replace(self.tmp, self.target)


def _umask() -> int:
    mask = os.umask(0)      # the only portable way to read it is to set it; put it straight back
    os.umask(mask)
    return mask


# ------------------------------------------------------------------------------------------ reading

class McapDamage(Exception):
    """The MCAP reader stopped on damaged or missing bytes (its own, zstd's, lz4's or struct's exception inside)."""


def guarded(records):
    """Iterate an mcap reader's records; any exception the reader raises on damaged bytes (McapError, ZstdError,
    OverflowError, struct.error, ...: there is no common base) becomes McapDamage, while exceptions of the code
    that consumes the records stay what they are."""
    it = iter(records)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except Exception as e:  # noqa: BLE001 -- the reader's failures on damaged bytes have no common type
            raise McapDamage(f"{type(e).__name__}: {e}") from e
        yield item


def read_mcap(path) -> dict[str, list[tuple[float, object]]]:
    """{topic: [(seconds since the first message, decoded ROS 2 message), ...]} of a complete viperdrive MCAP file;
    BadValue for a damaged or cut one (read_mcap_partial takes what it holds)."""
    data, damage = read_mcap_partial(path)
    if damage is not None:
        raise BadValue(f"{path} is not a complete MCAP file: {damage}")
    return data


def read_mcap_partial(path) -> tuple[dict[str, list[tuple[float, object]]], str | None]:
    """Like read_mcap, also for a file cut short (a killed recording: no summary, no footer) or damaged: every
    message before the damage, and what was cut as text (None: the file is complete). BadValue when nothing at
    all can be read."""
    from mcap.reader import NonSeekingReader, make_reader
    from mcap_ros2.decoder import DecoderFactory
    p = Path(path)
    if not p.is_file():
        raise BadValue(f"{p} does not exist" if not p.exists() else f"{p} is not a file")
    size = p.stat().st_size
    out: dict[str, list] = defaultdict(list)
    first: list[float] = []

    def take(decoded) -> None:
        for _schema, channel, message, ros_msg in guarded(decoded):
            t = message.log_time * 1e-9
            if not first:
                first.append(t)
            out[channel.topic].append((t - first[0], ros_msg))

    try:
        f = open(p, "rb")
    except OSError as e:
        raise BadValue(f"{p} cannot be read: {e.strerror or e}") from None
    with f:
        if f.read(len(MCAP_MAGIC)) != MCAP_MAGIC:
            raise BadValue(f"{p} is not a readable MCAP file (no MCAP magic at the start"
                           + (": the file is empty, a recording killed before its first second?)" if size == 0
                              else ")"))
        f.seek(0)
        try:
            summary = make_reader(f).get_summary()
        except Exception:  # noqa: BLE001 -- no summary/footer: the reader raises its own types
            summary = None
        if summary is not None and summary.chunk_indexes:
            # the index says where every chunk is: read each one that reads back whole, skip (and name) the others
            indexed = IndexedReader(f, summary)
            decoders: dict = {}
            factory = DecoderFactory()

            def decoded():
                for schema, channel, message in indexed.iter_messages():
                    dec = decoders.get(channel.id)
                    if dec is None:
                        dec = factory.decoder_for(channel.message_encoding, schema)
                        if dec is None:
                            raise BadValue(f"{p}: no decoder for {channel.topic}'s "
                                           f"{channel.message_encoding} messages")
                        decoders[channel.id] = dec
                    yield schema, channel, message, dec(message.data)
            take(decoded())
            if not indexed.skipped:
                return dict(out), None
            n = sum(len(msgs) for msgs in out.values())
            if n == 0:
                raise BadValue(f"{p} is not a readable MCAP file: it holds no readable message ({size} bytes: "
                               f"{indexed.skipped_text()})")
            return dict(out), f"{indexed.skipped_text()}. Read {n} messages from the others"
        first_problem = "no summary or footer (the recording was killed, or is still being written)"
        # stream it from the start, in file order, up to the first damaged or missing byte
        out.clear()
        first.clear()
        f.seek(0)
        try:
            # file order: log_time_order would read the whole stream before yielding, and lose it at the damage
            take(NonSeekingReader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(
                log_time_order=False))
            stop = "every chunk in it is readable"
        except McapDamage as e:
            cause = e.__cause__
            if type(cause).__name__ == "EndOfFile":
                stop = f"it ends inside a record at byte {size}"
            else:
                stop = f"the data stops being readable near byte {min(f.tell(), size)} ({e})"
        n = sum(len(msgs) for msgs in out.values())      # take() stopped inside: count what it kept
        if n == 0:
            raise BadValue(f"{p} is not a readable MCAP file: it holds no readable message ({size} bytes: "
                           f"{first_problem}; {stop})")
        span = max((msgs[-1][0] for msgs in out.values()), default=0.0)
        return dict(out), (f"{first_problem}; {stop}. Read {n} messages covering {span:.1f} s; what came after "
                           f"the last complete chunk is lost (a viperdrive recording writes a chunk every "
                           f"{FLUSH_PERIOD_S:g} s)")


class IndexedReader:
    """The messages of an MCAP file with a readable summary, chunk by chunk through its index: a chunk that does
    not read back whole (bad compressed bytes, a CRC that does not match) is skipped and named in `skipped`, and
    every other chunk is read. The mcap library's reader stops at the first damaged chunk and loses the rest
    (one flipped byte in the first of 13 chunks lost a whole recording). iter_messages(topics, log_time_order) as
    the mcap library's readers have it."""

    def __init__(self, f, summary):
        self.f = f
        self.summary = summary
        self.skipped: list[str] = []
        self._read: list | None = None

    def _messages(self) -> list:
        if self._read is not None:
            return self._read
        import io

        from mcap.exceptions import EndOfFile
        from mcap.records import Channel, Chunk, Message, Schema
        from mcap.stream_reader import StreamReader
        schemas = dict(self.summary.schemas)
        channels = dict(self.summary.channels)
        out = []
        indexes = sorted(self.summary.chunk_indexes, key=lambda c: c.chunk_start_offset)
        for i, ci in enumerate(indexes):
            kept = []
            try:
                self.f.seek(ci.chunk_start_offset)
                raw = self.f.read(ci.chunk_length)
                whole = False
                try:
                    # the chunk record alone: the reader decompresses it, checks its CRC and yields what it holds,
                    # then finds the end of these bytes (no footer follows: EndOfFile is the normal end here)
                    for rec in StreamReader(io.BytesIO(raw), skip_magic=True, validate_crcs=True,
                                            emit_chunks=False).records:
                        if isinstance(rec, Schema):
                            schemas.setdefault(rec.id, rec)
                        elif isinstance(rec, Channel):
                            channels.setdefault(rec.id, rec)
                        elif isinstance(rec, Message):
                            kept.append(rec)
                        elif isinstance(rec, Chunk):
                            whole = True
                except EndOfFile:
                    whole = whole or bool(kept)
                if not whole:
                    raise ValueError("no complete chunk at the index's offset")
            except Exception as e:  # noqa: BLE001 -- the library's failures on damaged bytes have no common type
                self.skipped.append(f"chunk {i + 1} of {len(indexes)} (bytes {ci.chunk_start_offset}.."
                                    f"{ci.chunk_start_offset + ci.chunk_length}, "
                                    f"{(ci.message_end_time - ci.message_start_time) / 1e9:.1f} s of messages from "
                                    f"{ci.message_start_time / 1e9:.3f}): {type(e).__name__}: {e}")
                continue
            out.extend(kept)
        self._read = [(schemas.get(channels[m.channel_id].schema_id), channels[m.channel_id], m) for m in out
                      if m.channel_id in channels]
        return self._read

    def iter_messages(self, topics=None, log_time_order: bool = True):
        msgs = self._messages()
        if log_time_order:
            msgs = sorted(msgs, key=lambda r: r[2].log_time)
        for schema, channel, message in msgs:
            if topics is None or channel.topic in topics:
                yield schema, channel, message

    def skipped_text(self) -> str:
        """The chunks left out, in words ("" when none)."""
        if not self.skipped:
            return ""
        return f"{len(self.skipped)} damaged chunk(s) skipped, the rest read: " + "; ".join(self.skipped)


def open_reader(path: Path):
    """(file, reader, summary or None, damaged text or ""). With a readable summary the reader is an IndexedReader
    (a damaged chunk is skipped, the others read: reader.skipped says which); a file with the MCAP magic but no
    readable summary (a recording cut short) is streamed from the start so every message before the damage is
    used."""
    from mcap.exceptions import McapError
    from mcap.reader import NonSeekingReader, make_reader

    if not path.exists():
        raise FuseError(f"{path}: no such file", exit_code=EXIT_BAD_VALUE)
    if path.is_dir():
        raise FuseError(f"{path}: is a directory (give the .mcap file inside a ros2 bag folder)",
                        exit_code=EXIT_BAD_VALUE)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise FuseError(f"{path}: cannot open: {e.strerror}", exit_code=EXIT_BAD_VALUE) from None
    magic = f.read(len(MCAP_MAGIC))
    f.seek(0)
    if magic != MCAP_MAGIC:
        f.close()
        raise FuseError(f"{path}: not a readable MCAP file (no MCAP magic at the start)", exit_code=EXIT_BAD_VALUE)
    try:
        reader = make_reader(f)
        summary = reader.get_summary()
        if summary is not None and summary.chunk_indexes:
            return f, IndexedReader(f, summary), summary, ""
        return f, reader, summary, ""
    except (McapError, ValueError, EOFError, OSError, struct.error) as e:
        f.seek(0)
        return f, NonSeekingReader(f), None, f"{type(e).__name__}: {e}"


MCAP_MAGIC = b"\x89MCAP0\r\n"


__all__ = ["LogClock", "SetClock", "OutputFile", "open_reader", "IndexedReader", "McapRecorder",
           "McapDamage", "read_mcap", "read_mcap_partial", "guarded", "FLUSH_PERIOD_S"]
