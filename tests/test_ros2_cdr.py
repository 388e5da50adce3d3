# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The bridge's message types against an independent ROS 2 serializer (rosbags), in both directions.

For every type the bridge uses: the IDL struct's fields are the .msg fields in order with the same types, the CDR
bytes Cyclone DDS writes (XCDR1, little-endian, with the 4-byte encapsulation header) equal the bytes rosbags
writes for the same message, and each side reads back the other's bytes to the same values. Checked against the
Humble and the Jazzy type definitions.
"""
import dataclasses
import math
import random

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import Nodetype

from viperdrive.ros2 import msgs

pytestmark = pytest.mark.ros2

STORES = {"humble": Stores.ROS2_HUMBLE, "jazzy": Stores.ROS2_JAZZY}


def _random_value(rng, ros_type, fielddefs, depth=0):
    """A random plain value (nested dicts/lists) for a ROS type, following rosbags' own field definitions."""
    consts, fields = fielddefs[ros_type]
    out = {}
    for name, (node, detail) in fields:
        out[name] = _random_field(rng, node, detail, fielddefs, depth)
    return out


def _random_scalar(rng, node, detail, fielddefs, depth):
    if node == Nodetype.BASE:
        base = detail[0]
        if base == "string":
            return "".join(rng.choice("abcdefgh_/0123456789") for _ in range(rng.randint(0, 11)))
        if base == "float64":
            return rng.choice([0.0, -1.5, 1e-9, math.pi, rng.uniform(-1e6, 1e6)])
        if base == "float32":
            # values a float32 holds exactly, so the round trip compares equal
            return rng.choice([0.0, -1.5, 7.25, 2.0 ** -20, float(rng.randint(-2**23, 2**23))])
        if base == "bool":
            return rng.choice([False, True])
        if base == "int32":
            return rng.randint(-2**31, 2**31 - 1)
        if base == "uint32":
            return rng.randint(0, 2**32 - 1)
        if base == "uint8":
            return rng.randint(0, 255)
        if base == "byte":
            # one octet on the wire; rosbags reads `byte` as signed, rosidl as unsigned: agree on 0..127
            return rng.randint(0, 127)
        raise AssertionError(f"primitive {base} not handled by the test")
    assert node == Nodetype.NAME
    return _random_value(rng, detail, fielddefs, depth + 1)


def _random_field(rng, node, detail, fielddefs, depth):
    if node in (Nodetype.BASE, Nodetype.NAME):
        return _random_scalar(rng, node, detail, fielddefs, depth)
    (inner_node, inner_detail), count = detail
    if node == Nodetype.ARRAY:
        n = count
    else:
        assert node == Nodetype.SEQUENCE
        n = rng.randint(0, 3)
    return [_random_scalar(rng, inner_node, inner_detail, fielddefs, depth) for _ in range(n)]


def _to_rosbags(store, ros_type, value):
    consts, fields = store.fielddefs[ros_type]
    kwargs = {}
    for name, (node, detail) in fields:
        v = value[name]
        if node == Nodetype.NAME:
            v = _to_rosbags(store, detail, v)
        elif node in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            (inner_node, inner_detail), _ = detail
            if inner_node == Nodetype.NAME:
                v = [_to_rosbags(store, inner_detail, x) for x in v]
            elif inner_detail[0] == "float64":
                v = np.array(v, dtype=np.float64)
            elif inner_detail[0] == "float32":
                v = np.array(v, dtype=np.float32)
            elif inner_detail[0] == "string":
                v = list(v)
            else:
                raise AssertionError(f"array of {inner_detail} not handled by the test")
        kwargs[name] = v
    return store.types[ros_type](**kwargs)


def _from_rosbags(store, msg):
    out = {}
    _, fields = store.fielddefs[msg.__msgtype__]       # the message fields (constants are class attributes)
    for name, _ in fields:
        v = getattr(msg, name)
        if dataclasses.is_dataclass(v):
            v = _from_rosbags(store, v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, list):
            v = [_from_rosbags(store, x) if dataclasses.is_dataclass(x) else x for x in v]
        out[name] = v
    return out


def _to_idl(cls, value):
    kwargs = {}
    hints = {f.name: f for f in dataclasses.fields(cls)}
    for name, v in value.items():
        sample = hints[name].default_factory() if hints[name].default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(sample):
            v = _to_idl(type(sample), v)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            elem = msgs.TYPES_BY_ROS_NAME[_nested_list_type(cls, name)]
            v = [_to_idl(elem, x) for x in v]
        kwargs[name] = v
    return cls(**kwargs)


def _nested_list_type(cls, name):
    # sequence<struct> fields of the bridge's types
    table = {("TFMessage", "transforms"): "geometry_msgs/msg/TransformStamped",
             ("DiagnosticStatus", "values"): "diagnostic_msgs/msg/KeyValue",
             ("DiagnosticArray", "status"): "diagnostic_msgs/msg/DiagnosticStatus"}
    return table[(cls.__name__, name)]


def _from_idl(obj):
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            v = _from_idl(v)
        elif isinstance(v, list):
            v = [_from_idl(x) if dataclasses.is_dataclass(x) else x for x in v]
        out[f.name] = v
    return out


ROS_NAMES = sorted(msgs.TYPES_BY_ROS_NAME)


@pytest.mark.parametrize("distro", sorted(STORES))
@pytest.mark.parametrize("ros_type", ROS_NAMES)
def test_fields_match_the_msg_definition(distro, ros_type):
    store = get_typestore(STORES[distro])
    cls = msgs.TYPES_BY_ROS_NAME[ros_type]
    _, fields = store.fielddefs[ros_type]
    assert [f.name for f in dataclasses.fields(cls)] == [name for name, _ in fields]
    # type name: <pkg>::msg::dds_::<Type>_
    pkg, _, typ = ros_type.split("/")
    assert msgs.dds_type_name(cls) == f"{pkg}::msg::dds_::{typ}_"
    assert msgs.ros_type_name(msgs.dds_type_name(cls)) == ros_type


@pytest.mark.parametrize("distro", sorted(STORES))
@pytest.mark.parametrize("ros_type", ROS_NAMES)
def test_cdr_bytes_equal_rosbags_both_directions(distro, ros_type):
    store = get_typestore(STORES[distro])
    cls = msgs.TYPES_BY_ROS_NAME[ros_type]
    rng = random.Random(f"{distro}:{ros_type}")
    for _ in range(20):
        value = _random_value(rng, ros_type, store.fielddefs)
        ours = _to_idl(cls, value).serialize(use_version_2=False)
        theirs = bytes(store.serialize_cdr(_to_rosbags(store, ros_type, value), ros_type))
        assert ours[:4] == b"\x00\x01\x00\x00"       # CDR_LE encapsulation, XCDR1
        assert ours == theirs, f"{ros_type}: {ours.hex()} != {theirs.hex()}"
        # rosbags reads our bytes, we read rosbags' bytes: the same values come back
        assert _from_rosbags(store, store.deserialize_cdr(ours, ros_type)) == value
        assert _from_idl(cls.deserialize(theirs)) == value


def test_default_messages_serialize_like_rosbags_defaults():
    # the all-defaults message (empty strings/sequences, zero covariances): the smallest, alignment-heavy case
    store = get_typestore(Stores.ROS2_HUMBLE)
    odom = msgs.Odometry()
    odom.pose.pose.orientation = msgs.Quaternion(0.0, 0.0, 0.0, 1.0)
    value = _from_idl(odom)
    theirs = bytes(store.serialize_cdr(_to_rosbags(store, "nav_msgs/msg/Odometry", value), "nav_msgs/msg/Odometry"))
    assert odom.serialize(use_version_2=False) == theirs
    # encapsulation 4; stamp 8; frame_id 4+1 -> pad to 16; child_frame_id 4+1 -> pad to 24 (doubles align 8);
    # pose 7 doubles + 36 covariance = 344; twist 6 doubles + 36 covariance = 336
    assert len(theirs) == 4 + 24 + 344 + 336


def test_time_and_yaw_helpers():
    assert msgs.time_from_ns(1_500_000_000) == msgs.Time(sec=1, nanosec=500_000_000)
    assert msgs.time_from_ns(-1) == msgs.Time(sec=-1, nanosec=999_999_999)
    assert msgs.time_to_s(msgs.time_from_s(12.25)) == pytest.approx(12.25, abs=1e-9)
    for yaw in (0.0, 0.5, -2.0, math.pi - 1e-6):
        q = msgs.quaternion_from_yaw(yaw)
        assert q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w == pytest.approx(1.0)
        assert msgs.yaw_from_quaternion(q) == pytest.approx(yaw)
    with pytest.raises(ValueError):
        msgs.ros_type_name("geometry_msgs::Twist")


GRAPH_STORES = {"humble": Stores.ROS2_HUMBLE, "iron": Stores.ROS2_IRON, "jazzy": Stores.ROS2_JAZZY,
                "kilted": Stores.ROS2_KILTED}


@pytest.mark.parametrize("distro", sorted(GRAPH_STORES))
def test_ros_discovery_info_matches_rosbags_per_distro(distro):
    """ParticipantEntitiesInfo (ros_discovery_info): the Gid is 24 bytes up to Humble, 16 from Iron on."""
    store = get_typestore(GRAPH_STORES[distro])
    size = msgs.gid_size_for_distro(distro)
    _, gid_def = store.fielddefs["rmw_dds_common/msg/Gid"]
    assert gid_def[0][1][1][1] == size          # (ARRAY, ((BASE, char), N))
    gid_t, node_t, info_t = msgs.graph_types(size)
    rng = random.Random(distro)
    guids = [bytes(rng.randrange(256) for _ in range(16)) for _ in range(4)]
    ours = info_t(gid=msgs.gid_from_guid(guids[0], size), node_entities_info_seq=[
        node_t(node_namespace="/robot1", node_name="viperdrive",
               reader_gid_seq=[msgs.gid_from_guid(guids[1], size)],
               writer_gid_seq=[msgs.gid_from_guid(g, size) for g in guids[2:]])])
    G = store.types["rmw_dds_common/msg/Gid"]
    N = store.types["rmw_dds_common/msg/NodeEntitiesInfo"]
    P = store.types["rmw_dds_common/msg/ParticipantEntitiesInfo"]

    def gid(g):
        return G(data=np.frombuffer(g + bytes(size - 16), dtype=np.uint8))
    theirs = P(gid=gid(guids[0]), node_entities_info_seq=[
        N(node_namespace="/robot1", node_name="viperdrive", reader_gid_seq=[gid(guids[1])],
          writer_gid_seq=[gid(g) for g in guids[2:]])])
    raw = bytes(store.serialize_cdr(theirs, "rmw_dds_common/msg/ParticipantEntitiesInfo"))
    assert ours.serialize(use_version_2=False) == raw
    back = store.deserialize_cdr(ours.serialize(use_version_2=False), "rmw_dds_common/msg/ParticipantEntitiesInfo")
    assert bytes(back.gid.data) == guids[0] + bytes(size - 16)
    assert [bytes(g.data)[:16] for g in back.node_entities_info_seq[0].writer_gid_seq] == guids[2:]
