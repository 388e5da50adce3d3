# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""HIL fixtures: `--port` (registered in the repo-root conftest.py) selects a real board; without it every test
module runs on a fresh virtual board and again on the emulated Pico (stock MicroPython rp2 on an emulated RP2040 in
the same simulated robot, flashed once per session through `viperdrive flash --mpy`: docs/pico-rig.md). `make test`
runs PICO_SUBSET on the emulated Pico, and again on the Pico image with the firmware frozen in (`make uf2`, installed
with `flash --config-only`), `make hil-pico` (--pico-all) every check on both. Tests that need the sim control
endpoint (ground truth, faults) skip on real hardware with the reason. Times are the board's: `clock` is the
emulated chip's clock on the Pico rig (it runs slower than real time), the host's everywhere else."""
from __future__ import annotations

import pytest

from viperdrive.board import Board, wait_for_hello
from viperdrive.robot.config import RobotConfig

# the emulated-Pico checks in `make test` (the whole list takes minutes there; `make hil-pico` runs them all)
# make test's share of the CircuitPython rig (make hil-circuitpython: every check)
CIRCUITPYTHON_SUBSET = {
    "test_straight_command_both_wheels_same_direction_and_speed",
    "test_positive_angular_z_turns_the_left_wheel_backwards",
    "test_sender_killed_board_stops_within_deadman_plus_braking",
}
PICO_SUBSET = {
    "test_straight_command_both_wheels_same_direction_and_speed",
    "test_positive_angular_z_turns_the_left_wheel_backwards",
    "test_sender_killed_board_stops_within_deadman_plus_braking",
    "test_frozen_control_task_watchdog_resets_and_board_comes_back_disabled",
}


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        cs = getattr(item, "callspec", None)
        rig = cs.params.get("sim") if cs is not None else None
        if rig in ("pico", "pico-frozen") and (config.getoption("--port") or not (
                config.getoption("--pico-all") or item.originalname in PICO_SUBSET)):
            drop.append(item)
        elif rig == "circuitpython" and (config.getoption("--port") or not (
                config.getoption("--circuitpython-all") or item.originalname in CIRCUITPYTHON_SUBSET)):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="module", params=["vboard", "pico", "pico-frozen", "circuitpython"])
def sim(request):
    """The module's VirtualBoard or PicoRig, or None on real hardware."""
    if request.config.getoption("--port"):
        yield None
        return
    if request.param == "pico":
        from viperdrive.rigs.pico import PicoRig
        image = request.getfixturevalue("pico_image")
        flash = image.copy(request.getfixturevalue("tmp_path_factory").mktemp("pico-hil") / "board.flash")
        with PicoRig(flash=flash) as rig:
            wait_for_hello(rig.url, rig.clock)
            yield rig
        return
    if request.param == "pico-frozen":
        # the image with the firmware frozen in (make uf2), installed with board.json alone (flash --config-only)
        from viperdrive.rigs.pico import PicoRig
        image = request.getfixturevalue("frozen_pico_image")
        flash = image.copy(request.getfixturevalue("tmp_path_factory").mktemp("pico-frozen-hil") / "board.flash")
        with PicoRig(flash=flash, uf2=request.getfixturevalue("frozen_uf2")) as rig:
            wait_for_hello(rig.url, rig.clock)
            yield rig
        return
    if request.param == "circuitpython":
        from pathlib import Path

        from viperdrive.rigs.pico import PicoRig
        drive = request.getfixturevalue("circuitpython_drive")
        board = Path(__file__).resolve().parent.parent / "mcu" / "boards" / "circuitpython_pico.json"
        with PicoRig(firmware="circuitpython", drive=drive, board=board) as rig:
            # CircuitPython compiles the firmware from source at boot: several chip seconds
            wait_for_hello(rig.url, rig.clock, seconds=60.0)
            yield rig
        return
    from viperdrive.rigs.virtual import VirtualBoard
    # the ideal robot (perfect kinematics, like the Pico rig's): the suite's numbers are the firmware's, not the
    # default robot's tyre mismatch, wheelbase error and encoder edge jitter
    with VirtualBoard(robot="ideal") as vb:
        yield vb


@pytest.fixture(scope="module")
def port(request, sim):
    return request.config.getoption("--port") or sim.url


@pytest.fixture
def clock(sim):
    """The board's clock: chip time on the emulated Pico, the host's elsewhere."""
    from viperdrive.timebase import HOST_CLOCK
    return HOST_CLOCK if sim is None else sim.clock


@pytest.fixture
def need_sim(sim):
    if sim is None:
        pytest.skip("needs the virtual board's control endpoint (ground truth / fault injection); "
                    "running against a real board (--port)")
    return sim


def _is_pico(sim) -> bool:
    return sim is not None and sim.ERROR_PREFIX.startswith("pico")


@pytest.fixture
def board(port, sim, clock):
    """A configured Board, left disabled afterwards; on the virtual board a clean power-on state first (on the
    emulated Pico a power cycle costs a boot: the ground-truth pose is zeroed and the fault cleared instead)."""
    if _is_pico(sim):
        sim.reset("pose")
        wait_for_hello(port, clock)
    elif sim is not None:
        sim.reset()
    b = Board(port, config=RobotConfig(), clock=clock)
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
