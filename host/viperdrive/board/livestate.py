# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a live view of a board shows, gathered from its streams: the newest control telemetry record in SI units
(rad/s, duty), the records' rate and the ones lost (sequence gaps), the newest sensor reading, the board's pose and
its GET_DIAG, and one summary of it all (status bits, fault, loop timing and jitter, link counters, sensors).
`viperdrive monitor` and `viperdrive dashboard` show the same summary."""
from __future__ import annotations

import math

from viperdrive.shared import protocol as P


class LiveState:
    """One board's live data (see the module): add() each telemetry record, add_sensors() the readings, set pose and
    diag, update_rate(now) once in a while; summary() -> the dict both views show."""

    def __init__(self, counts_per_rev: int, control_hz: int):
        self.k = 2 * math.pi / counts_per_rev
        self.control_hz = control_hz
        self.last: dict | None = None   # latest telemetry record in SI units
        self.received = 0
        self.lost = 0
        self._seq = None
        self._window: list[float] = []
        self.pose = (0.0, 0.0, 0.0)
        self.diag: dict = {}
        self.rate = 0.0
        self.live = None            # the live filter (--ekf)
        self.sensors = None         # the newest SensorReading
        self.sensor_records = 0
        self._sensor_window: list[float] = []
        self.sensor_hz = 0.0

    def add_sensors(self, readings: list, now: float) -> None:
        if readings:
            self.sensors = readings[-1]
            self.sensor_records += len(readings)
            self._sensor_window += [now] * len(readings)

    def add(self, rec: dict, now: float) -> dict:
        if self._seq is not None:
            gap = (rec["seq"] - self._seq - 1) & 0xFFFF
            if gap < 1000:          # a larger jump is a restart of the stream, not loss
                self.lost += gap
        self._seq = rec["seq"]
        self.received += 1
        self._window.append(now)
        k = self.k
        last = self.last = {
            "board_time_us": rec["t_us"],
            "setpoint_left": rec["setpoint_l"] * k, "measured_left": rec["measured_l"] * k,
            "output_left": rec["output_l"] / P.Q15, "integrator_left": rec["integrator_l"] / P.Q15,
            "setpoint_right": rec["setpoint_r"] * k, "measured_right": rec["measured_r"] * k,
            "output_right": rec["output_r"] / P.Q15, "integrator_right": rec["integrator_r"] / P.Q15,
            "status": rec["status"],
        }
        return last

    def update_rate(self, now: float) -> None:
        self._window = [t for t in self._window if now - t <= 1.0]
        self.rate = float(len(self._window))
        self._sensor_window = [t for t in self._sensor_window if now - t <= 1.0]
        self.sensor_hz = float(len(self._sensor_window))

    def summary(self) -> dict:
        d = self.diag
        period = 1e6 / self.control_hz
        jitter = max(d.get("period_max_us", period) - period, period - d.get("period_min_us", period))
        status = self.last["status"] if self.last else 0
        x, y, th = self.pose
        host = d.get("host_link", {})
        r = self.sensors
        sensors = {"gyro_z_rad_s": r.gyro_rad_s[2] if r else None,
                   "yaw_rate_rad_s": r.yaw_rate_rad_s if r else None,
                   "gyro_bias_z_rad_s": r.gyro_bias_z_rad_s if r else None, "battery_v": r.battery_v if r else None,
                   "battery_low": r.battery_low if r else None, "estop_open": r.estop_open if r else None,
                   "imu_state": r.imu_state_name if r else d.get("imu", "?"), "imu_errors": d.get("imu_errors", 0),
                   "sensor_hz": self.sensor_hz}
        return {**sensors, "status": P.status_names(status), "fault": d.get("fault", "?"), "x": x, "y": y, "theta": th,
                "period_min_us": d.get("period_min_us", 0), "period_max_us": d.get("period_max_us", 0),
                "jitter_us": jitter, "exec_max_us": d.get("exec_max_us", 0), "overruns": d.get("overruns", 0),
                "crc_errors": d.get("crc_errors", 0), "telemetry_hz": self.rate, "telemetry_lost": self.lost,
                "rtt_p50_ms": host.get("rtt_p50_ms") or 0.0}
