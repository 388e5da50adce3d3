# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make demo`'s board moves (viperdrive.demo): a move that does not arrive ends the demo in one line."""
from __future__ import annotations

import pytest

from viperdrive import demo
from viperdrive.errors import BoardFault

pytestmark = pytest.mark.unit


def test_a_board_move_that_does_not_arrive_ends_the_demo_in_one_line(monkeypatch, capsys):
    """watch_moves names the first move that did not arrive (BoardFault); `make demo` prints it as one line and
    returns the fault's exit code, no traceback."""
    class Queue:
        busy = False

    class FakeBoard:
        moves = Queue()

    class Stalled:
        arrived = False
        reason = "stalled"

        def describe(self):
            return "straight +1.000 m at 0.30 m/s"

    runner = demo.PathRunner.__new__(demo.PathRunner)
    runner.board = FakeBoard()
    with pytest.raises(BoardFault, match="a board move ended stalled: straight"):
        runner.watch_moves([Stalled()])

    def failing(argv):
        runner.watch_moves([Stalled()])
    monkeypatch.setattr(demo, "main", failing)
    assert demo.run([]) == BoardFault("x").exit_code != 0
    err = capsys.readouterr().err
    assert err == "demo: a board move ended stalled: straight +1.000 m at 0.30 m/s\n"
