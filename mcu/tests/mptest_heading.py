# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Board odometry heading with and without the gyro (issue 13), closed loop in simulated time: the firmware's App
# (control step, sensor task, odometry) on the virtual board's plant (sim/plant.py, the default robot with its
# emulated MPU-6050 on the I2C bus) with the right wheel 1% larger than the left, driving straight with equal
# wheel commands. The robot really curves (0.01 x distance / wheel separation rad); the encoders do not see it,
# the gyro does. bench/bench_heading.py measures the same on the real-time virtual board over 10 m.
import math

import planthal
from viperdrive import app as app_mod
from viperdrive import boardcfg
from viperdrive.shared import protocol as P

HZ = 500


def _wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


def _drive(with_imu, distance=4.0, speed=0.45, mismatch=0.01):
    d = planthal.load_robot("default")
    d["wheel_radius_scale"] = {"left": 1.0, "right": 1.0 + mismatch}
    pl = planthal.plant_mod.Plant(d)
    cfg = {"backend": "sim", "counts_per_rev": 4096, "counter_bits": 16, "control_hz": HZ, "name": "heading"}
    if with_imu:
        cfg["imu"] = {"part": "mpu6050"}
    cfg = boardcfg.validate(cfg)
    hal = planthal.PlantHal(cfg, pl, HZ)
    a = app_mod.App(hal, cfg, params_path="/tmp/viperdrive-mptest-heading.json", link=False, watchdog=False)
    a.start()
    assert a.enable(True)
    # 1 s still: the sensor task estimates the gyro bias (still_ms 500 ms, then a 32-sample window)
    for i in range(HZ):
        hal.fire(1)
        if i % 5 == 0:
            a.set_velocity(0, 0)
        a.service()
    o0 = a.odom()
    pl.reset_pose()
    w = speed / d["wheel_radius_m"] * 4096 / (2 * math.pi)     # counts/s
    i = 0
    while pl.distance < distance:
        hal.fire(1)
        if i % 5 == 0:
            a.set_velocity(int(w), int(w))
        a.service()
        i += 1
    for i in range(HZ):                         # stop, at rest
        hal.fire(1)
        if i % 5 == 0:
            a.set_velocity(0, 0)
        a.service()
    o = a.odom()
    th = pl.theta
    err = abs(_wrap((o[3] - o0[3]) / P.ODOM_ANGLE_SCALE - th))
    err_enc = abs(_wrap((o[4] - o0[4]) / P.ODOM_ANGLE_SCALE - th))
    return th, err, err_enc, o[5], a.sensors


def test_heading_with_and_without_the_gyro_over_a_1_percent_wheel_mismatch():
    th, err_g, err_e, src, s = _drive(True)
    th2, err_noimu, err_e2, src2, s2 = _drive(False)
    print("4 m, right wheel +1%%: true heading %.4f rad; with the gyro: odometry error %.5f rad (encoder heading "
          "alongside %.4f); without an IMU: %.4f rad; ratio %.1f" % (th, err_g, err_e, err_noimu, err_noimu / err_g))
    # the robot curved: 0.01 x 4 m / 0.152 m = 0.26 rad (a little less: the wheels slip on the turn's inside)
    assert 0.2 < th < 0.3 and 0.2 < th2 < 0.3
    assert src == P.ODOM_HEADING_GYRO and s.imu_state == P.IMU_OK and s.bias_valid
    assert src2 == P.ODOM_HEADING_ENCODERS and s2.imu_state == P.IMU_NONE
    # without an IMU the odometry's heading is the encoders' (both columns agree), and it missed the curve
    assert err_noimu > 0.2 and abs(err_noimu - err_e2) < 1e-5
    # with the gyro: the encoder heading alongside is as wrong as without, the odometry's is >= 5x better
    assert abs(err_e - err_noimu) < 0.02
    assert err_g < 0.02 and err_noimu >= 5 * err_g, (err_g, err_noimu)
