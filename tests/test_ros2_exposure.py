# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Who can drive the robot through `viperdrive ros2` (issue 17, item 7): the start-up line says it, --localhost
keeps participants of other machines out, --allow-publisher refuses the ones it does not name, and DDS Security
is refused with the reason (the pinned cyclonedds wheel has no security plugins).

"Another machine" is a second DDS participant on this machine that uses only the LAN interface (Cyclone bound to
this machine's non-loopback address, unicast discovery to that address): what a participant elsewhere on the
network does when it knows the robot's address. The robot's motion is the virtual board's ground truth.
"""
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ros2_peer import Peer
from test_ros2_bridge import Bridge
from test_ros2_dds import DOMAIN, peer_env

from viperdrive.ros2.node import LOOPBACK_XML
from viperdrive.timebase import wait_until

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

HERE = Path(__file__).resolve().parent


def lan_address() -> str | None:
    """This machine's address on its first non-loopback IPv4 interface, or None."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for m in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        if not m.group(1).startswith("127."):
            return m.group(1)
    return None


LAN = lan_address()
needs_lan = pytest.mark.skipif(LAN is None, reason="this machine has no non-loopback IPv4 interface to stand in "
                                                   "for the network")


def lan_env(address: str) -> dict:
    """A participant that reaches this machine only through its LAN address (as another machine would)."""
    xml = (f'<CycloneDDS><Domain><General><Interfaces><NetworkInterface address="{address}"/></Interfaces>'
           f'<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>'
           f'<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex><Peers><Peer address="{address}"/></Peers>'
           f'</Discovery></Domain></CycloneDDS>')
    env = peer_env()
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="SYSTEM_DEFAULT", CYCLONEDDS_URI=xml)
    return env


def loopback_env() -> dict:
    """A ROS node on the robot's computer set up like `viperdrive ros2 --localhost` (--print-dds-config)."""
    env = peer_env()
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="SYSTEM_DEFAULT", CYCLONEDDS_URI=LOOPBACK_XML)
    return env


def drive_until(vb, env, namespace, metres, v=0.2, seconds=30.0) -> tuple[dict, float]:
    """A peer commands v on namespace/cmd_vel until the robot moved `metres` in the ground truth (within `seconds`
    of board time) -> (the peer's record, the distance)."""
    d0 = vb.truth()["distance"]
    with Peer(namespace, "--type", "stamped", "--v", str(v), env=env) as p:
        wait_until(lambda: moved(vb, d0) >= metres, seconds, vb.clock, poll=0.01,
                   what=f"{metres} m driven by a peer on /{namespace}/cmd_vel")
        rec = p.stop()
    return rec, moved(vb, d0)


def started(bridge, timeout=20.0):
    def active():
        assert bridge.proc.poll() is None, bridge.stderr()
        return "board active" in bridge.stderr()
    wait_until(active, timeout, poll=0.05, what="the bridge's 'board active'")


def moved(vb, before) -> float:
    return vb.truth()["distance"] - before


@needs_lan
def test_by_default_a_participant_on_the_network_drives_the_robot_and_the_start_up_line_says_so(tmp_path):
    from viperdrive.rigs.virtual import VirtualBoard
    with VirtualBoard() as vb:
        bridge = Bridge(tmp_path, "--namespace", "robot_x", port=vb.url)
        try:
            started(bridge)
            rec, distance = drive_until(vb, lan_env(LAN), "robot_x", 0.15)
        finally:
            assert bridge.stop() == 0, bridge.stderr()
    err = bridge.stderr()
    print(f"default: a participant on {LAN} drove the robot {distance:.3f} m (matched after "
          f"{rec['matched_after']:.2f} s)")
    assert distance >= 0.15
    assert re.search(r"WARNING viperdrive.ros2: DDS domain \d+, discovery range LOCALHOST: no multicast, but it "
                     r"still advertises and answers on every network interface", err), err
    assert "it obeys /robot_x/cmd_vel from ANY participant that can reach it (--allow-publisher limits that)" in err


@needs_lan
def test_localhost_keeps_the_network_out_and_still_serves_this_machine(tmp_path):
    from viperdrive.rigs.virtual import VirtualBoard
    with VirtualBoard() as vb:
        bridge = Bridge(tmp_path, "--namespace", "robot_y", "--localhost", port=vb.url)
        try:
            started(bridge)
            # the outsider publishes for the whole test: alone for a second of board time after it gave up
            # waiting for a match, then while a participant on this machine drives the robot 0.1 m (odom is
            # published all along): it never matches, never moves the robot, never sees odom
            with Peer("robot_y", "--type", "stamped", "--v", "0.2", "--wait-match", "1.0", env=lan_env(LAN)) as p:
                p.wait(lambda _: "matched" in p.stderr(), what="the outsider's match or its giving up")
                d0 = vb.truth()["distance"]
                vb.clock.sleep(1.0)
                from_lan = moved(vb, d0)
                local, from_here = drive_until(vb, loopback_env(), "robot_y", 0.1)
                outsider = p.stop()
                outsider_err = p.stderr()
        finally:
            assert bridge.stop() == 0, bridge.stderr()
    print(f"--localhost: the participant on {LAN} moved it {from_lan:.4f} m (sent {outsider['sent']}, odom "
          f"received {len(outsider['odom'])}); one on the loopback {from_here:.3f} m")
    assert "not matched" in outsider_err and outsider["sent"] >= 5, (outsider_err, outsider["sent"])
    assert from_lan < 0.005 and outsider["odom"] == []      # it never even saw the robot
    assert from_here >= 0.1 and local["odom"]
    assert "on the loopback interface only: participants on other machines cannot reach it" in bridge.stderr()


def test_allow_publisher_refuses_the_others_and_names_them(tmp_path):
    from viperdrive.rigs.virtual import VirtualBoard
    here = socket.gethostname()
    with VirtualBoard() as vb:
        bridge = Bridge(tmp_path, "--namespace", "robot_z", "--allow-publisher", "host=nav-computer",
                        "--allow-publisher", "0123456789ab", port=vb.url)
        try:
            started(bridge)
            d0 = vb.truth()["distance"]

            def refused(seen):
                cmd = [st for _, sts in seen["diagnostics"] for st in sts if st[1] == "viperdrive /robot_z: cmd_vel"]
                return cmd and int(cmd[-1][3].get("refused_samples", 0)) >= 15
            with Peer("robot_z", "--type", "stamped", "--v", "0.2", env=peer_env()) as p:
                p.wait(refused, what="15 refused commands in the bridge's diagnostics")
                rec = p.stop()
            distance = moved(vb, d0)
        finally:
            assert bridge.stop() == 0, bridge.stderr()
    err = bridge.stderr()
    assert distance < 0.005, distance
    assert "cmd_vel: REFUSED a command on /robot_z/cmd_vel from GUID " in err and f"(host {here}, pid " in err
    assert "not in --allow-publisher (GUID 0123456789ab..., host nav-computer)" in err
    cmd = [st for _, sts in rec["diagnostics"] for st in sts if st[1] == "viperdrive /robot_z: cmd_vel"]
    assert cmd and cmd[-1][0] == 1 and "commands refused (not in --allow-publisher)" in cmd[-1][2]
    assert int(cmd[-1][3]["refused_samples"]) >= 15 and f"host {here}" in cmd[-1][3]["refused_from"]


def test_dds_security_is_refused_with_the_reason_before_the_board_is_opened():
    env = peer_env()
    env.update(ROS_SECURITY_ENABLE="true", ROS_SECURITY_STRATEGY="Enforce", ROS_SECURITY_KEYSTORE="/nonexistent")
    r = subprocess.run([str(Path(sys.executable).parent / "viperdrive"), "ros2", "--port", "/dev/ttyNOPE3"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 7, r.stderr
    assert "DDS Security (SROS2 keystore and enclave) is not available" in r.stderr
    assert "does not exist" not in r.stderr             # refused before the port was even looked at


def test_the_pinned_cyclonedds_wheel_has_no_security_plugins():
    """The evidence behind 'DDS Security is not available' (docs/ros2.md). When a pinned wheel gains the plugins
    this fails: then support SROS2 (keystore + enclave -> the dds.sec.* participant properties)."""
    from importlib.metadata import distribution

    from cyclonedds.core import DDSException, Policy, Qos
    from cyclonedds.domain import DomainParticipant
    dist = distribution("cyclonedds")
    files = [str(f) for f in dist.files]
    assert any("libddsc" in f for f in files)
    assert not [f for f in files if "security" in f.lower()], files
    lib = next(Path(dist.locate_file(f)) for f in files if "libddsc" in f and f.endswith((".so", ".so.11.0.1")))
    data = lib.read_bytes()
    assert b"dds.sec.auth.library.path" not in data and b"init_authentication" not in data
    sros2 = {"dds.sec.auth.library.path": "dds_security_auth", "dds.sec.auth.library.init": "init_authentication",
             "dds.sec.auth.library.finalize": "finalize_authentication",
             "dds.sec.auth.identity_ca": "file:/nonexistent/identity_ca.cert.pem",
             "dds.sec.auth.identity_certificate": "file:/nonexistent/cert.pem",
             "dds.sec.auth.private_key": "file:/nonexistent/key.pem"}
    with pytest.raises(DDSException):
        DomainParticipant(DOMAIN + 2, qos=Qos(*[Policy.Property(k, v) for k, v in sros2.items()]))
    DomainParticipant(DOMAIN + 2)           # the same without the security properties is fine
