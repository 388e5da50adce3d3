# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The bridge when the board restarts behind the open port (its watchdog) and when it cannot confirm the board is
disabled at shutdown. An in-process bridge on a virtual board (the real firmware), a second DDS participant on a
random domain (localhost only) that publishes cmd_vel and records odom and diagnostics as the graph sees them."""
import logging
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ros2_graph import LOCAL_ENV, Graph

from viperdrive.board import Board
from viperdrive.robot.config import RobotConfig
from viperdrive.ros2 import msgs
from viperdrive.ros2.bridge import Ros2Bridge
from viperdrive.ros2.options import BridgeOptions
from viperdrive.timebase import wait_until

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

DOMAIN = random.SystemRandom().randint(120, 220)
VIPERDRIVE = Path(sys.executable).parent / "viperdrive"
NOT_CONFIRMED = "NOT confirmed disabled (the board's deadman stops the wheels)"


def config():
    return RobotConfig.from_dict({"update_rate": 100, "cmd_vel_timeout": 0.5, "max_rim_acceleration": 1.0,
                                  "ros2": {"use_stamped_vel": False, "publish_rate": 50}})


def test_watchdog_reset_board_down_error_diagnostics_odom_continuous_commands_ignored(caplog):
    from viperdrive.rigs.virtual import VirtualBoard

    cfg = config()
    with VirtualBoard() as vb:
        # the default miss budget (5 cycles of board time): the restart takes no board time on the virtual board
        bridge = Ros2Bridge(Board(vb.url, config=cfg), cfg,
                            BridgeOptions(namespace="rdown", domain_id=DOMAIN, env=LOCAL_ENV))
        graph = Graph("rdown", DOMAIN)
        runner = threading.Thread(target=bridge.run, daemon=True)
        try:
            with caplog.at_level(logging.INFO, logger="viperdrive.ros2"):
                runner.start()
                # driven at 0.3 m/s until odom shows 0.2 m, however slowly a busy machine runs the board
                graph.spin_until(lambda: graph.odom and graph.odom[-1][2] > 0.2, 20.0, vb.clock, v=0.3,
                                 what="odom past 0.2 m")
                x_before = graph.odom[-1][2]
                n_before = len(graph.odom)
                vb.fault("freeze_control", on=True)     # the board's watchdog resets it behind the open port
                # watchdog_ms, the reboot and the bridge's next cycle: about 1.5 s of board time
                graph.spin_until(lambda: bridge.board_down is not None, 8.0, vb.clock, v=0.3,
                                 what="the bridge noticing the board's restart")
                # what the bridge does after it noticed: keeps publishing the last pose, standing, and ignores the
                # commands. Spun until the graph has seen enough of both
                n_noticed = len(graph.odom)
                graph.spin_until(lambda: bridge.ignored_commands > 25
                                 and sum(o[3] == 0.0 for o in graph.odom[n_noticed:]) > 25, 30.0, vb.clock,
                                 v=0.3, what="25 commands ignored and 25 standing odom messages")
                bridge.stop("test done")
                runner.join(15)
                graph.take()
        finally:
            bridge.stop("test done")
            runner.join(15)
            graph.close()
    assert not runner.is_alive()
    # odom never jumps (the bug: 0.54 m -> 0.003 m in one period): never back (one count of encoder jitter at rest
    # is 0.00002 m), and no step longer than 5 cm. Not a speed bound: the messages' stamps are the host's time and
    # the robot moves in board time, so on a busy machine two messages 16 ms apart can carry 30 ms of driving
    # (a run on a loaded machine measured 9 mm in 16 ms); 5 cm is 170 ms of driving at 0.3 m/s between two
    # 50 Hz messages, a tenth of the jump the bug made
    rows = [o[1:] for o in graph.odom]         # (stamp, x, v)
    steps = [(b[1] - a[1], b[0] - a[0]) for a, b in zip(rows, rows[1:], strict=False)]
    bad = [(i, dx, dt) for i, (dx, dt) in enumerate(steps) if not -0.001 < dx <= 0.05]
    least = min(range(len(steps)), key=lambda i: steps[i][0])
    print(f"odom steps: {len(steps)}, least {steps[least][0]:+.5f} m (step {least}; the firmware froze at "
          f"step {n_before}; twist there {rows[least + 1][2]:+.3f} m/s), most {max(s[0] for s in steps):+.5f} m")
    assert not bad, (bad, rows[max(0, bad[0][0] - 3):bad[0][0] + 4])
    after = rows[n_before:]
    # the bridge stayed up and kept publishing the last pose, standing (twist 0), for the rest of the run
    still = [x for _, x, v in after if v == 0.0]
    assert len(still) > 20 and max(still) == min(still) >= x_before
    assert bridge.ignored_commands > 20             # cmd_vel kept coming and was not executed
    down = [st for st in graph.statuses("viperdrive /rdown: board") if st[0] == msgs.DIAG_ERROR]
    assert down, [st[2] for st in graph.statuses("viperdrive /rdown: board")]
    level, _, message, values = down[-1]
    assert message.startswith("FAULT latched: ") and "board was reset by its watchdog" in message
    assert "not commanding" in message and "re-activate" in values["board_down"]
    assert values["encoders_restarted"] == "True"
    final = graph.statuses("viperdrive /rdown: bridge")[-1]
    # stopped on request, the board confirmed disabled; still ERROR: the board went down during the run
    assert final[0] == msgs.DIAG_ERROR and final[3]["board"] == "disabled, command zero"
    assert bridge.shutdown_problems == []
    logs = [r.getMessage() for r in caplog.records]
    assert sum("board down: the board was reset by its watchdog" in m for m in logs) == 1


def test_shutdown_over_a_cut_link_says_not_confirmed_disabled(caplog):
    from viperdrive.rigs.virtual import VirtualBoard

    cfg = config()
    with VirtualBoard() as vb:
        bridge = Ros2Bridge(Board(vb.url, config=cfg), cfg,
                            BridgeOptions(namespace="rcut", domain_id=DOMAIN, env=LOCAL_ENV))
        graph = Graph("rcut", DOMAIN)
        try:
            bridge.start()
            ticks = iter(range(10**6))

            def heard():                                # ticks until the listener has the bridge's diagnostics
                bridge._step(time.monotonic(), next(ticks))
                graph.take()
                return graph.diag
            wait_until(heard, 30.0, poll=0.01, what="the bridge's diagnostics at the listener")
            vb.fault("cut_link", on=True)               # nothing reaches the board any more
            bridge.stop("interrupted (Ctrl-C)")
            with caplog.at_level(logging.INFO, logger="viperdrive.ros2"):
                bridge.shutdown()

            def last_said():
                graph.take()
                final = graph.statuses("viperdrive /rcut: bridge")
                return final[-1][2].startswith("shut down") and final
            wait_until(last_said, 30.0, poll=0.02, what="the bridge's last diagnostics")
        finally:
            bridge.shutdown()
            graph.close()
    assert bridge.shutdown_problems and bridge.shutdown_problems[0].startswith("deactivate failed: ")
    final = graph.statuses("viperdrive /rcut: bridge")
    assert final, "no last diagnostics"
    level, _, message, values = final[-1]
    assert level == msgs.DIAG_ERROR and values["board"] == NOT_CONFIRMED
    assert message.startswith("shut down: interrupted (Ctrl-C); deactivate failed: ")
    assert values["problem_1"].startswith("deactivate failed: ")
    logs = [r.getMessage() for r in caplog.records]
    assert any("board " + NOT_CONFIRMED in m for m in logs) and not any("board disabled" in m for m in logs)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_duration_must_be_finite_and_positive(value):
    out = subprocess.run([str(VIPERDRIVE), "ros2", "--port", "sim", "--duration", value], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "argument --duration: " in out.stderr and "(0, 86400] s" in out.stderr and "Traceback" not in out.stderr
