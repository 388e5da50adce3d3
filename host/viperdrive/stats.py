# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Summary statistics shared by the link, the loop and the ROS 2 bridge (one rank rule everywhere), and how a
figure that is not a number goes into JSON (finite_or_none)."""
from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0 <= q <= 1) of values sorted ascending, by the nearest-rank rule: the smallest value such
    that at least a fraction q of the values are <= it, i.e. sorted_values[ceil(q * n) - 1] (q = 0: the minimum,
    q = 1: the maximum). Always one of the values (a latency that happened, never an interpolation between two).
    None for an empty sequence. ValueError for q outside [0, 1]."""
    if not (0.0 <= q <= 1.0):
        raise ValueError(f"percentile q must be in [0, 1], got {q}")
    n = len(sorted_values)
    if n == 0:
        return None
    # 1e-9: q * n is a float product (0.1 * 30 = 3.0000000000000004 must rank 3, not 4)
    rank = math.ceil(q * n - 1e-9)
    return sorted_values[min(n - 1, max(0, rank - 1))]


def finite_or_none(x):
    """x with every float that is not finite (NaN, an infinity: not JSON) replaced by None, through dicts, lists
    and tuples (as lists)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    return x
