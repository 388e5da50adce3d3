# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make demo`'s board moves (viperdrive.demo): after the gyro's scale is calibrated against the ground truth, the
1 m square as board moves ends within 20 mm and 1 degree of its start in ground truth, where the same square
closed by the host on its raw odometry ends hundreds of mm off (a 0.5 m one here: more than 50 mm; the default
robot's tyres and wheelbase are off, sim/robots/default.json); the table and the picture carry both."""
from __future__ import annotations

import math

import pytest

from viperdrive import demo
from viperdrive.board.board import Board
from viperdrive.errors import BoardFault
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.robot.config import RobotConfig

pytestmark = pytest.mark.board


def test_the_board_moves_square_closes_on_the_gyro_and_the_demo_shows_it_beside_the_host_closed_one(tmp_path):
    config = RobotConfig()
    with VirtualBoard() as vb, Board(vb.url, config=config) as board:
        runner = demo.PathRunner(board, config, vb)
        gyro = demo.calibrate_gyro(runner)
        assert gyro.ok, gyro.problems
        assert gyro.scale == pytest.approx(1 / 1.003, abs=5e-4)      # the simulated MPU-6050 reads 0.3 % fast
        moves = demo.square_moves(runner)
        host = demo.square(runner, side=0.5)        # short: its drift is the robot's, not what is tested
        board.deactivate()
        text = demo.table([host, moves], board, vb, runner)
    x, y, th = moves.end["truth"]
    hx, hy, _ = host.end["truth"]
    print(f"1 m square, end in ground truth: board moves {math.hypot(x, y) * 1000:.1f} mm {math.degrees(th):+.2f} "
          f"deg; host-closed on raw odometry {math.hypot(hx, hy) * 1000:.1f} mm")
    assert math.hypot(x, y) < 0.020 and abs(math.degrees(th)) < 1.0
    assert math.hypot(hx, hy) > 0.05        # the contrast the demo is there to show
    assert moves.truth and moves.board and len(moves.truth) > 100       # the path was followed, not only its end
    assert "square 1 m CCW (board moves, gyro heading)" in text and "square 0.5 m CCW (host, odometry)" in text
    png = tmp_path / "paths.png"
    demo.plot([(host, moves)], png)
    assert png.stat().st_size > 20_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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
