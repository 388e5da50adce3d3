# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The filter: robot_localization's 15-variable omnidirectional EKF, with a 2-D mode.

State (full order, robot_localization's): x, y, z, roll, pitch, yaw (world frame), vx, vy, vz, vroll, vpitch, vyaw
(body frame), ax, ay, az (body frame). In 2-D mode the filter runs on the 8 planar variables (x, y, yaw, vx, vy,
vyaw, ax, ay); z, roll, pitch and their rates are held at exactly zero. With those at zero the 3-D model decouples
into exactly this planar model (every Jacobian term coupling them vanishes), so it is the same filter as
robot_localization's "fuse zeros for the 3-D variables", minus seven useless rows per update.
"""
from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..transforms import wrap_angle

log = logging.getLogger("viperdrive.estimation")

STATE_SIZE = 15
X, Y, Z, ROLL, PITCH, YAW, VX, VY, VZ, VROLL, VPITCH, VYAW, AX, AY, AZ = range(STATE_SIZE)
STATE_NAMES = ("x", "y", "z", "roll", "pitch", "yaw", "vx", "vy", "vz", "vroll", "vpitch", "vyaw", "ax", "ay", "az")
ANGLES = (ROLL, PITCH, YAW)
PLANAR = (X, Y, YAW, VX, VY, VYAW, AX, AY)            # the variables a 2-D filter carries, in its internal order
TWO_D_VARIANCE = 1e-9   # reported variance of the variables a 2-D filter holds at zero (keeps P positive definite)
MIN_MEASUREMENT_VARIANCE = 1e-9   # robot_localization's floor for a zero or tiny measurement variance
# the covariance update takes the Joseph form when a measured variance is below this share of the innovation's:
# there the short form P - K H P loses the remaining variance to rounding (its error is about 2e-16 P / R)
JOSEPH_BELOW = 1e-8

# robot_localization's defaults (params/ekf.yaml), x y z roll pitch yaw vx vy vz vroll vpitch vyaw ax ay az
DEFAULT_PROCESS_NOISE = np.diag([0.05, 0.05, 0.06, 0.03, 0.03, 0.06, 0.025, 0.025, 0.04, 0.01, 0.01, 0.02,
                                 0.01, 0.01, 0.015])
DEFAULT_INITIAL_COVARIANCE = np.eye(STATE_SIZE) * 1e-9

# outcomes of Ekf.process()
USED = "used"
REJECTED = "rejected"            # failed the Mahalanobis gate
TOO_LATE = "too_late"            # older than the history (or than the first measurement): dropped, counted, logged
LATE_FUSED = "late_fused"        # older than the filter time without smoothing: fused at the current time
NOTHING = "nothing"              # selects no variable the filter carries (e.g. z in 2-D mode)
REACQUIRED = "reacquired"        # rejected by the gate, but the re-acquisition rule opened it (Ekf docstring)


@dataclass(slots=True)
class Measurement:
    """One sensor reading in full-state order. `mask` is the update vector (which variables it measures); values
    that are NaN are skipped even when selected. `part` names the rejection threshold in use (pose/twist/accel)."""
    time_s: float
    sensor: str
    values: np.ndarray
    covariance: np.ndarray
    mask: np.ndarray
    threshold: float = math.inf
    part: str = "pose"
    reacquire: bool = False      # set when the re-acquisition rule fused it: a replay fuses it the same way


@dataclass
class SensorStatus:
    name: str
    timeout_s: float
    used: int = 0
    rejected: int = 0
    too_late: int = 0
    late_fused: int = 0
    consecutive_rejected: int = 0
    last_time_s: float | None = None
    reacquire_after: int = 0          # 0: robot_localization's gate, never opened (the lock-out stays)
    reacquired: int = 0
    last_reacquired: float | None = None     # measurement time of the last re-acquisition
    # the innovations (and their measurement covariances) of the rejections in a row, newest last
    rejected_innovations: list = field(default_factory=list)

    def state(self, now: float) -> str:
        """waiting (nothing yet), active (a measurement within `timeout_s`), stale (silent longer than that)."""
        if self.last_time_s is None:
            return "waiting"
        return "active" if now - self.last_time_s <= self.timeout_s else "stale"


@dataclass
class EkfConfig:
    process_noise: np.ndarray = field(default_factory=lambda: DEFAULT_PROCESS_NOISE.copy())
    initial_covariance: np.ndarray = field(default_factory=lambda: DEFAULT_INITIAL_COVARIANCE.copy())
    initial_state: np.ndarray = field(default_factory=lambda: np.zeros(STATE_SIZE))
    two_d_mode: bool = False
    dynamic_process_noise: bool = False
    smooth_lagged_data: bool = False
    history_length: float = 0.0
    sensor_timeout: float = 1.0 / 30.0


class Ekf:
    """Predict with the omnidirectional model and its Jacobian, correct per measurement with its own R, gate by
    Mahalanobis distance, keep P symmetric positive definite (Joseph form), rewind and replay lagged data.

    Typical use: `ekf.process(measurement)` for each reading (any order; late ones are rewound and replayed when
    `smooth_lagged_data`), `ekf.predicted(t)` for the estimate at an output time, `ekf.status(now)` per sensor.
    """

    def __init__(self, config: EkfConfig | None = None):
        self.config = cfg = config or EkfConfig()
        self.two_d = bool(cfg.two_d_mode)
        self._idx = np.array(PLANAR if self.two_d else range(STATE_SIZE))
        self.n = len(self._idx)
        self._to_internal = -np.ones(STATE_SIZE, dtype=int)
        self._to_internal[self._idx] = np.arange(self.n)
        self._angle_internal = np.array([self._to_internal[a] for a in ANGLES if self._to_internal[a] >= 0])
        self._angles = tuple(self._angle_internal.tolist())
        self._layouts: dict = {}
        ix = np.ix_(self._idx, self._idx)
        self.Q = np.array(cfg.process_noise, dtype=float)[ix]
        self.x = np.array(cfg.initial_state, dtype=float)[self._idx]
        self.P = np.array(cfg.initial_covariance, dtype=float)[ix]
        self._eye = np.eye(self.n)
        self.time_s: float | None = None          # time of the last processed measurement (or prediction)
        self.initialized = False
        self.sensors: dict[str, SensorStatus] = {}
        self.too_late_total = 0
        self._fresh: Measurement | None = None    # the measurement process() is handling (not a replay)
        # history for smooth_lagged_data: (time, x, P, initialized) after each step, and the measurements
        self._states: deque = deque()
        self._measurements: deque = deque()

    # ------------------------------------------------------------------------------------------------ inspection

    @property
    def state(self) -> np.ndarray:
        """The 15-variable state (variables a 2-D filter does not carry are 0)."""
        full = np.zeros(STATE_SIZE)
        full[self._idx] = self.x
        return full

    @property
    def covariance(self) -> np.ndarray:
        return self._expand_cov(self.P)

    def _expand_cov(self, P):
        if not self.two_d:
            return P.copy()
        full = np.eye(STATE_SIZE) * TWO_D_VARIANCE
        full[np.ix_(self._idx, self._idx)] = P
        return full

    def register_sensor(self, name: str, timeout_s: float | None = None,
                        reacquire_after: int | None = None) -> SensorStatus:
        st = self.sensors.get(name)
        if st is None:
            st = self.sensors[name] = SensorStatus(name, self.config.sensor_timeout if timeout_s is None
                                                   else timeout_s)
        elif timeout_s is not None:
            st.timeout_s = timeout_s
        if reacquire_after is not None:
            st.reacquire_after = int(reacquire_after)
        return st

    def status(self, now: float | None = None) -> list[tuple[str, str, SensorStatus]]:
        """[(sensor, waiting|active|stale, counters)] at time `now` (default: the filter time)."""
        now = self.time_s if now is None else now
        return [(name, st.state(now if now is not None else -math.inf), st) for name, st in self.sensors.items()]

    def dead_reckoning(self, now: float) -> bool:
        """True when no sensor is active: the estimate is the motion model alone, and P grows with Q."""
        return not any(st.state(now) == "active" for st in self.sensors.values())

    # ------------------------------------------------------------------------------------------------ the model

    def transition(self, x: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(f(x, dt), F = df/dx) of the internal state."""
        return (planar_model if self.two_d else spatial_model)(x, dt)

    def _process_noise(self, x, dt):
        Q = self.Q
        if self.config.dynamic_process_noise:
            # robot_localization: scale the pose block by |velocity|^2 so a standing robot's pose error stops
            # growing; velocities and accelerations keep their static noise.
            vel = x[3:6] if self.two_d else x[6:12]
            k = float(vel @ vel)
            Q = Q.copy()
            npose = 3 if self.two_d else 6
            Q[:npose, :npose] *= k
        return Q * dt

    def _predict(self, dt: float) -> None:
        if dt <= 0.0:
            return
        self.x, F = self.transition(self.x, dt)
        P = F @ self.P @ F.T
        P += self._process_noise(self.x, dt)
        P += P.T                # symmetric to the last bit (numpy buffers the overlapping transpose)
        P *= 0.5
        self.P = P

    def predicted(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(state, covariance), both full size, predicted to time t without changing the filter."""
        x, P = self.x, self.P
        if self.time_s is not None and t > self.time_s:
            dt = t - self.time_s
            x, F = self.transition(x, dt)
            P = F @ P @ F.T + self._process_noise(x, dt)
        full = np.zeros(STATE_SIZE)
        full[self._idx] = x
        return full, self._expand_cov(P)

    def predict_to(self, t: float) -> None:
        """Advance the filter to time t with no measurement (robot_localization does this after sensor_timeout)."""
        if self.time_s is None or t <= self.time_s:
            return
        self._predict(t - self.time_s)
        self.time_s = t
        self._remember(None)

    def time_until_uncertain(self, limit_m: float, step: float = 0.1, horizon: float = 600.0) -> float:
        """Seconds from the filter time until the 1-sigma planar position error (largest axis of the x-y error
        ellipse) exceeds `limit_m` with no further measurement: how long dead reckoning stays acceptable.
        0.0 if it already does, inf if not within `horizon`."""
        x, P = self.x, self.P
        ia, ib = self._to_internal[X], self._to_internal[Y]

        def sigma(P):
            return math.sqrt(max(np.linalg.eigvalsh(P[np.ix_([ia, ib], [ia, ib])])))

        if sigma(P) > limit_m:
            return 0.0
        t = 0.0
        while t < horizon:
            x, F = self.transition(x, step)
            P = F @ P @ F.T + self._process_noise(x, step)
            t += step
            if sigma(P) > limit_m:
                return t
        return math.inf

    # ------------------------------------------------------------------------------------------------ correction

    def _layout(self, sel: np.ndarray):
        """Index arrays for a measurement selecting `sel` (full order), cached: sensors repeat the same layout."""
        key = sel.tobytes()
        lay = self._layouts.get(key)
        if lay is None:
            full_idx = np.nonzero(sel)[0]
            idx = self._to_internal[full_idx]
            keep = idx >= 0
            full_idx, idx = full_idx[keep], idx[keep]
            angles = tuple(k for k, fi in enumerate(full_idx.tolist()) if fi in ANGLES)
            # the covariance block of the selected variables, as flat indices of the 15 x 15 matrix (one take)
            block = (full_idx[:, None] * STATE_SIZE + full_idx).ravel()
            lay = self._layouts[key] = (full_idx, idx, angles, block)
        return lay

    def _selected(self, m: Measurement):
        """(layout, measured values) of the variables m measures that the filter carries: its mask, less the values
        that are not finite (the layout of the mask alone when every selected value is finite, the usual case)."""
        lay = self._layout(m.mask)
        z = m.values[lay[0]]
        if not math.isfinite(sum(z.tolist())):      # a NaN or an infinity among them (or a sum that overflows)
            lay = self._layout(m.mask & np.isfinite(m.values))
            z = m.values[lay[0]]
        return lay, z

    def _correct(self, m: Measurement) -> str:
        (full_idx, idx, angles, block), z = self._selected(m)
        k = len(idx)
        if k == 0:
            return NOTHING
        R = _repaired_covariance(m, block, k)
        innovation = z - self.x[idx]
        for a in angles:        # 179 deg vs -179 deg is 2 deg apart, not 358
            innovation[a] = wrap_angle(innovation.item(a))
        terms = self._innovation_terms(idx, R)
        if terms is None:
            return REJECTED
        PHt, S_inv, S_diag = terms
        outcome = USED
        if m.threshold < math.inf:
            d2 = float(innovation @ S_inv @ innovation)
            if d2 >= m.threshold * m.threshold:
                if not (m.reacquire or self._opens_gate(m, innovation, R)):
                    return REJECTED
                # re-acquisition: the estimate, not the source, is wrong. Widen the measured variables'
                # uncertainty to the disagreement, so this reading pulls the estimate onto the source
                m.reacquire = True
                self.P[idx, idx] += innovation * innovation
                terms = self._innovation_terms(idx, R)
                if terms is None:
                    return REJECTED
                PHt, S_inv, S_diag = terms
                outcome = REACQUIRED
        K = PHt @ S_inv
        x = self.x + K @ innovation
        for a in self._angles:
            x[a] = wrap_angle(x.item(a))
        self.x = x
        if min((R.diagonal() / S_diag).tolist()) < JOSEPH_BELOW:
            # Joseph form: symmetric positive definite for any gain. Where a reading is far more certain than the
            # estimate, P - K H P takes a tiny variance as the difference of two large ones and rounding can make
            # it negative; everywhere else the two forms are the same to rounding and this one costs 4 products
            IKH = self._eye.copy()
            IKH[:, idx] -= K
            P = IKH @ self.P @ IKH.T + K @ R @ K.T
        else:
            P = self.P - K @ PHt.T
        P += P.T
        P *= 0.5
        self.P = P
        return outcome

    def _innovation_terms(self, idx, R):
        """(P H^T, S^-1, the diagonal of S) for a measurement of the internal variables idx with covariance R; None
        if S is singular."""
        PHt = self.P[:, idx]
        S = PHt[idx] + R
        S_inv = small_inverse(S)
        return None if S_inv is None else (PHt, S_inv, S.diagonal())

    def _opens_gate(self, m: Measurement, innovation: np.ndarray, R: np.ndarray) -> bool:
        """The re-acquisition rule (docs/estimation.md): a gated measurement that arrives for the first time
        (never a replay) after N-1 rejections in a row from its sensor opens the gate when all N innovations agree
        with their mean within the sensor's own gate, measured by each reading's own covariance: the source says
        the same thing N times, consistently, so the estimate has moved away from the truth (robot_localization
        would refuse the truth forever). N is <sensor>_reacquire_after (0: never)."""
        if m is not self._fresh:
            return False
        st = self.sensors.get(m.sensor)
        if st is None or st.reacquire_after <= 0:
            return False
        history = st.rejected_innovations
        if len(history) and len(history[-1][0]) != len(innovation):
            history.clear()          # another layout (another part of the message): start again
        if len(history) + 1 < st.reacquire_after:
            history.append((innovation.copy(), R.copy()))
            del history[:-max(st.reacquire_after - 1, 1)]
            return False
        rows = [h[0] for h in history[-(st.reacquire_after - 1):]] + [innovation]
        covs = [h[1] for h in history[-(st.reacquire_after - 1):]] + [R]
        mean = np.mean(rows, axis=0)
        limit = m.threshold * m.threshold
        for nu, Rk in zip(rows, covs, strict=True):
            d = nu - mean
            try:
                if float(d @ np.linalg.solve(Rk, d)) >= limit:
                    history.append((innovation.copy(), R.copy()))
                    del history[:-max(st.reacquire_after - 1, 1)]
                    return False
            except np.linalg.LinAlgError:
                return False
        history.clear()
        return True

    def _initialize(self, m: Measurement) -> str:
        """robot_localization starts from the first measurement: measured variables take its values and their
        covariance block its covariance; the rest keep the initial state and covariance."""
        (_, idx, _, block), z = self._selected(m)
        if not len(idx):
            return NOTHING          # e.g. only z in 2-D mode: wait for a reading that says something
        self.x[idx] = z
        self.P[np.ix_(idx, idx)] = _repaired_covariance(m, block, len(idx))
        if len(self._angle_internal):
            self.x[self._angle_internal] = wrap_angle(self.x[self._angle_internal])
        self.initialized = True
        self.time_s = m.time_s
        return USED

    def _step(self, m: Measurement) -> str:
        if not self.initialized:
            return self._initialize(m)
        assert self.time_s is not None        # set with initialized
        dt = m.time_s - self.time_s
        if dt > 0.0:
            self._predict(dt)
            self.time_s = m.time_s
        return self._correct(m)

    # ------------------------------------------------------------------------------------------------ history

    def _remember(self, m: Measurement | None) -> None:
        if not self.config.smooth_lagged_data:
            return
        assert self.time_s is not None        # called after a prediction or a processed measurement
        self._states.append((self.time_s, self.x.copy(), self.P.copy(), self.initialized))
        if m is not None:
            self._measurements.append(m)
        # keep history_length seconds, plus the newest state older than that so a rewind has somewhere to land
        horizon = self.time_s - self.config.history_length
        while len(self._states) > 1 and self._states[1][0] < horizon:
            self._states.popleft()
        while self._measurements and self._measurements[0].time_s < self._states[0][0]:
            self._measurements.popleft()

    def _rewind_and_replay(self, m: Measurement) -> str | None:
        """Restore the last state strictly before m.time_s, then replay m and every later measurement in order.
        None when the history does not reach back that far."""
        assert self.time_s is not None        # only for a filter that is initialized (process())
        if not self._states or self._states[0][0] >= m.time_s or m.time_s < self.time_s - self.config.history_length:
            return None
        while self._states and self._states[-1][0] >= m.time_s:
            self._states.pop()
        t, x, P, init = self._states[-1]
        self.time_s, self.x, self.P, self.initialized = (t if init else None), x.copy(), P.copy(), init
        later = sorted((mm for mm in self._measurements if mm.time_s >= m.time_s), key=lambda mm: mm.time_s)
        self._measurements = deque(mm for mm in self._measurements if mm.time_s < m.time_s)
        outcome = None
        pending = sorted(later + [m], key=lambda mm: mm.time_s)
        for mm in pending:
            r = self._step(mm)
            self._remember(mm)
            if mm is m:
                outcome = r
            # replayed measurements were already counted when they first arrived
        return outcome

    # ------------------------------------------------------------------------------------------------ entry point

    def process(self, m: Measurement) -> str:
        """Fuse one measurement; returns used / rejected / too_late / late_fused / nothing."""
        st = self.sensors.get(m.sensor) or self.register_sensor(m.sensor)
        self._fresh = m
        try:
            return self._process(m, st)
        finally:
            self._fresh = None

    def _process(self, m: Measurement, st: SensorStatus) -> str:
        if self.config.smooth_lagged_data and not self._states:
            # the state before any measurement, so a reading older than the first one can still be replayed
            self._states.append((-math.inf, self.x.copy(), self.P.copy(), False))
        if self.initialized and self.time_s is not None and m.time_s < self.time_s:
            if self.config.smooth_lagged_data:
                outcome = self._rewind_and_replay(m)
                if outcome is None:
                    outcome = TOO_LATE
            else:
                # robot_localization without smoothing corrects with a lagged reading as if it were current
                outcome = self._correct(m)
                outcome = LATE_FUSED if outcome == USED else outcome
        else:
            outcome = self._step(m)
            if outcome != NOTHING:
                self._remember(m)
        if outcome == TOO_LATE:
            self.too_late_total += 1
            st.too_late += 1
            log.warning("%s: measurement at t=%.6f is older than the history (filter at t=%.6f, history %.3f s): "
                        "dropped (%d so far)", m.sensor, m.time_s, self.time_s, self.config.history_length, st.too_late)
            return outcome
        if outcome == REJECTED:
            st.rejected += 1
            st.consecutive_rejected += 1
        elif outcome in (USED, LATE_FUSED, REACQUIRED):
            st.consecutive_rejected = 0
            st.rejected_innovations.clear()
            if outcome == REACQUIRED:
                st.reacquired += 1
                st.last_reacquired = m.time_s
                log.warning("%s: re-acquired at t=%.3f after %d consistent rejections in a row", m.sensor, m.time_s,
                            st.reacquire_after)
            if outcome == LATE_FUSED:
                st.late_fused += 1
            else:
                st.used += 1
        if st.last_time_s is None or m.time_s > st.last_time_s:
            st.last_time_s = m.time_s
        return outcome

    def process_batch(self, measurements) -> list[str]:
        """Fuse several measurements in timestamp order (robot_localization's per-cycle queue)."""
        return [self.process(m) for m in sorted(measurements, key=lambda mm: mm.time_s)]


def _repaired_covariance(m: Measurement, block: np.ndarray, k: int) -> np.ndarray:
    """The k x k block of m's covariance at the flat indices `block` (a copy), repaired as robot_localization does:
    negative variances are made positive and zero or tiny ones raised to a floor, else S can be singular and one
    reading would own the state."""
    R = m.covariance.take(block).reshape(k, k)
    if not min(R.diagonal().tolist()) >= MIN_MEASUREMENT_VARIANCE:    # the usual reading needs no repair
        R.flat[::len(R) + 1] = np.maximum(np.abs(R.diagonal()), MIN_MEASUREMENT_VARIANCE)
    return R


def small_inverse(S: np.ndarray) -> np.ndarray | None:
    """S^-1 of a symmetric positive definite innovation covariance, None when it is singular. A reading measures
    one to three variables almost always; those sizes are inverted in closed form (the adjugate over the
    determinant, a few dozen float operations), numpy's LU only above: at this size its call costs more than the
    arithmetic."""
    k = len(S)
    if k == 1:
        s = float(S[0, 0])
        return None if s == 0.0 else np.array([[1.0 / s]])
    if k == 2:
        a, b, c, d = S.ravel().tolist()
        det = a * d - b * c
        if det == 0.0 or not math.isfinite(det):
            return None
        return np.array([[d / det, -b / det], [-c / det, a / det]])
    if k == 3:
        a, b, c, d, e, f, g, h, i = S.ravel().tolist()
        A, B, C = e * i - f * h, f * g - d * i, d * h - e * g        # cofactors of the first row
        det = a * A + b * B + c * C
        if det == 0.0 or not math.isfinite(det):
            return None
        r = 1.0 / det
        return np.array([[A * r, (c * h - b * i) * r, (b * f - c * e) * r],
                         [B * r, (a * i - c * g) * r, (c * d - a * f) * r],
                         [C * r, (b * g - a * h) * r, (a * e - b * d) * r]])
    try:
        return np.linalg.inv(S)
    except np.linalg.LinAlgError:
        return None


# ---------------------------------------------------------------------------------------------------- models

# the entries of the planar model's Jacobian that are not the identity's, as flat indices of the 8 x 8 matrix:
# (0,2) (1,2) (0,3) (0,4) (0,6) (0,7) (1,3) (1,4) (1,6) (1,7) (2,5) (3,6) (4,7)
_PLANAR_F_AT = np.array([2, 10, 3, 4, 6, 7, 11, 12, 14, 15, 21, 30, 39])
_PLANAR_EYE = np.eye(8)
_TAU = 2.0 * math.pi


def planar_model(x, dt):
    """(f(x, dt), F = df/dx) of the planar state, internal order x, y, yaw, vx, vy, vyaw, ax, ay. The arithmetic is
    on Python floats: at 8 variables numpy's per-element access costs more than the arithmetic."""
    x0, y0, yaw, vx, vy, vyaw, ax, ay = x.tolist()
    c, s = math.cos(yaw), math.sin(yaw)
    half = 0.5 * dt * dt
    dxb = vx * dt + ax * half      # body-frame displacement over dt
    dyb = vy * dt + ay * half
    xn = np.array((x0 + (c * dxb - s * dyb), y0 + (s * dxb + c * dyb), (yaw + vyaw * dt + math.pi) % _TAU - math.pi,
                   vx + ax * dt, vy + ay * dt, vyaw, ax, ay))
    F = _PLANAR_EYE.copy()
    F.put(_PLANAR_F_AT, (-s * dxb - c * dyb, c * dxb - s * dyb, c * dt, -s * dt, c * half, -s * half,
                         s * dt, c * dt, s * half, c * half, dt, dt, dt))
    return xn, F


def _flat15(rows, cols):
    return [r * STATE_SIZE + c for r in rows for c in cols]


# where spatial_model's Jacobian differs from the identity, as flat indices of the 15 x 15 matrix, in the order
# its values are put: R dt, R dt^2/2, T dt, the roll/pitch/yaw columns of the position rows, the roll/pitch columns
# of the angle rows (added to T dt's diagonal entries there), dt on the velocity rows' acceleration columns
_SPATIAL_F_AT = np.array(_flat15(range(3), range(6, 9)) + _flat15(range(3), range(12, 15))
                         + _flat15(range(3, 6), range(9, 12)) + _flat15(range(3), range(3, 6))
                         + _flat15(range(3, 6), range(3, 5)) + [6 * 15 + 12, 7 * 15 + 13, 8 * 15 + 14])
_SPATIAL_EYE = np.eye(STATE_SIZE)


def spatial_model(x, dt):
    """robot_localization's 3-D omnidirectional model: body velocities and accelerations rotated into the world by
    R(roll, pitch, yaw) = Rz Ry Rx; Euler angles advanced by the body-rate-to-Euler-rate matrix T. On Python floats,
    as planar_model: F is the identity plus 51 entries."""
    px, py, pz, roll, pitch, yaw, vx, vy, vz, wx, wy, wz, ax, ay, az = x.tolist()
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    # gimbal lock at pitch = +-90 deg: keep the rate transform finite (robot_localization divides by cos(pitch) too)
    if abs(cp) < 1e-6:
        cp = math.copysign(1e-6, cp)
    tp = sp / cp
    half = 0.5 * dt * dt
    d0, d1, d2 = vx * dt + ax * half, vy * dt + ay * half, vz * dt + az * half     # body-frame displacement
    r00, r01, r02 = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    r10, r11, r12 = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    r20, r21, r22 = -sp, cp * sr, cp * cr
    t01, t02 = sr * tp, cr * tp             # T = [[1, t01, t02], [0, cr, -sr], [0, t21, t22]]
    t21, t22 = sr / cp, cr / cp
    pi = math.pi
    xn = np.array((
        px + (r00 * d0 + r01 * d1 + r02 * d2), py + (r10 * d0 + r11 * d1 + r12 * d2),
        pz + (r20 * d0 + r21 * d1 + r22 * d2),
        (roll + (wx + t01 * wy + t02 * wz) * dt + pi) % _TAU - pi,
        (pitch + (cr * wy - sr * wz) * dt + pi) % _TAU - pi,
        (yaw + (t21 * wy + t22 * wz) * dt + pi) % _TAU - pi,
        vx + ax * dt, vy + ay * dt, vz + az * dt, wx, wy, wz, ax, ay, az))
    # derivatives of R d with respect to roll, pitch, yaw (the position rows' angle columns)
    dr0 = (cy * sp * cr + sy * sr) * d1 + (-cy * sp * sr + sy * cr) * d2
    dr1 = (sy * sp * cr - cy * sr) * d1 + (-sy * sp * sr - cy * cr) * d2
    dr2 = cp * cr * d1 - cp * sr * d2
    dp0 = -cy * sp * d0 + cy * cp * sr * d1 + cy * cp * cr * d2
    dp1 = -sy * sp * d0 + sy * cp * sr * d1 + sy * cp * cr * d2
    dp2 = -cp * d0 - sp * sr * d1 - sp * cr * d2
    dy0 = -sy * cp * d0 + (-sy * sp * sr - cy * cr) * d1 + (-sy * sp * cr + cy * sr) * d2
    dy1 = cy * cp * d0 + (cy * sp * sr - sy * cr) * d1 + (cy * sp * cr + sy * sr) * d2
    # derivatives of T w dt with respect to roll and pitch (T does not depend on yaw), plus T dt's own diagonal
    sec2 = 1.0 / (cp * cp)
    F = _SPATIAL_EYE.copy()
    F.put(_SPATIAL_F_AT, (
        r00 * dt, r01 * dt, r02 * dt, r10 * dt, r11 * dt, r12 * dt, r20 * dt, r21 * dt, r22 * dt,
        r00 * half, r01 * half, r02 * half, r10 * half, r11 * half, r12 * half, r20 * half, r21 * half, r22 * half,
        dt, t01 * dt, t02 * dt, 0.0, cr * dt, -sr * dt, 0.0, t21 * dt, t22 * dt,
        dr0, dp0, dy0, dr1, dp1, dy1, dr2, dp2, 0.0,
        1.0 + (cr * tp * wy - sr * tp * wz) * dt, (sr * sec2 * wy + cr * sec2 * wz) * dt,
        (-sr * wy - cr * wz) * dt, 1.0,
        (cr / cp * wy - sr / cp * wz) * dt, (sr * tp / cp * wy + cr * tp / cp * wz) * dt,
        dt, dt, dt))
    return xn, F
