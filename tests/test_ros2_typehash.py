# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""RIHS01 type hashes of the bridge's types against the values ROS 2 Jazzy itself reports.

The expected hashes are the ones a Jazzy installation shows (`ros2 topic info -v`, rmw_zenoh key expressions,
/opt/ros/jazzy/share/<pkg>/msg/<Type>.json): an oracle independent of this code. The algorithm is also checked
on types the bridge does not use (String, CompressedImage, PoseStamped, PoseWithCovarianceStamped, Range with
constants), described from rosbags' Jazzy definitions, and the descriptions derived from our IDL structs must
equal the ones derived from rosbags for every bridge type.
"""
import pytest
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import Nodetype

from viperdrive.ros2 import msgs, typehash

pytestmark = pytest.mark.ros2

JAZZY = {
    "geometry_msgs/msg/Twist": "9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
    "geometry_msgs/msg/TwistStamped": "5f0fcd4f81d5d06ad9b4c4c63e3ea51b82d6ae4d0558f1d475229b1121db6f64",
    "geometry_msgs/msg/Vector3": "cc12fe83e4c02719f1ce8070bfd14aecd40f75a96696a67a2a1f37f7dbb0765d",
    "geometry_msgs/msg/Quaternion": "8a765f66778c8ff7c8ab94afcc590a2ed5325a1d9a076ffff38fbce36f458684",
    "std_msgs/msg/Header": "f49fb3ae2cf070f793645ff749683ac6b06203e41c891e17701b1cb597ce6a01",
    "nav_msgs/msg/Odometry": "3cc97dc7fb7502f8714462c526d369e35b603cfc34d946e3f2eda2766dfec6e0",
    "sensor_msgs/msg/JointState": "a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e",
    "tf2_msgs/msg/TFMessage": "e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087",
    "diagnostic_msgs/msg/DiagnosticArray": "5a8a36efb05fb25070fa0fb3810290c0e6cd4862b54a8fb975a1ee8dc55a333e",
    # `ros2 topic info -v` on Jazzy for a battery_state publisher and an imu/data one
    "sensor_msgs/msg/Imu": "7d9a00ff131080897a5ec7e26e315954b8eae3353c3f995c55faf71574000b5b",
    "sensor_msgs/msg/BatteryState": "4bee5dfce981c98faa6828b868307a0a73f992ed0789f374ee96c8f840e69741",
}
OTHER_JAZZY = {
    "std_msgs/msg/String": "df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
    "sensor_msgs/msg/CompressedImage": "15640771531571185e2efc8a100baf923961a4d15d5569652e6cb6691e8e371a",
    "geometry_msgs/msg/PoseStamped": "10f3786d7d40fd2b54367835614bff85d4ad3b5dab62bf8bca0cc232d73b4cd8",
    "geometry_msgs/msg/PoseWithCovarianceStamped": "26432f9803e43727d3c8f668d1fdb3c630f548af631e2f4e31382371bfea3b6e",
    "sensor_msgs/msg/Range": "b42b62562e93cbfe9d42b82fe5994dfa3d63d7d5c90a317981703f7388adff3a",
}


def describe_rosbags(store):
    """[(field, FieldType)] from rosbags' own definitions (an independent description of the same .msg)."""
    def single(node, detail):
        if node == Nodetype.NAME:
            return typehash.field_type(None, detail)
        base, bound = detail
        t = typehash.field_type(base)
        if base == "string" and bound:
            t.update(type_id=21, string_capacity=bound)        # FIELD_TYPE_BOUNDED_STRING
        return t

    def describe(name):
        out = []
        for fname, (node, detail) in store.fielddefs[name][1]:
            if node in (Nodetype.BASE, Nodetype.NAME):
                out.append((fname, single(node, detail)))
                continue
            (inner_node, inner_detail), count = detail
            t = single(inner_node, inner_detail)
            if node == Nodetype.ARRAY:
                t.update(type_id=t["type_id"] + typehash.OFFSET_ARRAY, capacity=count)
            elif count:
                t.update(type_id=t["type_id"] + typehash.OFFSET_BOUNDED_SEQUENCE, capacity=count)
            else:
                t.update(type_id=t["type_id"] + typehash.OFFSET_UNBOUNDED_SEQUENCE)
            out.append((fname, t))
        return out
    return describe


@pytest.mark.parametrize("ros_type", sorted(JAZZY))
def test_bridge_types_hash_like_jazzy(ros_type):
    assert typehash.hash_of(msgs.TYPES_BY_ROS_NAME[ros_type]) == "RIHS01_" + JAZZY[ros_type]
    assert typehash.user_data(msgs.TYPES_BY_ROS_NAME[ros_type]) == f"typehash=RIHS01_{JAZZY[ros_type]};".encode()


@pytest.mark.parametrize("ros_type", sorted(OTHER_JAZZY))
def test_algorithm_on_other_jazzy_types(ros_type):
    describe = describe_rosbags(get_typestore(Stores.ROS2_JAZZY))
    assert typehash.type_hash(ros_type, describe) == "RIHS01_" + OTHER_JAZZY[ros_type]


@pytest.mark.parametrize("ros_type", sorted(msgs.TYPES_BY_ROS_NAME))
def test_idl_descriptions_equal_rosbags_descriptions(ros_type):
    describe = describe_rosbags(get_typestore(Stores.ROS2_JAZZY))
    assert typehash.describe_msgs(ros_type) == describe(ros_type)
    assert typehash.hash_of(msgs.TYPES_BY_ROS_NAME[ros_type]) == typehash.type_hash(ros_type, describe)


def test_changing_a_field_changes_the_hash():
    base = typehash.describe_msgs("geometry_msgs/msg/Vector3")
    renamed = [("X" if n == "x" else n, t) for n, t in base]
    retyped = [(n, typehash.field_type("float32") if n == "z" else t) for n, t in base]
    h = typehash.type_hash("geometry_msgs/msg/Vector3", lambda _: base)
    assert h != typehash.type_hash("geometry_msgs/msg/Vector3", lambda _: renamed)
    assert h != typehash.type_hash("geometry_msgs/msg/Vector3", lambda _: retyped)


def _store_of_msg_texts(definitions: dict) -> object:
    """A rosbags typestore of the MCAP definitions (viperdrive.messages.definitions: .msg text), parsed by rosbags."""
    from rosbags.typesys import get_types_from_msg
    store = get_typestore(Stores.EMPTY)
    for name, text in definitions.items():
        store.register(get_types_from_msg(text, name))
    return store


def test_the_two_homes_of_the_message_definitions_agree():
    """The recordings' .msg text (viperdrive.messages.definitions) and the bridge's IDL structs (viperdrive.ros2.msgs)
    describe every type they share field for field (name, type, array or sequence, bound), parsed independently
    (rosbags reads the .msg text); a field changed in one home and not the other fails here."""
    from viperdrive.messages import definitions
    shared = sorted(set(definitions.DEFINITIONS) & set(msgs.TYPES_BY_ROS_NAME))
    store = _store_of_msg_texts({n: definitions.DEFINITIONS[n] for n in shared})
    compared = sorted(set(store.fielddefs) & set(msgs.TYPES_BY_ROS_NAME))
    assert len(shared) >= 10 and len(compared) >= 20       # the top-level types and every type they use
    describe = describe_rosbags(store)
    differ = [n for n in compared if typehash.describe_msgs(n) != describe(n)]
    assert not differ, f"the .msg text and the IDL struct differ for {differ}"
    # the check has teeth: one field's type changed in the .msg text is found
    odom = definitions.DEFINITIONS["nav_msgs/msg/Odometry"].replace("float64 x\n", "float32 x\n", 1)
    bent = describe_rosbags(_store_of_msg_texts({"nav_msgs/msg/Odometry": odom}))
    assert [n for n in ("geometry_msgs/msg/Point", "nav_msgs/msg/Odometry")
            if typehash.describe_msgs(n) != bent(n)] == ["geometry_msgs/msg/Point"]
