# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The robot file: host-side parameters of one robot in YAML or TOML, validated.

Keys follow ros2_control's diff_drive_controller where the meaning is the same (docs/host.md has the mapping).
Nested tables and dotted keys are the same thing: ``linear: {x: {max_velocity: 0.5}}`` == ``linear.x.max_velocity``.
Three layouts are read (docs/host.md, "Robot file"): viperdrive's own; a ros2_control file (controller_manager,
the diff-drive controller under any name, broadcasters; ``/**`` and namespace forms), the controller found the way
ros2_control finds it; a ROS 1 controller file. Limits left out (or null, or .nan as in diff_drive_controller) are
unlimited. Every error names the file, the node, the key, the value and the range.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .. import tomlread
from ..errors import BadValue
from .files import LIST_MAX, MAX_DEPTH, check_flow_depth, check_tree, read_text, shorten
from .rosparams import (
    Document,
    ParamError,
    Params,
    check_ros2_layout,
    node_params,
    parse_yaml,
    ros1_nodes,
    ros2_entries,
)

INF = math.inf


@dataclass(frozen=True)
class AxisLimits:
    """Per-axis limits in the diff_drive_controller sense (symmetric in sign). None = unlimited."""
    max_velocity: float | None = None       # m/s or rad/s
    max_acceleration: float | None = None   # speeding up (|v| grows), m/s^2 or rad/s^2
    max_deceleration: float | None = None   # slowing down (|v| shrinks); None = same as max_acceleration
    max_jerk: float | None = None           # m/s^3 or rad/s^3

    @property
    def deceleration(self) -> float | None:
        return self.max_deceleration if self.max_deceleration is not None else self.max_acceleration


@dataclass(frozen=True)
class OdometryNoise:
    """The noise model behind the odometry covariances (docs/host.md, "Covariance model")."""
    slip_variance_per_meter: float = 1e-4   # m: each wheel's travel variance grows by k*|distance| (Chong-Kleeman)
    velocity_slip_ratio: float = 0.02       # 1-sigma wheel-speed error as a fraction of the speed
    velocity_window: float = 0.02           # s: the board's velocity measurement window (quantization noise)
    gyro_variance_rate: float = 1e-5        # rad^2/s: heading random walk when a gyro gives the heading
    planar_variance: float = 1e-6           # z, roll, pitch (and vy, vz, wx, wy): zero by the planar model


@dataclass(frozen=True)
class Ros2Settings:
    """The ROS 2 bridge's settings: the robot file's `ros2` section (diff_drive_controller keeps the same keys at
    the top level of its parameters). These defaults are the only ones: the bridge reads every value from here."""
    odom_frame_id: str = "odom"
    base_frame_id: str = "base_link"
    tf_frame_prefix: str = ""                   # "" = none; prefix + "/" + frame id otherwise
    publish_rate: float = 50.0                  # Hz of odom, joint_states and tf
    enable_odom_tf: bool = True                 # publish odom -> base_link on /tf
    pose_covariance_diagonal: tuple[float, ...] | None = None       # 6 values; None: the propagated covariance
    twist_covariance_diagonal: tuple[float, ...] | None = None
    use_stamped_vel: bool | None = None         # cmd_vel as TwistStamped (True), Twist (False); None: detect
    # board sensors (imu/data_raw, battery_state, their diagnostics; docs/ros2.md "Board sensors")
    imu_frame_id: str = "imu_link"              # Imu header frame (with tf_frame_prefix); board axes, REP-103
    imu_part: str = "mpu6050"                   # the board's IMU part: its noise gives the Imu covariances
    sensor_rate: int = 50                       # Hz of SENSORS_DATA asked of the board (0: no sensor topics)


@dataclass(frozen=True)
class RobotConfig:
    """Host parameters of one robot. SI units. A *rim* speed or acceleration is m/s or m/s^2 at the wheel's rim; a
    *wheel* speed is rad/s of the wheel (as the board's parameter max_wheel_speed and Board.write): docs/host.md,
    "One unit per name"."""
    wheel_separation: float = 0.152
    wheel_radius: float = 0.0325
    wheel_separation_multiplier: float = 1.0
    left_wheel_radius_multiplier: float = 1.0
    right_wheel_radius_multiplier: float = 1.0
    counts_per_rev: int | None = None           # None: take it from the board's HELLO
    max_rim_speed: float = 0.55                 # m/s at the rim, applied to both wheels jointly
    max_rim_acceleration: float = 1.0           # m/s^2 at the rim (below the traction limit), jointly
    linear: AxisLimits = AxisLimits()
    angular: AxisLimits = AxisLimits()
    cmd_vel_timeout: float = 0.5                # s; 0 disables
    update_rate: float = 100.0                  # Hz of the host loop (read/update/write)
    port: str = "/dev/ttyACM0"
    baud: int = 115200
    odometry: OdometryNoise = OdometryNoise()
    ros2: Ros2Settings = Ros2Settings()
    source: str | None = None                   # the file it came from (None: defaults / a dict)
    ignored: tuple = ()                         # diff_drive_controller keys read but without meaning here
    # where the values came from (not part of equality: the same robot from another layout is the same robot)
    node: str | None = field(default=None, compare=False)        # the ROS node (ROS parameter files)
    layout: str = field(default="viperdrive", compare=False)     # "viperdrive", "ros2_control" (ROS 2) or "ros1"
    notes: tuple = field(default=(), compare=False)              # what the user should know (vendor keys, types)
    explicit: frozenset = field(default=frozenset(), compare=False)     # the keys the file set

    # ---- derived quantities: the one place the multipliers are applied ----
    @property
    def effective_separation(self) -> float:
        return self.wheel_separation * self.wheel_separation_multiplier

    @property
    def left_radius(self) -> float:
        return self.wheel_radius * self.left_wheel_radius_multiplier

    @property
    def right_radius(self) -> float:
        return self.wheel_radius * self.right_wheel_radius_multiplier

    @property
    def wheel_speed_limits(self) -> tuple[float, float]:
        """max_rim_speed as (left, right) wheel rad/s: the one place the rim limit becomes wheel speeds."""
        return self.max_rim_speed / self.left_radius, self.max_rim_speed / self.right_radius

    @property
    def period(self) -> float:
        return 1.0 / self.update_rate

    # ---- construction ----
    @classmethod
    def from_dict(cls, data, source: str | None = None, node: str | None = None, strict: bool = False) -> RobotConfig:
        """Validate a (nested or dotted) mapping, or a ROS parameter layout; BadValue naming file, node, key, value
        and range on the first problem."""
        return cls.from_document(Document(data, source or ""), node=node, strict=strict)

    @classmethod
    def from_document(cls, doc: Document, node: str | None = None, strict: bool = False) -> RobotConfig:
        if not isinstance(doc.data, dict):
            where = f"{doc.source}: " if doc.source else ""
            raise BadValue(f"{where}the robot file must be a mapping of keys to values, got "
                           f"{type(doc.data).__name__}")
        p, layout, update_rate, notes = _select(doc, node)
        if not doc.data:
            # an empty file is a valid robot file of defaults; a user who meant to set something is told
            notes = list(notes) + ["the robot file is empty: every value is the built-in default (viperdrive "
                                   "check-config lists them)"]
        return _build(cls, p, layout, update_rate, notes, strict)

    @classmethod
    def load(cls, path, node: str | None = None, strict: bool = False) -> RobotConfig:
        """Read a .yaml/.yml or .toml robot file (a viperdrive file, a ros2_control or ROS 1 diff_drive_controller
        file). BadValue (exit code 7) for anything wrong with it: a file that exists and cannot be read is an error,
        never a reason to fall back to the built-in defaults."""
        return cls.from_document(read_robot_file(path), node=node, strict=strict)

    def with_values(self, **changes) -> RobotConfig:
        """A copy with top-level fields replaced and validated (e.g. with_values(port="sim"))."""
        data = self.to_dict()
        data.update(changes)
        checked = RobotConfig.from_dict(data, source=self.source)
        return replace(checked, ignored=self.ignored, node=self.node, layout=self.layout, notes=self.notes,
                       explicit=self.explicit | frozenset(changes))

    def to_dict(self) -> dict:
        """Nested plain-data form (what a robot file holds); from_dict(to_dict()) == self."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in _META_FIELDS:
                continue
            value = getattr(self, f.name)
            if isinstance(value, AxisLimits):
                out[f.name] = {"x" if f.name == "linear" else "z": {g.name: getattr(value, g.name)
                                                                    for g in fields(value)}}
            elif isinstance(value, (OdometryNoise, Ros2Settings)):
                out[f.name] = {g.name: _plain(getattr(value, g.name)) for g in fields(value)}
            else:
                out[f.name] = value
        return out

    def get(self, dotted: str):
        """A value by its robot-file name, e.g. get("linear.x.max_velocity")."""
        node: Any = self.to_dict()
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(dotted)
            node = node[part]
        return node


def read_robot_file(path) -> Document:
    """A robot file's text, read once and parsed by its suffix (.yaml/.yml: YAML 1.2 as ROS reads it, .toml), not
    yet validated (RobotConfig.from_document does that). BadValue (exit code 7) when it is missing, unreadable, not
    UTF-8 or not valid YAML/TOML."""
    p = Path(path)
    suffix = p.suffix.lower()
    text = read_text(p, "robot file")         # a regular file, of a robot file's size, UTF-8 (robot/files.py)
    if suffix not in (".toml", ".yaml", ".yml"):
        raise BadValue(f"robot file {p}: unknown format {suffix or '(no suffix)'!r}; use .yaml, .yml or .toml")
    return parse_robot_file(text, p)


def _data_children(value) -> list:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return value
    return []


def parse_robot_file(text: str, path) -> Document:
    """The text of the robot file `path` (its suffix says TOML or YAML) as a Document; BadValue naming the file and
    the line when it is not valid. An empty YAML file is an empty mapping."""
    p = Path(path)
    if p.suffix.lower() == ".toml":
        check_flow_depth(text, f"robot file {p}")       # TOML arrays and inline tables nest with [ and { too
        try:
            data = tomlread.loads(text)
        except tomlread.TOMLDecodeError as e:
            raise BadValue(f"robot file {p} is not valid TOML: {_one_line(e)}") from None
        except RecursionError:
            raise BadValue(f"robot file {p}: nested too deeply to read (more than {MAX_DEPTH} levels; a robot "
                           f"file has a few)") from None
        check_tree(data, f"robot file {p}", _data_children)
        return Document(data, str(p))
    try:
        doc = parse_yaml(text, str(p))
    except ParamError as e:
        raise BadValue(f"robot file {e}") from None
    if doc.data is None:
        doc.data = {}
    return doc


# ---- validation table: key -> (kind, min, max, allow None, what) ----
# kind: "f" float, "i" int, "s" str. Ranges are physical sanity bounds, not tuning advice.

_SPECS: dict[str, tuple] = {
    "wheel_separation": ("f", 0.02, 5.0, False, "m"),
    "wheel_radius": ("f", 0.005, 1.0, False, "m"),
    "wheel_separation_multiplier": ("f", 0.5, 2.0, False, ""),
    "left_wheel_radius_multiplier": ("f", 0.5, 2.0, False, ""),
    "right_wheel_radius_multiplier": ("f", 0.5, 2.0, False, ""),
    "counts_per_rev": ("i", 1, 10_000_000, True, "counts per wheel revolution"),
    "max_rim_speed": ("f", 0.001, 50.0, False, "m/s"),
    "max_rim_acceleration": ("f", 0.001, 100.0, False, "m/s^2"),
    "cmd_vel_timeout": ("f", 0.0, 60.0, False, "s"),
    "update_rate": ("f", 1.0, 1000.0, False, "Hz"),
    "port": ("s", None, None, False, ""),
    "baud": ("i", 300, 12_000_000, False, "baud"),
    "odometry.slip_variance_per_meter": ("f", 1e-12, 1.0, False, "m"),
    "odometry.velocity_slip_ratio": ("f", 1e-6, 1.0, False, ""),
    "odometry.velocity_window": ("f", 1e-4, 1.0, False, "s"),
    "odometry.gyro_variance_rate": ("f", 1e-15, 1.0, False, "rad^2/s"),
    "odometry.planar_variance": ("f", 1e-15, 1.0, False, ""),
}
for _axis, _u in (("linear.x", "m/s"), ("angular.z", "rad/s")):
    _SPECS[f"{_axis}.max_velocity"] = ("f", 1e-6, 1000.0, True, _u)
    _SPECS[f"{_axis}.max_acceleration"] = ("f", 1e-6, 10000.0, True, _u + "^2")
    _SPECS[f"{_axis}.max_deceleration"] = ("f", 1e-6, 10000.0, True, _u + "^2")
    _SPECS[f"{_axis}.max_jerk"] = ("f", 1e-6, 1e6, True, _u + "^3")

# Robot-file keys renamed at 0.1 (old -> new, same value and unit): still read, with a note saying the new name.
# "wheel speed" is rad/s everywhere in viperdrive (the board's max_wheel_speed, Board.write); the m/s limit at
# the rim got a name of its own (docs/host.md, "One unit per name").
RENAMED_KEYS: dict[str, str] = {"max_wheel_speed": "max_rim_speed", "max_wheel_acceleration": "max_rim_acceleration"}

_META_FIELDS = ("source", "ignored", "node", "layout", "notes", "explicit")

DDC_TYPE = "diff_drive_controller/DiffDriveController"

# diff_drive_controller parameters (ROS 2: its generate_parameter_library file, Humble to Rolling; ROS 1:
# ros_controllers' diff_drive_controller, Melodic/Noetic). Bridge settings it keeps at top level:
_DDC_ROS2 = {"odom_frame_id", "base_frame_id", "tf_frame_prefix", "publish_rate", "enable_odom_tf",
             "pose_covariance_diagonal", "twist_covariance_diagonal", "use_stamped_vel"}
# the bridge's own settings (board sensors), only in a `ros2` section: no diff_drive_controller key
_OWN_ROS2 = {"imu_frame_id", "imu_part", "sensor_rate"}
# ... and the ones without meaning here (one wheel per side, odometry always from the encoders, no rolling mean):
_DDC_IGNORED = {"left_wheel_names", "right_wheel_names", "open_loop", "position_feedback",
                "velocity_rolling_window_size", "tf_frame_prefix_enable", "wheels_per_side",
                "publish_limited_velocity", "use_sim_time",
                # ROS 1 only
                "left_wheel", "right_wheel", "publish_cmd", "allow_multiple_cmd_vel_publishers",
                "publish_wheel_joint_controller_state"}
_DDC_AXIS_SUFFIXES = ("min_velocity", "min_acceleration", "min_jerk", "max_acceleration_reverse",
                      "max_deceleration_reverse", "has_velocity_limits", "has_acceleration_limits",
                      "has_jerk_limits")
# parameters every ros2_control controller (or ROS node) has: read, no meaning for the host loop
_CONTROLLER_KEYS = {"type", "update_rate", "is_async", "thread_priority", "params_file", "fallback_controllers",
                    "use_sim_time", "node_options_args"}
# the keys that make a node a diff-drive controller when no type says so
_DDC_GEOMETRY_KEYS = {"wheel_separation", "wheel_radius", "left_wheel_names", "right_wheel_names",
                      "wheel_separation_multiplier", "left_wheel_radius_multiplier", "right_wheel_radius_multiplier",
                      "wheels_per_side", "left_wheel", "right_wheel"}
_ROS1_ONLY = {"left_wheel", "right_wheel", "publish_cmd", "allow_multiple_cmd_vel_publishers",
              "publish_wheel_joint_controller_state", "wheel_radius_multiplier"}
# diff_drive_controller's floating-point parameters (ROS 2 refuses an integer for them)
_DDC_DOUBLES = {"wheel_separation", "wheel_radius", "wheel_separation_multiplier", "left_wheel_radius_multiplier",
                "right_wheel_radius_multiplier", "cmd_vel_timeout", "publish_rate", "pose_covariance_diagonal",
                "twist_covariance_diagonal"}
_NATIVE_SECTIONS = {"linear", "angular", "odometry", "ros2"}


def _ddc_axis_ignored(key: str) -> bool:
    return key.startswith(("linear.x.", "angular.z.")) and key.split(".", 2)[2] in _DDC_AXIS_SUFFIXES


def _ddc_declared(key: str) -> bool:
    return (key in _DDC_DOUBLES or key in _DDC_ROS2 or key in _DDC_IGNORED
            or (key.startswith(("linear.x.", "angular.z.")) and key.count(".") == 2))


# ------------------------------------------------------------------------------------------ layouts

def _layout(data: dict) -> str:
    if ros2_entries(data):
        return "ros2_control"
    if isinstance(data.get("type"), str) or any(k in data for k in _ROS1_ONLY):
        return "ros1"
    if data and all(isinstance(v, dict) for v in data.values()) and not set(map(str, data)) & _NATIVE_SECTIONS:
        for _, params, _path in ros1_nodes(data):
            if isinstance(params.get("type"), str) or set(map(str, params)) & _DDC_GEOMETRY_KEYS:
                return "ros1"
    return "viperdrive"


def _select(doc: Document, node: str | None):
    """(the chosen node's Params, layout, controller_manager's update_rate as (Params, key) or None, notes)."""
    layout = _layout(doc.data)
    if layout == "viperdrive":
        if node is not None:
            raise BadValue(f"{doc.source or 'robot file'}: --node {node}: this is a viperdrive robot file, not a ROS "
                           f"parameter file with nodes")
        return Params.of(doc.data, doc, error=BadValue), layout, None, []
    if layout == "ros2_control":
        return _select_ros2(doc, node)
    return _select_ros1(doc, node)


def _type_of(p: Params) -> str | None:
    t = p.get("type")
    return t if isinstance(t, str) else None


def _looks_like_ddc(p: Params) -> bool:
    return bool(set(p.keys()) & _DDC_GEOMETRY_KEYS)


def _select_ros2(doc: Document, node: str | None):
    from .rosparams import choose_entry

    entries = ros2_entries(doc.data)
    check_ros2_layout(doc, BadValue)
    src = doc.source or "robot file"
    notes: list[str] = []
    named: dict[str, Any] = {}
    for e in entries:
        if not e.wildcard:
            named.setdefault(e.fqn, e)
    cms = [e for e in named.values() if e.basename == "controller_manager"]
    cm = node_params(doc, entries, cms[0].fqn, cms[0].key, BadValue) if cms else None
    declared: dict[str, str] = {}           # controller name -> type, as controller_manager lists them
    if cm is not None:
        for key in cm.keys():
            if key.endswith(".type") and isinstance(cm.get(key), str):
                declared[key[:-5]] = cm.get(key)
    nodes = {fqn: node_params(doc, entries, fqn, e.key, BadValue) for fqn, e in named.items()
             if e.basename != "controller_manager"}
    kinds = {fqn: (_type_of(p) or declared.get(named[fqn].basename)) for fqn, p in nodes.items()}

    def describe(fqn):
        t = kinds.get(fqn)
        return f"{named[fqn].key} ({t})" if t else named[fqn].key

    if node is not None:
        e = choose_entry(entries, node, [named[f] for f in nodes], "nodes", src, BadValue)
        fqn = e.fqn if not e.wildcard else e.key
        chosen = node_params(doc, entries, fqn, e.key, BadValue)
        t = _type_of(chosen) or declared.get(e.basename)
        if t not in (None, DDC_TYPE):
            notes.append(f"{e.key} is a {t}, not a {DDC_TYPE}: its diff-drive parameters are used as --node asked")
    else:
        typed = [f for f in nodes if kinds[f] == DDC_TYPE]
        if not typed:
            # controller_manager declares a diff-drive controller whose parameters only come from wildcards
            missing = [n for n, t in declared.items() if t == DDC_TYPE and "/" + n not in nodes]
            for n in missing:
                p = node_params(doc, entries, "/" + n, n, BadValue)
                if p.keys():
                    nodes["/" + n] = p
                    kinds["/" + n] = DDC_TYPE
                    typed.append("/" + n)
                else:
                    raise BadValue(f"{src}: controller_manager declares {n} ({DDC_TYPE}) but the file has no "
                                   f"parameters for it (in another file, its params_file?)")
        if len(typed) > 1:
            listed = ", ".join(named[f].key if f in named else f for f in typed)
            raise BadValue(f"{src}: {len(typed)} diff-drive controllers ({listed}): choose one with --node")
        if typed:
            chosen = nodes[typed[0]]
        else:
            untyped: list[str] | None = [f for f, p in nodes.items() if kinds[f] is None and _looks_like_ddc(p)]
            if not untyped and len([f for f in nodes if kinds[f] is None]) == 1 and not declared:
                untyped = [f for f in nodes if kinds[f] is None]
            if not untyped and not nodes:
                wild = Params(doc=doc, source=doc.source, node=None, ros2=True, error=BadValue)
                for e in entries:
                    wild.merge(e.params, e.path)
                if _looks_like_ddc(wild):       # only /** (or a bare ros__parameters): that is the controller
                    chosen = wild
                    chosen.node = entries[0].key
                    untyped = None
            if untyped is not None:
                if len(untyped) > 1:
                    raise BadValue(f"{src}: {len(untyped)} nodes have diff-drive parameters "
                                   f"({', '.join(named[f].key for f in untyped)}) and none is typed {DDC_TYPE}: "
                                   f"choose one with --node")
                if not untyped:
                    others = [describe(f) for f in nodes if _looks_like_ddc(nodes[f])]
                    hint = (f"; {', '.join(others)} has diff-drive parameters under another type (--node NAME "
                            f"takes it anyway)") if others else ""
                    raise BadValue(f"{src}: no diff-drive controller (no node of type {DDC_TYPE} or with "
                                   f"wheel_separation/wheel_radius); nodes: "
                                   f"{', '.join(describe(f) for f in nodes) or 'none'}{hint}")
                chosen = nodes[untyped[0]]
                if declared or len(nodes) > 1:
                    notes.append(f"{named[untyped[0]].key}: no type declared; taken as the diff-drive controller by "
                                 f"its parameters")
    used = {chosen.node}
    others = [describe(f) for f in nodes if named.get(f) is not None and named[f].key not in used]
    update_rate = None
    if cm is not None:
        if "update_rate" in cm:
            update_rate = (cm, "update_rate")
        others.insert(0, f"{cm.node} (update_rate" + (")" if update_rate else " not set)"))
    if others:
        notes.append("other nodes: " + ", ".join(others) + " (only the diff-drive controller's parameters and "
                     "controller_manager's update_rate matter to the host)")
    return chosen, "ros2_control", update_rate, notes


def _select_ros1(doc: Document, node: str | None):
    src = doc.source or "robot file"
    nodes = [(name, Params.of(params, doc, path, node=name, error=BadValue)) for name, params, path in
             ros1_nodes(doc.data)]
    notes: list[str] = []
    if node is not None:
        hits = [(n, p) for n, p in nodes if n is not None and (n == node.strip("/") or n.split("/")[-1] == node)]
        if len(hits) != 1:
            listed = ", ".join(n for n, _ in nodes if n) or "none"
            raise BadValue(f"{src}: --node {node} " + ("matches several nodes" if hits else "is not a node") +
                           f" (nodes: {listed})")
        chosen = hits[0][1]
    else:
        typed = [(n, p) for n, p in nodes if _type_of(p) == DDC_TYPE]
        cands = typed or [(n, p) for n, p in nodes if _type_of(p) is None and _looks_like_ddc(p)]
        if len(cands) != 1:
            listed = ", ".join(f"{n} ({_type_of(p)})" if _type_of(p) else str(n) for n, p in nodes) or "none"
            raise BadValue(f"{src}: " + (f"{len(cands)} diff-drive controllers" if cands else "no diff-drive "
                           "controller") + f" (nodes: {listed})" + (": choose one with --node" if cands else ""))
        chosen = cands[0][1]
    others = [n for n, p in nodes if p is not chosen and n]
    if others:
        notes.append(f"other nodes: {', '.join(others)} (only the diff-drive controller's parameters matter to "
                     f"the host)")
    return chosen, "ros1", None, notes


# ------------------------------------------------------------------------------------------ building

def _build(cls, p: Params, layout: str, update_rate, notes: list, strict: bool) -> RobotConfig:
    ros = layout != "viperdrive"
    flat = dict(p.values)
    for key, name in RENAMED_KEYS.items():
        if key in flat:
            if name in flat:
                raise BadValue(f"{p.where(key)}{p.at(key)} and {name}{p.at(name)} set the same limit ({key} is its "
                               f"name before 0.1): keep {name}")
            p.note(key, f"renamed {name} in viperdrive 0.1 (same value, {_SPECS[name][4]} at the rim); read as "
                        f"{name}: rename the key in the file")
    ignored: list[str] = []
    vendor: list[str] = []
    for key in list(flat):
        if key in _DDC_ROS2:
            # diff_drive_controller keeps these at top level; here they belong to the bridge's sub-dict
            flat.setdefault("ros2." + key, flat.pop(key))
            p.paths["ros2." + key] = p.paths.get(key)
        elif key in _DDC_IGNORED or _ddc_axis_ignored(key):
            ignored.append(key)
        elif ros and key == "update_rate" and update_rate is None:
            pass            # no controller_manager in the file: the controller's rate is the loop's
        elif ros and (key in _CONTROLLER_KEYS or key.startswith(("qos_overrides.", "diagnostic_updater."))):
            ignored.append(key)
    if ros and "wheel_radius_multiplier" in flat:       # ROS 1: one multiplier for both wheels
        m = flat.pop("wheel_radius_multiplier")
        p.paths["left_wheel_radius_multiplier"] = p.paths["right_wheel_radius_multiplier"] = \
            p.paths.get("wheel_radius_multiplier")
        flat.setdefault("left_wheel_radius_multiplier", m)
        flat.setdefault("right_wheel_radius_multiplier", m)
    for axis in ("linear.x", "angular.z"):
        for kind, names in (("velocity", ("max_velocity",)), ("acceleration", ("max_acceleration",
                                                                                 "max_deceleration")),
                            ("jerk", ("max_jerk",))):
            has_key = f"{axis}.has_{kind}_limits"
            has = p.as_bool(has_key, flat[has_key]) if has_key in flat else None
            if has is False:
                # has_*_limits: false switches the limit off whatever its value
                for n in names:
                    flat.pop(f"{axis}.{n}", None)
            elif has is None and ros:
                for n in names:
                    v = flat.get(f"{axis}.{n}")
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v):
                        notes.append(f"{axis}.{n}: set without {has_key}: true; diff_drive_controller releases "
                                     f"with has_*_limits (ROS 1, ROS 2 up to Iron) ignore it, viperdrive applies it")
    own_rate = flat.get("update_rate") if update_rate is not None else None
    for key in ignored:
        flat.pop(key)
    prefix = ": ".join(x for x in (p.source, p.node) if x)
    prefix = prefix + ": " if prefix else ""
    kw: dict[str, Any] = {}
    axes: dict[str, dict] = {"linear": {}, "angular": {}}
    noise: dict[str, Any] = {}
    ros2: dict[str, Any] = {}
    ros2_keys = [f.name for f in fields(Ros2Settings)]
    for key, value in flat.items():
        name = RENAMED_KEYS.get(key, key)      # errors name the key as the file writes it
        spec = _SPECS.get(name)
        if spec is None:
            if key.startswith("ros2."):
                sub = key[5:]
                if sub not in ros2_keys:
                    raise BadValue(f"{prefix}unknown key {key!r}{_suggest(sub, ros2_keys, 'ros2.')}; "
                                   f"known ros2 keys: {', '.join(sorted(ros2_keys))}")
                if ros and key[5:] in _DDC_DOUBLES:
                    p.check_ros2_double(key[5:], value)
                ros2[sub] = _check_ros2(p, key, sub, value)
                continue
            if ros:
                vendor.append(key)
                continue
            raise BadValue(f"{prefix}unknown key {key!r}{_suggest(key, list(_SPECS) + ['ros2.*'])}")
        if ros and _ddc_declared(key) and spec[0] == "f" and value is not None:
            p.check_ros2_double(key, value)
        checked = _check(p, key, value, spec)
        if key.startswith(("linear.x.", "angular.z.")):
            axes[key.split(".")[0]][key.split(".")[2]] = checked
        elif key.startswith("odometry."):
            noise[key[9:]] = checked
        else:
            kw[name] = checked
    if vendor:
        # the first few with a suggestion each (a 1 MB file of unknown keys named 35,694 of them in one line)
        known = sorted(_DDC_GEOMETRY_KEYS | _DDC_DOUBLES | set(_SPECS))
        listed = shorten([v + _suggest(v, known) for v in vendor[:LIST_MAX]] + vendor[LIST_MAX:])
        if strict:
            raise BadValue(f"{prefix}keys diff_drive_controller does not declare (--strict): {listed}")
        notes.append(f"not diff_drive_controller parameters (a vendor's keys? ROS 2 ignores undeclared ones, so "
                     f"does viperdrive): {listed}")
    if ros:
        for key in ("wheel_separation", "wheel_radius"):
            if key not in kw:
                ros1 = (" (ROS 1's takes it from the URDF, which viperdrive does not read)" if layout == "ros1"
                        else "")
                raise BadValue(f"{p.where(key)}: missing; diff_drive_controller requires it{ros1}: add "
                               f"{key}: <metres> to this node")
        if update_rate is not None:
            cm, key = update_rate
            v = cm.get(key)
            if isinstance(v, float):
                cm.note(key, f"{v!r}: controller_manager declares update_rate an integer (Hz); ROS 2 refuses a "
                             f"decimal{cm.at(key)}: write {int(v) if v.is_integer() else round(v)}")
            kw["update_rate"] = _check(cm, key, v, _SPECS["update_rate"])
            own = own_rate
            if isinstance(own, (int, float)) and not isinstance(own, bool) and own != kw["update_rate"]:
                notes.append(f"update_rate: the controller's own {own:g} Hz is its update rate inside "
                             f"controller_manager's loop; the host loop runs at controller_manager's "
                             f"{kw['update_rate']:g} Hz")
            notes.extend(f"{cm.node}: {k}: {t}" for k, t in cm.notes)
    notes.extend(f"{k}: {t}" for k, t in p.notes)
    vendor_keys = frozenset(vendor)
    explicit = (frozenset(RENAMED_KEYS.get(k, k) for k in flat if k not in vendor_keys)
                | (frozenset(["update_rate"]) if update_rate else frozenset()))
    return cls(linear=AxisLimits(**axes["linear"]), angular=AxisLimits(**axes["angular"]),
               odometry=OdometryNoise(**noise), ros2=Ros2Settings(**ros2), source=p.source or None,
               ignored=tuple(ignored), node=p.node, layout=layout, notes=tuple(notes), explicit=explicit, **kw)


def _check(p: Params, key: str, value, spec):
    kind, lo, hi, nullable, unit = spec
    where = p.where(key)
    at = p.at(key)
    rng = f"[{lo}, {hi}]{(' ' + unit) if unit else ''}"
    if kind != "s" and isinstance(value, str) and p.plain(key) and "_" not in value:
        try:
            value = p.as_number(key, value)         # nan / inf written the way ROS 2 reads them
        except BadValue:
            pass
    if value is None or (nullable and isinstance(value, float) and math.isnan(value)):
        if nullable:
            return None
        raise BadValue(f"{where} is required (a number in {rng}), got nothing{at}")
    if kind == "s":
        if not isinstance(value, str) or not value:
            raise BadValue(f"{where}={value!r} must be a non-empty string{at}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadValue(f"{where}={value!r} must be a number in {rng}{at}")
    if kind == "i" and (isinstance(value, float) and not value.is_integer()):
        raise BadValue(f"{where}={value!r} must be a whole number in {rng}{at}")
    if not math.isfinite(value):
        extra = " (null or .nan: no limit)" if nullable else ""
        raise BadValue(f"{where}={value!r} must be a finite number in {rng}{extra}{at}")
    if value < lo or value > hi:
        raise BadValue(f"{where}={value!r} is outside {rng}{at}")
    return int(value) if kind == "i" else float(value)


def _check_ros2(p: Params, key: str, sub: str, value):
    where, at = p.where(key), p.at(key)
    if sub in ("pose_covariance_diagonal", "twist_covariance_diagonal"):
        if value is None:
            return None
        if (not isinstance(value, (list, tuple)) or len(value) != 6
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                           for v in value)):
            raise BadValue(f"{where}={value!r} must be a list of 6 finite numbers >= 0 (or null: computed){at}")
        return tuple(float(v) for v in value)
    if sub in ("enable_odom_tf",):
        return p.as_bool(key, value)
    if sub == "use_stamped_vel":
        return None if value is None else p.as_bool(key, value)
    if sub == "publish_rate":
        return _check(p, key, value, ("f", 0.1, 1000.0, False, "Hz"))
    if sub == "sensor_rate":
        return _check(p, key, value, ("i", 0, 200, False, "Hz"))
    if sub == "imu_part":
        from ..messages.sensors import IMU_PARTS
        if value not in IMU_PARTS:
            raise BadValue(f"{where}={value!r} must be one of {', '.join(IMU_PARTS)}{at}")
        return value
    if not isinstance(value, str):
        raise BadValue(f"{where}={value!r} must be a string{at}")
    return value


def _plain(value):
    """A value as a robot file holds it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def _suggest(key: str, known: list[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {prefix}{close[0]!r}?)" if close else ""


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


__all__ = ["RobotConfig", "Ros2Settings", "AxisLimits", "OdometryNoise", "read_robot_file", "parse_robot_file"]
