# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 message types as Cyclone DDS IDL structs, field for field as the ROS 2 .msg definitions.

ROS 2 maps `<pkg>/msg/<Type>` to the IDL struct `<pkg>::msg::dds_::<Type>_` (rosidl_generator_dds_idl) and
rmw_cyclonedds_cpp writes it as a final struct in XCDR1 (plain CDR, encapsulation CDR_LE). A reader in a ROS 2
graph matches our writer by that type name; the bytes must be exactly what rosidl would produce, which
tests/test_ros2_cdr.py checks against an independent serializer (rosbags) in both directions.

Field types follow the .msg -> IDL mapping: float64 -> double, int32 -> long, uint32 -> unsigned long,
byte -> octet (uint8), string -> string (unbounded), T[] -> sequence<T>, T[N] -> T[N].
Default values match ROS 2's (a Quaternion defaults to the identity, w = 1).
"""

import math
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cyclonedds.idl import IdlStruct, make_idl_struct
from cyclonedds.idl import types as _idl_types
from cyclonedds.idl.types import array, float32, float64, int32, int64, uint8, uint32, uint64

if TYPE_CHECKING:
    # A sequence<T> field holds a list, a double[36] field a list of 36 floats (what Cyclone takes and decodes);
    # its IDL marker (sequence[T], array[T, N]) is no static type: the type checker is told what the field holds.
    sequence = list
    Covariance = list[float]
    Covariance3 = list[float]
else:
    from cyclonedds.idl.types import sequence
    Covariance = array[float64, 36]     # row-major 6x6 (x, y, z, rotX, rotY, rotZ)
    Covariance3 = array[float64, 9]     # row-major 3x3 (sensor_msgs/Imu)


def _zeros36():
    return [0.0] * 36


def _zeros9():
    return [0.0] * 9


# ----------------------------------------------------------------------------------------- builtin_interfaces
@dataclass
class Time(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


# ------------------------------------------------------------------------------------------------ rosgraph_msgs
@dataclass
class Clock(IdlStruct, typename="rosgraph_msgs::msg::dds_::Clock_"):
    """/clock: the graph's time when it is a simulation's (nodes with use_sim_time read it instead of the wall)."""
    clock: Time = field(default_factory=Time)


# ----------------------------------------------------------------------------------------------------- std_msgs
@dataclass
class Header(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time = field(default_factory=Time)
    frame_id: str = ""


# ----------------------------------------------------------------------------------------------- geometry_msgs
@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Point(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Pose(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point = field(default_factory=Point)
    orientation: Quaternion = field(default_factory=Quaternion)


@dataclass
class PoseWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose = field(default_factory=Pose)
    covariance: Covariance = field(default_factory=_zeros36)   # row-major 6x6 (x, y, z, rotX, rotY, rotZ)


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3 = field(default_factory=Vector3)
    angular: Vector3 = field(default_factory=Vector3)


@dataclass
class TwistStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TwistStamped_"):
    header: Header = field(default_factory=Header)
    twist: Twist = field(default_factory=Twist)


@dataclass
class TwistWithCovariance(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist = field(default_factory=Twist)
    covariance: Covariance = field(default_factory=_zeros36)


@dataclass
class PoseWithCovarianceStamped(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovarianceStamped_"):
    header: Header = field(default_factory=Header)
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)


@dataclass
class TwistWithCovarianceStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovarianceStamped_"):
    header: Header = field(default_factory=Header)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)


@dataclass
class Transform(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3 = field(default_factory=Vector3)
    rotation: Quaternion = field(default_factory=Quaternion)


@dataclass
class TransformStamped(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    transform: Transform = field(default_factory=Transform)


# ---------------------------------------------------------------------------------------------------- nav_msgs
@dataclass
class Odometry(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header = field(default_factory=Header)
    child_frame_id: str = ""
    pose: PoseWithCovariance = field(default_factory=PoseWithCovariance)
    twist: TwistWithCovariance = field(default_factory=TwistWithCovariance)


# ------------------------------------------------------------------------------------------------- sensor_msgs
@dataclass
class JointState(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    header: Header = field(default_factory=Header)
    name: sequence[str] = field(default_factory=list)
    position: sequence[float64] = field(default_factory=list)
    velocity: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)


@dataclass
class Imu(IdlStruct, typename="sensor_msgs::msg::dds_::Imu_"):
    header: Header = field(default_factory=Header)
    orientation: Quaternion = field(default_factory=Quaternion)
    orientation_covariance: Covariance3 = field(default_factory=_zeros9)     # [0] = -1: no orientation
    angular_velocity: Vector3 = field(default_factory=Vector3)
    angular_velocity_covariance: Covariance3 = field(default_factory=_zeros9)
    linear_acceleration: Vector3 = field(default_factory=Vector3)
    linear_acceleration_covariance: Covariance3 = field(default_factory=_zeros9)


@dataclass
class BatteryState(IdlStruct, typename="sensor_msgs::msg::dds_::BatteryState_"):
    header: Header = field(default_factory=Header)
    voltage: float32 = 0.0
    temperature: float32 = 0.0
    current: float32 = 0.0
    charge: float32 = 0.0
    capacity: float32 = 0.0
    design_capacity: float32 = 0.0
    percentage: float32 = 0.0
    power_supply_status: uint8 = 0
    power_supply_health: uint8 = 0
    power_supply_technology: uint8 = 0
    present: bool = False
    cell_voltage: sequence[float32] = field(default_factory=list)
    cell_temperature: sequence[float32] = field(default_factory=list)
    location: str = ""
    serial_number: str = ""


# BatteryState constants (uint8 in the .msg; the Linux kernel's power_supply.h values)
POWER_SUPPLY_STATUS_UNKNOWN = 0
POWER_SUPPLY_STATUS_DISCHARGING = 2
POWER_SUPPLY_HEALTH_UNKNOWN = 0
POWER_SUPPLY_HEALTH_GOOD = 1
POWER_SUPPLY_HEALTH_DEAD = 3
POWER_SUPPLY_TECHNOLOGY_UNKNOWN = 0


# ---------------------------------------------------------------------------------------------------- std_srvs
# A ROS 2 service over DDS (rmw_cyclonedds_cpp): the request on `rq/<name>Request`, the reply on `rr/<name>Reply`,
# each sample the service type's message behind a request header (the client's id and the request's sequence
# number, rmw_cyclonedds_cpp's cdds_request_header_t), which the reply repeats so the client can pair them.
@dataclass
class TriggerRequest(IdlStruct, typename="std_srvs::srv::dds_::Trigger_Request_"):
    client_guid: uint64 = 0
    sequence_number: int64 = 0
    structure_needs_at_least_one_member: uint8 = 0      # an empty .srv request, as rosidl generates it


@dataclass
class TriggerResponse(IdlStruct, typename="std_srvs::srv::dds_::Trigger_Response_"):
    client_guid: uint64 = 0
    sequence_number: int64 = 0
    success: bool = False
    message: str = ""


# ---------------------------------------------------------------------------------------------------- tf2_msgs
@dataclass
class TFMessage(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped] = field(default_factory=list)


# --------------------------------------------------------------------------------------------- diagnostic_msgs
@dataclass
class KeyValue(IdlStruct, typename="diagnostic_msgs::msg::dds_::KeyValue_"):
    key: str = ""
    value: str = ""


@dataclass
class DiagnosticStatus(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticStatus_"):
    level: uint8 = 0
    name: str = ""
    message: str = ""
    hardware_id: str = ""
    values: sequence[KeyValue] = field(default_factory=list)


# DiagnosticStatus level constants (byte in the .msg; constants are not on the wire)
DIAG_OK = 0
DIAG_WARN = 1
DIAG_ERROR = 2
DIAG_STALE = 3
DIAG_LEVEL_NAMES = {DIAG_OK: "OK", DIAG_WARN: "WARN", DIAG_ERROR: "ERROR", DIAG_STALE: "STALE"}


@dataclass
class DiagnosticArray(IdlStruct, typename="diagnostic_msgs::msg::dds_::DiagnosticArray_"):
    header: Header = field(default_factory=Header)
    status: sequence[DiagnosticStatus] = field(default_factory=list)


# Every type above, by its ROS 2 name (`<pkg>/msg/<Type>`).
ALL_TYPES = (
    Time, Clock, Header, Vector3, Point, Quaternion, Pose, PoseWithCovariance, Twist, TwistStamped, TwistWithCovariance,
    Time, Header, Vector3, Point, Quaternion, Pose, PoseWithCovariance, Twist, TwistStamped, TwistWithCovariance,
    PoseWithCovarianceStamped, TwistWithCovarianceStamped, Transform, TransformStamped, Odometry, JointState, Imu,
    BatteryState, TFMessage, KeyValue, DiagnosticStatus, DiagnosticArray,
)


def dds_type_name(cls) -> str:
    """`geometry_msgs::msg::dds_::Twist_`: the name DDS discovery announces for a ROS 2 message type."""
    return cls.__idl_typename__


def ros_type_name(cls_or_dds_name) -> str:
    """`geometry_msgs/msg/Twist` from a message class or its DDS type name."""
    dds = cls_or_dds_name if isinstance(cls_or_dds_name, str) else dds_type_name(cls_or_dds_name)
    parts = dds.split("::")
    if len(parts) != 4 or parts[1] != "msg" or parts[2] != "dds_" or not parts[3].endswith("_"):
        raise ValueError(f"not a ROS 2 message DDS type name: {dds!r}")
    return f"{parts[0]}/msg/{parts[3][:-1]}"


TYPES_BY_ROS_NAME = {ros_type_name(t): t for t in ALL_TYPES}


# ---------------------------------------------------------------------------------------------- rmw_dds_common
# The ROS graph's own bookkeeping: every ROS participant publishes ParticipantEntitiesInfo on `ros_discovery_info`
# (which nodes it hosts and the GUIDs of their readers and writers); `ros2 node list` and the node column of
# `ros2 topic info -v` come from it. The Gid is the DDS GUID (16 bytes) padded to RMW_GID_STORAGE_SIZE, which is
# 24 bytes up to Humble and 16 from Iron on: the two layouts share one type name, so the distro picks one.
GID_SIZE = 16                                   # Iron, Jazzy, Kilted
GID_SIZE_BY_DISTRO = {"foxy": 24, "galactic": 24, "humble": 24}
_graph_types: dict = {}


def gid_size_for_distro(distro: str | None) -> int:
    return GID_SIZE_BY_DISTRO.get((distro or "").strip().lower(), GID_SIZE)


def graph_types(gid_size: int = GID_SIZE):
    """(Gid, NodeEntitiesInfo, ParticipantEntitiesInfo) IDL structs for a Gid of gid_size bytes."""
    if gid_size not in _graph_types:
        idl: Any = _idl_types       # IDL types built at run time (gid_size): values, not static types
        gid = make_idl_struct("Gid", "rmw_dds_common::msg::dds_::Gid_", {"data": idl.array[uint8, gid_size]})
        node = make_idl_struct("NodeEntitiesInfo", "rmw_dds_common::msg::dds_::NodeEntitiesInfo_",
                               {"node_namespace": idl.bounded_str[256], "node_name": idl.bounded_str[256],
                                "reader_gid_seq": idl.sequence[gid], "writer_gid_seq": idl.sequence[gid]})
        participant = make_idl_struct("ParticipantEntitiesInfo",
                                      "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_",
                                      {"gid": gid, "node_entities_info_seq": idl.sequence[node]})
        _graph_types[gid_size] = (gid, node, participant)
    return _graph_types[gid_size]


def gid_from_guid(guid_bytes: bytes, gid_size: int = GID_SIZE):
    """The rmw Gid of a DDS entity: its 16-byte GUID, zero-padded to the distro's Gid size."""
    gid_cls = graph_types(gid_size)[0]
    raw = bytes(guid_bytes)[:gid_size]
    return gid_cls(data=raw + bytes(gid_size - len(raw)))


# ------------------------------------------------------------------------------------------------------- helpers
_hints: dict = {}


def from_fields(cls, fields: dict):
    """A message of cls from its fields as a dict in ROS field form (nested messages as dicts too): what
    mcap_ros2's writer takes, so one dict (viperdrive.messages.sensors) serves a recording and a live topic."""
    hints = _hints.get(cls)
    if hints is None:
        hints = _hints[cls] = typing.get_type_hints(cls)
    kw = {}
    for name, value in fields.items():
        t = hints[name]
        if isinstance(value, dict) and isinstance(t, type) and issubclass(t, IdlStruct):
            value = from_fields(t, value)
        kw[name] = value
    return cls(**kw)


def time_from_ns(ns: int) -> Time:
    """builtin_interfaces/Time from integer nanoseconds (floor division keeps nanosec in [0, 1e9) for ns < 0)."""
    sec, nanosec = divmod(int(ns), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


def time_from_s(t: float) -> Time:
    return time_from_ns(round(t * 1e9))


def time_to_s(t: Time) -> float:
    return t.sec + t.nanosec * 1e-9


def quaternion_from_yaw(yaw: float) -> Quaternion:
    """Rotation about +z by yaw (REP-103: CCW positive seen from above)."""
    return Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2.0), w=math.cos(yaw / 2.0))


def yaw_from_quaternion(q: Quaternion) -> float:
    """Yaw of a quaternion (the full formula, so a non-planar q still gives its heading)."""
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def odometry(stamp: Time, frame: str, child: str, pose, twist, pose_covariance, twist_covariance) -> Odometry:
    """nav_msgs/Odometry of a planar pose (x, y, yaw) and twist (v, w) with their 6x6 covariances (36 floats)."""
    x, y, th = pose
    v, w = twist
    return _odometry(stamp, frame, child, (x, y, 0.0), quaternion_from_yaw(th), (v, 0.0, 0.0), (0.0, 0.0, w),
                     pose_covariance, twist_covariance)


def estimate(t: float, state, covariance, frame: str, child: str) -> Odometry:
    """nav_msgs/Odometry of a filter estimate (viperdrive.estimation: 15 variables, 15x15 covariance) at time t (s)."""
    from ..transforms import quat_from_euler
    w, qx, qy, qz = (float(v) for v in quat_from_euler(state[3], state[4], state[5]))
    P = covariance
    s = [float(v) for v in state[:12]]
    return _odometry(time_from_s(t), frame, child, s[0:3], Quaternion(x=qx, y=qy, z=qz, w=w), s[6:9], s[9:12],
                     [float(v) for v in P[0:6, 0:6].ravel()], [float(v) for v in P[6:12, 6:12].ravel()])


def _odometry(stamp, frame, child, position, orientation, linear, angular, pose_covariance, twist_covariance):
    return Odometry(header=Header(stamp=stamp, frame_id=frame), child_frame_id=child,
                    pose=PoseWithCovariance(pose=Pose(position=Point(*position), orientation=orientation),
                                            covariance=pose_covariance),
                    twist=TwistWithCovariance(twist=Twist(linear=Vector3(*linear), angular=Vector3(*angular)),
                                              covariance=twist_covariance))
