# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The robot-base node: the board in a ROS 2 graph, over DDS, without a ROS installation (docs/ros2.md).

In:   cmd_vel  geometry_msgs/TwistStamped or geometry_msgs/Twist (stamped = "auto" | "true" | "false")
Out:  odom          nav_msgs/Odometry (pose + twist with the odometry's propagated covariances)
      joint_states  sensor_msgs/JointState (wheel positions rad, velocities rad/s)
      /tf           tf2_msgs/TFMessage (odom -> base_link), when enable_odom_tf
      /diagnostics  diagnostic_msgs/DiagnosticArray (link counters, latency, board faults, loop jitter, cmd_vel,
                    e-stop, battery, IMU)
      imu/data_raw  sensor_msgs/Imu, every SENSORS_DATA record while the IMU works (ros2.sensor_rate, 50 Hz)
      battery_state sensor_msgs/BatteryState, every SENSORS_DATA record when the board has a battery input

One thread runs the board loop at the robot file's update_rate on absolute deadlines (viperdrive.motion.loop: an overrun
is counted and the missed deadlines skipped, never made up by a burst): take the new cmd_vel samples into the
DriveController, read the board, integrate odometry, write the wheel command, publish at publish_rate.
Everything that can lose the robot (Ctrl-C, SIGTERM, lost link, an exception) ends in shutdown(): zero command,
board disabled, one last diagnostics message; when the board could not be confirmed disabled, that message and
the log say so (level ERROR) instead of claiming it.

A board that goes away (the port vanishes, the line goes silent past the miss budget) or restarts or
de-energizes behind the open port (a power-on, a watchdog reset, a latched fault; Board raises LinkLost or
BoardDeenergized) puts the bridge in "board down": nothing is commanded, odom/tf keep the last pose (REP-105:
odom -> base_link never jumps; restarted encoder counts are never integrated) with zero twist, and the
diagnostics are ERROR naming the cause. With recover="auto" (`viperdrive ros2`'s default) the bridge takes the
board back on its own when the policy allows it (viperdrive.board.recovery: a lost link, a restart; never a
latched safety fault, which waits for the ~/clear_fault service), and nothing moves until a command newer than
the recovery arrives. With recover="never" a lost link stops the bridge (exit 8) and a board that went down
stays down until the bridge is restarted.
"""
import logging
import math
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from cyclonedds.util import duration

from viperdrive.shared import protocol

from ..board.board import BoardDeenergized
from ..board.records import BoardState, fault_text
from ..board.recovery import FAULT, LINK, RESTART, Recovered, Recovery
from ..errors import BadValue, LinkError, LinkLost, PortError, UserError
from ..messages.sensors import IMU_NOISE, battery_msg, imu_msg, sensor_statuses
from ..motion.drive import DriveController
from ..motion.loop import DriveLoop, prepare_loop_thread
from ..motion.odometry import Odometry
from ..stats import percentile
from ..timebase import HOST_CLOCK, Clock
from . import cdr, msgs, qos
from .cmdvel import STAMPED_CHOICES, CmdVelInput, PublisherFilter, RateLimitedWarning
from .node import RANGE_OFF, RosNode, take_valid

if TYPE_CHECKING:
    from ..estimation.live import LiveFilter
    from ..estimation.process import FilterProcess

log = logging.getLogger("viperdrive.ros2")


SOURCE_SILENT_S = 3.0           # an EKF source with no publisher this long after the start is warned about
DIAGNOSTICS_PERIOD_S = 1.0      # diagnostic_updater's default rate
# GET_DIAG is a blocking round trip on the serial line (~3 ms on a board, ~10 ms on the virtual one): inside a
# 10 ms period it would cost an overrun every time. The board-side counters are therefore read at activation,
# when STATE shows FAULT or DEADMAN (to name the fault; at most this often), and at shutdown; the periodic
# diagnostics use the host-side link counters, which cost nothing on the wire.
BOARD_DIAG_MIN_INTERVAL_S = 5.0
FILTER_STOP_S = 12.0            # at shutdown, after the board: the filter's backlog, summary and end (process.py)
JITTER_WINDOW = 512             # ticks of wake-up lateness kept for the percentiles
NODE_NAME = "viperdrive"        # the ROS node name the graph shows (in the bridge's namespace)
CLEAR_FAULT_SERVICE = NODE_NAME + "/clear_fault"    # ~/clear_fault of that node: /NS/viperdrive/clear_fault
LEFT_JOINT = "left_wheel_joint"     # diff_drive_controller's usual names; robot_state_publisher uses them
RIGHT_JOINT = "right_wheel_joint"


def frame_with_prefix(prefix: str, frame: str) -> str:
    """diff_drive_controller's tf_frame_prefix: 'robot1' + 'odom' -> 'robot1/odom'; '' leaves the frame as is."""
    p = prefix.strip("/")
    return f"{p}/{frame}" if p else frame


def wait_for_acks(writer, ms: int) -> bool:
    """DataWriter.wait_for_acks -> False on a timeout. cyclonedds 11.0.1's own timeout branch reads
    `Exception.DDS_RETCODE_TIMEOUT` (pub.py) and so raises AttributeError instead of returning False: that
    AttributeError is the timeout."""
    try:
        return bool(writer.wait_for_acks(duration(milliseconds=ms)))
    except AttributeError:
        return False


class Ros2Bridge:
    """The node. `run()` until stop() (or a signal handler calling it), Ctrl-C or a lost link; `shutdown()` is
    always called on the way out.

    board: a viperdrive.board.Board (not yet configured); config: RobotConfig; namespace, stamped ("auto" |
    "true" | "false"; None: the robot file's ros2.use_stamped_vel), domain_id, discovery, env: as RosNode;
    drive: a DriveController (default: one from config); odometry_factory(config, counts_per_rev=...) ->
    odometry (default viperdrive.motion.odometry.Odometry).
    """

    def __init__(self, board, config, namespace: str = "/", stamped: str | None = None, domain_id=None,
                 discovery=None, env=None, drive=None, odometry_factory=None, allow_publishers=None,
                 ekf=None, record=None, uncertainty_limit: float = 1.0, recover: str = "never",
                 filter_process: bool = True, prepare_loop: bool = False, realtime: int | None = None,
                 use_sim_time: bool = False):
        self.board = board
        # the graph's time. Wall time (the host's clock) by default. use_sim_time: the board's own time (a virtual
        # board's or an emulated chip's, which a busy machine slows below real time) is the graph's: published on
        # /clock from 0 as a simulator does, every stamp in it, the loop and the live filter counting it, so the
        # rates in the messages (m/s, rad/s of board time) agree with the time between their stamps
        self.use_sim_time = use_sim_time
        board_clock = getattr(board, "clock", HOST_CLOCK)
        if use_sim_time and board_clock is HOST_CLOCK:
            raise BadValue(f"--sim-time: the board on {getattr(board, 'port', '?')} keeps real time (only a virtual "
                           f"board or an emulated chip has a time of its own); leave --sim-time off")
        self.clock: Clock = board_clock if use_sim_time else HOST_CLOCK
        self.w_clock: Any = None            # the /clock writer (use_sim_time)
        self.config = config
        ros = config.ros2                   # config.Ros2Settings: the robot file's ros2 section, its defaults
        self.params = ros
        if stamped is None:
            use = ros.use_stamped_vel
            stamped = "auto" if use is None else ("true" if use else "false")
        if stamped not in STAMPED_CHOICES:
            raise BadValue(f"--stamped must be one of {', '.join(STAMPED_CHOICES)}, not {stamped!r}")
        self.stamped = stamped
        self.period = 1.0 / config.update_rate
        self.publish_period = 1.0 / ros.publish_rate
        if self.publish_period < self.period:
            log.warning("publish_rate %.1f Hz is above update_rate %.1f Hz: publishing at most once per tick",
                        1.0 / self.publish_period, config.update_rate)
        self.odom_frame = frame_with_prefix(ros.tf_frame_prefix, ros.odom_frame_id)
        self.base_frame = frame_with_prefix(ros.tf_frame_prefix, ros.base_frame_id)
        self.imu_frame = frame_with_prefix(ros.tf_frame_prefix, ros.imu_frame_id)
        self.imu_noise = IMU_NOISE[ros.imu_part]
        self.sensor_hz = ros.sensor_rate        # SENSORS_DATA asked of the board (0: no sensor topics)
        self.sensor_rate = 0                    # what it granted
        self.sensor_records = 0
        self.latest_sensors = None              # the newest SensorReading
        self.battery_thresholds = (None, None)  # the board's battery_warn_v, battery_cutoff_v (read at start)
        self.enable_odom_tf = ros.enable_odom_tf
        self.pose_cov_override = ros.pose_covariance_diagonal
        self.twist_cov_override = ros.twist_covariance_diagonal
        self.drive = drive if drive is not None else DriveController(config)
        self._odometry_factory = odometry_factory if odometry_factory is not None else Odometry
        self.odometry: Odometry | None = None
        self.allow = PublisherFilter(allow_publishers) if allow_publishers else None
        self.node = RosNode(namespace, domain_id=domain_id, discovery=discovery, env=env)
        self.warn = RateLimitedWarning()
        self.cmd: CmdVelInput | None = None
        self._stop = threading.Event()
        self._next_publish = 0.0
        self._next_diag = 0.0
        self.drive_loop: DriveLoop | None = None
        self.board_diag: dict = {}          # the last GET_DIAG, decoded
        self.board_diag_at: float | None = None
        self._alarm_bits = 0                # FAULT|DEADMAN bits of STATE when GET_DIAG was last read
        self._shut = False
        self.stop_reason = "stopped"
        self.published = {"odom": 0, "joint_states": 0, "tf": 0, "diagnostics": 0, "imu": 0, "battery_state": 0}
        self.dropped_writes = 0
        self.last_state: BoardState | None = None
        self.last_wheels = (0.0, 0.0)
        self.commands_in = 0
        self.command_age: deque[float] = deque(maxlen=JITTER_WINDOW)   # stamped commands: header stamp -> taken (s)
        self._activated = False
        self.board_down: BoardDeenergized | None = None     # the board restarted/de-energized on its own
        self.recovery = Recovery(board, recover, log=log)    # what may be taken back, and when
        self._fresh_after: float | None = None  # after a recovery: only commands newer than this (host s) move it
        self.ignored_commands = 0           # cmd_vel samples taken while the board was down (not executed)
        self.clear_fault_calls = 0          # ~/clear_fault requests answered
        self.shutdown_problems: list[str] = []    # what failed on the way out (empty: board confirmed disabled)
        self.live_error: str | None = None
        self.ekf_config = ekf               # viperdrive.estimation.FilterConfig: the live filter (None: none)
        self.filter_process = filter_process    # the live filter in a process of its own (False: a thread here)
        # on the loop's thread before it runs: gc.freeze() and, with realtime, SCHED_FIFO (the CLI's; a library
        # caller that runs several bridges in one process leaves the process's garbage collector alone)
        self.prepare_loop = prepare_loop or realtime is not None
        self.realtime = realtime
        self.live: LiveFilter | FilterProcess | None = None
        self._live_thread: threading.Thread | None = None
        self._live_stop = threading.Event()
        self.recorder = None
        self.filter_tf = False              # the filter owns odom -> base_link (publish_tf)
        self._internal_odom: str | None = None          # the filter's topic for our own odometry, if it reads it
        self._external_readers: list = []   # (filter topic, DDS reader)
        self._started_at = self.clock.now()
        self.uncertainty_limit = uncertainty_limit
        try:
            if record is not None:
                from ..recording.mcap import McapRecorder
                self.recorder = McapRecorder(record, self.odom_frame, self.base_frame)
                if use_sim_time:
                    self.recorder.clock = self._log_clock()
            self._create_endpoints()
        except BaseException:
            self.node.close()
            if self.recorder is not None:
                self.recorder.close()
            raise

    # ---- setup ----
    def _create_endpoints(self) -> None:
        n = self.node
        self.w_odom = n.publisher("odom", msgs.Odometry, qos.default_qos())
        self.w_joints = n.publisher("joint_states", msgs.JointState, qos.default_qos())
        self.w_filtered: Any = None     # a DataWriter once --ekf made it
        if self.ekf_config is not None:
            self._create_filter()
        # one publisher of odom -> base_link: the filter's when it owns it (publish_tf), else the raw odometry's
        self.w_tf = n.publisher("/tf", msgs.TFMessage, qos.tf_qos()) if self.enable_odom_tf or self.filter_tf \
            else None
        self.w_diag = n.publisher("/diagnostics", msgs.DiagnosticArray, qos.default_qos())
        if self.use_sim_time:
            self.w_clock = n.publisher("/clock", msgs.Clock, qos.clock_qos())
            self.published["clock"] = 0
        self.w_imu = self.w_battery = None
        if self.sensor_hz:
            self.w_imu = n.publisher("imu/data_raw", msgs.Imu, qos.sensor_qos())
            self.w_battery = n.publisher("battery_state", msgs.BatteryState, qos.sensor_qos())
        # ~/clear_fault (std_srvs/Trigger): the one way the graph clears a latched fault, on a person's decision
        self.clear_fault_requests, self.clear_fault_replies = n.service(
            CLEAR_FAULT_SERVICE, msgs.TriggerRequest, msgs.TriggerResponse, qos.default_qos())
        self.cmd = CmdVelInput(n, "cmd_vel", self.stamped, warn=self.warn, on_reader=self.announce, allow=self.allow)
        self.announce()

    def _create_filter(self) -> None:
        """The live EKF (viperdrive.estimation.live): our own odometry fed in directly when the config reads the odom
        topic, every other topic it names read from DDS; odometry/filtered out, and the tf when publish_tf."""
        from ..estimation.live import LiveFilter
        from ..estimation.process import FilterProcess
        from ..estimation.schedule import norm_topic
        cfg = self.ekf_config
        n = self.node
        clock = self.recorder.clock if self.recorder is not None else self._log_clock()
        recorder = self._record_input if self.recorder is not None else None
        kind = FilterProcess if self.filter_process else LiveFilter
        self.live = kind(cfg, on_estimate=self._publish_estimate, recorder=recorder, clock=clock,
                         uncertainty_limit=self.uncertainty_limit, pollers=[self._poll_inputs])
        own_odom = n.topic_name("odom")
        types = {"odom": msgs.Odometry, "imu": msgs.Imu, "pose": msgs.PoseWithCovarianceStamped,
                 "twist": msgs.TwistWithCovarianceStamped}
        seen = set()
        for sc in cfg.sensors:
            topic = norm_topic(sc.topic)
            if topic in seen:
                continue
            seen.add(topic)
            if n.topic_name(sc.topic) == own_odom:
                if sc.kind != "odom":
                    raise BadValue(f"{sc.name}: '{sc.topic}' is this bridge's wheel odometry (nav_msgs/Odometry): "
                                   f"read it as an odom sensor, not {sc.kind}")
                self._internal_odom = topic
                log.info("ekf: %s reads the board's wheel odometry directly", sc.name)
                continue
            reader = n.subscription(sc.topic, types[sc.kind], qos.command_qos(depth=100))
            self._external_readers.append((topic, reader))
            log.info("ekf: %s reads %s (%s)", sc.name, n.topic_name(sc.topic), msgs.ros_type_name(types[sc.kind]))
        self.w_filtered = n.publisher("odometry/filtered", msgs.Odometry, qos.default_qos())
        self.published["odometry_filtered"] = 0
        if cfg.publish_tf:
            if cfg.world_frame != cfg.odom_frame:
                log.warning("ekf: world_frame %s is not odom_frame %s: the %s -> %s tf (which needs the odom "
                            "tf chain) is not published by this bridge; odometry/filtered is", cfg.world_frame,
                            cfg.odom_frame, cfg.map_frame, cfg.odom_frame)
            else:
                self.filter_tf = True
                log.info("ekf: publish_tf: the filter publishes %s -> %s (the raw odometry's tf is off)",
                         cfg.world_frame, cfg.base_link_frame)

    def _log_clock(self):
        """The live filter's and the recording's clock: the host's on the wall epoch, or the board's (use_sim_time)."""
        from ..recording.mcap import BoardLogClock, LogClock
        return BoardLogClock(self.clock, use_sim_time=True) if self.use_sim_time else LogClock()

    def _ros_minus_clock(self) -> float:
        """ROS time minus the loop's clock now: the wall minus the host's monotonic clock; 0 on sim time."""
        return 0.0 if self.use_sim_time else time.time() - time.monotonic()

    def _warn_unpublished_sources(self, now: float) -> None:
        """A source of the live filter that nobody publishes, SOURCE_SILENT_S after the bridge started: a WARNING
        (it was an INFO line about the subscription, while with publish_tf the raw odometry's tf was already off)."""
        if not self._external_readers or now - self._started_at < SOURCE_SILENT_S:
            return
        for topic, reader in self._external_readers:
            if not reader.get_matched_publications():
                tf = (" and the raw odometry's tf is off (publish_tf): odom -> base_link comes from the filter alone"
                      if self.filter_tf else "")
                self.warn("ekf_source_" + topic, f"ekf: nobody publishes {topic}, which the filter reads: it fuses "
                                                 f"the other sources only{tf}")

    def _poll_inputs(self) -> list:
        out = []
        for topic, reader in self._external_readers:
            out += [(topic, s) for s in take_valid(reader, 256)]
        return out

    def _record_input(self, topic, msg, ns) -> None:
        assert self.recorder is not None        # only given to the filter when recording
        self.recorder.message(topic, msgs.ros_type_name(type(msg)), msg, ns)

    def _publish_estimate(self, est) -> None:
        """One filter output: odometry/filtered (and the tf it owns); recorded with the inputs."""
        cfg = self.ekf_config
        odom = msgs.estimate(est.t, est.state, est.covariance, cfg.world_frame, cfg.base_link_frame)
        self._write(self.w_filtered, odom, "odometry_filtered")
        if self.recorder is not None and self.live is not None:
            self.recorder.message("/odometry/filtered", "nav_msgs/msg/Odometry", odom, self.live.clock.ns())
        if self.filter_tf and self.w_tf is not None:
            p = odom.pose.pose
            tf = msgs.TFMessage(transforms=[msgs.TransformStamped(
                header=odom.header, child_frame_id=cfg.base_link_frame,
                transform=msgs.Transform(translation=msgs.Vector3(p.position.x, p.position.y, p.position.z),
                                         rotation=p.orientation))])
            self._write(self.w_tf, tf, "tf")

    def announce(self) -> None:
        """Tell the ROS graph which node owns our endpoints (`ros2 node list` shows /NS/viperdrive)."""
        if self.cmd is None:
            return      # called again once the cmd_vel input exists
        writers = [w for w in (self.w_odom, self.w_joints, self.w_tf, self.w_diag, self.w_filtered, self.w_imu,
                               self.w_battery) if w is not None]
        readers = [self.cmd.reader] if self.cmd.reader is not None else []
        readers += [r for _, r in self._external_readers]
        readers.append(self.clear_fault_requests)
        writers.append(self.clear_fault_replies)
        try:
            self.node.announce(NODE_NAME, readers, writers)
        except Exception as e:      # graph bookkeeping only: the topics work without it
            log.warning("ros_discovery_info not published: %s", e)

    def start(self) -> None:
        """Open and enable the board: configure (port, HELLO), activate (zeroed encoders and command). With
        recover="auto" a board that is not there yet (no port, no answer) is waited for: the node starts, says
        so in its diagnostics, and takes the board when it appears; another firmware on the port is an error."""
        waiting: UserError | None = None
        try:
            self.board.configure()
        except (PortError, LinkError) as e:
            if self.recovery.policy == "never":
                raise
            waiting = e
        if waiting is None and self.board.info is not None and (text := self.board.info.version_warning()):
            log.warning("%s", text)
        self._started_at = self.clock.now()
        self._make_odometry()
        self.drive.reset()
        if waiting is None:
            self.start_sensors()
            self.board.activate()
        self._activated = True
        # after activate: the loop takes the board's encoder epoch as its baseline (a later restart of the
        # encoders, e.g. a reconnect, resets the controller and the odometry baseline)
        # the graph's clock (cmd_vel stamps and their timeout, the publish grid): the host's, and a virtual board
        # follows its host through the clock file's grant; on sim time the board's
        self.drive_loop = DriveLoop(self.board, self.drive, self.odometry, self.config.update_rate, clock=self.clock)
        if waiting is not None:
            self.recovery.lost(LINK, f"no board at the start: {waiting}")
        else:
            self.refresh_board_diag()
        if self.live is not None:
            self._live_thread = threading.Thread(target=self._run_filter, name="viperdrive-ekf", daemon=True)
            self._live_thread.start()
        self._next_publish = self.clock.now()
        self._next_diag = self._next_publish + DIAGNOSTICS_PERIOD_S
        log.info("%s; node on domain %d, namespace %s, cmd_vel %s",
                 "board active" if waiting is None else "waiting for the board", self.node.domain_id,
                 self.node.namespace, self.stamped)
        self.log_exposure()

    def _make_odometry(self) -> None:
        """The odometry, once counts_per_rev is known: from the board's HELLO, else the robot file. A bridge that
        started before its board (recover="auto") and has neither makes it when the board first answers."""
        try:
            cpr = self.board.counts_per_rev
        except (AttributeError, UserError):     # not known before the board answered
            cpr = self.config.counts_per_rev
        if cpr is None:
            return
        self.odometry = self._odometry_factory(self.config, counts_per_rev=cpr)
        if self.drive_loop is not None:
            self.drive_loop.odometry = self.odometry

    def start_sensors(self) -> None:
        """SENSORS at ros2.sensor_rate and the battery thresholds; a board that refuses is logged, not fatal (the
        wheels work without the sensor topics, and the diagnostics say there are no records)."""
        if not self.sensor_hz:
            return
        try:
            self.sensor_rate = self.board.sensors(self.sensor_hz)
            self.battery_thresholds = (self.board.get_param("battery_warn_v"),
                                       self.board.get_param("battery_cutoff_v"))
        except UserError as e:
            log.warning("board sensors not streamed (%s): no imu/data_raw or battery_state", e)
            return
        log.info("board sensors at %d Hz (asked %d): imu/data_raw in frame %s, battery_state", self.sensor_rate,
                 self.sensor_hz, self.imu_frame)

    def exposure(self) -> tuple[bool, str]:
        """(reachable by others, the sentence): who can reach this node and who may drive the robot."""
        node = self.node
        where = node.discovery.exposure(node.domain_id)
        local = node.discovery.loopback or node.discovery.humble_localhost_only or node.discovery.range == RANGE_OFF
        if self.allow is None:
            who = f"it obeys {node.topic_name('cmd_vel')} from ANY participant that can reach it"
            if not local:
                who += " (--allow-publisher limits that)"
        else:
            who = (f"{node.topic_name('cmd_vel')} is taken only from {self.allow.describe()} (declared by the "
                   f"publishers themselves, not authenticated)")
        return (not local and self.allow is None), f"{where}; {who}"

    def log_exposure(self) -> None:
        open_to_all, text = self.exposure()
        (log.warning if open_to_all else log.info)("%s", text)
        if self.node.security_warning:
            log.warning("%s", self.node.security_warning)

    def _run_filter(self) -> None:
        assert self.live is not None        # started only with --ekf
        try:
            self.live.run(self._live_stop)
        except Exception as e:      # the filter must never take the robot down: say it, keep driving on odometry
            log.error("ekf: the live filter stopped: %s: %s (odometry/filtered is no longer published)",
                      type(e).__name__, e)
            self.live_error = f"{type(e).__name__}: {e}"

    def stop(self, reason: str = "stop requested") -> None:
        """Ask run() to return after the current tick (safe from a signal handler)."""
        self.stop_reason = reason
        self._stop.set()

    # ---- the loop ----
    def run(self, duration_s: float | None = None) -> None:
        """The fixed-rate loop (viperdrive.motion.loop: absolute deadlines, overruns counted and skipped, never caught
        up in a burst) until stop(), Ctrl-C, duration_s or a lost link; then shutdown()."""
        try:
            if not self._activated:
                self.start()
            assert self.drive_loop is not None      # made by start()
            if self.prepare_loop:
                applied, text = prepare_loop_thread(self.realtime)
                if text is not None:
                    (log.info if applied else log.warning)("%s", text)
            self.drive_loop.loop.run(self._step, duration_s=duration_s, stop=self._stop)
            if not self._stop.is_set():
                self.stop_reason = f"ran for {duration_s} s"
        except KeyboardInterrupt:
            self.stop_reason = "interrupted (Ctrl-C)"
        except UserError as e:
            self.stop_reason = f"error: {e}"
            self.shutdown()
            raise
        except Exception as e:
            self.stop_reason = f"internal error: {type(e).__name__}: {e}"
            self.shutdown()
            raise
        self.shutdown()

    def refresh_board_diag(self) -> None:
        """GET_DIAG now (one serial round trip); a failure is reported in the diagnostics, never raised."""
        try:
            self.board_diag = self.board.diag()
        except Exception as e:      # a diagnostics request must not stop the robot; say why it is missing
            self.board_diag = {"diag_error": f"{type(e).__name__}: {e}"}
        self.board_diag_at = self.clock.now()

    def _step(self, now: float, k: int):
        self.serve_clear_fault()
        self.tick(now)
        if self.w_clock is not None:
            self._write(self.w_clock, msgs.Clock(clock=msgs.time_from_s(now)), "clock")
        self.publish_sensors()
        after = self.clock.now()
        alarm = getattr(self.last_state, "status", 0) & (protocol.ST_FAULT | protocol.ST_DEADMAN)
        if self.recovery.outage is None and (
                alarm != self._alarm_bits or (alarm and (self.board_diag_at is None
                                                         or after - self.board_diag_at >= BOARD_DIAG_MIN_INTERVAL_S))):
            # FAULT/DEADMAN appeared or went away: read the board's account of it now (the fault's name), then
            # while it lasts at most every BOARD_DIAG_MIN_INTERVAL_S
            self._alarm_bits = alarm
            self.refresh_board_diag()
            if alarm & protocol.ST_FAULT:
                self._warn_fault(str(self.board_diag.get("fault", "?")))
        outage = self.recovery.outage
        if outage is not None and outage.kind == FAULT and outage.fault_code:
            self._warn_fault(fault_text(outage.fault_code))     # a reminder every WARN_INTERVAL_S while it lasts
        if after >= self._next_publish:
            self.publish_state()
            # the publish grid keeps its phase; after a stall it restarts from now instead of bursting
            self._next_publish += self.publish_period
            if self._next_publish < after:
                self._next_publish = after + self.publish_period
        if after >= self._next_diag:
            self._warn_unpublished_sources(after)
            self.publish_diagnostics()
            self._next_diag += DIAGNOSTICS_PERIOD_S
            if self._next_diag < after:
                self._next_diag = after + DIAGNOSTICS_PERIOD_S
        return not self._stop.is_set()

    def _warn_fault(self, name: str) -> None:
        self.warn("fault", f"board FAULT latched: {name}; outputs are off until it is cleared (the "
                           f"{self.node.topic_name(CLEAR_FAULT_SERVICE)} service, once the cause is fixed)")

    def tick(self, now: float) -> None:
        """One loop period: the new cmd_vel samples into the controller, then read -> odometry -> update ->
        write (DriveLoop.cycle, which also resets controller and odometry baseline when the board restarts)."""
        assert self.cmd is not None and self.drive_loop is not None     # made by start()
        cmds = self.cmd.poll(self._ros_minus_clock())
        taken = self.clock.now()
        self.commands_in += len(cmds)
        if self.recovery.outage is not None:
            # outputs off on the board's side and inactive on ours: take the samples off DDS, execute none
            self.ignored_commands += len(cmds)
            rec = self.recovery.poll()
            if rec is not None:
                self._recovered(rec)
            return
        fresh_start = self._fresh_after
        if fresh_start is not None:
            # after a recovery: a stamped command must be newer than it (an unstamped one was taken after it)
            stale = [c for c in cmds if c[2] is not None and c[2] <= fresh_start]
            self.ignored_commands += len(stale)
            cmds = [c for c in cmds if not (c[2] is not None and c[2] <= fresh_start)]
        for v, w, stamp in cmds:
            self.drive.command(v, w, stamp=stamp, now=taken)
            if stamp is not None:
                self.command_age.append(taken - stamp)
        if fresh_start is not None and cmds:
            self._fresh_after = None
            self.recovery.commanding()
        try:
            self.last_state = self.drive_loop.cycle(now)    # raises (LinkLost) only on persistent loss
        except BoardDeenergized as e:
            self._went_down(e)
            return
        except LinkLost as e:
            if self.recovery.policy == "never":
                raise
            self._link_lost(e)
            return
        self.last_wheels = self.drive.kinematics.to_wheels(self.drive.v, self.drive.w)

    def serve_clear_fault(self) -> None:
        """Answer each ~/clear_fault request (std_srvs/Trigger): CLEAR_FAULT on the board, then success only when
        nothing is latched any more. An e-stop whose circuit is still open stays latched (success false, and the
        message says so); a board that does not answer is a failure with the reason. After a clear the bridge
        takes the board back on its next tick (recovery), and it moves again only on a command newer than that."""
        for rq in take_valid(self.clear_fault_requests, 8):
            ok, text = self._clear_fault()
            self.clear_fault_calls += 1
            (log.warning if ok else log.error)("~/clear_fault: %s", text)
            reply = msgs.TriggerResponse(client_guid=rq.client_guid, sequence_number=rq.sequence_number,
                                         success=ok, message=text)
            try:
                self.clear_fault_replies.write(reply)
            except Exception as e:      # a client that left: nothing to answer
                log.warning("~/clear_fault: reply not sent (%s: %s)", type(e).__name__, e)

    def _clear_fault(self) -> tuple[bool, str]:
        outage = self.recovery.outage
        if outage is not None and outage.kind == LINK:
            return False, f"the board is not reachable ({outage.reason}): nothing cleared"
        try:
            cleared = self.board.clear_fault()
            code = self.board.diag().get("fault_code", 0) or 0
        except UserError as e:
            return False, f"the board did not clear: {e}"
        if code:
            return False, (f"still latched: {fault_text(code)}" + (
                " (the e-stop circuit is open: close it first)" if code == protocol.FAULT_ESTOP else ""))
        self.board_diag = {}
        self.recovery.cleared()
        if not cleared:
            return True, "no fault was latched"
        if self.recovery.policy == "never" and outage is not None:
            return True, f"cleared {fault_text(cleared)}; --recover never: restart the bridge to drive again"
        return True, f"cleared {fault_text(cleared)}; the board is taken back, and moves on a new command"

    def _went_down(self, e: BoardDeenergized) -> None:
        """The board restarted or turned its outputs off by itself: stop commanding, keep the node up (odometry
        holds the last pose, diagnostics say why), so the graph sees an ERROR instead of a vanished node."""
        self.board_down = e
        self.last_state = e.state          # for the status bits in diagnostics (never for odometry or joints)
        self.drive.reset()
        self.last_wheels = (0.0, 0.0)
        self.refresh_board_diag()
        code = self.board_diag.get("fault_code", 0) or 0
        latched = bool(e.state.status & protocol.ST_FAULT)
        self.recovery.lost(FAULT if latched and code else RESTART, str(e), code if latched else 0)
        self.publish_diagnostics()

    def _link_lost(self, e: LinkLost) -> None:
        """The port vanished or the board stopped answering: as a board that went down, with the link to reopen."""
        self.drive.reset()
        self.last_wheels = (0.0, 0.0)
        self.recovery.lost(LINK, str(e))
        self.publish_diagnostics()

    def _recovered(self, rec: Recovered) -> None:
        """The board answers, checked and active again: the pose continues (the loop rebases the odometry on the
        new epoch), the sensor stream is asked for again, and nothing moves until a command newer than now."""
        self.board_down = None
        self.last_state = None          # the STATE that showed the outage is not the board's any more
        self._alarm_bits = 0
        self.drive.reset()
        self.last_wheels = (0.0, 0.0)
        assert self.cmd is not None                     # made by start()
        self.ignored_commands += len(self.cmd.poll(self._ros_minus_clock()))   # queued before it
        self._fresh_after = self.clock.now()
        if self.odometry is None:
            self._make_odometry()
        if self.sensor_hz:
            self.start_sensors()
        self.refresh_board_diag()
        self.publish_diagnostics()

    # ---- publishing ----
    def _write(self, writer, sample, what: str) -> None:
        try:
            cdr.write(writer, sample)       # odom, tf, joints, imu, battery: struct-built CDR
            self.published[what] += 1
        except Exception as e:       # DDS timeout (a reader stuck with our reliable backlog): drop, count, go on
            self.dropped_writes += 1
            self.warn("write_" + what, f"{what}: sample dropped ({type(e).__name__}: {e})")

    def _stamp(self, t: float) -> msgs.Time:
        """The ROS time of an instant on the loop's clock (self.clock)."""
        return msgs.time_from_s(t + self._ros_minus_clock())

    def _on_clock(self, mono: float) -> float:
        """A host monotonic sample time on the loop's clock."""
        return self.board.on_clock(mono) if self.use_sim_time else mono

    def publish_sensors(self) -> None:
        """Every SENSORS_DATA record received since the last tick: imu/data_raw while the IMU works, battery_state
        when the board has a battery input; stamped with the board's sample time. Also while the board is down
        (its sensor task keeps streaming: the e-stop and the battery are what the graph needs to see then)."""
        if not self.sensor_rate:
            return
        readings = self.board.sensor_readings()
        if not readings:
            return
        cutoff = (self.board_diag.get("fault_code") == protocol.FAULT_BATTERY_LOW
                  and bool(getattr(self.last_state, "status", 0) & protocol.ST_FAULT))
        for r in readings:
            stamp = self._stamp(self._on_clock(r.host_time))
            s = {"sec": stamp.sec, "nanosec": stamp.nanosec}
            if r.imu_ok:
                self._write(self.w_imu, msgs.from_fields(msgs.Imu, imu_msg(r, s, self.imu_frame, self.imu_noise)),
                            "imu")
            if r.battery_v is not None:
                self._write(self.w_battery, msgs.from_fields(msgs.BatteryState,
                                                             battery_msg(r, s, self.base_frame, cutoff)),
                            "battery_state")
        self.sensor_records += len(readings)
        self.latest_sensors = readings[-1]

    def publish_state(self) -> None:
        # the last state the odometry integrated: after the board went down, the STATE that showed it carries
        # restarted counts and must not reach joint_states either
        state = self.drive_loop.state if self.drive_loop is not None else None
        if state is None or self.odometry is None:
            return
        x, y, th = self.odometry.pose
        if self.recovery.outage is not None:
            # standing where it was last seen (outputs off): the pose holds now, it does not move any more
            stamp = self._stamp(self.clock.now())
            v, w = 0.0, 0.0
            wheel_velocity = [0.0, 0.0]
        else:
            stamp = self._stamp(self._on_clock(state.sampled))
            v, w = self.odometry.twist
            wheel_velocity = [float(state.velocity[0]), float(state.velocity[1])]
        pose_cov = _covariance(self.odometry.pose_covariance, self.pose_cov_override)
        twist_cov = _covariance(self.odometry.twist_covariance, self.twist_cov_override)
        odom = msgs.odometry(stamp, self.odom_frame, self.base_frame, (x, y, th), (v, w), pose_cov, twist_cov)
        q = odom.pose.pose.orientation
        self._write(self.w_odom, odom, "odom")
        if self._internal_odom is not None and self.live is not None:
            self.live.feed(self._internal_odom, odom)
        joints = msgs.JointState(header=msgs.Header(stamp=stamp, frame_id=""), name=[LEFT_JOINT, RIGHT_JOINT],
                                 position=[float(state.position[0]), float(state.position[1])],
                                 velocity=wheel_velocity, effort=[])
        self._write(self.w_joints, joints, "joint_states")
        if self.w_tf is not None and not self.filter_tf:
            tf = msgs.TFMessage(transforms=[msgs.TransformStamped(
                header=msgs.Header(stamp=stamp, frame_id=self.odom_frame), child_frame_id=self.base_frame,
                transform=msgs.Transform(translation=msgs.Vector3(x, y, 0.0), rotation=q))])
            self._write(self.w_tf, tf, "tf")

    def diagnostics(self, final: str | None = None) -> msgs.DiagnosticArray:
        """The DiagnosticArray: link, board, loop timing, cmd_vel (and the shutdown reason when final)."""
        hw = str(getattr(self.board, "port", "") or "")
        statuses = []
        # /diagnostics is one topic for the whole graph: the namespace tells two robots' statuses apart
        who = "viperdrive" if self.node.namespace == "/" else f"viperdrive {self.node.namespace}"

        # link + board
        diag = self.board_diag
        state = self.last_state
        status_bits = getattr(state, "status", None)
        level = msgs.DIAG_OK
        message = "ok"
        if diag.get("diag_error"):
            level, message = msgs.DIAG_WARN, "board diagnostics unavailable"
        if status_bits is not None:
            names = protocol.status_names(status_bits)
            if status_bits & protocol.ST_FAULT:
                level, message = msgs.DIAG_ERROR, "FAULT latched: " + str(diag.get("fault", "see values"))
            elif status_bits & protocol.ST_DEADMAN:
                level, message = max(level, msgs.DIAG_WARN), "deadman: the board stopped the wheels"
            elif not status_bits & protocol.ST_ENABLED and self._activated and final is None:
                level, message = max(level, msgs.DIAG_WARN), "outputs disabled"
        else:
            names = []
        down = self.board_down
        outage = self.recovery.outage
        if outage is not None:
            level = msgs.DIAG_ERROR
            cause = f"board {down.cause}" if down is not None else "board down"
            if self.recovery.policy == "never":
                plan = "stop the bridge, fix the cause, restart"
            elif outage.kind == FAULT:
                plan = "waiting for ~/clear_fault (a latched fault is not cleared by the bridge on its own)"
            elif outage.recoverable:
                plan = f"recovering (attempt {outage.attempts + 1})"
            else:
                plan = "not recovered: " + outage.reason
            what = f"{cause}: outputs off, not commanding ({plan})"
            message = f"{message}; {what}" if message.startswith("FAULT latched") else what
        values = [msgs.KeyValue("status", " ".join(names) if names else "-")]
        if down is not None:
            values += [msgs.KeyValue("board_down", str(down)),
                       msgs.KeyValue("encoders_restarted", str(down.restarted))]
        if outage is not None:
            values.append(msgs.KeyValue("ignored_commands", str(self.ignored_commands)))
        values += [msgs.KeyValue("recovery." + k, _fmt(v)) for k, v in self.recovery.status().items()]
        values.append(msgs.KeyValue("recovery.clear_fault_calls", str(self.clear_fault_calls)))
        values += [msgs.KeyValue(k, _fmt(v)) for k, v in _flatten(diag)]
        if self.board_diag_at is not None:
            values.append(msgs.KeyValue("board_diag_age_s", _fmt(self.clock.now() - self.board_diag_at)))
        try:    # host-side counters: live every time, no serial traffic
            values += [msgs.KeyValue("host." + k, _fmt(v)) for k, v in _flatten(self.board.stats())]
        except Exception as e:
            values.append(msgs.KeyValue("host.stats_error", f"{type(e).__name__}: {e}"))
        if state is not None:
            values.append(msgs.KeyValue("fresh", str(bool(state.fresh))))
        statuses.append(msgs.DiagnosticStatus(level=level, name=f"{who}: board", message=message,
                                              hardware_id=hw, values=values))

        # e-stop, battery, IMU (the newest sensor record; STATE's e-stop bit when it is newer)
        if self.sensor_hz:
            latest = self.latest_sensors
            estop_now = None
            if state is not None and (latest is None or state.sampled > latest.sampled):
                estop_now = state.estop
            fault = diag.get("fault_code", 0) if status_bits is not None and status_bits & protocol.ST_FAULT else 0
            warn_v, cutoff_v = self.battery_thresholds
            for name, lvl, text, kv in sensor_statuses(latest, fault, warn_v, cutoff_v,
                                                        imu_errors=diag.get("imu_errors"), estop_now=estop_now):
                if name == "imu":
                    kv = kv + [("records", str(self.sensor_records)), ("rate_hz", str(self.sensor_rate)),
                               ("frame_id", self.imu_frame)]
                statuses.append(msgs.DiagnosticStatus(level=lvl, name=f"{who}: {name}", message=text,
                                                      hardware_id=hw, values=[msgs.KeyValue(k, v) for k, v in kv]))

        # loop timing (viperdrive.motion.loop.FixedRateLoop statistics: lateness = wake-up jitter, exec = tick body)
        t = self.drive_loop.loop.stats() if self.drive_loop is not None else {}
        overruns = t.get("overruns", 0)
        statuses.append(msgs.DiagnosticStatus(
            level=msgs.DIAG_WARN if overruns else msgs.DIAG_OK, name=f"{who}: bridge loop",
            message=f"{overruns} overruns" if overruns else "on time", hardware_id=hw,
            values=[msgs.KeyValue("update_rate_hz", _fmt(1.0 / self.period)),
                    msgs.KeyValue("publish_rate_hz", _fmt(1.0 / self.publish_period))]
            + [msgs.KeyValue(k, _fmt(v)) for k, v in t.items() if k != "rate_hz"]
            + [msgs.KeyValue("dropped_writes", str(self.dropped_writes))]
            + [msgs.KeyValue(f"published_{k}", str(v)) for k, v in self.published.items()]))

        # cmd_vel + drive controller
        c = self.cmd.status() if self.cmd is not None else {}
        d = self.drive.status()
        cmd_level = msgs.DIAG_OK
        cmd_msg = f"reading {c.get('type')}"
        if c.get("matched_publishers", 0) == 0:
            cmd_level, cmd_msg = msgs.DIAG_WARN, "no publisher matched"
        wrong = [t for t in c.get("offered_types", []) if t != c.get("type")]
        if wrong and c.get("type") != "(none yet)":
            cmd_level, cmd_msg = msgs.DIAG_WARN, f"publisher of {', '.join(wrong)} ignored (type mismatch)"
        if c.get("refused_samples"):
            cmd_level = msgs.DIAG_WARN
            cmd_msg = f"{c['refused_samples']} commands refused (not in --allow-publisher); {cmd_msg}"
        statuses.append(msgs.DiagnosticStatus(
            level=cmd_level, name=f"{who}: cmd_vel", message=cmd_msg, hardware_id=hw,
            values=[msgs.KeyValue(str(k), _fmt(v)) for k, v in c.items()]
            + [msgs.KeyValue(str(k), _fmt(v)) for k, v in d.items()]
            + [msgs.KeyValue("wheel_command_rad_s", _fmt(self.last_wheels)),
               msgs.KeyValue("commands_in", str(self.commands_in)),
               msgs.KeyValue("stamped_age_p50_ms", _fmt((percentile(sorted(self.command_age), 0.5) or 0.0) * 1e3)),
               msgs.KeyValue("stamped_age_max_ms", _fmt(max(self.command_age, default=0.0) * 1e3))]))

        if self.live is not None:
            statuses.append(self._filter_status(who, hw))

        if final is not None:
            problems = self.shutdown_problems
            failed = self.stop_reason.startswith(("error", "internal error"))
            level = msgs.DIAG_ERROR if problems or failed or outage is not None else msgs.DIAG_OK
            values = [msgs.KeyValue("board", board_final_state(problems))]
            values += [msgs.KeyValue(f"problem_{i}", p) for i, p in enumerate(problems, 1)]
            if down is not None:
                values.append(msgs.KeyValue("board_down", str(down)))
            statuses.append(msgs.DiagnosticStatus(level=level, name=f"{who}: bridge", message=f"shut down: {final}",
                                                  hardware_id=hw, values=values))
        return msgs.DiagnosticArray(header=msgs.Header(stamp=self._stamp(self.clock.now())), status=statuses)

    def _filter_status(self, who: str, hw: str) -> msgs.DiagnosticStatus:
        """The live filter's account: per source its state and why, dead reckoning and its horizon, the events."""
        values, level, message = filter_diagnostics(self.live)
        if self.live_error is not None:
            level, message = msgs.DIAG_ERROR, f"filter stopped: {self.live_error}"
        return msgs.DiagnosticStatus(level=level, name=f"{who}: ekf", message=message, hardware_id=hw,
                                     values=[msgs.KeyValue(k, v) for k, v in values])

    def publish_diagnostics(self, final: str | None = None) -> None:
        self._write(self.w_diag, self.diagnostics(final), "diagnostics")

    # ---- the way out ----
    def shutdown(self) -> None:
        """Zero command, board disabled, a last diagnostics message, participant closed. Idempotent; every step
        runs even when an earlier one fails (a dead link must not keep the DDS side from saying so)."""
        if self._shut:
            return
        self._shut = True
        self.drive.reset()
        problems = []
        self._live_stop.set()       # the filter winds down meanwhile; the board comes first
        if self._activated and not self.stop_reason.startswith("error"):
            self.refresh_board_diag()       # the board's own counters for the last message
        if self._activated:
            steps = [("deactivate", self.board.deactivate)]     # zero command + disable, confirmed by the board
            if getattr(self.board, "active", True):
                steps.insert(0, ("zero command", lambda: self.board.write(0.0, 0.0)))
            for what, call in steps:
                try:
                    call()
                except Exception as e:      # the board's own deadman stops the wheels if we cannot
                    problems.append(f"{what} failed: {e}")
            self._activated = False
        if self._live_thread is not None:
            # the estimates the filter still owes are published (and recorded) before the node closes
            self._live_thread.join(timeout=FILTER_STOP_S)
        if self.sensor_rate:
            try:    # the next client of the board starts without a stream it did not ask for
                self.board.sensors(0)
            except Exception as e:      # the outputs are what matters here; the stream is only traffic
                log.warning("sensor stream not stopped: %s", e)
            self.sensor_rate = 0
        try:
            self.board.cleanup()
        except Exception as e:
            problems.append(f"cleanup failed: {e}")
        self.shutdown_problems = problems
        reason = self.stop_reason + ("; " + "; ".join(problems) if problems else "")
        if self.stop_reason.startswith(("error", "internal error")):
            # the error itself is raised to the caller, which reports it (the CLI prints it once)
            log.info("shutting down after an error; board %s", board_final_state(problems))
        else:
            log.info("shutting down: %s; board %s", self.stop_reason, board_final_state(problems))
        for p in problems:
            log.error("shutdown: %s", p)
        try:
            self.publish_diagnostics(final=reason)
            # give the last message a chance to reach remote readers before the participant disappears
            if not wait_for_acks(self.w_diag, 300):
                log.warning("last diagnostics not acknowledged within 300 ms by every reader")
        except Exception as e:
            log.warning("last diagnostics not delivered: %s", e)
        if self.recorder is not None:
            try:
                counts = self.recorder.close()
                log.info("recorded %d messages to %s", sum(counts.values()), self.recorder.path)
            except Exception as e:
                log.error("the recording %s could not be finished: %s", self.recorder.path, e)
        self.node.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


def filter_diagnostics(live) -> tuple[list, int, str]:
    """([(key, value)], level, message) of a viperdrive.estimation.live.LiveFilter, for /diagnostics (and the CLI)."""
    values = []
    level, message = msgs.DIAG_OK, "fusing"
    est = live.estimate
    if est is None:
        level, message = msgs.DIAG_WARN, "waiting for a first measurement"
    for src in list(live.sources.values()):
        values.append((f"source.{src.name}", f"{src.state}: {src.reason}"))
        values.append((f"source.{src.name}.topic", src.topic))
        if src.state in ("stale", "rejected"):
            level = max(level, msgs.DIAG_WARN)
    dr = live.dead_reckoning()
    if dr["active"]:
        level = max(level, msgs.DIAG_WARN)
        ttl = dr["seconds_to_limit"]
        ttl_text = "never (within 600 s)" if ttl is not None and math.isinf(ttl) else (
            f"{ttl:.0f} s" if ttl is not None else "?")
        message = (f"dead reckoning since t={dr['since']:.2f}: position 1-sigma {dr['position_sigma_m']:.3f} m, "
                   f"passes {dr['limit_m']:g} m in {ttl_text}")
    values += [("dead_reckoning", str(dr["active"])), ("position_sigma_m", _fmt(dr["position_sigma_m"])),
               ("seconds_to_uncertainty_limit", _fmt(dr["seconds_to_limit"]) if dr["seconds_to_limit"] is not None
                else "-"), ("uncertainty_limit_m", _fmt(dr["limit_m"]))]
    if est is not None:
        values += [("t", f"{est.t:.3f}"), ("x", _fmt(float(est.state[0]))), ("y", _fmt(float(est.state[1]))),
                   ("yaw", _fmt(float(est.state[5])))]
    for k, v in live.cost().items():
        values.append((f"step_{k}", _fmt(v)))
    for i, (t, name, state, reason) in enumerate(live.recent_events(10)):
        values.append((f"event_{i}", f"t={t:.3f} {name} {state}: {reason}"))
    return values, level, message


def board_final_state(problems: list) -> str:
    """What the last message may claim about the board: disabled only when the board acknowledged it."""
    if problems:
        return "NOT confirmed disabled (the board's deadman stops the wheels)"
    return "disabled, command zero"


def _covariance(matrix, diagonal_override) -> list:
    """36 floats row-major: the propagated 6x6, or diff_drive_controller's fixed diagonal when configured."""
    if diagonal_override is not None:
        out = [0.0] * 36
        for i, v in enumerate(diagonal_override):
            out[i * 7] = float(v)
        return out
    flat = [float(v) for row in matrix for v in row]
    if len(flat) != 36:
        raise ValueError(f"covariance must be 6x6, got {len(flat)} values")
    return flat


def _flatten(d: dict, prefix: str = "") -> list:
    """(key, value) pairs with nested dicts spelled out as dotted keys (host_link.rtt_p99_ms), sorted."""
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += _flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return sorted(out)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)
