# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Wheel velocity-loop experiments on a board: the step test (rise time, overshoot, settling time, steady-state
error, from the board's own control telemetry) and the relay experiment behind calibrate.relay_autotune.

Both run the host side at a low rate (SET_VEL every 40 ms keeps the deadman fed) so the line is free for the
telemetry stream: the metrics come from TELEMETRY_DATA records stamped by the board, never from host timing.
"""
from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass

import numpy as np

from viperdrive.shared import protocol as P
from viperdrive.shared import stepmetrics

from .. import extras
from ..errors import BadValue, LinkLost, UserError

WHEELS = ("left", "right")
HOST_PERIOD = 0.04      # s between SET_VELs during an experiment (deadman_ms >= 100 by the parameter table)
# the parameters an experiment may change temporarily (restored afterwards, whatever happens)
RAMP_PARAM = "max_accel"
LIFTED_RAMP = 5000.0    # rad/s^2: the setpoint jumps to the step within one period at any step the table allows
# With the ramp lifted the setpoint jumps within one period, so the kA feedforward (kA dw/dt) becomes an impulse of
# kA x step x control_hz duty (6.6 duty for a 10 rad/s step of the default robot, whose ramp asks for 0.04). It
# saturates the output and the back-calculation turns it into an integrator kick: the step would measure that
# artefact of lifting the ramp rather than the loop. A lifted ramp therefore lifts kA with it (both restored).
LIFTED = {RAMP_PARAM: LIFTED_RAMP, "ka": 0.0}


KICK_COMMANDS = 5           # the relay experiment's kick: this many host commands at 2 rad/s (50 ms at 100 Hz)


def relay_values(amplitude: float) -> dict:
    """The parameters the relay experiment sets (a pure P controller at the highest gain, clamped at +-amplitude)."""
    from viperdrive.shared import params as PARAMS
    kp_max = PARAMS.by_name("kp")[PARAMS.MAX]
    # vel_edges 0: the relay is a P controller, not a relay with memory, and it keeps oscillating only while the
    # speed estimate lags like counts per period do; edge-timed speeds are fine enough that it settles at rest
    # against static friction (the default robot's wheel stopped within 0.3 s). stall_speed 0.05 rad/s: the
    # oscillation's measured amplitude (~0.46 rad/s on the default robot) is below the default 0.5, and an estimate
    # that jumps across zero without a period in the linear band read as a saturated wheel "without motion" for
    # stall_ms; a wheel that really does not turn still faults
    return {"ki": 0.0, "kd": 0.0, "ks": 0.0, "kv": 0.0, "ka": 0.0, "deadband": 0.0, RAMP_PARAM: LIFTED_RAMP,
            "max_duty": amplitude, "kp": kp_max, "vel_edges": 0, "stall_speed": 0.05}


def experiment_values_left(board) -> dict:
    """{name: live value} of the parameters that still hold an experiment's test value: the lifted ramp (max_accel
    5000, both experiments) and kp at its maximum (the relay's). What a SIGKILLed `tune` leaves live; a drive on it
    runs a relay controller, not the robot's tuning."""
    from viperdrive.shared import params as PARAMS
    found = {}
    if board.get_param(RAMP_PARAM) == LIFTED_RAMP:
        found[RAMP_PARAM] = LIFTED_RAMP
    kp_max = PARAMS.by_name("kp")[PARAMS.MAX]
    if board.get_param("kp") == kp_max:
        found["kp"] = kp_max
        for name in ("ki", "ks", "kv", "max_duty"):
            found[name] = board.get_param(name)
    return found


@dataclass(frozen=True)
class StepMetrics:
    step: float                         # rad/s commanded
    rise_time_s: float | None           # s, 10 % -> 90 % of the step
    overshoot: float                    # % of the step above it (0 when it never passes the step)
    settling_time_s: float | None       # s from the step until it stays within the band
    steady_state_error: float           # rad/s, step minus the mean of the last 20 % of the step window
    steady_state_error_pct: float
    peak: float                         # rad/s
    band: float                         # settling band, fraction of the step

    def to_dict(self) -> dict:
        return asdict(self)


def step_metrics(t, y, t_step: float, t_end: float, step: float, band: float = stepmetrics.BAND) -> StepMetrics:
    """Metrics of a step from 0 to `step` at t_step, held until t_end; t (s) and y (rad/s) are the samples. The
    figures are viperdrive.shared.stepmetrics' (the board's REPL tuning uses the same definition)."""
    if step == 0:
        raise BadValue("the step must be nonzero")
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    n = int(((t >= t_step) & (t <= t_end)).sum())
    if n < 5:
        raise UserError(f"only {n} telemetry samples during the step: make --duration longer")
    m = stepmetrics.step_metrics(t.tolist(), y.tolist(), 0.0, step, band, t_step, t_end)
    sse = step - m["final"]
    return StepMetrics(step, m["rise_s"], m["overshoot_pct"], m["settling_s"], sse, 100.0 * sse / step, m["peak"],
                       band)


@dataclass
class Recording:
    """Telemetry of one experiment in SI units; t in s from the first record (board clock)."""
    t: np.ndarray
    setpoint: dict
    measured: dict
    output: dict
    integrator: dict
    status: np.ndarray | None = None    # the STATE status bits of each record (ST_SATURATED: either wheel)
    t_step: float = math.nan
    t_end: float = math.nan


def telemetry_rate(control_hz: int, baud: int, share: float = 0.6) -> int:
    """The highest telemetry rate the board grants that uses at most `share` of the line: the board divides its
    control rate by a whole number."""
    frame = 36                                        # TELEMETRY_DATA bytes on the wire
    budget = share * baud / 10.0 / frame
    div = max(1, math.ceil(control_hz / budget))
    return control_hz // div


class ParamGuard:
    """The live parameters a command changes, put back when it does not finish.

    set(name, value, keep=False): set now, remembering the value from before (the first one, if set twice).
    Leaving the block normally puts back the temporary values (keep=False: an experiment's test values) and keeps
    the others (the gains the user asked for); leaving it by an exception (an error, Ctrl-C, SIGTERM, a lost link)
    first disables the board, then puts back every value. A value that cannot be put back (the link is gone) is
    named in `failed`; the board's DIAG flag PARAMS_UNSAVED then shows it, and `viperdrive params restore`
    (Board.load_params) brings back the saved values. A SIGKILL runs no code: the flag is the only trace.

    shield: a context manager factory under which the restoring runs (the CLI defers Ctrl-C/SIGTERM there, so a
    second signal cannot cut the restore short); warn(text): told about values left changed."""

    def __init__(self, board, shield=None, warn=None):
        self.board = board
        self.shield = shield
        self.warn = warn
        self.original: dict = {}
        self.kept: set = set()
        self.failed: dict = {}

    def set(self, name: str, value, keep: bool = False):
        if name not in self.original:
            self.original[name] = self.board.get_param(name)
        if keep:
            self.kept.add(name)
        return self.board.set_param(name, value)

    def keep_all(self) -> None:
        """The live values are the ones to keep from now on, however the block ends (they were saved on the board,
        or the saved ones loaded back): nothing is put back for what was set so far."""
        self.original.clear()
        self.kept.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        names = [n for n in self.original if exc_type is not None or n not in self.kept]
        if self.shield is None:
            self._restore(names, exc_type is not None)
        else:
            with self.shield():
                self._restore(names, exc_type is not None)
        if self.failed and exc_type is None:
            raise LinkLost(self.failed_text()) from None
        return False

    def _restore(self, names, failing: bool) -> None:
        if failing and getattr(self.board, "active", False):
            # outputs off before anything else: restoring takes a round trip per parameter (if this fails, the
            # board's deadman stops the motors; the parameters still need putting back)
            _quietly(self.board.deactivate)
        for name in names:
            try:
                self.board.set_param(name, self.original[name])
            except UserError as e:
                self.failed[name] = (self.original[name], str(e))
        self.original = {n: v for n, v in self.original.items() if n not in names}
        if self.failed and self.warn is not None and failing:
            self.warn(self.failed_text())

    def failed_text(self) -> str:
        what = ", ".join(f"{n} (was {v:.6g})" for n, (v, _) in self.failed.items())
        why = next(iter(self.failed.values()))[1]
        return (f"could not put back {what}: {why}. The board keeps the changed values live until `viperdrive params "
                f"restore` (or a reset) brings back the saved ones; `viperdrive info` shows the flag PARAMS_UNSAVED")


class TemporaryParams(ParamGuard):
    """Set parameters for an experiment; the old values come back on exit, also after an error or Ctrl-C."""

    def __init__(self, board, values: dict, shield=None, warn=None):
        super().__init__(board, shield=shield, warn=warn)
        self.values = values

    def __enter__(self):
        try:
            for name, value in self.values.items():
                self.set(name, value)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self


def run_experiment(board, rate_hz: int, duration_s: float, setpoints, progress=None, tail: float = 0.0,
                   period_s: float = HOST_PERIOD, activate=None) -> list:
    """Stream telemetry at rate_hz, enable the board (activate(), default board.activate), send setpoints(t) =
    (left, right) rad/s every `period_s` s for `duration_s` s, disable; return the raw telemetry records. `tail` s
    more are read after the disable (the step test's return to zero). Times are the board's (board.clock).
    Ended by an exception (Ctrl-C, SIGTERM, a lost link), the board is disabled first, then the telemetry switched
    off; the exception goes on."""
    records: list = []
    board.telemetry(rate_hz)
    clock = board.clock
    try:
        (activate or board.activate)()
        t0 = clock.now()
        while True:
            now = clock.now() - t0
            if now >= duration_s:
                break
            board.write(*setpoints(now))
            board.read()
            records.extend(board.telemetry_frames())
            if progress is not None:
                progress.update(now)
            clock.sleep(period_s)
        board.deactivate()
        if tail:
            clock.sleep(tail)
        records.extend(board.telemetry_frames())
    except BaseException:
        # Ctrl-C, SIGTERM, a lost link: outputs off first (the board must not wait for its deadman), then on
        if board.active:
            _quietly(board.deactivate)
        _quietly(board.telemetry, 0)
        raise
    board.telemetry(0)
    return records


def _quietly(call, *args) -> None:
    """A clean-up step on the way out of an error: its own failure (the link is gone) must not replace the error."""
    try:
        call(*args)
    except UserError:
        pass


def to_recording(records: list, k: float) -> Recording:
    if len(records) < 5:
        raise UserError(f"only {len(records)} telemetry records arrived: is the link too slow for --rate?")
    t_us = np.array([r["t_us"] for r in records], dtype=np.int64)
    t = np.cumsum(np.concatenate([[0], (np.diff(t_us) & 0xFFFFFFFF)])) * 1e-6   # u32 board clock, unwrapped
    rec = Recording(t, {}, {}, {}, {}, np.array([r["status"] for r in records], dtype=np.int64))
    for side, s in (("left", "l"), ("right", "r")):
        rec.setpoint[side] = np.array([r[f"setpoint_{s}"] for r in records]) * k
        rec.measured[side] = np.array([r[f"measured_{s}"] for r in records]) * k
        rec.output[side] = np.array([r[f"output_{s}"] for r in records]) / P.Q15
        rec.integrator[side] = np.array([r[f"integrator_{s}"] for r in records]) / P.Q15
    return rec


def run_step(board, wheels, step: float, duration_s: float, rate_hz: int, pre: float = 0.3, post: float = 0.4,
             keep_ramp: bool = False, progress=None, shield=None, warn=None) -> Recording:
    """Hold zero for `pre` s, step the wheels to `step` rad/s for `duration_s` s, back to zero for `post` s.
    The board's acceleration ramp (and with it the kA feedforward, see LIFTED) is lifted for the test (restored
    after, whatever happens: ParamGuard, with shield and warn) unless keep_ramp: a ramped setpoint measures the
    ramp, not the loop."""
    k = 2 * math.pi / board.counts_per_rev
    changes = {} if keep_ramp else dict(LIFTED)

    def setpoints(now):
        on = pre <= now < pre + duration_s
        return (step if on and "left" in wheels else 0.0, step if on and "right" in wheels else 0.0)

    with TemporaryParams(board, changes, shield=shield, warn=warn):
        records = run_experiment(board, rate_hz, pre + duration_s + post, setpoints, progress, tail=0.05)
    rec = to_recording(records, k)
    # the step instant on the board's clock: the first record whose setpoint is nonzero
    w0 = wheels[0]
    moving = np.nonzero(np.abs(rec.setpoint[w0]) > 1e-9)[0]
    if not len(moving):
        raise UserError("the board never took the step setpoint (is it enabled? `viperdrive info`)")
    rec.t_step = float(rec.t[moving[0]])
    after = moving[moving >= moving[0]]
    # the end: last nonzero setpoint of that first run
    gaps = np.nonzero(np.diff(after) > 1)[0]
    last = after[gaps[0]] if len(gaps) else after[-1]
    rec.t_end = float(rec.t[last])
    return rec


def run_relay(board, wheel: str, amplitude: float, duration_s: float, rate_hz: int, progress=None, shield=None,
              warn=None) -> Recording:
    """Relay experiment on one wheel, on the board itself (the oscillation is too fast for the host): a pure P
    controller at the highest gain, clamped at +-amplitude duty, IS a relay (its linear band, amplitude/kp, is the
    hysteresis). Feedforward, integral, derivative and deadband compensation are off for the test; every changed
    parameter is restored afterwards. The wheel oscillates about zero speed: lift the robot."""
    changes = relay_values(amplitude)
    k = 2 * math.pi / board.counts_per_rev

    sent = [0]

    def setpoints(now):
        # a short kick starts the oscillation; then the setpoint is zero and the relay does the rest. The kick is
        # the first KICK_COMMANDS commands, not the first 50 ms: a host the machine did not schedule for 50 ms of
        # board time after the enable sent no kick at all, and a wheel at rest stays at rest (0 cycles, refused)
        sent[0] += 1
        kick = 2.0 if sent[0] <= KICK_COMMANDS else 0.0
        return (kick if wheel == "left" else 0.0, kick if wheel == "right" else 0.0)

    with TemporaryParams(board, changes, shield=shield, warn=warn):
        records = run_experiment(board, rate_hz, duration_s, setpoints, progress)
    return to_recording(records, k)


def plot_step(rec: Recording, wheels, metrics: dict, path, title: str = "") -> None:
    """PNG: setpoint and measurement (rad/s) with the controller output (duty) on a second axis, per wheel."""
    extras.require("plot", "plotting a step")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(wheels), 1, figsize=(9, 3.6 * len(wheels)), sharex=True, squeeze=False)
    for ax, side in zip(axes[:, 0], wheels, strict=True):
        ax.plot(rec.t, rec.setpoint[side], label="setpoint (board)", color="tab:blue")
        ax.plot(rec.t, rec.measured[side], label="measured", color="tab:orange")
        ax.set_ylabel(f"{side} wheel (rad/s)")
        ax.grid(True)
        m = metrics.get(side)
        if m is not None:
            rise = "n/a" if m.rise_time_s is None else f"{m.rise_time_s * 1000:.0f} ms"
            settle = "never" if m.settling_time_s is None else f"{m.settling_time_s * 1000:.0f} ms"
            ax.set_title(f"{side}: rise {rise}, overshoot {m.overshoot:.1f} %, settling {settle}, "
                         f"steady-state error {m.steady_state_error:+.3f} rad/s", fontsize=9)
        ax2 = ax.twinx()
        ax2.plot(rec.t, rec.output[side], label="output (duty)", color="tab:green", alpha=0.6)
        ax2.set_ylabel("output (duty)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("board time (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as e:
        raise UserError(f"cannot write the plot {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
