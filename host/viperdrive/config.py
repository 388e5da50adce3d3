"""The robot file: host-side parameters of one robot in YAML or TOML, validated.

Keys follow ros2_control's diff_drive_controller where the meaning is the same (docs/host.md has the mapping).
Nested tables and dotted keys are the same thing: ``linear: {x: {max_velocity: 0.5}}`` == ``linear.x.max_velocity``.
A diff_drive_controller style file (``<node>: {ros__parameters: {...}}``) is unwrapped. Limits left out (or
null, or .nan as in diff_drive_controller) are unlimited. Every error names the key, the value and the range.
"""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import BadValue

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


def _default_ros2() -> dict[str, Any]:
    return {"odom_frame_id": "odom", "base_frame_id": "base_link", "tf_frame_prefix": "", "publish_rate": 50.0,
            "enable_odom_tf": True, "pose_covariance_diagonal": None, "twist_covariance_diagonal": None,
            "use_stamped_vel": None}


@dataclass(frozen=True)
class RobotConfig:
    """Host parameters of one robot. SI units; wheel speeds in m/s at the rim."""
    wheel_separation: float = 0.152
    wheel_radius: float = 0.0325
    wheel_separation_multiplier: float = 1.0
    left_wheel_radius_multiplier: float = 1.0
    right_wheel_radius_multiplier: float = 1.0
    counts_per_rev: int | None = None           # None: take it from the board's HELLO
    max_wheel_speed: float = 0.55               # m/s at the wheel, applied to both wheels jointly
    max_wheel_acceleration: float = 1.0         # m/s^2 at the wheel (below the traction limit), jointly
    linear: AxisLimits = AxisLimits()
    angular: AxisLimits = AxisLimits()
    cmd_vel_timeout: float = 0.5                # s; 0 disables
    update_rate: float = 100.0                  # Hz of the host loop (read/update/write)
    port: str = "/dev/ttyACM0"
    baud: int = 115200
    odometry: OdometryNoise = OdometryNoise()
    ros2: dict = field(default_factory=_default_ros2)
    source: str | None = None                   # the file it came from (None: defaults / a dict)
    ignored: tuple = ()                         # diff_drive_controller keys read but without meaning here

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
    def period(self) -> float:
        return 1.0 / self.update_rate

    # ---- construction ----
    @classmethod
    def from_dict(cls, data: dict, source: str | None = None) -> RobotConfig:
        """Validate a (nested or dotted) mapping; BadValue naming key, value and range on the first problem."""
        where = f"{source}: " if source else ""
        if not isinstance(data, dict):
            raise BadValue(f"{where}the robot file must be a mapping of keys to values, got {type(data).__name__}")
        flat = _flatten(_unwrap_ros(data))
        ignored = []
        for key in list(flat):
            if key in _DDC_ROS2:
                # diff_drive_controller keeps these at top level; here they belong to the bridge's sub-dict
                flat.setdefault("ros2." + key, flat.pop(key))
            elif key in _DDC_IGNORED or _ddc_axis_ignored(key):
                ignored.append(key)
        for axis in ("linear.x", "angular.z"):
            for kind, names in (("velocity", ("max_velocity",)), ("acceleration", ("max_acceleration",
                                                                                     "max_deceleration")),
                                ("jerk", ("max_jerk",))):
                # Humble's has_*_limits: false switches the limit off whatever its value
                if flat.get(f"{axis}.has_{kind}_limits") is False:
                    for n in names:
                        flat.pop(f"{axis}.{n}", None)
        for key in ignored:
            flat.pop(key)
        kw: dict[str, Any] = {}
        axes = {"linear": {}, "angular": {}}
        noise: dict[str, Any] = {}
        ros2 = _default_ros2()
        for key, value in flat.items():
            spec = _SPECS.get(key)
            if spec is None:
                if key.startswith("ros2."):
                    sub = key[5:]
                    if sub not in ros2:
                        raise BadValue(f"{where}unknown key {key!r}{_suggest(sub, list(ros2), 'ros2.')}; "
                                       f"known ros2 keys: {', '.join(sorted(ros2))}")
                    ros2[sub] = _check_ros2(where, key, sub, value)
                    continue
                raise BadValue(f"{where}unknown key {key!r}{_suggest(key, list(_SPECS) + ['ros2.*'])}")
            checked = _check(where, key, value, spec)
            if key.startswith(("linear.x.", "angular.z.")):
                axes[key.split(".")[0]][key.split(".")[2]] = checked
            elif key.startswith("odometry."):
                noise[key[9:]] = checked
            else:
                kw[key] = checked
        return cls(linear=AxisLimits(**axes["linear"]), angular=AxisLimits(**axes["angular"]),
                   odometry=OdometryNoise(**noise), ros2=ros2, source=source, ignored=tuple(ignored), **kw)

    @classmethod
    def load(cls, path) -> RobotConfig:
        """Read a .yaml/.yml or .toml robot file. BadValue (exit code 7) for anything wrong with it."""
        p = Path(path)
        try:
            text = p.read_bytes()
        except FileNotFoundError:
            raise BadValue(f"robot file {p} does not exist") from None
        except OSError as e:
            raise BadValue(f"robot file {p} cannot be read: {e.strerror or e}") from None
        suffix = p.suffix.lower()
        try:
            if suffix == ".toml":
                data = tomllib.loads(text.decode("utf-8"))
            elif suffix in (".yaml", ".yml"):
                import yaml
                data = yaml.safe_load(text.decode("utf-8"))
                if data is None:
                    data = {}
            else:
                raise BadValue(f"robot file {p}: unknown format {suffix or '(no suffix)'!r}; use .yaml, .yml or .toml")
        except UnicodeDecodeError:
            raise BadValue(f"robot file {p} is not UTF-8 text (corrupt?)") from None
        except tomllib.TOMLDecodeError as e:
            raise BadValue(f"robot file {p} is not valid TOML: {e}") from None
        except BadValue:
            raise
        except Exception as e:  # yaml.YAMLError and its subclasses; yaml is imported lazily
            raise BadValue(f"robot file {p} is not valid YAML: {_one_line(e)}") from None
        return cls.from_dict(data, source=str(p))

    @classmethod
    def load_or_default(cls, path) -> tuple[RobotConfig, str | None]:
        """(config, None) when path loads; (defaults, the reason as a warning) when it does not."""
        if path is None:
            return cls(), None
        try:
            return cls.load(path), None
        except BadValue as e:
            return cls(), f"{e}; using the built-in defaults"

    def with_values(self, **changes) -> RobotConfig:
        """A copy with top-level fields replaced and validated (e.g. with_values(port="sim"))."""
        data = self.to_dict()
        data.update(changes)
        return RobotConfig.from_dict(data, source=self.source)

    def to_dict(self) -> dict:
        """Nested plain-data form (what a robot file holds); from_dict(to_dict()) == self."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("source", "ignored"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, AxisLimits):
                out[f.name] = {"x" if f.name == "linear" else "z": {g.name: getattr(value, g.name)
                                                                    for g in fields(value)}}
            elif isinstance(value, OdometryNoise):
                out[f.name] = {g.name: getattr(value, g.name) for g in fields(value)}
            elif isinstance(value, dict):
                out[f.name] = dict(value)
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


# ---- validation table: key -> (kind, min, max, allow None, what) ----
# kind: "f" float, "i" int, "s" str. Ranges are physical sanity bounds, not tuning advice.

_SPECS: dict[str, tuple] = {
    "wheel_separation": ("f", 0.02, 5.0, False, "m"),
    "wheel_radius": ("f", 0.005, 1.0, False, "m"),
    "wheel_separation_multiplier": ("f", 0.5, 2.0, False, ""),
    "left_wheel_radius_multiplier": ("f", 0.5, 2.0, False, ""),
    "right_wheel_radius_multiplier": ("f", 0.5, 2.0, False, ""),
    "counts_per_rev": ("i", 1, 10_000_000, True, "counts per wheel revolution"),
    "max_wheel_speed": ("f", 0.001, 50.0, False, "m/s"),
    "max_wheel_acceleration": ("f", 0.001, 100.0, False, "m/s^2"),
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


# diff_drive_controller parameters: bridge settings it keeps at top level, and ones without meaning here
_DDC_ROS2 = {"odom_frame_id", "base_frame_id", "tf_frame_prefix", "publish_rate", "enable_odom_tf",
             "pose_covariance_diagonal", "twist_covariance_diagonal", "use_stamped_vel"}
_DDC_IGNORED = {"left_wheel_names", "right_wheel_names", "open_loop", "position_feedback",
                "velocity_rolling_window_size", "tf_frame_prefix_enable", "wheels_per_side",
                "publish_limited_velocity", "use_sim_time"}
_DDC_AXIS_SUFFIXES = ("min_velocity", "min_acceleration", "min_jerk", "max_acceleration_reverse",
                      "max_deceleration_reverse", "has_velocity_limits", "has_acceleration_limits",
                      "has_jerk_limits")


def _ddc_axis_ignored(key: str) -> bool:
    return key.startswith(("linear.x.", "angular.z.")) and key.split(".", 2)[2] in _DDC_AXIS_SUFFIXES


def _check(where: str, key: str, value, spec):
    kind, lo, hi, nullable, unit = spec
    rng = f"[{lo}, {hi}]{(' ' + unit) if unit else ''}"
    if value is None or (nullable and isinstance(value, float) and math.isnan(value)):
        if nullable:
            return None
        raise BadValue(f"{where}{key} is required (a number in {rng}), got nothing")
    if kind == "s":
        if not isinstance(value, str) or not value:
            raise BadValue(f"{where}{key}={value!r} must be a non-empty string")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadValue(f"{where}{key}={value!r} must be a number in {rng}")
    if kind == "i" and (isinstance(value, float) and not value.is_integer()):
        raise BadValue(f"{where}{key}={value!r} must be a whole number in {rng}")
    if not math.isfinite(value):
        raise BadValue(f"{where}{key}={value!r} must be a finite number in {rng}")
    if value < lo or value > hi:
        raise BadValue(f"{where}{key}={value!r} is outside {rng}")
    return int(value) if kind == "i" else float(value)


def _check_ros2(where: str, key: str, sub: str, value):
    if sub in ("pose_covariance_diagonal", "twist_covariance_diagonal"):
        if value is None:
            return None
        if (not isinstance(value, (list, tuple)) or len(value) != 6
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                           for v in value)):
            raise BadValue(f"{where}{key}={value!r} must be a list of 6 finite numbers >= 0 (or null: computed)")
        return [float(v) for v in value]
    if sub in ("enable_odom_tf",):
        if not isinstance(value, bool):
            raise BadValue(f"{where}{key}={value!r} must be true or false")
        return value
    if sub == "use_stamped_vel":
        if value is not None and not isinstance(value, bool):
            raise BadValue(f"{where}{key}={value!r} must be true, false or null (auto)")
        return value
    if sub == "publish_rate":
        return _check(where, key, value, ("f", 0.1, 1000.0, False, "Hz"))
    if not isinstance(value, str):
        raise BadValue(f"{where}{key}={value!r} must be a string")
    return value


def _unwrap_ros(data: dict) -> dict:
    # diff_drive_controller files look like {controller_name: {ros__parameters: {...}}}
    if len(data) == 1:
        (inner,) = data.values()
        if isinstance(inner, dict) and list(inner) == ["ros__parameters"] and isinstance(inner["ros__parameters"],
                                                                                         dict):
            return inner["ros__parameters"]
    if list(data) == ["ros__parameters"] and isinstance(data["ros__parameters"], dict):
        return data["ros__parameters"]
    return data


def _flatten(data: dict, prefix: str = "") -> dict:
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):  # a nested table is the same as its dotted keys
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _suggest(key: str, known: list[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" (did you mean {prefix}{close[0]!r}?)" if close else ""


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def replace_config(config: RobotConfig, **changes) -> RobotConfig:
    """dataclasses.replace without validation (tests and programmatic setups with already-checked values)."""
    return replace(config, **changes)
