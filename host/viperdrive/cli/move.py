# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive move straight|turn|arc`: one move run by the board itself (docs/cli.md, "move"; docs/firmware.md,
"Moves"), on its own heading (the gyro where the board has one), under the host's lease.

    viperdrive move straight 0.5                      0.5 m forward (negative: backwards)
    viperdrive move turn 90                           90 degrees counter-clockwise in place (REP-103)
    viperdrive move arc --radius 0.3 --angle 180      half a circle of radius 0.3 m, turning left

It waits for the end and prints how the move ended and where the board's odometry says the robot is. Exit code 0
when it arrived; a stall or a fault exits as a board fault (6), a timeout or a cancel with 1. Ctrl-C stops the
robot braked and disables it.
"""
from __future__ import annotations

import argparse
import math

from viperdrive.shared import protocol as P

from ..errors import BoardFault
from ..motion.scripts import LIMITS
from .boardopen import activate, open_board, wait_gyro_heading
from .options import add_board_options, finite_float, positive, robot_config, seconds
from .output import note
from .signals import stop_signals_as_interrupt

HELP = "one move run by the board: straight M, turn DEG, arc --radius M --angle DEG (board heading, gyro)"


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    d = LIMITS["distance_m"]
    p = sub.add_parser("straight", help="drive straight, metres (negative: backwards)")
    p.add_argument("distance", type=finite_float(-d, d, "m", nonzero=True), metavar="M")
    p.add_argument("--speed", type=positive(LIMITS["speed_m_s"], "m/s"), help="m/s (half the robot's max_rim_speed)")
    p.add_argument("--accel", type=positive(100.0, "m/s^2"), help="m/s^2 (half max_rim_acceleration)")
    _common(p)
    p = sub.add_parser("turn", help="turn in place, degrees (positive: counter-clockwise)")
    a = LIMITS["angle_deg"]
    p.add_argument("angle", type=finite_float(-a, a, "deg", nonzero=True), metavar="DEG")
    p.add_argument("--rate", type=positive(LIMITS["rate_rad_s"], "rad/s"), help="rad/s (from max_rim_speed)")
    p.add_argument("--angular-accel", type=positive(500.0, "rad/s^2"), metavar="RAD_S2",
                   help="rad/s^2 (from max_rim_acceleration)")
    _common(p)
    p = sub.add_parser("arc", help="along a circle: --radius M (negative: backwards) --angle DEG (positive: left)")
    # radius 0 is a turn in place (move turn), angle 0 no move at all
    p.add_argument("--radius", type=finite_float(-d, d, "m", nonzero=True), required=True, metavar="M")
    p.add_argument("--angle", type=finite_float(-a, a, "deg", nonzero=True), required=True, metavar="DEG")
    p.add_argument("--speed", type=positive(LIMITS["speed_m_s"], "m/s"), help="m/s along the path")
    p.add_argument("--accel", type=positive(100.0, "m/s^2"), help="m/s^2 along the path")
    _common(p)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=seconds(3600.0), default=0.0, metavar="S",
                   help="the board ends the move as timed out after S s (default: twice the planned time + 1 s)")
    p.add_argument("--encoders", action="store_true",
                   help="do not wait for the gyro heading: start at once (on the encoders' heading until then)")
    add_board_options(p)


def run(args) -> int:
    config = robot_config(args)
    with stop_signals_as_interrupt(), open_board(args, config) as board:
        activate(board, args)
        if not args.encoders:
            wait_gyro_heading(args, board, "move")
        if args.kind == "straight":
            m = board.move_straight(args.distance, args.speed, args.accel, args.timeout)
        elif args.kind == "turn":
            m = board.move_turn(math.radians(args.angle), args.rate, args.angular_accel, args.timeout)
        else:
            m = board.move_arc(args.radius, math.radians(args.angle), args.speed, args.accel, args.timeout)
        t0 = board.clock.now()
        note(args, f"move: {m.describe()}")
        reason = m.wait()
        took = board.clock.now() - t0
        o = board.odometry()
        print(f"move {reason} after {took:.2f} s: board odometry x {o.x:+.4f} m  y {o.y:+.4f} m  heading "
              f"{math.degrees(o.theta):+.2f} deg ({o.heading_source})")
        board.deactivate()
        if m.end == P.MOVE_END_STALLED:
            raise BoardFault("the move stalled: a wheel is blocked or slipping (the board turned its outputs off)")
        if m.end == P.MOVE_END_FAULTED:
            raise BoardFault(f"the move ended on a fault: {board.diag()['fault']}")
        return 0 if m.arrived else 1
