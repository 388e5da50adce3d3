# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The bridge's struct-built CDR (viperdrive.ros2.cdr) is cyclonedds' serializer byte for byte: random messages of
every type it encodes (frame names of every length, so every alignment; sequences empty and not; NaN and the
extremes), compared with the message's own serialize(); write() leaves XCDR2 and other types to cyclonedds and
the message as it was (picklable: the live filter's process gets it); and a DataWriter sends the fast bytes, which
a DataReader decodes to the same message."""
from __future__ import annotations

import math
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viperdrive.ros2 import cdr, msgs

pytestmark = pytest.mark.ros2

F64 = st.floats(allow_nan=False, width=64) | st.sampled_from([0.0, -0.0, math.inf, -math.inf, 1e308, -5e-324])
F32 = st.floats(allow_nan=False, width=32)
NAME = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=13)
STAMP = st.builds(msgs.Time, sec=st.integers(-2**31, 2**31 - 1), nanosec=st.integers(0, 2**32 - 1))
HEADER = st.builds(msgs.Header, stamp=STAMP, frame_id=NAME)
VEC = st.builds(msgs.Vector3, x=F64, y=F64, z=F64)
QUAT = st.builds(msgs.Quaternion, x=F64, y=F64, z=F64, w=F64)


def _odometry(h, child, p, q, c1, v, w, c2):
    return msgs.Odometry(header=h, child_frame_id=child,
                         pose=msgs.PoseWithCovariance(pose=msgs.Pose(position=msgs.Point(p.x, p.y, p.z),
                                                                     orientation=q), covariance=c1),
                         twist=msgs.TwistWithCovariance(twist=msgs.Twist(linear=v, angular=w), covariance=c2))


ODOMETRY = st.builds(_odometry, HEADER, NAME, VEC, QUAT, st.lists(F64, min_size=36, max_size=36), VEC, VEC,
                     st.lists(F64, min_size=36, max_size=36))
TF = st.builds(msgs.TFMessage, transforms=st.lists(st.builds(
    msgs.TransformStamped, header=HEADER, child_frame_id=NAME,
    transform=st.builds(msgs.Transform, translation=VEC, rotation=QUAT)), max_size=3))
JOINTS = st.builds(msgs.JointState, header=HEADER, name=st.lists(NAME, max_size=3),
                   position=st.lists(F64, max_size=3), velocity=st.lists(F64, max_size=3),
                   effort=st.lists(F64, max_size=3))
COV9 = st.lists(F64, min_size=9, max_size=9)
IMU = st.builds(msgs.Imu, header=HEADER, orientation=QUAT, orientation_covariance=COV9, angular_velocity=VEC,
                angular_velocity_covariance=COV9, linear_acceleration=VEC, linear_acceleration_covariance=COV9)
BATTERY = st.builds(msgs.BatteryState, header=HEADER, voltage=F32, temperature=F32, current=F32, charge=F32,
                    capacity=F32, design_capacity=F32, percentage=F32, power_supply_status=st.integers(0, 255),
                    power_supply_health=st.integers(0, 255), power_supply_technology=st.integers(0, 255),
                    present=st.booleans(), cell_voltage=st.lists(F32, max_size=4),
                    cell_temperature=st.lists(F32, max_size=4), location=NAME, serial_number=NAME)
DIAGNOSTICS = st.builds(msgs.DiagnosticArray, header=HEADER, status=st.lists(st.builds(
    msgs.DiagnosticStatus, level=st.integers(0, 255), name=NAME, message=NAME, hardware_id=NAME,
    values=st.lists(st.builds(msgs.KeyValue, key=NAME, value=NAME), max_size=4)), max_size=3))


def test_every_type_the_bridge_publishes_each_cycle_has_an_encoder():
    assert set(cdr.ENCODERS) == {msgs.Odometry, msgs.TFMessage, msgs.JointState, msgs.Imu, msgs.BatteryState,
                                 msgs.DiagnosticArray}


@settings(max_examples=150, deadline=None)
@given(st.one_of(ODOMETRY, TF, JOINTS, IMU, BATTERY, DIAGNOSTICS))
def test_the_fast_bytes_are_the_serializers(msg):
    assert cdr.encode(msg) == msg.serialize()


def test_nan_is_carried_bit_for_bit():
    m = msgs.odometry(msgs.time_from_s(1.0), "odom", "base_link", (math.nan, 0.0, 0.0), (0.0, 0.0), [math.nan] * 36,
                      [0.0] * 36)
    fast, own = cdr.encode(m), m.serialize()
    assert fast == own
    # position.x, the first double: after the encapsulation (4), the stamp (8), "odom" (4 + 5, padded to 20) and
    # "base_link" (4 + 10 = 34, padded to 40: a double is 8-aligned in the payload)
    x = struct.unpack_from("<d", fast, 4 + 40)[0]
    assert math.isnan(x)


class _Writer:
    """A DataWriter's part that matters here: it serializes the sample as cyclonedds' write() does."""

    def __init__(self, version_2: bool = False):
        self.version_2 = version_2
        self.sent: list[bytes] = []

    def write(self, sample) -> None:
        self.sent.append(sample.serialize(use_version_2=self.version_2))


def test_write_sends_the_fast_bytes_leaves_xcdr2_and_other_types_to_cyclonedds_and_the_message_as_it_was():
    import pickle
    m = msgs.odometry(msgs.time_from_s(2.5), "odom", "base_link", (1.0, 2.0, 0.5), (0.3, 0.1), [0.0] * 36,
                      [0.0] * 36)
    w1, w2 = _Writer(), _Writer(version_2=True)
    cdr.write(w1, m)
    cdr.write(w2, m)
    assert w1.sent == [cdr.encode(m)] and w2.sent == [msgs.Odometry.serialize(m, use_version_2=True)]
    # nothing of the message changed: it is handed on (the live filter's process gets it pickled)
    assert "serialize" not in vars(m) and pickle.loads(pickle.dumps(m)) == m
    clock = msgs.Clock(clock=msgs.time_from_s(1.0))        # a type without a fast encoder
    cdr.write(w1, clock)
    assert w1.sent[-1] == clock.serialize() and "serialize" not in vars(clock)


def test_a_reader_decodes_the_fast_bytes_to_the_same_message():
    from viperdrive.ros2 import qos
    from viperdrive.ros2.node import RosNode, take_valid
    from viperdrive.timebase import wait_until

    domain = random.SystemRandom().randint(120, 220)
    env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    a = RosNode("fastcdr", domain_id=domain, env=env)
    b = RosNode("fastcdr", domain_id=domain, env=env)
    w = a.publisher("odom", msgs.Odometry, qos.default_qos())
    r = b.subscription("odom", msgs.Odometry, qos.default_qos(10))
    wait_until(lambda: w.get_matched_subscriptions() and r.get_matched_publications(), 20.0, poll=0.02,
               what="the odom reader matched")
    sent = msgs.odometry(msgs.time_from_s(7.25), "odom", "base_link", (1.5, -2.0, 0.75), (0.4, -0.2),
                         [float(i) for i in range(36)], [float(-i) for i in range(36)])
    cdr.write(w, sent)
    got = wait_until(lambda: take_valid(r, 10), 20.0, poll=0.02, what="the odom sample")
    plain = msgs.odometry(msgs.time_from_s(7.25), "odom", "base_link", (1.5, -2.0, 0.75), (0.4, -0.2),
                          [float(i) for i in range(36)], [float(-i) for i in range(36)])
    assert got[0] == plain
