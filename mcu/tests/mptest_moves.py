# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Moves on the board (issue 24) in simulated time: the firmware's App (control step with the move engine, sensor
# task, odometry) on the virtual board's plant (sim/plant.py), and the engine alone on ideal wheels for the many
# random moves. Commands go in through the link, as the host sends them.
import math
import sys

import app as app_mod
import boardcfg
import fakehal
from shared import protocol as P

_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import plant as plant_mod  # noqa: E402

HZ = 500
CPR = 4096


class PlantHal(fakehal.Board):
    """The hal test double over the plant: each fired period steps the physics first, as the sim backend does."""

    def __init__(self, cfg, pl):
        fakehal.Board.__init__(self, cfg, counter_bits=16)
        self.plant = pl
        self.bus = pl.i2c
        self.blocked = None             # a wheel held still (0 left, 1 right)

    def read_counts(self, buf):
        self.plant.counts(buf)

    def set_energized(self, on):
        fakehal.Board.set_energized(self, on)
        self.plant.energized = bool(on)

    def fire(self, n=1):
        while n > 0:
            self.now_us += 1000000 // HZ
            dl, dr = self.duty[0], self.duty[1]
            self.plant.step(1.0 / HZ, dl, dr)
            self.periodic()
            n -= 1


class Rig:
    """App + plant, commands through the link's dispatch (the frames the host sends), replies decoded."""

    def __init__(self, imu=True, robot="default", values=None):
        d = plant_mod.load_description(_root + "/sim/robots/%s.json" % robot)
        self.pl = plant_mod.Plant(d)
        cfg = {"backend": "sim", "counts_per_rev": CPR, "counter_bits": 16, "control_hz": HZ, "name": "moves"}
        if imu:
            cfg["imu"] = {"part": "mpu6050"}
        cfg = boardcfg.validate(cfg)
        self.hal = PlantHal(cfg, self.pl)
        self.app = app_mod.App(self.hal, cfg, params_path="/tmp/viperdrive-mptest-moves.json", link=True,
                               watchdog=False)
        for name, v in (values or {}).items():
            assert self.app.params.set(self._pid(name), v) is None, name
        self.app._apply_params()
        self.app.start()
        self.stream = self.hal.stream
        assert self.app.enable(True)
        self.t = 0
        self.next_id = 1
        self.still(1.0)                 # the sensor task's gyro bias (still_ms, then its window)
        self.pl.reset_pose()

    @staticmethod
    def _pid(name):
        from shared import params
        return params.by_name(name)[params.ID]

    def request(self, frame):
        self.stream.inject(frame)
        self.app.service()
        return P.Parser().feed(self.stream.take())

    def periods(self, n, lease_every=50):
        for _ in range(n):
            self.hal.fire(1)
            self.t += 1
            if lease_every and self.t % lease_every == 0:
                self.lease()
            self.app.service()

    def still(self, s):
        for i in range(int(s * HZ)):
            self.hal.fire(1)
            if i % 5 == 0:
                self.app.set_velocity(0, 0)
            self.app.service()

    def move(self, kind, a, b=0.0, speed=0.3, accel=1.0, timeout=0.0):
        mid = self.next_id
        self.next_id += 1
        fr = self.request(P.pack_move(mid, kind, a, b, speed, accel, timeout))
        assert fr and fr[-1][0] == P.MOVE_STATE, fr
        return mid

    def lease(self, cancel=False):
        fr = self.request(P.pack_move_lease(cancel))
        return P.unpack_move_state([f for f in fr if f[0] == P.MOVE_STATE][-1][1])

    def run_until_done(self, max_s=30.0):
        """Periods until no move is left; -> {id: reason} of every end seen."""
        ends = {}
        for _ in range(int(max_s * HZ / 10)):
            self.periods(10, lease_every=0)
            mid, active, n, last = self.lease()
            for i, r in last:
                ends[i] = r
            if active == 0:
                return ends
        raise AssertionError("moves still running after %g s" % max_s)


def _deg(x):
    return x * 180.0 / math.pi


def _wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


def test_straight_one_metre_on_the_default_robot():
    r = Rig()
    mid = r.move(P.MOVE_STRAIGHT, 1.0, speed=0.3, accel=0.8)
    ends = r.run_until_done()
    pl = r.pl
    print("straight 1 m: x %.4f y %.4f theta %.3f deg, end %s" % (pl.x, pl.y, _deg(pl.theta), ends))
    assert ends == {mid: P.MOVE_END_ARRIVED}
    assert abs(pl.x - 1.0) <= 0.005 and abs(pl.y) <= 0.01, (pl.x, pl.y)


def test_turn_90_with_the_gyro():
    r = Rig()
    mid = r.move(P.MOVE_TURN, math.pi / 2, speed=2.0, accel=6.0)
    ends = r.run_until_done()
    print("turn 90: theta %.3f deg, x %.4f y %.4f, end %s" % (_deg(r.pl.theta), r.pl.x, r.pl.y, ends))
    assert ends == {mid: P.MOVE_END_ARRIVED}
    assert abs(_deg(r.pl.theta) - 90.0) < 1.0
