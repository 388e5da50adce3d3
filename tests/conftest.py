# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Fixtures the CLI test modules share."""
import pytest
from cli_helpers import SharedSim


@pytest.fixture(scope="module")
def sim():
    """One `viperdrive sim` (with its control endpoint) for the tests of a module."""
    s = SharedSim()
    yield s
    s.close()
