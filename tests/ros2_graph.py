# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The other side of an in-process bridge, as a second DDS participant in the test's process: a cmd_vel
publisher, odom and diagnostics readers in the bridge's namespace, and a client of the bridge's ~/clear_fault
service (std_srvs/Trigger, the request/reply topics rmw_cyclonedds_cpp uses). Tests and the soak
(tests/ros2_soak.py) drive the bridge through it as a ROS node would."""
from __future__ import annotations

import random
import time

from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.clearfault import CLEAR_FAULT_SERVICE
from viperdrive.ros2.node import RosNode, take_valid
from viperdrive.timebase import wait_until

LOCAL_ENV = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


class Graph:
    def __init__(self, namespace: str, domain: int, env=None, stamp_lag: float | None = None):
        """stamp_lag: publish TwistStamped stamped this many seconds before now (None: Twist)."""
        self.node = RosNode(namespace, domain_id=domain, env=LOCAL_ENV if env is None else env)
        self.stamp_lag = stamp_lag
        self.cmd = self.node.publisher("cmd_vel", msgs.Twist if stamp_lag is None else msgs.TwistStamped,
                                       qos.default_qos())
        self.r_odom = self.node.subscription("odom", msgs.Odometry, qos.default_qos(100))
        self.r_diag = self.node.subscription("/diagnostics", msgs.DiagnosticArray, qos.default_qos(100))
        self.w_clear, self.r_clear = self.node.client(CLEAR_FAULT_SERVICE, msgs.TriggerRequest,
                                                      msgs.TriggerResponse, qos.default_qos())
        self._client_guid = random.SystemRandom().getrandbits(63)
        self._seq = 0
        self.odom: list[tuple[float, float, float, float]] = []   # (taken at host s, stamp s, x, v) per message
        self.diag: list = []        # [(level, name, message, {key: value})] per message
        self.sent = 0

    def command(self, v: float, w: float = 0.0) -> None:
        twist = msgs.Twist(linear=msgs.Vector3(v, 0.0, 0.0), angular=msgs.Vector3(0.0, 0.0, w))
        if self.stamp_lag is None:
            self.cmd.write(twist)
        else:
            stamp = msgs.time_from_s(time.time() - self.stamp_lag)
            self.cmd.write(msgs.TwistStamped(header=msgs.Header(stamp=stamp, frame_id=""), twist=twist))
        self.sent += 1

    def spin_until(self, condition, seconds: float, clock, v: float | None = None, what: str | None = None):
        """Publish v (when given) and take what arrives every 20 ms of `clock`'s time until condition() is true;
        WaitTimeout when `seconds` of that time pass first (a board the machine runs slowly is waited for)."""
        def step():
            if v is not None:
                self.command(v)
            self.take()
            return condition()
        return wait_until(step, seconds, clock, poll=0.02, what=what)

    def take(self) -> None:
        now = time.monotonic()
        self.odom += [(now, msgs.time_to_s(s.header.stamp), s.pose.pose.position.x, s.twist.twist.linear.x)
                      for s in take_valid(self.r_odom, 100)]
        self.diag += [[(st.level, st.name, st.message, {kv.key: kv.value for kv in st.values}) for st in s.status]
                      for s in take_valid(self.r_diag, 100)]

    def statuses(self, name: str) -> list:
        return [st for arr in self.diag for st in arr if st[1] == name]

    def clear_fault(self, timeout: float = 20.0) -> tuple[bool, str]:
        """Call ~/clear_fault once the service is matched; (success, message) of its reply. The timeout is a
        deadline for DDS discovery and the bridge's next tick, not part of what is tested."""
        wait_until(lambda: self.w_clear.get_matched_subscriptions() and self.r_clear.get_matched_publications(),
                   timeout, poll=0.02, what="the ~/clear_fault service matched")
        self._seq += 1
        self.w_clear.write(msgs.TriggerRequest(client_guid=self._client_guid, sequence_number=self._seq))

        def reply():
            self.take()
            for r in take_valid(self.r_clear, 8):
                if r.client_guid == self._client_guid and r.sequence_number == self._seq:
                    return bool(r.success), r.message
            return None

        return wait_until(reply, timeout, poll=0.01, what="a ~/clear_fault reply")

    def close(self) -> None:
        self.node.close()
