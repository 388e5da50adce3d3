# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live EKF inside the bridge (`viperdrive ros2 --ekf`): which topics it reads, odometry/filtered and the tf it
may own, its thread, and what it may never do (stop the robot: an error in the filter is said, and the bridge
drives on odometry).

The bridge's own wheel odometry is fed in directly when the filter's config reads the bridge's odom topic; every
other topic the config names is read from DDS (a reader per topic, polled by the filter). The filter runs in a
process of its own (viperdrive.estimation.process) or, for a library caller that asks, a thread of this one
(viperdrive.estimation.live).
"""
import logging
import threading
from collections.abc import Callable
from typing import Any

from ..errors import BadValue
from . import msgs, qos
from .node import RosNode, take_valid

log = logging.getLogger("viperdrive.ros2")

SOURCE_SILENT_S = 3.0           # an EKF source with no publisher this long after the start is warned about
FILTER_STOP_S = 12.0            # at shutdown, after the board: the filter's backlog, summary and end (process.py)
FILTER_TYPES = {"odom": msgs.Odometry, "imu": msgs.Imu, "pose": msgs.PoseWithCovarianceStamped,
                "twist": msgs.TwistWithCovarianceStamped}


class BridgeFilter:
    """The live filter of one bridge. node: its RosNode; config: a viperdrive.estimation.FilterConfig; clock: the
    log clock (viperdrive.recording.mcap); recorder: a McapRecorder or None; write(writer, sample, what): the
    bridge's counted DDS write; warn(key, text): its rate-limited warning."""

    def __init__(self, node: RosNode, config, clock, recorder, uncertainty_limit: float, in_process: bool,
                 write: Callable[[Any, Any, str], None], warn: Callable[[str, str], object]):
        from ..estimation.live import LiveFilter
        from ..estimation.process import FilterProcess
        from ..estimation.schedule import norm_topic
        self.config = config
        self.recorder = recorder
        self._write = write
        self._warn = warn
        self.error: str | None = None           # why the filter stopped, when it did
        self.owns_tf = False                    # the filter owns odom -> base_link (publish_tf)
        self.tf_writer: Any = None              # the bridge's /tf writer (set once the bridge made it)
        self.internal_odom: str | None = None   # the filter's topic for the bridge's own odometry, if it reads it
        self.external_readers: list = []        # (filter topic, DDS reader)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        kind = FilterProcess if in_process else LiveFilter
        self.live = kind(config, on_estimate=self.publish_estimate, recorder=self._record if recorder else None,
                         clock=clock, uncertainty_limit=uncertainty_limit, pollers=[self.poll_inputs])
        own_odom = node.topic_name("odom")
        seen = set()
        for sc in config.sensors:
            topic = norm_topic(sc.topic)
            if topic in seen:
                continue
            seen.add(topic)
            if node.topic_name(sc.topic) == own_odom:
                if sc.kind != "odom":
                    raise BadValue(f"{sc.name}: '{sc.topic}' is this bridge's wheel odometry (nav_msgs/Odometry): "
                                   f"read it as an odom sensor, not {sc.kind}")
                self.internal_odom = topic
                log.info("ekf: %s reads the board's wheel odometry directly", sc.name)
                continue
            reader = node.subscription(sc.topic, FILTER_TYPES[sc.kind], qos.command_qos(depth=100))
            self.external_readers.append((topic, reader))
            log.info("ekf: %s reads %s (%s)", sc.name, node.topic_name(sc.topic),
                     msgs.ros_type_name(FILTER_TYPES[sc.kind]))
        self.writer = node.publisher("odometry/filtered", msgs.Odometry, qos.default_qos())
        if config.publish_tf:
            if config.world_frame != config.odom_frame:
                log.warning("ekf: world_frame %s is not odom_frame %s: the %s -> %s tf (which needs the odom "
                            "tf chain) is not published by this bridge; odometry/filtered is", config.world_frame,
                            config.odom_frame, config.map_frame, config.odom_frame)
            else:
                self.owns_tf = True
                log.info("ekf: publish_tf: the filter publishes %s -> %s (the raw odometry's tf is off)",
                         config.world_frame, config.base_link_frame)

    @property
    def readers(self) -> list:
        return [r for _, r in self.external_readers]

    def feed_odometry(self, odom) -> None:
        """The bridge's own nav_msgs/Odometry, when the filter reads it."""
        if self.internal_odom is not None:
            self.live.feed(self.internal_odom, odom)

    def poll_inputs(self) -> list:
        out = []
        for topic, reader in self.external_readers:
            out += [(topic, s) for s in take_valid(reader, 256)]
        return out

    def _record(self, topic, msg, ns) -> None:
        self.recorder.message(topic, msgs.ros_type_name(type(msg)), msg, ns)

    def publish_estimate(self, est) -> None:
        """One filter output: odometry/filtered (and the tf it owns); recorded with the inputs."""
        cfg = self.config
        odom = msgs.estimate(est.t, est.state, est.covariance, cfg.world_frame, cfg.base_link_frame)
        self._write(self.writer, odom, "odometry_filtered")
        if self.recorder is not None:
            self.recorder.message("/odometry/filtered", "nav_msgs/msg/Odometry", odom, self.live.clock.ns())
        if self.owns_tf and self.tf_writer is not None:
            p = odom.pose.pose
            tf = msgs.TFMessage(transforms=[msgs.TransformStamped(
                header=odom.header, child_frame_id=cfg.base_link_frame,
                transform=msgs.Transform(translation=msgs.Vector3(p.position.x, p.position.y, p.position.z),
                                         rotation=p.orientation))])
            self._write(self.tf_writer, tf, "tf")

    def warn_unpublished_sources(self, running_s: float) -> None:
        """A source nobody publishes, SOURCE_SILENT_S after the bridge started: a WARNING (with publish_tf the raw
        odometry's tf is already off, so odom -> base_link then comes from the other sources alone)."""
        if not self.external_readers or running_s < SOURCE_SILENT_S:
            return
        for topic, reader in self.external_readers:
            if not reader.get_matched_publications():
                tf = (" and the raw odometry's tf is off (publish_tf): odom -> base_link comes from the filter alone"
                      if self.owns_tf else "")
                self._warn("ekf_source_" + topic, f"ekf: nobody publishes {topic}, which the filter reads: it fuses "
                                                  f"the other sources only{tf}")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="viperdrive-ekf", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.live.run(self._stop)
        except Exception as e:      # the filter must never take the robot down: say it, keep driving on odometry
            log.error("ekf: the live filter stopped: %s: %s (odometry/filtered is no longer published)",
                      type(e).__name__, e)
            self.error = f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        """Ask the filter to wind down (its backlog, summary and end); finish() waits for it."""
        self._stop.set()

    def finish(self) -> None:
        """The estimates the filter still owes are published (and recorded) before the node closes."""
        if self._thread is not None:
            self._thread.join(timeout=FILTER_STOP_S)
