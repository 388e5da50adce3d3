# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The bridge's cmd_vel input (docs/ros2.md, "cmd_vel"): one reader of geometry_msgs/TwistStamped or Twist on the
topic (stamped = "auto" picks the type the first publisher offers), every sample taken in order, stale and
out-of-order stamps refused with a reason, publishers other than the allowed ones ignored (PublisherFilter), and
the warnings about missing or wrong-typed publishers rate-limited (RateLimitedWarning)."""
import logging

from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsParticipant, BuiltinTopicDcpsPublication
from cyclonedds.core import InstanceState, Policy
from cyclonedds.sub import DataReader

from ..errors import BadValue
from ..timebase import HOST_CLOCK, Clock
from . import msgs, qos
from .node import RANGE_OFF, RosNode, dds_topic_name, delete_entity, take_valid

log = logging.getLogger("viperdrive.ros2")

STAMPED_CHOICES = ("auto", "true", "false")
TWIST = "geometry_msgs/msg/Twist"
TWIST_STAMPED = "geometry_msgs/msg/TwistStamped"
_CMD_TYPES = {TWIST: msgs.Twist, TWIST_STAMPED: msgs.TwistStamped}

WARN_INTERVAL_S = 5.0           # a repeated warning (no publisher, wrong type) at most this often


class RateLimitedWarning:
    """log.warning(key, text) at most once per interval_s seconds per key (a state that persists is re-reported)."""

    def __init__(self, interval_s: float = WARN_INTERVAL_S, clock: Clock = HOST_CLOCK):
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict = {}
        self.count: dict = {}

    def __call__(self, key: str, text: str) -> bool:
        now = self.clock.now()
        self.count[key] = self.count.get(key, 0) + 1
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            return False
        self._last[key] = now
        log.warning(text)
        return True


def ros_time_to_clock(stamp: msgs.Time, ros_minus_clock: float) -> float | None:
    """A header stamp (ROS time) on the bridge's loop clock, given ROS time minus that clock (the wall minus the
    host's monotonic clock; 0 on sim time); None for a zero stamp (unstamped, as diff_drive_controller treats it:
    taken as "now")."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return None
    return msgs.time_to_s(stamp) - ros_minus_clock


class PublisherFilter:
    """Which participants may command the robot (`--allow-publisher`): each spec is a participant GUID prefix in
    hex (`0110b041de55`, separators `:`/`-`/`.` ignored; `ddsls` and the bridge's warnings show the GUIDs) or
    `host=NAME` (the host name a Cyclone DDS participant declares, property `__Hostname`). A sample is taken when
    its writer's participant matches any spec.

    Not authentication: every participant chooses its own GUID and declares its own host name, so this keeps out
    the stray teleop of a colleague on the same network and domain, not someone who means harm. Keeping others
    out for real needs --localhost, a network of its own, or DDS Security (not in this cyclonedds wheel:
    docs/ros2.md)."""

    HOST = "host="

    def __init__(self, specs):
        self.prefixes: list[str] = []
        self.hosts: list[str] = []
        for spec in specs:
            text = str(spec).strip()
            if text.startswith(self.HOST):
                host = text[len(self.HOST):].strip()
                if not host:
                    raise BadValue(f"--allow-publisher {spec!r}: write host=NAME")
                self.hosts.append(host.lower())
                continue
            hexs = "".join(c for c in text if c not in ":-.").lower()
            if len(hexs) < 2 or len(hexs) > 32 or any(c not in "0123456789abcdef" for c in hexs):
                raise BadValue(f"--allow-publisher {spec!r}: give a participant GUID prefix in hex (e.g. "
                               f"0110b041de55) or host=NAME")
            self.prefixes.append(hexs)
        if not self.prefixes and not self.hosts:
            raise BadValue("--allow-publisher: name at least one GUID prefix or host=NAME")

    def allows(self, participant_guid_hex: str, properties: dict | None) -> bool:
        if any(participant_guid_hex.startswith(p) for p in self.prefixes):
            return True
        host = (properties or {}).get("__Hostname")
        return host is not None and host.lower() in self.hosts

    def describe(self) -> str:
        return ", ".join([f"GUID {p}..." for p in self.prefixes] + [f"host {h}" for h in self.hosts])


def participant_text(guid_hex: str, properties: dict | None) -> str:
    """'GUID 0110b041de554351 (host vm, pid 3588, python)' for logs and diagnostics."""
    props = properties or {}
    extra = [f"host {props['__Hostname']}" if "__Hostname" in props else "",
             f"pid {props['__Pid']}" if "__Pid" in props else "", props.get("__ProcessName", "")]
    extra = [e for e in extra if e]
    return f"GUID {guid_hex[:24]}" + (f" ({', '.join(extra)})" if extra else "")


class CmdVelInput:
    """The cmd_vel subscription with the Twist/TwistStamped choice and the mismatch warnings.

    stamped "true"/"false": one reader of that type. "auto": no reader until a publisher shows up in DDS
    discovery (the builtin DCPSPublication topic carries its type name), then a reader of the type it offers;
    if only publishers of the other type remain later, switch. Every choice is logged. Warned (once per
    interval): no publisher matched on the topic; a publisher of the type we do not read (the silent
    Twist/TwistStamped mismatch: the robot would not move).
    """

    def __init__(self, node: RosNode, name: str = "cmd_vel", stamped: str = "auto", warn=None, on_reader=None,
                 allow: PublisherFilter | None = None):
        if stamped not in STAMPED_CHOICES:
            raise BadValue(f"--stamped must be one of {', '.join(STAMPED_CHOICES)}, not {stamped!r}")
        self.node = node
        self.ros_name = node.topic_name(name)
        self.dds_name = dds_topic_name(self.ros_name)
        self.name = name
        self.stamped = stamped
        self.warn = warn if warn is not None else RateLimitedWarning()
        self.reader: DataReader | None = None
        self.type_name: str | None = None      # the ROS type we read, once chosen
        self.offered: dict = {}                 # publication key -> ROS type name (other participants)
        self.samples = 0
        self.switches = 0
        self.on_reader = on_reader              # called after the reader was (re)created
        self._own_participant = node.participant.guid
        self._discovery = BuiltinDataReader(node.participant, BuiltinTopicDcpsPublication)
        self.allow = allow
        self.refused = 0                        # samples from participants --allow-publisher does not name
        self.refused_from: dict = {}            # participant text -> samples refused
        self._verdicts: dict = {}               # publication handle -> (allowed, participant text)
        self._participants: dict = {}           # participant GUID hex -> its declared properties
        self._participant_reader = (BuiltinDataReader(node.participant, BuiltinTopicDcpsParticipant)
                                    if allow is not None else None)
        if stamped != "auto":
            self._use(TWIST_STAMPED if stamped == "true" else TWIST, "fixed by --stamped " + stamped)

    def _use(self, type_name: str, why: str) -> None:
        if self.reader is not None:
            delete_entity(self.reader)
            self.switches += 1
        self.reader = self.node.subscription(self.name, _CMD_TYPES[type_name], qos.command_qos())
        self.type_name = type_name
        log.info("cmd_vel: reading %s as %s (%s)", self.ros_name, type_name, why)
        if self.on_reader is not None:
            self.on_reader()

    def _update_discovery(self) -> None:
        for s in self._discovery.take(64):
            state = s.sample_info.instance_state
            if state != InstanceState.Alive:
                self.offered.pop(s.key, None)
                continue
            if s.topic_name != self.dds_name or s.participant_key == self._own_participant:
                continue
            try:
                self.offered[s.key] = msgs.ros_type_name(s.type_name)
            except ValueError:
                self.offered[s.key] = s.type_name      # a non-ROS type on our topic: reported as is

    def matched(self) -> int:
        return len(self.reader.get_matched_publications()) if self.reader is not None else 0

    def offered_types(self) -> set:
        return set(self.offered.values())

    def poll(self, ros_minus_clock: float) -> list:
        """New commands since the last call, oldest first: [(v, w, stamp on the loop's clock or None)]."""
        self._update_discovery()
        types = self.offered_types()
        if self.stamped == "auto":
            known = [t for t in (TWIST_STAMPED, TWIST) if t in types]
            if self.type_name is None and known:
                self._use(known[0], f"auto: a publisher offers {known[0]}")
            elif self.type_name is not None and self.type_name not in types and known:
                self._use(known[0], f"auto: no {self.type_name} publisher left, a publisher offers {known[0]}")
        out: list[tuple[float, float, float | None]] = []
        if self.reader is not None:
            for s in take_valid(self.reader, 32):
                if self.allow is not None and not self._allowed(s):
                    continue
                if self.type_name == TWIST_STAMPED:
                    out.append((s.twist.linear.x, s.twist.angular.z,
                                ros_time_to_clock(s.header.stamp, ros_minus_clock)))
                else:
                    out.append((s.linear.x, s.angular.z, None))
        self.samples += len(out)
        self._warnings(types)
        return out

    def _allowed(self, sample) -> bool:
        """Is the sample's writer in a participant --allow-publisher names? Unknown writers are refused (fail
        closed); the verdict is cached per publication handle."""
        # a sample of our reader, with --allow-publisher (the participant reader exists then)
        assert self.reader is not None and self.allow is not None and self._participant_reader is not None
        handle = sample.sample_info.publication_handle
        verdict = self._verdicts.get(handle)
        if verdict is None:
            for ps in self._participant_reader.take(64):
                key = ps.key.hex
                if ps.sample_info.instance_state != InstanceState.Alive:
                    self._participants.pop(key, None)
                else:
                    self._participants[key] = {p.key: p.value for p in ps.qos if isinstance(p, Policy.Property)}
            endpoint = self.reader.get_matched_publication_data(handle)
            if endpoint is None:
                return False
            guid = endpoint.participant_key.hex
            props = self._participants.get(guid)
            if props is None and not self.allow.prefixes:
                # its participant's data (the host name) not seen yet: refused, decided again on the next sample
                self.refused += 1
                return False
            verdict = (self.allow.allows(guid, props), participant_text(guid, props))
            self._verdicts[handle] = verdict
        ok, who = verdict
        if not ok:
            self.refused += 1
            self.refused_from[who] = self.refused_from.get(who, 0) + 1
            self.warn("cmd_vel_refused:" + who, f"cmd_vel: REFUSED a command on {self.ros_name} from {who}: not in "
                                                f"--allow-publisher ({self.allow.describe()})")
        return ok

    def _warnings(self, types: set) -> None:
        other = [t for t in types if t != self.type_name]
        if self.type_name is not None and other:
            self.warn("cmd_vel_type", f"cmd_vel: a publisher on {self.ros_name} offers {', '.join(sorted(other))} "
                                      f"but this bridge reads {self.type_name}: its commands are IGNORED "
                                      f"(use --stamped {'true' if TWIST_STAMPED in other else 'false'} or auto)")
        if self.matched() == 0 and not (self.type_name is not None and other):
            waiting = " (auto: waiting to see which type a publisher offers)" if self.type_name is None else ""
            self.warn("cmd_vel_none", f"cmd_vel: no publisher matched on {self.ros_name}{waiting}")

    def status(self) -> dict:
        d = {"topic": self.ros_name, "type": self.type_name or "(none yet)", "stamped": self.stamped,
             "matched_publishers": self.matched(), "offered_types": sorted(self.offered_types()),
             "samples": self.samples, "type_switches": self.switches,
             "allowed_publishers": self.allow.describe() if self.allow is not None else "any"}
        if self.allow is not None:
            d["refused_samples"] = self.refused
            d["refused_from"] = "; ".join(f"{who}: {n}" for who, n in self.refused_from.items()) or "-"
        return d


def stamped_choice(stamped: str | None, use_stamped_vel: bool | None) -> str:
    """The cmd_vel type to read: --stamped ("auto" | "true" | "false"), else the robot file's ros2.use_stamped_vel
    (None there: "auto")."""
    if stamped is None:
        stamped = "auto" if use_stamped_vel is None else ("true" if use_stamped_vel else "false")
    if stamped not in STAMPED_CHOICES:
        raise BadValue(f"--stamped must be one of {', '.join(STAMPED_CHOICES)}, not {stamped!r}")
    return stamped


def exposure(node: RosNode, allow: "PublisherFilter | None") -> tuple[bool, str]:
    """(reachable by others, the sentence): who can reach the node and who may drive the robot through its
    cmd_vel (allow: the publishers obeyed, None: any)."""
    where = node.discovery.exposure(node.domain_id)
    local = node.discovery.loopback or node.discovery.humble_localhost_only or node.discovery.range == RANGE_OFF
    if allow is None:
        who = f"it obeys {node.topic_name('cmd_vel')} from ANY participant that can reach it"
        if not local:
            who += " (--allow-publisher limits that)"
    else:
        who = (f"{node.topic_name('cmd_vel')} is taken only from {allow.describe()} (declared by the "
               f"publishers themselves, not authenticated)")
    return (not local and allow is None), f"{where}; {who}"
