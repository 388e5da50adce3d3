# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The robot-base node: the board in a ROS 2 graph, over DDS, without a ROS installation (docs/ros2.md).

In: cmd_vel (viperdrive.ros2.cmdvel), ~/clear_fault (viperdrive.ros2.clearfault). Out: odom, joint_states, /tf,
/diagnostics, imu/data_raw, battery_state and on sim time /clock (viperdrive.ros2.topics, .diagnostics,
.boardsensors); with --ekf odometry/filtered (viperdrive.ros2.filterlink). How a run is set up: BridgeOptions.

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
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from viperdrive.shared import protocol

from ..board.board import BoardDeenergized
from ..board.records import BoardState, fault_text
from ..board.recovery import FAULT, LINK, RESTART, Recovered, Recovery
from ..errors import BadValue, LinkError, LinkLost, PortError, UserError
from ..motion.drive import DriveController
from ..motion.loop import DriveLoop, prepare_loop_thread
from ..motion.odometry import Odometry
from ..timebase import HOST_CLOCK, Clock
from . import msgs
from .boardsensors import SensorStream
from .clearfault import CLEAR_FAULT_SERVICE, NODE_NAME, ClearFaultService
from .cmdvel import CmdVelInput, PublisherFilter, RateLimitedWarning, exposure, stamped_choice
from .diagnostics import board_final_state, bridge_diagnostics
from .filterlink import BridgeFilter
from .node import RosNode, wait_for_acks
from .options import BridgeOptions
from .topics import BridgeTopics

if TYPE_CHECKING:
    from ..estimation.live import LiveFilter
    from ..estimation.process import FilterProcess

log = logging.getLogger("viperdrive.ros2")


DIAGNOSTICS_PERIOD_S = 1.0      # diagnostic_updater's default rate
# GET_DIAG is a blocking round trip on the serial line (~3 ms on a board, ~10 ms on the virtual one): inside a
# 10 ms period it would cost an overrun every time. The board-side counters are therefore read at activation,
# when STATE shows FAULT or DEADMAN (to name the fault; at most this often), and at shutdown; the periodic
# diagnostics use the host-side link counters, which cost nothing on the wire.
BOARD_DIAG_MIN_INTERVAL_S = 5.0
JITTER_WINDOW = 512             # ticks of wake-up lateness kept for the percentiles


class Ros2Bridge:
    """The node. `run()` until stop() (or a signal handler calling it), Ctrl-C or a lost link; `shutdown()` is
    always called on the way out.

    board: a viperdrive.board.Board (not yet configured); config: RobotConfig; options: BridgeOptions (None: the
    defaults), how this run joins the graph, takes commands, filters, records and recovers.
    """

    def __init__(self, board, config, options: BridgeOptions | None = None):
        o = options if options is not None else BridgeOptions()
        self.options = o
        self.board = board
        # the graph's time. Wall time (the host's clock) by default. use_sim_time: the board's own time (a virtual
        # board's or an emulated chip's, which a busy machine slows below real time) is the graph's: published on
        # /clock from 0 as a simulator does, every stamp in it, the loop and the live filter counting it, so the
        # rates in the messages (m/s, rad/s of board time) agree with the time between their stamps
        self.use_sim_time = o.use_sim_time
        board_clock = getattr(board, "clock", HOST_CLOCK)
        if o.use_sim_time and board_clock is HOST_CLOCK:
            raise BadValue(f"--sim-time: the board on {getattr(board, 'port', '?')} keeps real time (only a virtual "
                           f"board or an emulated chip has a time of its own); leave --sim-time off")
        self.clock: Clock = board_clock if o.use_sim_time else HOST_CLOCK
        self.config = config
        ros = config.ros2                   # config.Ros2Settings: the robot file's ros2 section, its defaults
        self.params = ros
        self.stamped = stamped_choice(o.stamped, ros.use_stamped_vel)
        self.period = 1.0 / config.update_rate
        self.publish_period = 1.0 / ros.publish_rate
        if self.publish_period < self.period:
            log.warning("publish_rate %.1f Hz is above update_rate %.1f Hz: publishing at most once per tick",
                        1.0 / self.publish_period, config.update_rate)
        self.enable_odom_tf = ros.enable_odom_tf
        self.drive = o.drive if o.drive is not None else DriveController(config)
        self._odometry_factory = o.odometry_factory if o.odometry_factory is not None else Odometry
        self.odometry: Odometry | None = None
        self.allow = PublisherFilter(o.allow_publishers) if o.allow_publishers else None
        self.node = RosNode(o.namespace, domain_id=o.domain_id, discovery=o.discovery, env=o.env)
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
        self.last_state: BoardState | None = None
        self.last_wheels = (0.0, 0.0)
        self.commands_in = 0
        self.command_age: deque[float] = deque(maxlen=JITTER_WINDOW)   # stamped commands: header stamp -> taken (s)
        self.activated = False             # this bridge enabled the board and has not disabled it yet
        self.board_down: BoardDeenergized | None = None     # the board restarted/de-energized on its own
        self.recovery = Recovery(board, o.recover, log=log)    # what may be taken back, and when
        self._fresh_after: float | None = None  # after a recovery: only commands newer than this (host s) move it
        self.ignored_commands = 0           # cmd_vel samples taken while the board was down (not executed)
        self.shutdown_problems: list[str] = []    # what failed on the way out (empty: board confirmed disabled)
        self.filter: BridgeFilter | None = None     # the live filter (--ekf)
        self.filter_tf = False                      # it owns odom -> base_link (publish_tf): the raw tf is off
        self.recorder = None
        self._started_at = self.clock.now()
        try:
            self.topics = BridgeTopics(self.node, ros, sensors=bool(ros.sensor_rate), sim_clock=o.use_sim_time,
                                       warn=self.warn)
            self.sensors = SensorStream(board, self.topics, ros.sensor_rate)
            if o.record is not None:
                from ..recording.mcap import McapRecorder
                self.recorder = McapRecorder(o.record, self.topics.odom_frame, self.topics.base_frame)
                if o.use_sim_time:
                    self.recorder.clock = self._log_clock()
            self._create_endpoints()
        except BaseException:
            self.node.close()
            if self.recorder is not None:
                self.recorder.close()
            raise

    @property
    def live(self) -> "LiveFilter | FilterProcess | None":
        """The live filter itself (--ekf), None without one."""
        return self.filter.live if self.filter is not None else None

    # ---- setup ----
    def _create_endpoints(self) -> None:
        n, o = self.node, self.options
        if o.ekf is not None:   # the live EKF (viperdrive.ros2.filterlink): its readers, odometry/filtered, the tf
            clock = self.recorder.clock if self.recorder is not None else self._log_clock()
            self.filter = BridgeFilter(n, o.ekf, clock, self.recorder, o.uncertainty_limit, o.filter_process,
                                       self.topics.write, self.warn)
            self.topics.published["odometry_filtered"] = 0
            self.filter_tf = self.filter.owns_tf
        # one publisher of odom -> base_link: the filter's when it owns it (publish_tf), else the raw odometry's
        if self.enable_odom_tf or self.filter_tf:
            self.topics.add_tf()
            if self.filter is not None:
                self.filter.tf_writer = self.topics.tf
        self.clear_fault = ClearFaultService(n, self.board, self.recovery,
                                             on_cleared=lambda: setattr(self, "board_diag", {}))
        self.cmd = CmdVelInput(n, "cmd_vel", self.stamped, warn=self.warn, on_reader=self.announce, allow=self.allow)
        self.announce()

    def _log_clock(self):
        """The live filter's and the recording's clock: the host's on the wall epoch, or the board's (use_sim_time)."""
        from ..recording.mcap import LogClock
        return LogClock(self.clock, use_sim_time=self.use_sim_time)

    def _ros_minus_clock(self) -> float:
        """ROS time minus the loop's clock now: the wall minus the host's monotonic clock; 0 on sim time."""
        return 0.0 if self.use_sim_time else time.time() - time.monotonic()

    def announce(self) -> None:
        """Tell the ROS graph which node owns our endpoints (`ros2 node list` shows /NS/viperdrive)."""
        if self.cmd is None:
            return      # called again once the cmd_vel input exists
        writers = self.topics.writers() + ([self.filter.writer] if self.filter is not None else [])
        readers = [self.cmd.reader] if self.cmd.reader is not None else []
        readers += self.filter.readers if self.filter is not None else []
        readers.append(self.clear_fault.requests)
        writers.append(self.clear_fault.replies)
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
            self.sensors.start()
            self.board.activate()
        self.activated = True
        # after activate: the loop takes the board's encoder epoch as its baseline (a later restart of the
        # encoders, e.g. a reconnect, resets the controller and the odometry baseline)
        # the graph's clock (cmd_vel stamps and their timeout, the publish grid): the host's, and a virtual board
        # follows its host through the clock file's grant; on sim time the board's
        self.drive_loop = DriveLoop(self.board, self.drive, self.odometry, self.config.update_rate, clock=self.clock)
        if waiting is not None:
            self.recovery.lost(LINK, f"no board at the start: {waiting}")
        else:
            self.refresh_board_diag()
        if self.filter is not None:
            self.filter.start()
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

    def log_exposure(self) -> None:
        open_to_all, text = exposure(self.node, self.allow)    # who can reach the node, who may drive
        (log.warning if open_to_all else log.info)("%s", text)
        if self.node.security_warning:
            log.warning("%s", self.node.security_warning)

    def stop(self, reason: str = "stop requested") -> None:
        """Ask run() to return after the current tick (safe from a signal handler)."""
        self.stop_reason = reason
        self._stop.set()

    # ---- the loop ----
    def run(self, duration_s: float | None = None) -> None:
        """The fixed-rate loop (viperdrive.motion.loop: absolute deadlines, overruns counted and skipped, never caught
        up in a burst) until stop(), Ctrl-C, duration_s or a lost link; then shutdown()."""
        try:
            if not self.activated:
                self.start()
            assert self.drive_loop is not None      # made by start()
            # on the loop's thread: gc.freeze() and, with realtime, SCHED_FIFO (the CLI's; a library caller that
            # runs several bridges in one process leaves the process's garbage collector alone)
            if self.options.prepare_loop or self.options.realtime is not None:
                applied, text = prepare_loop_thread(self.options.realtime)
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
        self.clear_fault.serve()
        self.tick(now)
        self.topics.publish_clock(now)
        # the loop's read() took the records off the link; while the board is down nothing else reads it
        self.sensors.publish(lambda t: self.stamp(self._on_clock(t)), self.board_diag,
                             getattr(self.last_state, "status", 0), poll=self.recovery.outage is not None)
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
            if self.filter is not None:
                self.filter.warn_unpublished_sources(after - self._started_at)
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
        self.sensors.start()
        self.refresh_board_diag()
        self.publish_diagnostics()

    # ---- publishing (viperdrive.ros2.topics builds and writes the messages) ----
    def stamp(self, t: float) -> msgs.Time:
        """The ROS time of an instant on the loop's clock (self.clock)."""
        return msgs.time_from_s(t + self._ros_minus_clock())

    def _on_clock(self, mono: float) -> float:
        """A host monotonic sample time on the loop's clock."""
        return self.board.on_clock(mono) if self.use_sim_time else mono

    def publish_state(self) -> None:
        # the last state the odometry integrated: after the board went down, the STATE that showed it carries
        # restarted counts and must not reach joint_states either
        state = self.drive_loop.state if self.drive_loop is not None else None
        if state is None or self.odometry is None:
            return
        if self.recovery.outage is not None:
            # standing where it was last seen (outputs off): the pose holds now, it does not move any more
            stamp = self.stamp(self.clock.now())
            twist, wheel_velocity = (0.0, 0.0), (0.0, 0.0)
        else:
            stamp = self.stamp(self._on_clock(state.sampled))
            twist, wheel_velocity = self.odometry.twist, (state.velocity[0], state.velocity[1])
        odom = self.topics.publish_odometry(stamp, self.odometry, twist, (state.position[0], state.position[1]),
                                            wheel_velocity, tf=not self.filter_tf)
        if self.filter is not None:
            self.filter.feed_odometry(odom)

    def diagnostics(self, final: str | None = None) -> msgs.DiagnosticArray:
        """The DiagnosticArray (viperdrive.ros2.diagnostics): link, board, sensors, loop timing, cmd_vel, filter."""
        return bridge_diagnostics(self, final)

    def publish_diagnostics(self, final: str | None = None) -> None:
        self.topics.write(self.topics.diag, self.diagnostics(final), "diagnostics")

    # ---- the way out ----
    def shutdown(self) -> None:
        """Zero command, board disabled, a last diagnostics message, participant closed. Idempotent; every step
        runs even when an earlier one fails (a dead link must not keep the DDS side from saying so)."""
        if self._shut:
            return
        self._shut = True
        self.drive.reset()
        problems = []
        if self.filter is not None:
            self.filter.stop()      # the filter winds down meanwhile; the board comes first
        if self.activated and not self.stop_reason.startswith("error"):
            self.refresh_board_diag()       # the board's own counters for the last message
        if self.activated:
            steps = [("deactivate", self.board.deactivate)]     # zero command + disable, confirmed by the board
            if getattr(self.board, "active", True):
                steps.insert(0, ("zero command", lambda: self.board.write(0.0, 0.0)))
            for what, call in steps:
                try:
                    call()
                except Exception as e:      # the board's own deadman stops the wheels if we cannot
                    problems.append(f"{what} failed: {e}")
            self.activated = False
        if self.filter is not None:
            self.filter.finish()    # the estimates it still owes are published (and recorded) before the node closes
        self.sensors.stop()     # the next client of the board starts without a stream it did not ask for
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
            if not wait_for_acks(self.topics.diag, 300):
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
