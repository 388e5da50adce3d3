# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board sensors end to end on the virtual board (issue 13): SENSORS_DATA decoded to SI by Board, the e-stop and
battery through the control endpoint, an IMU that stops answering, and the CLI's words for the new faults."""
from __future__ import annotations

import math

import pytest

from viperdrive.board import Board, BoardDeenergized, SensorReading, sensor_reading
from viperdrive.cli.boardopen import FAULT_HINTS
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = [pytest.mark.board, pytest.mark.xdist_group("vboard")]


def test_sensor_reading_decodes_the_wire_units():
    v = P.unpack_sensors_data(P.pack_sensors_data(5, 1000, 1000, -2000, 500000, 150, -300, 9810, -1234, 7400,
                                                  P.SF_BIAS_VALID | P.SF_HAS_BATTERY | P.SF_GYRO_HEADING,
                                                  P.IMU_OK, P.ST_ENABLED)[3:-2])
    r = sensor_reading(v, 12.0, None)
    assert isinstance(r, SensorReading)
    assert r.gyro_rad_s == (0.001, -0.002, 0.5) and r.accel_m_s2 == (0.15, -0.3, 9.81)
    assert r.gyro_bias_z_rad_s == -0.001234 and math.isclose(r.yaw_rate_rad_s, 0.501234)
    assert r.battery_v == 7.4 and r.estop_open is None and r.imu_ok and r.heading_from_gyro and not r.still
    r = sensor_reading(v[:9] + (0, P.SF_HAS_ESTOP | P.SF_ESTOP_OPEN, P.IMU_NO_ANSWER, 0), 12.0, None)
    assert r.battery_v is None and r.gyro_bias_z_rad_s is None and r.estop_open is True
    assert r.imu_state_name == "no answer" and not r.imu_ok


def test_every_fault_has_words_and_a_hint():
    codes = [getattr(P, n) for n in dir(P) if n.startswith("FAULT_") and n not in ("FAULT_NAMES", "FAULT_CLEARED",
                                                                                    "FAULT_NONE")]
    assert P.FAULT_ESTOP in codes and P.FAULT_BATTERY_LOW in codes
    for c in codes:
        assert c in P.FAULT_NAMES and c in FAULT_HINTS, c


def _wait(pred, board: Board, timeout: float = 5.0) -> SensorReading:
    """The first SENSORS_DATA record for which pred holds (the stream carries the status byte too), within `timeout`
    s of board time."""
    def found():
        return next((rec for rec in board.sensor_readings() if pred(rec)), None)
    return wait_until(found, timeout, board.clock, poll=0.01, what="a SENSORS_DATA record as wanted")


def _until(fn, board: Board, timeout: float = 6.0):
    """fn() once it is truthy, within `timeout` s of board time."""
    return wait_until(fn, timeout, board.clock, poll=0.05)


def test_sensors_stream_estop_battery_and_imu_loss_on_the_virtual_board():
    with VirtualBoard() as vb, Board(vb.url) as b:
        assert b.sensors(50) == 50
        b.activate()
        r: list = []

        def span_s() -> float:                         # board seconds between the first and the last sample
            return ((r[-1].board_us - r[0].board_us) & 0xFFFFFFFF) / 1e6 if len(r) > 1 else 0.0

        def covered():                                  # still for 1.5 s of board time: the bias estimate
            r.extend(b.sensor_readings())
            return span_s() >= 1.5
        _until(covered, b)
        rate = (len(r) - 1) / span_s()
        assert abs(rate - 50.0) < 0.5, (len(r), span_s())      # 50 Hz on the board's own clock
        last = r[-1]
        truth = vb.truth()
        # the emulated MPU-6050's bias on z (0.6 deg/s in the robot file, drifting) is what the board estimated
        assert last.imu_ok and last.gyro_bias_z_rad_s is not None
        assert abs(last.gyro_bias_z_rad_s - truth["gyro_bias_z"]) < 5e-4, (last.gyro_bias_z_rad_s, truth["gyro_bias_z"])
        # at rest: g on z (the mean: one sample has ~0.03 m/s^2 of noise, 0.4 mg/sqrt(Hz) over 50 Hz)
        az = sum(x.accel_m_s2[2] for x in r if x.imu_ok) / len([x for x in r if x.imu_ok])
        assert abs(az - 9.81) < 0.01 and abs(last.battery_v - 7.4) < 0.02, (az, last.battery_v)
        assert last.estop_open is False and last.still and last.heading_from_gyro
        seqs = [x.seq for x in r]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "records lost on an idle link"

        # e-stop: the board cuts its outputs on its own; STATE says ESTOP and FAULT (read() reports the board
        # de-energized behind the host's back)
        b.write(0.0, 0.0)
        assert b.read().enabled
        vb.fault("estop", open=True)
        rec = _wait(lambda s: s.estop_open, b)
        assert rec.status & P.ST_ESTOP and rec.status & P.ST_FAULT and not rec.status & P.ST_ENABLED
        b.write(0.0, 0.0)
        with pytest.raises(BoardDeenergized) as e:
            for _ in range(20):
                b.read()
                b.write(0.0, 0.0)
        assert e.value.state.estop and e.value.state.faulted
        assert b.diag()["fault_code"] == P.FAULT_ESTOP
        assert b.clear_fault() == 0                     # still open: stays latched
        vb.fault("estop", open=False)
        _wait(lambda s: not s.estop_open, b)
        assert b.diag()["fault_code"] == P.FAULT_ESTOP  # closed, but not cleared yet
        assert b.clear_fault() == P.FAULT_ESTOP
        b.activate()

        # the pack: below battery_warn_v the status bit, and the reading
        vb.fault("battery", volts=6.8)
        rec = _wait(lambda s: s.battery_low and s.battery_v < 6.85, b)
        assert rec.status & P.ST_BATTERY_LOW and abs(rec.battery_v - 6.8) < 0.05
        vb.fault("battery", volts=7.4)

        # the IMU stops answering mid-run: a DIAG state, the heading falls back to the encoders, and back
        vb.fault("imu", answer=False)
        d = _until(lambda: (lambda d: d if d["imu_state"] == P.IMU_NO_ANSWER else None)(b.diag()), b)
        assert d and d["imu_errors"] >= 1 and d["imu"] == "no answer", d
        assert _until(lambda: b.odometry().heading_source == "encoders", b)
        rec = _wait(lambda s: not s.imu_ok, b)
        assert rec.imu_state == P.IMU_NO_ANSWER and rec.gyro_rad_s == (0.0, 0.0, 0.0) and not rec.heading_from_gyro
        vb.fault("imu", answer=True)
        assert _until(lambda: b.diag()["imu_state"] == P.IMU_OK, b)    # retried once a second, re-initialized

        # below battery_cutoff_v (6.4 V) for battery_ms (500 ms): latched, outputs off; back up, it stays latched
        vb.fault("battery", volts=6.0)
        rec = _wait(lambda s: s.status & P.ST_FAULT, b)
        assert not rec.status & P.ST_ENABLED and not vb.truth()["energized"]
        assert b.diag()["fault_code"] == P.FAULT_BATTERY_LOW
        vb.fault("battery", volts=7.4)
        _wait(lambda s: not s.battery_low, b)
        assert b.diag()["fault_code"] == P.FAULT_BATTERY_LOW
        assert b.clear_fault() == P.FAULT_BATTERY_LOW
        assert b.sensors(0) == 0


def _drive(b: Board, seconds: float, left: float, right: float) -> None:
    """One SET_VEL/STATE exchange per 10 ms of board time, for `seconds` of it (a 100 Hz host loop)."""
    t0 = b.clock.now()
    k = 0
    while b.clock.now() - t0 < seconds:
        b.write(left, right)
        k += 1
        b.clock.sleep(t0 + 0.01 * k - b.clock.now())
        b.read()


@pytest.mark.parametrize("wheel", ["left", "right"])
def test_without_edge_timing_the_gyro_catches_one_half_dead_encoder_at_a_crawl(wheel):
    """Counting only (vel_edges 0, as on a backend that does not time edges), on the default robot with its
    MPU-6050: half the counts of one wheel lost while driving straight at 0.09 m/s. The robot turns while the
    encoders say straight; the gyro witness latches that wheel's encoder fault within a second of board time
    (docs/firmware.md, "Encoder plausibility")."""
    cmd = 0.09 / 0.0325
    with VirtualBoard() as vb, Board(vb.url) as b:
        b.set_param("vel_edges", 0)
        assert b.sensors(50) == 50
        _wait(lambda s: s.imu_ok and s.gyro_bias_z_rad_s is not None, b)      # at rest: the bias is estimated
        b.activate()

        _drive(b, 1.0, cmd, cmd)
        assert vb.fault("encoder_drop", rate=0.5, wheel=wheel)["ok"]
        t0 = b.clock.now()
        with pytest.raises(BoardDeenergized, match="FAULT latched"):
            _drive(b, 3.0, cmd, cmd)
        t_fault = b.clock.now() - t0
        code = b.diag()["fault_code"]
    print(f"counting only, encoder_drop 0.5 on {wheel} at 0.09 m/s: FAULT {code} ({P.FAULT_NAMES[code]}) "
          f"{t_fault * 1e3:.0f} ms after the drop (the gyro witness)")
    assert code == (P.FAULT_ENCODER_LEFT if wheel == "left" else P.FAULT_ENCODER_RIGHT)
    assert t_fault < 1.0


def test_normal_driving_with_the_gyro_and_both_witnesses_trips_no_fault():
    """The default robot (tyre mismatch, a wheelbase 4 % wider than the parameter, turn scrub, an MPU-6050 with a
    0.3 % scale error): straight at several speeds, a reversal through the ramp, a fast turn, a hand braking a
    wheel, and a spin with wheel slip (an acceleration far beyond traction, wheels swapped every 0.4 s). The gyro
    witness and the edge regularity check both run; neither latches a fault."""
    r = 0.0325
    with VirtualBoard() as vb, Board(vb.url) as b:
        assert b.sensors(50) == 50
        _wait(lambda s: s.imu_ok and s.gyro_bias_z_rad_s is not None, b)
        b.activate()

        for v in (0.03, 0.09, 0.3, 0.5):
            _drive(b, 1.0, v / r, v / r)
        _drive(b, 1.5, -0.5 / r, -0.5 / r)
        _drive(b, 1.0, (0.4 - 3.0 * 0.076) / r, (0.4 + 3.0 * 0.076) / r)
        _drive(b, 1.0, -2.0, 2.0)                                   # a slow turn in place
        vb.push("left", -0.3, duration_s=0.4)
        _drive(b, 1.5, 0.2 / r, 0.2 / r)
        b.set_param("max_accel", 5000.0)
        slip = vb.truth()["slip_distance"]
        for k in range(5):
            s = 1 if k % 2 else -1
            _drive(b, 0.4, 16.0 * s, -16.0 * s)
        slip = vb.truth()["slip_distance"] - slip
        d = b.diag()
    print(f"normal driving on the default robot with its gyro ({slip:.2f} m of slip): fault {d['fault_code']}")
    assert d["fault_code"] == 0 and slip > 0.1
