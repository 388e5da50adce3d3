# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""FixedRateLoop on absolute deadlines (simulated clock: deterministic), DriveLoop against the test responder."""
import math

import pytest
from board_responder import Responder

from viperdrive.board import Board
from viperdrive.motion.drive import DriveController
from viperdrive.motion.loop import DriveLoop, FixedRateLoop
from viperdrive.motion.odometry import Odometry
from viperdrive.robot.config import RobotConfig

pytestmark = pytest.mark.board


class SimClock:
    """Simulated time for the loop: sleep() advances it; steps add their own cost."""

    def __init__(self):
        self.t = 100.0

    def now(self):
        return self.t

    def sleep(self, s):
        self.t += max(0.0, s)


def test_absolute_deadlines_no_drift_and_overrun_skips():
    clock = SimClock()
    loop = FixedRateLoop(100.0, spin=0.0, clock=clock)
    starts = []

    def step(now, k):
        starts.append(round((now - 100.0) * 1000, 6))
        clock.t += 0.035 if k == 5 else 0.003     # 3 ms of work; one step of 35 ms
    stats = loop.run(step, cycles=12)
    # deadlines stay on the 10 ms grid even though every step costs 3 ms (no drift)
    assert starts[:6] == [0, 10, 20, 30, 40, 50]
    # the 35 ms step (started at 50 ms) ends at 85 ms: deadlines 60, 70, 80 are skipped, not run in a burst
    assert starts[6:8] == [90, 100]
    assert stats["overruns"] == 1 and stats["skipped"] == 3 and stats["cycles"] == 12
    assert stats["exec_max_us"] == pytest.approx(35000) and stats["margin_pct"] == pytest.approx(-250.0)
    assert stats["late_max_us"] == 0.0


def test_stop_by_return_value_and_duration():
    clock = SimClock()
    loop = FixedRateLoop(50.0, spin=0.0, clock=clock)
    assert loop.run(lambda now, k: k < 3)["cycles"] == 4
    clock2 = SimClock()
    assert FixedRateLoop(50.0, spin=0.0, clock=clock2).run(lambda n, k: None, duration_s=1.0)["cycles"] == 50
    with pytest.raises(ValueError):
        FixedRateLoop(0.0)


def test_drive_loop_against_responder():
    cfg = RobotConfig(update_rate=100.0, max_rim_acceleration=100.0)
    with Responder(cpr=4096) as r, Board(r.url, config=cfg) as board:
        board.activate()
        ctl = DriveController(cfg)
        odom = Odometry(cfg, counts_per_rev=board.counts_per_rev)
        loop = DriveLoop(board, ctl, odom)

        def on_cycle(state, k):
            ctl.command(0.2, 0.0)
        stats = loop.run(cycles=50, on_cycle=on_cycle)
        assert stats["cycles"] == 50
        per_rad = 4096 / (2 * math.pi)
        assert r.last_set_vel == (round(0.2 / cfg.wheel_radius * per_rad),) * 2
        x, y, th = odom.pose
        assert 0.2 * 0.3 < x < 0.2 * 0.6 and abs(y) < 1e-9 and th == 0.0
        assert odom.twist[0] == pytest.approx(0.2, rel=1e-3)
        # a re-activation restarts the encoders: the loop rebases odometry instead of jumping back
        board.activate()
        loop.run(cycles=5, on_cycle=on_cycle)
        assert odom.pose[0] >= x
