# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""State estimation: robot_localization's 15-variable EKF with its YAML configuration, sensor inputs,
and the small one-angle filters.

- ekf: the filter; config: robot_localization's parameter file, read unchanged; measurements: sensor readings
  into filter measurements
- schedule: the filter's timing, one for live and replay; live: the filter fed while the robot drives; process:
  the live filter in a process of its own; replay: offline fusion of an MCAP file (`viperdrive fuse`)
- lint: the config lint; simple: one-angle filters; simruns: synthetic runs with noisy sensors

    from viperdrive.estimation import Ekf, EkfConfig, Measurement, SensorConfig, SensorInput, load_config
    cfg = load_config("ekf.yaml")               # robot_localization's parameter file, unchanged
    ekf = Ekf(cfg.ekf_config())
    inputs = {s.name: SensorInput(s) for s in cfg.sensors}
    for m in inputs["odom0"].odometry(t, position, q_wxyz, pose_cov6, linear, angular, twist_cov6):
        ekf.process(m)
    state, P = ekf.predicted(t_out)
"""
from .config import ConfigError, FilterConfig, config_from_dict, load_config
from .ekf import (
    ANGLES,
    AX,
    AY,
    AZ,
    DEFAULT_INITIAL_COVARIANCE,
    DEFAULT_PROCESS_NOISE,
    LATE_FUSED,
    NOTHING,
    PITCH,
    REACQUIRED,
    REJECTED,
    ROLL,
    STATE_NAMES,
    STATE_SIZE,
    TOO_LATE,
    USED,
    VPITCH,
    VROLL,
    VX,
    VY,
    VYAW,
    VZ,
    YAW,
    Ekf,
    EkfConfig,
    Measurement,
    SensorStatus,
    X,
    Y,
    Z,
)
from .measurements import GRAVITY, KINDS, SensorConfig, SensorInput, measurements_of
from .simple import ComplementaryFilter, Kalman1D

__all__ = [
    "ANGLES", "AX", "AY", "AZ", "ComplementaryFilter", "ConfigError", "DEFAULT_INITIAL_COVARIANCE",
    "DEFAULT_PROCESS_NOISE", "Ekf", "EkfConfig", "FilterConfig", "GRAVITY", "KINDS", "Kalman1D", "LATE_FUSED",
    "Measurement", "NOTHING", "PITCH", "REACQUIRED", "REJECTED", "ROLL", "STATE_NAMES", "STATE_SIZE", "SensorConfig",
    "SensorInput",
    "SensorStatus", "TOO_LATE", "USED", "VPITCH", "VROLL", "VX", "VY", "VYAW", "VZ", "X", "Y", "YAW", "Z",
    "config_from_dict", "load_config", "measurements_of",
]
