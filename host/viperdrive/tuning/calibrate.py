# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Field calibrations on recorded data (docs/estimation.md, "Calibration"): effective wheel separation from spin
tests, UMBmark, motor feedforward identification, relay autotuning. Every function takes arrays, so it works
offline and in tests; every result is a small dataclass with `ok`, the `problems` that make it untrustworthy, and
`summary()`. The CLI wires these to the board; this module never talks to hardware.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import BadValue


class CalibrationRefused(BadValue):
    """The data cannot support the requested calibration; the message lists why."""


@dataclass(frozen=True)
class _Checked:
    problems: tuple = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    def require(self):
        """The result itself, or CalibrationRefused listing every problem."""
        if self.problems:
            raise CalibrationRefused(f"{type(self).__name__} refused: " + "; ".join(self.problems))
        return self

    def _verdict(self, text: str) -> str:
        """A summary line, followed by the reasons when the result is refused."""
        return text if self.ok else text + "\nREFUSED: " + "; ".join(self.problems)


# ------------------------------------------------------------------------------------------ wheel separation

@dataclass(frozen=True)
class SpinRun:
    """One spin test. commanded: the turn the wheels were driven for, i.e. what odometry with the current
    separation reports (e.g. w = 1 rad/s for 10 s = 10 rad; negative clockwise). measured: the real turn from an
    external reference (marks on the floor, a gyro, a camera), same sign convention."""
    commanded: float
    measured: float


@dataclass(frozen=True)
class SpinResult(_Checked):
    old: float = math.nan
    new: float = math.nan
    ccw: float = math.nan          # estimate from the counter-clockwise runs alone
    cw: float = math.nan

    def summary(self) -> str:
        head = (f"wheel separation: {self.old:.5g} m -> {self.new:.5g} m "
                f"(ccw runs {self.ccw:.5g} m, cw runs {self.cw:.5g} m, "
                f"change {100 * (self.new / self.old - 1):+.2f} %)")
        return self._verdict(head)


def wheel_separation_from_spin(separation_m: float, runs) -> SpinResult:
    """Effective wheel separation (m) from spin tests in both directions, from the one the runs used.

    The wheels turn in place by +-s = commanded * b_old / 2; the robot really turns 2 s / b_true, so
    b_true = b_old * commanded / measured. (The usual textbook form, b_new = b_old * turned / commanded, is this
    formula when "turned" is the odometry's angle and "commanded" the real one. The roles are named explicitly
    here to avoid exactly that ambiguity.) Each direction is averaged on its own, then the two are averaged, so a
    direction-dependent effect (one tyre slipping more) does not bias the result. Repeat with the new value until
    the change is small (usually two iterations)."""
    runs = [r if isinstance(r, SpinRun) else SpinRun(*r) for r in runs]
    problems = []
    if separation_m <= 0:
        raise ValueError("separation_m must be > 0")
    est: dict[int, list[float]] = {1: [], -1: []}
    for i, r in enumerate(runs):
        if r.commanded == 0 or r.measured == 0:
            problems.append(f"run {i}: zero turn")
            continue
        if (r.commanded > 0) != (r.measured > 0):
            problems.append(f"run {i}: measured turn has the opposite sign of the commanded one")
            continue
        if abs(r.measured) < math.pi:
            problems.append(f"run {i}: turn of {abs(r.measured):.2f} rad is too short to measure well (use >= 2 pi)")
        ratio = r.commanded / r.measured
        if not 0.5 < ratio < 2.0:
            problems.append(f"run {i}: commanded/measured = {ratio:.3f} is implausible (check units and sign)")
        est[1 if r.commanded > 0 else -1].append(separation_m * ratio)
    for d, name in ((1, "counter-clockwise"), (-1, "clockwise")):
        if not est[d]:
            problems.append(f"no valid {name} run: spin both directions")
    ccw = float(np.mean(est[1])) if est[1] else math.nan
    cw = float(np.mean(est[-1])) if est[-1] else math.nan
    new = (ccw + cw) / 2 if est[1] and est[-1] else math.nan
    return SpinResult(tuple(problems), separation_m, new, ccw, cw)


# ------------------------------------------------------------------------------------------ gyro scale

GYRO_SCALE_RANGE = (0.9, 1.1)      # the board's gyro_scale_ccw / gyro_scale_cw range (shared/params.py)


@dataclass(frozen=True)
class GyroRun:
    """One run of the gyro calibration: read, the turn the board's gyro heading read (rad, with the scale the run
    used; negative clockwise); scale, that scale; real, the true turn (rad, same sign): whole turns against a mark
    plus how far past the mark the robot came to rest."""
    read: float
    scale: float
    real: float


@dataclass(frozen=True)
class GyroScaleResult(_Checked):
    old_ccw: float = math.nan
    old_cw: float = math.nan
    ccw: float = math.nan           # from the counter-clockwise runs alone
    cw: float = math.nan

    @property
    def scale(self) -> float:
        """Both directions' mean: what is written to both parameters. A run's residual gyro bias adds the same
        angle per second to both directions' readings, so it turns one direction's scale up and the other's down
        by the same amount; the mean cancels it (runs of equal length, as the calibration drives them)."""
        return (self.ccw + self.cw) / 2

    def error_per_turn_deg(self, direction: int) -> float:
        """Degrees a full turn in that direction was read off by, with the old scale."""
        old = self.old_ccw if direction > 0 else self.old_cw
        return 360.0 * (old / self.scale - 1.0)

    def summary(self) -> str:
        head = (f"gyro scale: {self.scale:.5f} (counter-clockwise runs {self.ccw:.5f}, clockwise runs {self.cw:.5f}:"
                f" their half difference, {abs(self.ccw - self.cw) / 2 * 100:.3f} %, is what the gyro's residual "
                f"bias put into one run); a full turn was read {self.error_per_turn_deg(1):+.2f} deg off "
                f"counter-clockwise, {self.error_per_turn_deg(-1):+.2f} deg clockwise")
        return self._verdict(head)


def gyro_scale(runs, old_ccw: float = 1.0, old_cw: float = 1.0) -> GyroScaleResult:
    """The gyro's scale from runs of whole turns against a mark (GyroRun each), both directions: the true turn per
    turn read by the bare gyro is real / (read / scale), averaged per direction, then over both (`scale`).
    Refused: a run shorter than a full turn (the mark's error is too large a share), a sign mismatch, or a scale
    outside the board's range (a part off by more than 10 % is a wrong full-scale setting, not a scale error)."""
    runs = [r if isinstance(r, GyroRun) else GyroRun(*r) for r in runs]
    problems = []
    est: dict[int, list[float]] = {1: [], -1: []}
    for i, r in enumerate(runs):
        if not all(math.isfinite(x) for x in (r.read, r.scale, r.real)) or r.read == 0 or r.scale <= 0:
            problems.append(f"run {i + 1}: no turn read")
            continue
        if (r.read > 0) != (r.real > 0):
            problems.append(f"run {i + 1}: the real turn has the opposite sign of the one read")
            continue
        if abs(r.real) < 2 * math.pi - 0.5:
            problems.append(f"run {i + 1}: {math.degrees(abs(r.real)):.0f} deg is less than a full turn")
            continue
        s = r.real / (r.read / r.scale)
        if not GYRO_SCALE_RANGE[0] <= s <= GYRO_SCALE_RANGE[1]:
            problems.append(f"run {i + 1}: a scale of {s:.4f} is outside {GYRO_SCALE_RANGE[0]}-{GYRO_SCALE_RANGE[1]}"
                            f" (check the gyro's full-scale setting and the degrees given)")
            continue
        est[1 if r.read > 0 else -1].append(s)
    for d, name in ((1, "counter-clockwise"), (-1, "clockwise")):
        if not est[d]:
            problems.append(f"no valid {name} run: turn both ways")
    ccw = float(np.mean(est[1])) if est[1] else math.nan
    cw = float(np.mean(est[-1])) if est[-1] else math.nan
    return GyroScaleResult(tuple(problems), old_ccw, old_cw, ccw, cw)


# ------------------------------------------------------------------------------------------ UMBmark

@dataclass(frozen=True)
class UMBmarkResult(_Checked):
    alpha: float = math.nan            # rad: turn error per 90-degree corner (wheelbase error, type A)
    beta: float = math.nan             # rad: heading change per straight leg (unequal wheel diameters, type B)
    radius_m: float = math.nan         # m: curvature radius of a "straight" leg
    diameter_ratio: float = math.nan   # Ed = D_right / D_left (actual)
    wheelbase_factor: float = math.nan     # Eb = b_actual / b_nominal
    wheelbase: float = math.nan        # corrected effective wheelbase, m
    left_factor: float = math.nan      # multiply the left wheel's diameter (radius) by this
    right_factor: float = math.nan     # ... and the right one's by this (their mean stays 1)
    cw_center: tuple = (math.nan, math.nan)
    ccw_center: tuple = (math.nan, math.nan)
    systematic_error: float = math.nan     # max distance of the two cluster centres from the start, m

    def summary(self) -> str:
        s = (f"UMBmark: cw centre ({self.cw_center[0]:+.4f}, {self.cw_center[1]:+.4f}) m, ccw centre "
             f"({self.ccw_center[0]:+.4f}, {self.ccw_center[1]:+.4f}) m, "
             f"systematic error {self.systematic_error:.4f} m\n"
             f"  alpha {math.degrees(self.alpha):+.4f} deg/corner, beta {math.degrees(self.beta):+.4f} deg/leg\n"
             f"  wheel diameter ratio Ed = D_R/D_L = {self.diameter_ratio:.6f}: left x {self.left_factor:.6f}, "
             f"right x {self.right_factor:.6f}\n"
             f"  wheelbase factor Eb = {self.wheelbase_factor:.6f}: wheelbase {self.wheelbase:.5f} m")
        return self._verdict(s)


def umbmark(cw_errors, ccw_errors, side: float, wheelbase: float) -> UMBmarkResult:
    """Borenstein & Feng's UMBmark from the return-position errors of clockwise and counter-clockwise square runs.

    cw_errors, ccw_errors: (n, 2) arrays of (x, y) = true end position minus odometry's end position, in the start
    frame (x along the first leg, y to its left, REP-103), one row per run; side: the square's side L (m);
    wheelbase: the nominal b used by odometry during the runs.

    With alpha the turn deficit per corner and beta the heading change per leg, to first order the cluster centres
    are cw = -2L(beta + alpha) (1, 1) and ccw = 2L(beta - alpha) (1, -1), hence
    alpha = (x_cw + x_ccw) / (-4L) = (y_cw - y_ccw) / (-4L),
    beta = (x_cw - x_ccw) / (-4L) = (y_cw + y_ccw) / (-4L)   (x and y estimates averaged).
    Then R = (L/2) / sin(beta/2), Ed = (R + b/2) / (R - b/2) with b the corrected wheelbase,
    Eb = (pi/2) / (pi/2 - alpha), left factor 2 / (Ed + 1), right factor 2 / (1/Ed + 1)."""
    cw = np.atleast_2d(np.asarray(cw_errors, dtype=float))
    ccw = np.atleast_2d(np.asarray(ccw_errors, dtype=float))
    problems = []
    if cw.shape[1:] != (2,) or ccw.shape[1:] != (2,):
        raise ValueError("errors are (n, 2) arrays of x, y")
    for name, runs in (("clockwise", cw), ("counter-clockwise", ccw)):
        if len(runs) < 3:
            problems.append(f"{len(runs)} {name} runs: use at least 3 (Borenstein & Feng use 5) per direction")
    if side <= 0 or wheelbase <= 0:
        raise ValueError("side and wheelbase must be > 0")
    xcw, ycw = cw.mean(axis=0)
    xccw, yccw = ccw.mean(axis=0)
    L = side
    alpha_x, alpha_y = (xcw + xccw) / (-4 * L), (ycw - yccw) / (-4 * L)
    beta_x, beta_y = (xcw - xccw) / (-4 * L), (ycw + yccw) / (-4 * L)
    alpha, beta = (alpha_x + alpha_y) / 2, (beta_x + beta_y) / 2
    # the x and y estimates must agree, else the runs are dominated by something UMBmark does not model
    spread = max(abs(alpha_x - alpha_y), abs(beta_x - beta_y))
    scale = max(abs(alpha), abs(beta), 1e-4)
    if spread > 0.5 * scale and spread > 2e-4:
        problems.append(f"x- and y-based estimates disagree (alpha {alpha_x:.2e} vs {alpha_y:.2e}, "
                        f"beta {beta_x:.2e} vs {beta_y:.2e} rad): non-systematic errors dominate; "
                        f"more runs or a smoother floor")
    for name, runs in (("clockwise", cw), ("counter-clockwise", ccw)):
        if len(runs) >= 2:
            scatter = float(np.sqrt(np.mean(np.sum((runs - runs.mean(axis=0)) ** 2, axis=1))))
            if scatter > 0.5 * max(np.hypot(xcw, ycw), np.hypot(xccw, yccw)) and scatter > 0.02:
                problems.append(f"{name} end points scatter {scatter:.3f} m, comparable to the systematic error")
    eb = (math.pi / 2) / (math.pi / 2 - alpha)
    b = wheelbase * eb
    if abs(beta) < 1e-12:
        radius, ed = math.inf, 1.0
    else:
        radius = (L / 2) / math.sin(beta / 2)
        ed = (radius + b / 2) / (radius - b / 2)
    return UMBmarkResult(tuple(problems), alpha, beta, radius, ed, eb, b, 2 / (ed + 1), 2 / (1 / ed + 1),
                         (float(xcw), float(ycw)), (float(xccw), float(yccw)),
                         float(max(np.hypot(xcw, ycw), np.hypot(xccw, yccw))))


# ------------------------------------------------------------------------------------------ feedforward

@dataclass(frozen=True)
class FeedforwardFit(_Checked):
    ks: float = math.nan       # static friction, command units
    kv: float = math.nan       # per rad/s
    ka: float = math.nan       # per rad/s^2
    r2: float = math.nan
    samples: int = 0
    forward: int = 0
    backward: int = 0
    rmse: float = math.nan     # rad/s^2, of the acceleration model
    speed_error: float = math.nan   # RMS of (speed the model simulates from the commands - recorded) / RMS speed

    def summary(self) -> str:
        s = (f"feedforward: kS = {self.ks:.5g}, kV = {self.kv:.5g} /(rad/s), kA = {self.ka:.5g} /(rad/s^2); "
             f"R^2 = {self.r2:.4f} on {self.samples} samples ({self.forward} forward, {self.backward} backward), "
             f"acceleration RMSE {self.rmse:.3g} rad/s^2; the model run on the commands gives the speed within "
             f"{100 * self.speed_error:.1f} % RMS")
        return self._verdict(s)


def simulate_feedforward(t, u, ks: float, kv: float, ka: float, w0: float = 0.0) -> np.ndarray:
    """The speed of the motor u = kS sign(w) + kV w + kA dw/dt at the times t, from w0, with each command u[k] held
    until t[k+1]. Exact for the model: between zero crossings w -> w_inf + (w - w_inf) exp(-dt kV/kA) with
    w_inf = (u - kS sign(w))/kV; static friction holds a resting wheel while |u| <= kS; a wheel that reaches zero
    within a step stops there, or goes on the other way for the rest of the step when |u| > kS."""
    if not (ks >= 0 and kv > 0 and ka > 0):
        raise ValueError(f"simulate_feedforward needs kS >= 0, kV > 0, kA > 0 (got {ks}, {kv}, {ka})")
    t = np.asarray(t, dtype=float)
    u = np.asarray(u, dtype=float)
    w = np.empty(len(t))
    if not len(t):
        return w
    w[0] = x = float(w0)
    tau = ka / kv
    for k in range(len(t) - 1):
        drive = float(u[k])
        left = float(t[k + 1] - t[k])
        for _ in range(2):                  # at most one zero crossing per step: the way back is w_inf's side
            if x == 0.0 and abs(drive) <= ks:
                break
            sign = math.copysign(1.0, x if x != 0.0 else drive)
            w_inf = (drive - ks * sign) / kv
            nx = w_inf + (x - w_inf) * math.exp(-left / tau)
            if nx * sign >= 0.0:
                x = nx
                break
            left -= tau * math.log((x - w_inf) / (0.0 - w_inf))        # the time it took to reach zero
            x = 0.0
        w[k + 1] = x
    return w


def fit_feedforward(segments, min_speed_rad_s: float = 0.5, min_samples: int = 100, min_r2: float = 0.9,
                    max_relative_error: float = 0.2, max_speed_error: float = 0.12) -> FeedforwardFit:
    """kS, kV, kA of u = kS sign(w) + kV w + kA dw/dt by ordinary least squares on dw/dt = a w + b u + c sign(w):
    kS = -c/b, kV = -a/b, kA = 1/b.

    segments: recordings (t, u, w) -- time s, command (duty or volts), wheel speed rad/s -- each one continuous run:
    quasistatic ramps and dynamic steps, both directions. dw/dt is differentiated inside each segment (never across
    a boundary). Samples slower than `min_speed_rad_s` are left out: at standstill static friction holds the wheel
    and the model does not apply. Refused (ok False) when: too few samples, one direction missing, a gain not determined
    (relative standard error above `max_relative_error`, e.g. ramps only and no steps for kA), poor R^2, or a
    gain with the wrong sign (an inverted motor or encoder), or a model that, run on the recorded commands
    (simulate_feedforward, each segment from its first speed), misses the recorded speed by more than
    `max_speed_error` of its RMS. R^2 is of the differentiated speed, so it measures the speed's noise as much as the
    model; the simulated speed is the model's own check (a kV 30 % off misses by ~23 %, the identified one by ~5 %
    on the virtual robot)."""
    rows_w, rows_u, rows_a = [], [], []
    checked = []
    for seg in segments:
        t, u, w = (np.asarray(a, dtype=float) for a in seg)
        if not (t.shape == u.shape == w.shape) or t.ndim != 1:
            raise ValueError("each segment is (t, u, w), three 1-D arrays of one length")
        if len(t) < 3:
            continue
        if np.any(np.diff(t) <= 0):
            raise ValueError("segment times must increase")
        checked.append((t, u, w))
        acc = np.gradient(w, t)
        keep = np.abs(w) > min_speed_rad_s
        rows_w.append(w[keep])
        rows_u.append(u[keep])
        rows_a.append(acc[keep])
    w = np.concatenate(rows_w) if rows_w else np.zeros(0)
    u = np.concatenate(rows_u) if rows_u else np.zeros(0)
    acc = np.concatenate(rows_a) if rows_a else np.zeros(0)
    n, fwd, bwd = len(w), int(np.sum(w > 0)), int(np.sum(w < 0))
    problems = []
    if n < min_samples:
        problems.append(f"{n} samples above {min_speed_rad_s} rad/s; need at least {min_samples}")
    if fwd < min_samples // 4:
        problems.append(f"no excitation in the forward direction ({fwd} samples): run ramps and steps both ways")
    if bwd < min_samples // 4:
        problems.append(f"no excitation in the backward direction ({bwd} samples): run ramps and steps both ways")
    if n < 4 or fwd == 0 or bwd == 0:
        return FeedforwardFit(tuple(problems), samples=n, forward=fwd, backward=bwd)
    X = np.column_stack([w, u, np.sign(w)])
    coef, _res, rank, _sv = np.linalg.lstsq(X, acc, rcond=None)
    if rank < 3:
        problems.append("the regressors are linearly dependent (speed proportional to command everywhere): add steps")
        return FeedforwardFit(tuple(problems), samples=n, forward=fwd, backward=bwd)
    a, b, c = coef
    pred = X @ coef
    resid = acc - pred
    ss_res = float(resid @ resid)
    ss_tot = float(np.sum((acc - acc.mean()) ** 2))
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else 0.0
    sigma2 = ss_res / max(1, n - 3)
    cov = sigma2 * np.linalg.inv(X.T @ X)
    se = np.sqrt(np.diag(cov))
    if r2 < min_r2:
        problems.append(f"poor fit: R^2 = {r2:.3f} < {min_r2} (noisy speed, saturation, or a load that changed)")
    if b <= 0:
        problems.append("negative kA: acceleration opposes the command (is the motor or encoder direction inverted?)")
    else:
        for name, value, err in (("kA (dynamic steps)", b, se[1]), ("kV (quasistatic ramps)", a, se[0])):
            if abs(value) < 1e-12 or err / abs(value) > max_relative_error:
                problems.append(f"{name} not determined: relative standard error {err / max(abs(value), 1e-12):.0%}")
    ka = 1.0 / b if b != 0 else math.nan
    kv = -a / b if b != 0 else math.nan
    ks = -c / b if b != 0 else math.nan
    if b > 0 and kv < 0:
        problems.append(f"negative kV ({kv:.3g}): speed would grow without command")
    if b > 0 and ks < 0:
        problems.append(f"negative kS ({ks:.3g}): friction cannot push")
    speed_error = math.nan
    if b > 0 and kv > 0 and ks >= 0:
        err2 = sum(float(np.sum((simulate_feedforward(t, u, ks, kv, ka, w[0]) - w) ** 2)) for t, u, w in checked)
        speed_error = math.sqrt(err2 / sum(float(np.sum(w * w)) for _t, _u, w in checked))
        if not speed_error <= max_speed_error:
            problems.append(f"the model run on the recorded commands misses the recorded speed by "
                            f"{100 * speed_error:.0f} % RMS (> {100 * max_speed_error:.0f} %): a load that changed, "
                            "saturation, or a motor that is not first order")
    return FeedforwardFit(tuple(problems), ks, kv, ka, r2, n, fwd, bwd, math.sqrt(ss_res / n), speed_error)


# ------------------------------------------------------------------------------------------ relay autotune

RULES = {
    # name: (description, PI (kp/Ku, Ti/Tu), PID (kp/Ku, Ti/Tu, Td/Tu))
    "tyreus-luyben": ("Tyreus-Luyben: conservative, little overshoot, robust to model error",
                      (1 / 3.2, 2.2), (1 / 2.2, 2.2, 1 / 6.3)),
    "no-overshoot": ("Ziegler-Nichols 'no overshoot' variant", (0.2, 0.5), (0.2, 0.5, 1 / 3)),
    "some-overshoot": ("Ziegler-Nichols 'some overshoot' variant", (1 / 3, 0.5), (1 / 3, 0.5, 1 / 3)),
    "ziegler-nichols": ("classic Ziegler-Nichols: ~25 % overshoot, too aggressive for geared drives",
                        (0.45, 1 / 1.2), (0.6, 0.5, 0.125)),
}


@dataclass(frozen=True)
class RelayTuneResult(_Checked):
    ku: float = math.nan            # ultimate gain
    tu: float = math.nan            # ultimate period, s
    amplitude: float = math.nan     # of the process output oscillation
    cycles: int = 0
    rule: str = ""
    controller: str = "pi"
    kp: float = math.nan
    ki: float = math.nan            # parallel form: kp / Ti
    kd: float = 0.0                 # parallel form: kp * Td

    def summary(self) -> str:
        desc = RULES.get(self.rule, ("",))[0]
        s = (f"relay autotune: Ku = {self.ku:.5g}, Tu = {self.tu:.5g} s from {self.cycles} cycles of amplitude "
             f"{self.amplitude:.4g}\n  {self.controller.upper()} by {self.rule} ({desc}): kp = {self.kp:.5g}, "
             f"ki = {self.ki:.5g}, kd = {self.kd:.5g}")
        return self._verdict(s)


def relay_autotune(t, y, relay_amplitude: float, hysteresis: float = 0.0, rule: str = "tyreus-luyben",
                   controller: str = "pi", min_cycles: int = 3, discard_cycles: int = 1) -> RelayTuneResult:
    """Astrom-Hagglund relay experiment: the controller output switched between +-relay_amplitude (around its bias)
    whenever the process output crossed the setpoint (+- hysteresis) made the output y oscillate. From the steady
    oscillation: Tu = its period, a = its amplitude, Ku = 4 d / (pi sqrt(a^2 - eps^2)) (describing function), then
    gains by `rule` (default Tyreus-Luyben, conservative; see RULES). The first `discard_cycles` are the transient."""
    if rule not in RULES:
        raise ValueError(f"rule is one of {', '.join(RULES)}")
    if controller not in ("pi", "pid"):
        raise ValueError("controller is 'pi' or 'pid'")
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError("t and y are 1-D arrays of one length")
    problems = []
    yc = y - 0.5 * (y.max() + y.min()) if len(y) else y
    # upward crossings of the oscillation's middle, interpolated between samples. A crossing counts only after the
    # output was a third of the half-swing below the middle (a Schmitt trigger): the measured speed is noisy (an
    # encoder's edge jitter), and a noisy sample pair straddling the middle is no new cycle.
    band = (y.max() - y.min()) / 6.0 if len(y) else 0.0
    starts = []
    armed = False
    for i in range(len(yc) - 1):
        if yc[i] < -band:
            armed = True
        if armed and yc[i] < 0 <= yc[i + 1]:
            starts.append(i)
            armed = False
    idx = np.asarray(starts, dtype=int)
    crossings = t[idx] + (t[idx + 1] - t[idx]) * (-yc[idx] / (yc[idx + 1] - yc[idx]))
    crossings = crossings[discard_cycles:]
    cycles = len(crossings) - 1
    if cycles < min_cycles:
        return RelayTuneResult((f"{max(cycles, 0)} full oscillation cycles after the transient; need {min_cycles}",),
                               cycles=max(cycles, 0), rule=rule, controller=controller)
    # recentre on the steady part only, then measure each cycle
    steady = (t >= crossings[0]) & (t <= crossings[-1])
    mid = 0.5 * (y[steady].max() + y[steady].min())
    periods = np.diff(crossings)
    amps = np.array([0.5 * (y[(t >= a) & (t < b)].max() - y[(t >= a) & (t < b)].min())
                     for a, b in zip(crossings[:-1], crossings[1:], strict=True)])
    tu = float(periods.mean())
    amp = float(amps.mean())
    if periods.std() > 0.1 * tu:
        problems.append(f"period varies {periods.std() / tu:.0%} between cycles: not a steady oscillation")
    if amps.std() > 0.15 * amp:
        problems.append(f"amplitude varies {amps.std() / amp:.0%} between cycles: not a steady oscillation "
                        f"(still settling, or a load disturbance)")
    if amp <= hysteresis:
        problems.append(f"oscillation amplitude {amp:.4g} is not above the hysteresis {hysteresis:.4g}")
        return RelayTuneResult(tuple(problems), amplitude=amp, tu=tu, cycles=cycles, rule=rule, controller=controller)
    if abs(mid - 0.5 * (y.max() + y.min())) > 0.2 * amp:
        problems.append("the oscillation drifts (its centre moved): relay bias or setpoint changed during the test")
    ku = 4 * relay_amplitude / (math.pi * math.sqrt(amp * amp - hysteresis * hysteresis))
    if controller == "pi":
        kp_f, ti_f = RULES[rule][1]
        kp, ti, td = kp_f * ku, ti_f * tu, 0.0
    else:
        kp_f, ti_f, td_f = RULES[rule][2]
        kp, ti, td = kp_f * ku, ti_f * tu, td_f * tu
    return RelayTuneResult(tuple(problems), ku, tu, amp, cycles, rule, controller, kp, kp / ti, kp * td)
