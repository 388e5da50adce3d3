# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""DriveController: Twist in, wheel rad/s out, at a fixed rate (a timer's tick, never the command callback), the
diff_drive_controller equivalent.

Differences from diff_drive_controller, on purpose (docs/host.md):
- Every limit (per-axis velocity/acceleration/deceleration/jerk AND max_rim_speed/max_rim_acceleration at
  the rim) acts on the pair (v, w) through ONE factor, never per axis. Per-axis clamping bends the path: a
  command (0.5 m/s, 2 rad/s) clamped to 0.3 m/s in v alone drives a tighter circle than the one asked for.
  Here the target is scaled by one factor (same curvature, slower), and the ramp moves (v, w) along the straight
  segment from the current output to the target by one fraction per tick, so starting from rest (or from any
  output on the same arc) every intermediate command lies on the commanded arc.
- Stale commands are rejected and counted with a reason (rejected, timeouts, last_reason), never replayed: a
  command whose stamp is older than cmd_vel_timeout is refused at arrival, one that ages out while held is
  dropped (not resumed when the next tick comes), and reset() drops everything (call it on activate).
- update(now) is called by the fixed-rate loop; dt is the loop period from update_rate, never a difference of
  timestamps (a period that wobbles is a scheduling problem to fix there, not a reason to change dt in the
  formulas). The command callback only stores the latest command.
"""
from __future__ import annotations

import math
import time

from ..robot.config import AxisLimits, RobotConfig
from .kinematics import DifferentialDriveKinematics, max_angular, twist_scale

# a stamp this far in the future means the clocks disagree: refuse rather than hold the command forever
FUTURE_TOLERANCE_S = 0.5


class DriveController:
    def __init__(self, config: RobotConfig | None = None):
        self.config = config if config is not None else RobotConfig()
        c = self.config
        self.kinematics = DifferentialDriveKinematics.from_config(c)
        self.dt = 1.0 / c.update_rate
        self.separation = c.effective_separation
        self.rejected = 0           # commands refused at arrival (non-finite, stale stamp, out of order)
        self.timeouts = 0           # held commands dropped because no newer one came within cmd_vel_timeout
        self.accepted = 0
        self.last_reason: str | None = None
        self.reset()

    def reset(self) -> None:
        """Zero the output, its ramp state and any held command (activate/deactivate: never replay)."""
        self._cmd: tuple[float, float, float] | None = None   # v, w, time the command counts from
        self._last_stamp: float | None = None
        self.v = 0.0                 # the twist actually commanded on the last tick
        self.w = 0.0
        self._acc_v = 0.0            # d(v)/dt and d(w)/dt of the last tick (for the jerk limit)
        self._acc_w = 0.0
        self.target = (0.0, 0.0)     # the limited target of the last tick
        self.scale = 1.0             # velocity saturation factor of the last tick (1: not saturated)
        self.ramp = 1.0              # fraction of the remaining step taken on the last tick (1: not ramping)

    # ---- input ----
    def command(self, v: float, w: float, stamp: float | None = None, now: float | None = None) -> bool:
        """Store a Twist (linear.x m/s, angular.z rad/s). stamp: when it was produced, on the host's monotonic
        clock (a TwistStamped's header converted by the caller); None = now. False (and counted, with
        last_reason) when refused."""
        if now is None:
            now = time.monotonic()
        if not (math.isfinite(v) and math.isfinite(w)):
            return self._reject(f"non-finite command v={v} w={w}")
        t = now
        if stamp is not None:
            age = now - stamp
            timeout = self.config.cmd_vel_timeout
            if timeout > 0 and age > timeout:
                return self._reject(f"command stamp is {age:.3f} s old (> cmd_vel_timeout {timeout} s)")
            if age < -FUTURE_TOLERANCE_S:
                return self._reject(f"command stamp is {-age:.3f} s in the future (clocks differ?)")
            if self._last_stamp is not None and stamp < self._last_stamp:
                return self._reject(f"command stamp {stamp:.6f} is older than the previous one "
                                    f"{self._last_stamp:.6f} (out of order)")
            self._last_stamp = stamp
            t = min(stamp, now)
        self._cmd = (float(v), float(w), t)
        self.accepted += 1
        return True

    def _reject(self, reason: str) -> bool:
        self.rejected += 1
        self.last_reason = reason
        return False

    # ---- the fixed-rate tick ----
    def update(self, now: float | None = None) -> tuple[float, float]:
        """One tick: (left, right) wheel rad/s to send. Call exactly once per loop period."""
        if now is None:
            now = time.monotonic()
        c = self.config
        if self._cmd is not None and c.cmd_vel_timeout > 0 and now - self._cmd[2] > c.cmd_vel_timeout:
            # politeness stop (the board's deadman is the real one): ramp to zero, and forget the command so a
            # late tick can never resume it
            self.timeouts += 1
            self.last_reason = f"no command for {now - self._cmd[2]:.3f} s (> cmd_vel_timeout {c.cmd_vel_timeout} s)"
            self._cmd = None
        tv, tw = (self._cmd[0], self._cmd[1]) if self._cmd is not None else (0.0, 0.0)
        tv, tw = self._limit_velocity(tv, tw)
        self.target = (tv, tw)
        self._ramp_towards(tv, tw)
        return self.kinematics.to_wheels(self.v, self.w)

    def _limit_velocity(self, v: float, w: float) -> tuple[float, float]:
        c = self.config
        s = 1.0
        if c.linear.max_velocity is not None and abs(v) > c.linear.max_velocity:
            s = min(s, c.linear.max_velocity / abs(v))
        if c.angular.max_velocity is not None and abs(w) > c.angular.max_velocity:
            s = min(s, c.angular.max_velocity / abs(w))
        s = min(s, twist_scale(v, w, wheel_separation=self.separation, limit=c.max_rim_speed))
        self.scale = s
        # one factor for both: same curvature w/v, slower
        return v * s, w * s

    def _ramp_towards(self, tv: float, tw: float) -> None:
        c = self.config
        dt = self.dt
        dv = tv - self.v
        dw = tw - self.w
        if dv == 0.0 and dw == 0.0:
            # on the target (most ticks): no limit can bind, and the acceleration the jerk limit starts from is 0
            self.ramp = 1.0
            self._acc_v = self._acc_w = 0.0
            return
        # the smallest fraction any limit allows; the rim acceleration of both wheels goes through the same
        # fraction, so the wheel ratio is kept during the ramp
        alpha = min(1.0, _axis_fraction(c.linear, self.v, dv, self._acc_v, dt),
                    _axis_fraction(c.angular, self.w, dw, self._acc_w, dt),
                    twist_scale(dv, dw, wheel_separation=self.separation, limit=c.max_rim_acceleration * dt))
        self.ramp = alpha
        step_v = alpha * dv
        step_w = alpha * dw
        self.v = tv if alpha >= 1.0 else self.v + step_v
        self.w = tw if alpha >= 1.0 else self.w + step_w
        self._acc_v = step_v / dt
        self._acc_w = step_w / dt

    # ---- reporting ----
    def max_angular(self, v: float) -> float:
        """Angular authority left at linear speed v (the envelope w_max(v) = 2 (V_MAX - |v|) / b), including
        angular.z.max_velocity."""
        w = max_angular(v, max_rim_speed=self.config.max_rim_speed, wheel_separation=self.separation)
        if self.config.angular.max_velocity is not None:
            w = min(w, self.config.angular.max_velocity)
        return w

    def status(self) -> dict:
        cmd = self._cmd
        return {
            "command": None if cmd is None else (cmd[0], cmd[1]),
            "target": self.target, "output": (self.v, self.w),
            "saturation_scale": self.scale, "ramp_fraction": self.ramp,
            "accepted": self.accepted, "rejected": self.rejected, "timeouts": self.timeouts,
            "last_reason": self.last_reason,
        }


def _axis_fraction(limits: AxisLimits, current: float, delta: float, prev_acc: float, dt: float) -> float:
    """The largest fraction of delta this axis allows in one tick (1.0: no limit binds)."""
    if delta == 0.0:
        return 1.0
    mag = abs(delta)
    # slowing down (|v| shrinks) uses the deceleration limit, speeding up the acceleration limit
    slowing = current != 0.0 and (current > 0) != (delta > 0)
    a_max = limits.deceleration if slowing else limits.max_acceleration
    cap = math.inf if a_max is None else a_max
    if limits.max_jerk is not None:
        j = limits.max_jerk
        # acceleration may grow by at most j*dt per tick, and must be small enough to fall back to zero at
        # rate j before reaching the target (sqrt(2*j*remaining)): an S-curve without overshoot
        cap = min(cap, abs(prev_acc) + j * dt, math.sqrt(2.0 * j * mag))
    if math.isinf(cap):
        return 1.0
    return min(1.0, cap * dt / mag)


__all__ = ["DriveController"]
