# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Fixtures the CLI test modules share."""
import pytest
from cli_helpers import SharedSim
from dashboard_helpers import Dash


@pytest.fixture(scope="module")
def sim():
    """One `viperdrive sim` (with its control endpoint) for the tests of a module."""
    s = SharedSim()
    yield s
    s.close()


@pytest.fixture
def dash(sim):
    """`viperdrive dashboard` on the module's virtual board, stopped with Ctrl-C after the test: it must end
    cleanly (0 or 130), without a traceback."""
    d = Dash(sim.url)
    yield d
    rc, err = d.stop()
    assert rc in (0, 130), err
    assert "Traceback" not in err, err
