# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Users' own ROS parameter files (tests/data/ros/, written to reproduce the layouts real robots and ROS packages
ship): which node is taken, the values read from it, and the errors that name file, node, key and value."""
import math
from pathlib import Path

import numpy as np
import pytest

from viperdrive.errors import EXIT_BAD_VALUE, BadValue
from viperdrive.estimation import STATE_SIZE, ConfigError, load_config
from viperdrive.robot.config import RobotConfig
from viperdrive.robot.rosparams import parse_yaml

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parent / "data" / "ros"
VEC_ODOM = [False] * 6 + [True, True, False, False, False, True] + [False] * 3


def robot(name, **kw) -> RobotConfig:
    return RobotConfig.load(DATA / name, **kw)


def bad_robot(name, **kw) -> str:
    with pytest.raises(BadValue) as e:
        RobotConfig.load(DATA / name, **kw)
    assert e.value.exit_code == EXIT_BAD_VALUE
    return str(e.value)


def notes(cfg) -> str:
    return "\n".join(cfg.notes)


# ------------------------------------------------------------------------------------------ YAML 1.2

def test_yaml_is_read_as_yaml_1_2_the_way_ros_reads_numbers():
    doc = parse_yaml("a: 1e-9\nb: 5e-3\nc: 1.0e+3\nd: .nan\ne: yes\nf: 'yes'\ng: 0x10\n", "x.yaml")
    assert doc.data["a"] == 1e-9 and doc.data["b"] == 0.005 and doc.data["c"] == 1000.0   # PyYAML: strings
    assert math.isnan(doc.data["d"]) and doc.data["g"] == 16
    assert doc.data["e"] == "yes" and doc.data["f"] == "yes"        # YAML 1.2 core schema: strings...
    assert doc.plain(("e",)) and not doc.plain(("f",))              # ...but only e is unquoted (ROS 2: a bool)
    assert doc.line(("g",)) == 7


@pytest.mark.parametrize("text, words", [
    ("a: 1\n\tb: 2\n", ["x.yaml: not valid YAML", "tab for indentation", "(line 2, column 1)"]),
    ("a: 1\nb: 2\na: 3\n", ["duplicate key 'a' (line 1 and line 3)"]),
    ("n:\n  ros__parameters:\n    k: 1\n    k: 2\n", ["duplicate key 'k' (line 3 and line 4)"]),
    ("a: [1, 2\n", ["not valid YAML", "line"]),
])
def test_yaml_errors_name_the_line(text, words):
    with pytest.raises(BadValue) as e:
        parse_yaml(text, "x.yaml")
    for w in words:
        assert w in str(e.value)


# ------------------------------------------------------------------------------------------ robot files

def test_ros2_control_file_with_several_nodes():
    c = robot("ros2_control_diffbot.yaml")
    assert (c.layout, c.node) == ("ros2_control", "diff_cont")       # typed in controller_manager
    assert c.wheel_separation == 0.297 and c.wheel_radius == 0.033    # 3.3e-2: a number (YAML 1.2)
    assert c.update_rate == 50.0                                      # controller_manager's
    assert c.cmd_vel_timeout == 0.5                                   # 5e-1
    assert (c.wheel_separation_multiplier, c.left_wheel_radius_multiplier, c.right_wheel_radius_multiplier) == \
        (1.0, 1.0, 1.0)
    assert c.linear.max_velocity == 0.4 and c.linear.max_acceleration == 0.8
    assert c.angular.max_velocity == 2.5 and c.angular.max_acceleration == 5.0
    assert c.ros2.pose_covariance_diagonal == (1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-2)
    assert c.ros2.publish_rate == 50.0 and c.ros2.use_stamped_vel is False
    assert {"left_wheel_names", "open_loop", "linear.x.min_velocity"} <= set(c.ignored)
    assert "joint_broad (joint_state_broadcaster/JointStateBroadcaster)" in notes(c)


def test_wildcards_and_file_order():
    c = robot("ros2_control_wildcards.yaml")
    assert c.node == "/**/diff_drive_base_controller"         # typed by cm's dotted `name.type`
    assert c.update_rate == 100.0                             # from /**/controller_manager
    assert c.cmd_vel_timeout == 0.5                           # the node's own entry after /** (0.25) wins
    assert c.wheel_separation == 0.160 and c.wheel_radius == 0.033
    assert c.left_radius == pytest.approx(0.033 * 1.002) and c.right_radius == pytest.approx(0.033 * 0.998)
    assert c.linear.max_velocity == 0.22 and c.angular.max_acceleration == 3.2
    assert c.ros2.base_frame_id == "base_footprint" and c.ros2.enable_odom_tf is False
    assert "use_sim_time" in c.ignored                        # from /**
    # the same file, the node given by name or by a full name in another namespace: same values
    assert robot("ros2_control_wildcards.yaml", node="diff_drive_base_controller") == c
    assert robot("ros2_control_wildcards.yaml", node="/robot7/diff_drive_base_controller") == c


def test_namespaced_nodes_and_type_inside_the_controller():
    c = robot("ros2_control_namespaced.yaml")
    assert c.node == "/robot1/base_controller"                # type: inside its own parameters
    assert c.update_rate == 200.0 and c.wheel_separation_multiplier == 1.5
    assert c.effective_separation == pytest.approx(0.5708 * 1.5) and c.wheel_radius == 0.1651
    assert c.linear.max_deceleration == 25.0 and c.linear.deceleration == 25.0
    assert "type" in c.ignored and "wheels_per_side" in c.ignored
    assert "robot1/imu_broadcaster (imu_sensor_broadcaster/IMUSensorBroadcaster)" in notes(c)
    assert "linear.x.max_velocity: set without linear.x.has_velocity_limits: true" in notes(c)


def test_vendor_keys_are_a_note_unless_strict():
    c = robot("ros2_control_vendor.yaml")
    assert c.node == "platform_velocity_controller" and c.wheel_radius == 0.08 and c.update_rate == 100.0
    text = notes(c)
    assert "not diff_drive_controller parameters" in text
    assert "motor_current_limit, battery_low_voltage, odom_tf_lag_compensation" in text
    # what ROS 2 itself would refuse: integers for double parameters, a list mixing integers and decimals
    assert "wheel_separation_multiplier: 1 is an integer; ROS 2 refuses" in text and "(line 13)" in text
    assert "pose_covariance_diagonal: the list mixes integers and decimals (entry 2 is 1000000)" in text
    assert c.ros2.pose_covariance_diagonal == (0.001, 0.001, 1e6, 1e6, 1e6, 0.03)
    msg = bad_robot("ros2_control_vendor.yaml", strict=True)
    assert "platform_velocity_controller: keys diff_drive_controller does not declare (--strict)" in msg
    assert "motor_current_limit" in msg


def test_missing_geometry_stops_naming_the_key():
    msg = bad_robot("ros2_control_no_radius.yaml")
    assert msg == (f"{DATA / 'ros2_control_no_radius.yaml'}: diffbot_base_controller: wheel_radius: missing; "
                   f"diff_drive_controller requires it: add wheel_radius: <metres> to this node")
    msg = bad_robot("ros1_control_urdf_geometry.yaml")
    assert "mobile_base_controller: wheel_separation: missing" in msg and "from the URDF" in msg


def test_ambiguous_controllers_list_the_nodes_and_node_chooses():
    msg = bad_robot("ros2_control_two_controllers.yaml")
    assert "2 diff-drive controllers (base_controller, base_controller_slow): choose one with --node" in msg
    assert robot("ros2_control_two_controllers.yaml", node="base_controller_slow").linear.max_velocity == 0.2
    assert robot("ros2_control_two_controllers.yaml", node="base_controller").linear.max_velocity == 1.0
    msg = bad_robot("ros2_control_two_controllers.yaml", node="base")
    assert "no node 'base' (nodes: base_controller, base_controller_slow)" in msg


def test_ros1_controller_file():
    c = robot("ros1_control.yaml")
    assert (c.layout, c.node) == ("ros1", "base_velocity_controller")
    assert c.wheel_separation == 0.555 and c.wheel_radius == 0.1651 and c.wheel_separation_multiplier == 1.875
    assert c.left_wheel_radius_multiplier == c.right_wheel_radius_multiplier == 1.02   # wheel_radius_multiplier
    assert c.cmd_vel_timeout == 0.25 and c.update_rate == 100.0                         # no controller_manager
    assert c.linear.max_velocity == 1.0 and c.linear.max_acceleration == 3.0
    assert c.angular.max_velocity == 2.0 and c.angular.max_acceleration is None    # has_acceleration_limits: false
    assert c.ros2.enable_odom_tf is False and c.ros2.pose_covariance_diagonal[2] == 1e6
    assert "left_wheel" in c.ignored and "estimate_velocity_from_position" in notes(c)
    assert "base_joint_publisher" in notes(c)


def test_ros1_flat_controller_file():
    c = robot("ros1_flat_controller.yaml")
    assert (c.layout, c.node) == ("ros1", None)
    assert c.wheel_separation == 0.23 and c.wheel_radius == 0.035 and c.cmd_vel_timeout == 0.3
    assert c.linear.max_velocity == 0.26 and c.angular.max_velocity == 1.82    # linear/x/... keys
    assert c.ros2.base_frame_id == "base_footprint" and c.ros2.publish_rate == 50.0


def test_corrupt_robot_files_are_errors_with_the_line():
    msg = bad_robot("robot_tab.yaml")
    assert "robot_tab.yaml: not valid YAML" in msg and "tab for indentation" in msg and "(line 5" in msg
    msg = bad_robot("robot_duplicate.yaml")
    assert "duplicate key 'max_rim_speed' (line 3 and line 5)" in msg
    # the same file with spaces loads, with the file's limit (the corrupt one used to fall back to 0.55)
    fixed = (DATA / "robot_tab.yaml").read_text().replace("\t", "    ")
    c = RobotConfig.from_document(parse_yaml(fixed, "fixed.yaml"))
    assert c.max_rim_speed == 0.2 and c.linear.max_velocity == 0.15


@pytest.mark.parametrize("text, words", [
    ("max_rim_speed: .nan\n", ["max_rim_speed=nan must be a finite number"]),
    ("max_rim_speed: .inf\n", ["max_rim_speed=inf must be a finite number in [0.001, 50.0] m/s", "(line 1)"]),
    ("linear:\n  x:\n    max_velocity: .inf\n", ["linear.x.max_velocity=inf must be a finite number",
                                                 "null or .nan: no limit", "(line 3)"]),
    ("cmd_vel_timeout: -1e-3\n", ["cmd_vel_timeout=-0.001 is outside [0.0, 60.0] s"]),
    ("odometry:\n  velocity_window: 1e9\n", ["odometry.velocity_window=1000000000.0 is outside"]),
    ("ros2:\n  publish_rate: .nan\n", ["ros2.publish_rate=nan must be a finite number"]),
    ("ros2:\n  pose_covariance_diagonal: [1, 1, 1, 1, 1, .inf]\n", ["6 finite numbers"]),
    ("dd:\n  ros__parameters:\n    wheel_separation: .nan\n    wheel_radius: 0.03\n",
     ["r.yaml: dd: wheel_separation=nan must be a finite number in [0.02, 5.0] m (line 3)"]),
    ("dd:\n  ros__parameters:\n    wheel_separation: 0.2\n    wheel_radius: 0.03\n    linear.x.max_velocity: "
     "inf\n", ["dd: linear.x.max_velocity=inf must be a finite number"]),
])
def test_robot_file_numbers_finite_and_in_range(tmp_path, text, words):
    f = tmp_path / "r.yaml"
    f.write_text(text)
    with pytest.raises(BadValue) as e:
        RobotConfig.load(f)
    for w in words:
        assert w in str(e.value)


def test_unquoted_nan_inf_and_yes_read_as_ros_2_reads_them(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("dd:\n  ros__parameters:\n    wheel_separation: 0.2\n    wheel_radius: 0.03\n"
                 "    linear.x.max_velocity: nan\n    enable_odom_tf: off\n")
    c = RobotConfig.load(f)
    assert c.linear.max_velocity is None and c.ros2.enable_odom_tf is False
    assert "'off' is a string in YAML 1.2 but ROS 2's parameter parser reads the unquoted word as false" in notes(c)
    f.write_text("enable: 1\nros2:\n  enable_odom_tf: 'off'\n")
    with pytest.raises(BadValue, match="unknown key 'enable'"):
        RobotConfig.load(f)
    f.write_text("ros2:\n  enable_odom_tf: 'off'\n")
    with pytest.raises(BadValue, match=r"ros2.enable_odom_tf: expected true/false, got 'off' \(quoted"):
        RobotConfig.load(f)


# ------------------------------------------------------------------------------------------ EKF configs

def test_robot_localization_file_with_exponent_numbers():
    cfg = load_config(DATA / "ekf_ros2_exponents.yaml")
    assert cfg.node == "ekf_filter_node" and cfg.frequency == 30.0 and cfg.sensor_timeout == 0.1
    assert cfg.two_d_mode and cfg.world_frame == "odom"
    q = cfg.process_noise_covariance
    assert q.shape == (STATE_SIZE, STATE_SIZE) and q[0, 0] == 0.05 and q[11, 11] == 2.0 and q[14, 14] == 0.015
    assert np.count_nonzero(q - np.diag(np.diag(q))) == 0
    assert np.all(np.diag(cfg.initial_estimate_covariance) == 1e-9)       # `1e-9` is a number, not '1e-9'
    s = {x.name: x for x in cfg.sensors}
    assert list(s["odom0"].update_vector) == VEC_ODOM
    assert s["odom0"].twist_threshold == 6.0 and s["imu0"].twist_threshold == 8.0
    assert s["pose0"].pose_threshold == 5.0 and list(s["pose0"].update_vector[:2]) == [True, True]
    assert s["imu0"].remove_gravity and s["imu0"].topic == "/imu/data"
    assert cfg.notes("unknown", "warning", "unsupported") == []


def test_dual_ekf_file_needs_node_and_lists_only_the_filters():
    with pytest.raises(ConfigError) as e:
        load_config(DATA / "ekf_ros2_dual_navsat.yaml")
    assert "2 EKF/UKF nodes (ekf_filter_node_odom, ekf_filter_node_map): choose one with --node" in str(e.value)
    assert "navsat_transform" not in str(e.value)
    m = load_config(DATA / "ekf_ros2_dual_navsat.yaml", node="ekf_filter_node_map")
    assert m.world_frame == "map" and [x.name for x in m.sensors] == ["imu0", "odom0", "odom1"]
    assert {x.name: x for x in m.sensors}["odom1"].pose_threshold == 7.0
    o = load_config(DATA / "ekf_ros2_dual_navsat.yaml", node="ekf_filter_node_odom")
    assert np.allclose(np.diag(o.process_noise_covariance)[[0, 2, 11]], [1.0, 1e-3, 0.3])    # 15-value diagonal
    with pytest.raises(ConfigError, match=r"navsat_transform is not an EKF/UKF node \(EKF/UKF nodes: "
                                          r"ekf_filter_node_odom, ekf_filter_node_map\)"):
        load_config(DATA / "ekf_ros2_dual_navsat.yaml", node="navsat_transform")
    with pytest.raises(ConfigError, match=r"no node 'ekf' \(EKF/UKF nodes: ekf_filter_node_odom, "):
        load_config(DATA / "ekf_ros2_dual_navsat.yaml", node="ekf")


def test_ekf_wildcards_apply_in_file_order():
    cfg = load_config(DATA / "ekf_ros2_wildcards.yaml")
    assert cfg.node == "/**/ekf_filter_node"
    assert cfg.frequency == 50.0          # the node's entry after /** (10)
    assert cfg.sensor_timeout == 0.2      # /* after the node's entry (/** said 0.5)
    assert cfg.two_d_mode and [s.topic for s in cfg.sensors] == ["odom"]
    # in a namespace /* (root namespace only) no longer matches: /** 's 0.5 stays
    assert load_config(DATA / "ekf_ros2_wildcards.yaml", node="/robot2/ekf_filter_node").sensor_timeout == 0.5


def test_ros1_flat_and_namespaced_robot_localization_files():
    cfg = load_config(DATA / "ekf_ros1_flat.yaml")
    assert cfg.node is None and cfg.frequency == 50.0 and cfg.base_link_frame == "base_footprint"
    assert cfg.process_noise_covariance[11, 11] == 0.5
    s = {x.name: x for x in cfg.sensors}
    assert s["imu0"].relative and s["imu0"].accel_threshold == 0.8 and s["odom0"].topic == "/wheel/odom"
    assert cfg.notes("unknown") == []                       # silent_tf_failure is robot_localization's (ROS 1)
    assert any(n.startswith("silent_tf_failure") for n in cfg.notes("no_effect"))
    assert not any("integer" in n for n in cfg.notes("warning"))     # ROS 1 reads 50 and 0 as doubles
    with pytest.raises(ConfigError, match=r"2 EKF/UKF nodes \(ekf_se_odom, ekf_se_map\): choose one with --node"):
        load_config(DATA / "ekf_ros1_namespaced.yaml")
    m = load_config(DATA / "ekf_ros1_namespaced.yaml", node="ekf_se_map")
    assert m.node == "ekf_se_map" and m.world_frame == "map" and m.frequency == 30.0
    assert [x.topic for x in m.sensors] == ["imu/data", "odometry/wheel", "odometry/gps"]
    with pytest.raises(ConfigError, match=r"no node 'navsat_transform' \(EKF/UKF nodes: ekf_se_odom, ekf_se_map\)"):
        load_config(DATA / "ekf_ros1_namespaced.yaml", node="navsat_transform")


def test_ros_2_integer_traps_are_reported(tmp_path):
    f = tmp_path / "ekf.yaml"
    f.write_text("ekf:\n  ros__parameters:\n    frequency: 30\n    odom0: odom\n    odom0_config: "
                 + str(VEC_ODOM).replace("True", "true").replace("False", "false")
                 + "\n    odom0_twist_rejection_threshold: 5\n    odom0_queue_size: 2.0\n"
                   "    initial_state: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n")
    cfg = load_config(f)
    warnings = "\n".join(cfg.notes("warning"))
    assert cfg.frequency == 30.0 and cfg.sensors[0].twist_threshold == 5.0    # viperdrive reads them
    assert "frequency: 30 is an integer; ROS 2 refuses an integer for a floating-point parameter" in warnings
    assert "(line 3): write 30.0" in warnings
    assert "odom0_twist_rejection_threshold: 5 is an integer" in warnings
    assert "odom0_queue_size: 2.0: robot_localization declares odom0_queue_size an integer" in warnings
    assert "initial_state: every entry is an integer" in warnings


def test_yes_no_read_as_ros_2_reads_them_and_quoted_yes_is_an_error():
    cfg = load_config(DATA / "ekf_yes_no.yaml")
    assert cfg.two_d_mode is True and list(cfg.sensors[0].update_vector) == VEC_ODOM
    assert cfg.sensors[0].differential is False
    w = "\n".join(cfg.notes("warning"))
    assert "two_d_mode: 'yes' is a string in YAML 1.2 but ROS 2's parameter parser reads the unquoted word as " \
           "true, and so does viperdrive (line 5); write true" in w
    with pytest.raises(ConfigError) as e:
        load_config(DATA / "ekf_quoted_yes.yaml")
    assert str(e.value) == (f"{DATA / 'ekf_quoted_yes.yaml'}: ekf_filter_node: odom0_config[3]: expected "
                            f"true/false, got 'yes' (quoted, so a string for ROS too) (line 5)")


@pytest.mark.parametrize("name, words", [
    ("ekf_tab.yaml", ["not valid YAML", "tab for indentation", "(line 4, column 1)"]),
    ("ekf_duplicate.yaml", ["duplicate key 'odom0' (line 4 and line 8)"]),
])
def test_broken_ekf_files(name, words):
    with pytest.raises(ConfigError) as e:
        load_config(DATA / name)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("text, message", [
    ("process_noise_covariance: [1e-9, 2e-9]\n",
     "process_noise_covariance: expected a list of 225 or 15 numbers (a 15x15 matrix row by row, or its diagonal), "
     "got 2 entries (line 1)"),
    ("initial_state: [0.0, 0.0, x]\n", "initial_state[2]: expected a number, got 'x' (line 1)"),
    ("odom0: odom\nodom0_config: [true, false]\n", "odom0_config: expected a list of 15 true/false values"),
    ("frequency: fast\n", "frequency: expected a number, got 'fast' (line 1)"),
    ("frequency: -30.0\n", "frequency: expected a number in (0, 1000] Hz, got -30.0 (line 1)"),
    ("frequency: 5000\n", "frequency: expected a number in (0, 1000] Hz, got 5000"),
    ("sensor_timeout: .inf\n", "sensor_timeout: expected a finite number, got inf (line 1)"),
    ("process_noise_covariance: [1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]\n",
     "process_noise_covariance[2]: negative variance -1.0 for z on its diagonal (line 1)"),
])
def test_ekf_errors_name_key_entry_value_and_line(tmp_path, text, message):
    f = tmp_path / "ekf.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value).startswith(f"{f}: ") and message in str(e.value)


def test_calibrated_values_are_written_into_the_controllers_node(tmp_path):
    from viperdrive.robot import editing as robotfile

    f = tmp_path / "controllers.yaml"
    f.write_text((DATA / "ros2_control_wildcards.yaml").read_text())
    assert robot("ros2_control_wildcards.yaml", node="/**/diff_drive_base_controller").wheel_separation == 0.160
    robotfile.update_values(f, {"wheel_separation": 0.1612})
    c = RobotConfig.load(f)
    assert c.wheel_separation == 0.1612 and c.wheel_radius == 0.033 and c.update_rate == 100.0
    assert "    wheel_separation: 0.1612\n" in f.read_text()          # in place, in the controller's entry
    with pytest.raises(BadValue, match="cannot place wheel_separation_multiplier automatically"):
        robotfile.update_values(f, {"wheel_separation_multiplier": 1.01})   # not in the file: where is the user's call
    assert RobotConfig.load(f).wheel_separation_multiplier == 1.0


def test_a_value_outside_the_nodes_of_a_ros_2_file_is_an_error(tmp_path):
    f = tmp_path / "mixed.yaml"
    f.write_text("frequency: 30.0\nekf_filter_node:\n  ros__parameters:\n    odom0: odom\n")
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert str(e.value) == (f"{f}: frequency: a value outside any node's ros__parameters (line 1); ROS 2 refuses "
                            f"the file (\"Cannot have a value before ros__parameters\"): move it under a node")
    f.write_text("dd:\n  ros__parameters:\n    wheel_separation: 0.2\n    wheel_radius: 0.03\n  update_rate: 50\n")
    with pytest.raises(BadValue, match=r"dd/update_rate: a value outside any node's ros__parameters \(line 5\)"):
        RobotConfig.load(f)
