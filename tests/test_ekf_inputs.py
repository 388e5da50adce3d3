# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""robot_localization YAML loading, sensor input modes (relative, differential, gravity, low-pass), Kalman1D and the
complementary filter."""
import math
import textwrap

import numpy as np
import pytest

from viperdrive.errors import EXIT_BAD_VALUE, UserError
from viperdrive.estimation import (
    AX,
    AZ,
    VX,
    VYAW,
    YAW,
    ComplementaryFilter,
    ConfigError,
    Kalman1D,
    SensorConfig,
    SensorInput,
    X,
    Y,
    config_from_dict,
    load_config,
)
from viperdrive.transforms import quat_from_euler

pytestmark = pytest.mark.unit

VEC = [True, True, False, False, False, True, True, False, False, False, False, True, False, False, False]


def write(tmp_path, text, name="ekf.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_nested_robot_localization_file_is_read_unchanged(tmp_path):
    p = write(tmp_path, """\
        ekf_filter_node:
            ros__parameters:
                frequency: 50.0
                sensor_timeout: 0.2
                two_d_mode: true
                smooth_lagged_data: true
                history_length: 2.0
                publish_tf: true
                map_frame: map
                odom0: example/odom
                odom0_config: [true,  true,  false, false, false, true,
                               true, false, false, false, false, true,
                               false, false, false]
                odom0_queue_size: 2
                odom0_pose_rejection_threshold: 5.0
                odom0_twist_rejection_threshold: 1.0
                imu0: example/imu
                imu0_config: [false, false, false, true, true, true, false, false, false,
                              true, true, true, true, true, true]
                imu0_relative: true
                imu0_linear_acceleration_rejection_threshold: 0.8
                imu0_remove_gravitational_acceleration: true
                pose0: example/pose
                pose0_config: [true, true, false, false, false, false, false, false, false,
                               false, false, false, false, false, false]
                pose0_rejection_threshold: 2.0
                pose0_differential: true
                process_noise_covariance: [0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.0,
                    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2]
    """)
    cfg = load_config(p)
    assert cfg.node == "ekf_filter_node"
    assert cfg.frequency == 50.0 and cfg.sensor_timeout == 0.2 and cfg.two_d_mode
    assert cfg.smooth_lagged_data and cfg.history_length == 2.0
    assert cfg.process_noise_covariance[14, 14] == 0.2 and cfg.process_noise_covariance[0, 0] == 0.1
    s = {x.name: x for x in cfg.sensors}
    assert s["odom0"].kind == "odom" and s["odom0"].topic == "example/odom"
    assert s["odom0"].update_vector[0] and not s["odom0"].update_vector[2]
    assert (s["odom0"].pose_threshold, s["odom0"].twist_threshold) == (5.0, 1.0)
    assert s["imu0"].relative and s["imu0"].remove_gravity and s["imu0"].accel_threshold == 0.8
    assert s["imu0"].pose_threshold == math.inf
    assert s["pose0"].differential and s["pose0"].pose_threshold == 2.0
    notes = cfg.notes("no_effect")
    assert any(n.startswith("publish_tf") for n in notes) and any(n.startswith("odom0_queue_size") for n in notes)
    assert cfg.notes("unknown") == []


def test_flat_file_and_unknown_keys_are_reported():
    cfg = config_from_dict({"frequency": 10.0, "odom0": "/odom", "odom0_config": VEC, "odom0_confg": VEC,
                            "frequncy": 5, "imu3_relative": True})
    assert cfg.node is None and cfg.frequency == 10.0
    unknown = cfg.notes("unknown")
    assert any(n.startswith("odom0_confg") for n in unknown)
    assert any(n.startswith("frequncy") for n in unknown)
    assert any(n.startswith("imu3_relative") for n in unknown)     # a setting for a sensor with no topic


def test_gaps_missing_config_and_deprecated_names_are_warned():
    cfg = config_from_dict({"odom0": "a", "odom0_config": VEC, "odom2": "b", "odom2_config": VEC,
                            "imu0": "i", "imu0_angular_velocity_rejection_threshold": 1.5,
                            "imu0_config": [False] * 9 + [True, True, True] + [False] * 3})
    warnings = cfg.notes("warning")
    assert any("odom1 is not defined" in n for n in warnings)
    assert any("deprecated" in n for n in warnings)
    assert {s.name: s for s in cfg.sensors}["imu0"].twist_threshold == 1.5
    cfg = config_from_dict({"twist0": "t"})
    assert any("twist0_config: missing" in n for n in cfg.notes("warning"))


@pytest.mark.parametrize("params,key", [
    ({"frequency": "fast"}, "frequency"),
    ({"two_d_mode": "yes"}, "two_d_mode"),
    ({"odom0": "o", "odom0_config": [True] * 14}, "odom0_config"),
    ({"odom0": "o", "odom0_config": [1] * 15}, "odom0_config"),
    ({"process_noise_covariance": [0.1] * 224}, "process_noise_covariance"),
    ({"odom0": 5}, "odom0"),
    ({"odom0": "o", "odom0_config": VEC, "odom0_pose_rejection_threshold": -1.0}, "odom0_pose_rejection_threshold"),
    ({"initial_state": [0.0] * 3}, "initial_state"),
    ({"odom_frame": 3}, "x.yaml: odom_frame: expected a string, got 3"),
    ({"smooth_lagged_data": 1}, "x.yaml: smooth_lagged_data: expected true/false, got 1"),
    ({"two_d_mode": "yes"}, "x.yaml: two_d_mode: expected true/false, got 'yes'"),
    ({"odom0": "o", "odom0_config": [False] * 3 + ["yes"] + [False] * 11}, "x.yaml: odom0_config[3]: expected "
                                                                           "true/false, got 'yes'"),
    ({"process_noise_covariance": [0.1] * 14 + ["1e-9x"]}, "process_noise_covariance[14]: expected a number, "
                                                           "got '1e-9x'"),
])
def test_wrong_types_are_clear_errors(params, key):
    with pytest.raises(ConfigError) as e:
        config_from_dict(params, source="x.yaml")
    assert key in str(e.value) and "x.yaml" in str(e.value)
    assert isinstance(e.value, UserError) and e.value.exit_code == EXIT_BAD_VALUE


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="not valid YAML.*line"):
        load_config(write(tmp_path, "a: [1, 2\nb: c: d\n"))
    two = write(tmp_path, "a:\n  ros__parameters: {frequency: 1.0}\nb:\n  ros__parameters: {frequency: 2.0}\n")
    with pytest.raises(ConfigError, match="--node"):
        load_config(two)
    assert load_config(two, node="b").frequency == 2.0
    with pytest.raises(ConfigError, match="no node 'c'"):
        load_config(two, node="c")


def cov6(d):
    return np.diag(d)


def test_relative_mode_makes_the_first_reading_zero():
    inp = SensorInput(SensorConfig("pose0", "pose", update_vector=VEC, relative=True))
    q0 = quat_from_euler(0, 0, math.pi / 2)
    m0 = inp.pose(1.0, [2.0, 3.0, 0.0], q0, cov6([0.1] * 6))[0]
    assert np.allclose(m0.values[[X, Y, YAW]], 0.0)
    # one metre further along the first heading (world +y) is x = 1 in the relative frame
    m1 = inp.pose(2.0, [2.0, 4.0, 0.0], quat_from_euler(0, 0, math.pi / 2 + 0.1), cov6([0.1] * 6))[0]
    assert np.allclose(m1.values[[X, Y, YAW]], [1.0, 0.0, 0.1], atol=1e-12)


def test_differential_mode_turns_poses_into_body_velocities():
    inp = SensorInput(SensorConfig("odom0", "odom", update_vector=VEC, differential=True))
    assert inp.pose(0.0, [1.0, 1.0, 0.0], quat_from_euler(0, 0, math.pi / 2), cov6([0.01] * 6)) == []
    m = inp.pose(0.5, [1.0, 1.5, 0.0], quat_from_euler(0, 0, math.pi / 2 + 0.2), cov6([0.01] * 6))[0]
    assert m.part == "twist"
    assert np.allclose(m.values[[VX, VYAW]], [1.0, 0.4], atol=1e-12)      # 0.5 m forward and 0.2 rad in 0.5 s
    assert m.mask[VX] and m.mask[VYAW] and not m.mask[X]
    assert m.covariance[VX, VX] == pytest.approx(0.02 / 0.25)
    rl = SensorInput(SensorConfig("odom1", "odom", update_vector=VEC, differential=True,
                                  differential_covariance="robot_localization"))
    rl.pose(0.0, [1.0, 1.0, 0.0], quat_from_euler(0, 0, math.pi / 2), cov6([0.01] * 6))
    m = rl.pose(0.5, [1.0, 1.5, 0.0], quat_from_euler(0, 0, math.pi / 2 + 0.2), cov6([0.01] * 6))[0]
    assert m.covariance[VX, VX] == pytest.approx(0.02 * 0.5)       # robot_localization's (R_prev + R_cur) * dt
    pose_vec = VEC[:6] + [False] * 9
    cfg = config_from_dict({"pose0": "p", "pose0_config": pose_vec, "pose0_differential": True})
    assert any("pose0_differential_covariance: robot_localization" in n for n in cfg.notes("warning"))
    cfg = config_from_dict({"pose0": "p", "pose0_config": pose_vec, "pose0_differential": True,
                            "pose0_differential_covariance": "robot_localization"})
    assert cfg.sensors[0].differential_covariance == "robot_localization" and not cfg.notes("warning", "unknown")
    with pytest.raises(ConfigError, match="pose0_differential_covariance"):
        config_from_dict({"pose0": "p", "pose0_differential_covariance": "dt"})


def test_gravity_is_removed_with_the_imu_orientation():
    vec = [False] * 12 + [True] * 3
    inp = SensorInput(SensorConfig("imu0", "imu", update_vector=vec, remove_gravity=True))
    roll, pitch = 0.3, -0.2
    q = quat_from_euler(roll, pitch, 1.0)
    # a resting accelerometer reads the reaction to gravity in its own frame
    g_body = np.array([-math.sin(pitch), math.cos(pitch) * math.sin(roll), math.cos(pitch) * math.cos(roll)]) * 9.80665
    (m,) = inp.imu(0.0, q, np.eye(3) * 0.01, None, None, g_body + [0.5, 0.0, 0.0], np.eye(3) * 0.1)
    assert np.allclose(m.values[AX:AZ + 1], [0.5, 0.0, 0.0], atol=1e-12)
    keep = SensorInput(SensorConfig("imu1", "imu", update_vector=vec))
    (m,) = keep.imu(0.0, q, np.eye(3) * 0.01, None, None, g_body, np.eye(3) * 0.1)
    assert np.allclose(m.values[AX:AZ + 1], g_body)


def test_imu_lowpass_prefilter_reduces_vibration_noise():
    vec = [False] * 11 + [True] + [False] * 3
    rng = np.random.default_rng(1)
    raw = SensorInput(SensorConfig("imu0", "imu", update_vector=vec))
    lp = SensorInput(SensorConfig("imu1", "imu", update_vector=vec, lowpass_tau=0.05))
    a, b = [], []
    for k in range(2000):
        g = [0, 0, 0.3 + rng.normal(0, 0.2)]
        a.append(raw.imu(k * 0.001, None, None, g, np.eye(3) * 0.04)[0].values[VYAW])
        b.append(lp.imu(k * 0.001, None, None, g, np.eye(3) * 0.04)[0].values[VYAW])
    a, b = np.array(a[500:]), np.array(b[500:])
    assert abs(b.mean() - 0.3) < 0.02
    assert b.std() < a.std() / 5      # one pole at 1/(2 pi 0.05 s) on 1 kHz white noise: ~sqrt(2 tau/dt) = 10x less


def test_kalman1d_estimates_gyro_bias():
    rng = np.random.default_rng(0)
    kf = Kalman1D(q_angle_rad2_s=1e-4, q_bias_rad2_s3=1e-6, r_angle_rad2=0.05 ** 2)
    angle, bias, dt = 0.0, 0.05, 0.01
    for k in range(6000):
        rate = 0.2 * math.sin(0.5 * k * dt)
        angle += rate * dt
        kf.predict(rate + bias + rng.normal(0, 0.01), dt)
        if k % 10 == 0:
            kf.update(angle + rng.normal(0, 0.05))
    assert abs(kf.bias - bias) < 0.005
    assert abs(kf.angle - angle) < 0.03
    # the covariance follows F = [[1, -dt], [0, 1]] with Q dt
    kf2 = Kalman1D(q_angle_rad2_s=0.1, q_bias_rad2_s3=0.2, p0=((1.0, 0.0), (0.0, 2.0)))
    kf2.predict(0.0, 0.5)
    F = np.array([[1, -0.5], [0, 1]])
    assert np.allclose(kf2.P, F @ np.diag([1.0, 2.0]) @ F.T + np.diag([0.1, 0.2]) * 0.5)


def test_complementary_filter():
    cf = ComplementaryFilter(tau=0.5)
    assert cf.coefficient(0.001) == pytest.approx(0.5 / 0.501)
    assert cf.coefficient(0.001) == pytest.approx(0.998, abs=1e-3)
    # a constant gyro bias b leaves a steady error of about b * tau, not a drift
    for _ in range(20000):
        cf.update(0.02, 0.0, 0.001)
    assert cf.angle == pytest.approx(0.02 * 0.5, rel=0.01)
    wrapped = ComplementaryFilter(tau=0.1, angle_rad=math.pi - 0.05, wrap_angle=True)
    seen = [abs(wrapped.update(0.0, -math.pi + 0.05, 0.001)) for _ in range(2000)]
    assert min(seen) > math.pi - 0.051        # goes the short way through +-pi, never via 0
    assert wrapped.angle == pytest.approx(-math.pi + 0.05, abs=1e-3)


def test_the_documented_example_config_loads_cleanly():
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[1] / "docs" / "examples" / "ekf.yaml")
    assert cfg.notes("unknown", "warning", "unsupported") == []
    assert {s.name for s in cfg.sensors} == {"odom0", "imu0"} and cfg.two_d_mode and cfg.smooth_lagged_data


def test_ros2_wildcard_parameters_apply_to_the_node():
    doc = {"/**": {"ros__parameters": {"use_sim_time": True, "frequency": 10.0}},
           "ekf_filter_node": {"ros__parameters": {"frequency": 40.0, "two_d_mode": True}}}
    cfg = config_from_dict(doc)
    assert cfg.node == "ekf_filter_node" and cfg.frequency == 40.0 and cfg.two_d_mode
    assert any(n.startswith("use_sim_time") for n in cfg.notes("no_effect"))
    assert config_from_dict({"/**": {"ros__parameters": {"frequency": 12.0}}}).frequency == 12.0


def test_imu_orientation_never_measures_position_and_can_be_relative_or_differential():
    vec = [True, True, False, False, False, True] + [False] * 9     # a config that (wrongly) selects x and y too
    imu = SensorInput(SensorConfig("imu0", "imu", update_vector=vec, relative=True))
    (m,) = imu.imu(0.0, quat_from_euler(0, 0, 1.0), np.eye(3) * 0.01)
    assert not m.mask[X] and not m.mask[Y] and m.mask[YAW] and m.values[YAW] == pytest.approx(0.0)
    (m,) = imu.imu(0.1, quat_from_euler(0, 0, 1.3), np.eye(3) * 0.01)
    assert m.values[YAW] == pytest.approx(0.3)
    diff = SensorInput(SensorConfig("imu1", "imu", update_vector=vec, differential=True))
    assert diff.imu(0.0, quat_from_euler(0, 0, 1.0), np.eye(3) * 0.01) == []
    (m,) = diff.imu(0.5, quat_from_euler(0, 0, 1.2), np.eye(3) * 0.01)
    assert m.mask[VYAW] and not m.mask[VX] and m.values[VYAW] == pytest.approx(0.4)
