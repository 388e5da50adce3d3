"""Differential-drive kinematics (BRIEF §2), SI units, REP-103 signs.

x forward, y left, +angular.z counter-clockwise seen from above: with v = 0 and w > 0 the LEFT wheel turns
backwards. Wheel speeds are rad/s of the wheel (positive = rolling the robot forward); speed limits are m/s at
the wheel's rim, because that is what slips and what the motor's no-load speed bounds.

Saturation never clamps one wheel (that changes the arc): both wheels are scaled by one factor, so the robot
drives the same curve, slower.
"""
from __future__ import annotations

import math


def desaturate(left: float, right: float, limit: float | None) -> tuple[float, float]:
    """Scale (left, right) by one factor so that max(|left|, |right|) <= limit; unchanged when within it.

    Same units in and out (m/s or rad/s, as long as limit is in the same unit). limit None: no limit.
    """
    if limit is None:
        return left, right
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    peak = max(abs(left), abs(right))
    if peak <= limit or peak == 0.0:
        return left, right
    k = limit / peak
    return left * k, right * k


def twist_to_wheels(v: float, w: float, wheel_separation: float, wheel_radius: float,
                    max_wheel_speed: float | None = None) -> tuple[float, float]:
    """(v m/s, w rad/s) -> (left, right) wheel rad/s; max_wheel_speed in m/s at the wheel scales both jointly."""
    half = w * wheel_separation / 2.0
    left, right = desaturate(v - half, v + half, max_wheel_speed)
    return left / wheel_radius, right / wheel_radius


def wheels_to_twist(left: float, right: float, wheel_separation: float, wheel_radius: float) -> tuple[float, float]:
    """(left, right) wheel rad/s -> (v m/s, w rad/s)."""
    vl = left * wheel_radius
    vr = right * wheel_radius
    return (vr + vl) / 2.0, (vr - vl) / wheel_separation


def max_angular(v: float, max_wheel_speed: float, wheel_separation: float) -> float:
    """The largest |w| reachable at linear speed v without scaling: w_max(v) = 2*(V_MAX - |v|)/b, >= 0.

    Example (BRIEF §2): b = 0.152 m, V_MAX = 0.55 m/s: 7.24 rad/s at rest, 0.66 rad/s at v = 0.5 (12 %).
    """
    return max(0.0, 2.0 * (max_wheel_speed - abs(v)) / wheel_separation)


def envelope(max_wheel_speed: float, wheel_separation: float, points: int = 11) -> list[tuple[float, float]]:
    """[(v, w_max)] for v from 0 to V_MAX: the reachable set to hand to a planner (symmetric in v and w)."""
    if points < 2:
        raise ValueError("points must be >= 2")
    return [(max_wheel_speed * i / (points - 1),
             max_angular(max_wheel_speed * i / (points - 1), max_wheel_speed, wheel_separation))
            for i in range(points)]


class DifferentialDriveKinematics:
    """Kinematics with the diff_drive_controller multipliers applied in one place.

    effective separation b = wheel_separation * wheel_separation_multiplier;
    left radius = wheel_radius * left_wheel_radius_multiplier, right likewise.
    max_wheel_speed (m/s at the wheel, None = unlimited) is applied jointly to both wheels.
    """

    def __init__(self, wheel_separation: float, wheel_radius: float, wheel_separation_multiplier: float = 1.0,
                 left_wheel_radius_multiplier: float = 1.0, right_wheel_radius_multiplier: float = 1.0,
                 max_wheel_speed: float | None = None):
        for name, value in (("wheel_separation", wheel_separation), ("wheel_radius", wheel_radius),
                            ("wheel_separation_multiplier", wheel_separation_multiplier),
                            ("left_wheel_radius_multiplier", left_wheel_radius_multiplier),
                            ("right_wheel_radius_multiplier", right_wheel_radius_multiplier)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        self.separation = wheel_separation * wheel_separation_multiplier
        self.left_radius = wheel_radius * left_wheel_radius_multiplier
        self.right_radius = wheel_radius * right_wheel_radius_multiplier
        self.max_wheel_speed = max_wheel_speed

    @classmethod
    def from_config(cls, config) -> DifferentialDriveKinematics:
        return cls(config.wheel_separation, config.wheel_radius, config.wheel_separation_multiplier,
                   config.left_wheel_radius_multiplier, config.right_wheel_radius_multiplier,
                   config.max_wheel_speed)

    def wheel_linear(self, v: float, w: float) -> tuple[float, float]:
        """(v, w) -> (left, right) rim speeds in m/s, jointly desaturated to max_wheel_speed."""
        half = w * self.separation / 2.0
        return desaturate(v - half, v + half, self.max_wheel_speed)

    def to_wheels(self, v: float, w: float) -> tuple[float, float]:
        """(v m/s, w rad/s) -> (left, right) wheel rad/s, jointly desaturated."""
        vl, vr = self.wheel_linear(v, w)
        return vl / self.left_radius, vr / self.right_radius

    def to_twist(self, left: float, right: float) -> tuple[float, float]:
        """(left, right) wheel rad/s -> (v m/s, w rad/s)."""
        vl = left * self.left_radius
        vr = right * self.right_radius
        return (vr + vl) / 2.0, (vr - vl) / self.separation

    def max_angular(self, v: float) -> float:
        if self.max_wheel_speed is None:
            return math.inf
        return max_angular(v, self.max_wheel_speed, self.separation)
