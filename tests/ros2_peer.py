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

With --stream it prints each record as it is taken instead, one JSON line [kind, record] (kind: a key above), and
["end", {"sent", "matched_after", "stop_sent_at"}] last (and ["published", {"sent", "stop_sent_at"}] when the
publishing ends). With --until-stopped it publishes and listens until
SIGTERM, not for fixed times. Together they let a test wait on what the peer has seen (`Peer` below) and end the
peer when a condition holds, instead of guessing how many seconds a busy machine needs.
"""
import argparse
import json
import math
import random
import signal
import subprocess
import sys
import threading
import time

from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.node import RosNode, take_valid
from viperdrive.timebase import wait_until

KINDS = ("odom", "joints", "tf", "diagnostics", "imu", "battery")
UNTIL_STOPPED_MAX_S = 600.0         # a peer left behind by a failed test still ends


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
    p.add_argument("--stream", action="store_true", help="print each record as a JSON line when it is taken")
    p.add_argument("--until-stopped", action="store_true",
                   help="publish and listen until SIGTERM (--publish and --listen are not used)")
    a = p.parse_args(argv)
    if a.until_stopped:
        a.publish = a.listen = UNTIL_STOPPED_MAX_S
    stopped = []
    # SIGTERM ends the publishing early and the run normally (its JSON still printed): a caller keeps the peer in
    # the graph for as long as it needs it, however slow the machine, then lets it go
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    # SIGUSR1 ends the publishing only: the peer listens on (until SIGTERM with --until-stopped)
    quiet = []
    signal.signal(signal.SIGUSR1, lambda *_: quiet.append(True))

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

    streamed = dict.fromkeys(KINDS, 0)

    def drain():
        take()
        if a.stream:
            for kind in KINDS:
                for rec in out[kind][streamed[kind]:]:
                    print(json.dumps([kind, rec]), flush=True)
                streamed[kind] = len(out[kind])

    def take():
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
        if a.stream:
            print("matched" if writer.get_matched_subscriptions() else "not matched", file=sys.stderr, flush=True)
    period = 1.0 / a.rate
    rng = random.Random()
    start = time.monotonic()
    deadline = start
    while writer is not None and time.monotonic() - start < a.publish and not (stopped or quiet):
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
    if a.stream and writer is not None:
        print(json.dumps(["published", {"sent": out["sent"], "stop_sent_at": out["stop_sent_at"]}]), flush=True)
    end = time.monotonic() + a.listen
    while time.monotonic() < end and not (a.until_stopped and stopped):
        drain()
        time.sleep(0.01)
    drain()
    node.close()
    if a.stream:
        print(json.dumps(["end", {k: out[k] for k in ("sent", "matched_after", "stop_sent_at")}]), flush=True)
    else:
        json.dump(out, sys.stdout)
    return 0


class Peer:
    """This script as a process in --stream --until-stopped mode, seen from a test: `seen()` is what it has
    received so far (the keys of the JSON above), `wait(condition)` waits until condition(seen) holds, `stop()`
    ends it (SIGTERM) and returns the whole record. A test thus ends the peer on what it saw, not after a
    number of seconds. Deadlines are generous host seconds: they only bound a failure."""

    def __init__(self, namespace, *args, env):
        self.proc = subprocess.Popen([sys.executable, __file__, "--namespace", namespace, "--stream",
                                      "--until-stopped", *args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._lock = threading.Lock()
        self._rec = {k: [] for k in KINDS}
        self._err = []
        self._threads = [threading.Thread(target=self._read_out, daemon=True),
                         threading.Thread(target=self._read_err, daemon=True)]
        for th in self._threads:
            th.start()

    def _read_out(self):
        for line in self.proc.stdout:
            kind, rec = json.loads(line)
            with self._lock:
                if kind in ("published", "end"):
                    self._rec.update(rec)
                else:
                    self._rec[kind].append(rec)

    def _read_err(self):
        for line in self.proc.stderr:
            with self._lock:
                self._err.append(line)

    def stderr(self) -> str:
        with self._lock:
            return "".join(self._err)

    def seen(self) -> dict:
        with self._lock:
            return {k: list(v) if isinstance(v, list) else v for k, v in self._rec.items()}

    def wait(self, condition, seconds=30.0, what=None):
        """Until condition(seen()) returns something true (returned); WaitTimeout naming `what` otherwise."""
        def check():
            got = condition(self.seen())
            assert got or self.proc.poll() is None, f"the peer ended: {self.stderr()}"
            return got
        return wait_until(check, seconds, poll=0.02, what=what)

    def stop_publishing(self):
        self.proc.send_signal(signal.SIGUSR1)

    def stop(self, timeout=60.0) -> dict:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        for th in self._threads:
            th.join(timeout)
        assert rc == 0, self.stderr()
        return self.seen()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


if __name__ == "__main__":
    sys.exit(main())
