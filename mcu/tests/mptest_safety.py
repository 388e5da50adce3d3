# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The supervisor and the board-level safety behaviour through the App: watchdog feeding only on progress of
# both tasks, the watchdog-reset boot, deadman through the link, restartable App, the REPL boot switch.
import fakehal
from viperdrive import app as app_mod
from viperdrive import fixedstep as fx
from viperdrive import safety
from viperdrive.shared import protocol as P

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 300}


def make(reset_cause=P.RESET_POWER_ON):
    hal = fakehal.Board(CFG, reset_cause=reset_cause)
    a = app_mod.App(hal, CFG, params_path="/tmp/viperdrive-mptest-safety.json")
    a.start()
    return hal, a


def test_supervisor_feeds_only_when_both_tasks_progress():
    hal = fakehal.Board(CFG)
    s = safety.Supervisor(hal, 250)
    assert not s.check(1, 1) and hal.feeds == 0         # not started: never feeds
    s.start(0, 0)
    assert hal.wdt_timeout == 250
    assert s.check(1, 1) and hal.feeds == 1
    assert not s.check(2, 1) and hal.feeds == 1         # the link task did not move
    assert not s.check(2, 1)
    assert s.check(3, 2) and hal.feeds == 2
    assert not s.check(3, 3) and hal.feeds == 2         # the control loop did not move
    assert s.misses == 3


def test_app_stops_feeding_when_the_control_loop_stalls():
    hal, a = make()
    assert hal.wdt_timeout == 300
    for _ in range(50):
        a.service()
        hal.fire(1)
    a.service()                         # vouches for the last period
    fed = hal.feeds
    assert fed == 50, fed
    # the control timer dies (hung IRQ, stopped thread): the slow loop keeps running but must not feed
    for _ in range(200):
        a.service()
    assert hal.feeds == fed, (hal.feeds, fed)
    # ... and the slow loop hangs while control runs: nobody feeds either (on the board: reset)
    hal.fire(200)
    assert hal.feeds == fed
    for _ in range(10):
        a.service()
        hal.fire(1)
    assert hal.feeds > fed
    print("supervisor: %d feeds over 60 good passes, none over 200 passes with the control loop stalled"
          % hal.feeds)


def test_watchdog_reset_boots_disabled_with_wdt_reset_latched():
    hal, a = make(reset_cause=P.RESET_WATCHDOG)
    par = P.Parser()

    def xfer(frame):
        hal.stream.inject(frame)
        a.service()
        hal.fire(1)
        return par.feed(hal.stream.take())

    (cmd, payload), = xfer(P.pack_set_vel(0, 0))
    st = P.unpack_state(payload)[4]
    assert st & P.ST_WDT_RESET and st & P.ST_FAULT and not st & P.ST_ENABLED, st
    d = P.unpack_diag(xfer(P.pack_get_diag())[0][1])
    assert d["reset_cause"] == P.RESET_WATCHDOG and d["fault_code"] == P.FAULT_WATCHDOG
    (cmd, payload), = xfer(P.pack_enable(True))
    assert cmd == P.NACK and P.unpack_nack(payload) == (P.ENABLE, P.NACK_NOT_ALLOWED)
    (cmd, payload), = xfer(P.pack_clear_fault())
    assert P.unpack_fault_cleared(payload) == P.FAULT_WATCHDOG
    (cmd, payload), = xfer(P.pack_set_vel(0, 0))
    assert P.unpack_state(payload)[4] & (P.ST_WDT_RESET | P.ST_FAULT) == 0
    (cmd, payload), = xfer(P.pack_enable(True))
    assert cmd == P.ENABLE_ACK and P.unpack_enable_ack(payload) and hal.energized


def test_deadman_through_the_link():
    hal, a = make()
    par = P.Parser()
    hal.stream.inject(P.pack_enable(True))
    a.service()
    hal.stream.inject(P.pack_set_vel(2000, 2000))
    a.service()
    hal.fire(1)
    par.feed(hal.stream.take())
    n = 0
    while not a.ctrl.status() & P.ST_DEADMAN:
        hal.fire(1)
        a.service()
        n += 1
        assert n < 1000
    # deadman_ms 100 at 500 Hz = 50 periods: tripped on the 51st period without a command
    assert n == 51, n
    hal.stream.inject(P.pack_set_vel(0, 0))
    a.service()
    hal.fire(1)
    assert not a.ctrl.status() & P.ST_DEADMAN
    assert P.unpack_diag(_diag(hal, a, par))["deadman_trips"] == 1


def _diag(hal, a, par):
    hal.stream.inject(P.pack_get_diag())
    a.service()
    return [p for c, p in par.feed(hal.stream.take()) if c == P.DIAG][0]


def test_app_is_restartable_in_one_process():
    hal, a = make()
    a.ctrl.enable(True)
    a.ctrl.set_velocity(1000, 1000)
    hal.fire(10)
    a.stop()
    assert not hal.energized and hal.periodic is None and hal.stream.closed
    # an emulated watchdog reset: a fresh App on a fresh hal, nothing carried over
    hal2, b = make(reset_cause=P.RESET_WATCHDOG)
    assert b.ctrl is not a.ctrl and b.ctrl.positions() == (0, 0) and not b.ctrl.enabled()
    hal2.fire(5)
    assert b.ctrl.ticks() == 5 and a.ctrl.ticks() == 11


def test_repl_boot_switch():
    assert app_mod.repl_requested({}, exists=lambda p: p == "repl_mode")
    assert not app_mod.repl_requested({}, exists=lambda p: False)

    class PinHeld:
        def repl_pin_held(self):
            return True

    assert app_mod.repl_requested({"repl_pin": 5}, PinHeld(), exists=lambda p: False)
    # without a Board the backend named by the config reads the pin (the sim has none)
    assert not app_mod.repl_requested({"backend": "sim", "repl_pin": 5}, exists=lambda p: False)


def test_enable_while_the_control_loop_is_hung_is_refused_not_a_crash():
    hal, a = make()
    par = P.Parser()
    hal.stalled = True                  # the timer died: requests are never served
    hal.stream.inject(P.pack_enable(True))
    a.service()                         # must return (after ~100 ms of idling), not raise
    (cmd, payload), = par.feed(hal.stream.take())
    assert cmd == P.ENABLE_ACK and not P.unpack_enable_ack(payload)
    assert not hal.energized and a.ctrl.st[fx.G_REQ] == 0     # withdrawn: nothing fires later
    hal.stalled = False
    hal.fire(5)
    assert not a.ctrl.enabled() and not hal.energized


def test_main_link_mode_and_a_crash_leaves_outputs_off_and_link_closed():
    from viperdrive import boardcfg
    from viperdrive import hal as hal_pkg

    board = fakehal.Board(CFG)

    class Crash(Exception):
        pass

    def idle():
        board.idles += 1
        board.fire(1)
        if board.idles == 20:
            board.stream.inject(P.pack_enable(True))
        if board.idles > 40:
            raise Crash()

    def load_cfg(path):
        return dict(CFG)

    def load_hal(cfg):
        return board

    def no_file(path):
        return False                            # no repl_mode file: link mode

    board.idle = idle
    saved = boardcfg.load, hal_pkg.load, app_mod._exists
    boardcfg.load = load_cfg
    hal_pkg.load = load_hal
    app_mod._exists = no_file
    try:
        try:
            app_mod.main()
            raise AssertionError("main() returned")
        except Crash:
            pass
    finally:
        boardcfg.load, hal_pkg.load, app_mod._exists = saved
    # the loop ran in link mode (ENABLE answered and energized), then the crash cut the outputs and closed the
    # link (for USB CDC that gives Ctrl-C back to the REPL)
    assert P.ENABLE_ACK in [c for c, _ in P.Parser().feed(board.stream.take())]
    assert True in board.energize_calls and not board.energized and board.stream.closed
    assert board.periodic is None
