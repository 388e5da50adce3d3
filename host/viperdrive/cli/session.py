# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A drive session: what the commands that move the robot through the host stack share (drive, calibrate,
log record): the board's fixed-rate loop on the board's clock, the drive controller, the odometry, and optionally
a recorder, telemetry, the board's sensors and the live filter (cli/livefilter.py)."""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from viperdrive.shared import protocol as P

from ..board.records import BoardState
from ..errors import UserError
from ..messages.sensors import sensor_statuses
from ..motion.drive import DriveController
from ..motion.loop import DriveLoop
from ..motion.odometry import Odometry
from ..recording.mcap import HostTimesOnBoard, LogClock
from ..timebase import HOST_CLOCK
from .boardopen import activate, fault_message
from .livefilter import ODOM_TOPIC, start_live_filter

if TYPE_CHECKING:
    from ..estimation.live import LiveFilter
    from ..estimation.process import FilterProcess


class DriveSession:
    """The running parts of a drive: board loop, controller, odometry, optional recorder and telemetry."""

    def __init__(self, board, config, recorder=None, telemetry_hz: int = 0, ekf=None, warn=None,
                 sensor_hz: int = 0):
        self.board = board
        self.config = config
        self.controller = DriveController(config)
        self.odometry = Odometry(config, counts_per_rev=board.counts_per_rev)
        # the loop's period, a script's durations and --duration are the board's time (Board.clock: the host's
        # clock on every real board; an emulated chip's at its measured speed)
        self.clock = board.clock
        self.loop = DriveLoop(board, self.controller, self.odometry, clock=self.clock)
        self.recorder = recorder
        # a board that is a program (a virtual board, an emulated chip) runs on its own time: the recording and the
        # live filter both log on it, on one epoch, so a rate or a span read off the recording is the board's
        self.log_clock = None if self.clock is HOST_CLOCK else LogClock(self.clock)
        if recorder is not None and self.log_clock is not None:
            recorder.use_clock(HostTimesOnBoard(self.log_clock))
        self.telemetry_hz = telemetry_hz
        self.sensor_hz = sensor_hz          # SENSORS_DATA asked for (0: none): into the recording
        self.sensor_rate = 0                # what the board granted
        self.latest_sensors = None
        self.battery_thresholds = (None, None)      # the board's battery_warn_v, battery_cutoff_v
        self.v = 0.0
        self.w = 0.0
        self.state: BoardState | None = None
        self.fault_code = 0
        self.test_values: dict = {}         # an interrupted experiment's values the board ran with (warned)
        self._last_diag = -1e9
        self.board_diag: dict | None = None
        self.stop_reason: str | None = None
        self.live: LiveFilter | FilterProcess | None = None     # --ekf
        self.final_pose: tuple[float, float, float] | None = None   # the odometry's pose when the run ended
        self._live_stop: threading.Event | None = None
        self._live_thread: threading.Thread | None = None
        if ekf is not None:
            self._start_filter(ekf, warn or (lambda text: None))

    def _start_filter(self, ekf, warn) -> None:
        # the filter's time: the recorder's (the host's) on a real board; the board's own on a board that is a
        # program, whose odometry is stamped in board time (a stall of the machine stops both alike)
        self.live, self._live_stop, self._live_thread = start_live_filter(ekf, self.recorder, warn, self._estimate,
                                                                          clock=self.log_clock)

    def _estimate(self, est) -> None:
        if self.recorder is not None and self.live is not None:
            from ..ros2 import msgs
            cfg = self.live.config
            self.recorder.message("/odometry/filtered", "nav_msgs/msg/Odometry",
                                  msgs.estimate(est.t, est.state, est.covariance, cfg.world_frame,
                                                cfg.base_link_frame), self.live.clock.ns())

    def _feed_filter(self, state, now: float) -> None:
        from ..ros2 import msgs
        o = self.odometry
        assert self.live is not None        # fed only with --ekf
        if self.clock is HOST_CLOCK:
            stamp = msgs.time_from_s(state.sampled + (time.time() - time.monotonic()))
        else:
            stamp = msgs.time_from_s(self.live.clock.ns(now) * 1e-9)                     # the cycle's board time
        cfg = self.config.ros2
        self.live.feed(ODOM_TOPIC, msgs.odometry(stamp, cfg.odom_frame_id, cfg.base_frame_id, o.pose, o.twist,
                                                 [float(v) for v in o.pose_covariance.ravel()],
                                                 [float(v) for v in o.twist_covariance.ravel()]))

    def start(self) -> None:
        if self.sensor_hz:
            self.sensor_rate = self.board.sensors(self.sensor_hz)
            self.battery_thresholds = (self.board.get_param("battery_warn_v"),
                                       self.board.get_param("battery_cutoff_v"))
        if self.telemetry_hz:
            # start the stream before the loop: its first burst shares the line with STATE replies, and inside
            # the loop it would cost a run of misses
            self.board.telemetry(self.telemetry_hz)
            self.clock.sleep(0.1)
            self.board.telemetry_frames()
        activate(self.board)
        self.controller.reset()
        self.odometry.reset()
        self._last_diag = self.clock.now()
        self.record_diagnostics()

    def tick(self, now: float) -> None:
        """One loop cycle's bookkeeping after DriveLoop.cycle: recording and fault tracking."""
        state = self.loop.state
        self.state = state
        if state is not None and state.faulted and not self.fault_code:
            self.board_diag = self.board.diag()
            self.fault_code = self.board_diag["fault_code"] or -1
        if self.live is not None and state is not None and state.fresh:
            self._feed_filter(state, now)   # recorded by the filter as its input, with its arrival time
        rec = self.recorder
        if rec is not None and state is not None:
            if state.fresh:
                rec.joint_states(state.sampled, state.position, state.velocity)
                rec.odometry(state.sampled, self.odometry.pose, self.odometry.twist, self.odometry.pose_covariance,
                             self.odometry.twist_covariance, odom=self.live is None)
            # the recording's times are the host's (its log clock); `now` is the board's, the loop's period
            rec.command(time.monotonic(), self.controller.v, self.controller.w)
            for t in self.board.telemetry_frames():
                rec.telemetry(t, self.board.counts_per_rev)
            if self.sensor_hz:
                for r in self.board.sensor_readings():
                    rec.sensors(r, cutoff_latched=self.fault_code == P.FAULT_BATTERY_LOW)
                    self.latest_sensors = r
            for m, what in self.board.moves.take_events():
                rec.move(time.monotonic(), m, what)
            if now - self._last_diag >= 1.0:
                # GET_DIAG is a blocking round trip (~10 ms at 115200 baud): asked at the start, on a fault and at
                # the end only; every second the last board answer goes out with this side's live counters
                self._last_diag = now
                self.record_diagnostics(ask_board=False)

    def record_diagnostics(self, ask_board: bool = True) -> None:
        if self.recorder is None:
            return
        if ask_board or self.board_diag is None:
            self.board_diag = self.board.diag()
        d = {k: v for k, v in self.board_diag.items() if k != "host_link"}
        link = self.board.link.stats()
        d.update({f"host_{k}": v for k, v in link.items() if k in ("frames_rx", "frames_tx", "crc_errors",
                                                                    "timeouts", "rtt_p50_ms", "rtt_max_ms")})
        d["host_misses"] = self.board.total_misses
        loop = self.loop.loop.stats()
        d.update({f"loop_{k}": v for k, v in loop.items() if k in ("cycles", "overruns", "late_p99_us")})
        status = self.state.status if self.state is not None else None
        sensors = None
        if self.sensor_hz:
            warn_v, cutoff_v = self.battery_thresholds
            sensors = sensor_statuses(self.latest_sensors, self.board_diag.get("fault_code", 0), warn_v, cutoff_v,
                                      imu_errors=self.board_diag.get("imu_errors"),
                                      estop_now=self.state.estop if self.state is not None else None)
        self.recorder.diagnostics(time.monotonic(), d, status, hardware_id=self.board.info.board, sensors=sensors)

    def fault_text(self, args=None) -> str:
        """The latched fault in words; on a board that ran an interrupted experiment's test values, said first:
        they, not the wheel, are the likely cause (a stall hint pointed at the wheel)."""
        text = fault_message(self.fault_code if self.fault_code > 0 else 0, args)
        if self.test_values:
            shown = ", ".join(f"{k} {v:g}" for k, v in self.test_values.items())
            text += (f". The board ran with test values an interrupted experiment left live ({shown}): restore the "
                     f"saved values first (`viperdrive params restore`)")
        return text

    def command(self, v: float, w: float, now: float) -> None:
        self.v, self.w = v, w
        self.controller.command(v, w, now=now)

    def finish(self) -> None:
        """Ask the filter to stop (join_filter() waits for it, once the board is disabled), stop the telemetry
        stream; the last diagnostics into the recording."""
        if self._live_stop is not None:
            self._live_stop.set()
        if self.board.link is None or not self.board.link.is_open:
            return
        try:
            self.record_diagnostics()
        except UserError:
            pass
        self.stop_telemetry()

    def join_filter(self, timeout: float = 120.0) -> None:
        """Wait for the filter to wind down: the estimates it still owes are recorded before the recording closes
        (a filter process works off its backlog first, for as long as it makes progress:
        viperdrive.estimation.process). The timeout is a last guard, not a schedule."""
        if self._live_thread is not None:
            self._live_thread.join(timeout=timeout)

    def stop_telemetry(self) -> None:
        if self.board.link is None or not self.board.link.is_open:
            return
        for rate, stop in ((self.telemetry_hz, self.board.telemetry), (self.sensor_hz, self.board.sensors)):
            if rate:
                try:
                    stop(0)
                except UserError:
                    pass
