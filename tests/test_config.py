# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""RobotConfig: YAML and TOML robot files, validation messages naming key, value and range."""
import math
import re
from pathlib import Path

import pytest

from viperdrive.errors import EXIT_BAD_VALUE, BadValue
from viperdrive.robot.config import RobotConfig

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def test_examples_load():
    y = RobotConfig.load(EXAMPLES / "robot.yaml")
    assert y.wheel_separation == 0.1853 and y.counts_per_rev is None
    assert y.linear.max_velocity == 0.5 and y.linear.deceleration == 1.0
    assert y.angular.max_deceleration is None and y.angular.deceleration == 6.0
    assert y.ros2.odom_frame_id == "odom" and y.ros2.enable_odom_tf is True
    t = RobotConfig.load(EXAMPLES / "robot.toml")
    assert t.port == "sim" and t.linear.max_acceleration == 0.8 and t.angular.max_velocity == 4.0
    assert t.effective_separation == pytest.approx(0.1853)
    assert y.get("linear.x.max_velocity") == 0.5


def test_renamed_keys_still_load_with_a_note(tmp_path):
    """max_wheel_speed / max_wheel_acceleration (m/s, m/s^2 at the rim) became max_rim_speed /
    max_rim_acceleration at 0.1 ("wheel speed" is rad/s everywhere else): old files load with the same values."""
    y = tmp_path / "old.yaml"
    y.write_text("wheel_radius: 0.05\nmax_wheel_speed: 0.3\nmax_wheel_acceleration: 0.7\n")
    c = RobotConfig.load(y)
    assert c.max_rim_speed == 0.3 and c.max_rim_acceleration == 0.7
    assert c.wheel_speed_limits == pytest.approx((6.0, 6.0))
    assert c == RobotConfig(wheel_radius=0.05, max_rim_speed=0.3, max_rim_acceleration=0.7, source=str(y))
    assert {"max_rim_speed", "max_rim_acceleration"} <= c.explicit
    assert ("max_wheel_speed: renamed max_rim_speed in viperdrive 0.1 (same value, m/s at the rim); read as "
            "max_rim_speed: rename the key in the file") in c.notes
    assert any(n.startswith("max_wheel_acceleration: renamed max_rim_acceleration") and "m/s^2" in n
               for n in c.notes)
    t = tmp_path / "old.toml"
    t.write_text("max_wheel_speed = 0.25\n")
    assert RobotConfig.load(t).max_rim_speed == 0.25
    # in a ROS parameter file it is viperdrive's own key too (not a vendor key to ignore)
    ros = RobotConfig.from_dict({"diff_drive": {"ros__parameters": {"wheel_separation": 0.3, "wheel_radius": 0.05,
                                                                    "max_wheel_speed": 0.4}}})
    assert ros.max_rim_speed == 0.4 and not any("vendor" in n for n in ros.notes)
    # a bad value names the key as the file writes it; both names at once is an error, not a silent choice
    y.write_text("max_wheel_speed: 99\n")
    with pytest.raises(BadValue, match=r"max_wheel_speed=99 is outside \[0.001, 50.0\] m/s \(line 1\)"):
        RobotConfig.load(y)
    y.write_text("max_wheel_speed: 0.3\nmax_rim_speed: 0.4\n")
    with pytest.raises(BadValue, match=r"max_wheel_speed \(line 1\) and max_rim_speed \(line 2\) set the same "
                                       r"limit \(max_wheel_speed is its name before 0.1\): keep max_rim_speed"):
        RobotConfig.load(y)


def test_round_trip_and_dotted_equals_nested():
    c = RobotConfig.from_dict({"linear.x.max_velocity": 0.3, "wheel_radius": 0.05})
    d = RobotConfig.from_dict({"linear": {"x": {"max_velocity": 0.3}}, "wheel_radius": 0.05})
    assert c == d
    assert RobotConfig.from_dict(c.to_dict()) == c
    assert c.with_values(port="sim").port == "sim"


def test_diff_drive_controller_layout_and_nan_unlimited():
    c = RobotConfig.from_dict({"diff_drive": {"ros__parameters": {
        "wheel_separation": 0.3, "wheel_radius": 0.05,
        "linear": {"x": {"max_velocity": float("nan"), "max_acceleration": 1.5}}}}})
    assert c.wheel_separation == 0.3 and c.linear.max_velocity is None and c.linear.max_acceleration == 1.5


def test_diff_drive_controller_file_loads(tmp_path):
    f = tmp_path / "ddc.yaml"
    f.write_text("""
diff_drive_controller:
  ros__parameters:
    left_wheel_names: ["left_wheel_joint"]
    right_wheel_names: ["right_wheel_joint"]
    wheel_separation: 0.40
    wheel_radius: 0.05
    publish_rate: 50.0
    odom_frame_id: odom
    base_frame_id: base_footprint
    pose_covariance_diagonal: [0.001, 0.001, 0.001, 0.001, 0.001, 0.01]
    open_loop: false
    enable_odom_tf: true
    cmd_vel_timeout: 0.5
    linear.x.has_velocity_limits: true
    linear.x.max_velocity: 1.0
    linear.x.min_velocity: -1.0
    linear.x.has_acceleration_limits: false
    linear.x.max_acceleration: 1.0
    angular.z.max_velocity: 1.0
""")
    c = RobotConfig.load(f)
    assert c.wheel_separation == 0.40 and c.ros2.base_frame_id == "base_footprint"
    assert c.ros2.pose_covariance_diagonal[5] == 0.01 and c.ros2.publish_rate == 50.0
    assert c.linear.max_velocity == 1.0 and c.angular.max_velocity == 1.0
    assert c.linear.max_acceleration is None                 # has_acceleration_limits: false
    assert "left_wheel_names" in c.ignored and "linear.x.min_velocity" in c.ignored


@pytest.mark.parametrize("data, words", [
    ({"wheel_radius": 7.0}, ["wheel_radius=7.0", "[0.005, 1.0] m"]),
    ({"wheel_radius": -0.1}, ["wheel_radius=-0.1", "outside"]),
    ({"wheel_radius": "big"}, ["wheel_radius='big'", "must be a number"]),
    ({"wheel_radius": math.inf}, ["finite"]),
    ({"counts_per_rev": 409.5}, ["counts_per_rev=409.5", "whole number"]),
    ({"linear": {"x": {"max_acceleration": 0}}}, ["linear.x.max_acceleration=0", "m/s^2"]),
    ({"wheel_seperation": 0.2}, ["unknown key 'wheel_seperation'", "did you mean 'wheel_separation'"]),
    ({"ros2": {"odom_frame": "odom"}}, ["ros2.odom_frame", "odom_frame_id"]),
    ({"ros2": {"pose_covariance_diagonal": [1, 2]}}, ["6 finite numbers"]),
    ({"update_rate": 0.5}, ["update_rate=0.5", "[1.0, 1000.0] Hz"]),
    ({"max_speed": 1.0}, ["unknown key 'max_speed'"]),
    ({"publish_rate": 0.0}, ["ros2.publish_rate=0.0", "[0.1, 1000.0] Hz"]),
])
def test_validation_messages(data, words):
    with pytest.raises(BadValue) as e:
        RobotConfig.from_dict(data)
    for w in words:
        assert w in str(e.value)
    assert e.value.exit_code == EXIT_BAD_VALUE


def test_bad_files(tmp_path):
    broken = tmp_path / "r.yaml"
    broken.write_text("wheel_radius: [0.1\n  oops: {")
    with pytest.raises(BadValue, match="not valid YAML"):
        RobotConfig.load(broken)
    t = tmp_path / "r.toml"
    t.write_text("wheel_radius = = 3")
    with pytest.raises(BadValue, match="not valid TOML"):
        RobotConfig.load(t)
    b = tmp_path / "bin.yaml"
    b.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BadValue, match="UTF-8"):
        RobotConfig.load(b)
    with pytest.raises(BadValue, match="does not exist"):
        RobotConfig.load(tmp_path / "missing.yaml")
    with pytest.raises(BadValue, match="is a directory, not a file"):
        RobotConfig.load(tmp_path)
    j = tmp_path / "r.json"
    j.write_text("{}")
    with pytest.raises(BadValue, match="unknown format '.json'"):
        RobotConfig.load(j)
    lst = tmp_path / "list.yaml"
    lst.write_text("- 1\n- 2\n")
    with pytest.raises(BadValue, match="mapping"):
        RobotConfig.load(lst)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert RobotConfig.load(empty) == RobotConfig(source=str(empty))


def test_ros2_section_is_a_frozen_typed_settings_object_with_the_one_set_of_defaults():
    import dataclasses

    from viperdrive.robot import config as C
    from viperdrive.robot.config import Ros2Settings

    assert RobotConfig().ros2 == Ros2Settings() and RobotConfig().ros2.publish_rate == 50.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        RobotConfig().ros2.publish_rate = 10.0
    # the keys diff_drive_controller keeps at its top level and the bridge's own sensor keys are the settings' fields
    assert {f.name for f in dataclasses.fields(Ros2Settings)} == C._DDC_ROS2 | C._OWN_ROS2
    assert not C._DDC_ROS2 & C._OWN_ROS2
    s = RobotConfig.from_dict({"ros2": {"imu_frame_id": "imu", "imu_part": "lsm6ds3", "sensor_rate": 100}}).ros2
    assert (s.imu_frame_id, s.imu_part, s.sensor_rate) == ("imu", "lsm6ds3", 100)
    assert (Ros2Settings().imu_frame_id, Ros2Settings().imu_part, Ros2Settings().sensor_rate) == ("imu_link",
                                                                                                 "mpu6050", 50)
    for bad, words in (({"imu_part": "bno055"}, "must be one of lsm6ds3, mpu6050"),
                       ({"sensor_rate": 12.5}, "whole number"), ({"sensor_rate": 500}, "[0, 200] Hz")):
        with pytest.raises(BadValue, match=re.escape(words)):
            RobotConfig.from_dict({"ros2": bad})
    c = RobotConfig.from_dict({"ros2": {"publish_rate": 20, "use_stamped_vel": True, "tf_frame_prefix": "r1",
                                        "twist_covariance_diagonal": [1, 2, 3, 4, 5, 6]}})
    r = c.ros2
    assert (r.publish_rate, r.use_stamped_vel, r.tf_frame_prefix) == (20.0, True, "r1")
    assert type(r.publish_rate) is float and r.twist_covariance_diagonal == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert (r.odom_frame_id, r.enable_odom_tf, r.pose_covariance_diagonal) == ("odom", True, None)   # defaults
    assert hash(r) == hash(Ros2Settings(publish_rate=20.0, use_stamped_vel=True, tf_frame_prefix="r1",
                                        twist_covariance_diagonal=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)))
    # a robot file holds plain data: lists, and from_dict(to_dict()) gives the same settings back
    assert c.to_dict()["ros2"]["twist_covariance_diagonal"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert RobotConfig.from_dict(c.to_dict()) == c and c.get("ros2.publish_rate") == 20.0
