# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The sim backend (mcu/hal/sim.py) and the virtual board's TCP pieces (sim/net.py) on the MicroPython unix port:
# serial byte-rate pacing (with a stepped clock, so timing is exact and load-independent), link faults, the
# watchdog deadline and the control period in board time (sim/world.py: board time is whole periods, so every
# figure here is exact however loaded the machine is), the grant that holds the world, and real sockets for the
# link server and the control endpoint.
import json
import socket
import sys
import time
from array import array

_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import net  # noqa: E402
import plant  # noqa: E402
import world as world_mod  # noqa: E402
from viperdrive.hal import sim  # noqa: E402


class Clock:
    """A clock the test moves by hand (ticks_us values)."""

    def __init__(self):
        self.now = 1000

    def __call__(self):
        return self.now

    def sleep_us(self, us):
        self.now += us


class Wire:
    """The far end of the line: bytes the host sends (queued), bytes the board sent (collected)."""

    def __init__(self):
        self.generation = 0
        self.incoming = []
        self.sent = bytearray()

    def recv(self):
        return self.incoming.pop(0) if self.incoming else None

    def send(self, data):
        self.sent.extend(data)


BAUD = 115200
BYTE_US = 10 * 1000000 / BAUD      # 86.8 us


def _link(**kw):
    c = Clock()
    w = Wire()
    link = sim.PacedLink(w, baud=BAUD, clock=c, sleep_us=c.sleep_us, rng=plant.Rng(3), **kw)
    return c, w, link


def test_host_bytes_arrive_at_the_baud_rate():
    c, w, link = _link()
    w.incoming.append(bytes(range(100)))
    buf = bytearray(200)
    assert link.readinto(buf) is None          # the burst starts now: not one byte has fully arrived
    got = bytearray()
    for k in (1, 10, 57, 100, 130):
        c.now = 1000 + int(k * BYTE_US) + 1
        n = link.readinto(buf) or 0
        got.extend(buf[:n])
        assert len(got) == min(k, 100), (k, len(got))
    assert bytes(got) == bytes(range(100))
    assert link.rx_bytes == 100


def test_board_bytes_leave_at_the_baud_rate_in_usb_frame_chunks():
    c, w, link = _link()
    t0 = c.now
    frame = bytes(range(22))                   # a STATE frame's size: 1.91 ms of line time
    assert link.write(frame) == 22
    assert len(w.sent) == 0
    c.now = t0 + int(11 * BYTE_US) + 1         # 11 bytes have left the UART, but the bridge's 1 ms frame has not
    link.pump()
    assert len(w.sent) == 0
    c.now = t0 + 1200                          # a frame later: the 13 bytes that have left go in one packet
    link.pump()
    assert len(w.sent) == 13
    c.now = t0 + int(22 * BYTE_US) + 1         # the burst is complete: the rest goes at once
    link.pump()
    assert bytes(w.sent) == frame
    # never a byte before its line time: a second write after the line went idle starts its own timing
    c.now += 100000
    link.write(b"abc")
    link.pump()
    assert len(w.sent) == 22
    c.now += int(2 * BYTE_US) + 1
    link.pump()
    assert bytes(w.sent[22:]) == b"ab"         # the bridge's frame timer ran out long ago: what is due goes
    c.now += int(1 * BYTE_US) + 1
    link.pump()
    assert bytes(w.sent[22:]) == b"abc"


def test_next_due_points_at_the_next_line_event():
    c, w, link = _link()
    assert link.next_due_us() is None          # idle line
    link.write(bytes(22))
    due = link.next_due_us()
    assert 990 <= due <= 1000, due             # the USB frame boundary comes before the burst's end (1910 us)
    w.incoming.append(bytes(3))
    link.pump()
    due = link.next_due_us()
    assert 80 <= due <= 90, due                # the first host byte completes after one byte time


def test_full_transmit_buffer_blocks_like_a_uart():
    c, w, link = _link(tx_buffer=32)
    t0 = c.now
    link.write(bytes(200))                     # 168 bytes more than the buffer holds: write() waits the line out
    waited = c.now - t0
    assert waited >= (200 - 32) * BYTE_US - BYTE_US, waited
    link.flush()
    assert len(w.sent) == 200
    assert c.now - t0 >= 200 * BYTE_US - 1


def test_cut_link_drops_both_ways():
    c, w, link = _link()
    link.cut = True
    w.incoming.append(b"hello")
    link.write(b"state")
    c.now += 100000
    buf = bytearray(16)
    assert not link.readinto(buf)
    link.pump()
    assert len(w.sent) == 0
    assert link.dropped_rx == 5 and link.dropped_tx == 5
    link.cut = False
    w.incoming.append(b"again")
    link.pump()
    c.now += 100000
    assert link.readinto(buf) == 5 and bytes(buf[:5]) == b"again"


def test_corruption_flips_one_bit_in_that_share_of_bytes():
    c, w, link = _link()
    link.corrupt_rate = 0.1
    data = bytes(i & 0xFF for i in range(4000))
    w.incoming.append(data)
    link.pump()
    c.now += 10 ** 6
    buf = bytearray(5000)
    n = link.readinto(buf)
    assert n == 4000
    flipped = 0
    for i in range(n):
        x = buf[i] ^ data[i]
        if x:
            flipped += 1
            assert x & (x - 1) == 0, x          # exactly one bit
    print("corrupt 0.1: %d of 4000 bytes flipped" % flipped)
    assert 330 < flipped < 470, flipped
    assert link.corrupted == flipped


def test_garbage_is_injected_toward_the_board_and_takes_line_time():
    c, w, link = _link()
    link.inject(b"\x00\xaa\x55" * 10)
    buf = bytearray(64)
    c.now += int(15 * BYTE_US) + 1
    assert link.readinto(buf) == 15
    c.now += int(15 * BYTE_US) + 1
    assert link.readinto(buf) == 15
    assert link.injected == 30


def test_a_new_client_does_not_get_the_old_ones_bytes():
    c, w, link = _link()
    w.incoming.append(b"old-client")
    link.write(b"to-old")
    link.pump()
    w.generation += 1                          # a reconnect
    w.incoming.append(b"new")
    link.pump()
    c.now += 10 ** 5
    buf = bytearray(32)
    n = link.readinto(buf)
    assert bytes(buf[:n]) == b"new"
    assert len(w.sent) == 0 and link.reconnects == 1


def _board(clock_path=None, link_state=None, **kw):
    desc = plant.load_description(_root + "/sim/robots/default.json")
    p = plant.Plant(desc)
    w = world_mod.World(p, 500, clock_path=clock_path, link_state=link_state)
    return p, w, sim.Board({"backend": "sim"}, world=w, **kw)


def test_board_outputs_only_while_energized():
    p, w, b = _board()
    assert b.counter_bits == 16
    b.write_duty(20000, 20000)
    assert b.duty_l == 0                       # ignored while de-energized
    b.set_energized(True)
    assert p.energized
    b.write_duty(20000, -20000)
    assert (b.duty_l, b.duty_r) == (20000, -20000)
    b.set_energized(False)
    assert (b.duty_l, b.duty_r) == (0, 0) and not p.energized
    buf = array("i", [7, 7])
    b.read_counts(buf)
    assert list(buf) == [0, 0]


def test_watchdog_deadline_in_board_time():
    p, w, b = _board(reset_cause=1)
    assert b.reset_cause() == 1
    assert not b.watchdog_expired()            # not started: never expires
    b.watchdog_start(40)
    w.sleep_us(10000)
    b.watchdog_feed()
    assert not b.watchdog_expired()
    w.sleep_us(39000)
    assert not b.watchdog_expired()            # 39 ms of board time since the feed
    w.sleep_us(2000)
    assert b.watchdog_expired()                # 41 ms
    b.watchdog_feed()
    assert not b.watchdog_expired()


def test_world_steps_plant_then_firmware_once_per_period_and_freezes():
    p, w, b = _board()
    seen = []

    def step():
        # the plant has already been stepped for this period when the firmware's step runs, and the firmware's
        # clock reads the period's start: board time is whole periods
        seen.append((p.steps, w.t_us, b.ticks_us()))

    b.start_periodic(500, step)
    t0 = w.now_us()
    w.sleep_us(200000)
    assert len(seen) == 100, len(seen)        # exactly: 200 ms of board time are 100 periods, on any machine
    assert all(seen[i][0] == seen[i - 1][0] + 1 for i in range(1, len(seen)))
    assert all(seen[i][1] - seen[i - 1][1] == 2000 for i in range(1, len(seen)))
    assert all(0 <= ticks - start < 2000 for _, start, ticks in seen)     # inside its own period
    assert w.now_us() - t0 >= 200000
    b.frozen = True
    steps = p.steps
    w.sleep_us(100000)
    assert len(seen) == 100                    # frozen: the firmware's step no longer runs ...
    assert p.steps == steps + 50               # ... while the physics goes on
    b.stop_periodic()
    w.sleep_us(20000)
    assert len(seen) == 100 and p.steps == steps + 60     # detached: the world alone
    st = b.loop_stats()
    print("500 Hz world: periods %d, host period min %d max %d us, late max %d us, overruns %d"
          % (st["periods"], st["period_min_us"], st["period_max_us"], st["late_max_us"], st["overruns"]))
    assert st["periods"] == 100 and st["board_time_s"] >= 0.32


def test_board_time_is_monotonic_and_never_passes_the_next_period():
    p, w, b = _board()
    last = w.now_us()
    for _ in range(2000):
        now = w.now_us()
        assert now >= last
        assert now < w.t_us + w.period_us      # the next period has not started: its time is not here yet
        last = now
        w.run_due()


class FakeLinkState:
    def __init__(self):
        self.generation = 0
        self.conn = False

    def connected(self):
        return self.conn


def test_a_grant_holds_the_world_only_for_its_own_connected_client():
    import os
    path = "/tmp/viperdrive-mptest-clock-%d.bin" % (int.from_bytes(os.urandom(4), "little"))
    f = open(path, "wb")
    f.write(bytes(64))
    f.close()
    ls = FakeLinkState()
    p, w, b = _board(clock_path=path, link_state=ls)
    import struct

    def grant(gen, until_us):
        g = open(path, "r+b")
        g.seek(32)
        g.write(struct.pack("<IIQIIQ", gen, 0, until_us, gen, 0, until_us))
        g.close()

    def board_us_in_file():
        g = open(path, "rb")
        data = g.read(24)
        g.close()
        a, c = struct.unpack_from("<QQ", data, 8)
        assert data[:4] == b"VDCK" and a == c
        return a

    w.sleep_us(20000)
    assert board_us_in_file() == w.t_us == 20000
    # a client connects (generation 1) and its host grants up to 30 ms: the world stops there
    ls.generation, ls.conn = 1, True
    grant(1, 30000)
    t0 = time.ticks_ms()
    while time.ticks_diff(time.ticks_ms(), t0) < 60:
        w.run_due()
        time.sleep_us(200)
    assert w.t_us == 30000, w.t_us
    # a grant for another client (an old generation) holds nothing
    grant(0, 30000)
    w.sleep_us(10000)
    assert w.t_us >= 40000
    grant(1, w.t_us + 4000)
    t0 = time.ticks_ms()
    while time.ticks_diff(time.ticks_ms(), t0) < 40:
        w.run_due()
    held = w.t_us
    # the client disconnects: free at once
    ls.conn = False
    w.sleep_us(10000)
    assert w.t_us >= held + 10000
    os.remove(path)


def _client(port):
    s = socket.socket()
    s.connect(socket.getaddrinfo("127.0.0.1", port)[0][-1])
    return s


def _wait_recv(srv, tries=200):
    for _ in range(tries):
        d = srv.recv()
        if d:
            return d
        time.sleep_ms(2)
    return None


def test_link_server_serves_one_client_and_a_reconnect():
    srv = net.LinkServer("127.0.0.1", 0)
    try:
        assert 20000 <= srv.port < 32000
        a = _client(srv.port)
        a.send(b"first")
        assert _wait_recv(srv) == b"first"
        gen = srv.generation
        srv.send(b"reply")
        assert a.recv(16) == b"reply"
        a.close()
        b = _client(srv.port)
        b.send(b"second")
        assert _wait_recv(srv) == b"second"
        assert srv.generation == gen + 1 and srv.clients == 2 and srv.disconnects == 1
        b.close()
    finally:
        srv.close()


def test_link_server_tells_a_second_client_it_is_busy():
    srv = net.LinkServer("127.0.0.1", 0, busy_frame=b"BUSY")
    try:
        a = _client(srv.port)
        a.send(b"first")
        assert _wait_recv(srv) == b"first"
        b = _client(srv.port)
        got = b""
        for _ in range(200):
            srv.recv()
            try:
                b.setblocking(False)
                got += b.recv(16)
            except OSError:
                pass
            if got:
                break
            time.sleep_ms(2)
        assert got == b"BUSY" and srv.busy_rejects == 1
        b.send(b"hello?")                   # every chunk it sends is answered the same way
        again = b""
        for _ in range(200):
            srv.recv()
            try:
                again += b.recv(16)
            except OSError:
                pass
            if again:
                break
            time.sleep_ms(2)
        assert again == b"BUSY"
        a.send(b"still mine")               # the holder is not disturbed
        assert _wait_recv(srv) == b"still mine" and srv.generation == 1
        b.close()
        # the holder closes and reconnects at once: its FIN comes before the new SYN, so the new connection is the
        # line's next client, not a busy one
        a.close()
        c = _client(srv.port)
        c.send(b"back")
        assert _wait_recv(srv) == b"back"
        assert srv.generation == 2 and srv.busy_rejects == 1
        c.close()
    finally:
        srv.close()


def test_control_server_answers_json_lines():
    def handler(req):
        if req.get("cmd") == "boom":
            raise ValueError("bad value")
        return {"ok": True, "echo": req}

    srv = net.ControlServer("127.0.0.1", 0, handler)
    try:
        c = _client(srv.port)
        c.send(b'{"cmd": "truth"}\nnot json\n[1, 2]\n{"cmd": "boom"}\n')
        got = b""
        for _ in range(200):
            srv.poll(0)
            c.setblocking(False)
            try:
                d = c.recv(4096)
            except OSError:
                d = b""
            got += d or b""
            if got.count(b"\n") >= 4:
                break
            time.sleep_ms(2)
        lines = [json.loads(x) for x in got.split(b"\n") if x]
        assert len(lines) == 4, got
        assert lines[0] == {"ok": True, "echo": {"cmd": "truth"}}
        assert lines[1]["ok"] is False and "not JSON" in lines[1]["error"]
        assert lines[2]["ok"] is False and "object" in lines[2]["error"]
        assert lines[3]["ok"] is False and "bad value" in lines[3]["error"]
        c.close()
    finally:
        srv.close()


def test_hostport_parsing():
    assert net.parse_hostport("127.0.0.1:5000", "--listen") == ("127.0.0.1", 5000)
    for bad in ("5000", "host:", "h:70000", ":1"):
        try:
            net.parse_hostport(bad, "--listen")
        except net.NetError as e:
            assert "--listen" in str(e)
        else:
            raise AssertionError(bad)
