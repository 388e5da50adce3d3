# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive tune --design`: gains from the identified motor model (viperdrive.tuning.design) for a requested step
response, then verified on the board: a step with the gains it has (A) and one with the designed gains (B), both
with the ramp lifted, compared with the request and the model's prediction. Only --save keeps the new gains (and
only when B meets the request); otherwise the board's gains are put back, whatever ends the command.

Not a command module (no register/run): tune.py adds these options and calls run()."""
from __future__ import annotations

import argparse
import math
import re

from .. import ranges
from ..errors import BadValue, UserError
from ..tuning import design as tuning_design
from ..tuning import steptest
from .boardopen import check_no_fault, open_board
from .output import note, print_json, warn
from .signals import stop_signals_as_interrupt
from .terminal import Progress

DESIGNED = ("kp", "ki", "kd", "kd_tau", "windup_tau")     # what the design writes; everything else stays as it is
TOLERANCE = 0.2     # B meets the request when its settling and overshoot are within 20 % of it
SECOND_BAND = 0.02  # settling is also reported into 2 %


def duration(text: str) -> float:
    """'150ms', '0.15s', '0.15' (s) -> seconds, in ranges.SETTLE_S (the dashboard's Design takes the same)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time (e.g. 150ms or 0.15s)")
    v = float(m.group(1)) * (1e-3 if m.group(2) == "ms" else 1.0)
    if not (math.isfinite(v) and ranges.SETTLE_S.contains(v)):
        raise argparse.ArgumentTypeError(f"{text!r} is outside {ranges.SETTLE_S.text()}: a wheel speed loop's "
                                         f"settling time")
    return v


def percent(text: str) -> float:
    """'5%', '5' -> 5.0 (percent)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%?\s*", text)
    if not m or not ranges.OVERSHOOT_PCT.contains(float(m.group(1))):
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage in {ranges.OVERSHOOT_PCT.text()}, e.g. 5%")
    return float(m.group(1))


def add_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("gain design (--design; docs/tuning.md)")
    g.add_argument("--design", action="store_true",
                   help="compute PI(D) gains from the board's kS/kV/kA (calibrate feedforward) for --settle and "
                        "--overshoot, step-test the board's gains and the new ones (A/B); --save keeps the new")
    g.add_argument("--settle", type=duration, default=0.15, metavar="TIME",
                   help="settling time into --band of a --step, e.g. 150ms (default 150ms)")
    g.add_argument("--overshoot", type=percent, default=5.0, metavar="PCT",
                   help="largest overshoot, %% of the step (default 5%%)")
    g.add_argument("--pid", action="store_true", help="design PID (SIMC, second-order model) instead of PI")


def model_of(board) -> tuning_design.MotorModel:
    values = {name: board.get_param(name) for name in ("ks", "kv", "ka", "vel_tau", "max_duty")}
    return tuning_design.MotorModel(values["ks"], values["kv"], values["ka"], board.info.control_hz,
                                    board.counts_per_rev, values["vel_tau"], values["max_duty"])


def _step(args, board, wheels, rate: int, label: str) -> dict:
    with Progress(0.3 + args.duration + 0.4, label, quiet=args.quiet or args.json, unit="s") as bar:
        rec = steptest.run_step(board, wheels, args.step, args.duration, rate, progress=bar)
    metrics, out = {}, {}
    for w in wheels:
        metrics[w] = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, args.step,
                                           band=args.band / 100)
        m2 = steptest.step_metrics(rec.t, rec.measured[w], rec.t_step, rec.t_end, args.step, band=SECOND_BAND)
        out[w] = dict(metrics[w].to_dict(), settling_time_2pct_s=m2.settling_time_s)
    return {"wheels": out, "metrics": metrics, "recording": rec}


def _meets(m: dict, req: tuning_design.Request) -> list[str]:
    """What a measured step misses of the request (empty: it meets it within TOLERANCE)."""
    misses = []
    s = m["settling_time_s"]
    if s is None or s > req.settle * (1 + TOLERANCE):
        misses.append(f"settling {'never' if s is None else f'{s * 1e3:.0f} ms'} > "
                      f"{req.settle * 1e3 * (1 + TOLERANCE):.0f} ms")
    if m["overshoot"] > req.overshoot * 100 * (1 + TOLERANCE):
        misses.append(f"overshoot {m['overshoot']:.1f} % > {req.overshoot * 100 * (1 + TOLERANCE):.1f} %")
    return misses


def _ms(x) -> str:
    return "never" if x is None else f"{x * 1e3:.0f} ms"


def check_step(config, step: float) -> None:
    """--step (wheel rad/s) within what the robot file lets both wheels reach: its max_rim_speed at the rim."""
    limit = min(config.wheel_speed_limits)
    if abs(step) > limit:
        raise BadValue(f"--step {step} rad/s is above the robot's max_rim_speed ({config.max_rim_speed} m/s = "
                       f"{limit:.2f} rad/s at the wheel)")


def run(args, wheels) -> int:
    if args.assign or args.autotune:
        raise UserError("--design computes the gains itself: use it without --set and --autotune", exit_code=2)
    req = tuning_design.Request(args.settle, args.overshoot / 100, args.step, args.band / 100)
    result: dict = {}
    with stop_signals_as_interrupt(), open_board(args) as board:
        check_step(board.config, args.step)
        check_no_fault(board, args)
        d = tuning_design.design(model_of(board), req, "pid" if args.pid else "pi")
        result["design"] = d.to_dict()
        if not args.json:
            print(d.summary())
        if not d.feasible:
            raise BadValue("design refused: " + "; ".join(d.problems) + ". Nothing was changed")
        rate = steptest.telemetry_rate(board.info.control_hz, board.baud)
        old = {name: board.get_param(name) for name in DESIGNED}
        keep = False
        try:
            a = _step(args, board, wheels, rate, "step A (the board's gains)")
            for name in DESIGNED:
                if name in d.gains:
                    board.set_param(name, d.gains[name])
            new = {name: board.get_param(name) for name in DESIGNED}
            b = _step(args, board, wheels, rate, "step B (designed gains)")
            misses = {w: _meets(m, req) for w, m in b["wheels"].items()}
            ok = not any(misses.values())
            if args.save and ok:
                board.save_params()
                keep = True
        finally:
            if not keep:
                failed = []
                for name, value in old.items():
                    try:
                        board.set_param(name, value)
                    except UserError:
                        failed.append(name)
                if failed:
                    warn(args, f"could not put back {', '.join(failed)} (link lost?): the board runs the trial "
                               f"gains until it is reset (they were not saved)")
        if args.png is not None:
            steptest.plot_step(b["recording"], wheels, b["metrics"], args.png,
                               title=f"designed gains: kp {new['kp']:.4g}, ki {new['ki']:.4g}, "
                                     f"kd {new['kd']:.4g}, windup_tau {new['windup_tau']:.4g} s")
    result.update({"old_gains": old, "new_gains": new, "a": a["wheels"], "b": b["wheels"], "meets": ok,
                   "misses": misses, "saved": keep, "png": args.png, "telemetry_hz": rate})
    if args.json:
        print_json(result)
    else:
        _print_table(args, d, a["wheels"], b["wheels"], old, new)
        for w, miss in misses.items():
            if miss:
                print(f"{w}: B misses the request: {'; '.join(miss)}")
        if args.png is not None:
            print(f"plot of B: {args.png}")
        if keep:
            print("designed gains saved on the board")
        elif ok:
            note(args, "B meets the request; the board's gains were put back: add --save to keep the new ones")
        else:
            note(args, "the board's gains were put back")
    if args.save and not ok:
        raise UserError("not saved: the designed gains miss the request on the board (" + "; ".join(
            f"{w}: {', '.join(m)}" for w, m in misses.items() if m) + "); the board's gains were put back",
            exit_code=7)
    return 0


def _print_table(args, d, a: dict, b: dict, old: dict, new: dict) -> None:
    band = f"{args.band:g} %"
    r, p = d.request, d.predicted
    for label, g in (("gains A (the board's):", old), ("gains B (designed):   ", new)):
        print(f"{label} kp {g['kp']:.5g} ki {g['ki']:.5g} kd {g['kd']:.5g} windup_tau {g['windup_tau']:.5g} s")
    print(f"{'':<20} {'rise 10-90%':>12} {'overshoot':>10} {'settle ' + band:>12} {'settle 2 %':>11} "
          f"{'ss error':>10}")
    print(f"{'request':<20} {'':>12} {'<= ' + format(r.overshoot * 100, 'g') + ' %':>10} "
          f"{'<= ' + _ms(r.settle):>12} {'':>11} {'':>10}")
    print(f"{'predicted (model)':<20} {_ms(p['rise_s']):>12} {p['overshoot_pct']:>9.1f}% {_ms(p['settling_s']):>12} "
          f"{_ms(d.predicted_2pct):>11} {'':>10}")
    for label, res in (("A", a), ("B", b)):
        for w, m in res.items():
            print(f"{label + ' ' + w:<20} {_ms(m['rise_time_s']):>12} {m['overshoot']:>9.1f}% "
                  f"{_ms(m['settling_time_s']):>12} {_ms(m['settling_time_2pct_s']):>11} "
                  f"{m['steady_state_error']:>+7.3f} r/s")
