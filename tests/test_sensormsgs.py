# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every field of a board sensor record reaches a ROS 2 message (viperdrive.messages.sensors): Imu, BatteryState or a
diagnostics status, with the numbers docs/ros2.md gives; and an MCAP recording of them decodes with mcap-ros2."""
import math

import pytest

from viperdrive.board import sensor_reading
from viperdrive.messages import sensors as S
from viperdrive.recording.mcap import McapRecorder, read_mcap
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.unit

STAMP = {"sec": 12, "nanosec": 5}
FLAGS = P.SF_HAS_BATTERY | P.SF_HAS_ESTOP | P.SF_BIAS_VALID | P.SF_GYRO_HEADING | P.SF_STILL


def reading(gz=250000, bias=10000, mv=7400, flags=FLAGS, imu=P.IMU_OK, status=P.ST_ENABLED, t_us=1000):
    # wire units: urad/s, mm/s^2, mV
    return sensor_reading((3, t_us, 1000, -2000, gz, 150, -300, 9810, bias, mv, flags, imu, status), 5.0, 4.99)


def test_imu_fields_rep103_rep145_and_the_datasheet_covariances():
    m = S.imu_msg(reading(), STAMP, "imu_link", S.IMU_NOISE["mpu6050"])
    assert m["header"] == {"stamp": STAMP, "frame_id": "imu_link"}
    assert m["orientation_covariance"] == [-1.0] + [0.0] * 8
    assert m["angular_velocity"] == {"x": 0.001, "y": -0.002, "z": pytest.approx(0.25 - 0.01)}   # z: bias removed
    assert m["linear_acceleration"] == {"x": 0.15, "y": -0.3, "z": 9.81}
    # docs/ros2.md: MPU-6050 (0.005 deg/s/sqrt(Hz) over 42 Hz)^2, (400 ug/sqrt(Hz) over 44 Hz)^2
    g, a = m["angular_velocity_covariance"], m["linear_acceleration_covariance"]
    assert g[0] == g[4] == g[8] == pytest.approx(3.198e-7, rel=1e-3) and g[1] == g[3] == 0.0
    assert a[0] == a[4] == a[8] == pytest.approx(6.770e-4, rel=1e-3)
    lsm = S.IMU_NOISE["lsm6ds3"]
    assert lsm.gyro_variance == pytest.approx(7.762e-7, rel=1e-3) and lsm.accel_variance == pytest.approx(4.051e-5,
                                                                                                         rel=1e-3)
    # no bias estimate yet: the raw rate
    assert S.imu_msg(reading(flags=FLAGS & ~P.SF_BIAS_VALID), STAMP, "i", lsm)["angular_velocity"]["z"] == 0.25


def test_battery_fields_nan_for_the_unmeasured_and_health():
    m = S.battery_msg(reading(mv=6900), STAMP, "base_link", cutoff_latched=False)
    assert m["voltage"] == 6.9 and m["present"] is True
    assert (m["power_supply_status"], m["power_supply_health"], m["power_supply_technology"]) == (0, 1, 0)
    for k in ("temperature", "current", "charge", "capacity", "design_capacity", "percentage"):
        assert math.isnan(m[k]), k
    assert m["cell_voltage"] == [] and m["cell_temperature"] == []
    assert S.battery_msg(reading(mv=6000), STAMP, "b", cutoff_latched=True)["power_supply_health"] == 3   # DEAD
    none = S.battery_msg(reading(flags=FLAGS & ~P.SF_HAS_BATTERY), STAMP, "b", False)
    assert none["present"] is False and math.isnan(none["voltage"]) and none["power_supply_health"] == 0


def by_name(statuses):
    return {name: (level, text, dict(values)) for name, level, text, values in statuses}


def test_every_reading_reaches_the_diagnostics():
    ok = by_name(S.sensor_statuses(reading(), 0, 7.0, 6.4, imu_errors=2))
    assert ok["e-stop"][:2] == (S.OK, "closed") and ok["battery"][:2] == (S.OK, "7.40 V")
    level, text, v = ok["imu"]
    assert (level, text) == (S.OK, "ok")
    assert v == {"state": "ok", "gyro_bias_z_rad_s": "0.01", "yaw_rate_rad_s": "0.24", "heading_source": "gyro",
                 "still": "True", "gyro_z_raw_rad_s": "0.25", "imu_errors": "2"}
    assert ok["battery"][2] == {"voltage_v": "7.400", "battery_warn_v": "7", "battery_cutoff_v": "6.4"}

    low = by_name(S.sensor_statuses(reading(mv=6900, flags=FLAGS | P.SF_BATTERY_LOW), 0, 7.0, 6.4))
    assert low["battery"][:2] == (S.WARN, "battery low: 6.90 V < battery_warn_v 7 V")
    cut = by_name(S.sensor_statuses(reading(mv=6000, flags=FLAGS | P.SF_BATTERY_LOW), P.FAULT_BATTERY_LOW, 7.0,
                                    6.4))
    assert cut["battery"][0] == S.ERROR and cut["battery"][1].startswith("battery cut-off: below 6.4 V")

    opened = by_name(S.sensor_statuses(reading(flags=FLAGS | P.SF_ESTOP_OPEN), P.FAULT_ESTOP, 7.0, 6.4))
    assert opened["e-stop"][:2] == (S.ERROR, "e-stop open")
    # STATE's bit, newer than the record, wins either way
    assert by_name(S.sensor_statuses(reading(), 0, 7.0, 6.4, estop_now=True))["e-stop"][1] == "e-stop open"
    latched = by_name(S.sensor_statuses(reading(), P.FAULT_ESTOP, 7.0, 6.4, estop_now=False))["e-stop"]
    assert latched[0] == S.ERROR and "FAULT_ESTOP latched" in latched[1]
    assert by_name(S.sensor_statuses(reading(flags=FLAGS & ~P.SF_HAS_ESTOP), 0, 7.0, 6.4))["e-stop"][1] == \
        "no e-stop input configured"

    for state, level in ((P.IMU_NO_ANSWER, S.ERROR), (P.IMU_WRONG_ID, S.ERROR), (P.IMU_STARTING, S.WARN),
                         (P.IMU_NONE, S.OK)):
        assert by_name(S.sensor_statuses(reading(imu=state), 0, 7.0, 6.4))["imu"][0] == level, state
    nothing = by_name(S.sensor_statuses(None, 0, 7.0, 6.4))
    assert nothing["battery"][0] == S.WARN and nothing["imu"][1] == "no sensor record received"


def test_a_recording_of_sensor_records_decodes_with_mcap_ros2(tmp_path):
    path = tmp_path / "s.mcap"
    with McapRecorder(path, imu_frame="imu_x", imu_part="lsm6ds3") as rec:
        rec.sensors(reading(t_us=1000))
        rec.sensors(reading(t_us=21000, imu=P.IMU_NO_ANSWER))           # no Imu without a working IMU
        rec.sensors(reading(t_us=41000, mv=6100), cutoff_latched=True)
        rec.sensors(reading(t_us=61000, flags=FLAGS & ~P.SF_HAS_BATTERY))  # no BatteryState without an input
        rec.diagnostics(6.0, {"fault_code": 0}, P.ST_ENABLED, sensors=S.sensor_statuses(reading(), 0, 7.0, 6.4))
    data = read_mcap(path)
    imu, bat = data["/imu/data_raw"], data["/battery_state"]
    assert len(imu) == 3 and len(bat) == 3
    m = imu[0][1]
    assert m.header.frame_id == "imu_x" and m.orientation_covariance[0] == -1.0
    assert m.angular_velocity.z == pytest.approx(0.24)
    assert m.angular_velocity_covariance[0] == S.IMU_NOISE["lsm6ds3"].gyro_variance
    assert [b.power_supply_health for _, b in bat] == [1, 1, 3]
    assert bat[2][1].voltage == pytest.approx(6.1) and math.isnan(bat[2][1].current)
    (_, tf), = data["/tf_static"]
    assert (tf.transforms[0].header.frame_id, tf.transforms[0].child_frame_id) == ("base_link", "imu_x")
    names = [st.name for st in data["/diagnostics"][0][1].status]
    assert names == ["viperdrive: motor board", "viperdrive: e-stop", "viperdrive: battery", "viperdrive: imu"]


class _SlowBoard:
    """A board's clock (timebase.Clock) at a set time and measured speed, for the recorder's log clock."""

    def __init__(self, now_s: float, speed: float):
        self.t = now_s
        self.speed = speed

    def now(self) -> float:
        return self.t


def test_a_board_samples_log_time_is_its_own_stamp_whatever_the_speeds_say():
    """The flake this fixes: the recorder mapped a sensor record's host time (from the clock sync's fit, made while
    the board ran at full speed) back through the board's speed now (0.67 on a loaded machine): two samples 40 ms
    apart came out 26.8 ms apart. A board that is a program stamps with its own time: exactly 40 ms, also across
    the u32 wrap of ticks_us; a stamp from another timeline falls back to the host time."""
    from viperdrive.recording.mcap import SAMPLE_AGE_MAX_S, HostTimesOnBoard, LogClock
    board = _SlowBoard(4294.967296 + 0.5, speed=0.67)       # just past the u32 wrap of its ticks_us
    clock = HostTimesOnBoard(LogClock(board))
    now_us = int(board.t * 1e6)
    stamps = [now_us - 200_000 + 40_000 * k for k in range(5)]          # 40 ms apart, the oldest 200 ms ago
    ns = [clock.sample_ns(0.0, us % (1 << 32)) for us in stamps]
    assert [b - a for a, b in zip(ns, ns[1:], strict=False)] == [40_000_000] * 4
    assert ns[-1] == clock.log.ns((now_us - 40_000) * 1e-6)
    # through host times mapped with the board's speed: what the recorder did before
    import time
    mono = time.monotonic()
    old = [clock.ns(mono - 0.2 + 0.04 * k) for k in range(5)]
    assert abs((old[1] - old[0]) - 26_800_000) < 200_000
    # a stamp older than SAMPLE_AGE_MAX_S (another timeline): the host time
    stale = (now_us - int((SAMPLE_AGE_MAX_S + 1) * 1e6)) % (1 << 32)
    # (ns(mono) reads the host's clock each call: equal to within the microseconds between the two calls)
    assert abs(clock.sample_ns(mono, stale) - clock.ns(mono)) < 1_000_000
    assert abs(clock.sample_ns(mono, None) - clock.ns(mono)) < 1_000_000
    taken_as_board_time = clock.log.ns((now_us - (SAMPLE_AGE_MAX_S + 1) * 1e6) * 1e-6)
    assert abs(clock.sample_ns(mono, stale) - taken_as_board_time) > 1e9
