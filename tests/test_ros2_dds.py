# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 naming, domain id, discovery configuration and QoS on a real Cyclone DDS, loopback only.

Every DDS test uses localhost-only discovery (the XML rmw_cyclonedds_cpp generates for
ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) and a domain id drawn at random once per test run, so parallel runs on
one machine and any DDS traffic on the network stay apart.
"""
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsParticipant
from cyclonedds.core import Policy
from cyclonedds.domain import Domain

from viperdrive.errors import BadValue
from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.node import (
    RANGE_LOCALHOST,
    RANGE_OFF,
    RANGE_SUBNET,
    RANGE_SYSTEM_DEFAULT,
    Discovery,
    RosNode,
    cyclone_config,
    dds_topic_name,
    discovery_xml,
    normalize_namespace,
    resolve_domain_id,
    resolve_topic,
    ros_topic_from_dds,
    take_valid,
)

pytestmark = pytest.mark.ros2

HERE = Path(__file__).resolve().parent
DOMAIN = random.SystemRandom().randint(120, 220)     # one random domain per test run
LOCAL_ENV = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def peer_env(domain=DOMAIN):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ROS_LOCALHOST_ONLY", "CYCLONEDDS_URI", "ROS_STATIC_PEERS", "ROS_DISTRO")}
    env.update(LOCAL_ENV, ROS_DOMAIN_ID=str(domain))
    return env


def wait_for(cond, timeout=10.0, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


# ------------------------------------------------------------------------------------------------------ naming
@pytest.mark.parametrize("name, namespace, expected", [
    ("cmd_vel", "/", "/cmd_vel"),
    ("cmd_vel", "", "/cmd_vel"),
    ("cmd_vel", "robot1", "/robot1/cmd_vel"),
    ("cmd_vel", "/robot1/", "/robot1/cmd_vel"),
    ("cmd_vel", "/fleet/robot_2", "/fleet/robot_2/cmd_vel"),
    ("/tf", "/robot1", "/tf"),                  # absolute names ignore the namespace
    ("diag/sub", "/r", "/r/diag/sub"),
])
def test_topic_names_resolve_like_ros(name, namespace, expected):
    assert resolve_topic(name, namespace) == expected
    assert dds_topic_name(expected) == "rt" + expected
    assert ros_topic_from_dds("rt" + expected) == expected


@pytest.mark.parametrize("bad", ["", "/", "2fast", "cmd-vel", "a//b", "a__b", "~/private", "a b"])
def test_bad_topic_names_are_refused_with_the_part_named(bad):
    with pytest.raises(BadValue):
        resolve_topic(bad, "/")


def test_namespace_normalized_and_checked():
    assert normalize_namespace(None) == "/"
    assert normalize_namespace("robot1/") == "/robot1"
    with pytest.raises(BadValue, match="namespace"):
        normalize_namespace("robot-1")
    assert ros_topic_from_dds("DCPSPublication") is None


# ---------------------------------------------------------------------------------------------------- domain id
def test_domain_id_from_argument_env_default_and_errors():
    assert resolve_domain_id(None, {}) == 0
    assert resolve_domain_id(None, {"ROS_DOMAIN_ID": " 42 "}) == 42
    assert resolve_domain_id(7, {"ROS_DOMAIN_ID": "42"}) == 7        # the command line wins
    with pytest.raises(BadValue, match="ROS_DOMAIN_ID=233"):
        resolve_domain_id(None, {"ROS_DOMAIN_ID": "233"})
    with pytest.raises(BadValue, match="not an integer"):
        resolve_domain_id(None, {"ROS_DOMAIN_ID": "ten"})
    with pytest.raises(BadValue, match="--domain-id=-1"):
        resolve_domain_id(-1, {})


# --------------------------------------------------------------------------------------------------- discovery
def test_discovery_env_precedence_like_rcl():
    assert Discovery.from_env({}).range == RANGE_SUBNET
    assert Discovery.from_env({"ROS_AUTOMATIC_DISCOVERY_RANGE": "localhost"}).range == RANGE_LOCALHOST
    assert Discovery.from_env({"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"}).range == RANGE_OFF
    assert Discovery.from_env({"ROS_AUTOMATIC_DISCOVERY_RANGE": "bogus"}).range == RANGE_LOCALHOST
    d = Discovery.from_env({"ROS_STATIC_PEERS": "10.0.0.2; robot.local;"})
    assert d.static_peers == ("10.0.0.2", "robot.local")
    # ROS_LOCALHOST_ONLY=1 wins and drops static peers; on Humble it means "bind to 127.0.0.1"
    j = Discovery.from_env({"ROS_LOCALHOST_ONLY": "1", "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
                            "ROS_STATIC_PEERS": "10.0.0.2", "ROS_DISTRO": "jazzy"})
    assert (j.range, j.static_peers, j.humble_localhost_only) == (RANGE_LOCALHOST, (), False)
    h = Discovery.from_env({"ROS_LOCALHOST_ONLY": "1", "ROS_DISTRO": "humble"})
    assert h.humble_localhost_only and "127.0.0.1" in discovery_xml(h)


def test_discovery_xml_matches_rmw_cyclonedds():
    local = discovery_xml(Discovery(RANGE_LOCALHOST, ("10.0.0.2",)))
    assert local == ('<CycloneDDS><Domain><General><AllowMulticast>false</AllowMulticast></General>'
                     '<Discovery><ParticipantIndex>auto</ParticipantIndex>'
                     '<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>'
                     '<Peers><Peer address="localhost"/><Peer address="10.0.0.2"/></Peers>'
                     '</Discovery></Domain></CycloneDDS>')
    subnet = discovery_xml(Discovery(RANGE_SUBNET))
    assert "AllowMulticast" not in subnet and "<Peers>" not in subnet and "ParticipantIndex>auto" in subnet
    off = discovery_xml(Discovery(RANGE_OFF, ("10.0.0.2",)), pid=1234)
    assert "<Tag>ros_discovery_off_1234</Tag>" in off and "10.0.0.2" not in off
    assert "<ParticipantIndex>none</ParticipantIndex>" in off
    assert discovery_xml(Discovery(RANGE_SYSTEM_DEFAULT)) == ""
    # CYCLONEDDS_URI comes after ours, so the user's file has the last word
    assert cyclone_config(Discovery(RANGE_SYSTEM_DEFAULT), {"CYCLONEDDS_URI": "file:///x.xml"}) == "file:///x.xml"
    assert cyclone_config(Discovery(RANGE_OFF), {"CYCLONEDDS_URI": "file:///x.xml"}, pid=1).endswith(
        "</CycloneDDS>,file:///x.xml")
    assert '"a&amp;b"' in discovery_xml(Discovery(RANGE_SUBNET, ("a&b",)))


@pytest.mark.parametrize("discovery", [Discovery(RANGE_LOCALHOST, ("127.0.0.1",)), Discovery(RANGE_SUBNET),
                                       Discovery(RANGE_OFF), Discovery(RANGE_LOCALHOST, (), True)])
def test_cyclone_accepts_every_generated_config(discovery):
    config = cyclone_config(discovery, {})
    domain = Domain(DOMAIN + 1, config)     # raises on XML Cyclone does not accept
    from viperdrive.ros2.node import delete_entity
    delete_entity(domain)


# ------------------------------------------------------------------------------------------ participant and QoS
def test_participant_user_data_is_the_ros_enclave():
    with RosNode("/", domain_id=DOMAIN, env=LOCAL_ENV) as a, RosNode("/", domain_id=DOMAIN, env=LOCAL_ENV) as b:
        reader = BuiltinDataReader(a.participant, BuiltinTopicDcpsParticipant)
        seen = {}

        def look():
            for s in reader.take(16):
                if s.sample_info.valid_data:
                    seen[s.key] = s.qos
            return b.participant.guid in seen
        assert wait_for(look, 5.0)
        assert seen[b.participant.guid][Policy.Userdata].data == b"enclave=/;"


def test_two_nodes_in_one_process_share_the_domain_but_not_a_different_config():
    with RosNode("/", domain_id=DOMAIN, env=LOCAL_ENV):
        with pytest.raises(BadValue, match="different discovery configuration"):
            RosNode("/", domain_id=DOMAIN, env={"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"})


@pytest.mark.parametrize("distro, size", [("humble", 24), ("jazzy", 16)])
def test_announce_tells_the_graph_which_node_owns_which_endpoints(distro, size):
    """ros_discovery_info as ROS 2 reads it: our participant's gid, node /robot_g/viperdrive, and the GUIDs of
    its reader and writers (what `ros2 node list` and `ros2 topic info -v` are built from)."""
    env = dict(LOCAL_ENV, ROS_DISTRO=distro)
    with RosNode("/robot_g", domain_id=DOMAIN, env=env) as node, RosNode("/", domain_id=DOMAIN, env=env) as graph:
        w = node.publisher("odom", msgs.Odometry, qos.default_qos())
        r = node.subscription("cmd_vel", msgs.Twist, qos.command_qos())
        node.announce("viperdrive", [r], [w])
        _, _, info_t = msgs.graph_types(size)
        from cyclonedds.sub import DataReader
        from cyclonedds.topic import Topic

        from viperdrive.ros2.node import ros_discovery_qos
        reader = DataReader(graph.participant, Topic(graph.participant, "ros_discovery_info", info_t),
                            qos=ros_discovery_qos())
        got = []
        assert wait_for(lambda: got.extend(take_valid(reader)) or any(
            bytes(s.gid.data)[:16] == node.participant.guid.bytes for s in got), 5.0)
        info = [s for s in got if bytes(s.gid.data)[:16] == node.participant.guid.bytes][-1]
        assert len(info.gid.data) == size and bytes(info.gid.data)[16:] == bytes(size - 16)
        (n,) = info.node_entities_info_seq
        assert (n.node_namespace, n.node_name) == ("/robot_g", "viperdrive")
        assert [bytes(g.data)[:16] for g in n.writer_gid_seq] == [w.guid.bytes]
        assert [bytes(g.data)[:16] for g in n.reader_gid_seq] == [r.guid.bytes]


def test_qos_profiles():
    d = qos.default_qos()
    assert d[Policy.History].depth == 10 and d[Policy.Durability] == Policy.Durability.Volatile
    assert isinstance(d[Policy.Reliability], Policy.Reliability.Reliable)
    assert qos.tf_qos()[Policy.History].depth == 100
    assert qos.tf_static_qos()[Policy.Durability] == Policy.Durability.TransientLocal
    assert qos.command_qos()[Policy.Reliability] == Policy.Reliability.BestEffort
    for q in (d, qos.tf_qos(), qos.tf_static_qos(), qos.command_qos()):
        assert q[Policy.DataRepresentation].use_cdrv0_representation


@pytest.mark.slow
def test_another_process_publishes_twist_stamped_and_we_receive_it_and_ddsls_lists_it():
    """A separate process (its own participant) publishes on /robot_a/cmd_vel; we read it with the ROS 2 type
    and name; ddsls (Cyclone's own tool, a third participant) lists topic, type and QoS as ROS 2 has them."""
    with RosNode("/robot_a", domain_id=DOMAIN, env=LOCAL_ENV) as node:
        reader = node.subscription("cmd_vel", msgs.TwistStamped, qos.command_qos())
        wall0 = time.time()
        # the peer publishes until it is told to stop (SIGTERM), so it is in the graph for as long as the listing
        # takes on this machine
        peer = subprocess.Popen([sys.executable, str(HERE / "ros2_peer.py"), "--namespace", "robot_a",
                                 "--type", "stamped", "--v", "0.25", "--w", "-0.5", "--publish", "300",
                                 "--listen", "0"], env=peer_env(), stdout=subprocess.PIPE, text=True)
        try:
            got = []

            def receive():
                got.extend(take_valid(reader, 16))
                return len(got) >= 5
            assert wait_for(receive, 60.0)
            s = got[-1]
            assert (s.twist.linear.x, s.twist.angular.z, s.header.frame_id) == (0.25, -0.5, "base_link")
            # ROS time: wall-clock seconds, stamped after the peer started and before we read it
            assert wall0 - 1.0 < msgs.time_to_s(s.header.stamp) < time.time() + 1.0
            listed: dict = {}

            def listing_has_both():
                # ddsls listens for a while and lists what it discovered: again until it found both ends
                got_listing = ddsls(DOMAIN)
                listed["pubs"] = {v["topic_name"]: v for v in got_listing["PUBLICATION"]["New"].values()}
                listed["subs"] = {v["topic_name"]: v for v in got_listing["SUBSCRIPTION"]["New"].values()}
                return all(t in listed["subs"] for t in ("rt/robot_a/cmd_vel", "rt/robot_a/odom", "rt/tf")) \
                    and "rt/robot_a/cmd_vel" in listed["pubs"]
            assert wait_for(listing_has_both, 120.0), listed
        finally:
            peer.terminate()
            out, _ = peer.communicate(timeout=60)
        assert peer.returncode == 0 and json.loads(out)["sent"] >= 5
    pubs, subs = listed["pubs"], listed["subs"]
    assert pubs["rt/robot_a/cmd_vel"]["type_name"] == "geometry_msgs::msg::dds_::TwistStamped_"
    assert subs["rt/robot_a/cmd_vel"]["type_name"] == "geometry_msgs::msg::dds_::TwistStamped_"
    q = pubs["rt/robot_a/cmd_vel"]["qos"]
    assert q["Reliability"]["kind"] == "Reliable" and q["Durability"]["kind"] == "Volatile"
    assert q["History"] == {"kind": "KeepLast", "depth": 10}
    assert subs["rt/robot_a/odom"]["type_name"] == "nav_msgs::msg::dds_::Odometry_"
    assert subs["rt/tf"]["type_name"] == "tf2_msgs::msg::dds_::TFMessage_"
    assert subs["rt/tf"]["qos"]["History"]["depth"] == 100


def ddsls(domain, runtime=1.5, path=None):
    """Cyclone's ddsls (a separate process) listing every participant/publication/subscription, as a dict."""
    import tempfile
    env = peer_env(domain)
    env["CYCLONEDDS_URI"] = cyclone_config(Discovery(RANGE_LOCALHOST), {})
    exe = Path(sys.executable).parent / "ddsls"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ddsls.json"
        subprocess.run([str(exe), "-i", str(domain), "-a", "-r", str(runtime), "-f", str(out)], env=env,
                       check=True, timeout=30, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def _stopped(pid: int) -> bool:
    """Every thread of the process is stopped (state T in /proc/PID/task/TID/stat)."""
    try:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    except OSError:
        return False
    return bool(states) and all(st == "T" for st in states)


def test_wait_for_acks_reports_a_reader_that_does_not_acknowledge():
    """The bridge's last diagnostics wait for acknowledgements; a reader in a stopped process (SIGSTOP: its DDS
    threads run no more) never acknowledges. cyclonedds 11.0.1 raises AttributeError from its own timeout branch;
    viperdrive.ros2.node.wait_for_acks turns that into False, and True once the reader is back."""
    import signal

    from cyclonedds.pub import DataWriter
    from cyclonedds.topic import Topic

    from viperdrive.ros2.node import wait_for_acks

    domain = random.SystemRandom().randint(221, 231)
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from cyclonedds.domain import DomainParticipant\n"
         "from cyclonedds.sub import DataReader\n"
         "from cyclonedds.topic import Topic\n"
         "from viperdrive.ros2 import msgs, qos\n"
         f"p = DomainParticipant({domain})\n"
         "r = DataReader(p, Topic(p, 'rt/acks', msgs.Vector3), qos=qos.default_qos())\n"
         "print('ready', flush=True)\n"
         "time.sleep(60)\n"],
        env=peer_env(domain), stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "ready"
        from cyclonedds.domain import DomainParticipant
        p = DomainParticipant(domain)
        w = DataWriter(p, Topic(p, "rt/acks", msgs.Vector3), qos=qos.default_qos())
        assert wait_for(lambda: len(w.get_matched_subscriptions()) == 1)
        w.write(msgs.Vector3(1.0, 2.0, 3.0))
        assert wait_for_acks(w, 2000) is True
        reader.send_signal(signal.SIGSTOP)
        # the stop is asynchronous: its DDS threads could still acknowledge a write sent before it took hold
        assert wait_for(lambda: _stopped(reader.pid)), "the reader never stopped"
        w.write(msgs.Vector3(4.0, 5.0, 6.0))
        t0 = time.monotonic()
        assert wait_for_acks(w, 200) is False
        assert 0.15 < time.monotonic() - t0 < 2.0
        reader.send_signal(signal.SIGCONT)
        assert wait_for_acks(w, 3000) is True
    finally:
        reader.send_signal(signal.SIGCONT)
        reader.kill()
        reader.wait()
