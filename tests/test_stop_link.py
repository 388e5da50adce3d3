# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""STOP_LINK end to end on the virtual board (the real firmware on MicroPython): Board.stop_link() while the wheels
turn de-energizes the robot, the board answers no frame afterwards, and a power cycle brings link mode back."""
from __future__ import annotations

import pytest
import serial

from viperdrive.board import Board
from viperdrive.errors import NoReplyError
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.board


def _frames(ser, seconds, clock):
    """Every frame that arrives within `seconds` of board time."""
    parser = P.Parser()
    out = []
    deadline = clock.now() + seconds
    while clock.now() < deadline:
        out += parser.feed(ser.read(ser.in_waiting or 1))
    return out


def test_stop_link_on_the_virtual_board_deenergizes_and_silences_the_link():
    with VirtualBoard() as vb:
        board = Board(vb.url, clock_sync=False)
        board.configure()
        board.activate()
        for _ in range(30):                     # 0.3 s at 100 Hz: the wheels turn
            board.write(5.0, 5.0)
            vb.clock.sleep(0.01)
            board.read()
        before = vb.truth()
        assert before["energized"] and abs(before["w_left"]) > 1.0, before
        reset_s = board.stop_link()
        assert reset_s == 0.5                   # mcu/boards/sim.json watchdog_ms: a board resets within that
        assert board.link is None or not board.link.is_open
        after = vb.truth()                      # STOP_LINK_ACK leaves after the outputs went off
        stats = vb.stats()
        assert not after["energized"] and after["duty_left"] == 0 and after["duty_right"] == 0, after
        assert stats["link_stopped"] and stats["link_stops"] == 1 and stats["watchdog_resets"] == 0, stats
        # nothing answers the protocol any more: HELLO, SET_VEL and ENABLE go unanswered and move nothing
        with serial.serial_for_url(vb.url, timeout=0.05) as ser:
            ser.write(P.pack_hello() + P.pack_enable(True) + P.pack_set_vel(4000, 4000))
            assert _frames(ser, 1.0, vb.clock) == []
        assert not vb.truth()["energized"]
        again = Board(vb.url, clock_sync=False, margin=0.1)
        with pytest.raises(NoReplyError):
            again.configure()
        # a power cycle boots link mode again (the virtual board has no REPL on its link)
        vb.control({"cmd": "reset", "what": "board"})
        with Board(vb.url, clock_sync=False) as b2:
            assert b2.info.protocol_version == P.PROTOCOL_VERSION
        assert not vb.stats()["link_stopped"]
