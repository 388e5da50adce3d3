"""HIL fixtures: `--port` (registered in the repo-root conftest.py) selects a real board; without it every test
module gets a fresh virtual board. Tests that need the sim control endpoint (ground truth, faults) skip on real
hardware with the reason."""
from __future__ import annotations

import pytest

from viperdrive.board import Board
from viperdrive.config import RobotConfig


@pytest.fixture(scope="module")
def sim(request):
    """The module's VirtualBoard, or None on real hardware."""
    if request.config.getoption("--port"):
        yield None
        return
    from viperdrive.sim import VirtualBoard
    with VirtualBoard() as vb:
        yield vb


@pytest.fixture(scope="module")
def port(request, sim):
    return request.config.getoption("--port") or sim.url


@pytest.fixture
def need_sim(sim):
    if sim is None:
        pytest.skip("needs the virtual board's control endpoint (ground truth / fault injection); "
                    "running against a real board (--port)")
    return sim


@pytest.fixture
def board(port, sim):
    """A configured Board, left disabled afterwards; on the virtual board a clean power-on state first."""
    if sim is not None:
        sim.reset()
    b = Board(port, config=RobotConfig())
    b.configure()
    # a real board may still hold a fault from an earlier run: start from a cleared one
    b.clear_fault()
    try:
        yield b
    finally:
        try:
            if b.link is not None and b.link.is_open:
                b.deactivate()
        except Exception:  # noqa: BLE001 - the board's deadman stops it anyway; report the test's own failure
            pass
        b.cleanup()
