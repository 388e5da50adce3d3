# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The ranges a user-given number must be in, one definition for every surface that takes it: the command line
(cli/options.py builds argparse types from these) and the dashboard's JSON API (dashboard/api.py). A value
outside is refused with the range named, before anything reaches the board.

`Range.check(name, value)` takes what a parser gave (an int of any size, a float, NaN, inf) and returns a finite
float inside the range, or raises BadValue. Comparisons are written `not lo <= x` so NaN fails them; an integer
is compared as the integer it is (a 400-digit one is refused, never converted into an OverflowError)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import BadValue


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Range:
    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    lo_open: bool = False
    hi_open: bool = False
    nonzero: bool = False

    def text(self) -> str:
        """'(0, 10] s', '[-1000, 1000] rad/s, not 0', 'any finite number'."""
        if self.lo is not None and self.hi is not None:
            rng = f"{'(' if self.lo_open else '['}{_fmt(self.lo)}, {_fmt(self.hi)}{')' if self.hi_open else ']'}"
        elif self.lo is not None:
            rng = f"{'>' if self.lo_open else '>='} {_fmt(self.lo)}"
        elif self.hi is not None:
            rng = f"{'<' if self.hi_open else '<='} {_fmt(self.hi)}"
        else:
            rng = "any finite number"
        return rng + (f" {self.unit}" if self.unit else "") + (", not 0" if self.nonzero else "")

    def contains(self, value: float | int) -> bool:
        ok = True
        if self.lo is not None:
            ok = ok and (value > self.lo if self.lo_open else value >= self.lo)
        if self.hi is not None:
            ok = ok and (value < self.hi if self.hi_open else value <= self.hi)
        return ok and not (self.nonzero and value == 0)

    def check(self, name: str, value) -> float:
        """value (a JSON or parsed number) -> a finite float in the range; BadValue naming it otherwise."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadValue(f"{name} must be a number in {self.text()}, got {_show(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise BadValue(f"{name} must be a finite number in {self.text()}, got {value}")
        if not self.contains(value):
            raise BadValue(f"{name} {_show(value)} is outside {self.text()}")
        try:
            out = float(value)
        except OverflowError:       # an integer beyond any float, inside an unbounded range
            raise BadValue(f"{name} {_show(value)} is too large for a number in {self.text()}") from None
        if not math.isfinite(out):
            raise BadValue(f"{name} {_show(value)} is too large for a number in {self.text()}")
        return out


def _show(value, limit: int = 40) -> str:
    """A value in an error message, cut short (a 400-digit integer is not repeated back whole)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** 60:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# ---- the shared ranges ----
# a wheel speed loop's settling time, for a gain design (`tune --design --settle`, the dashboard's Design): tens to
# hundreds of ms; past 10 s is a typo (1e9 s designed kp 4.8e-12 and called it met)
SETTLE_S = Range(0.0, 10.0, "s", lo_open=True)
# the largest overshoot a gain design may ask for, % of the step
OVERSHOOT_PCT = Range(0.0, 100.0, "%", lo_open=True, hi_open=True)
# a step test's size (`tune --step`, the dashboard's step); the robot's own wheel limit is checked once the board
# is open
STEP_RAD_S = Range(-1000.0, 1000.0, "rad/s", nonzero=True)
# a drive command (the dashboard's pad; a script's speeds share these limits): the robot's own limits apply on top
SPEED_MAX_M_S = 10.0            # a cruise speed (motion.scripts.LIMITS), the pad's linear speed
TURN_RATE_MAX_RAD_S = 50.0      # a turn rate (motion.scripts.LIMITS), the pad's angular speed
SPEED_M_S = Range(-SPEED_MAX_M_S, SPEED_MAX_M_S, "m/s")
TURN_RATE_RAD_S = Range(-TURN_RATE_MAX_RAD_S, TURN_RATE_MAX_RAD_S, "rad/s")
# any parameter value before the table's own range is checked (Board.set_param)
PARAM_VALUE = Range()


__all__ = ["Range", "SETTLE_S", "OVERSHOOT_PCT", "STEP_RAD_S", "SPEED_M_S", "TURN_RATE_RAD_S", "PARAM_VALUE"]
