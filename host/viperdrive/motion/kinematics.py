# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Differential-drive kinematics, SI units, REP-103 signs (docs/host.md, "Kinematics").

Inverse: v_left = v - w b/2, v_right = v + w b/2 (rim speeds, m/s), wheel rad/s = rim speed / r; forward:
v = (v_right + v_left)/2, w = (v_right - v_left)/b, with b the effective wheel separation. Host and board use
the same formulas.

x forward, y left, +angular.z counter-clockwise seen from above: with v = 0 and w > 0 the LEFT wheel turns
backwards. Wheel speeds are rad/s of the wheel (positive = rolling the robot forward); the speed limit
max_rim_speed is m/s at the wheel's rim, because that is what slips and what the motor's no-load speed bounds.

Saturation never clamps one wheel (that changes the arc): both wheels are scaled by one factor, so the robot
drives the same curve, slower.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..robot.config import RobotConfig


def saturation_scale(left: float, right: float, limit: float | None) -> float:
    """The one factor (0 < k <= 1) that brings max(|left|, |right|) down to limit; 1.0 when within it or no limit.

    The single place the joint peak limit is computed: desaturate() applies it, DriveController combines it with
    its per-axis factors and uses it for the rim acceleration limit."""
    if limit is None:
        return 1.0
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    peak = max(abs(left), abs(right))
    if peak <= limit or peak == 0.0:
        return 1.0
    return limit / peak


def desaturate(left: float, right: float, limit: float | None) -> tuple[float, float]:
    """Scale (left, right) by one factor so that max(|left|, |right|) <= limit; unchanged when within it.

    Same units in and out (m/s or rad/s, as long as limit is in the same unit). limit None: no limit.
    """
    k = saturation_scale(left, right, limit)
    return left * k, right * k          # k == 1.0 leaves them exactly as they were


def twist_scale(v: float, w: float, *, wheel_separation: float, limit: float | None) -> float:
    """saturation_scale() of the rim speeds of (v, w): the factor on both v and w that keeps each wheel's rim
    speed (or, for a change of twist, rim speed change) within limit."""
    half = w * wheel_separation / 2.0
    return saturation_scale(v - half, v + half, limit)


def twist_to_wheels(v: float, w: float, *, wheel_separation: float, wheel_radius: float,
                    max_rim_speed: float | None = None, right_radius: float | None = None) -> tuple[float, float]:
    """(v m/s, w rad/s) -> (left, right) wheel rad/s; max_rim_speed in m/s at the rim scales both jointly.

    right_radius: the right wheel's radius when it differs from the left one's (wheel_radius). wheel_radius 1.0
    gives the rim speeds in m/s (dividing by 1.0 is exact)."""
    half = w * wheel_separation / 2.0
    left, right = v - half, v + half
    k = saturation_scale(left, right, max_rim_speed)        # desaturate() inlined: this is the hot path
    return left * k / wheel_radius, right * k / (wheel_radius if right_radius is None else right_radius)


def wheels_to_twist(left: float, right: float, *, wheel_separation: float, wheel_radius: float,
                    right_radius: float | None = None) -> tuple[float, float]:
    """(left, right) wheel rad/s -> (v m/s, w rad/s). right_radius as in twist_to_wheels; wheel_radius 1.0 takes
    rim speeds in m/s."""
    vl = left * wheel_radius
    vr = right * (wheel_radius if right_radius is None else right_radius)
    return (vr + vl) / 2.0, (vr - vl) / wheel_separation


def max_angular(v: float, *, max_rim_speed: float, wheel_separation: float) -> float:
    """The largest |w| reachable at linear speed v without scaling: w_max(v) = 2*(V_MAX - |v|)/b, >= 0, with
    V_MAX = max_rim_speed (m/s).

    Example, the default robot: b = 0.152 m, V_MAX = 0.55 m/s: 7.24 rad/s at rest, 0.66 rad/s at v = 0.5 (12 %:
    a planner that assumes the standstill authority at speed asks for turns the robot cannot make).
    """
    return max(0.0, 2.0 * (max_rim_speed - abs(v)) / wheel_separation)


def envelope(*, max_rim_speed: float, wheel_separation: float, points: int = 11) -> list[tuple[float, float]]:
    """[(v, w_max)] for v from 0 to V_MAX: the reachable set to hand to a planner (symmetric in v and w)."""
    if points < 2:
        raise ValueError("points must be >= 2")
    return [(max_rim_speed * i / (points - 1),
             max_angular(max_rim_speed * i / (points - 1), max_rim_speed=max_rim_speed,
                         wheel_separation=wheel_separation))
            for i in range(points)]


class DifferentialDriveKinematics:
    """Kinematics with the diff_drive_controller multipliers applied in one place.

    effective separation b = wheel_separation * wheel_separation_multiplier;
    left radius = wheel_radius * left_wheel_radius_multiplier, right likewise.
    max_rim_speed (m/s at the rim, None = unlimited) is applied jointly to both wheels.
    """

    def __init__(self, wheel_separation: float, wheel_radius: float, wheel_separation_multiplier: float = 1.0,
                 left_wheel_radius_multiplier: float = 1.0, right_wheel_radius_multiplier: float = 1.0,
                 max_rim_speed: float | None = None):
        for name, value in (("wheel_separation", wheel_separation), ("wheel_radius", wheel_radius),
                            ("wheel_separation_multiplier", wheel_separation_multiplier),
                            ("left_wheel_radius_multiplier", left_wheel_radius_multiplier),
                            ("right_wheel_radius_multiplier", right_wheel_radius_multiplier)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        self.separation = wheel_separation * wheel_separation_multiplier
        self.left_radius = wheel_radius * left_wheel_radius_multiplier
        self.right_radius = wheel_radius * right_wheel_radius_multiplier
        self.max_rim_speed = max_rim_speed

    @classmethod
    def from_config(cls, config: RobotConfig) -> DifferentialDriveKinematics:
        return cls(config.wheel_separation, config.wheel_radius, config.wheel_separation_multiplier,
                   config.left_wheel_radius_multiplier, config.right_wheel_radius_multiplier,
                   config.max_rim_speed)

    def wheel_linear(self, v: float, w: float) -> tuple[float, float]:
        """(v, w) -> (left, right) rim speeds in m/s, jointly desaturated to max_rim_speed."""
        return twist_to_wheels(v, w, wheel_separation=self.separation, wheel_radius=1.0,
                               max_rim_speed=self.max_rim_speed)

    def to_wheels(self, v: float, w: float) -> tuple[float, float]:
        """(v m/s, w rad/s) -> (left, right) wheel rad/s, jointly desaturated."""
        return twist_to_wheels(v, w, wheel_separation=self.separation, wheel_radius=self.left_radius,
                               max_rim_speed=self.max_rim_speed, right_radius=self.right_radius)

    def to_twist(self, left: float, right: float) -> tuple[float, float]:
        """(left, right) wheel rad/s -> (v m/s, w rad/s)."""
        return wheels_to_twist(left, right, wheel_separation=self.separation, wheel_radius=self.left_radius,
                               right_radius=self.right_radius)

    def max_angular(self, v: float) -> float:
        if self.max_rim_speed is None:
            return math.inf
        return max_angular(v, max_rim_speed=self.max_rim_speed, wheel_separation=self.separation)


__all__ = ["twist_to_wheels", "wheels_to_twist", "max_angular", "desaturate", "envelope", "saturation_scale",
           "twist_scale", "DifferentialDriveKinematics"]
