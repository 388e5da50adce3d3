"""robot_localization's parameter file, read unchanged: nested (`<node>: ros__parameters: ...`) or flat.

Every key is accounted for. Keys that drive the filter are used; keys that only matter to a running ROS node
(frames, TF, diagnostics, queue sizes) are listed as having no effect offline; robot_localization features this
filter does not reproduce (control input) are listed as unsupported; anything else is reported as unknown, since a
misspelt `odom0_confg` silently leaves a sensor unused in robot_localization.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import BadValue
from .core import DEFAULT_INITIAL_COVARIANCE, DEFAULT_PROCESS_NOISE, STATE_SIZE, EkfConfig
from .sensors import DIFFERENTIAL_COVARIANCE, GRAVITY, KINDS, SensorConfig


class ConfigError(BadValue):
    """The parameter file cannot be used; the message names the file and the key."""


USED_GLOBAL = {
    "frequency", "sensor_timeout", "two_d_mode", "smooth_lagged_data", "history_length", "process_noise_covariance",
    "initial_estimate_covariance", "dynamic_process_noise_covariance", "initial_state", "gravitational_acceleration",
    "map_frame", "odom_frame", "base_link_frame", "world_frame",
}
NO_EFFECT_GLOBAL = {
    "base_link_frame_output", "tf_prefix", "print_diagnostics", "debug", "debug_out_file", "publish_tf",
    "publish_acceleration", "transform_time_offset", "transform_timeout", "use_sim_time",
    "permit_corrected_publication", "predict_to_current_time", "reset_on_time_jump", "disabled_at_startup",
}
UNSUPPORTED_GLOBAL = {
    "use_control", "stamped_control", "control_timeout", "control_config", "acceleration_limits",
    "acceleration_gains", "deceleration_limits", "deceleration_gains",
}
SENSOR_SUFFIXES = {
    # suffix: kinds it applies to
    "config": KINDS,
    "differential": ("odom", "imu", "pose", "twist"),
    "relative": ("odom", "imu", "pose", "twist"),
    "pose_rejection_threshold": ("odom", "imu"),
    "twist_rejection_threshold": ("odom", "imu"),
    "angular_velocity_rejection_threshold": ("imu",),     # deprecated robot_localization name of the imu twist one
    "linear_acceleration_rejection_threshold": ("imu",),
    "rejection_threshold": ("pose", "twist"),
    "remove_gravitational_acceleration": ("imu",),
    "queue_size": KINDS,
    "nodelay": KINDS,
    "pose_use_child_frame": ("odom", "pose"),
    # viperdrive extensions (robot_localization ignores them)
    "differential_covariance": ("odom", "imu", "pose"),
    "lowpass_tau": ("imu",),
    "timeout": KINDS,
}
NO_EFFECT_SUFFIXES = {"queue_size", "nodelay", "pose_use_child_frame"}
SENSOR_KEY = re.compile(r"^(odom|imu|pose|twist)(\d+)(?:_(.+))?$")


@dataclass
class FilterConfig:
    """Everything `viperdrive fuse` needs, from one parameter file."""
    frequency: float = 30.0
    sensor_timeout: float = 1.0 / 30.0
    two_d_mode: bool = False
    smooth_lagged_data: bool = False
    history_length: float = 0.0
    dynamic_process_noise_covariance: bool = False
    process_noise_covariance: np.ndarray = field(default_factory=lambda: DEFAULT_PROCESS_NOISE.copy())
    initial_estimate_covariance: np.ndarray = field(default_factory=lambda: DEFAULT_INITIAL_COVARIANCE.copy())
    initial_state: np.ndarray = field(default_factory=lambda: np.zeros(STATE_SIZE))
    gravitational_acceleration: float = GRAVITY
    world_frame: str = "odom"
    base_link_frame: str = "base_link"
    sensors: list[SensorConfig] = field(default_factory=list)
    source: str = ""
    node: str | None = None
    # (category, key, text): category in unknown / unsupported / no_effect / warning
    report: list[tuple[str, str, str]] = field(default_factory=list)

    def ekf_config(self) -> EkfConfig:
        return EkfConfig(process_noise=self.process_noise_covariance,
                         initial_covariance=self.initial_estimate_covariance, initial_state=self.initial_state,
                         two_d_mode=self.two_d_mode, dynamic_process_noise=self.dynamic_process_noise_covariance,
                         smooth_lagged_data=self.smooth_lagged_data, history_length=self.history_length,
                         sensor_timeout=self.sensor_timeout)

    def notes(self, *categories: str) -> list[str]:
        return [f"{key}: {text}" for cat, key, text in self.report if not categories or cat in categories]


def load_config(path, node: str | None = None) -> FilterConfig:
    """Read a robot_localization YAML file. Raises ConfigError (a UserError) with the file and key named."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{path}: not valid YAML{at}: {problem}") from None
    return config_from_dict(doc, source=str(path), node=node)


def _parameters(doc, source, node):
    """The parameter dict of the chosen node (or the flat file itself) and that node's name. Parameters under the
    ROS 2 wildcard `/**` apply to every node, as ros2 launch applies them; the node's own keys win."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: expected a mapping of parameters, got {type(doc).__name__}")
    if "ros__parameters" in doc and isinstance(doc["ros__parameters"], dict):
        return doc["ros__parameters"], None
    nodes = {k: v["ros__parameters"] for k, v in doc.items()
             if isinstance(v, dict) and isinstance(v.get("ros__parameters"), dict)}
    if not nodes:
        return doc, None       # flat file
    wildcard = nodes.pop("/**", {})
    if node is not None:
        if node not in nodes:
            raise ConfigError(f"{source}: no node '{node}' (nodes with ros__parameters: {', '.join(nodes) or 'none'})")
        return {**wildcard, **nodes[node]}, node
    if len(nodes) > 1:
        raise ConfigError(f"{source}: {len(nodes)} nodes have ros__parameters ({', '.join(nodes)}): choose one with "
                          f"--node")
    if not nodes:
        return wildcard, "/**"
    (name, body), = nodes.items()
    return {**wildcard, **body}, name


def _typed(p, key, source, default, kind, what):
    """p[key] when present and of type `kind`, default when absent; anything else is a ConfigError."""
    if key not in p:
        return default
    v = p[key]
    if not isinstance(v, kind):
        raise ConfigError(f"{source}: {key} must be {what}, not {v!r}")
    return v


def _bool(p, key, source, default):
    return _typed(p, key, source, default, bool, "true or false")


def _number(p, key, source, default, minimum=None, positive=False):
    if key not in p:
        return default
    v = p[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ConfigError(f"{source}: {key} must be a number, not {v!r}")
    v = float(v)
    if positive and v <= 0:
        raise ConfigError(f"{source}: {key} must be > 0, not {v!r}")
    if minimum is not None and v < minimum:
        raise ConfigError(f"{source}: {key} must be >= {minimum}, not {v!r}")
    return v


def _string(p, key, source, default):
    return _typed(p, key, source, default, str, "a string")


def _matrix(p, key, source, default):
    if key not in p:
        return default.copy()
    v = p[key]
    if not isinstance(v, list) or any(isinstance(e, bool) or not isinstance(e, (int, float)) for e in v):
        raise ConfigError(f"{source}: {key} must be a list of {STATE_SIZE * STATE_SIZE} numbers")
    if len(v) == STATE_SIZE * STATE_SIZE:
        m = np.array(v, dtype=float).reshape(STATE_SIZE, STATE_SIZE)
    elif len(v) == STATE_SIZE:
        m = np.diag(np.array(v, dtype=float))      # a diagonal given as 15 numbers (viperdrive shorthand)
    else:
        raise ConfigError(f"{source}: {key} has {len(v)} numbers; it needs {STATE_SIZE * STATE_SIZE} "
                          f"(a {STATE_SIZE}x{STATE_SIZE} matrix, row by row) or {STATE_SIZE} (its diagonal)")
    if not np.all(np.isfinite(m)):
        raise ConfigError(f"{source}: {key} contains a value that is not finite")
    if not np.allclose(m, m.T, atol=1e-12):
        raise ConfigError(f"{source}: {key} is not symmetric")
    if np.any(np.diag(m) < 0):
        raise ConfigError(f"{source}: {key} has a negative variance on its diagonal")
    return m


def config_from_dict(doc, source: str = "<config>", node: str | None = None) -> FilterConfig:
    p, node_name = _parameters(doc, source, node)
    cfg = FilterConfig(source=source, node=node_name)
    report = cfg.report
    cfg.frequency = _number(p, "frequency", source, 30.0, positive=True)
    cfg.sensor_timeout = _number(p, "sensor_timeout", source, 1.0 / cfg.frequency, positive=True)
    cfg.two_d_mode = _bool(p, "two_d_mode", source, False)
    cfg.smooth_lagged_data = _bool(p, "smooth_lagged_data", source, False)
    cfg.history_length = _number(p, "history_length", source, 0.0, minimum=0.0)
    cfg.dynamic_process_noise_covariance = _bool(p, "dynamic_process_noise_covariance", source, False)
    cfg.process_noise_covariance = _matrix(p, "process_noise_covariance", source, DEFAULT_PROCESS_NOISE)
    cfg.initial_estimate_covariance = _matrix(p, "initial_estimate_covariance", source, DEFAULT_INITIAL_COVARIANCE)
    cfg.gravitational_acceleration = _number(p, "gravitational_acceleration", source, GRAVITY, positive=True)
    odom_frame = _string(p, "odom_frame", source, "odom")
    _string(p, "map_frame", source, "map")
    cfg.world_frame = _string(p, "world_frame", source, odom_frame)
    cfg.base_link_frame = _string(p, "base_link_frame", source, "base_link")
    if "initial_state" in p:
        v = p["initial_state"]
        if not isinstance(v, list) or len(v) != STATE_SIZE or any(
                isinstance(e, bool) or not isinstance(e, (int, float)) for e in v):
            raise ConfigError(f"{source}: initial_state must be a list of {STATE_SIZE} numbers")
        cfg.initial_state = np.array(v, dtype=float)
    if cfg.smooth_lagged_data and cfg.history_length <= 0.0:
        report.append(("warning", "history_length",
                       "smooth_lagged_data is true but history_length is 0: no lagged measurement can be rewound"))
    if cfg.frequency and cfg.sensor_timeout < 1.0 / cfg.frequency:
        report.append(("warning", "sensor_timeout", "shorter than one filter period (1/frequency)"))

    # sensors: topic keys first, then their suffix keys
    sensor_keys: dict[str, dict[str, object]] = {}
    for key in p:
        m = SENSOR_KEY.match(str(key))
        if m:
            sensor_keys.setdefault(m.group(1) + m.group(2), {})[m.group(3) or ""] = p[key]
    for key in p:
        skey = str(key)
        if SENSOR_KEY.match(skey):
            continue
        if skey in USED_GLOBAL:
            continue
        if skey in NO_EFFECT_GLOBAL:
            report.append(("no_effect", skey, "has no effect offline (ROS node runtime setting)"))
            if skey == "disabled_at_startup" and p[key] is True:
                report.append(("warning", skey, "robot_localization would not filter until enabled; fuse filters "
                                                "from the first message"))
        elif skey in UNSUPPORTED_GLOBAL:
            if skey == "use_control" and p[key] is True:
                report.append(("unsupported", skey, "control input is not used: prediction runs without it"))
            elif skey != "use_control":
                report.append(("unsupported", skey, "control input settings are not used"))
        else:
            report.append(("unknown", skey, "unknown parameter (not robot_localization's): ignored"))

    by_kind: dict[str, list[int]] = {k: [] for k in KINDS}
    for name, keys in sorted(sensor_keys.items()):
        kind = re.match(r"[a-z]+", name).group(0)
        index = int(name[len(kind):])
        if "" not in keys:
            for suffix in keys:
                report.append(("unknown", f"{name}_{suffix}", f"no topic parameter '{name}': this setting is unused"))
            continue
        by_kind[kind].append(index)
        cfg.sensors.append(_sensor(name, kind, keys, source, cfg, report))
    for kind, indices in by_kind.items():
        indices.sort()
        for expected, got in enumerate(indices):
            if got != expected:
                report.append(("warning", f"{kind}{got}",
                               f"{kind}{expected} is not defined: robot_localization stops at the first gap and "
                               f"would ignore {kind}{got}; viperdrive uses it"))
                break
    if not cfg.sensors:
        report.append(("warning", "<sensors>", "no sensor (odomN, imuN, poseN, twistN) is configured"))
    return cfg


def _sensor(name, kind, keys, source, cfg, report) -> SensorConfig:
    topic = keys[""]
    if not isinstance(topic, str) or not topic:
        raise ConfigError(f"{source}: {name} must be a topic name, not {topic!r}")
    sp = {f"{name}_{s}" if s else name: v for s, v in keys.items()}
    for suffix in keys:
        if not suffix:
            continue
        full = f"{name}_{suffix}"
        if suffix not in SENSOR_SUFFIXES:
            report.append(("unknown", full, "unknown sensor parameter: ignored"))
        elif kind not in SENSOR_SUFFIXES[suffix]:
            report.append(("no_effect", full, f"does not apply to a {kind} sensor"))
        elif suffix in NO_EFFECT_SUFFIXES:
            report.append(("no_effect", full, "has no effect offline (ROS node runtime setting)"))
    vec_key = f"{name}_config"
    if vec_key in sp:
        vec = sp[vec_key]
        if not isinstance(vec, list) or len(vec) != STATE_SIZE or any(not isinstance(b, bool) for b in vec):
            raise ConfigError(f"{source}: {vec_key} must be a list of {STATE_SIZE} true/false values "
                              f"(x y z roll pitch yaw vx vy vz vroll vpitch vyaw ax ay az)")
    else:
        vec = [False] * STATE_SIZE
        report.append(("warning", vec_key, "missing: defaults to all false, so this sensor is unused"))
    if vec_key in sp and not any(vec):
        report.append(("warning", vec_key, "selects no variable: this sensor is unused"))
    inf = math.inf
    if kind in ("odom", "imu"):
        pose_thr = _number(sp, f"{name}_pose_rejection_threshold", source, inf, positive=True)
        twist_key = f"{name}_twist_rejection_threshold"
        if kind == "imu" and twist_key not in sp and f"{name}_angular_velocity_rejection_threshold" in sp:
            twist_key = f"{name}_angular_velocity_rejection_threshold"
            report.append(("warning", twist_key, f"deprecated name: use {name}_twist_rejection_threshold"))
        twist_thr = _number(sp, twist_key, source, inf, positive=True)
    else:
        pose_thr = twist_thr = _number(sp, f"{name}_rejection_threshold", source, inf, positive=True)
    accel_thr = _number(sp, f"{name}_linear_acceleration_rejection_threshold", source, inf, positive=True)
    differential = _bool(sp, f"{name}_differential", source, False)
    relative = _bool(sp, f"{name}_relative", source, False)
    if kind == "twist" and differential:
        report.append(("no_effect", f"{name}_differential", "a twist sensor has no pose to differentiate"))
    if differential and relative:
        report.append(("warning", f"{name}_relative", "differential is also true; differential takes precedence"))
    diff_cov = _string(sp, f"{name}_differential_covariance", source, "statistical")
    if diff_cov not in DIFFERENTIAL_COVARIANCE:
        raise ConfigError(f"{source}: {name}_differential_covariance must be one of "
                          f"{', '.join(DIFFERENTIAL_COVARIANCE)}, not {diff_cov!r}")
    if differential and kind != "twist" and f"{name}_differential_covariance" not in sp:
        report.append(("warning", f"{name}_differential",
                       "the differentiated velocity's covariance is (R_prev + R_cur) / dt^2 here; robot_localization "
                       f"uses (R_prev + R_cur) * dt. Set {name}_differential_covariance: robot_localization to "
                       "reproduce it"))
    remove_g = _bool(sp, f"{name}_remove_gravitational_acceleration", source, False)
    if kind == "imu" and any(vec[12:15]) and not remove_g:
        report.append(("warning", f"{name}_remove_gravitational_acceleration",
                       "false while linear acceleration is fused: gravity (9.8 m/s^2 on z) stays in the data"))
    if kind != "imu" and any(vec[12:15]):
        report.append(("warning", vec_key, f"a {kind} message carries no acceleration: ax ay az are ignored"))
    if kind in ("pose",) and any(vec[6:12]):
        report.append(("warning", vec_key, "a pose message carries no velocity: the velocity entries are ignored"))
    if kind == "twist" and any(vec[0:6]):
        report.append(("warning", vec_key, "a twist message carries no pose: the pose entries are ignored"))
    if cfg.two_d_mode and any(vec[i] for i in (2, 3, 4, 8, 9, 10, 14)):
        report.append(("no_effect", vec_key, "two_d_mode: z, roll, pitch and their rates are held at zero"))
    lowpass_tau = _number(sp, f"{name}_lowpass_tau", source, 0.0, minimum=0.0)
    timeout = _number(sp, f"{name}_timeout", source, None, positive=True)
    return SensorConfig(name=name, kind=kind, topic=topic, update_vector=tuple(vec), differential=differential,
                        relative=relative and not differential, differential_covariance=diff_cov,
                        pose_threshold=pose_thr, twist_threshold=twist_thr,
                        accel_threshold=accel_thr, remove_gravity=remove_g, gravity=cfg.gravitational_acceleration,
                        lowpass_tau=lowpass_tau, timeout=timeout)
