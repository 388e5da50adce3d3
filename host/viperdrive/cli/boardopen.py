# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Opening the board for a command, and the board's troubles in words that say what to do: open_board (port,
baud, HELLO; the board left disabled on every way out), the latched faults with their hints (FAULT_HINTS,
fault_message, check_no_fault, activate, explain_fault), the status byte read without commanding anything, and
the live parameters put back when a command ends (param_guard, warn_unsaved), and the wait for the board's gyro
heading before board moves (wait_gyro_heading).

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import contextlib
import sys

from viperdrive.shared import protocol as P

from ..board.board import Board
from ..board.records import fault_text
from ..errors import BoardFault, NoReplyError, UserError
from ..ports import resolve_port
from ..robot.config import RobotConfig
from ..timebase import WaitTimeout, wait_until
from .options import baud_of, port_spec, robot_config
from .output import note, warn
from .signals import deferred_signals

# what to do about each latched fault (protocol.FAULT_*), in words
FAULT_HINTS = {
    P.FAULT_STALL_LEFT: "free the left wheel (something blocks it, or its motor/driver has no power)",
    P.FAULT_STALL_RIGHT: "free the right wheel (something blocks it, or its motor/driver has no power)",
    P.FAULT_TRACKING_LEFT: "the left wheel cannot follow its setpoint: check motor power and motor_sign/encoder_sign "
                           "in board.json (a mirrored motor or encoder runs away), then the gains",
    P.FAULT_TRACKING_RIGHT: "the right wheel cannot follow its setpoint: check motor power and motor_sign/"
                            "encoder_sign in board.json (a mirrored motor or encoder runs away), then the gains",
    P.FAULT_OVERSPEED_LEFT: "the left wheel ran above 1.5 x max_wheel_speed: check motor_sign/encoder_sign with the "
                            "wheels off the ground",
    P.FAULT_OVERSPEED_RIGHT: "the right wheel ran above 1.5 x max_wheel_speed: check motor_sign/encoder_sign with the "
                             "wheels off the ground",
    P.FAULT_WATCHDOG: "the firmware stopped making progress and the watchdog reset the board; `viperdrive info` "
                      "shows its loop timing",
    P.FAULT_ENCODER_LEFT: "the left wheel needed far more duty than its measured speed explains: check the left "
                          "encoder (connector, supply, disk) and that nothing drags on the wheel; an uncalibrated kv "
                          "far below the motor's looks the same (`viperdrive calibrate feedforward`, or enc_ms 0 "
                          "turns the check off)",
    P.FAULT_ENCODER_RIGHT: "the right wheel needed far more duty than its measured speed explains: check the right "
                           "encoder (connector, supply, disk) and that nothing drags on the wheel; an uncalibrated kv "
                           "far below the motor's looks the same (`viperdrive calibrate feedforward`, or enc_ms 0 "
                           "turns the check off)",
    P.FAULT_ESTOP: "release the e-stop button (or mend its wire: a cut wire reads as pressed); the fault stays "
                   "latched while the stop circuit is open",
    P.FAULT_BATTERY_LOW: "charge or replace the battery (it fell below battery_cutoff_v); if the voltage the board "
                         "reports is not the pack's, check battery.divider in board.json",
}


@contextlib.contextmanager
def open_board(args, config: RobotConfig | None = None, clock_sync: bool = True):
    """Resolve --port, open, HELLO (protocol and schema checked). Yields a configured Board; on the way out the
    board is always left disabled (also on Ctrl-C and errors) and a private virtual board is stopped."""
    config = config if config is not None else robot_config(args)
    baud = baud_of(args, config)
    spec = port_spec(args, config)
    port = resolve_port(spec, baud)
    try:
        board = Board(port.url, baud, config=config, clock_sync=clock_sync, clock=port.clock)
        try:
            board.configure()
        except NoReplyError as e:
            raise NoReplyError(
                f"no reply from the board on {port.description} at {baud} baud ({e}). Check --baud (a UART link "
                f"runs at board.json's link.baud), that the viperdrive firmware is flashed (`viperdrive flash`), "
                f"and that the board is not in REPL mode (repl_mode file or repl pin held at boot)") from None
        args.port_description = port.description
        if board.info is not None and (text := board.info.version_warning()) is not None:
            warn(args, text)
        try:
            yield board
        except BaseException:
            board.__exit__(*sys.exc_info())
            raise
        else:
            board.__exit__(None, None, None)
    finally:
        port.close()


def fault_message(code: int, args=None) -> str:
    hint = FAULT_HINTS.get(code, "find the cause")
    where = f" --port {args.port}" if args is not None and getattr(args, "port", None) else ""
    return (f"the board is in FAULT: {fault_text(code)}. {hint[0].upper() + hint[1:]}; then clear it with "
            f"`viperdrive info --clear-fault{where}`")


def explain_fault(board: Board, args, original: BoardFault) -> BoardFault:
    """The CLI's words for a board that went down while active (Board raises BoardDeenergized): the latched fault
    decoded with how to clear it, else the board's own account (a restart, its long-silence disable)."""
    try:
        code = board.diag()["fault_code"]
    except UserError:
        return original
    if code:
        return BoardFault(fault_message(code, args))
    return original


def check_no_fault(board: Board, args=None) -> None:
    """BoardFault (exit 6) with the fault in words and how to clear it, when one is latched."""
    code = board.diag()["fault_code"]
    if code != P.FAULT_NONE:
        raise BoardFault(fault_message(code, args))


def activate(board: Board, args=None):
    """Board.activate() with the CLI's fault message."""
    check_no_fault(board, args)
    try:
        return board.activate()
    except BoardFault:
        code = board.diag()["fault_code"]
        raise BoardFault(fault_message(code, args)) from None


def read_status(board: Board, timeout: float = 1.0) -> int:
    """The board's status byte without commanding anything: from one TELEMETRY_DATA record (a zero SET_VEL would
    count as a fresh command and hold off the deadman of a board whose host went away)."""
    assert board.info is not None and board.link is not None     # an open board (open_board)
    board.telemetry(board.info.control_hz)
    clock = board.clock
    try:
        deadline = clock.now() + timeout
        while clock.now() < deadline:
            frames = board.telemetry_frames()
            if frames:
                return frames[-1]["status"]
            board.link.wait_readable(0.01)
    finally:
        board.telemetry(0)
        clock.sleep(0.02)
        board.telemetry_frames()        # drop what was still on its way
    raise NoReplyError("the board sent no telemetry record to read its status from")


def read_sensors(board: Board, timeout: float = 1.0):
    """One SENSORS_DATA record (SensorReading) without leaving the stream on; None when none came in timeout (a
    board without the sensor task answers SENSORS with a NACK: UserError)."""
    assert board.link is not None       # an open board (open_board)
    board.sensors(10)
    clock = board.clock
    try:
        deadline = clock.now() + timeout
        while clock.now() < deadline:
            readings = board.sensor_readings()
            if readings:
                return readings[-1]
            board.link.wait_readable(0.01)
        return None
    finally:
        board.sensors(0)
        clock.sleep(0.02)
        board.sensor_readings()         # drop what was still on its way


def param_guard(board, args):
    """A steptest.ParamGuard for a command: the restoring runs under deferred_signals and failures are warned."""
    from ..tuning.steptest import ParamGuard
    return ParamGuard(board, shield=deferred_signals, warn=lambda text: warn(args, text))


def warn_test_values(board, args) -> dict:
    """Before a drive moves: when the live parameters differ from the saved ones (PARAMS_UNSAVED) and some hold an
    experiment's test values (a killed `tune --autotune` leaves kp 10, ki 0, kS 0, kV 0, the ramp lifted), say
    so, naming them: a drive on them runs a relay controller and ends in a stall FAULT whose hint points at the
    wheel. -> those values ({} when none)."""
    from ..tuning.steptest import experiment_values_left
    if "PARAMS_UNSAVED" not in board.diag()["flag_names"]:
        return {}
    left = experiment_values_left(board)
    if left:
        shown = ", ".join(f"{k} {v:g}" for k, v in left.items())
        warn(args, f"the board runs test values an interrupted experiment left live ({shown}; flag PARAMS_UNSAVED): "
                   f"the robot will not drive as tuned. `viperdrive params restore` brings back the saved values")
    return left


def warn_unsaved(board, args) -> bool:
    """Warn when the board's live parameters already differ from its saved ones before this command changed any
    (a test that was killed, or `params set` without --save): a save now would store them. -> the flag."""
    if "PARAMS_UNSAVED" not in board.diag()["flag_names"]:
        return False
    warn(args, "the board's live parameters differ from its saved ones (flag PARAMS_UNSAVED: an earlier command "
               "was killed before it put its test values back, or `params set` without --save); saving now stores "
               "them. `viperdrive params restore` brings back the saved values first")
    return True


GYRO_WAIT_S = 3.0               # for the board's heading to come from its gyro (its bias: still_ms, then a window)


def wait_gyro_heading(args, board: Board, who: str) -> None:
    """Until the board's heading comes from its gyro, where it has one (a board without an IMU moves on its
    encoders at once): a board move started before it runs on the encoders' heading, which a freshly started board
    has until its gyro bias is known (the robot standing still for still_ms, then a window)."""
    if board.diag()["imu"] == "none":
        note(args, f"{who}: the board has no IMU: heading from the encoders")
        return

    def gyro() -> bool:
        # held at rest meanwhile: zero commands keep the board's deadman (and its long-silence disable) quiet
        board.write(0.0, 0.0)
        board.read()
        return board.odometry().heading_source == "gyro"

    try:
        wait_until(gyro, GYRO_WAIT_S, board.clock, poll=0.02)
    except WaitTimeout:
        raise UserError(f"{who}: the board's heading does not come from its gyro after {GYRO_WAIT_S:g} s (IMU "
                        f"'{board.diag()['imu']}'; the robot must stand still for still_ms); --encoders moves on "
                        f"the encoders' heading") from None
