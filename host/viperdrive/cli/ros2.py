# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive ros2`: the board as a ROS 2 robot base over DDS (no ROS installation needed; docs/ros2.md)."""
import argparse
import logging
import signal
import sys

from .. import extras
from ..errors import EXIT_FAULT, EXIT_LINK_LOST, BadValue
from .options import (
    BAUD,
    add_loop_options,
    add_robot_file_options,
    baud_of,
    int_range,
    port_spec,
    positive,
    robot_config,
    seconds,
)
from .signals import handled_signals, reason

DOMAIN_ID_MAX = 232     # viperdrive.ros2.node.DOMAIN_ID_MAX (not imported here: it loads cyclonedds)

HELP = ("run the ROS 2 bridge: cmd_vel in; odom, joint_states, tf, imu/data_raw, battery_state, diagnostics out "
        "(DDS, no ROS install)")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", help="device path, pyserial URL (socket://HOST:PORT, rfc2217://...), 'auto' (the "
                                       "one USB device that looks like a MicroPython board) or 'sim' (a private "
                                       "virtual board). Default: $VIPERDRIVE_PORT, else the robot file's port, "
                                       "else auto")
    parser.add_argument("--baud", type=BAUD, default=None, help="serial baud rate (default: the robot file's, else "
                                                               "115200)")
    add_robot_file_options(parser, "robot file (viperdrive .yaml/.toml, a ros2_control or ROS 1 diff_drive_controller "
                                   "YAML) with limits, geometry and the ros2 section (frame ids, publish_rate, ...)")
    parser.add_argument("--namespace", default="", help="ROS namespace of the topics, e.g. robot1 -> "
                                                        "/robot1/cmd_vel (default: none)")
    parser.add_argument("--stamped", choices=("auto", "true", "false"), default=None,
                        help="cmd_vel type: TwistStamped (true), Twist (false), or whichever a publisher offers "
                             "(auto; default: the robot file's ros2.use_stamped_vel, else auto)")
    parser.add_argument("--domain-id", type=int_range(0, DOMAIN_ID_MAX), default=None,
                        help="DDS domain (default: ROS_DOMAIN_ID, else 0)")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S",
                        help="stop after S seconds (tests, demos); default: until Ctrl-C or SIGTERM")
    parser.add_argument("--localhost", action="store_true",
                        help="DDS on the loopback interface only: no participant on another machine can reach the "
                             "bridge (ROS nodes on this machine need the same Cyclone settings: --print-dds-config "
                             "--localhost prints them). Default: every interface, as ROS 2 itself")
    parser.add_argument("--allow-publisher", action="append", default=None, metavar="GUID_PREFIX|host=NAME",
                        help="take cmd_vel only from these participants (repeatable): a participant GUID prefix in "
                             "hex, or host=NAME (the host name the participant declares). Others are refused and "
                             "named in a warning. Not authentication: a participant chooses its own GUID and host "
                             "name. Default: any participant")
    parser.add_argument("--print-dds-config", action="store_true",
                        help="print the Cyclone DDS configuration this environment gives (ROS_DOMAIN_ID, "
                             "ROS_LOCALHOST_ONLY, ROS_AUTOMATIC_DISCOVERY_RANGE, ROS_STATIC_PEERS, CYCLONEDDS_URI) "
                             "and exit")
    parser.add_argument("--ekf", default=None, metavar="FILE",
                        help="run the EKF live: a robot_localization parameter file (as `viperdrive fuse` reads it). "
                             "The filter runs at its frequency on the bridge's clock, fed by the board's wheel "
                             "odometry (a sensor whose topic is odom) and the topics it names (odomN, imuN, poseN, "
                             "twistN); publishes odometry/filtered and, with publish_tf, odom -> base_link instead "
                             "of the raw odometry's (docs/estimation.md)")
    parser.add_argument("--ekf-node", default=None, metavar="NAME", help="the node in --ekf to use (a file with "
                                                                          "several)")
    parser.add_argument("--uncertainty-limit", type=positive(1e6, "m"), default=1.0, metavar="M",
                        help="dead reckoning: diagnostics say how many seconds remain until the position 1-sigma "
                             "passes M metres (default %(default)s)")
    parser.add_argument("--record", default=None, metavar="FILE.mcap",
                        help="record the filter's inputs (with their arrival times) and odometry/filtered as MCAP: "
                             "`viperdrive fuse` on it gives the same estimates")
    parser.add_argument("--recover", choices=("auto", "never"), default="auto",
                        help="auto (default): keep the node up when the board goes away and take it back when it "
                             "returns (a lost link, a re-plug, a restart; never a latched safety fault, which "
                             "waits for the ~/clear_fault service); never: a lost link ends the bridge (exit 8) "
                             "and a board that went down stays down")
    parser.add_argument("--sim-time", action="store_true",
                        help="a virtual board or an emulated chip only: its own time is the graph's, published on "
                             "/clock from 0 as a simulator's (peers set use_sim_time), every stamp in it. A busy "
                             "machine runs such a board slower than real time; with wall-clock stamps the rates "
                             "(m/s, rad/s of board time) then disagree with the time between stamps "
                             "(docs/ros2.md \"Sim time\")")
    add_loop_options(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def run(args) -> int:
    extras.require("ros2", "viperdrive ros2")
    from ..ros2.cmdvel import PublisherFilter
    from ..ros2.node import Discovery, check_security, cyclone_config, resolve_domain_id

    discovery = Discovery.loopback_only() if args.localhost else Discovery.from_env()
    if args.print_dds_config:
        d = discovery
        print(f"domain id: {resolve_domain_id(args.domain_id)}")
        print(f"discovery range: {d.range}" + (" (Humble localhost-only: 127.0.0.1)" if d.humble_localhost_only
                                               else "") + (f", static peers: {';'.join(d.static_peers)}"
                                                           if d.static_peers else ""))
        print(f"cyclone config: {cyclone_config(d) or '(Cyclone defaults)'}")
        print(f"reach: {d.exposure(resolve_domain_id(args.domain_id))}")
        return 0
    # refused before the port is opened: security asked for but not available (Enforce), a bad --allow-publisher
    check_security()
    if args.allow_publisher:
        PublisherFilter(args.allow_publisher)

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from ..board.board import Board
    from ..ports import resolve_port
    from ..ros2.bridge import Ros2Bridge

    config = robot_config(args)
    ekf = None
    if args.ekf is not None:
        from ..estimation import load_config as load_ekf
        ekf = load_ekf(args.ekf, node=args.ekf_node)
        for cat, key, text in ekf.report:
            if cat in ("unknown", "warning", "unsupported"):
                print(f"viperdrive ros2: {args.ekf}: {cat}: {key}: {text}", file=sys.stderr)
    elif args.record is not None:
        raise BadValue("--record records the live filter's inputs and estimates: give --ekf FILE too")
    # the same port choice as every other board command: --port, $VIPERDRIVE_PORT, the robot file's, else auto
    baud = baud_of(args, config)
    port = resolve_port(port_spec(args, config), baud)
    try:
        return _serve(args, Board(port.url, baud=baud, config=config, clock=port.clock), config, Ros2Bridge, discovery,
                      ekf)
    finally:
        port.close()        # stops a private virtual board


def _serve(args, board, config, Ros2Bridge, discovery, ekf=None) -> int:
    from ..ros2.options import BridgeOptions
    bridge = Ros2Bridge(board, config, BridgeOptions(
        namespace=args.namespace, stamped=args.stamped, domain_id=args.domain_id, discovery=discovery,
        allow_publishers=args.allow_publisher, ekf=ekf, record=args.record, uncertainty_limit=args.uncertainty_limit,
        recover=args.recover, prepare_loop=True, realtime=args.realtime, use_sim_time=args.sim_time))

    # every stop signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT: cli/signals.py) ends the loop; shutdown() disables
    with handled_signals(lambda signum: bridge.stop("interrupted (Ctrl-C)" if signum == signal.SIGINT
                                                    else reason(signum))):
        try:
            bridge.run(duration_s=args.duration)
        finally:
            bridge.shutdown()
    if bridge.shutdown_problems:
        print(f"viperdrive ros2: stopped ({bridge.stop_reason}); board NOT confirmed disabled (the board's deadman "
              f"stops the wheels): {'; '.join(bridge.shutdown_problems)}", file=sys.stderr)
        return EXIT_LINK_LOST
    if bridge.board_down is not None:
        print(f"viperdrive ros2: stopped ({bridge.stop_reason}); board disabled; it had gone down while running: "
              f"{bridge.board_down}", file=sys.stderr)
        return EXIT_FAULT
    print(f"viperdrive ros2: stopped ({bridge.stop_reason}); board disabled", file=sys.stderr)
    return 0
