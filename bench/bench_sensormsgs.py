# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a board sensor record costs the host: building its Imu and BatteryState (viperdrive.messages.sensors), turning
them into the bridge's IDL structs and writing them to DDS (a local participant, no reader), and recording them to MCAP.
Per record, in this process; the share is of a 10 ms loop period at ros2.sensor_rate 50 Hz (half a record per
period at update_rate 100 Hz).

Prints:
  sensors_fields n=... record_us=...                       imu_msg + battery_msg dicts
  sensors_ros2 n=... record_us=... fields_us=... idl_us=... write_us=... period_share_pct=...
  sensors_mcap n=... record_us=... period_share_pct=...
"""
import os
import random
import tempfile
import time
from pathlib import Path

from viperdrive.board import sensor_reading
from viperdrive.messages import sensors as S
from viperdrive.shared import protocol as P

N = 2000
PERIOD_US = 10000.0         # update_rate 100 Hz
RECORDS_PER_PERIOD = 0.5    # sensor_rate 50 Hz


def readings(n):
    flags = P.SF_HAS_BATTERY | P.SF_HAS_ESTOP | P.SF_BIAS_VALID
    return [sensor_reading((i & 0xFFFF, i * 20000, 1000, -2000, 250000 + i, 150, -300, 9810, 10000, 7400, flags,
                            P.IMU_OK, P.ST_ENABLED), 1.0 + i * 0.02, 1.0 + i * 0.02) for i in range(n)]


def per_record_us(t0, t1, n):
    return (t1 - t0) / n * 1e6


def main():
    rs = readings(N)
    stamp = {"sec": 1, "nanosec": 0}
    noise = S.IMU_NOISE["mpu6050"]

    t0 = time.perf_counter()
    dicts = [(S.imu_msg(r, stamp, "imu_link", noise), S.battery_msg(r, stamp, "base_link", False)) for r in rs]
    fields_us = per_record_us(t0, time.perf_counter(), N)
    print(f"sensors_fields n={N} record_us={fields_us:.1f}")

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    from viperdrive.ros2 import msgs, qos
    from viperdrive.ros2.node import RosNode
    node = RosNode("/bench_sensors", domain_id=random.randint(150, 230))
    try:
        w_imu = node.publisher("imu/data_raw", msgs.Imu, qos.sensor_qos())
        w_bat = node.publisher("battery_state", msgs.BatteryState, qos.sensor_qos())
        t0 = time.perf_counter()
        structs = [(msgs.from_fields(msgs.Imu, a), msgs.from_fields(msgs.BatteryState, b)) for a, b in dicts]
        idl_us = per_record_us(t0, time.perf_counter(), N)
        t0 = time.perf_counter()
        for a, b in structs:
            w_imu.write(a)
            w_bat.write(b)
        write_us = per_record_us(t0, time.perf_counter(), N)
    finally:
        node.close()
    total = fields_us + idl_us + write_us
    print(f"sensors_ros2 n={N} record_us={total:.1f} fields_us={fields_us:.1f} idl_us={idl_us:.1f} "
          f"write_us={write_us:.1f} period_share_pct={100 * total * RECORDS_PER_PERIOD / PERIOD_US:.2f}")

    from viperdrive.recording.mcap import McapRecorder
    with tempfile.TemporaryDirectory() as tmp:
        rec = McapRecorder(Path(tmp) / "b.mcap")
        t0 = time.perf_counter()
        for r in rs:
            rec.sensors(r)
        mcap_us = per_record_us(t0, time.perf_counter(), N)
        rec.close()
    print(f"sensors_mcap n={N} record_us={mcap_us:.1f} "
          f"period_share_pct={100 * mcap_us * RECORDS_PER_PERIOD / PERIOD_US:.2f}")


if __name__ == "__main__":
    main()
