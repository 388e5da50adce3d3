# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The e-stop input (board config "estop") and the slow path's latched faults, through the App and its link on the
# hal test double (exact periods), and on the sim backend in the virtual board's world with the plant (reaction
# time measured in board time, the firmware's clock): outputs off in the period that reads the circuit open, no ramp,
# FAULT_ESTOP latched, cleared only once the circuit is closed again AND CLEAR_FAULT came.
import sys

import micropython

import fakehal
from viperdrive import app as app_mod
from viperdrive import boardcfg
from viperdrive import fixedstep as fx
from viperdrive.shared import protocol as P

_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import plant as plant_mod  # noqa: E402
import world as world_mod  # noqa: E402
from viperdrive.hal import sim  # noqa: E402

PIN = 14
CFG = boardcfg.validate({"backend": "sim", "counts_per_rev": 4096, "name": "fake", "control_hz": 500,
                         "estop": {"pin": PIN, "closed": 0}})
OPEN = 1 << PIN                 # closed = 0 with a pull-up: a press or a cut wire reads 1


class Host:
    def __init__(self, hal, a):
        self.hal = hal
        self.app = a
        self.parser = P.Parser()

    def one(self, data, want):
        self.hal.stream.inject(data)
        self.app.service()
        self.hal.fire(1)
        self.app.service()
        frames = [f for f in self.parser.feed(self.hal.stream.take()) if f[0] not in (P.TELEMETRY_DATA,
                                                                                      P.SENSORS_DATA)]
        assert len(frames) == 1 and frames[0][0] == want, frames
        return frames[0][1]


def _driving():
    hal = fakehal.Board(CFG)
    a = app_mod.App(hal, CFG, params_path="/tmp/viperdrive-mptest-estop.json", watchdog=False)
    a.start()
    h = Host(hal, a)
    assert P.unpack_enable_ack(h.one(P.pack_enable(True), P.ENABLE_ACK))
    for _ in range(100):                       # up to speed: 3000 counts/s, the PID driving both wheels
        hal.counts = [hal.counts[0] + 6, hal.counts[1] + 6]
        h.one(P.pack_set_vel(3000, 3000), P.STATE)
    assert hal.energized and hal.duty[0] > 0 and hal.duty[1] > 0
    return hal, a, h


def test_open_estop_cuts_the_outputs_in_the_period_that_reads_it():
    hal, a, h = _driving()
    hal.duty_log = []
    ticks0 = a.ctrl.ticks()
    hal.inputs = OPEN                           # pressed between two periods
    hal.fire(1)
    # that very period: duty 0 written, bridges de-energized (no ramp: stop category 0), fault latched
    assert a.ctrl.ticks() == ticks0 + 1
    assert hal.duty_log == [(0, 0)] and not hal.energized and hal.energize_calls[-1] is False
    st = a.ctrl.state()[4]
    assert st & P.ST_FAULT and st & P.ST_ESTOP and not st & P.ST_ENABLED
    assert a.ctrl.fault() == P.FAULT_ESTOP


def test_estop_clears_only_when_closed_and_clear_fault_came():
    hal, a, h = _driving()
    hal.inputs = OPEN
    hal.fire(1)
    # still open: ENABLE refused, CLEAR_FAULT leaves it latched (FAULT_CLEARED says 0 were cleared)
    assert P.unpack_nack(h.one(P.pack_enable(True), P.NACK)) == (P.ENABLE, P.NACK_NOT_ALLOWED)
    assert P.unpack_fault_cleared(h.one(P.pack_clear_fault(), P.FAULT_CLEARED)) == 0
    assert a.ctrl.fault() == P.FAULT_ESTOP
    # closed again: still latched until CLEAR_FAULT
    hal.inputs = 0
    hal.fire(5)
    assert a.ctrl.fault() == P.FAULT_ESTOP and not a.ctrl.state()[4] & P.ST_ESTOP
    assert P.unpack_nack(h.one(P.pack_enable(True), P.NACK)) == (P.ENABLE, P.NACK_NOT_ALLOWED)
    assert P.unpack_fault_cleared(h.one(P.pack_clear_fault(), P.FAULT_CLEARED)) == P.FAULT_ESTOP
    assert a.ctrl.fault() == 0
    assert P.unpack_enable_ack(h.one(P.pack_enable(True), P.ENABLE_ACK))


def test_estop_opened_while_disabled_latches_too():
    hal = fakehal.Board(CFG)
    a = app_mod.App(hal, CFG, params_path="/tmp/viperdrive-mptest-estop.json", watchdog=False)
    a.start()
    h = Host(hal, a)
    hal.inputs = OPEN
    hal.fire(1)
    hal.inputs = 0                              # a short press (or a wire that touched)
    hal.fire(1)
    assert a.ctrl.fault() == P.FAULT_ESTOP
    assert P.unpack_nack(h.one(P.pack_enable(True), P.NACK)) == (P.ENABLE, P.NACK_NOT_ALLOWED)


def test_battery_cut_off_from_the_slow_path_is_latched_and_cuts_the_outputs():
    hal, a, h = _driving()
    hal.duty_log = []
    a.ctrl.latch_fault(P.FAULT_BATTERY_LOW)
    hal.fire(1)
    assert hal.duty_log == [(0, 0)] and not hal.energized
    assert a.ctrl.fault() == P.FAULT_BATTERY_LOW
    a.ctrl.set_status_bits(P.ST_BATTERY_LOW)
    hal.fire(1)
    assert a.ctrl.state()[4] & (P.ST_BATTERY_LOW | P.ST_FAULT) == P.ST_BATTERY_LOW | P.ST_FAULT
    assert P.unpack_fault_cleared(h.one(P.pack_clear_fault(), P.FAULT_CLEARED)) == P.FAULT_BATTERY_LOW


def test_the_period_with_an_estop_input_allocates_nothing():
    hal, a, h = _driving()
    fn = a.ctrl.run_period
    micropython.heap_lock()
    try:
        n = 0
        while n < 200:
            fn(None)
            n += 1
        hal.inputs = OPEN
        fn(None)
    finally:
        micropython.heap_unlock()
    assert a.ctrl.fault() == P.FAULT_ESTOP


def test_reaction_time_on_the_sim_backend_from_the_firmware_clock():
    # the virtual board's world at 500 Hz on the plant (default robot, driving): the e-stop opens at a board time
    # the test records; the sim backend records the board time at which the bridges went off. Both are the
    # firmware's clock (board time: whole periods). Reaction: the first period that starts after the opening cuts
    desc = plant_mod.load_description(_root + "/sim/robots/default.json")
    pl = plant_mod.Plant(desc)
    cfg = boardcfg.validate({"backend": "sim", "counts_per_rev": 4096, "counter_bits": 16, "control_hz": 500,
                             "estop": {"pin": 0, "closed": 0}})
    w = world_mod.World(pl, 500)
    board = sim.Board(cfg, world=w)
    offs = []
    real = board.set_energized

    def watched(on):
        if not on:
            # the start of the period whose step cut the bridges (exact: board time is whole periods; the clock
            # inside a step reads a few us past its start, more on a busy machine)
            offs.append(w.t_us)
        real(on)
    board.set_energized = watched
    a = app_mod.App(board, cfg, params_path="/tmp/viperdrive-mptest-estop.json", link=False, watchdog=False)
    a.start()
    try:
        reactions = []
        periods = []
        for trial in range(5):
            assert a.enable(True), a.ctrl.fault()
            for _ in range(80):                 # 400 ms of driving, a command every 5 ms
                a.set_velocity(3000, 3000)
                w.sleep_us(5000)
            assert board.duty_l != 0 and abs(pl.w_l) > 1.0
            del offs[:]
            k0 = a.ctrl.ticks()
            # open it somewhere inside a period (a different phase each trial)
            w.sleep_us(300 * trial + 100)
            pl.set_estop(True)
            t_open = board.ticks_us()           # inside the current period: [its start, its start + period)
            while not offs:
                w.sleep_us(100)
            reactions.append(offs[0] - t_open)
            periods.append(a.ctrl.ticks() - k0)
            assert a.ctrl.fault() == P.FAULT_ESTOP and pl.duty_l == 0.0 or not pl.energized
            pl.set_estop(False)
            w.sleep_us(4000)                    # two periods read it closed
            assert a.ctrl.st[fx.G_ESTOP] == 0
            assert a.clear_fault() == P.FAULT_ESTOP
        print("e-stop reaction (us of board time, 500 Hz = 2000 us period):", reactions,
              "periods run until the cut seen:", periods)
        # the cut happens in the first period that starts after the opening: within one period of board time
        for r in reactions:
            assert 0 < r <= 2000, reactions
        assert a.ctrl.st[fx.G_ESTOP] == 0
    finally:
        a.stop()
