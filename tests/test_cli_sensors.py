# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive info` and `viperdrive monitor` show the board's sensors (issue 13) on the virtual board: IMU state and
errors, gyro bias, battery volts against the warning and cut-off thresholds, the e-stop."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from viperdrive.rigs.virtual import VirtualBoard

pytestmark = [pytest.mark.board, pytest.mark.xdist_group("vboard")]

VIPERDRIVE = Path(sys.executable).parent / "viperdrive"


def run(*args, timeout=60):
    r = subprocess.run([str(VIPERDRIVE), *args], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_info_shows_imu_battery_and_estop():
    with VirtualBoard() as vb:
        vb.clock.sleep(1.0)                         # still for more than still_ms: the bias estimate exists
        d = json.loads(run("info", "--port", vb.url, "--json"))["sensors"]
        truth = vb.truth()
        assert d["record"] and d["imu"]["state"] == "ok" and d["imu"]["errors"] == 0
        assert d["imu"]["part_assumed"] == "mpu6050"
        assert abs(d["imu"]["gyro_bias_z_rad_s"] - truth["gyro_bias_z"]) < 5e-4
        assert abs(d["imu"]["accel_m_s2"][2] - 9.81) < 0.1
        assert d["battery"]["volts"] == pytest.approx(7.4, abs=0.02) and d["battery"]["low"] is False
        assert d["battery"]["warn_v"] == pytest.approx(7.0) and d["battery"]["cutoff_v"] == pytest.approx(6.4)
        assert d["estop"] == {"configured": True, "open": False}

        vb.fault("battery", volts=6.8)
        vb.fault("estop", open=True)
        vb.clock.sleep(0.2)                         # the battery reading's low-pass (~80 ms) has settled
        text = run("info", "--port", vb.url)
        assert "battery     6.80 V LOW; warning below 7 V, cut-off below 6.4 V" in text, text
        assert "e-stop      OPEN: outputs off" in text
        assert "imu         ok, 0 I2C errors (robot file assumes mpu6050); gyro " in text
        assert "FAULT 10" in text                  # FAULT_ESTOP latched

        vb.fault("imu", answer=False)
        vb.clock.sleep(0.3)                         # three of the sensor task's 100 Hz samples NACKed at least
        d = json.loads(run("info", "--port", vb.url, "--json"))["sensors"]
        assert d["imu"]["state"] == "no answer" and d["imu"]["errors"] > 0
        assert d["estop"]["open"] is True and d["battery"]["low"] is True


def test_monitor_json_lines_carry_yaw_rate_battery_estop_and_imu_state():
    with VirtualBoard() as vb:
        vb.clock.sleep(1.0)                         # still for more than still_ms: the bias estimate exists
        vb.fault("battery", volts=6.9)
        out = run("monitor", "--port", vb.url, "--duration", "2.5", "--sensors", "20", "--json")
        truth = vb.truth()
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) >= 5                          # four a second
    last = lines[-1]
    assert last["imu_state"] == "ok" and last["imu_errors"] == 0
    assert abs(last["gyro_bias_z_rad_s"] - truth["gyro_bias_z"]) < 5e-4
    assert abs(last["yaw_rate_rad_s"]) < 3e-3 and abs(last["gyro_z_rad_s"] - truth["gyro_bias_z"]) < 3e-3    # at rest
    assert last["battery_v"] == pytest.approx(6.9, abs=0.02) and last["battery_low"] is True
    assert last["estop_open"] is False
    assert 15 <= last["sensor_hz"] <= 21, last["sensor_hz"]
