# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# STOP_LINK on the unix port through the hal test double: the ACK and its reset time, the outputs cut before
# anything else, nothing after it in the same read acted on, the length check, and main()'s hand-over to the REPL
# (repl_mode written, link closed, watchdog no longer fed, return after the wait for the reset).
import fakehal
from viperdrive import app as app_mod
from viperdrive.shared import protocol as P

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 300}
PARAMS = "/tmp/viperdrive-mptest-stop-link.json"


def make(watchdog=True):
    hal = fakehal.Board(CFG)
    a = app_mod.App(hal, CFG, params_path=PARAMS, watchdog=watchdog)
    a.start()
    return hal, a


def frames(hal):
    return P.Parser().feed(hal.stream.take())


def test_stop_link_acks_cuts_the_outputs_and_ignores_what_follows():
    hal, a = make()
    hal.stream.inject(P.pack_enable(True))
    a.service()
    hal.fire(3)
    assert hal.energized and a.ctrl.enabled()
    hal.stream.take()
    # STOP_LINK, then in the same chunk an ENABLE and a SET_VEL: after STOP_LINK they are REPL bytes, not frames
    hal.stream.inject(P.pack_set_vel(1000, 1000) + P.pack_stop_link() + P.pack_enable(True)
                      + P.pack_set_vel(2000, 2000))
    a.service()
    got = frames(hal)
    assert [c for c, _ in got] == [P.STATE, P.STOP_LINK_ACK], got
    assert P.unpack_stop_link_ack(got[1][1]) == 300          # the watchdog timeout of the board config
    assert not hal.energized and hal.energize_calls[-1] is False and hal.duty == [0, 0]
    assert a.link_stopped and a.link.stopped
    # a later pass reads nothing more: new bytes stay for whoever reads the port next (the REPL)
    hal.stream.inject(P.pack_enable(True))
    a.service()
    hal.fire(5)
    assert bytes(hal.stream.rx) == P.pack_enable(True)
    assert hal.stream.take() == b"" and not hal.energized and not a.ctrl.enabled()


def test_stop_link_with_a_payload_is_nack_bad_length_and_the_link_runs_on():
    hal, a = make()
    hal.stream.inject(P.encode(P.STOP_LINK, b"\x01"))
    a.service()
    (cmd, payload), = frames(hal)
    assert cmd == P.NACK and P.unpack_nack(payload) == (P.STOP_LINK, P.NACK_BAD_LENGTH)
    assert not a.link_stopped
    hal.stream.inject(P.pack_hello())
    a.service()
    assert [c for c, _ in frames(hal)] == [P.INFO]


def test_stop_link_without_a_watchdog_reports_no_reset():
    hal, a = make(watchdog=False)
    hal.stream.inject(P.pack_stop_link())
    a.service()
    (cmd, payload), = frames(hal)
    assert cmd == P.STOP_LINK_ACK and P.unpack_stop_link_ack(payload) == 0
    idles = hal.idles
    written = []
    saved = app_mod._touch
    app_mod._touch = written.append
    try:
        assert app_mod._hand_to_repl(a, hal) == "stop_link"   # no watchdog: the REPL at once, no wait
    finally:
        app_mod._touch = saved
    assert hal.idles == idles and written == ["repl_mode"]


def test_main_hands_the_board_to_the_repl_after_stop_link():
    from viperdrive import boardcfg
    from viperdrive import hal as hal_pkg

    board = fakehal.Board(CFG)
    written = []
    feeds_at_ack = []
    write = board.stream.write

    def write_and_mark(buf):
        if buf[2] == P.STOP_LINK_ACK:
            feeds_at_ack.append(board.feeds)
            feeds_at_ack.append(board.idles)
        return write(buf)

    board.stream.write = write_and_mark

    def idle():
        board.idles += 1
        if board.periodic is not None:
            board.fire(1)
        else:
            board.now_us += 1000                # ~1 ms per idle, as on a board, also after the timer stopped
        if board.idles == 20:
            board.stream.inject(P.pack_enable(True))
        if board.idles == 40:
            board.stream.inject(P.pack_set_vel(500, 500))
        if board.idles == 60:
            board.stream.inject(P.pack_stop_link())

    saved = boardcfg.load, hal_pkg.load, app_mod._exists, app_mod._touch
    board.idle = idle
    boardcfg.load = lambda path: dict(CFG)
    hal_pkg.load = lambda cfg: board
    app_mod._exists = lambda path: False         # no repl_mode file at boot: link mode
    app_mod._touch = written.append
    try:
        result = app_mod.main()
    finally:
        boardcfg.load, hal_pkg.load, app_mod._exists, app_mod._touch = saved
    assert result == "stop_link"
    replies = [c for c, _ in P.Parser().feed(board.stream.take())]
    assert replies == [P.ENABLE_ACK, P.STATE, P.STOP_LINK_ACK], replies
    assert True in board.energize_calls and not board.energized and board.duty == [0, 0]
    assert board.periodic is None and board.stream.closed       # control timer stopped; Ctrl-C given back
    assert written == ["repl_mode"]
    # the watchdog was fed while the link ran and never after the ACK: on the board it resets into REPL mode
    assert feeds_at_ack[0] > 0 and board.feeds == feeds_at_ack[0], (feeds_at_ack, board.feeds)
    # main() waited for that reset (bounded: 4 x watchdog_ms + 1 s of idles), then gave up into the REPL
    waited = board.idles - feeds_at_ack[1]
    assert 2200 - 5 <= waited <= 2200 + 5, waited
