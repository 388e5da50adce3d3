# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Scripted paths for `viperdrive drive --script` and `viperdrive log record --script`: straight lines, turns in
place, arcs and timed twists, closed on the host odometry (distance and heading), with a braking profile so a
segment ends where it should instead of overshooting by the ramp.

Script file, one segment per line ('#' starts a comment; angles in degrees, + = counter-clockwise, REP-103):

    forward 0.5 [SPEED]         drive 0.5 m straight (negative: backwards), SPEED m/s (default --speed)
    turn 90 [RATE]              turn in place by 90 degrees, RATE rad/s (default --turn-rate)
    arc 0.3 180 [SPEED]         drive along a circle of radius 0.3 m through 180 degrees (- = clockwise)
    twist 0.1 0.5 2.0           command v=0.1 m/s, w=0.5 rad/s for 2.0 s (open loop, timed)
    wait 1.0                    stand still for 1.0 s

Built-ins: square (side, counter-clockwise), spin (one turn each way), figure8 (two circles of radius side/2).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from .. import ranges
from ..errors import BadValue
from ..robot.files import read_text
from .odometry import wrap_pi

BUILTINS = ("square", "spin", "figure8")

# The bounds of every number a script (file or built-in sizing) may hold: far beyond any robot this drives, tight
# enough that a typo (1e308, a missing decimal point) is refused instead of driving for ever. The CLI's --side,
# --speed, --turn-rate and --duration take the same ranges (viperdrive.cli.options).
LIMITS = {
    "distance_m": 1000.0,       # |forward|, arc radius, square side
    "angle_deg": 36000.0,       # |turn|, |arc| (100 turns)
    "speed_m_s": ranges.SPEED_MAX_M_S,          # cruise speed (the robot's own limit applies on top)
    "rate_rad_s": ranges.TURN_RATE_MAX_RAD_S,   # turn rate
    "duration_s": 86400.0,      # wait, twist, and any --duration: one day
}


@dataclass(frozen=True)
class Segment:
    kind: str           # forward | turn | arc | twist | wait
    a: float = 0.0      # forward: m; turn/arc: rad; twist: v m/s; wait: s
    b: float = 0.0      # forward: speed m/s; turn: rate rad/s; arc: radius m; twist: w rad/s
    c: float = 0.0      # arc: speed m/s; twist: s

    def describe(self) -> str:
        if self.kind == "forward":
            return f"forward {self.a:+.3f} m at {self.b:.2f} m/s"
        if self.kind == "turn":
            return f"turn {math.degrees(self.a):+.1f} deg at {self.b:.2f} rad/s"
        if self.kind == "arc":
            return f"arc r={self.b:.3f} m through {math.degrees(self.a):+.1f} deg at {self.c:.2f} m/s"
        if self.kind == "twist":
            return f"twist v={self.a:+.3f} m/s w={self.b:+.3f} rad/s for {self.c:.2f} s"
        return f"wait {self.a:.2f} s"

    def nominal_duration(self) -> float:
        if self.kind == "forward":
            return abs(self.a) / self.b
        if self.kind == "turn":
            return abs(self.a) / self.b
        if self.kind == "arc":
            return abs(self.a) * self.b / self.c
        if self.kind == "twist":
            return self.c
        return self.a


def builtin(name: str, side_m: float = 0.5, speed_m_s: float = 0.2, turn_rate_rad_s: float = 1.0) -> list[Segment]:
    segments = _builtin(name, side_m, speed_m_s, turn_rate_rad_s)
    for seg in segments:
        problem = _out_of_range(seg)
        if problem:
            raise BadValue(f"script {name} (side {side_m:g} m, speed {speed_m_s:g} m/s, turn rate "
                           f"{turn_rate_rad_s:g} rad/s): {problem}")
    return segments


def _builtin(name: str, side: float, speed: float, turn_rate: float) -> list[Segment]:
    if name == "square":
        return [s for _ in range(4) for s in (Segment("forward", side, speed), Segment("turn", math.pi / 2,
                                                                                       turn_rate))]
    if name == "spin":
        return [Segment("turn", 2 * math.pi, turn_rate), Segment("wait", 0.5), Segment("turn", -2 * math.pi,
                                                                                       turn_rate)]
    if name == "figure8":
        r = side / 2
        return [Segment("arc", 2 * math.pi, r, speed), Segment("arc", -2 * math.pi, r, speed)]
    raise BadValue(f"unknown built-in script {name!r}; built-ins: {', '.join(BUILTINS)}, or a script file")


def parse_script(text: str, speed_m_s: float = 0.2, turn_rate_rad_s: float = 1.0,
                 source: str = "script") -> list[Segment]:
    """Segments from script text (speed_m_s and turn_rate_rad_s: a segment's speed when its line gives none);
    BadValue naming the line for anything wrong."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        kind, args = words[0].lower(), words[1:]
        where = f"{source} line {n}: {raw.strip()!r}"
        try:
            nums = [float(a) for a in args]
        except ValueError:
            raise BadValue(f"{where}: arguments must be numbers") from None
        if any(not math.isfinite(x) for x in nums):
            raise BadValue(f"{where}: arguments must be finite numbers")
        want = {"forward": (1, 2), "turn": (1, 2), "arc": (2, 3), "twist": (3, 3), "wait": (1, 1)}
        if kind not in want:
            raise BadValue(f"{where}: unknown segment {kind!r} (forward, turn, arc, twist, wait)")
        lo, hi = want[kind]
        if not lo <= len(nums) <= hi:
            raise BadValue(f"{where}: {kind} takes {lo if lo == hi else f'{lo} or {hi}'} numbers")
        if kind == "forward":
            s = Segment("forward", nums[0], nums[1] if len(nums) > 1 else speed_m_s)
        elif kind == "turn":
            s = Segment("turn", math.radians(nums[0]), nums[1] if len(nums) > 1 else turn_rate_rad_s)
        elif kind == "arc":
            s = Segment("arc", math.radians(nums[1]), nums[0], nums[2] if len(nums) > 2 else speed_m_s)
        elif kind == "twist":
            s = Segment("twist", nums[0], nums[1], nums[2])
        else:
            s = Segment("wait", nums[0])
        problem = _out_of_range(s)
        if problem:
            raise BadValue(f"{where}: {problem}")
        out.append(s)
    if not out:
        raise BadValue(f"{source}: no segments")
    return out


def _out_of_range(s: Segment) -> str | None:
    """Why a segment's numbers are outside LIMITS (written `not lo < x <= hi`: NaN fails every comparison)."""
    L = LIMITS
    checks: list[tuple[str, float, float, float, str, bool]] = []
    if s.kind == "forward":
        checks.append(("the distance", abs(s.a), 0.0, L["distance_m"], "m", True))
        checks.append(("the speed", s.b, 0.0, L["speed_m_s"], "m/s", False))
    elif s.kind == "turn":
        checks.append(("the angle", abs(math.degrees(s.a)), 0.0, L["angle_deg"], "deg", True))
        checks.append(("the rate", s.b, 0.0, L["rate_rad_s"], "rad/s", False))
    elif s.kind == "arc":
        checks.append(("the radius", s.b, 0.0, L["distance_m"], "m", False))
        checks.append(("the angle", abs(math.degrees(s.a)), 0.0, L["angle_deg"], "deg", True))
        checks.append(("the speed", s.c, 0.0, L["speed_m_s"], "m/s", False))
    elif s.kind == "twist":
        checks.append(("v", abs(s.a), 0.0, L["speed_m_s"], "m/s", True))
        checks.append(("w", abs(s.b), 0.0, L["rate_rad_s"], "rad/s", True))
        checks.append(("the duration", s.c, 0.0, L["duration_s"], "s", True))
    else:
        checks.append(("the duration", s.a, 0.0, L["duration_s"], "s", True))
    for what, x, lo, hi, unit, lo_closed in checks:
        inside = (lo <= x <= hi) if lo_closed else (lo < x <= hi)
        if not inside:
            return f"{what} {x:g} {unit} is outside {'[' if lo_closed else '('}{lo:g}, {hi:g}] {unit}"
    return None


def load_script(spec: str, side_m: float, speed_m_s: float, turn_rate_rad_s: float) -> list[Segment]:
    if spec in BUILTINS:
        return builtin(spec, side_m, speed_m_s, turn_rate_rad_s)
    if not os.path.lexists(spec):
        raise BadValue(f"--script {spec!r}: no such file and not a built-in ({', '.join(BUILTINS)})")
    # the one bounded reader of a user's file: a regular file of at most files.MAX_BYTES, UTF-8; a FIFO, a device
    # (/dev/zero) or a directory is refused at once
    text = read_text(spec, "--script file")
    return parse_script(text, speed_m_s, turn_rate_rad_s, source=spec)


class ScriptFollower:
    """Turns segments into (v, w) commands each tick, closed on the odometry pose.

    Braking: the commanded speed is min(cruise, sqrt(2 a d)) for the remaining distance (or angle) d, with a the
    deceleration the drive controller will allow (80 % of it): the segment ends at rest on its mark rather than a
    ramp length past it."""

    LINEAR_TOL = 0.002      # m
    ANGLE_TOL = math.radians(0.5)

    def __init__(self, segments: list[Segment], max_accel_m_s2: float, wheel_separation: float):
        self.segments = list(segments)
        self.accel = 0.8 * max_accel_m_s2                          # m/s^2 at the wheels
        self.alpha = 0.8 * 2.0 * max_accel_m_s2 / wheel_separation  # rad/s^2 turning in place
        self.index = 0
        self._start: tuple[float, float, float] | None = None   # (t, travelled, turned) at the start of the segment
        self.travelled = 0.0    # along-path distance, m (signed per segment)
        self.turned = 0.0       # unwrapped heading change, rad
        self._last: tuple[float, float, float] | None = None
        self._settling: float | None = None
        self._hold = 0.0
        self._intended = 0.0    # unwrapped heading the script means to have reached so far (rad)

    @property
    def done(self) -> bool:
        return self.index >= len(self.segments)

    @property
    def current(self) -> Segment | None:
        return None if self.done else self.segments[self.index]

    def _track(self, x, y, theta):
        if self._last is not None:
            lx, ly, lth = self._last
            dth = wrap_pi(theta - lth)
            heading = lth + dth / 2
            # distance along the heading (signed: backwards counts negative)
            self.travelled += (x - lx) * math.cos(heading) + (y - ly) * math.sin(heading)
            self.turned += dth
        self._last = (x, y, theta)

    HEADING_GAIN = 3.0      # 1/s: heading correction on straight legs
    SETTLE_V = 0.01         # m/s: at rest (above the velocity estimate noise), for the end of a closed-loop segment
    SETTLE_W = 0.05         # rad/s
    SETTLE_MAX = 0.5        # s

    def update(self, now: float, pose: tuple[float, float, float],
               twist: tuple[float, float] | None = None) -> tuple[float, float]:
        """(v, w) for this tick; advances to the next segment when one is complete. twist: the measured (v, w);
        with it a closed-loop segment (forward, turn, arc) ends only once the robot is at rest, so the next one
        does not start with a leftover turn rate (which bends every straight leg)."""
        self._track(*pose)
        while not self.done:
            seg = self.segments[self.index]
            if self._start is None:
                self._start = (now, self.travelled, self.turned)
                self._settling = None
                # the heading a straight leg holds: where the previous segments meant to point
                self._hold = self._intended
            t0, d0, a0 = self._start
            if self._settling is None:
                cmd = self._command(seg, now - t0, self.travelled - d0, self.turned - a0)
                if cmd is not None:
                    return cmd
                if twist is not None and seg.kind in ("forward", "turn", "arc"):
                    self._settling = now
            if self._settling is not None:
                # a caller that stopped passing twist: nothing says the robot still moves
                moving = twist is not None and (abs(twist[0]) > self.SETTLE_V or abs(twist[1]) > self.SETTLE_W)
                if moving and now - self._settling < self.SETTLE_MAX:
                    return 0.0, 0.0
            if seg.kind in ("turn", "arc"):
                self._intended += seg.a
            elif seg.kind == "twist":
                self._intended = self.turned     # open loop: wherever it ended up
            self.index += 1
            self._start = None
        return 0.0, 0.0

    def _command(self, seg: Segment, elapsed: float, dist: float, angle: float):
        timeout = 3.0 * seg.nominal_duration() + 3.0    # never stuck on a segment a wheel cannot finish
        if seg.kind in ("wait", "twist"):
            if elapsed >= seg.nominal_duration():
                return None
            return (0.0, 0.0) if seg.kind == "wait" else (seg.a, seg.b)
        if elapsed > timeout:
            return None
        if seg.kind == "forward":
            left = seg.a - dist
            if abs(left) < self.LINEAR_TOL:
                return None
            v = math.copysign(min(seg.b, math.sqrt(2 * self.accel * abs(left))), left)
            # hold the heading: unequal wheels (or one slipping) bend a leg that only counts distance
            err = self._hold - self.turned
            return v, max(-1.0, min(1.0, self.HEADING_GAIN * err))
        if seg.kind == "turn":
            # to the intended heading, so a turn also takes out what the previous leg left over
            left = self._hold + seg.a - self.turned
            if abs(left) < self.ANGLE_TOL:
                return None
            return 0.0, math.copysign(min(seg.b, math.sqrt(2 * self.alpha * abs(left))), left)
        # arc: heading change drives the end; speed profile on the remaining arc length
        left = self._hold + seg.a - self.turned
        if abs(left) < self.ANGLE_TOL or (left > 0) != (seg.a > 0):
            return None
        remaining = abs(left) * seg.b
        v = min(seg.c, math.sqrt(2 * self.accel * remaining))
        return v, math.copysign(v / seg.b, seg.a)
