# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The board's sensor stream in the ROS graph: SENSORS asked of the board at ros2.sensor_rate, every SENSORS_DATA
record published as imu/data_raw (while the IMU works) and battery_state (when the board measures a battery),
stamped with the board's sample time, and the newest record kept for /diagnostics (e-stop, battery, IMU).

A board that refuses the stream is logged, not fatal: the wheels work without the sensor topics, and the
diagnostics say there are no records. The stream is stopped on the way out, so the next client of the board starts
without a stream it did not ask for.
"""
import logging
from collections.abc import Callable

from viperdrive.shared import protocol

from ..errors import UserError
from . import msgs
from .topics import BridgeTopics

log = logging.getLogger("viperdrive.ros2")


class SensorStream:
    """board: the bridge's Board; topics: its BridgeTopics; hz: ros2.sensor_rate (0: no sensor topics)."""

    def __init__(self, board, topics: BridgeTopics, hz: int):
        self.board = board
        self.topics = topics
        self.hz = hz                            # SENSORS_DATA asked of the board (0: no sensor topics)
        self.rate = 0                           # what it granted
        self.records = 0
        self.latest = None                      # the newest SensorReading
        self.battery_thresholds = (None, None)  # the board's battery_warn_v, battery_cutoff_v (read at start)

    def start(self) -> None:
        """SENSORS at the asked rate and the battery thresholds (at the start and after every recovery)."""
        if not self.hz:
            return
        try:
            self.rate = self.board.sensors(self.hz)
            self.battery_thresholds = (self.board.get_param("battery_warn_v"),
                                       self.board.get_param("battery_cutoff_v"))
        except UserError as e:
            log.warning("board sensors not streamed (%s): no imu/data_raw or battery_state", e)
            return
        log.info("board sensors at %d Hz (asked %d): imu/data_raw in frame %s, battery_state", self.rate, self.hz,
                 self.topics.imu_frame)

    def publish(self, stamp_of: Callable[[float], msgs.Time], board_diag: dict, status_bits: int,
                poll: bool = True) -> None:
        """Every record received since the last tick; stamp_of(host monotonic s) -> its ROS time. Also while the
        board is down (its sensor task keeps streaming: the e-stop and the battery are what the graph needs to
        see then). board_diag, status_bits: the board's last account, for battery_state's cutoff flag. poll: read
        the port for them (False: the loop's read() this tick already took them off the link)."""
        if not self.rate:
            return
        readings = self.board.sensor_readings(poll=poll)
        if not readings:
            return
        cutoff = (board_diag.get("fault_code") == protocol.FAULT_BATTERY_LOW and bool(status_bits & protocol.ST_FAULT))
        for r in readings:
            self.topics.publish_sensors(r, stamp_of(r.host_time), cutoff)
        self.records += len(readings)
        self.latest = readings[-1]

    def stop(self) -> None:
        if not self.rate:
            return
        try:
            self.board.sensors(0)
        except Exception as e:      # the outputs are what matters here; the stream is only traffic
            log.warning("sensor stream not stopped: %s", e)
        self.rate = 0
