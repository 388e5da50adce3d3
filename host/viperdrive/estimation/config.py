# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""robot_localization's parameter file, read unchanged: ROS 2 (`<node>: ros__parameters: ...`, namespaces, `/**`
wildcards), ROS 1 (flat, or `<node>: ...`), YAML 1.2 as ROS reads it (viperdrive.robot.rosparams).

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

from ..robot.files import read_text
from ..robot.rosparams import (
    Document,
    NodeEntry,
    ParamError,
    Params,
    check_ros2_layout,
    choose_entry,
    node_params,
    parse_yaml,
    ros1_nodes,
    ros2_entries,
)
from .ekf import DEFAULT_INITIAL_COVARIANCE, DEFAULT_PROCESS_NOISE, STATE_NAMES, STATE_SIZE, EkfConfig
from .measurements import DIFFERENTIAL_COVARIANCE, GRAVITY, KINDS, SensorConfig

FREQUENCY_MAX = 1000.0          # Hz: the filter's period is at least 1 ms
DURATION_MAX = 3600.0           # s: timeouts and the history


class ConfigError(ParamError):
    """The parameter file cannot be used; the message names the file, the node, the key and the value."""


# robot_localization's parameters, ROS 1 (2.6/2.7, Melodic/Noetic) and ROS 2 (3.x, Humble to Rolling)
USED_GLOBAL = {
    "frequency", "sensor_timeout", "two_d_mode", "smooth_lagged_data", "history_length", "process_noise_covariance",
    "initial_estimate_covariance", "dynamic_process_noise_covariance", "initial_state", "gravitational_acceleration",
    "map_frame", "odom_frame", "base_link_frame", "world_frame",
}
NO_EFFECT_GLOBAL = {
    "base_link_frame_output", "tf_prefix", "print_diagnostics", "debug", "debug_out_file", "publish_tf",
    "publish_acceleration", "transform_time_offset", "transform_timeout", "use_sim_time",
    "permit_corrected_publication", "predict_to_current_time", "reset_on_time_jump", "disabled_at_startup",
    "silent_tf_failure",
}
NO_EFFECT_PREFIXES = ("qos_overrides.", "diagnostic_updater.")      # rclcpp / diagnostic_updater parameters
UNSUPPORTED_GLOBAL = {
    "use_control", "stamped_control", "control_timeout", "control_config", "acceleration_limits",
    "acceleration_gains", "deceleration_limits", "deceleration_gains",
}
UKF_GLOBAL = {"alpha", "kappa", "beta"}          # ukf_localization_node's sigma-point parameters
# navsat_transform_node's parameters: a node with these is not a filter
NAVSAT_KEYS = {"magnetic_declination_radians", "yaw_offset", "zero_altitude", "broadcast_utm_transform",
               "broadcast_cartesian_transform", "broadcast_utm_transform_as_parent_frame",
               "broadcast_cartesian_transform_as_parent_frame", "publish_filtered_gps", "use_odometry_yaw",
               "wait_for_datum", "datum", "use_manual_datum", "use_local_cartesian", "cartesian_frame_id"}
FILTER_KEYS = USED_GLOBAL - {"frequency", "map_frame", "odom_frame", "base_link_frame", "world_frame"}
STATE_ORDER = "(x y z roll pitch yaw vx vy vz vroll vpitch vyaw ax ay az)"
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
    "reacquire_after": KINDS,
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
    odom_frame: str = "odom"
    map_frame: str = "map"
    publish_tf: bool = True
    sensors: list[SensorConfig] = field(default_factory=list)
    source: str = ""
    node: str | None = None
    # (category, key, text): category in unknown / unsupported / no_effect / warning
    report: list[tuple[str, str, str]] = field(default_factory=list)
    params: Params | None = field(default=None, repr=False)     # the node's parameters, with their lines

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
    path = Path(path)
    # a regular file of an EKF file's size, UTF-8 (robot/files.py: a FIFO, /dev/zero or a 50 MB file is refused)
    text = read_text(path, "EKF config", error=ConfigError)
    try:
        doc = parse_yaml(text, str(path))
    except ParamError as e:
        raise ConfigError(str(e)) from None
    return config_from_document(doc, node=node)


def is_filter_node(keys) -> bool:
    """An ekf/ukf_localization_node's parameters (not navsat_transform_node's or another node's)."""
    keys = set(map(str, keys))
    if keys & NAVSAT_KEYS:
        return False
    return bool(keys & FILTER_KEYS) or any(SENSOR_KEY.match(k) for k in keys)


def select_node(doc: Document, node: str | None) -> Params:
    """The parameters of the filter node the file configures: the ROS 2 node entries (wildcards merged in file
    order), a ROS 1 namespaced node, or the flat file. Several EKF/UKF nodes need `node`; the error lists only
    those (a navsat_transform_node or another node beside them is never a choice)."""
    data, src = doc.data, doc.source
    if not isinstance(data, dict):
        raise ConfigError(f"{src}: expected a mapping of parameters, got {type(data).__name__}")
    entries = ros2_entries(data)
    if entries:
        check_ros2_layout(doc, ConfigError)
        named: dict[str, NodeEntry] = {}
        for e in entries:
            if not e.wildcard:
                named.setdefault(e.fqn, e)
        keys = {f: set(node_params(doc, entries, f, e.key).keys()) for f, e in named.items()}
        filters = [e for f, e in named.items() if is_filter_node(keys[f])]
        if not filters:     # nothing says "filter": every node that is not navsat_transform's is a candidate
            filters = [e for f, e in named.items() if not keys[f] & NAVSAT_KEYS]
        if node is not None:
            e = choose_entry(entries, node, filters, "EKF/UKF nodes", src, ConfigError)
            if e.fqn in named and named[e.fqn] not in filters:
                raise ConfigError(f"{src}: {e.key} is not an EKF/UKF node (EKF/UKF nodes: "
                                  f"{', '.join(f.key for f in filters) or 'none'})")
            return node_params(doc, entries, e.fqn, e.key, ConfigError)
        if len(filters) > 1:
            raise ConfigError(f"{src}: {len(filters)} EKF/UKF nodes ({', '.join(e.key for e in filters)}): choose one "
                              f"with --node")
        if filters:
            return node_params(doc, entries, filters[0].fqn, filters[0].key, ConfigError)
        wild = [e for e in entries if e.wildcard]
        merged = Params(doc=doc, source=src, node=wild[0].key if wild else None, ros2=True, error=ConfigError)
        for e in wild:
            merged.merge(e.params, e.path)
        if is_filter_node(merged.keys()) or not named:
            return merged
        raise ConfigError(f"{src}: no EKF/UKF node (nodes: {', '.join(e.key for e in named.values())})")
    nodes = ros1_nodes(data)
    if len(nodes) == 1 and nodes[0][0] is None:            # flat (ROS 1 private parameters, or a bare file)
        if node is not None:
            raise ConfigError(f"{src}: --node {node}: the file is flat (one node's parameters), it names no nodes")
        return Params.of(data, doc, error=ConfigError)
    # named nodes only (None names the flat file's one entry, returned above)
    candidates = [(n, p, path) for n, p, path in nodes if n is not None and is_filter_node(p)] or \
        [(n, p, path) for n, p, path in nodes if n is not None and not set(map(str, p)) & NAVSAT_KEYS]
    if node is not None:
        hits = [x for x in candidates if x[0] == node.strip("/") or x[0].split("/")[-1] == node]
        if len(hits) != 1:
            listed = ", ".join(n for n, _, _ in candidates) or "none"
            raise ConfigError(f"{src}: no node '{node}' (EKF/UKF nodes: {listed})" if not hits else
                              f"{src}: --node {node} matches {len(hits)} nodes ({listed}): give the full name")
        candidates = hits
    if len(candidates) != 1:
        listed = ", ".join(n for n, _, _ in candidates) or "none"
        everyone = ", ".join(n for n, _, _ in nodes if n)
        raise ConfigError(f"{src}: {len(candidates)} EKF/UKF nodes ({listed})" +
                          (": choose one with --node" if candidates else f" (nodes: {everyone})"))
    name, params, path = candidates[0]
    return Params.of(params, doc, path, node=name, error=ConfigError)


def config_from_dict(doc, source: str = "<config>", node: str | None = None) -> FilterConfig:
    return config_from_document(Document(doc, source), node=node)


def _matrix(p: Params, key: str, default: np.ndarray) -> np.ndarray:
    values = p.number_list(key, (STATE_SIZE * STATE_SIZE, STATE_SIZE),
                           f" (a {STATE_SIZE}x{STATE_SIZE} matrix row by row, or its diagonal)")
    if values is None:
        return default.copy()
    if len(values) == STATE_SIZE * STATE_SIZE:
        m = np.array(values, dtype=float).reshape(STATE_SIZE, STATE_SIZE)
    else:
        m = np.diag(np.array(values, dtype=float))      # a diagonal given as 15 numbers
    if not np.allclose(m, m.T, atol=1e-12):
        i, j = np.argwhere(~np.isclose(m, m.T, atol=1e-12))[0]
        p.fail(key, f"not symmetric: entry ({i}, {j}) is {float(m[i, j])!r} but ({j}, {i}) is {float(m[j, i])!r}",
               int(i * STATE_SIZE + j))
    neg = np.flatnonzero(np.diag(m) < 0)
    if neg.size:
        i = int(neg[0])
        p.fail(key, f"negative variance {float(m[i, i])!r} for {STATE_NAMES[i]} on its diagonal",
               i * STATE_SIZE + i if len(values) > STATE_SIZE else i)
    return m


def config_from_document(doc: Document, node: str | None = None) -> FilterConfig:
    p = select_node(doc, node)
    source = doc.source
    cfg = FilterConfig(source=source, node=p.node)
    cfg.params = p
    report = cfg.report
    # ranges a robot can mean: a filter faster than 1 kHz outruns every sensor and the host (1e12 Hz was accepted
    # and `fuse` never finished), a timeout or history past an hour is a typo
    cfg.frequency = p.number("frequency", 30.0, positive=True, maximum=FREQUENCY_MAX, unit="Hz")
    cfg.sensor_timeout = p.number("sensor_timeout", 1.0 / cfg.frequency, positive=True, maximum=DURATION_MAX,
                                  unit="s")
    cfg.two_d_mode = p.boolean("two_d_mode", False)
    cfg.smooth_lagged_data = p.boolean("smooth_lagged_data", False)
    cfg.history_length = p.number("history_length", 0.0, minimum=0.0, maximum=DURATION_MAX, unit="s")
    cfg.dynamic_process_noise_covariance = p.boolean("dynamic_process_noise_covariance", False)
    cfg.process_noise_covariance = _matrix(p, "process_noise_covariance", DEFAULT_PROCESS_NOISE)
    cfg.initial_estimate_covariance = _matrix(p, "initial_estimate_covariance", DEFAULT_INITIAL_COVARIANCE)
    cfg.gravitational_acceleration = p.number("gravitational_acceleration", GRAVITY, positive=True, maximum=100.0,
                                              unit="m/s^2")
    cfg.odom_frame = p.string("odom_frame", "odom")
    cfg.map_frame = p.string("map_frame", "map")
    cfg.world_frame = p.string("world_frame", cfg.odom_frame)
    cfg.base_link_frame = p.string("base_link_frame", "base_link")
    cfg.publish_tf = p.boolean("publish_tf", True)      # the live filter (viperdrive ros2 --ekf) obeys it
    state = p.number_list("initial_state", (STATE_SIZE,), f" {STATE_ORDER}")
    if state is not None:
        cfg.initial_state = np.array(state, dtype=float)
    if cfg.smooth_lagged_data and cfg.history_length <= 0.0:
        report.append(("warning", "history_length",
                       "smooth_lagged_data is true but history_length is 0: no lagged measurement can be rewound"))
    if cfg.frequency and cfg.sensor_timeout < 1.0 / cfg.frequency:
        report.append(("warning", "sensor_timeout", "shorter than one filter period (1/frequency)"))

    # sensors: topic keys first, then their suffix keys
    sensor_keys: dict[str, dict[str, str]] = {}
    for key in p.keys():
        m = SENSOR_KEY.match(str(key))
        if m:
            sensor_keys.setdefault(m.group(1) + m.group(2), {})[m.group(3) or ""] = key
    for key in p.keys():
        skey = str(key)
        if SENSOR_KEY.match(skey):
            continue
        if skey in USED_GLOBAL:
            continue
        if skey in NO_EFFECT_GLOBAL or skey.startswith(NO_EFFECT_PREFIXES):
            report.append(("no_effect", skey, "has no effect offline (ROS node runtime setting)"))
            if skey == "disabled_at_startup" and p.get(key) is True:
                report.append(("warning", skey, "robot_localization would not filter until enabled; fuse filters "
                                                "from the first message"))
        elif skey in UNSUPPORTED_GLOBAL:
            if skey == "use_control" and p.get(key) is True:
                report.append(("unsupported", skey, "control input is not used: prediction runs without it"))
            elif skey != "use_control":
                report.append(("unsupported", skey, "control input settings are not used"))
        elif skey in UKF_GLOBAL:
            report.append(("unsupported", skey, "a UKF parameter: viperdrive runs the EKF on this configuration"))
        else:
            report.append(("unknown", skey, "unknown parameter (not robot_localization's): ignored"))

    by_kind: dict[str, list[int]] = {k: [] for k in KINDS}
    for name, keys in sorted(sensor_keys.items()):
        m = re.match(r"[a-z]+", name)
        assert m is not None                # sensor_keys holds names of the form <kind><index>
        kind = m.group(0)
        index = int(name[len(kind):])
        if "" not in keys:
            for suffix in keys:
                report.append(("unknown", f"{name}_{suffix}", f"no topic parameter '{name}': this setting is unused"))
            continue
        by_kind[kind].append(index)
        cfg.sensors.append(_sensor(name, kind, keys, p, cfg, report))
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
    for key, text in p.notes:
        report.append(("warning", key, text))
    return cfg


def _sensor(name, kind, keys, p: Params, cfg, report) -> SensorConfig:
    topic = p.string(name, None)
    if not topic:
        p.fail(name, f"expected a topic name, got {p.get(name)!r}")
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
    vec = p.bool_list(vec_key, STATE_SIZE, f" {STATE_ORDER}")
    if vec is None:
        vec = [False] * STATE_SIZE
        report.append(("warning", vec_key, "missing: defaults to all false, so this sensor is unused"))
    elif not any(vec):
        report.append(("warning", vec_key, "selects no variable: this sensor is unused"))
    inf = math.inf
    if kind in ("odom", "imu"):
        pose_thr = p.number(f"{name}_pose_rejection_threshold", inf, positive=True)
        twist_key = f"{name}_twist_rejection_threshold"
        if kind == "imu" and twist_key not in p and f"{name}_angular_velocity_rejection_threshold" in p:
            twist_key = f"{name}_angular_velocity_rejection_threshold"
            report.append(("warning", twist_key, f"deprecated name: use {name}_twist_rejection_threshold"))
        twist_thr = p.number(twist_key, inf, positive=True)
    else:
        pose_thr = twist_thr = p.number(f"{name}_rejection_threshold", inf, positive=True)
    accel_thr = p.number(f"{name}_linear_acceleration_rejection_threshold", inf, positive=True)
    differential = p.boolean(f"{name}_differential", False)
    relative = p.boolean(f"{name}_relative", False)
    if kind == "twist" and differential:
        report.append(("no_effect", f"{name}_differential", "a twist sensor has no pose to differentiate"))
    if differential and relative:
        report.append(("warning", f"{name}_relative", "differential is also true; differential takes precedence"))
    diff_cov = p.string(f"{name}_differential_covariance", "statistical")
    if diff_cov not in DIFFERENTIAL_COVARIANCE:
        p.fail(f"{name}_differential_covariance", f"expected one of {', '.join(DIFFERENTIAL_COVARIANCE)}, got "
                                                  f"{diff_cov!r}")
    if differential and kind != "twist" and f"{name}_differential_covariance" not in p:
        report.append(("warning", f"{name}_differential",
                       "the differentiated velocity's covariance is (R_prev + R_cur) / dt^2 here; robot_localization "
                       f"uses (R_prev + R_cur) * dt. Set {name}_differential_covariance: robot_localization to "
                       "reproduce it"))
    remove_g = p.boolean(f"{name}_remove_gravitational_acceleration", False)
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
    lowpass_tau = p.number(f"{name}_lowpass_tau", 0.0, minimum=0.0)
    timeout = p.number(f"{name}_timeout", None, positive=True, maximum=DURATION_MAX, unit="s")
    reacquire = p.number(f"{name}_reacquire_after", 0, minimum=0, double=False)
    if reacquire != int(reacquire):
        p.fail(f"{name}_reacquire_after", f"expected a whole number of measurements, got {reacquire!r}")
    if reacquire == 1:
        p.fail(f"{name}_reacquire_after", "1 would open the gate for every reading (no gate): use 2 or more, or 0")
    for key in (f"{name}_queue_size",):
        if key in p:
            v = p.get(key)
            if isinstance(v, float) and p.ros2:
                p.note(key, f"{v!r}: robot_localization declares {key} an integer; ROS 2 refuses a decimal"
                            f"{p.at(key)}: write {int(v)}")
    return SensorConfig(name=name, kind=kind, topic=topic, update_vector=tuple(vec), differential=differential,
                        relative=relative and not differential, differential_covariance=diff_cov,
                        pose_threshold=pose_thr, twist_threshold=twist_thr,
                        accel_threshold=accel_thr, remove_gravity=remove_g, gravity=cfg.gravitational_acceleration,
                        lowpass_tau=lowpass_tau, timeout_s=timeout, reacquire_after=int(reacquire))
