# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The hal test double (fakehal.Board) over the virtual board's plant (sim/plant.py): closed-loop firmware tests in
# simulated time (mptest_heading.py, mptest_moves.py). Each fired period steps the physics first with the duties
# the last period wrote, as the sim backend does; the plant's emulated IMU sits on the sensor bus.
import sys

import fakehal

_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import plant as plant_mod  # noqa: E402

ROOT = _root


def load_robot(name):
    """sim/robots/NAME.json as the plant's description (a dict the test may change before Plant())."""
    return plant_mod.load_description(_root + "/sim/robots/%s.json" % name)


class PlantHal(fakehal.Board):
    """16-bit counters (the plant's), a control rate of hz."""

    def __init__(self, cfg, pl, hz):
        fakehal.Board.__init__(self, cfg, counter_bits=16)
        self.plant = pl
        self.bus = pl.i2c
        self.period_hz = hz

    def read_counts(self, buf):
        self.plant.counts(buf)

    def set_energized(self, on):
        fakehal.Board.set_energized(self, on)
        self.plant.energized = bool(on)

    def fire(self, n=1):
        hz = self.period_hz
        while n > 0:
            self.now_us += 1000000 // hz
            self.plant.step(1.0 / hz, self.duty[0], self.duty[1])
            self.periodic()
            n -= 1
