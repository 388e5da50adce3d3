# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board sensor records (viperdrive.board.SensorReading) as ROS 2 messages: sensor_msgs/Imu, sensor_msgs/BatteryState
and the e-stop / battery / IMU diagnostics. One place for the field values, so the live bridge (viperdrive.ros2) and
the MCAP recorder (viperdrive.recording.mcap) publish the same numbers (docs/ros2.md, "Board sensors").

The messages are plain dicts in ROS field form (what mcap_ros2's writer takes); the bridge turns them into its IDL
structs with `viperdrive.ros2.msgs`.

Imu (REP-145, sensor_msgs/Imu's comments):
  orientation: not measured -> identity quaternion with orientation_covariance[0] = -1.
  angular_velocity: board axes (REP-103: x forward, y left, z up; z > 0 = counter-clockwise from above), rad/s.
      z has the board's still-period bias estimate subtracted (SensorReading.yaw_rate_rad_s: the rate the board's own
      heading integrates); x and y are raw (the board estimates no bias for them).
  linear_acceleration: m/s^2 as measured (gravity included: +9.81 on z at rest, level).
  covariances: diagonal, per axis sigma^2 = (noise density x sqrt(noise bandwidth))^2 from the part's datasheet
      and the low-pass filter the firmware's driver sets (IMU_NOISE below, the numbers and sources in docs/ros2.md).
BatteryState: voltage (V, NaN when the board has no battery input: present = False then), every unmeasured value
  NaN as the message definition asks (temperature, current, charge, capacity, design_capacity, percentage), health
  DEAD while the cut-off fault (FAULT_BATTERY_LOW) is latched, GOOD otherwise, status UNKNOWN (the board cannot
  tell charging from discharging: it measures no current), technology UNKNOWN, no cells listed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from viperdrive.shared import protocol as P

G = 9.80665                     # m/s^2 per g (the datasheets' "g")
DEG = math.pi / 180.0

# sensor_msgs/BatteryState constants (power_supply.h)
STATUS_UNKNOWN = 0
HEALTH_UNKNOWN = 0
HEALTH_GOOD = 1
HEALTH_DEAD = 3
TECHNOLOGY_UNKNOWN = 0

# diagnostic_msgs/DiagnosticStatus levels
OK, WARN, ERROR = 0, 1, 2


@dataclass(frozen=True)
class ImuNoise:
    """White-noise figures of one IMU part as the firmware configures it."""
    part: str
    gyro_density_dps: float         # deg/s/sqrt(Hz), rate noise spectral density
    gyro_bandwidth_hz: float        # the gyro's low-pass as the driver sets it
    accel_density_ug: float         # ug/sqrt(Hz), accelerometer noise density
    accel_bandwidth_hz: float
    source: str

    @property
    def gyro_variance(self) -> float:
        """(rad/s)^2 per axis."""
        return (self.gyro_density_dps * DEG) ** 2 * self.gyro_bandwidth_hz

    @property
    def accel_variance(self) -> float:
        """(m/s^2)^2 per axis."""
        return (self.accel_density_ug * 1e-6 * G) ** 2 * self.accel_bandwidth_hz


IMU_NOISE = {
    # MPU-6000/6050 product specification rev 3.4, tables 6.1/6.2; the driver sets CONFIG DLPF_CFG = 3
    "mpu6050": ImuNoise("mpu6050", 0.005, 42.0, 400.0, 44.0,
                        "MPU-6050 datasheet: rate noise 0.005 deg/s/sqrt(Hz), accel 400 ug/sqrt(Hz); DLPF_CFG 3: "
                        "gyro 42 Hz, accel 44 Hz"),
    # LSM6DS3 datasheet (DocID026899) table 3: Rn 7 mdps/sqrt(Hz), An 90 ug/sqrt(Hz) (high-performance mode); at the
    # 104 Hz output rate the driver sets for rate_hz <= 104, the digital filters pass about ODR/2
    "lsm6ds3": ImuNoise("lsm6ds3", 0.007, 52.0, 90.0, 52.0,
                        "LSM6DS3 datasheet: rate noise 7 mdps/sqrt(Hz), accel 90 ug/sqrt(Hz); ODR 104 Hz, "
                        "bandwidth ~ODR/2 = 52 Hz"),
}
IMU_PARTS = tuple(sorted(IMU_NOISE))


def diagonal3(v: float) -> list[float]:
    return [v, 0.0, 0.0, 0.0, v, 0.0, 0.0, 0.0, v]


def imu_msg(r, stamp: dict, frame_id: str, noise: ImuNoise) -> dict:
    """sensor_msgs/Imu fields of one SensorReading (stamp: builtin_interfaces/Time as a dict)."""
    gx, gy, _ = r.gyro_rad_s
    ax, ay, az = r.accel_m_s2
    return {
        "header": {"stamp": stamp, "frame_id": frame_id},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0},
        "orientation_covariance": [-1.0] + [0.0] * 8,
        "angular_velocity": {"x": float(gx), "y": float(gy), "z": float(r.yaw_rate_rad_s)},
        "angular_velocity_covariance": diagonal3(noise.gyro_variance),
        "linear_acceleration": {"x": float(ax), "y": float(ay), "z": float(az)},
        "linear_acceleration_covariance": diagonal3(noise.accel_variance),
    }


def battery_msg(r, stamp: dict, frame_id: str, cutoff_latched: bool) -> dict:
    """sensor_msgs/BatteryState fields of one SensorReading; cutoff_latched: FAULT_BATTERY_LOW is latched."""
    nan = math.nan
    present = r.battery_v is not None
    return {
        "header": {"stamp": stamp, "frame_id": frame_id},
        "voltage": float(r.battery_v) if present else nan,
        "temperature": nan, "current": nan, "charge": nan, "capacity": nan, "design_capacity": nan,
        "percentage": nan,
        "power_supply_status": STATUS_UNKNOWN,
        "power_supply_health": (HEALTH_DEAD if cutoff_latched else HEALTH_GOOD) if present else HEALTH_UNKNOWN,
        "power_supply_technology": TECHNOLOGY_UNKNOWN,
        "present": present,
        "cell_voltage": [], "cell_temperature": [], "location": "", "serial_number": "",
    }


def sensor_statuses(r, fault_code: int, warn_v: float | None, cutoff_v: float | None,
                    imu_errors: int | None = None, estop_now: bool | None = None) -> list[tuple]:
    """[(name, level, message, [(key, value)])] for the e-stop, the battery and the IMU.

    r: the newest SensorReading (None: no sensor record received: the STATE bits and the fault still count);
    fault_code: the latched fault (GET_DIAG; 0 none); warn_v/cutoff_v: the board's battery_warn_v/battery_cutoff_v;
    estop_now: STATE's ST_ESTOP bit when known (newer than r)."""
    out = []
    # e-stop: open = ERROR; closed again but FAULT_ESTOP still latched = ERROR until CLEAR_FAULT
    estop = estop_now if estop_now is not None else (r.estop_open if r is not None else None)
    has_estop = r is None or r.estop_open is not None
    if estop:
        out.append(("e-stop", ERROR, "e-stop open", [("estop_open", "True")]))
    elif fault_code == P.FAULT_ESTOP:
        out.append(("e-stop", ERROR, "e-stop closed again, FAULT_ESTOP latched: clear the fault to drive",
                    [("estop_open", "False")]))
    elif not has_estop:
        out.append(("e-stop", OK, "no e-stop input configured", [("estop_open", "-")]))
    else:
        out.append(("e-stop", OK, "closed", [("estop_open", "False" if estop is False else "-")]))

    # battery: cut-off fault = ERROR, below battery_warn_v = WARN
    values = [("voltage_v", f"{r.battery_v:.3f}" if r is not None and r.battery_v is not None else "-"),
              ("battery_warn_v", _v(warn_v)), ("battery_cutoff_v", _v(cutoff_v))]
    if fault_code == P.FAULT_BATTERY_LOW:
        out.append(("battery", ERROR, f"battery cut-off: below {_v(cutoff_v)} V, outputs off (FAULT_BATTERY_LOW "
                                      "latched)", values))
    elif r is None:
        out.append(("battery", WARN, "no sensor record received", values))
    elif r.battery_v is None:
        out.append(("battery", OK, "no battery input configured", values))
    elif r.battery_low:
        out.append(("battery", WARN, f"battery low: {r.battery_v:.2f} V < battery_warn_v {_v(warn_v)} V", values))
    else:
        out.append(("battery", OK, f"{r.battery_v:.2f} V", values))

    # IMU: a configured part that stopped answering (or is the wrong part) = ERROR
    if r is None:
        out.append(("imu", WARN, "no sensor record received", []))
    else:
        values = [("state", r.imu_state_name),
                  ("gyro_bias_z_rad_s", f"{r.gyro_bias_z_rad_s:.6g}" if r.gyro_bias_z_rad_s is not None else "-"),
                  ("yaw_rate_rad_s", f"{r.yaw_rate_rad_s:.6g}"), ("heading_source", "gyro" if r.heading_from_gyro
                                                             else "encoders"),
                  ("still", str(r.still)), ("gyro_z_raw_rad_s", f"{r.gyro_rad_s[2]:.6g}")]
        if imu_errors is not None:
            values.append(("imu_errors", str(imu_errors)))
        level = {P.IMU_OK: OK, P.IMU_NONE: OK, P.IMU_STARTING: WARN}.get(r.imu_state, ERROR)
        message = "no IMU configured" if r.imu_state == P.IMU_NONE else r.imu_state_name
        out.append(("imu", level, message, values))
    return out


def _v(x) -> str:
    return f"{x:g}" if x is not None else "-"
