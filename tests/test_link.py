# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Link over real pyserial URLs: loop://, socket:// (the test responder), a pty; errors users can act on."""
import errno
import os
import threading
import time

import pytest
import serial
from board_responder import Responder

from viperdrive.board.link import Link, NackError, explain_open_error
from viperdrive.errors import LinkError, LinkLost, NoReplyError, PortError
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.board


def test_loop_frames_counters_and_resync():
    with Link("loop://") as link:
        link.send(P.pack_hello())
        assert link.poll() == [(P.HELLO, b"")]
        good = P.pack_state(1, 2, 3, 4, 5)
        bad_crc = bytearray(good)
        bad_crc[5] ^= 0xFF
        link.send(b"\x01\x02garbage" + bytes(bad_crc) + good + bytes([P.SYNC, 0]) + good)
        frames = link.poll()
        assert frames == [(P.STATE, good[3:-2]), (P.STATE, good[3:-2])]
        s = link.stats()
        assert s["crc_errors"] == 1 and s["length_errors"] == 1
        assert s["garbage_bytes"] >= 9 + 2 and s["resyncs"] == 2
        assert s["frames_rx"] == 3 and s["frames_tx"] == 2


def test_request_reply_nack_and_timeout_over_loop():
    with Link("loop://", baud=115200) as link:
        # loop:// echoes: a request for HELLO's own code gets its echo back as the "reply"
        assert link.request(P.pack_time(1234), P.TIME) == P.pack_time(1234)[3:-2]
        # a NACK for HELLO queued in the loop answers the HELLO request
        link.send(P.pack_nack(P.HELLO, P.NACK_UNKNOWN))
        with pytest.raises(NackError) as e:
            link.request(P.pack_hello(), P.INFO)
        assert (e.value.cmd, e.value.code) == (P.HELLO, P.NACK_UNKNOWN)
        assert "HELLO" in str(e.value) and "unknown command" in str(e.value)
        # nothing answers INFO: a timeout, counted, naming command, reply and URL
        t0 = time.monotonic()
        with pytest.raises(NoReplyError, match=r"no INFO reply to HELLO from loop://"):
            link.request(P.pack_hello(), P.INFO, timeout_s=0.05)
        assert 0.05 <= time.monotonic() - t0 < 0.5
        assert link.stats()["timeouts"] == 1 and link.stats()["nacks"] == 1
        # the echoes that were not replies are kept for poll(), not lost
        assert [c for c, _ in link.poll()] == [P.HELLO, P.HELLO]


def test_timeouts_follow_baud_and_frame_size():
    slow, fast = Link("loop://", baud=9600, margin=0.0), Link("loop://", baud=115200, margin=0.0)
    # SET_VEL (13 B) + STATE (22 B) = 35 B = 350 bits: 36.5 ms at 9600, twice for slack
    assert slow.timeout_for(13, P.STATE) == pytest.approx(2 * 350 / 9600)
    assert fast.timeout_for(13, P.STATE) == pytest.approx(2 * 350 / 115200)
    assert fast.timeout_for(5, P.SAVE_ACK, P.SAVE_PARAMS) > 1.0      # saving writes flash


def test_missing_port_names_existing_ports():
    with pytest.raises(PortError) as e:
        Link("/dev/ttyVIPERDRIVE_NOPE").open()
    assert "does not exist" in str(e.value) and "serial ports present" in str(e.value)
    assert e.value.exit_code == 3


def test_busy_port_names_the_holder():
    master, slave = os.openpty()
    path = os.ttyname(slave)
    try:
        with Link(path):
            with pytest.raises(PortError) as e:
                Link(path).open()
        assert "busy" in str(e.value) and f"pid {os.getpid()}" in str(e.value)
    finally:
        os.close(master)
        os.close(slave)


def test_permission_denied_hint_and_socket_refused():
    err = serial.SerialException(errno.EACCES, "could not open port /dev/ttyACM0: [Errno 13] Permission denied")
    msg = str(explain_open_error("/dev/ttyACM0", err))
    assert "dialout" in msg and "usermod" in msg
    r = Responder()
    url = r.url
    r.close()
    with pytest.raises(PortError, match="cannot connect to socket://"):
        Link(url).open()


def within_stamp(link, responder, tol_s) -> bool:
    """The board's clock read between two host readings maps to a host time between them, within tol_s: the
    bracket, not a single reading, so a test preempted between the readings does not fail."""
    before = time.monotonic()
    board_us = responder.board_us()
    after = time.monotonic()
    mapped = link.board_to_host(board_us)
    assert before - tol_s <= mapped <= after + tol_s, (mapped - before, after - before)
    return True


def test_clock_sync_offset_drift_and_wrap():
    # the board clock starts 0.4 s before its u32 wrap and runs 2 % fast (a big drift: the test must see it
    # through localhost scheduling noise on a loaded machine)
    with Responder(clock_offset_us=2**32 - 400_000, clock_drift_ppm=20000.0) as r, Link(r.url) as link:
        first = link.sync_clock(8)
        assert first["delay_s"] < 0.05
        for _ in range(6):
            time.sleep(0.2)
            link.sync_clock(8)
        drift = link.clock_drift_ppm
        assert drift == pytest.approx(20000.0, abs=2000.0)
        # after the wrap, a board stamp still maps to the host time it was taken at
        assert within_stamp(link, r, 0.005)
        s = link.stats()
        assert s["rtt_n"] >= 48 and s["rtt_p50_ms"] <= s["rtt_p99_ms"] <= s["rtt_max_ms"]


def test_reconnect_after_port_disappears_and_returns():
    with Responder() as r, Link(r.url) as link:
        assert P.unpack_info(link.request(P.pack_hello(), P.INFO))[3] == 4096
        r.unplug()
        with pytest.raises(LinkError):
            for _ in range(3):
                link.request(P.pack_hello(), P.INFO, timeout_s=0.1)
        threading.Timer(0.3, r.replug).start()
        link.reconnect(timeout_s=5.0, interval_s=0.05)
        assert P.unpack_info(link.request(P.pack_hello(), P.INFO))[3] == 4096
        assert link.stats()["reconnects"] == 1
        r.unplug()
        with pytest.raises(PortError, match="did not come back"):
            link.reconnect(timeout_s=0.2, interval_s=0.05)


def test_board_to_host_is_none_until_synced_and_again_after_a_reopen():
    with Responder() as r, Link(r.url) as link:
        assert link.board_to_host(123) is None              # unsynced: no time, not an exchange that failed
        link.sync_clock(4)
        assert within_stamp(link, r, 0.01)
        r.unplug()
        with pytest.raises(LinkLost, match="went away"):
            for _ in range(50):
                link.poll()
                time.sleep(0.01)
        assert not link.is_open
        r.replug()
        assert link.try_reopen() and link.stats()["reconnects"] == 1
        # the board behind the reopened port may have rebooted: its clock fit is gone, like after reconnect()
        assert link.board_to_host(r.board_us()) is None and link.clock_offset is None
        link.sync_clock(4)
        assert within_stamp(link, r, 0.01)


def test_the_link_errors_are_one_family_with_their_own_exit_codes():
    from viperdrive.errors import EXIT_LINK_LOST, EXIT_NO_REPLY, UserError
    assert issubclass(NoReplyError, LinkError) and issubclass(LinkLost, LinkError) and issubclass(LinkError, UserError)
    assert not issubclass(PortError, LinkError)         # a port that will not open is not a link that failed
    assert (NoReplyError("x").exit_code, LinkLost("x").exit_code) == (EXIT_NO_REPLY, EXIT_LINK_LOST) == (4, 8)
