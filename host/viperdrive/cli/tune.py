# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive tune`: the wheel velocity loop. A step test on one wheel or both (--step rad/s --duration s) prints
rise time, overshoot, settling time and steady-state error and writes a PNG of setpoint, measurement and output from
the board's own telemetry. --set kp=... applies gains live first, --save stores them on the board, --autotune runs
the relay experiment (viperdrive.tuning.calibrate.relay_autotune) and proposes PI gains, --design computes gains from
the identified motor model for a requested response and A/B-tests them (cli/tune_design.py). Lift the robot (wheels
free)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import extras, ranges
from ..errors import BadValue, UserError
from ..tuning import steptest
from ..tuning.calibrate import RULES, relay_autotune
from . import tune_design
from .boardopen import check_no_fault, open_board, param_guard, warn_unsaved
from .options import add_board_options, finite_float, from_range, parse_assignments, seconds
from .output import confirm, note, print_json
from .terminal import Progress

HELP = ("step-test the wheel speed loop (rise, overshoot, settling, error, PNG); --set/--save gains; --autotune; "
        "--design gains from the motor model")

GAINS = ("kp", "ki", "kd")
DEFAULT_PNG = "tune_step.png"
TEST_MAX_S = 60.0       # a step or relay experiment longer than a minute is a typo, not a test


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wheel", choices=("left", "right", "both"), default="both", help="default both")
    parser.add_argument("--step", type=from_range(ranges.STEP_RAD_S), default=10.0,
                        metavar="RAD_S", help="step size, rad/s (10; negative: backwards)")
    parser.add_argument("--duration", type=seconds(TEST_MAX_S), default=1.0, metavar="S",
                        help="how long the step is held (1.0)")
    parser.add_argument("--band", type=finite_float(0.0, 100.0, "%", lo_open=True, hi_open=True), default=5.0,
                        metavar="PCT", help="settling band, %% of the step (5)")
    parser.add_argument("--png", default=None, metavar="FILE",
                        help=f"plot file (default {DEFAULT_PNG} when the plot extra is installed; none without it)")
    parser.add_argument("--set", nargs="+", default=[], metavar="NAME=VALUE", dest="assign",
                        help="apply parameters live before the test, e.g. --set kp=0.05 ki=0.8")
    parser.add_argument("--save", action="store_true", help="store the parameters on the board after the test")
    parser.add_argument("--keep-ramp", action="store_true",
                        help="keep the board's max_accel ramp during the step (default: lifted for the test)")
    parser.add_argument("--autotune", action="store_true",
                        help="relay experiment first; propose PI gains (applied with --yes or on confirmation)")
    parser.add_argument("--relay", type=finite_float(0.05, 1.0, "duty"), default=0.9, metavar="DUTY",
                        help="relay amplitude, duty (0.9)")
    parser.add_argument("--relay-time", type=seconds(TEST_MAX_S), default=2.0, metavar="S",
                        help="relay experiment length (2)")
    parser.add_argument("--rule", choices=sorted(RULES), default="tyreus-luyben", help="tuning rule for --autotune")
    parser.add_argument("--yes", action="store_true", help="apply --autotune's gains without asking")
    tune_design.add_options(parser)
    add_board_options(parser, data_output=True)


def plot_file(args) -> None:
    """Settle args.png before the robot moves: the file asked for (the plot extra then required, the folder
    existing), else DEFAULT_PNG when matplotlib is installed, else None (no plot, with a note)."""
    if args.png is None:
        if extras.installed("plot"):
            args.png = DEFAULT_PNG
        else:
            note(args, "no plot of the step: pip install 'viperdrive[plot]' for one")
            return
    extras.require("plot", "--png")
    png_dir = Path(args.png).resolve().parent
    if not png_dir.is_dir():
        raise BadValue(f"--png {args.png}: the folder {png_dir} does not exist")


def run(args) -> int:
    assignments = parse_assignments(args.assign) if args.assign else {}
    plot_file(args)         # found out before the robot moves, not after the test
    wheels = ("left", "right") if args.wheel == "both" else (args.wheel,)
    if args.design:
        return tune_design.run(args, wheels)
    result: dict = {"wheels": {}}
    # every parameter the command changes goes through the guard: the test values (max_accel, the relay's) come
    # back whatever happens; --set and the autotune gains stay when the command succeeds and come back when it
    # does not (an error, Ctrl-C, SIGTERM, a lost link), with the board disabled first
    with open_board(args) as board, param_guard(board, args) as guard:
        tune_design.check_step(board.config, args.step)
        check_no_fault(board, args)
        if args.save:
            warn_unsaved(board, args)
        rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
        for name, value in assignments.items():
            was = board.get_param(name)
            applied = guard.set(name, value, keep=True)
            note(args, f"{name} = {applied:.6g} (was {was:.6g})")
        if args.autotune:
            result["autotune"] = _autotune(args, board, guard, wheels[0], rate)
        gains = {g: board.get_param(g) for g in GAINS}
        result["gains"] = gains
        with Progress(0.3 + args.duration + 0.4, "step test", quiet=args.quiet or args.json, unit="s") as bar:
            rec = steptest.run_step(board, wheels, args.step, args.duration, rate, keep_ramp=args.keep_ramp,
                                    progress=bar, shield=guard.shield, warn=guard.warn)
        metrics = {w: steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, args.step,
                                            band=args.band / 100.0) for w in wheels}
        if args.png is not None:
            steptest.plot_step(rec, wheels, metrics, args.png,
                               title=f"step {args.step:g} rad/s: kp {gains['kp']:.4g}, ki {gains['ki']:.4g}, "
                                     f"kd {gains['kd']:.4g}")
        result["wheels"] = {w: m.to_dict() for w, m in metrics.items()}
        result["png"] = args.png
        result["telemetry_hz"] = rate
        result["samples"] = int(len(rec.t))
        if args.save:
            board.save_params()
        result["saved"] = bool(args.save)
    if args.json:
        print_json(result)
        return 0
    print(f"step {args.step:g} rad/s for {args.duration:g} s, gains kp {gains['kp']:.5g} ki {gains['ki']:.5g} "
          f"kd {gains['kd']:.5g}; {result['samples']} telemetry samples at {rate} Hz")
    print(f"{'wheel':<6} {'rise 10-90%':>12} {'overshoot':>10} {'settling':>10} {'steady-state error':>20}")
    for w, m in metrics.items():
        rise = "n/a" if m.rise_time_s is None else f"{m.rise_time_s * 1000:.0f} ms"
        settle = f"never ({args.band:g}%)" if m.settling_time_s is None else f"{m.settling_time_s * 1000:.0f} ms"
        print(f"{w:<6} {rise:>12} {m.overshoot:>9.1f}% {settle:>10} {m.steady_state_error:>+11.3f} rad/s "
              f"({m.steady_state_error_pct:+.1f}%)")
    if args.png is not None:
        print(f"plot: {args.png}")
    if args.save:
        print("parameters saved on the board")
    elif assignments or result.get("autotune", {}).get("applied"):
        note(args, "gains applied live; add --save (or `viperdrive params save`) to keep them across a reset")
    return 0


RELAY_ATTEMPTS = 3      # a disturbance during one run (a bump, a loaded host) spoils it: repeat before refusing


def _autotune(args, board, guard, wheel: str, rate: int) -> dict:
    for attempt in range(1, RELAY_ATTEMPTS + 1):
        with Progress(args.relay_time, f"relay experiment ({wheel} wheel)", quiet=args.quiet or args.json,
                      unit="s") as bar:
            rec = steptest.run_relay(board, wheel, args.relay, args.relay_time, rate, progress=bar,
                                     shield=guard.shield, warn=guard.warn)
        steady = rec.t >= 0.3 * rec.t[-1]       # the first part is the start-up transient
        hysteresis = args.relay / 10.0          # relay band of the saturated P controller: amplitude / kp_max
        res = relay_autotune(rec.t[steady], rec.measured[wheel][steady], args.relay, hysteresis=hysteresis,
                             rule=args.rule, controller="pi")
        if res.ok or attempt == RELAY_ATTEMPTS or not all("steady" in p or "drifts" in p for p in res.problems):
            break
        note(args, f"relay run {attempt}: {'; '.join(res.problems)}; repeating")
    out = {"ok": res.ok, "attempts": attempt, "problems": list(res.problems), "ku": res.ku, "tu": res.tu,
           "amplitude": res.amplitude, "cycles": res.cycles, "rule": res.rule, "kp": res.kp, "ki": res.ki,
           "kd": res.kd, "applied": False}
    if not args.json:
        print(res.summary())
    if not res.ok:
        check_no_fault(board, args)         # a fault latched during the run is the reason: say that (exit 6)
        w = rec.measured[wheel][steady]
        seen = (f"the {wheel} wheel's speed spanned {float(w.min()):.3g} .. {float(w.max()):.3g} rad/s over "
                f"{float(rec.t[steady][-1] - rec.t[steady][0]):.2f} s of board time ({len(w)} records) after the "
                f"transient" if len(w) else "no telemetry record after the transient")
        out["seen"] = seen
        raise UserError("autotune refused: " + "; ".join(res.problems) + f" ({seen}). The gains are unchanged",
                        exit_code=7)
    before = {g: board.get_param(g) for g in GAINS}
    if not args.json:
        print(f"before: kp {before['kp']:.5g} ki {before['ki']:.5g} kd {before['kd']:.5g}")
        print(f"after:  kp {res.kp:.5g} ki {res.ki:.5g} kd {res.kd:.5g}")
    if args.yes or confirm("apply these gains now?"):
        for name, value in (("kp", res.kp), ("ki", res.ki), ("kd", res.kd)):
            guard.set(name, _clip(name, value), keep=True)
        out["applied"] = True
    check_no_fault(board, args)
    return out


def _clip(name: str, value: float) -> float:
    from viperdrive.shared import params as PARAMS
    p = PARAMS.by_name(name)
    return min(max(value, p[PARAMS.MIN]), p[PARAMS.MAX])
