# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Stale bytes between clients and a second client, from the host and the CLI (issue 17 items 4 and 9): a partial
frame left by a client that died mid-frame is dropped after the frame gap on both sides (the board's link and the
host's), the virtual board restarts its parser for a new client, and a second client of the virtual board is told
it is busy."""
from __future__ import annotations

import socket
import threading
import time

import pytest
from cli_helpers import run_cli

from viperdrive.board import Board
from viperdrive.board.link import Link
from viperdrive.errors import BoardBusy
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.robot.config import RobotConfig
from viperdrive.shared import params
from viperdrive.shared import protocol as P
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board

HALF_FRAME = bytes((P.SYNC, 0x40))      # sync + LEN 64: the parser would wait for 66 more bytes


@pytest.fixture(scope="module")
def vb():
    with VirtualBoard() as v:
        yield v


def _hostport(url):
    host, _, port = url[len("socket://"):].rpartition(":")
    return host, int(port)


def _die_mid_frame(vb):
    """A client that connects, sends sync + a length and goes away (after the board's parser has them)."""
    before = vb.stats()["rx_bytes"]
    s = socket.create_connection(_hostport(vb.url))
    s.sendall(HALF_FRAME)
    wait_until(lambda: vb.stats()["rx_bytes"] >= before + len(HALF_FRAME), 5.0, vb.clock,
               what="the half frame in the board's parser")
    s.close()
    wait_until(lambda: not vb.stats()["link_connected"], 5.0, vb.clock, what="the client gone")


def test_info_after_a_client_died_mid_frame(vb):
    # before: the board's parser waited for the 66 bytes LEN 64 claims, and every `info` run's HELLO (5 bytes)
    # vanished into it: the next 13 runs failed with "no reply"
    before = Board(vb.url, config=RobotConfig())
    before.configure()
    timeouts0 = before.diag().get("frame_timeouts", 0)
    before.cleanup()
    _die_mid_frame(vb)
    codes = []
    for _ in range(3):
        r = run_cli("info", "--port", vb.url, "--json")
        codes.append(r.returncode)
        assert r.returncode == 0, r.stderr
    b = Board(vb.url, config=RobotConfig())
    b.configure()
    try:
        d = b.diag()
    finally:
        b.cleanup()
    print(f"after a client died mid-frame: info exit codes {codes}, board frame_timeouts "
          f"{timeouts0} -> {d['frame_timeouts']}")
    assert d["frame_timeouts"] == timeouts0 + 1


def test_a_partial_frame_inside_a_session_costs_no_reply(vb):
    # sync + LEN 64 injected toward the board between two SET_VELs of a 100 Hz loop: before, the next 5 SET_VELs
    # (65 bytes) went into the stale frame and 5 replies in a row were missed (the 6th would be LinkLost)
    vb.reset()
    b = Board(vb.url, config=RobotConfig())
    b.configure()
    try:
        b.activate()
        d0 = b.diag()
        t0 = d0.get("frame_timeouts", 0)
        after = []                  # misses of the 20 cycles after the injection
        clock = b.clock
        t_end = clock.now() + 1.5
        nxt = clock.now()
        i = 0
        while clock.now() < t_end:
            b.write(2.0, 2.0)
            nxt += 0.01
            clock.sleep(nxt - clock.now())
            s = b.read()
            i += 1
            if i == 50:
                vb.fault("inject", hex=HALF_FRAME.hex())
            elif 50 < i <= 70:
                after.append(0 if s.fresh else 1)
        total = b.total_misses
        d = b.diag()
        host_timeouts = b.link.stats()["frame_timeouts"]
        b.deactivate()
    finally:
        b.cleanup()
    sent = d["host_link"]["frames_tx"] - d0["host_link"]["frames_tx"]
    parsed = d["frames_ok"] - d0["frames_ok"]
    print(f"partial frame injected inside a 100 Hz session: the host sent {sent} frames, the board parsed {parsed}; "
          f"{sum(after)} of the next 20 replies not there when read ({total} in the whole 1.5 s: a reply late "
          f"on a busy machine), board frame_timeouts +{d.get('frame_timeouts', 0) - t0}")
    # every frame the host sent reached the board's parser whole: the stale frame swallowed none (before: the next
    # 5 SET_VELs went into it and 5 replies in a row were missed). Counted, not timed: how many replies are late
    # is how busy the machine is.
    assert sent > 100 and parsed == sent
    # exactly the injected frame dropped on the board, and no frame of the board's dropped on the host
    assert d["frame_timeouts"] == t0 + 1 and host_timeouts == 0


def test_the_host_drops_a_partial_frame_after_its_gap():
    # a board end that sends sync + a length, stops (a board that reset mid-frame), then answers HELLO 100 ms later:
    # before, the host's parser swallowed the INFO into the stale frame and HELLO timed out
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    info = P.pack_info(P.PROTOCOL_VERSION, params.schema_hash(), 500, 4096, "fake", "fake")

    def serve():
        conn, _ = srv.accept()
        with conn:
            conn.recv(64)                       # the HELLO (after pyserial's open has flushed its input)
            conn.sendall(HALF_FRAME)
            time.sleep(0.3)                     # longer than the host's frame gap (100 ms)
            conn.sendall(info)
            time.sleep(0.5)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    link = Link(f"socket://127.0.0.1:{port}")
    link.open()
    try:
        payload = link.request(P.pack_hello(), P.INFO, timeout_s=1.0)
        stats = link.stats()
    finally:
        link.close()
        t.join(2)
        srv.close()
    assert P.unpack_info(payload)[4] == "fake"
    print(f"host: partial frame dropped after the gap, then INFO: frame_timeouts {stats['frame_timeouts']}, "
          f"garbage {stats['garbage_bytes']}")
    assert stats["frame_timeouts"] == 1 and stats["garbage_bytes"] == 2


def test_a_second_client_is_told_the_board_is_busy(vb):
    vb.reset()
    first = Board(vb.url, config=RobotConfig())
    first.configure()
    try:
        # the library: BoardBusy (a PortError, exit code 3) at once, not a timeout
        t0 = time.monotonic()
        with pytest.raises(BoardBusy, match="busy: another client holds the virtual board"):
            Board(vb.url, config=RobotConfig()).configure()
        took = time.monotonic() - t0
        # the CLI: the same words, exit code 3, no "may not run viperdrive firmware"
        r = run_cli("info", "--port", vb.url)
        # the first client is still served
        assert first.get_param("kp") == pytest.approx(params.defaults()["kp"])
    finally:
        first.cleanup()
    print(f"second client: BoardBusy after {took * 1e3:.0f} ms; CLI exit {r.returncode}: {r.stderr.strip()}")
    assert took < 0.5
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "busy: another client holds the virtual board" in r.stderr
    assert "viperdrive firmware" not in r.stderr and "Traceback" not in r.stderr
    # once the first client is gone the line is free again
    wait_until(lambda: not vb.stats()["link_connected"], 5.0, vb.clock, what="the first client gone")
    r = run_cli("info", "--port", vb.url, "--json")
    assert r.returncode == 0, r.stderr
    assert vb.stats()["link_busy_rejects"] >= 2
