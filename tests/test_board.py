# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board lifecycle, read/write units, miss counter, faults, services: over loop:// and the test responder."""
import math
import threading
import time

import pytest
from board_responder import Responder

from viperdrive.board import Board, count_delta, fault_text
from viperdrive.board.link import Link
from viperdrive.errors import BadValue, BoardFault, LinkLost, PortError, VersionMismatch
from viperdrive.robot.config import RobotConfig
from viperdrive.shared import params
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board

# 20 Hz: read() may wait up to 40 ms for a late reply, so a loaded test machine does not fake misses
CFG = RobotConfig(wheel_radius=0.0325, max_rim_speed=0.55, update_rate=20.0)
CPR = 4096
K = CPR / (2 * math.pi)


@pytest.fixture
def responder():
    with Responder(cpr=CPR) as r:
        yield r


def cycle(board, left, right, period=0.01):
    state = board.read()
    board.write(left, right)
    board.clock.sleep(period)       # the board's time: the host's for the responder, board time on a virtual board
    return state


def test_lifecycle_end_to_end(responder):
    with Board(responder.url, config=CFG) as board:
        info = board.info
        assert info.protocol_version == P.PROTOCOL_VERSION and info.schema_hash == params.schema_hash()
        assert board.counts_per_rev == CPR
        responder.pos = [12345, -999]          # stale encoder counts and a stale setpoint from before
        responder.last_set_vel = (777, 777)
        first = board.activate()
        # zero command first, then zero encoders, then enable: nothing old is ever executed
        tail = responder.received[-4:]
        assert tail == [P.SET_VEL, P.ZERO, P.ENABLE, P.SET_VEL]
        assert first.enabled and first.fresh and first.counts == (0, 0)
        t_start = time.monotonic()
        states = [cycle(board, 2.0, -1.0) for _ in range(30)]
        elapsed = time.monotonic() - t_start
        assert responder.last_set_vel == (round(2.0 * K), round(-1.0 * K))
        assert all(s.fresh for s in states[1:])
        last = board.read()
        # position in rad = 2*pi*counts/cpr; velocity is the board's estimate in rad/s
        assert last.position == pytest.approx((2 * math.pi * last.counts[0] / CPR, 2 * math.pi * last.counts[1] / CPR))
        # the responder integrates the commanded 2 rad/s over the time the loop ran (30 cycles of >= 10 ms)
        assert 2.0 * 0.29 * 0.9 <= last.position[0] <= 2.0 * elapsed * 1.05 and last.position[1] < 0
        assert last.velocity == pytest.approx((round(2.0 * K) / K, round(-1.0 * K) / K))
        board.deactivate()
        assert responder.enabled is False and responder.last_set_vel == (0, 0)
    assert board.link is None or not board.link.is_open


def test_count_delta_across_the_wrap():
    assert count_delta(-(2**31) + 5, 2**31 - 5) == 10
    assert count_delta(2**31 - 5, -(2**31) + 5) == -10
    assert count_delta(5, 65530, bits=16) == 11 and count_delta(100, 32768 + 100, bits=16) == -32768


def test_positions_continue_across_the_int32_counter_wrap(responder):
    """Board is where counts become rad: its positions continue across the board's int32 wrap (odometry and
    joint_states take positions in rad and never see the wrap); `counts` stays the raw wire value."""
    responder.zero_counts = [2**31 - 1500, -(2**31) + 1500]     # ZERO on activate leaves the counters here
    with Board(responder.url, config=CFG) as board:
        first = board.activate()
        assert first.counts == (2**31 - 1500, -(2**31) + 1500)
        states = [first] + [cycle(board, 15.0, -15.0) for _ in range(40)]
        states.append(board.read())
    # 15 rad/s = 9778 counts/s: both counters cross the wrap within ~0.15 s of the 40+ cycles of >= 10 ms
    assert states[-1].counts[0] < 0 < states[-1].counts[1]
    left = [s.position[0] for s in states]
    right = [s.position[1] for s in states]
    assert all(b >= a for a, b in zip(left[:-1], left[1:], strict=True))
    assert all(b <= a for a, b in zip(right[:-1], right[1:], strict=True))
    turned = (left[-1] - left[0], right[-1] - right[0])
    raw = ((states[-1].counts[0] - first.counts[0]) % 2**32, (first.counts[1] - states[-1].counts[1]) % 2**32)
    assert turned == pytest.approx((raw[0] / K, -raw[1] / K), abs=1e-9)
    assert 1500 / K < turned[0] < 15.0 * 2 and -15.0 * 2 < turned[1] < -1500 / K
    assert not board.down               # the wrap is no restart


def test_one_exchange_per_cycle(responder):
    with Board(responder.url, config=CFG) as board:
        board.activate()
        before = responder.set_vel_count
        n_frames = board.link.stats()["frames_tx"]
        for _ in range(20):
            cycle(board, 1.0, 1.0)
        assert responder.set_vel_count - before == 20
        assert board.link.stats()["frames_tx"] - n_frames == 20
        # read() right after write() waits for the reply: those exchanges are timed, all fresh
        s0 = board.link.stats()
        for _ in range(10):
            board.write(1.0, 1.0)
            assert board.read().fresh
        # an exchange whose reply was already waiting when the host looked (this process was descheduled for over
        # 1 ms: how often depends on the machine's load) only bounds the round trip: it is counted, not recorded.
        # Every exchange is one or the other, exactly once.
        s1 = board.link.stats()
        timed, unmeasured = s1["rtt_n"] - s0["rtt_n"], s1["rtt_unmeasured"] - s0["rtt_unmeasured"]
        assert timed + unmeasured == 10 and responder.set_vel_count - before == 30


def test_write_clamps_jointly_before_converting(responder):
    with Board(responder.url, config=CFG) as board:
        board.activate()
        limit = 0.55 / 0.0325                   # rad/s
        board.write(4 * limit, 2 * limit)       # 4x over: both scaled by 1/4, ratio kept
        board.read()
        assert responder.last_set_vel == (round(limit * K), round(limit / 2 * K))
        with pytest.raises(BadValue, match="finite"):
            board.write(float("nan"), 0.0)


def test_miss_holds_values_then_link_lost(responder):
    with Board(responder.url, config=CFG) as board:
        board.activate()
        for _ in range(5):
            good = cycle(board, 1.0, 1.0)
        responder.drop_state = 3
        held = [cycle(board, 1.0, 1.0) for _ in range(4)]
        assert [s.fresh for s in held] == [True, False, False, False]
        assert [s.misses for s in held[1:]] == [1, 2, 3]
        assert held[1].counts == held[0].counts and held[1].sampled == held[0].sampled
        assert cycle(board, 1.0, 1.0).fresh and board.misses == 0
        assert good.fresh
        responder.drop_state = 100
        seen = []
        with pytest.raises(LinkLost, match="6 cycles in a row"):
            for _ in range(10):
                seen.append(cycle(board, 1.0, 1.0))
        assert [s.misses for s in seen[1:]] == [1, 2, 3, 4, 5]
        assert board.stats()["total_misses"] == 3 + 6
    assert responder.enabled is False            # the context manager still disabled it


def test_context_manager_disables_on_exception(responder):
    with pytest.raises(ZeroDivisionError):
        with Board(responder.url, config=CFG) as board:
            board.activate()
            cycle(board, 3.0, 3.0)
            assert responder.enabled
            raise ZeroDivisionError("boom inside the with block")
    assert responder.enabled is False and responder.last_set_vel == (0, 0)


@pytest.mark.parametrize("kw, words", [
    # a board with the previous protocol (an old firmware): both versions named
    (dict(version=P.PROTOCOL_VERSION - 1), [f"protocol v{P.PROTOCOL_VERSION - 1}", f"protocol v{P.PROTOCOL_VERSION}",
                                            "viperdrive flash"]),
    (dict(schema=0x12345678), ["schema 12345678", f"schema {params.schema_hash():08x}", "viperdrive flash"]),
])
def test_version_mismatch_refuses(kw, words):
    with Responder(**kw) as r:
        board = Board(r.url, config=CFG)
        with pytest.raises(VersionMismatch) as e:
            board.configure()
        for w in words:
            assert w in str(e.value)
        assert e.value.exit_code == 5
        assert not board.link.is_open


def test_fault_refuses_enable_then_clear(responder):
    responder.fault = P.FAULT_STALL_LEFT
    with Board(responder.url, config=CFG) as board:
        with pytest.raises(BoardFault, match="left wheel stalled"):
            board.activate()
        d = board.diag()
        assert d["fault_code"] == 1 and d["fault"] == fault_text(1) and d["flag_names"] == ["TIMER_SOFT"]
        assert board.clear_fault() == P.FAULT_STALL_LEFT
        assert board.clear_fault() == P.FAULT_NONE
        assert board.activate().enabled


def test_params_services(responder):
    with Board(responder.url, config=CFG) as board:
        assert board.get_param("deadman_ms") == 100
        assert board.get_param("kp") == pytest.approx(0.04)
        assert board.set_param("kp", 0.05) == pytest.approx(0.05, rel=1e-6)
        assert responder.values["kp"] == pytest.approx(0.05, rel=1e-6)
        n = len(responder.received)
        with pytest.raises(BadValue, match=r"kp=20 outside \[0.0, 10.0\]"):
            board.set_param("kp", 20)
        with pytest.raises(BadValue, match="did you mean 'deadman_ms'"):
            board.set_param("deadman", 10)
        with pytest.raises(BadValue, match="whole number"):
            board.set_param("deadman_ms", 150.5)
        assert len(responder.received) == n     # refused before anything was sent
        board.save_params()
        assert responder.saved["kp"] == pytest.approx(0.05, rel=1e-6)


def test_odom_and_telemetry(responder):
    with Board(responder.url, config=CFG) as board:
        sync = board.link.sync_clock()
        before = time.monotonic()
        o = board.odometry()
        after = time.monotonic()
        assert (o.x, o.y, o.theta) == pytest.approx((1.5, -0.25, 0.785398))
        # the board's stamp on the host clock: between the request and its reply, within the sync's error (half
        # the best exchange's delay); a slow reply widens the window, it does not move the stamp out of it
        err = sync["delay_s"] / 2 + 0.001
        assert before - err <= o.sampled <= after + err, (before, o.sampled, after, sync)
        assert board.telemetry(100) == 100
        frames = []
        wait_until(lambda: frames.extend(board.telemetry_frames()) or len(frames) >= 20, 2.0, what="20 records")
        seqs = [f["seq"] for f in frames]
        assert seqs == sorted(seqs)
        # board stamps mapped onto the host clock: each one before its arrival (within the sync's error), records at
        # least 10 ms apart (the responder sends at most at 100 Hz: a machine that runs it late spreads them)
        assert all(-0.002 <= f["handled"] - f["t"] < 1.0 for f in frames), [(f["handled"], f["t"]) for f in frames]
        assert frames[-1]["t"] - frames[0]["t"] >= 0.0095 * (len(frames) - 1)
        assert board.telemetry(0) == 0


def test_reconnect_after_replug_rereads_state(responder):
    with Board(responder.url, config=CFG) as board:
        board.activate()
        for _ in range(10):
            cycle(board, 2.0, 2.0)
        epoch = board.epoch
        responder.unplug()
        with pytest.raises(LinkLost):
            for _ in range(20):
                cycle(board, 2.0, 2.0)
        threading.Timer(0.2, responder.replug).start()
        board.reconnect(timeout_s=5.0)
        assert board.epoch == epoch + 1 and responder.enabled
        s = board.read()
        assert s.fresh and s.counts == (0, 0)
        board.write(1.0, 1.0)
        assert cycle(board, 1.0, 1.0).fresh and cycle(board, 1.0, 1.0).fresh


def test_lifecycle_over_loop_url():
    # loop:// echoes every frame back: queue the board's replies into the loop, then let Board consume them
    link = Link("loop://").open()
    link.send(P.pack_info(P.PROTOCOL_VERSION, params.schema_hash(), 1000, 2048, "loop", "loop"))
    board = Board("loop://", config=CFG, link=link, clock_sync=False)
    assert board.configure().counts_per_rev == 2048
    for reply in (P.pack_state(5, 5, 0, 0, 0), P.pack_zero_ack(), P.pack_enable_ack(True),
                  P.pack_state(0, 0, 0, 0, P.ST_ENABLED)):
        link.send(reply)
    assert board.activate().enabled
    assert board.read().fresh
    misses = []
    for i in range(12):
        board.write(1.0, 1.0)
        if i in (0, 1, 5):
            link.send(P.pack_state(100 * i, 0, 2048, 0, P.ST_ENABLED))   # the board's reply for this cycle
        try:
            misses.append(board.read())
        except LinkLost:
            break
    assert [s.fresh for s in misses] == [True, True, False, False, False, True, False, False, False, False, False]
    assert misses[1].velocity == pytest.approx((2 * math.pi, 0.0))
    assert misses[4].counts == (100, 0) and misses[4].misses == 3
    assert board.misses == 6
    board.cleanup()


def test_activate_never_returns_a_state_from_before_zero():
    # A SET_VEL sent just before activate() (a stale command from another tool) has its STATE still in flight;
    # the board answers in order, so that STATE and the one answering activate's first zero command both come
    # before ZERO_ACK. Neither may be returned as the activated state (the robot would "jump" in odometry).
    link = Link("loop://").open()
    link.send(P.pack_info(P.PROTOCOL_VERSION, params.schema_hash(), 1000, 2048, "loop", "loop"))
    board = Board("loop://", config=CFG, link=link, clock_sync=False)
    board.configure()
    for reply in (P.pack_state(8370, 8370, 500, 500, 0),       # answers the stale SET_VEL
                  P.pack_state(8371, 8371, 0, 0, 0),           # answers activate's first SET_VEL(0, 0)
                  P.pack_zero_ack(), P.pack_enable_ack(True),
                  P.pack_state(0, 0, 0, 0, P.ST_ENABLED)):     # answers activate's last SET_VEL(0, 0)
        link.send(reply)
    first = board.activate()
    assert first.counts == (0, 0) and first.enabled
    assert link.stats()["stale_dropped"] == 1
    board.cleanup()


# ---- against the virtual board (the real firmware on the MicroPython unix port with a simulated robot) ----

def test_sim_port_lifecycle_drive_and_odometry_vs_truth():
    from viperdrive.motion.drive import DriveController
    from viperdrive.motion.loop import DriveLoop
    from viperdrive.motion.odometry import Odometry
    from viperdrive.rigs.virtual import VirtualBoard

    cfg = RobotConfig(update_rate=100.0, wheel_separation=0.152, wheel_radius=0.0325)
    # the ideal robot: odometry with the nominal geometry matches it (the default robot's is off by design)
    with VirtualBoard(baud=115200, robot="ideal") as vb, Board(vb.url, config=cfg) as board:
        assert board.info.board == "viperdrive-sim"
        board.activate()
        vb.reset("pose")
        ctl = DriveController(cfg)
        odom = Odometry(cfg, counts_per_rev=board.counts_per_rev)
        loop = DriveLoop(board, ctl, odom)
        stats = loop.run(cycles=150, on_cycle=lambda s, k: ctl.command(0.15, 0.8))
        truth = vb.truth()
        x, y, th = odom.pose
        # host odometry from the board's positions (rad) follows the simulated robot (same geometry as the plant)
        assert math.hypot(x - truth["x"], y - truth["y"]) < 0.02
        assert abs(th - truth["theta"]) < 0.05
        assert x > 0.1 and y > 0.0 and th > 0.4            # forward and turning left (CCW, REP-103)
        assert board.stats()["total_misses"] <= 3 and stats["cycles"] == 150
        assert odom.twist == pytest.approx((0.15, 0.8), abs=0.03)
        board.deactivate()
        assert not board.active and not vb.truth()["energized"]
    assert not vb.alive


def test_sim_cut_link_counts_misses_then_link_lost_and_recovers():
    from viperdrive.rigs.virtual import VirtualBoard

    with VirtualBoard() as vb, Board(vb.url, config=CFG) as board:
        board.activate()
        for _ in range(5):
            cycle(board, 3.0, 3.0)
        vb.fault("cut_link", on=True)
        seen = []
        with pytest.raises(LinkLost):
            for _ in range(10):
                seen.append(cycle(board, 3.0, 3.0))
        assert [s.misses for s in seen if not s.fresh] == [1, 2, 3, 4, 5]
        vb.fault("cut_link", on=False)
        board.write(0.0, 0.0)
        board.clock.sleep(0.05)
        fresh = [cycle(board, 0.0, 0.0).fresh for _ in range(5)]
        assert fresh[-1] and board.misses == 0


def test_board_sim_port_starts_private_virtual_board():
    """open_board("sim") starts a virtual board the Board owns (its clock too) and stops it with the Board; Board
    itself takes only ports, and says where a port name goes."""
    from viperdrive.ports import open_board
    with open_board("sim", config=CFG) as board:
        sim = board.options["owns"].virtual_board
        assert sim.alive and board.link.url == sim.url and board.clock is sim.clock
        board.activate()
        assert board.read().enabled
    assert not sim.alive
    with pytest.raises(PortError, match="ended with its cleanup"):
        board.configure()       # its virtual board is gone: said so, not a link error on a dead port
    for name in ("sim", "auto"):
        with pytest.raises(BadValue, match=rf"open_board\('{name}'"):
            Board(name, config=CFG).configure()
