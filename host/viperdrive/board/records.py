# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a board reports, in SI units: its identity (BoardInfo, HELLO's INFO), a cycle's state (BoardState, STATE),
a sensor record (SensorReading, SENSORS_DATA) and its own odometry (BoardOdometry, GET_ODOM). Frozen dataclasses:
a reading never changes after it was taken."""
from __future__ import annotations

from dataclasses import dataclass

from viperdrive.shared import protocol as P
from viperdrive.shared import version as V


@dataclass(frozen=True)
class BoardInfo:
    protocol_version: int
    schema_hash: int
    control_hz: int
    counts_per_rev: int
    firmware: str
    board: str

    @property
    def firmware_version(self) -> str | None:
        """The viperdrive version the board's firmware says it is ("viperdrive 0.1.0" -> "0.1.0"); None when its
        HELLO names another firmware (an old one that said no version, a stand-in)."""
        if not self.firmware.startswith(V.FIRMWARE_PREFIX):
            return None
        rest = self.firmware[len(V.FIRMWARE_PREFIX):].strip()
        return rest or None

    def version_warning(self) -> str | None:
        """A sentence for the user when the board's firmware is not this host's version (same protocol and
        parameter schema, or HELLO would have refused it); None when they are the same."""
        theirs = self.firmware_version
        if theirs == V.VERSION:
            return None
        said = f"viperdrive {theirs}" if theirs else repr(self.firmware)
        return (f"the board runs firmware {said}, this host is viperdrive {V.VERSION}: they speak the same protocol, "
                f"but the board may lack fixes this host expects; flash it again (`viperdrive flash --board ...`; "
                f"`viperdrive flash --check` lists the files that differ)")


@dataclass(frozen=True)
class BoardState:
    position: tuple[float, float]       # rad (left, right)
    velocity: tuple[float, float]       # rad/s, the board's own estimate
    status: int                         # STATE status byte (protocol.ST_*)
    counts: tuple[int, int]             # raw encoder counts
    sampled: float                      # host time.monotonic() when the board took these values: the SET_VEL's
    #                                     send time plus half the link's shortest round trip, never after the
    #                                     STATE arrived (Link.sampled_at)
    fresh: bool                         # False: held from an earlier cycle (this cycle's reply was missed)
    misses: int = 0                     # consecutive misses so far

    @property
    def status_names(self) -> list[str]:
        return P.status_names(self.status)

    @property
    def enabled(self) -> bool:
        return bool(self.status & P.ST_ENABLED)

    @property
    def faulted(self) -> bool:
        return bool(self.status & P.ST_FAULT)

    @property
    def estop(self) -> bool:
        """The board's e-stop input is open now (ST_ESTOP)."""
        return bool(self.status & P.ST_ESTOP)

    @property
    def battery_low(self) -> bool:
        """The battery is below battery_warn_v (ST_BATTERY_LOW)."""
        return bool(self.status & P.ST_BATTERY_LOW)


@dataclass(frozen=True)
class SensorReading:
    """One SENSORS_DATA record in SI units (docs/protocol.md "SENSORS_DATA"; board axes are REP-103: x forward,
    y left, z up, so gyro[2] > 0 turns the robot counter-clockwise seen from above)."""
    seq: int                                # u16, wraps; a gap means records were dropped
    board_us: int                           # the board's ticks_us when it took the sample (u32, wraps)
    sampled: float | None                   # that moment on the host's monotonic clock (None: clock not synced)
    received: float                         # host time.monotonic() when the frame was taken off the link
    gyro_rad_s: tuple[float, float, float]  # rad/s, board axes, bias NOT subtracted (0s without a working IMU)
    accel_m_s2: tuple[float, float, float]  # m/s^2, board axes (+9.81 on z at rest, level)
    gyro_bias_z_rad_s: float | None         # rad/s, the board's still-period estimate; None until it has one
    battery_v: float | None                 # V; None when the board config has no battery input
    battery_low: bool                       # below battery_warn_v
    estop_open: bool | None                 # the e-stop input is open now; None when the board has no e-stop input
    imu_state: int                          # protocol.IMU_*
    heading_from_gyro: bool                 # the board odometry's heading comes from the gyro now
    still: bool                             # the encoders say the robot is still (bias being estimated)
    status: int                             # the STATE status byte at the sample

    @property
    def imu_state_name(self) -> str:
        return P.IMU_NAMES.get(self.imu_state, f"unknown ({self.imu_state})")

    @property
    def imu_ok(self) -> bool:
        return self.imu_state == P.IMU_OK

    @property
    def host_time(self) -> float:
        """When the sample was taken, on the host's monotonic clock: `sampled` once the clock is synced, else when
        it arrived (`received`)."""
        return self.sampled if self.sampled is not None else self.received

    @property
    def yaw_rate_rad_s(self) -> float:
        """gyro z minus the board's bias estimate (rad/s): the rate the board's heading integrates."""
        return self.gyro_rad_s[2] - (self.gyro_bias_z_rad_s or 0.0)


@dataclass(frozen=True)
class BoardOdometry:
    """GET_ODOM in SI: the board's own pose, and the encoders' heading integrated alongside for comparison."""
    sampled: float | None                   # host monotonic time of the board's stamp (None: clock not synced)
    x: float                                # m
    y: float                                # m
    theta: float                            # rad, [-pi, pi): from the gyro when heading_source == "gyro"
    theta_encoders: float                   # rad, [-pi, pi): wheel odometry only
    heading_source: str                     # "gyro" or "encoders"


def sensor_reading(v: tuple, received: float, sampled: float | None) -> SensorReading:
    """A SensorReading from protocol.unpack_sensors_data's tuple (wire units)."""
    seq, board_us, gx, gy, gz, ax, ay, az, bias, mv, flags, imu, status = v
    g = P.GYRO_SCALE
    a = P.ACCEL_SCALE
    return SensorReading(
        seq=seq, board_us=board_us, sampled=sampled, received=received, gyro_rad_s=(gx / g, gy / g, gz / g),
        accel_m_s2=(ax / a, ay / a, az / a),
        gyro_bias_z_rad_s=bias / g if flags & P.SF_BIAS_VALID else None,
        battery_v=mv / P.BATTERY_SCALE if flags & P.SF_HAS_BATTERY else None,
        battery_low=bool(flags & P.SF_BATTERY_LOW),
        estop_open=bool(flags & P.SF_ESTOP_OPEN) if flags & P.SF_HAS_ESTOP else None,
        imu_state=imu, heading_from_gyro=bool(flags & P.SF_GYRO_HEADING), still=bool(flags & P.SF_STILL),
        status=status)


def fault_text(code: int) -> str:
    """A fault code in words (protocol.FAULT_NAMES)."""
    return P.FAULT_NAMES.get(code, f"unknown fault code {code}")
