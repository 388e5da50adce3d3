# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Wheel-speed gains from the identified motor model, for a requested step response (docs/tuning.md, "Designing
the gains"). Pure functions on numbers: no board, no I/O; `viperdrive tune --design` wires them to a board.

The model is what `calibrate feedforward` identifies, u = kS sign(w) + kV w + kA dw/dt (duty, wheel rad/s):
a first-order motor with gain K = 1/kV (rad/s per duty) and time constant tau_m = kA/kV. The loop adds a delay
and a lag: the duty computed in a period is held for the next one (zero-order hold, T/2 on average), the speed
is a count difference over the last period (T/2), the PWM updates on its next cycle (1/(2 f_pwm)), and the
speed estimate passes a one-pole filter (vel_tau). Skogestad's half rule folds the smaller of the two lags
half into the delay and half into the larger lag: a first-order-plus-delay model (K, tau, theta).

Gains, for a closed-loop time constant tau_c (the request's settling time: t_s = theta + tau_c ln(1/band)):
  kp = tau / (K (tau_c + theta))                  SIMC (Skogestad 2003), the proportional gain
  tau_I = min(tau, 4 (tau_c + theta))             SIMC's integral time, used as is when there is no feedforward
The board adds the model as feedforward (kS sign + kV w) to the setpoint. With it the wheel follows a step at the
motor's own pace, and the integrator must give back the error area the lag leaves (it ends where it started:
the feedforward already supplies the steady duty), which with SIMC's tau_I overshoots by 10 % and more. For the
first-order model with feedforward the error of a step is E/R = tau s / (tau s^2 + (1 + K kp) s + K ki): two
closed-loop poles p1 > p2 with p1 + p2 = (1 + K kp)/tau and p1 p2 = K ki/tau (pole placement for PI on a
first-order model: Astrom & Murray, Feedback Systems, 2nd ed., chapter PID Control), and an overshoot that depends only
on rho = p1/p2. rho is chosen for the requested overshoot, which gives
  ki = kV tau p1 p2,  p1 = (1 + K kp)/tau * rho/(1 + rho),  p2 = p1/rho     (never above SIMC's kp/tau_I)
  windup_tau = (kS + kV r + kp r - max_duty) / (ki r), clamped to [max(T, tau_D), tau_I]
      the back-calculation tracking time. Astrom & Hagglund (Advanced PID Control, ISA 2006, integrator windup) put Tt
      between Td and Ti. Within that range this Tt is the one at which, with the wheel blocked at the step r, the
      back-calculation holds the integrator at zero (its equilibrium ki e Tt = u - out): the feedforward already
      knows the duty the free wheel needs, so on release the output leaves saturation at once and the wheel
      does not overshoot on a wound-up integral. A longer Tt winds the integrator up to ki r Tt; a shorter one
      makes the short saturation at the start of every step take a bite out of the integrator.
PID (SIMC's rule for a second-order-plus-delay model: both lags kept): kp = Kc (1 + tau_D/tau_I),
ki = Kc/tau_I, kd = Kc tau_D with Kc = tau1/(K (tau_c + theta)), tau_D = tau2, and the derivative filter
kd_tau = tau_D / N, N = 10.

The rule's figures are those of a linear, delay-free model; `predict()` simulates the board's law on the model
(feedforward, term and output clamps, back-calculation, the filter, the delays) and `design()` lowers ki (and if
need be raises or lowers tau_c) until the predicted step meets the request. `limits()` says how fast the motor
can go at all.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from viperdrive.shared import params as PARAMS
from viperdrive.shared import stepmetrics

from ..errors import BadValue
from ..stats import finite_or_none

__all__ = ["MotorModel", "Request", "Limit", "Design", "fopdt", "limits", "rho_for_overshoot", "overshoot_of_rho",
           "tracking_time", "pi_gains", "pid_gains", "predict", "design"]

TERM_MAX = 4.0          # the board's per-term duty limit (docs/firmware.md, fixed-point scaling)
I_TERM_MAX = 1.0        # the board's per-period integrator change limit
NOISE_DUTY = 0.02       # design limit: one encoder count in one period may move the P (or D) term by this duty
D_FILTER_N = 10         # derivative filter: kd_tau = tau_D / N
LIFTED_ACCEL = 5000.0   # max_accel during a step test with the ramp lifted (viperdrive.tuning.steptest)


@dataclass(frozen=True)
class MotorModel:
    """The identified motor (calibrate feedforward) and the loop it sits in."""
    ks: float               # duty: static friction
    kv: float               # duty per rad/s
    ka: float               # duty per rad/s^2
    control_hz: int
    counts_per_rev: int
    vel_tau: float = 0.01   # s: the board's speed filter
    max_duty: float = 1.0
    pwm_hz: float = 20000.0

    def __post_init__(self):
        for name in ("kv", "ka", "control_hz", "counts_per_rev", "max_duty", "pwm_hz"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise BadValue(f"motor model: {name} = {v!r} must be a positive number"
                               + (" (run `viperdrive calibrate feedforward` first: it identifies kS, kV, kA)"
                                  if name in ("kv", "ka") else ""))
        for name in ("ks", "vel_tau"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise BadValue(f"motor model: {name} = {v!r} must be a number >= 0")
        if self.ks >= self.max_duty:
            raise BadValue(f"motor model: kS = {self.ks:g} duty needs all of max_duty = {self.max_duty:g} to "
                           f"break away: the motor cannot be driven")

    @property
    def period(self) -> float:
        return 1.0 / self.control_hz

    @property
    def gain(self) -> float:
        """K: rad/s per duty."""
        return 1.0 / self.kv

    @property
    def tau_motor(self) -> float:
        return self.ka / self.kv

    @property
    def delay(self) -> float:
        """The loop's pure delay: zero-order hold T/2 + count difference T/2 + PWM update 1/(2 f_pwm)."""
        return self.period + 0.5 / self.pwm_hz

    @property
    def top_speed(self) -> float:
        """rad/s the motor reaches at max_duty."""
        return (self.max_duty - self.ks) / self.kv


def fopdt(m: MotorModel) -> tuple[float, float]:
    """(tau, theta): Skogestad's half rule on the motor lag and the speed filter, plus the loop delay."""
    big, small = max(m.tau_motor, m.vel_tau), min(m.tau_motor, m.vel_tau)
    return big + small / 2, m.delay + small / 2


@dataclass(frozen=True)
class Request:
    settle: float           # s: into the band and staying there
    overshoot: float        # fraction of the step (0.05 = 5 %)
    step: float = 10.0      # rad/s
    band: float = stepmetrics.BAND

    def __post_init__(self):
        if not (math.isfinite(self.settle) and self.settle > 0):
            raise BadValue(f"settling time {self.settle!r} s must be > 0")
        if not (math.isfinite(self.overshoot) and 0 < self.overshoot < 1):
            raise BadValue(f"overshoot {self.overshoot!r} must be a fraction in (0, 1), e.g. 0.05 for 5 %")
        if not (math.isfinite(self.step) and self.step != 0):
            raise BadValue(f"step {self.step!r} rad/s must be nonzero")
        if not 0 < self.band < 1:
            raise BadValue(f"band {self.band!r} must be a fraction in (0, 1)")

    def tau_c(self, theta: float) -> float:
        """The first-order closed loop that settles in `settle`: theta + tau_c ln(1/band) = settle."""
        return (self.settle - theta) / math.log(1.0 / self.band)


@dataclass(frozen=True)
class Limit:
    """One bound on the response. kind "motor": on any response to the step (settle_min, s); kind "feedback": on
    the loop's closed-loop time constant (tau_c_min, s), i.e. on how fast it can correct errors and loads."""
    name: str               # "acceleration", "speed", "delay", "noise"
    kind: str               # "motor" | "feedback"
    settle_min: float       # s (inf: impossible at this step)
    tau_c_min: float        # s (0 for motor limits)
    why: str


def limits(m: MotorModel, step: float, band: float = stepmetrics.BAND) -> list[Limit]:
    """What bounds the response to a step of `step` rad/s.

    speed (motor): the final speed needs kS + kV step duty; above max_duty no gains help.
    acceleration (motor): the fastest any controller gets there is full duty from rest (time-optimal):
    w(t) = w_max (1 - exp(-t/tau_m)), w_max = (max_duty - kS)/kV, so the band edge (1 - band) step is reached
    after tau_m ln(w_max / (w_max - (1 - band) step)), seen theta later.
    delay (feedback): SIMC's robustness bound tau_c >= theta (gain margin ~3, Ms ~1.6 on the model).
    noise (feedback): one count in one period moves the filtered speed by alpha hz 2 pi/cpr; kp times that must
    stay <= NOISE_DUTY, and kp = kV tau/(tau_c + theta) grows as tau_c shrinks."""
    tau, theta = fopdt(m)
    r = abs(step)
    lnb = math.log(1.0 / band)
    out = []
    need = m.ks + m.kv * r
    w_max = m.top_speed
    edge = (1.0 - band) * r
    if need > m.max_duty:
        out.append(Limit("speed", "motor", math.inf, 0.0,
                         f"{r:g} rad/s needs kS + kV x step = {need:.3f} duty > max_duty {m.max_duty:g}: the motor "
                         f"tops out at {w_max:.2f} rad/s"))
    else:
        out.append(Limit("speed", "motor", 0.0, 0.0,
                         f"{r:g} rad/s needs {need:.3f} duty of max_duty {m.max_duty:g} (top speed "
                         f"{w_max:.2f} rad/s)"))
    t_acc = m.tau_motor * math.log(w_max / (w_max - edge)) + theta if edge < w_max else math.inf
    out.append(Limit("acceleration", "motor", t_acc, 0.0,
                     f"full duty from rest reaches {edge:.2f} rad/s after {(t_acc - theta) * 1e3:.1f} ms "
                     f"(+ theta): kA {m.ka:.3g} duty/(rad/s^2) with {m.max_duty - m.ks:.3f} duty above kS"))
    out.append(Limit("delay", "feedback", theta + lnb * theta, theta,
                     f"SIMC robustness bound tau_c >= theta = {theta * 1e3:.1f} ms (period, PWM, filter)"))
    alpha = m.period / (m.vel_tau + m.period)
    one_count = alpha * m.control_hz * 2 * math.pi / m.counts_per_rev    # rad/s step of the filtered estimate
    kp_max = NOISE_DUTY / one_count
    tc_noise = max(0.0, m.kv * tau / kp_max - theta)
    out.append(Limit("noise", "feedback", theta + lnb * tc_noise, tc_noise,
                     f"kp <= {kp_max:.3g}: one count in one period ({one_count:.3f} rad/s after the filter) "
                     f"moves the output by <= {NOISE_DUTY:g} duty"))
    return out


def overshoot_of_rho(rho: float) -> float:
    """Peak overshoot (fraction of the step) of y = 1 - e, e = (p1 exp(-p1 t) - p2 exp(-p2 t))/(p1 - p2), as a
    function of rho = p1/p2 > 1: the error's most negative value, at p1 t = 2 rho ln(rho)/(rho - 1)."""
    if not rho > 1.0:
        raise ValueError("rho must be > 1")
    x = 2 * rho * math.log(rho) / (rho - 1)
    return (math.exp(-x / rho) - rho * math.exp(-x)) / (rho - 1)


def rho_for_overshoot(overshoot: float) -> float:
    """The pole ratio rho whose overshoot is `overshoot` (it falls monotonically with rho)."""
    if not 0 < overshoot < 1:
        raise ValueError("overshoot is a fraction in (0, 1)")
    lo, hi = 1.0 + 1e-9, 1e9
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if overshoot_of_rho(mid) > overshoot:
            lo = mid
        else:
            hi = mid
    return hi


def tracking_time(m: MotorModel, kp: float, ki: float, step: float, ti: float, td: float = 0.0) -> float:
    """windup_tau by the rule in the module docstring: zero integrator at the back-calculation equilibrium of a stall at
    `step`, clamped to [max(T, td), ti]."""
    r = abs(step)
    lo, hi = max(m.period, td), max(ti, m.period, td)
    if not ki > 0:
        return hi
    tt = (m.ks + m.kv * r + kp * r - m.max_duty) / (ki * r)
    return min(max(tt, lo), hi)


def pi_gains(m: MotorModel, tau_c: float, rho: float, feedforward: bool = True, step: float = 10.0) -> dict:
    """kp, ki, windup_tau (and kd = 0) by the rules in the module docstring, windup_tau for a stall at `step` rad/s."""
    tau, theta = fopdt(m)
    kp = m.kv * tau / (tau_c + theta)
    ti_simc = min(tau, 4 * (tau_c + theta))
    ki = kp / ti_simc
    if feedforward:
        s = (1 + kp / m.kv) / tau
        p1 = s * rho / (1 + rho)
        ki = min(ki, m.kv * tau * p1 * (p1 / rho))
    return {"kp": kp, "ki": ki, "kd": 0.0, "windup_tau": tracking_time(m, kp, ki, step, kp / ki)}


def pid_gains(m: MotorModel, tau_c: float, rho: float, feedforward: bool = True, step: float = 10.0) -> dict:
    """SIMC PID for the second-order-plus-delay model (series form, converted to the board's parallel form),
    with the same feedforward bound on the integral as pi_gains."""
    tau1, tau2 = max(m.tau_motor, m.vel_tau), min(m.tau_motor, m.vel_tau)
    theta = m.delay
    kc = m.kv * tau1 / (tau_c + theta)
    ti = min(tau1, 4 * (tau_c + theta))
    td = tau2
    kp = kc * (1 + td / ti)
    ki = kc / ti
    if feedforward:
        s = (1 + kp / m.kv) / tau1
        p1 = s * rho / (1 + rho)
        ki = min(ki, m.kv * tau1 * p1 * (p1 / rho))
    return {"kp": kp, "ki": ki, "kd": kc * td, "kd_tau": max(td / D_FILTER_N, 0.0005),
            "windup_tau": tracking_time(m, kp, ki, step, kp / ki, td)}


def _clamp(x: float, lim: float) -> float:
    return lim if x > lim else (-lim if x < -lim else x)


def predict(m: MotorModel, gains: dict, step: float, seconds: float = 0.6, accel_rad_s2: float = LIFTED_ACCEL,
            ka_ff: float = 0.0, substeps: int = 8) -> tuple[list, list]:
    """The step response of the model under the board's law (docs/firmware.md, "The law"): feedforward
    kS sign + kV sp + ka_ff dsp/dt, P on the error, D on the filtered measurement, per-term and output clamps,
    back-calculation min(1, dt/windup_tau), the one-pole speed filter, the count-difference speed, the held duty.
    The motor: kA dw/dt = u - kS sign(w) - kV w, held by static friction while |u| <= kS at rest, integrated
    exactly over `substeps` pieces of each period. No quantization, noise or wheel slip.
    step: rad/s; the setpoint ramps at accel_rad_s2 (the board's max_accel, lifted for a step test).
    -> (t, estimated speed) at the control rate, t = 0 at the step."""
    T = m.period
    h = T / substeps
    kp, ki, kd = gains["kp"], gains["ki"], gains.get("kd", 0.0)
    windup_tau = gains["windup_tau"]
    aw = min(1.0, T / windup_tau)
    alpha = T / (m.vel_tau + T)
    alpha_d = T / (gains.get("kd_tau", 0.01) + T)
    dsp_max = accel_rad_s2 * T
    decay = math.exp(-h / m.tau_motor)
    w = pos = prev_pos = v = v_prev = df = integ = sp = out = 0.0
    ts, ys = [], []
    for k in range(int(round(seconds * m.control_hz)) + 1):
        # the motor during the period that just ended, driven by the duty held from the one before: exact
        # first-order steps (w -> w_inf with tau_m), friction kS against the motion (at rest: against the duty,
        # and holding the wheel while |duty| <= kS)
        for _ in range(substeps):
            if w > 0.0 or (w == 0.0 and out > m.ks):
                drive = out - m.ks
            elif w < 0.0 or (w == 0.0 and out < -m.ks):
                drive = out + m.ks
            else:
                continue                                # held by static friction
            w_inf = drive / m.kv
            w_new = w_inf + (w - w_inf) * decay
            if (w > 0.0 and w_new < 0.0) or (w < 0.0 and w_new > 0.0):
                # friction stops it on the way (it does not push it backwards): the part up to the stop
                t_stop = -m.tau_motor * math.log(w_inf / (w_inf - w))
                pos += w_inf * t_stop + (w - w_inf) * m.tau_motor * (1.0 - math.exp(-t_stop / m.tau_motor))
                w = 0.0
                continue
            pos += w_inf * h + (w - w_inf) * m.tau_motor * (1.0 - decay)
            w = w_new
        raw = (pos - prev_pos) / T
        prev_pos = pos
        v += alpha * (raw - v)
        dsp = _clamp(step - sp, dsp_max)
        sp += dsp
        err = sp - v
        tp = _clamp(kp * err, TERM_MAX)
        df += alpha_d * ((v - v_prev) - df)
        v_prev = v
        td = _clamp(kd * m.control_hz * df, TERM_MAX)
        tf = _clamp(m.kv * sp, TERM_MAX) + _clamp(ka_ff * dsp / T, TERM_MAX) + (m.ks if sp > 0 else -m.ks)
        u = tf + tp - td + integ
        out = _clamp(u, m.max_duty)
        integ = _clamp(integ + _clamp(ki * T * err, I_TERM_MAX) + _clamp(aw * (out - u), I_TERM_MAX), TERM_MAX)
        ts.append(k * T)
        ys.append(v)
    return ts, ys


@dataclass
class Design:
    model: MotorModel
    request: Request
    controller: str
    tau: float
    theta: float
    tau_c: float
    rho: float
    gains: dict
    predicted: dict                     # shared.stepmetrics figures of predict() at the request's band
    predicted_2pct: float | None        # settling into 2 %
    limits: list
    motor_limit: Limit                  # the motor limit that allows the least (best settling of any response)
    feedback_limit: Limit               # the feedback limit that allows the least (fastest tau_c)
    feasible: bool
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    @property
    def best_settle(self) -> float:
        return self.motor_limit.settle_min

    def to_dict(self) -> dict:
        """Plain data (JSON: an infinite limit is null)."""
        d = finite_or_none(asdict(self))
        d["motor_limit"] = self.motor_limit.name
        d["feedback_limit"] = self.feedback_limit.name
        d["best_settle"] = finite_or_none(self.best_settle)
        return d

    def summary(self) -> str:
        m, r, g = self.model, self.request, self.gains
        lines = [
            f"model: kS {m.ks:.4g} duty, kV {m.kv:.4g} duty/(rad/s), kA {m.ka:.4g} duty/(rad/s^2) -> K "
            f"{m.gain:.3g} rad/s per duty, motor tau {m.tau_motor * 1e3:.1f} ms; speed filter {m.vel_tau * 1e3:.1f} "
            f"ms; delay {m.delay * 1e3:.2f} ms (period {m.period * 1e3:.1f} ms, PWM {m.pwm_hz / 1e3:g} kHz)",
            f"first order plus delay (half rule): tau {self.tau * 1e3:.1f} ms, theta {self.theta * 1e3:.1f} ms",
            f"request: {r.step:g} rad/s step, settling ({r.band * 100:g} %) <= {r.settle * 1e3:.0f} ms, overshoot "
            f"<= {r.overshoot * 100:g} %",
            "limits:",
        ]
        for lim in self.limits:
            if lim.kind == "motor":
                t = "impossible" if math.isinf(lim.settle_min) else (
                    "-" if lim.settle_min == 0 else f"settling >= {lim.settle_min * 1e3:.0f} ms")
            else:
                t = f"tau_c >= {lim.tau_c_min * 1e3:.1f} ms"
            mark = "  <- binds" if lim is self.motor_limit or lim is self.feedback_limit else ""
            lines.append(f"  {lim.name:<13} {t:<22} {lim.why}{mark}")
        best = "none" if math.isinf(self.best_settle) else f"{self.best_settle * 1e3:.0f} ms"
        lines.append(f"best settling ({r.band * 100:g} %) the motor allows: {best} ({self.motor_limit.name} binds); "
                     f"fastest feedback tau_c {self.feedback_limit.tau_c_min * 1e3:.1f} ms "
                     f"({self.feedback_limit.name} binds)")
        if not self.feasible:
            lines += ["NOT FEASIBLE: " + p for p in self.problems]
            return "\n".join(lines)
        gain_txt = f"kp {g['kp']:.4g}, ki {g['ki']:.4g}, kd {g['kd']:.4g}"
        if g.get("kd"):
            gain_txt += f", kd_tau {g['kd_tau']:.4g}"
        lines.append(f"{self.controller.upper()}: tau_c {self.tau_c * 1e3:.1f} ms, pole ratio {self.rho:.3g}: "
                     f"{gain_txt}, windup_tau {g['windup_tau']:.4g} s")
        p = self.predicted
        lines.append(f"predicted on the model: rise {_ms(p['rise_s'])}, overshoot {p['overshoot_pct']:.1f} %, "
                     f"settling ({r.band * 100:g} %) {_ms(p['settling_s'])}, (2 %) {_ms(self.predicted_2pct)}")
        lines += ["note: " + n for n in self.notes]
        return "\n".join(lines)


def _ms(x) -> str:
    return "never" if x is None else f"{x * 1e3:.0f} ms"


def _clip_param(name: str, value: float) -> float:
    p = PARAMS.by_name(name)
    return min(max(value, p[PARAMS.MIN]), p[PARAMS.MAX])


def design(m: MotorModel, req: Request, controller: str = "pi", feedforward: bool = True,
           seconds: float = 0.6) -> Design:
    """Gains for the request (see the module docstring), checked on the model: kp from SIMC at the request's
    tau_c (raised x1.2 while P alone overshoots against the filter's lag and the delay); ki from pole placement,
    lowered by bisection to the largest value whose predicted step stays within the overshoot; tau_c lowered
    (x0.85, not below the feedback limit) while the predicted settling is too slow. A request faster than the
    motor allows comes back with feasible=False, the reason and the best settling; no gains are invented."""
    if controller not in ("pi", "pid"):
        raise BadValue("controller is 'pi' or 'pid'")
    tau, theta = fopdt(m)
    lims = limits(m, req.step, req.band)
    motor = max((lim for lim in lims if lim.kind == "motor"), key=lambda lim: lim.settle_min)
    fb = max((lim for lim in lims if lim.kind == "feedback"), key=lambda lim: lim.tau_c_min)
    problems = []
    if math.isinf(motor.settle_min):
        problems.append(f"{motor.name}: {motor.why}")
    elif req.settle < motor.settle_min:
        problems.append(f"settling {req.settle * 1e3:.0f} ms is faster than the motor allows: {motor.name} limit, "
                        f"{motor.why}; the best is {motor.settle_min * 1e3:.0f} ms")
    rho = rho_for_overshoot(req.overshoot)
    tau_c = req.tau_c(theta)
    notes = []
    if not problems and tau_c < fb.tau_c_min:
        notes.append(f"settling {req.settle * 1e3:.0f} ms asks for tau_c {max(tau_c, 0.0) * 1e3:.1f} ms; the "
                     f"{fb.name} limit holds the feedback at tau_c {fb.tau_c_min * 1e3:.1f} ms ({fb.why})")
        tau_c = fb.tau_c_min
    empty = {"rise_s": None, "overshoot_pct": 0.0, "settling_s": None, "final": 0.0, "peak": 0.0, "band": req.band}
    if problems:
        return Design(m, req, controller, tau, theta, tau_c, rho, {}, empty, None, lims, motor, fb, False, problems)
    rule = pi_gains if controller == "pi" else pid_gains
    target = req.overshoot * 100

    def figures(g):
        t, y = predict(m, g, req.step, seconds)
        return t, y, stepmetrics.step_metrics(t, y, 0.0, req.step, req.band)

    p_bound = False             # tau_c was raised because P alone overshoots: never lower it again
    gains = None
    for _ in range(30):
        rule_gains = {k: _clip_param(k, v) for k, v in rule(m, tau_c, rho, feedforward, req.step).items()}
        if figures(dict(rule_gains, ki=0.0, windup_tau=10.0))[2]["overshoot_pct"] > 0.8 * target:
            # P against the lag of the filter and the delay overshoots by itself: only a weaker P helps
            tau_c *= 1.2
            p_bound = True
            continue
        # the integrator gives back the error area of the lag: the largest ki (up to the rule's) whose predicted
        # step stays within the overshoot, by bisection on the model
        lo, hi = 0.0, rule_gains["ki"]
        gains = rule_gains

        def windup_tau_for(ki, g=rule_gains):
            return tracking_time(m, g["kp"], ki, req.step, g["kp"] / ki, g.get("kd", 0.0) / g["kp"])

        t, y, pm = figures(gains)
        if pm["overshoot_pct"] > target:
            for _ in range(14):
                mid = 0.5 * (lo + hi)
                trial = dict(rule_gains, ki=_clip_param("ki", mid),
                             windup_tau=_clip_param("windup_tau", windup_tau_for(mid)))
                tt, yy, mm = figures(trial)
                if mm["overshoot_pct"] > target:
                    hi = mid
                else:
                    lo, gains, t, y, pm = mid, trial, tt, yy, mm
            if lo == 0.0:
                gains = dict(rule_gains, ki=_clip_param("ki", hi / 64),
                             windup_tau=_clip_param("windup_tau", windup_tau_for(hi / 64)))
                t, y, pm = figures(gains)
        slow = pm["settling_s"] is None or pm["settling_s"] > req.settle
        if slow and not p_bound and tau_c * 0.85 >= fb.tau_c_min:
            tau_c *= 0.85
            continue
        break
    if gains is None:           # P overshot at every tau_c tried: take the last one with the rule's ki
        gains = rule_gains
        t, y, pm = figures(gains)
    high = pm["overshoot_pct"] > target
    ki_share = gains["ki"] / rule_gains["ki"]
    load_tc = (m.kv + gains["kp"]) / gains["ki"]
    notes.append(f"ki is {ki_share:.0%} of the pole-placement value (the largest the predicted overshoot allows); "
                 f"the integral takes out a load change or model error with a time constant of "
                 f"(kV + kp)/ki = {load_tc * 1e3:.0f} ms")
    if p_bound:
        notes.append(f"P against the speed filter's lag and the delay overshoots at a smaller tau_c: held at "
                     f"{tau_c * 1e3:.1f} ms")
    if high or slow:
        notes.append("the predicted step misses the request even at the feedback limit: expect the same on the "
                     "board")
    if feedforward and pm["settling_s"] is not None and pm["settling_s"] < 0.7 * req.settle:
        notes.append(f"the feedforward (kS + kV w) carries the step: it settles in {_ms(pm['settling_s'])}, faster "
                     f"than requested (a gentler start is the ramp's job: max_accel)")
    p2 = stepmetrics.step_metrics(t, y, 0.0, req.step, 0.02)["settling_s"]
    return Design(m, req, controller, tau, theta, tau_c, rho, gains, pm, p2, lims, motor, fb, True, [], notes)
