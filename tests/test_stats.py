# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""viperdrive.stats.percentile: the nearest-rank rule, its edges, and agreement with numpy's "inverted_cdf"."""
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from viperdrive.stats import percentile

pytestmark = pytest.mark.unit


def test_nearest_rank_on_small_sets():
    xs = [10, 20, 30, 40]
    assert percentile(xs, 0.0) == 10 and percentile(xs, 1.0) == 40
    assert percentile(xs, 0.5) == 20          # at least half of the values are <= 20
    assert percentile(xs, 0.51) == 30
    assert percentile(list(range(1, 31)), 0.1) == 3     # 0.1 * 30 is 3.0000000000000004 in floats
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert percentile([], 0.5) is None
    with pytest.raises(ValueError):
        percentile(xs, 1.5)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=200), st.floats(0.0, 1.0))
def test_matches_numpy_inverted_cdf_and_is_a_sample(values, q):
    xs = sorted(values)
    p = percentile(xs, q)
    assert p in xs
    # numpy's "inverted_cdf" is the nearest-rank definition too; they may differ only where q * n is within
    # rounding of a whole number
    n = len(xs)
    if abs(q * n - round(q * n)) > 1e-6:
        assert p == np.percentile(xs, q * 100, method="inverted_cdf")
    assert sum(1 for x in xs if x <= p) >= q * n - 1e-6


def test_finite_or_none_writes_what_is_not_a_number_as_null_at_any_depth():
    from viperdrive.stats import finite_or_none
    x = {"a": float("nan"), "b": [1.5, float("inf"), (2, -float("inf"))], "c": "text", "d": 3}
    assert finite_or_none(x) == {"a": None, "b": [1.5, None, [2, None]], "c": "text", "d": 3}
    json.dumps(finite_or_none(x), allow_nan=False)      # valid JSON now
