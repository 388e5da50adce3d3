# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A stand-in for a ROS 2 node, run as its own process with its own DDS participant (tests, bench).

It publishes cmd_vel (Twist or TwistStamped) at a rate for a while (or until SIGTERM), then stops publishing but keeps
listening;
meanwhile it records odom, joint_states, tf and diagnostics. At the end it prints one JSON object on stdout:
  {"sent": n, "stop_sent_at": t, "odom": [[t, x, y, theta, v, w, frame, child, cov00, twcov00], ...],
   "joints": [[t, names, pos_l, pos_r, vel_l, vel_r], ...], "tf": [[t, parent, child, x, y], ...],
   "diagnostics": [[t, [[level, name, message, {key: value}], ...]], ...],
   "imu": [[t, stamp, frame, wx, wy, wz, ax, ay, az, orientation_cov0, angular_velocity_cov, accel_cov], ...],
   "battery": [[t, stamp, frame, voltage, present, status, health, current, percentage], ...]}
(stamp: the header stamp in ROS time, wall-clock seconds; NaN written as null)
t are host monotonic seconds (same clock as the caller's on this host).
Discovery and domain come from the environment (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE, ...).
"""
import argparse
import json
import math
import random
import signal
import sys
import time

from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.node import RosNode, take_valid


def _num(x):
    return None if math.isnan(x) else x


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--namespace", default="/")
    p.add_argument("--type", choices=("twist", "stamped", "none"), default="stamped")
    p.add_argument("--v", type=float, default=0.0)
    p.add_argument("--w", type=float, default=0.0)
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--wait-match", type=float, default=10.0, help="s to wait for the bridge's reader to match")
    p.add_argument("--publish", type=float, default=2.0, help="s of publishing")
    p.add_argument("--listen", type=float, default=1.0, help="s of listening after publishing stopped")
    p.add_argument("--stale", type=float, default=0.0, help="stamp TwistStamped this many s in the past")
    p.add_argument("--jitter", type=float, default=0.0,
                   help="s of random extra delay per period (decorrelates the send phase from the bridge's tick)")
    p.add_argument("--wait-diagnostics", action="store_true",
                   help="first wait for a /diagnostics writer to match and say so on stderr (a line)")
    a = p.parse_args(argv)
    stopped = []
    # SIGTERM ends the publishing early and the run normally (its JSON still printed): a caller keeps the peer in
    # the graph for as long as it needs it, however slow the machine, then lets it go
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))

    node = RosNode(a.namespace)
    r_odom = node.subscription("odom", msgs.Odometry, qos.default_qos())
    r_joints = node.subscription("joint_states", msgs.JointState, qos.default_qos())
    r_tf = node.subscription("/tf", msgs.TFMessage, qos.tf_qos())
    r_diag = node.subscription("/diagnostics", msgs.DiagnosticArray, qos.default_qos())
    # the bridge's writers keep 5 (sensor_qos); a deeper reader history keeps every sample between two drains of
    # this loop on a loaded machine (history is not part of the request/offer match)
    r_imu = node.subscription("imu/data_raw", msgs.Imu, qos.default_qos(200))
    r_battery = node.subscription("battery_state", msgs.BatteryState, qos.default_qos(200))
    writer = None
    if a.type != "none":
        writer = node.publisher("cmd_vel", msgs.TwistStamped if a.type == "stamped" else msgs.Twist,
                                qos.default_qos())
    out = {"sent": 0, "matched_after": None, "stop_sent_at": None, "odom": [], "joints": [], "tf": [],
           "diagnostics": [], "imu": [], "battery": []}

    def drain():
        t = time.monotonic()
        for s in take_valid(r_odom):
            pose, tw = s.pose.pose, s.twist.twist
            out["odom"].append([t, pose.position.x, pose.position.y, msgs.yaw_from_quaternion(pose.orientation),
                                tw.linear.x, tw.angular.z, s.header.frame_id, s.child_frame_id,
                                s.pose.covariance[0], s.twist.covariance[0]])
        for s in take_valid(r_joints):
            out["joints"].append([t, list(s.name), *s.position, *s.velocity])
        for s in take_valid(r_tf):
            for tr in s.transforms:
                out["tf"].append([t, tr.header.frame_id, tr.child_frame_id, tr.transform.translation.x,
                                  tr.transform.translation.y])
        for s in take_valid(r_imu, 64):
            w, a = s.angular_velocity, s.linear_acceleration
            out["imu"].append([t, msgs.time_to_s(s.header.stamp), s.header.frame_id, w.x, w.y, w.z, a.x, a.y, a.z,
                               s.orientation_covariance[0], list(s.angular_velocity_covariance),
                               list(s.linear_acceleration_covariance)])
        for s in take_valid(r_battery, 64):
            out["battery"].append([t, msgs.time_to_s(s.header.stamp), s.header.frame_id, _num(s.voltage), s.present,
                                   s.power_supply_status, s.power_supply_health, _num(s.current),
                                   _num(s.percentage)])
        for s in take_valid(r_diag):
            out["diagnostics"].append([t, [[st.level, st.name, st.message, {kv.key: kv.value for kv in st.values}]
                                           for st in s.status]])

    t0 = time.monotonic()
    if a.wait_diagnostics:
        # tell a waiting test (a line on stderr) once the bridge's diagnostics writer is matched: from here on the
        # bridge's messages reach us, its last one included
        while not r_diag.get_matched_publications() and time.monotonic() - t0 < a.wait_match:
            drain()
            time.sleep(0.02)
        print("diagnostics matched" if r_diag.get_matched_publications() else "diagnostics not matched",
              file=sys.stderr, flush=True)
    if writer is None:
        # listening only: wait for the bridge's data, then say so on stderr (the caller injects its faults after)
        while not (out["diagnostics"] and out["battery"]) and time.monotonic() - t0 < a.wait_match:
            drain()
            time.sleep(0.02)
        print("ready", file=sys.stderr, flush=True)
    if writer is not None:
        while not writer.get_matched_subscriptions() and time.monotonic() - t0 < a.wait_match:
            drain()
            time.sleep(0.02)
        out["matched_after"] = time.monotonic() - t0
    period = 1.0 / a.rate
    rng = random.Random()
    start = time.monotonic()
    deadline = start
    while writer is not None and time.monotonic() - start < a.publish and not stopped:
        twist = msgs.Twist(linear=msgs.Vector3(a.v, 0.0, 0.0), angular=msgs.Vector3(0.0, 0.0, a.w))
        if a.type == "stamped":
            stamp = msgs.time_from_s(time.time() - a.stale)
            writer.write(msgs.TwistStamped(header=msgs.Header(stamp=stamp, frame_id="base_link"), twist=twist))
        else:
            writer.write(twist)
        out["sent"] += 1
        drain()
        deadline += period + (rng.uniform(0.0, a.jitter) if a.jitter else 0.0)
        time.sleep(max(0.0, deadline - time.monotonic()))
    out["stop_sent_at"] = time.monotonic()
    end = time.monotonic() + a.listen
    while time.monotonic() < end:
        drain()
        time.sleep(0.01)
    node.close()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
