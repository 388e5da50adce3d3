# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""cmd_vel input of the bridge on a real Cyclone DDS: Twist/TwistStamped choice, auto-detection from discovery,
and the warnings for "nobody publishes" and "somebody publishes the other type" (the silent mismatch)."""
import logging
import os
import random
import time

import pytest

from viperdrive.errors import BadValue
from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.cmdvel import (
    TWIST,
    TWIST_STAMPED,
    CmdVelInput,
    PublisherFilter,
    RateLimitedWarning,
    ros_time_to_clock,
)
from viperdrive.ros2.node import RosNode
from viperdrive.ros2.topics import covariance, frame_with_prefix

pytestmark = pytest.mark.ros2

DOMAIN = random.SystemRandom().randint(120, 220)
LOCAL_ENV = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


class FakeClock:
    """A stand-in time (viperdrive.timebase.Clock's now()) the test moves by hand."""

    def __init__(self):
        self.t = 100.0

    def now(self):
        return self.t


def poll_until(cmd, cond, timeout=5.0):
    """Poll the input like the bridge loop does (every 10 ms) until cond(commands so far) or timeout."""
    got = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got += cmd.poll(time.time() - time.monotonic())
        if cond(got):
            return got
        time.sleep(0.01)
    return got


@pytest.fixture
def nodes():
    with RosNode("/r", domain_id=DOMAIN, env=LOCAL_ENV) as bridge_node, \
            RosNode("/r", domain_id=DOMAIN, env=LOCAL_ENV) as teleop:
        yield bridge_node, teleop


def _quiet_warn():
    return RateLimitedWarning(interval_s=1e9)


def test_rate_limited_warning_once_per_interval(caplog):
    clock = FakeClock()
    warn = RateLimitedWarning(interval_s=5.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="viperdrive.ros2"):
        assert warn("a", "first")
        clock.t += 4.9
        assert not warn("a", "again too soon")
        assert warn("b", "another key is independent")
        clock.t += 0.2
        assert warn("a", "after the interval")
    assert [r.getMessage() for r in caplog.records] == ["first", "another key is independent", "after the interval"]
    assert warn.count == {"a": 3, "b": 1}


def test_auto_picks_the_offered_type_twist(nodes, caplog):
    bridge_node, teleop = nodes
    with caplog.at_level(logging.INFO, logger="viperdrive.ros2"):
        cmd = CmdVelInput(bridge_node, "cmd_vel", "auto", warn=_quiet_warn())
        assert cmd.type_name is None and cmd.reader is None     # no reader until a publisher shows its type
        w = teleop.publisher("cmd_vel", msgs.Twist, qos.default_qos())
        got = []
        end = time.monotonic() + 5.0
        while time.monotonic() < end and len(got) < 3:
            w.write(msgs.Twist(linear=msgs.Vector3(0.3, 0, 0), angular=msgs.Vector3(0, 0, 0.7)))
            got += cmd.poll(0.0)
            time.sleep(0.02)
    assert cmd.type_name == TWIST
    assert got[-1] == (0.3, 0.7, None)
    assert any("reading /r/cmd_vel as geometry_msgs/msg/Twist (auto" in r.getMessage() for r in caplog.records)


def test_auto_picks_twist_stamped_and_converts_the_stamp(nodes):
    bridge_node, teleop = nodes
    cmd = CmdVelInput(bridge_node, "cmd_vel", "auto", warn=_quiet_warn())
    w = teleop.publisher("cmd_vel", msgs.TwistStamped, qos.default_qos())
    sent_mono = time.monotonic() - 0.25          # a command produced 250 ms ago
    sent_wall = time.time() - 0.25
    got = []
    end = time.monotonic() + 5.0
    while time.monotonic() < end and not got:
        w.write(msgs.TwistStamped(header=msgs.Header(stamp=msgs.time_from_s(sent_wall)),
                                  twist=msgs.Twist(linear=msgs.Vector3(-0.1, 0, 0))))
        got += cmd.poll(time.time() - time.monotonic())
        time.sleep(0.02)
    assert cmd.type_name == TWIST_STAMPED
    v, w_, stamp = got[0]
    assert (v, w_) == (-0.1, 0.0)
    assert stamp == pytest.approx(sent_mono, abs=0.01)     # header stamp (wall) -> host monotonic


def test_fixed_type_warns_about_a_publisher_of_the_other_type(nodes, caplog):
    bridge_node, teleop = nodes
    with caplog.at_level(logging.WARNING, logger="viperdrive.ros2"):
        cmd = CmdVelInput(bridge_node, "cmd_vel", "true", warn=RateLimitedWarning(interval_s=60.0))
        assert cmd.type_name == TWIST_STAMPED
        w = teleop.publisher("cmd_vel", msgs.Twist, qos.default_qos())
        got = poll_until(cmd, lambda g: TWIST in cmd.offered_types(), 5.0)
        for _ in range(5):
            w.write(msgs.Twist(linear=msgs.Vector3(1.0, 0, 0)))
            got += cmd.poll(0.0)
            time.sleep(0.02)
    assert got == []                                  # the other type's commands never reach the robot
    assert cmd.matched() == 0
    text = [r.getMessage() for r in caplog.records]
    mismatch = [t for t in text if "IGNORED" in t]
    assert len(mismatch) == 1                         # once per interval, not once per poll
    assert "offers geometry_msgs/msg/Twist" in mismatch[0] and "--stamped false" in mismatch[0]
    assert cmd.warn.count["cmd_vel_type"] > 1


def test_no_publisher_warning_and_auto_waits(nodes, caplog):
    bridge_node, _ = nodes
    with caplog.at_level(logging.WARNING, logger="viperdrive.ros2"):
        cmd = CmdVelInput(bridge_node, "cmd_vel", "auto", warn=RateLimitedWarning(interval_s=60.0))
        for _ in range(3):
            assert cmd.poll(0.0) == []
    text = [r.getMessage() for r in caplog.records]
    assert text == ["cmd_vel: no publisher matched on /r/cmd_vel (auto: waiting to see which type a publisher "
                    "offers)"]
    assert cmd.status()["type"] == "(none yet)"


def test_auto_switches_when_only_the_other_type_remains(nodes):
    bridge_node, teleop = nodes
    cmd = CmdVelInput(bridge_node, "cmd_vel", "auto", warn=_quiet_warn())
    w1 = teleop.publisher("cmd_vel", msgs.Twist, qos.default_qos())
    poll_until(cmd, lambda g: cmd.type_name == TWIST)
    from viperdrive.ros2.node import delete_entity
    delete_entity(w1)
    w2 = teleop.publisher("cmd_vel", msgs.TwistStamped, qos.default_qos())
    poll_until(cmd, lambda g: cmd.type_name == TWIST_STAMPED)
    assert cmd.type_name == TWIST_STAMPED and cmd.switches == 1
    got = []
    end = time.monotonic() + 5.0
    while time.monotonic() < end and not got:
        w2.write(msgs.TwistStamped(twist=msgs.Twist(angular=msgs.Vector3(0, 0, 0.4))))
        got += cmd.poll(0.0)
        time.sleep(0.02)
    assert got[0] == (0.0, 0.4, None)                # a zero stamp means "now", as diff_drive_controller does


def test_bad_stamped_choice():
    with RosNode("/", domain_id=DOMAIN, env=LOCAL_ENV) as n:
        with pytest.raises(BadValue, match="--stamped"):
            CmdVelInput(n, "cmd_vel", "yes")


def test_helpers():
    assert frame_with_prefix("", "odom") == "odom"
    assert frame_with_prefix("/robot1/", "base_link") == "robot1/base_link"
    assert ros_time_to_clock(msgs.Time(0, 0), 123.0) is None
    assert ros_time_to_clock(msgs.Time(1000, 500_000_000), 900.0) == pytest.approx(100.5)
    cov = covariance(range(36), None)
    assert cov[7] == 7.0 and cov[35] == 35.0 and len(cov) == 36
    with pytest.raises(ValueError, match="got 35"):
        covariance([0.0] * 35, None)
    diag = covariance(None, [1, 2, 3, 4, 5, 6])
    assert [diag[i * 7] for i in range(6)] == [1, 2, 3, 4, 5, 6] and sum(diag) == 21


def test_auto_with_both_types_offered_reads_twist_stamped_and_warns_about_twist(nodes, caplog):
    bridge_node, teleop = nodes
    writers = [teleop.publisher("cmd_vel", t, qos.default_qos()) for t in (msgs.Twist, msgs.TwistStamped)]
    with caplog.at_level(logging.WARNING, logger="viperdrive.ros2"):
        cmd = CmdVelInput(bridge_node, "cmd_vel", "auto", warn=RateLimitedWarning(interval_s=60.0))
        poll_until(cmd, lambda g: cmd.offered_types() == {TWIST, TWIST_STAMPED} and cmd.matched() == 1)
    assert cmd.type_name == TWIST_STAMPED and cmd.matched() == 1 and len(writers) == 2
    warned = [r.getMessage() for r in caplog.records if "IGNORED" in r.getMessage()]
    assert len(warned) == 1 and "offers geometry_msgs/msg/Twist " in warned[0]


def test_bridge_parameters_from_the_robot_file():
    """diff_drive_controller-style keys: use_stamped_vel fixes the cmd_vel type, tf_frame_prefix prefixes both
    frames, enable_odom_tf false means no /tf writer, a covariance diagonal replaces the propagated matrix."""
    from viperdrive.ports import open_board
    from viperdrive.robot.config import RobotConfig
    from viperdrive.ros2.bridge import Ros2Bridge
    from viperdrive.ros2.options import BridgeOptions
    config = RobotConfig.from_dict({"ros2": {"use_stamped_vel": False, "tf_frame_prefix": "robot9",
                                             "odom_frame_id": "odom_wheels", "enable_odom_tf": False,
                                             "pose_covariance_diagonal": [1, 1, 1e3, 1e3, 1e3, 0.5]}})
    bridge = Ros2Bridge(open_board("sim", config=config), config,
                        BridgeOptions(namespace="robot9", domain_id=DOMAIN, env=LOCAL_ENV))
    try:
        assert bridge.stamped == "false" and bridge.cmd.type_name == TWIST
        assert (bridge.topics.odom_frame, bridge.topics.base_frame) == ("robot9/odom_wheels", "robot9/base_link")
        assert bridge.topics.tf is None
        assert bridge.topics.pose_cov_override == (1.0, 1.0, 1e3, 1e3, 1e3, 0.5)
        assert bridge.topics.twist_cov_override is None
        assert bridge.cmd.ros_name == "/robot9/cmd_vel"
        # the command line wins over the file; a bad choice is refused before anything is opened
        other = Ros2Bridge(open_board("sim", config=config), config,
                           BridgeOptions(stamped="true", domain_id=DOMAIN, env=LOCAL_ENV))
        assert other.cmd.type_name == TWIST_STAMPED
        other.shutdown()
        with pytest.raises(BadValue):
            Ros2Bridge(open_board("sim", config=config), config,
                       BridgeOptions(stamped="maybe", domain_id=DOMAIN, env=LOCAL_ENV))
    finally:
        bridge.shutdown()       # never started: nothing to disable, the participant is closed
    assert bridge.node._closed


def test_allow_publisher_takes_the_named_participants_and_refuses_the_others(nodes, caplog):
    """--allow-publisher on real DDS: by the host name a participant declares, and by its GUID prefix."""
    import socket
    bridge_node, teleop = nodes
    here = socket.gethostname()
    guid = teleop.participant.guid.hex
    w = teleop.publisher("cmd_vel", msgs.Twist, qos.default_qos())

    def commands(allow):
        cmd = CmdVelInput(bridge_node, stamped="false", warn=_quiet_warn(), allow=allow)
        deadline = time.monotonic() + 5
        while not w.get_matched_subscriptions() and time.monotonic() < deadline:
            time.sleep(0.02)
        got = []
        for _ in range(20):
            w.write(msgs.Twist(linear=msgs.Vector3(0.1, 0.0, 0.0), angular=msgs.Vector3(0.0, 0.0, 0.0)))
            time.sleep(0.02)
            got += cmd.poll(time.time() - time.monotonic())
        # (the writes paced at a teleop's rate, within the histories' depth of 10) then until every sample is taken,
        # as a command or as a refusal
        got += poll_until(cmd, lambda g: len(got) + len(g) + cmd.refused >= 20)
        status = cmd.status()
        from viperdrive.ros2.node import delete_entity
        delete_entity(cmd.reader)
        return got, cmd, status

    for allow in ([f"host={here}"], [guid[:12]], [guid[:8] + ":" + guid[8:16], "host=elsewhere"]):
        got, cmd, _ = commands(PublisherFilter(allow))
        assert len(got) >= 10 and cmd.refused == 0, (allow, len(got), cmd.refused)
    got, cmd, status = commands(PublisherFilter(["host=elsewhere", "ffffffffffff"]))
    assert got == [] and cmd.refused >= 15
    assert status["refused_from"].startswith(f"GUID {guid[:24]} (host {here}, pid {os.getpid()}")
    for bad in (["host="], ["xyz"], ["0123456789abcdef0123456789abcdef00"], []):
        with pytest.raises(BadValue, match="--allow-publisher"):
            PublisherFilter(bad)


def test_sim_time_is_refused_for_a_board_that_keeps_real_time():
    """--sim-time takes the graph's time from the board's own clock: a board without one (every real board, a
    pyserial URL nobody registered) is refused with the reason, before a DDS participant is made."""
    from viperdrive.board import Board
    from viperdrive.robot.config import RobotConfig
    from viperdrive.ros2.bridge import Ros2Bridge
    from viperdrive.ros2.options import BridgeOptions
    with pytest.raises(BadValue, match="keeps real time"):
        Ros2Bridge(Board("loop://", config=RobotConfig.from_dict({})), RobotConfig.from_dict({}),
                   BridgeOptions(use_sim_time=True))
