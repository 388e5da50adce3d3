# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A stand-in for the rest of a robot's ROS 2 graph around `viperdrive ros2 --ekf`, as its own process with its own
DDS participant (tests/test_ros2_ekf.py, bench/bench_live_ekf.py):

- drives: cmd_vel (TwistStamped) at 20 Hz, v constant, the turn rate changing sign every --swap s (figure-8s);
- a localizer: PoseWithCovarianceStamped on `pose` at --pose-rate Hz from the virtual board's ground truth (its
  control endpoint), stamped when sampled and published --lag s later, silent from --drop-from to --drop-to s;
- a gyro: sensor_msgs/Imu on `imu` (angular velocity z = the truth's yaw rate + noise) at --imu-rate Hz, until the
  board's own IMU reaches the bridge;
- the kidnap: the robot is lifted for --lift s in the middle of the dropout while the wheels keep driving, so the
  wheel odometry runs on while the robot stands still: the fix comes back that far away from the estimate;
- records odometry/filtered and the bridge's ekf diagnostics.
At the end it prints one JSON object: {"t0": graph s at start, "filtered": [[t_stamp, x, y, yaw, var_x, var_y]],
"truth": [[graph s, x, y, theta]], "diagnostics": [[graph s, level, message, {key: value}]], "lift": [from, to],
"clock": the last /clock seen (s) or None, "clock_board_s": the board time read just after it}.
The graph's time is the wall clock, or with --sim-time --port URL the board's own time (as the bridge's --sim-time:
its stamps, its schedule of drops and lifts, the same instant for the same board time in every process).
Discovery and domain come from the environment (ROS_DOMAIN_ID, ...).
"""
import argparse
import json
import random
import socket
import sys
import time

from viperdrive.boardtime.registry import clock_for
from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.node import RosNode, take_valid


class Control:
    """The virtual board's control endpoint (JSON lines over TCP)."""

    def __init__(self, address):
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.f = self.sock.makefile("rb")

    def __call__(self, request):
        self.sock.sendall((json.dumps(request) + "\n").encode())
        reply = json.loads(self.f.readline())
        if not reply.get("ok"):
            raise RuntimeError(f"control {request}: {reply}")
        return reply


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--namespace", default="/")
    p.add_argument("--control", required=True, help="HOST:PORT of the virtual board's control endpoint")
    p.add_argument("--duration", type=float, default=30.0)
    p.add_argument("--v", type=float, default=0.25)
    p.add_argument("--w", type=float, default=0.35)
    p.add_argument("--swap", type=float, default=9.0)
    p.add_argument("--pose-rate", type=float, default=1.0)
    p.add_argument("--pose-sigma", type=float, default=0.03)
    p.add_argument("--lag", type=float, default=0.3)
    p.add_argument("--imu-rate", type=float, default=50.0)
    p.add_argument("--gyro-sigma", type=float, default=0.005)
    p.add_argument("--drop-from", type=float, default=8.0)
    p.add_argument("--drop-to", type=float, default=18.0)
    p.add_argument("--lift", type=float, default=2.0, help="s lifted, centred in the dropout (0: none)")
    p.add_argument("--wait-match", type=float, default=15.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sim-time", action="store_true", help="the board's time is the graph's (needs --port)")
    p.add_argument("--port", default=None, help="the virtual board's URL (its clock, for --sim-time)")
    a = p.parse_args(argv)
    if a.sim_time:
        board_clock = clock_for(a.port)
        clock = board_clock.now           # the schedule and every stamp: board seconds
        graph_now = board_clock.now
    else:
        clock = time.monotonic
        graph_now = time.time

    rng = random.Random(a.seed)
    control = Control(a.control)
    node = RosNode(a.namespace)
    w_cmd = node.publisher("cmd_vel", msgs.TwistStamped, qos.default_qos())
    w_pose = node.publisher("pose", msgs.PoseWithCovarianceStamped, qos.default_qos())
    w_imu = node.publisher("imu", msgs.Imu, qos.command_qos())
    r_filtered = node.subscription("odometry/filtered", msgs.Odometry, qos.default_qos(depth=100))
    r_diag = node.subscription("/diagnostics", msgs.DiagnosticArray, qos.default_qos())
    r_clock = node.subscription("/clock", msgs.Clock, qos.command_qos(depth=1))
    out = {"filtered": [], "truth": [], "diagnostics": [], "lift": None, "clock": None, "clock_board_s": None}

    def drain():
        for s in take_valid(r_filtered, 256):
            c = s.pose.covariance
            out["filtered"].append([msgs.time_to_s(s.header.stamp), s.pose.pose.position.x, s.pose.pose.position.y,
                                    msgs.yaw_from_quaternion(s.pose.pose.orientation), c[0], c[7]])
        for s in take_valid(r_clock, 64):
            out["clock"] = msgs.time_to_s(s.clock)
            out["clock_board_s"] = graph_now() if a.sim_time else None
        now = graph_now()
        for s in take_valid(r_diag):
            for st in s.status:
                if st.name.endswith(": ekf"):
                    out["diagnostics"].append([now, st.level, st.message, {kv.key: kv.value for kv in st.values}])

    start = time.monotonic()
    while time.monotonic() - start < a.wait_match and not (
            w_cmd.get_matched_subscriptions() and w_pose.get_matched_subscriptions()
            and w_imu.get_matched_subscriptions()):
        time.sleep(0.05)
    control({"cmd": "reset", "what": "pose"})
    t0 = graph_now()
    out["t0"] = t0
    mono0 = clock()
    pending = []            # (publish at clock(), message)
    next_cmd = next_imu = next_pose = mono0
    lift_from = (a.drop_from + a.drop_to - a.lift) / 2.0
    lifted = False
    while True:
        now = clock()
        el = now - mono0
        if el >= a.duration:
            break
        if a.lift > 0 and not lifted and lift_from <= el < lift_from + a.lift:
            control({"cmd": "fault", "kind": "lift", "on": True})
            lifted = True
            out["lift"] = [graph_now() - t0, None]
        elif lifted and el >= lift_from + a.lift:
            control({"cmd": "fault", "kind": "lift", "on": False})
            lifted = False
            out["lift"][1] = graph_now() - t0
        if now >= next_cmd:
            w = a.w if int(el // a.swap) % 2 == 0 else -a.w
            w_cmd.write(msgs.TwistStamped(header=msgs.Header(stamp=msgs.time_from_s(graph_now()),
                                                             frame_id="base_link"),
                                          twist=msgs.Twist(linear=msgs.Vector3(a.v, 0.0, 0.0),
                                                           angular=msgs.Vector3(0.0, 0.0, w))))
            next_cmd += 0.05
        if now >= next_imu or now >= next_pose:
            # stamped when asked: the board answers as it reads the request (its time stops while it is not
            # scheduled, and the robot with it), and this process may be descheduled between the reply and a later
            # clock reading; the bridge stamps odometry the same way (Link.sampled_at). On sim time the truth's
            # own board time is its stamp, exactly
            stamp = graph_now()
            truth = control({"cmd": "truth"})
            if a.sim_time:
                stamp = truth["board_s"]
            out["truth"].append([stamp, truth["x"], truth["y"], truth["theta"]])
            if now >= next_imu:
                gc = [0.0] * 9
                gc[0] = gc[4] = 1e-4
                gc[8] = a.gyro_sigma ** 2
                w_imu.write(msgs.Imu(header=msgs.Header(stamp=msgs.time_from_s(stamp), frame_id="base_link"),
                                     orientation_covariance=[-1.0] + [0.0] * 8,
                                     angular_velocity=msgs.Vector3(0.0, 0.0, truth["omega"]
                                                                   + rng.gauss(0.0, a.gyro_sigma)),
                                     angular_velocity_covariance=gc,
                                     linear_acceleration_covariance=[-1.0] + [0.0] * 8))
                next_imu += 1.0 / a.imu_rate
            if now >= next_pose:
                if not (a.drop_from <= el < a.drop_to):
                    cov = [0.0] * 36
                    cov[0] = cov[7] = a.pose_sigma ** 2
                    cov[14] = cov[21] = cov[28] = cov[35] = 1e6
                    pose = msgs.PoseWithCovarianceStamped(
                        header=msgs.Header(stamp=msgs.time_from_s(stamp), frame_id="odom"),
                        pose=msgs.PoseWithCovariance(pose=msgs.Pose(position=msgs.Point(
                            truth["x"] + rng.gauss(0.0, a.pose_sigma), truth["y"] + rng.gauss(0.0, a.pose_sigma),
                            0.0)), covariance=cov))
                    pending.append((now + a.lag, pose))
                next_pose += 1.0 / a.pose_rate
        while pending and pending[0][0] <= now:
            w_pose.write(pending.pop(0)[1])
        drain()
        time.sleep(0.002)
    w_cmd.write(msgs.TwistStamped(header=msgs.Header(stamp=msgs.time_from_s(graph_now()), frame_id="base_link")))
    if lifted:
        control({"cmd": "fault", "kind": "lift", "on": False})
    truth = control({"cmd": "truth"})
    t_end = truth["board_s"] if a.sim_time else time.time()
    out["truth"].append([t_end, truth["x"], truth["y"], truth["theta"]])
    # listen 1.5 s more, and on until an estimate stamped after that last truth came: a filter that lags (its
    # process starved on a busy machine) is waited for, so "the end" is the filter's estimate of the end
    end = time.monotonic() + 1.5
    deadline = time.monotonic() + 60.0
    while time.monotonic() < end or (
            (not out["filtered"] or out["filtered"][-1][0] < t_end) and time.monotonic() < deadline):
        drain()
        time.sleep(0.02)
    node.close()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
