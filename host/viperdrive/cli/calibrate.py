# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive calibrate wheelbase|umbmark|feedforward|gyro`: guided calibration runs. The robot drives, the user
measures what only the outside world knows (the real turn angle, the real end position), viperdrive.tuning.calibrate
computes, the before/after is shown, and on confirmation the result goes to the board (parameters, saved) and the
robot file.

Scripted use: --measured gives the measurements up front, --yes answers the confirmations.

    wheelbase    spin in place at --rate for --time s, both directions (1 rad/s for 10 s: 10 rad, large enough that
                 a few degrees of measuring error are under 1 %); measured: the real turn, degrees
    umbmark      --side m squares clockwise and counter-clockwise, --runs each (Borenstein & Feng); measured: the
                 real end position x,y (m) relative to the start (x along the first leg, y to its left)
    feedforward  wheels off the ground: ramps and steps both ways; kS, kV, kA by least squares (no measuring)
    gyro         --turns whole turns in place by the board's gyro heading (one board move each), counter-clockwise
                 then clockwise, from a mark on the floor; measured: how far past the mark it came to rest, degrees
                 (negative: short)

The squares of umbmark and the spins of wheelbase stay closed on the host's encoder odometry: they measure the
encoders' systematic errors, which a board move on the gyro heading would hide.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from ..errors import BadValue, BoardFault, UserError
from ..motion.scripts import LIMITS, ScriptFollower, Segment
from ..robot.editing import update_values
from ..timebase import WaitTimeout, wait_until
from ..tuning import calibrate as cal
from ..tuning import steptest
from .boardopen import activate, explain_fault, fault_message, open_board, param_guard, warn_unsaved
from .options import add_board_options, int_range, positive, robot_config, seconds
from .output import note, warn
from .session import DriveSession
from .signals import stop_signals_as_interrupt
from .terminal import Progress

HELP = "guided calibration: wheelbase (spin test), umbmark (squares), feedforward (kS, kV, kA), gyro (scale)"
RUNS_MAX = 20           # runs per direction
RUN_MAX_S = 600.0       # one spin run
GYRO_TURNS_MAX = 20
GYRO_ODOM_EVERY = 5     # cycles between the gyro run's GET_ODOM reads (20 Hz at 100 Hz)
GYRO_DONE_RAD = 0.002   # a turn interrupted this close to its whole turns needs no rest of it


def register(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    p = sub.add_parser("wheelbase", help="effective wheel separation from spins in place, both directions")
    p.add_argument("--rate", type=positive(LIMITS["rate_rad_s"], "rad/s"), default=1.0, metavar="RAD_S",
                   help="turn rate (1.0 rad/s)")
    p.add_argument("--time", type=seconds(RUN_MAX_S), default=10.0, metavar="S",
                   help="spin time per run (10 s = 10 rad)")
    p.add_argument("--runs", type=int_range(1, RUNS_MAX), default=1, help="runs per direction (1)")
    p.add_argument("--measured", metavar="DEG,DEG,...",
                   help="the real turns in degrees, in run order (ccw, cw, ccw, cw, ...), instead of prompts")
    _common(p)
    p = sub.add_parser("umbmark", help="UMBmark: squares both ways -> wheel diameter ratio and wheelbase")
    p.add_argument("--side", type=positive(LIMITS["distance_m"], "m"), default=4.0,
                   help="square side, m (Borenstein & Feng: 4 m)")
    p.add_argument("--runs", type=int_range(1, RUNS_MAX), default=5, help="runs per direction (5; at least 3)")
    p.add_argument("--speed", type=positive(LIMITS["speed_m_s"], "m/s"), default=0.2, help="leg speed, m/s (0.2)")
    p.add_argument("--turn-rate", type=positive(LIMITS["rate_rad_s"], "rad/s"), default=1.0,
                   help="corner turn rate, rad/s (1.0)")
    p.add_argument("--measured", metavar="X,Y;X,Y;...",
                   help="real end positions in run order (cw first, then ccw, alternating) instead of prompts")
    _common(p)
    p = sub.add_parser("feedforward", help="kS, kV, kA from ramps and steps with the wheels off the ground")
    p.add_argument("--max-wheel-speed", type=positive(1000.0, "rad/s"), default=None, metavar="RAD_S",
                   help="top of the ramps (default 80 %% of max_rim_speed, in wheel rad/s)")
    p.add_argument("--ramp-time", type=seconds(60.0), default=2.0, metavar="S", help="seconds per ramp (2)")
    _common(p)
    p = sub.add_parser("gyro", help="the gyro's scale: whole turns against a mark, both directions")
    p.add_argument("--turns", type=int_range(1, GYRO_TURNS_MAX), default=3,
                   help="whole turns per direction (3: a 0.3 %% scale error is 3.2 deg past the mark)")
    p.add_argument("--rate", type=positive(LIMITS["rate_rad_s"], "rad/s"), default=1.5, metavar="RAD_S",
                   help="turn rate (1.5 rad/s)")
    p.add_argument("--measured", metavar="DEG,DEG",
                   help="degrees past the mark at rest, counter-clockwise run then clockwise run (negative: short "
                        "of it), instead of prompts")
    _common(p)


def _common(p):
    p.add_argument("--yes", action="store_true", help="write the result without asking (and skip 'press Enter')")
    p.add_argument("--no-write", action="store_true", help="show the result only")
    add_board_options(p)


# ------------------------------------------------------------------------------------------ prompting

def ask(question: str) -> str:
    try:
        return input(question)
    except EOFError:
        raise UserError("no answer (end of input): give the measurements with --measured for scripted use",
                        exit_code=2) from None


def wait_enter(args, what: str) -> None:
    if not args.yes and args.measured is None:
        ask(f"{what}; press Enter to start ")


def confirm(args, question: str) -> bool:
    if args.no_write:
        return False
    if args.yes:
        return True
    return ask(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _number(text: str, what: str) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise BadValue(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(v):
        raise BadValue(f"{what}: must be finite")
    return v


def _ask_number(question: str, what: str) -> float:
    while True:
        text = ask(question)
        try:
            return _number(text, what)
        except BadValue as e:
            print(f"  {e}; try again")


# ------------------------------------------------------------------------------------------ driving

def drive(args, s: DriveSession, segments: list[Segment], label: str) -> ScriptFollower:
    """Activate, drive the segments (closed on odometry), come to rest, disable. Returns the follower (its turned
    and travelled totals) with the session's odometry holding the end pose."""
    s.start()
    follower = ScriptFollower(segments, s.config.max_rim_acceleration, s.config.effective_separation)
    total = sum(seg.nominal_duration() for seg in segments)
    bar = Progress(total, label, quiet=args.quiet, unit="s")
    clock = s.clock             # the segments' durations are the board's time, as the loop's period
    t0 = clock.now()

    def on_cycle(state, k):
        now = clock.now()
        s.tick(now)
        if s.fault_code:
            raise BoardFault(fault_message(max(s.fault_code, 0), args))
        v, w = follower.update(now, s.odometry.pose, s.odometry.twist)
        s.command(v, w, now)
        if k % 10 == 0:
            bar.update(min(now - t0, total))
        if follower.done and abs(s.controller.v) < 1e-6 and abs(s.controller.w) < 1e-6:
            vl, vr = state.velocity
            return not (abs(vl) < 0.05 and abs(vr) < 0.05)
        return None

    _run(args, s, bar, on_cycle)
    return follower


def _run(args, s: DriveSession, bar: Progress, on_cycle) -> None:
    """The session's loop with on_cycle under the bar, then the board disabled. The bar says "done" only when the
    run got there ("stopped" on Ctrl-C, an error, a lost link); a fault is explained."""
    with bar:
        try:
            s.loop.run(on_cycle=on_cycle)
        except BoardFault as e:
            raise explain_fault(s.board, args, e) from None
    s.board.deactivate()


# ------------------------------------------------------------------------------------------ the calibrations

def run(args) -> int:
    config = robot_config(args)
    # the measurements are checked before the port is opened: a typo costs nothing
    args.measured_values = _measurements(args)
    with stop_signals_as_interrupt(), open_board(args, config) as board:
        if args.what == "wheelbase":
            return _wheelbase(args, board, config)
        if args.what == "umbmark":
            return _umbmark(args, board, config)
        if args.what == "gyro":
            return _gyro(args, board, config)
        return _feedforward(args, board, config)


def _write(args, board, config, board_values: dict, file_values: dict) -> None:
    """Board parameters (saved) and robot-file keys, after confirmation."""
    print("result to write:")
    for k, v in board_values.items():
        print(f"  board parameter {k}: {board.get_param(k):.6g} -> {v:.6g}")
    path = config.source
    where = path or "(none: --config not given)"
    for k, v in file_values.items():
        print(f"  robot file {where} {k}: {config.get(k):.6g} -> {v:.6g}")
    if not confirm(args, "write these values?"):
        print("nothing written")
        return
    if board_values:
        warn_unsaved(board, args)
        # set and saved as one step: interrupted in between, the old live values come back
        with param_guard(board, args) as guard:
            for k, v in board_values.items():
                guard.set(k, v, keep=True)
            board.save_params()
        print("board: parameters set and saved")
    if file_values:
        if path is None:
            note(args, "no robot file given (--config): put these keys in yours by hand")
        else:
            update_values(path, file_values, node=getattr(args, "node", None), config=config)
            print(f"robot file {path}: updated")


def _parse_list(text: str, n: int, what: str) -> list[str]:
    items = [x for x in text.replace(";", " ").split() if x] if ";" in text else [x for x in text.split(",") if x]
    if len(items) != n:
        raise BadValue(f"--measured: {n} {what} needed, got {len(items)}")
    return items


def _measurements(args) -> list | None:
    """--measured as numbers (wheelbase: degrees per run; umbmark: (x, y) per run); BadValue for anything wrong."""
    if getattr(args, "measured", None) is None or args.what == "feedforward":
        return None
    if args.what == "gyro":
        return [_number(x, "--measured") for x in _parse_list(args.measured, 2, "degrees past the mark")]
    n = 2 * args.runs
    if args.what == "wheelbase":
        return [abs(_number(x, "--measured")) for x in _parse_list(args.measured, n, "turns (degrees)")]
    measured = []
    for p in _parse_list(args.measured, n, "end positions x,y"):
        xy = p.split(",")
        if len(xy) != 2:
            raise BadValue(f"--measured: {p!r} is not X,Y")
        measured.append((_number(xy[0], "--measured x"), _number(xy[1], "--measured y")))
    return measured


def _wheelbase(args, board, config) -> int:
    n = 2 * args.runs
    measured = args.measured_values
    b_old = config.effective_separation
    print(f"wheelbase: spin in place at {args.rate:g} rad/s for {args.time:g} s, {args.runs} run(s) each way. "
          f"Mark the robot's heading on the floor before each run; count the full turns.")
    s = DriveSession(board, config)
    runs = []
    for i in range(n):
        direction = 1.0 if i % 2 == 0 else -1.0
        name = "counter-clockwise" if direction > 0 else "clockwise"
        wait_enter(args, f"run {i + 1}/{n} ({name})")
        f = drive(args, s, [Segment("twist", 0.0, direction * args.rate, args.time), Segment("wait", 0.3)],
                  f"run {i + 1}/{n} {name}")
        odo = f.turned
        print(f"run {i + 1}: odometry turned {math.degrees(odo):+.1f} deg ({abs(odo) / (2 * math.pi):.2f} turns)")
        real = measured[i] if measured is not None else abs(
            _ask_number("  how many degrees did it really turn? ", "real turn"))
        runs.append(cal.SpinRun(odo, direction * math.radians(real)))
    res = cal.wheel_separation_from_spin(b_old, runs)
    print(res.summary())
    if not res.ok:
        raise cal.CalibrationRefused("wheelbase calibration refused: " + "; ".join(res.problems)
                                     + "; nothing written")
    print(f"before: wheel separation {b_old:.5f} m   after: {res.new:.5f} m")
    mult = config.wheel_separation_multiplier
    _write(args, board, config, {"wheel_separation": res.new}, {"wheel_separation": res.new / mult})
    return 0


def _gyro_heading(board, clock) -> None:
    """Until the board's heading comes from its gyro (an IMU answering, its bias estimated while still); a
    UserError naming the IMU's state otherwise."""
    try:
        wait_until(lambda: board.odometry().heading_source == "gyro", 3.0, clock, poll=0.05)
    except WaitTimeout:
        imu = board.diag()["imu"]
        hint = ("the board config has no IMU" if imu == "none" else
                f"the IMU is '{imu}'" if imu != "ok" else "the robot has not been still for still_ms")
        raise UserError(f"calibrate gyro: the board's heading does not come from a gyro ({hint})") from None


def _gyro_spin(args, s: DriveSession, direction: int, turns: int) -> float:
    """`turns` whole turns in place as one board move (the board turns by its own gyro heading, brakes onto the
    target and holds it within move_tol_heading), at rest, disabled. -> the turn the heading read at rest (rad,
    signed), unwrapped over GET_ODOM reads at 20 Hz."""
    board = s.board
    target = 2 * math.pi * turns
    cfg = s.config
    alpha = min(3.0, 0.5 * cfg.max_rim_acceleration * 2 / cfg.effective_separation)   # rad/s^2
    turned = [0.0]
    last = 0.0

    def read() -> float:
        nonlocal last
        th = board.odometry().theta
        turned[0] += math.remainder(th - last, 2 * math.pi)
        last = th
        return abs(turned[0])

    s.start()
    last = board.odometry().theta       # after the start: activating zeroes the board's odometry
    bar = Progress(target, f"{'counter-clockwise' if direction > 0 else 'clockwise'} {turns} turn(s)",
                   quiet=args.quiet, unit="rad")
    move = board.move_turn(direction * target, args.rate, alpha)
    resumed = [False]

    def on_cycle(state, k):
        nonlocal move
        s.tick(s.clock.now())
        if s.fault_code:
            raise BoardFault(fault_message(max(s.fault_code, 0), args))
        if k % GYRO_ODOM_EVERY == 0:
            bar.update(min(read(), target))
        vl, vr = state.velocity
        if move.done and move.reason == "lease expired":
            # this host stalled for longer than the lease and the board braked the turn: once at rest, the rest of
            # it as a new move from where the heading is then (what counts is the turn read at rest, not one move)
            if not resumed[0]:
                resumed[0] = True
                warn(args, f"calibrate gyro: this computer stalled for over {board.moves.lease_s:g} s and the "
                           f"board stopped the turn; the rest of it follows once the robot is at rest")
            if state.fresh and abs(vl) < 0.02 and abs(vr) < 0.02:
                rest = target - read()
                if rest <= GYRO_DONE_RAD:
                    return False            # the braking took it there
                move = board.move_turn(direction * rest, args.rate, alpha)
            return None
        if move.done:
            if not move.arrived:
                raise BoardFault(f"calibrate gyro: the turn ended {move.reason}")
            if state.fresh and abs(vl) < 0.02 and abs(vr) < 0.02:
                return False
        return None

    _run(args, s, bar, on_cycle)
    s.clock.sleep(0.3)                  # at rest: the last of the heading in
    read()
    return turned[0]


def _gyro(args, board, config) -> int:
    measured = args.measured_values
    clock = board.clock
    _gyro_heading(board, clock)
    old = {"gyro_scale_ccw": board.get_param("gyro_scale_ccw"), "gyro_scale_cw": board.get_param("gyro_scale_cw")}
    print(f"gyro: {args.turns} whole turn(s) in place by the board's gyro heading, counter-clockwise then clockwise. "
          f"Put a mark on the floor along the robot's heading (a tape line at its nose); after each run tell how many "
          f"degrees past the mark the robot came to rest (negative: short of it).")
    s = DriveSession(board, config)
    runs = []
    for i, direction in enumerate((1, -1)):
        name = "counter-clockwise" if direction > 0 else "clockwise"
        key = "gyro_scale_ccw" if direction > 0 else "gyro_scale_cw"
        wait_enter(args, f"run {i + 1}/2 ({name}): the robot on its mark")
        _gyro_heading(board, clock)
        read = _gyro_spin(args, s, direction, args.turns)
        print(f"run {i + 1}: the gyro heading read {math.degrees(read):+.2f} deg at rest")
        past = measured[i] if measured is not None else _ask_number(
            "  how many degrees past the mark did it come to rest? (negative: short of it) ", "degrees past the mark")
        real = direction * math.radians(360.0 * args.turns + past)
        runs.append(cal.GyroRun(read, old[key], real))
    res = cal.gyro_scale(runs, old["gyro_scale_ccw"], old["gyro_scale_cw"])
    print(res.summary())
    if not res.ok:
        raise cal.CalibrationRefused("gyro calibration refused: " + "; ".join(res.problems) + "; nothing written")
    note(args, "the board applies it to its heading and to the yaw rate it reports (SENSORS, imu/data_raw)")
    _write(args, board, config, {"gyro_scale_ccw": res.scale, "gyro_scale_cw": res.scale}, {})
    return 0


def _square(side, speed, turn_rate, clockwise: bool) -> list[Segment]:
    turn = -math.pi / 2 if clockwise else math.pi / 2
    segs = []
    for _ in range(4):
        segs += [Segment("forward", side, speed), Segment("turn", turn, turn_rate)]
    return segs


def _umbmark(args, board, config) -> int:
    n = 2 * args.runs
    measured = args.measured_values
    print(f"UMBmark: {args.runs} clockwise and {args.runs} counter-clockwise squares of {args.side:g} m. Mark the "
          f"start position and heading; after each run measure where the robot stopped, in metres, x along the "
          f"first leg and y to its left.")
    s = DriveSession(board, config)
    cw_err: list[tuple[float, float]] = []      # (x, y) end errors, m
    ccw_err: list[tuple[float, float]] = []
    for i in range(n):
        clockwise = i % 2 == 0
        name = "clockwise" if clockwise else "counter-clockwise"
        wait_enter(args, f"run {i + 1}/{n} ({name}): put the robot on the start mark")
        drive(args, s, _square(args.side, args.speed, args.turn_rate, clockwise), f"run {i + 1}/{n} {name}")
        ox, oy, oth = s.odometry.pose
        print(f"run {i + 1}: odometry end x {ox:+.4f} m y {oy:+.4f} m heading {math.degrees(oth):+.2f} deg")
        if measured is not None:
            tx, ty = measured[i]
        else:
            tx = _ask_number("  real end x (m): ", "x")
            ty = _ask_number("  real end y (m): ", "y")
        (cw_err if clockwise else ccw_err).append((tx - ox, ty - oy))
    res = cal.umbmark(cw_err, ccw_err, args.side, config.effective_separation)
    print(res.summary())
    if not res.ok:
        raise cal.CalibrationRefused("UMBmark refused: " + "; ".join(res.problems) + "; nothing written")
    lm = config.left_wheel_radius_multiplier * res.left_factor
    rm = config.right_wheel_radius_multiplier * res.right_factor
    print(f"before: left x{config.left_wheel_radius_multiplier:.5f} right x{config.right_wheel_radius_multiplier:.5f}"
          f" wheelbase {config.effective_separation:.5f} m")
    print(f"after:  left x{lm:.5f} right x{rm:.5f} wheelbase {res.wheelbase:.5f} m")
    note(args, "the board's own odometry has one wheel radius: it gets the wheelbase; the host odometry gets both")
    _write(args, board, config, {"wheel_separation": res.wheelbase},
           {"left_wheel_radius_multiplier": lm, "right_wheel_radius_multiplier": rm,
            "wheel_separation": res.wheelbase / config.wheel_separation_multiplier})
    return 0


# R^2 here is of the differentiated speed: with a ~6 ms telemetry interval against the wheel's own 5-20 ms, its
# noise is as large as the model's signal and it wanders from run to run (0.78-0.89 on the virtual robot, one board,
# one code). Below 0.5 the acceleration is mostly noise (a motor faster than the telemetry: 0.33). The model's check
# is the speed it gives when run on the recorded commands (fit_feedforward's max_speed_error): ~5 % RMS there.
MIN_R2 = 0.5
SMOOTH = 5     # samples of the moving average before differentiating (~30 ms at 166 Hz)


def _smooth(x, n: int):
    if len(x) < n:
        return x
    kernel = np.ones(n) / n
    y = np.convolve(x, kernel, mode="same")
    half = n // 2
    y[:half] = x[:half]     # the edges keep the raw samples rather than a half-empty average
    y[-half:] = x[-half:]
    return y


def _feedforward(args, board, config) -> int:
    limit = min(config.wheel_speed_limits)
    top = args.max_wheel_speed if args.max_wheel_speed is not None else 0.8 * limit
    if not 0 < top <= limit:
        raise UserError(f"--max-wheel-speed {top:g} rad/s is above the robot's max_rim_speed "
                        f"({config.max_rim_speed} m/s = {limit:.2f} rad/s at the wheel)", exit_code=2)
    print("feedforward: lift the robot so the wheels turn freely. Ramps up and down both ways, then steps.")
    args.measured = None
    wait_enter(args, "wheels off the ground?")
    rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
    T = args.ramp_time
    # (start s, end s, setpoint at start, setpoint at end): quasistatic ramps, then dynamic steps, both ways
    plan = [(0, T, 0, top), (T, 2 * T, top, 0), (2 * T, 3 * T, 0, -top), (3 * T, 4 * T, -top, 0)]
    t = 4 * T
    for sp in (0.3 * top, -0.3 * top, 0.6 * top, -0.6 * top, top, -top):
        plan += [(t, t + 0.6, sp, sp), (t + 0.6, t + 1.0, 0.0, 0.0)]
        t += 1.0
    total = t
    k = 2 * math.pi / board.counts_per_rev
    bar = Progress(total, "feedforward run", quiet=args.quiet, unit="s")

    def setpoints(now):
        for a, b, s0, s1 in plan:
            if a <= now < b:
                sp = s0 + (s1 - s0) * (now - a) / (b - a)
                return sp, sp
        return 0.0, 0.0

    guard = param_guard(board, args)
    # the ramp lifted and kA with it (steptest.LIFTED): a live kA (a previous calibration's) turns every setpoint
    # jump into a one-period impulse of saturated duty that the telemetry, a sample every few periods, rarely
    # records, and the fit then sees the wheel accelerate without its cause (R^2 0.47-0.59 against 0.85)
    with steptest.TemporaryParams(board, dict(steptest.LIFTED), shield=guard.shield, warn=guard.warn):
        with bar:       # "done" only when the run got there: an interrupted one says "stopped", then "interrupted"
            records = steptest.run_experiment(board, rate, total, setpoints, progress=bar,
                                              period_s=steptest.HOST_PERIOD / 2, activate=lambda: activate(board, args))
    rec = steptest.to_recording(records, k)
    fits = {}
    for side in ("left", "right"):
        # the same zero-phase moving average on command and speed: a linear filter on both sides keeps the model
        # (dw/dt = a w + b u + c sign w) while taking the quantization noise out of the differentiated speed
        u = _smooth(rec.output[side], SMOOTH)
        w = _smooth(rec.measured[side], SMOOTH)
        # MIN_R2, not the library's 0.9: see there; the simulated speed and the gains' standard errors still apply
        fits[side] = cal.fit_feedforward([(rec.t, u, w)], min_r2=MIN_R2)
        print(f"{side}: {fits[side].summary()}")
    bad = [f"{side}: " + "; ".join(f.problems) for side, f in fits.items() if not f.ok]
    if bad:
        raise cal.CalibrationRefused("feedforward fit refused: " + " | ".join(bad) + "; nothing written")
    new = {name: float(np.mean([getattr(fits[s], name) for s in fits])) for name in ("ks", "kv", "ka")}
    # the board has one set for both wheels: the mean (a large left/right difference is worth a look)
    for name in new:
        lo = min(getattr(fits[s], name) for s in fits)
        hi = max(getattr(fits[s], name) for s in fits)
        if hi > 0 and (hi - lo) / hi > 0.2:
            note(args, f"{name} differs between the wheels by {100 * (hi - lo) / hi:.0f} %: check both motors")
    new = {n_: min(max(v, 0.0), 1.0 if n_ != "ks" else 0.6) for n_, v in new.items()}
    print("before: " + "  ".join(f"{n_} {board.get_param(n_):.5g}" for n_ in new))
    print("after:  " + "  ".join(f"{n_} {v:.5g}" for n_, v in new.items()))
    note(args, "the robot file has no feedforward keys: the board keeps them")
    _write(args, board, config, new, {})
    return 0
