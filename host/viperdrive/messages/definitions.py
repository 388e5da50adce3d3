# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 message definitions for MCAP files, in the concatenated `ros2msg` form `ros2 bag` writes.

`DEFINITIONS[type name]` is the complete definition of that type: its own .msg text first, then every type it uses
(recursively), each preceded by a line of 80 '=' and a line `MSG: package/msg/Type`. Register it as the schema of a
channel (mcap_ros2.writer.Writer.register_msgdef(name, DEFINITIONS[name])); readers decode with it.

The field lists are those of the ROS 2 interfaces (builtin_interfaces, std_msgs, geometry_msgs, sensor_msgs,
nav_msgs, tf2_msgs, diagnostic_msgs) plus viperdrive_msgs/WheelTelemetry; comments are kept short. This is the one
table of .msg text in the package (logs.py, fuse.py and ekf/sim.py register their MCAP schemas from it). Add a type
by adding its .msg text to _MSG and its name to the table.
"""
from __future__ import annotations

SEPARATOR = "=" * 80

# one .msg text per type, without dependencies
_MSG = {
    "builtin_interfaces/msg/Time": """\
# Time since the epoch (or since the clock's start): seconds and nanoseconds
int32 sec
uint32 nanosec
""",
    "std_msgs/msg/Header": """\
# Stamp and coordinate frame of data
builtin_interfaces/Time stamp
string frame_id
""",
    "geometry_msgs/msg/Point": """\
# A position in free space
float64 x
float64 y
float64 z
""",
    "geometry_msgs/msg/Quaternion": """\
# An orientation as a quaternion (x, y, z, w)
float64 x 0
float64 y 0
float64 z 0
float64 w 1
""",
    "geometry_msgs/msg/Vector3": """\
# A vector in free space
float64 x
float64 y
float64 z
""",
    "geometry_msgs/msg/Pose": """\
# Position and orientation
Point position
Quaternion orientation
""",
    "geometry_msgs/msg/PoseWithCovariance": """\
# A pose with its 6x6 row-major covariance (x, y, z, rotation about X, Y, Z)
Pose pose
float64[36] covariance
""",
    "geometry_msgs/msg/Twist": """\
# Linear and angular velocity
Vector3 linear
Vector3 angular
""",
    "geometry_msgs/msg/TwistWithCovariance": """\
# A twist with its 6x6 row-major covariance
Twist twist
float64[36] covariance
""",
    "geometry_msgs/msg/PoseWithCovarianceStamped": """\
# A pose with covariance, stamped and framed
std_msgs/Header header
PoseWithCovariance pose
""",
    "geometry_msgs/msg/TwistWithCovarianceStamped": """\
# A twist with covariance, stamped and framed
std_msgs/Header header
TwistWithCovariance twist
""",
    "geometry_msgs/msg/TwistStamped": """\
# A twist, stamped and framed
std_msgs/Header header
Twist twist
""",
    "geometry_msgs/msg/Transform": """\
# A rigid transform: translation, then rotation
Vector3 translation
Quaternion rotation
""",
    "geometry_msgs/msg/TransformStamped": """\
# The transform from header.frame_id (parent) to child_frame_id, at header.stamp
std_msgs/Header header
string child_frame_id
Transform transform
""",
    "tf2_msgs/msg/TFMessage": """\
# A batch of transforms (/tf and /tf_static)
geometry_msgs/TransformStamped[] transforms
""",
    "sensor_msgs/msg/Imu": """\
# Inertial measurement. A covariance of all zeros means unknown; element 0 set to -1 means that part is not provided.
std_msgs/Header header

geometry_msgs/Quaternion orientation
float64[9] orientation_covariance # about x, y, z

geometry_msgs/Vector3 angular_velocity
float64[9] angular_velocity_covariance

geometry_msgs/Vector3 linear_acceleration
float64[9] linear_acceleration_covariance
""",
    "sensor_msgs/msg/BatteryState": """\
# The state of a battery. Constants: the Linux kernel's power_supply.h. A value not measured is NaN.
uint8 POWER_SUPPLY_STATUS_UNKNOWN = 0
uint8 POWER_SUPPLY_STATUS_CHARGING = 1
uint8 POWER_SUPPLY_STATUS_DISCHARGING = 2
uint8 POWER_SUPPLY_STATUS_NOT_CHARGING = 3
uint8 POWER_SUPPLY_STATUS_FULL = 4

uint8 POWER_SUPPLY_HEALTH_UNKNOWN = 0
uint8 POWER_SUPPLY_HEALTH_GOOD = 1
uint8 POWER_SUPPLY_HEALTH_OVERHEAT = 2
uint8 POWER_SUPPLY_HEALTH_DEAD = 3
uint8 POWER_SUPPLY_HEALTH_OVERVOLTAGE = 4
uint8 POWER_SUPPLY_HEALTH_UNSPEC_FAILURE = 5
uint8 POWER_SUPPLY_HEALTH_COLD = 6
uint8 POWER_SUPPLY_HEALTH_WATCHDOG_TIMER_EXPIRE = 7
uint8 POWER_SUPPLY_HEALTH_SAFETY_TIMER_EXPIRE = 8

uint8 POWER_SUPPLY_TECHNOLOGY_UNKNOWN = 0
uint8 POWER_SUPPLY_TECHNOLOGY_NIMH = 1
uint8 POWER_SUPPLY_TECHNOLOGY_LION = 2
uint8 POWER_SUPPLY_TECHNOLOGY_LIPO = 3
uint8 POWER_SUPPLY_TECHNOLOGY_LIFE = 4
uint8 POWER_SUPPLY_TECHNOLOGY_NICD = 5
uint8 POWER_SUPPLY_TECHNOLOGY_LIMN = 6
uint8 POWER_SUPPLY_TECHNOLOGY_TERNARY = 7
uint8 POWER_SUPPLY_TECHNOLOGY_VRLA = 8

std_msgs/Header  header
float32 voltage          # V (mandatory)
float32 temperature      # deg C (NaN if unmeasured)
float32 current          # A, negative when discharging (NaN if unmeasured)
float32 charge           # Ah (NaN if unmeasured)
float32 capacity         # Ah, last full capacity (NaN if unmeasured)
float32 design_capacity  # Ah (NaN if unmeasured)
float32 percentage       # 0 to 1 (NaN if unmeasured)
uint8   power_supply_status
uint8   power_supply_health
uint8   power_supply_technology
bool    present

float32[] cell_voltage   # per cell; NaN each if the count is known but not the voltages
float32[] cell_temperature
string location          # slot or plug
string serial_number
""",
    "nav_msgs/msg/Odometry": """\
# Position and velocity estimate: pose in header.frame_id, twist in child_frame_id
std_msgs/Header header
string child_frame_id
geometry_msgs/PoseWithCovariance pose
geometry_msgs/TwistWithCovariance twist
""",
    "sensor_msgs/msg/JointState": """\
# The state of a set of joints: position (rad), velocity (rad/s), effort; arrays indexed like name
std_msgs/Header header
string[] name
float64[] position
float64[] velocity
float64[] effort
""",
    "diagnostic_msgs/msg/KeyValue": """\
# A key/value pair of a diagnostic status
string key
string value
""",
    "diagnostic_msgs/msg/DiagnosticStatus": """\
# The status of one component
byte OK=0
byte WARN=1
byte ERROR=2
byte STALE=3
byte level
string name
string message
string hardware_id
KeyValue[] values
""",
    "diagnostic_msgs/msg/DiagnosticArray": """\
# Diagnostics of several components
std_msgs/Header header
DiagnosticStatus[] status
""",
    # viperdrive's own type (no ROS package ships it; readers decode it from this schema)
    "viperdrive_msgs/msg/WheelTelemetry": """\
# One viperdrive control-step record (TELEMETRY_DATA) in SI units: rad/s, duty 1.0 = full PWM
std_msgs/Header header
uint16 seq
uint32 board_time_us
float64 setpoint_left
float64 measured_left
float64 output_left
float64 integrator_left
float64 setpoint_right
float64 measured_right
float64 output_right
float64 integrator_right
uint8 status
""",
}


def _fields_types(package: str, text: str) -> list[str]:
    """Full names of the non-primitive field types in one .msg text (in order of first use)."""
    primitives = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                  "uint32", "int64", "uint64", "string", "wstring"}
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        base = line.split()[0].split("[", 1)[0]
        if base in primitives or "=" in line.split()[1:2]:
            continue
        if "/" in base:
            pkg, name = base.split("/", 1)
        else:
            pkg, name = package, base
        name = name.replace("msg/", "")
        full = f"{pkg}/msg/{name}"
        if full not in out:
            out.append(full)
    return out


def full_definition(type_name: str) -> str:
    """The concatenated definition of `type_name` (`pkg/msg/Type` or `pkg/Type`)."""
    if "/msg/" not in type_name:
        pkg, name = type_name.split("/", 1)
        type_name = f"{pkg}/msg/{name}"
    if type_name not in _MSG:
        raise KeyError(f"no message definition for {type_name}")
    order: list[str] = []

    def visit(t):
        for dep in _fields_types(t.split("/")[0], _MSG[t]):
            if dep not in order and dep != type_name:
                order.append(dep)
                visit(dep)

    visit(type_name)
    parts = [_MSG[type_name].rstrip("\n")]
    for dep in order:
        parts.append(f"{SEPARATOR}\nMSG: {dep}\n{_MSG[dep].rstrip()}")
    return "\n".join(parts) + "\n"


ODOMETRY = "nav_msgs/msg/Odometry"
IMU = "sensor_msgs/msg/Imu"
BATTERY_STATE = "sensor_msgs/msg/BatteryState"
POSE_WITH_COVARIANCE_STAMPED = "geometry_msgs/msg/PoseWithCovarianceStamped"
TWIST_WITH_COVARIANCE_STAMPED = "geometry_msgs/msg/TwistWithCovarianceStamped"
TWIST_STAMPED = "geometry_msgs/msg/TwistStamped"
TWIST = "geometry_msgs/msg/Twist"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
JOINT_STATE = "sensor_msgs/msg/JointState"
DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"
WHEEL_TELEMETRY = "viperdrive_msgs/msg/WheelTelemetry"

#: {type name: complete concatenated definition}
DEFINITIONS: dict[str, str] = {name: full_definition(name) for name in (
    ODOMETRY, IMU, POSE_WITH_COVARIANCE_STAMPED, TWIST_WITH_COVARIANCE_STAMPED, TWIST_STAMPED, TWIST, TF_MESSAGE,
    JOINT_STATE, DIAGNOSTIC_ARRAY, WHEEL_TELEMETRY, BATTERY_STATE)}
