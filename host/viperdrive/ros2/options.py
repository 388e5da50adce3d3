# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""How a Ros2Bridge is run: the graph it joins, the commands it takes, the filter and the recording it keeps, how
it recovers its board, and its thread. One frozen record, so `Ros2Bridge(board, config, BridgeOptions(...))` reads
as one decision and a caller names only what differs from `viperdrive ros2`'s defaults.
"""
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BridgeOptions:
    """The bridge's options; the robot file (RobotConfig) holds the robot's own settings, this what a run chooses.

    namespace: the node's ROS namespace ("/" none); stamped: "auto" | "true" | "false", the cmd_vel type (None:
    the robot file's ros2.use_stamped_vel); domain_id, discovery, env: the participant's (viperdrive.ros2.node);
    allow_publishers: the cmd_vel publishers obeyed (None: any); drive: a DriveController (None: one from the robot
    file); odometry_factory(config, counts_per_rev=...) -> odometry (None: viperdrive.motion.odometry.Odometry);
    ekf: a viperdrive.estimation.FilterConfig for the live filter (None: none), filter_process: the filter in a
    process of its own (False: a thread in this one), record: an MCAP path for the filter's inputs and estimates,
    uncertainty_limit: the position 1-sigma (m) the diagnostics warn at while dead reckoning; recover: "never" |
    "auto" (viperdrive.board.recovery); prepare_loop: gc.freeze() on the loop's thread, realtime: its SCHED_FIFO
    priority (implies prepare_loop); use_sim_time: the board's own time is the graph's (/clock).
    """
    namespace: str = "/"
    stamped: str | None = None
    domain_id: int | None = None
    discovery: Any = None
    env: dict[str, str] | None = None
    allow_publishers: list[str] | None = None
    drive: Any = None
    odometry_factory: Any = None
    ekf: Any = None
    filter_process: bool = True
    record: str | None = None
    uncertainty_limit: float = 1.0
    recover: str = "never"
    prepare_loop: bool = False
    realtime: int | None = None
    use_sim_time: bool = False
