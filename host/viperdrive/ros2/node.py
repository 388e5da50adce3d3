# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A ROS 2 node's footprint on DDS, without ROS: domain, discovery range, names, participant USER_DATA.

What rmw_cyclonedds_cpp does, and this module does the same way:
- domain id: ROS_DOMAIN_ID (default 0), one DDS domain per id.
- participant USER_DATA `enclave=/;` (how ROS 2 tools tell ROS participants from other DDS participants).
- topic `/<namespace>/<name>` is the DDS topic `rt/<namespace>/<name>`; type `<pkg>::msg::dds_::<Type>_`.
- discovery range from the environment, as a Cyclone XML fragment put in front of CYCLONEDDS_URI:
  ROS_LOCALHOST_ONLY=1 (Humble; deprecated but honoured later) or ROS_AUTOMATIC_DISCOVERY_RANGE
  (LOCALHOST | SUBNET | OFF | SYSTEM_DEFAULT, Iron and later) with ROS_STATIC_PEERS. `cyclone_config()` returns
  the exact XML; docs/ros2.md shows it.
"""
import os
import re
import threading
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.internal import InvalidSample
from cyclonedds.pub import DataWriter, Publisher
from cyclonedds.sub import DataReader, Subscriber
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from ..errors import BadValue
from . import msgs

# Cyclone maps a domain id to UDP ports 7400 + 250 * id (+ offsets); above 232 they leave the 16-bit range
# (the same limit ROS 2 documents).
DOMAIN_ID_MAX = 232
ENCLAVE_USER_DATA = b"enclave=/;"

RANGE_LOCALHOST = "LOCALHOST"
RANGE_SUBNET = "SUBNET"
RANGE_OFF = "OFF"
RANGE_SYSTEM_DEFAULT = "SYSTEM_DEFAULT"
RANGES = (RANGE_LOCALHOST, RANGE_SUBNET, RANGE_OFF, RANGE_SYSTEM_DEFAULT)

# ROS 2 distributions whose rmw_cyclonedds_cpp only knows ROS_LOCALHOST_ONLY (no discovery range)
_LOCALHOST_ONLY_DISTROS = ("foxy", "galactic", "humble")

_NAME_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ------------------------------------------------------------------------------------------------------- names
def _check_tokens(name: str, what: str) -> None:
    for token in name.strip("/").split("/"):
        if not _NAME_TOKEN.match(token) or "__" in token:
            raise BadValue(f"invalid ROS {what} {name!r}: each part must be letters, digits and single underscores, "
                           f"not starting with a digit (part {token!r})")


def normalize_namespace(namespace: str | None) -> str:
    """'' / None / '/' -> '/'; 'robot1' and '/robot1/' -> '/robot1'."""
    if not namespace or namespace.strip("/") == "":
        return "/"
    ns = "/" + namespace.strip("/")
    _check_tokens(ns, "namespace")
    return ns


def resolve_topic(name: str, namespace: str = "/") -> str:
    """Fully qualified ROS name: a relative name goes under the namespace, an absolute one ('/tf') does not."""
    if not name or name.strip("/") == "":
        raise BadValue(f"invalid ROS topic name {name!r}")
    if name.startswith("~"):
        raise BadValue(f"private topic names ({name!r}) are not supported: use a relative or absolute name")
    _check_tokens(name, "topic name")
    if name.startswith("/"):
        return "/" + name.strip("/")
    ns = normalize_namespace(namespace)
    return (ns.rstrip("/") + "/" + name.strip("/")) if ns != "/" else "/" + name.strip("/")


def dds_topic_name(ros_name: str) -> str:
    """'/robot1/cmd_vel' -> 'rt/robot1/cmd_vel' (ROS topics live under the `rt` prefix on DDS)."""
    if not ros_name.startswith("/"):
        raise ValueError(f"not a fully qualified ROS name: {ros_name!r}")
    return "rt" + ros_name


def ros_topic_from_dds(dds_name: str) -> str | None:
    """The ROS topic name of a DDS topic, or None for DDS topics that are not ROS topics (services, builtins)."""
    return dds_name[2:] if dds_name.startswith("rt/") else None


# ------------------------------------------------------------------------------------------------------ domain
def resolve_domain_id(domain_id: int | str | None = None, env=None) -> int:
    """The explicit id, else ROS_DOMAIN_ID, else 0; anything outside 0..232 is a BadValue naming its source."""
    env = os.environ if env is None else env
    source = "--domain-id"
    if domain_id is None:
        raw = env.get("ROS_DOMAIN_ID", "").strip()
        if raw == "":
            return 0
        domain_id, source = raw, "ROS_DOMAIN_ID"
    try:
        value = int(domain_id)
    except (TypeError, ValueError):
        raise BadValue(f"{source}={domain_id!r} is not an integer (0..{DOMAIN_ID_MAX})") from None
    if not 0 <= value <= DOMAIN_ID_MAX:
        raise BadValue(f"{source}={value} is outside 0..{DOMAIN_ID_MAX}")
    return value


@dataclass(frozen=True)
class Discovery:
    """Which participants we find: the ROS 2 discovery range, static peers, and the rmw flavour of localhost."""

    range: str = RANGE_SUBNET
    static_peers: tuple = ()
    humble_localhost_only: bool = False     # ROS_LOCALHOST_ONLY=1 on a Humble-era rmw: bind to 127.0.0.1
    loopback: bool = False                  # --localhost: the loopback interface only, unicast discovery

    @classmethod
    def from_env(cls, env=None) -> "Discovery":
        """The discovery settings a ROS 2 node would take from this environment (rcl's rules).

        ROS_LOCALHOST_ONLY=1 wins over the range and drops the static peers. On Humble and older (ROS_DISTRO)
        it means "bind to 127.0.0.1"; from Iron on it means range LOCALHOST. An unset range is SUBNET; an
        unknown value is LOCALHOST (rcl warns and assumes localhost too).
        """
        env = os.environ if env is None else env
        distro = env.get("ROS_DISTRO", "").strip().lower()
        if env.get("ROS_LOCALHOST_ONLY", "").strip() == "1":
            return cls(RANGE_LOCALHOST, (), humble_localhost_only=distro in _LOCALHOST_ONLY_DISTROS)
        raw = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").strip().upper()
        rng = RANGE_SUBNET if raw == "" else (raw if raw in RANGES else RANGE_LOCALHOST)
        peers = tuple(p.strip() for p in env.get("ROS_STATIC_PEERS", "").split(";") if p.strip())
        return cls(rng, peers)

    @classmethod
    def localhost(cls) -> "Discovery":
        return cls(RANGE_LOCALHOST)

    @classmethod
    def loopback_only(cls) -> "Discovery":
        """`viperdrive ros2 --localhost`: Cyclone uses the loopback interface alone (its locators are 127.0.0.1,
        no multicast, discovery by unicast to the localhost ports), so a participant on another machine does not
        match it, even one that knows this machine's address. ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST does not do
        that: it only turns multicast off and still advertises (and answers on) the LAN address."""
        return cls(RANGE_LOCALHOST, (), loopback=True)

    def exposure(self, domain_id: int) -> str:
        """Who can reach a participant with these settings, in words (the bridge's start-up line)."""
        if self.loopback or self.humble_localhost_only:
            return (f"DDS domain {domain_id} on the loopback interface only: participants on other machines cannot "
                    f"reach it")
        if self.range == RANGE_OFF:
            return f"DDS domain {domain_id} with discovery OFF: no other process can reach it"
        if self.range == RANGE_LOCALHOST:
            return (f"DDS domain {domain_id}, discovery range LOCALHOST: no multicast, but it still advertises and "
                    f"answers on every network interface, so a participant elsewhere that knows this machine's "
                    f"address can reach it (--localhost prevents that)")
        if self.range == RANGE_SYSTEM_DEFAULT:
            return (f"DDS domain {domain_id} with Cyclone's own defaults (and CYCLONEDDS_URI): every network "
                    f"interface unless your configuration says otherwise")
        return (f"DDS domain {domain_id} on every network interface with multicast discovery: any participant on "
                f"the network can find it (--localhost keeps it on this machine)")


def _xml_attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


LOOPBACK_XML = ('<CycloneDDS><Domain><General><Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>'
                '<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>'
                '<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex><Peers><Peer address="localhost"/></Peers>'
                '</Discovery></Domain></CycloneDDS>')


def discovery_xml(discovery: Discovery, pid: int | None = None) -> str:
    """The Cyclone XML fragment rmw_cyclonedds_cpp generates for these settings ('' when it adds none); for
    --localhost (Discovery.loopback_only) our own: the loopback interface, no multicast, localhost peers."""
    if discovery.loopback:
        return LOOPBACK_XML
    if discovery.humble_localhost_only:
        # Humble: the node binds to the loopback interface. Peers find each other by multicast on lo, so lo
        # needs the MULTICAST flag (`ip link set lo multicast on`), as with ROS 2 itself.
        return ('<CycloneDDS><Domain><General><Interfaces><NetworkInterface address="127.0.0.1"/>'
                '</Interfaces></General></Domain></CycloneDDS>')
    rng = discovery.range
    if rng == RANGE_SYSTEM_DEFAULT:
        return ""
    localhost_peer = rng == RANGE_LOCALHOST
    static_peers = discovery.static_peers if rng in (RANGE_LOCALHOST, RANGE_SUBNET) else ()
    no_multicast = rng in (RANGE_LOCALHOST, RANGE_OFF)
    xml = "<CycloneDDS><Domain>"
    if no_multicast:
        xml += "<General><AllowMulticast>false</AllowMulticast></General>"
    if rng == RANGE_OFF:
        # a private tag: only a participant with this exact tag (this process) can discover us
        xml += "<Discovery><ParticipantIndex>none</ParticipantIndex>"
        xml += f"<Tag>ros_discovery_off_{os.getpid() if pid is None else pid}</Tag>"
    else:
        # unicast discovery needs predictable ports: participant index 0..32 per host and domain
        xml += ("<Discovery><ParticipantIndex>auto</ParticipantIndex>"
                "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>")
    if localhost_peer or static_peers:
        xml += "<Peers>"
        if localhost_peer:
            xml += '<Peer address="localhost"/>'
        for peer in static_peers:
            xml += f'<Peer address="{_xml_attr(peer)}"/>'
        xml += "</Peers>"
    xml += "</Discovery></Domain></CycloneDDS>"
    return xml


def cyclone_config(discovery: Discovery, env=None, pid: int | None = None) -> str:
    """The whole Cyclone configuration string: our fragment, then CYCLONEDDS_URI (which wins where both set
    something), as rmw_cyclonedds_cpp does. '' means "Cyclone's defaults plus CYCLONEDDS_URI"."""
    env = os.environ if env is None else env
    parts = [p for p in (discovery_xml(discovery, pid), env.get("CYCLONEDDS_URI", "")) if p]
    return ",".join(parts)


# The process-wide DDS domains we created, by id: Cyclone allows one configuration per domain id per process.
_domains: dict = {}
_domains_lock = threading.Lock()


def _acquire_domain(domain_id: int, config: str):
    with _domains_lock:
        entry = _domains.get(domain_id)
        if entry is not None:
            if entry[1] != config:
                raise BadValue(f"DDS domain {domain_id} is already in use in this process with a different "
                               "discovery configuration")
            entry[2] += 1
            return entry[0]
        domain = Domain(domain_id, config) if config else None
        _domains[domain_id] = [domain, config, 1]
        return domain


def _release_domain(domain_id: int) -> None:
    with _domains_lock:
        entry = _domains.get(domain_id)
        if entry is None:
            return
        entry[2] -= 1
        if entry[2] == 0:
            del _domains[domain_id]
            if entry[0] is not None:
                delete_entity(entry[0])


def wait_for_acks(writer, ms: int) -> bool:
    """DataWriter.wait_for_acks -> False on a timeout. cyclonedds 11.0.1's own timeout branch reads
    `Exception.DDS_RETCODE_TIMEOUT` (pub.py) and so raises AttributeError instead of returning False: that
    AttributeError is the timeout."""
    try:
        return bool(writer.wait_for_acks(duration(milliseconds=ms)))
    except AttributeError:
        return False


def take_valid(reader, n: int = 64) -> list:
    """reader.take(n) without the data-less samples DDS delivers when a writer leaves or disposes (they carry only
    an instance-state change)."""
    return [s for s in reader.take(n) if s is not None and not isinstance(s, InvalidSample)]


def delete_entity(entity) -> None:
    """Delete a Cyclone entity now (and with it its children), not whenever the garbage collector gets to it;
    idempotent, like the binding's own finalizer which it uses."""
    entity.__del__()        # the binding's finalizer: deletes once, does nothing for an entity already gone


def _with_type_hash(qos: Qos, msg_type) -> Qos:
    """The endpoint QoS plus USER_DATA `typehash=RIHS01_...;` (what rmw_cyclonedds_cpp sets from Iron on;
    `ros2 topic info -v` shows it; Humble ignores it)."""
    from . import typehash
    try:
        data = typehash.user_data(msg_type)
    except (KeyError, ValueError):      # not one of the ROS message types of viperdrive.ros2.msgs
        return qos
    return Qos(Policy.Userdata(data), base=qos)


def ros_discovery_qos() -> Qos:
    """rmw_dds_common's ros_discovery_info: RELIABLE, TRANSIENT_LOCAL, KEEP_LAST 1, XCDR1."""
    from cyclonedds.util import duration
    return Qos(Policy.Reliability.Reliable(max_blocking_time=duration(milliseconds=100)),
               Policy.Durability.TransientLocal, Policy.History.KeepLast(1),
               Policy.DataRepresentation(use_cdrv0_representation=True))


# DDS Security (SROS2) needs Cyclone built with security and its three plugin libraries (libdds_security_auth,
# _ac, _crypto). The cyclonedds wheel this package pins ships neither: its RECORD lists libddsc and libcycloneddsidl
# only, libddsc holds none of the plugin-loading property names, and a participant given SROS2's dds.sec.*
# properties is refused with DDS_RETCODE_ERROR before any library is looked for (tests/test_ros2_exposure.py).
SECURITY_UNAVAILABLE = (
    "DDS Security (SROS2 keystore and enclave) is not available: the cyclonedds wheel this package pins ships no "
    "security plugins (libdds_security_auth/_ac/_crypto) and its libddsc is built without security, so it "
    "refuses a participant with the dds.sec.* properties (docs/ros2.md)")


def check_security(env=None) -> str | None:
    """What rcl does with ROS_SECURITY_ENABLE / ROS_SECURITY_STRATEGY, given that security is unavailable here:
    "true" with strategy Enforce is an error (BadValue: running unsecured would ignore the keystore the user set
    up); with Permissive (rcl's default) the node runs WITHOUT security and the returned warning says so; unset
    or anything but "true": None."""
    env = os.environ if env is None else env
    if env.get("ROS_SECURITY_ENABLE", "") != "true":
        return None
    strategy = env.get("ROS_SECURITY_STRATEGY", "") or "Permissive"
    if strategy == "Enforce":
        raise BadValue(f"ROS_SECURITY_ENABLE=true with ROS_SECURITY_STRATEGY=Enforce, but {SECURITY_UNAVAILABLE}. "
                       f"Refusing to run unsecured; keep others out with --localhost (or a network of its own), or "
                       f"unset ROS_SECURITY_ENABLE to run without security knowingly")
    return (f"ROS_SECURITY_ENABLE=true (strategy {strategy}) but {SECURITY_UNAVAILABLE}: running WITHOUT security, "
            f"as rcl does in Permissive mode; ROS_SECURITY_STRATEGY=Enforce refuses instead")


class RosNode:
    """One DDS participant that a ROS 2 graph takes for a ROS 2 process.

    `publisher(name, type, qos)` and `subscription(name, type, qos)` resolve `name` against the namespace and
    create the DDS writer/reader on `rt/...`. `close()` deletes the participant (remote nodes see our
    endpoints disappear). Entities are deleted with the participant.
    """

    def __init__(self, namespace: str = "/", domain_id: int | None = None, discovery: Discovery | None = None,
                 env=None):
        env = os.environ if env is None else env
        self.security_warning = check_security(env)
        self.namespace = normalize_namespace(namespace)
        self.domain_id = resolve_domain_id(domain_id, env)
        self.discovery = Discovery.from_env(env) if discovery is None else discovery
        self.config = cyclone_config(self.discovery, env)
        self._domain = _acquire_domain(self.domain_id, self.config)
        try:
            self.participant = DomainParticipant(self.domain_id, qos=Qos(Policy.Userdata(ENCLAVE_USER_DATA)))
        except Exception as e:
            _release_domain(self.domain_id)
            raise BadValue(f"cannot create the DDS participant on domain {self.domain_id}: {e}") from e
        self._publisher = Publisher(self.participant)
        self._subscriber = Subscriber(self.participant)
        self._topics: dict = {}
        self._closed = False
        self.gid_size = msgs.gid_size_for_distro(env.get("ROS_DISTRO"))
        self._graph_writer: DataWriter | None = None

    def topic_name(self, name: str) -> str:
        return resolve_topic(name, self.namespace)

    def _topic(self, name: str, msg_type):
        return self._dds_topic(dds_topic_name(self.topic_name(name)), msg_type)

    def _dds_topic(self, dds_name: str, msg_type):
        key = (dds_name, msg_type)
        if key not in self._topics:
            self._topics[key] = Topic(self.participant, dds_name, msg_type)
        return self._topics[key]

    def publisher(self, name: str, msg_type, qos: Qos) -> DataWriter:
        return DataWriter(self._publisher, self._topic(name, msg_type), qos=_with_type_hash(qos, msg_type))

    def subscription(self, name: str, msg_type, qos: Qos, listener=None) -> DataReader:
        return DataReader(self._subscriber, self._topic(name, msg_type), qos=_with_type_hash(qos, msg_type),
                          listener=listener)

    def service(self, name: str, request_type, reply_type, qos: Qos) -> tuple[DataReader, DataWriter]:
        """A service server's endpoints for `name` (resolved like a topic): the request reader on
        rq/<name>Request and the reply writer on rr/<name>Reply, as rmw_cyclonedds_cpp names them."""
        ros = self.topic_name(name)
        rq = self._dds_topic("rq" + ros + "Request", request_type)
        rr = self._dds_topic("rr" + ros + "Reply", reply_type)
        return DataReader(self._subscriber, rq, qos=qos), DataWriter(self._publisher, rr, qos=qos)

    def client(self, name: str, request_type, reply_type, qos: Qos) -> tuple[DataWriter, DataReader]:
        """A service client's endpoints for `name`: the request writer and the reply reader (service()'s
        mirror). A reply repeats the request's client_guid and sequence_number: match on both."""
        ros = self.topic_name(name)
        rq = self._dds_topic("rq" + ros + "Request", request_type)
        rr = self._dds_topic("rr" + ros + "Reply", reply_type)
        return DataWriter(self._publisher, rq, qos=qos), DataReader(self._subscriber, rr, qos=qos)

    def announce(self, node_name: str, readers=(), writers=()) -> None:
        """Publish this participant's ParticipantEntitiesInfo on `ros_discovery_info`: one node, node_name in our
        namespace, with these DDS readers and writers. Call again whenever the set changes (the latest sample
        replaces the previous one: KEEP_LAST 1, TRANSIENT_LOCAL, so late joiners get it too)."""
        gid_cls, node_cls, info_cls = msgs.graph_types(self.gid_size)
        if self._graph_writer is None:
            topic = Topic(self.participant, "ros_discovery_info", info_cls)
            self._topics[("ros_discovery_info", info_cls)] = topic
            self._graph_writer = DataWriter(self._publisher, topic, qos=ros_discovery_qos())
        node = node_cls(node_namespace=self.namespace, node_name=node_name,
                        reader_gid_seq=[msgs.gid_from_guid(r.guid.bytes, self.gid_size) for r in readers],
                        writer_gid_seq=[msgs.gid_from_guid(w.guid.bytes, self.gid_size) for w in writers])
        self._graph_writer.write(info_cls(gid=msgs.gid_from_guid(self.participant.guid.bytes, self.gid_size),
                                          node_entities_info_seq=[node]))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._topics.clear()
        try:
            delete_entity(self.participant)
        finally:
            _release_domain(self.domain_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
