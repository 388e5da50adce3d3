# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Parser resynchronisation cases, deterministic. This one file runs in CPython (pytest) and in the MicroPython
# unix port (conftest.py plugin), so the board and the host are shown to recover from the same broken streams
# in the same way, with the same counters.
from shared import protocol as P

# Frames used below. Their bytes hold no 0xAA except the sync byte (checked in test_fixture_frames_have_one_sync),
# so the exact garbage counts are predictable.
SV = P.pack_set_vel(1000, -1000)                    # 13 bytes
ST = P.pack_state(123456, -654321, 4096, -2048, P.ST_ENABLED)  # 22 bytes
HELLO = P.pack_hello()                              # 5 bytes
GARBAGE = b"\x00\x01\x55\xff\x10hello\xab\xa9"       # 12 bytes, no 0xAA


def check_counters(p):
    # every byte fed ends up in exactly one place
    assert p.bytes_in == p.frame_bytes + p.garbage_bytes + p.pending(), (
        p.bytes_in, p.frame_bytes, p.garbage_bytes, p.pending())


def feed_all(p, data, chunk=None):
    out = []
    if chunk is None:
        out.extend(p.feed(data))
        check_counters(p)
    else:
        for i in range(0, len(data), chunk):
            out.extend(p.feed(data[i:i + chunk]))
            check_counters(p)
    return out


def bad_crc(frame):
    b = bytearray(frame)
    b[-1] ^= 0x01
    return bytes(b)


def test_fixture_frames_have_one_sync():
    for f in (SV, ST, HELLO):
        assert f.count(b"\xaa") == 1, f
    assert b"\xaa" not in GARBAGE
    assert (len(SV), len(ST), len(HELLO), len(GARBAGE)) == (13, 22, 5, 12)


def test_garbage_only_is_counted_and_dropped():
    p = P.Parser()
    assert feed_all(p, GARBAGE * 10) == []
    assert p.garbage_bytes == 120 and p.bytes_in == 120 and p.pending() == 0
    assert p.frames == 0 and p.crc_errors == 0 and p.length_errors == 0


def test_garbage_then_frame_then_garbage():
    p = P.Parser()
    out = feed_all(p, GARBAGE + SV + GARBAGE)
    assert out == [(P.SET_VEL, SV[3:-2])]
    assert P.unpack_set_vel(out[0][1]) == (1000, -1000)
    assert p.frames == 1 and p.frame_bytes == 13 and p.garbage_bytes == 24


def test_bad_length_zero_and_too_long():
    for bad_len in (0, P.MAX_LEN + 1, 0xFF):
        p = P.Parser()
        out = feed_all(p, bytes((P.SYNC, bad_len)) + SV)
        assert out == [(P.SET_VEL, SV[3:-2])], bad_len
        # the sync byte is dropped, then the length byte is hunted past as garbage
        assert p.length_errors == 1 and p.garbage_bytes == 2 and p.crc_errors == 0, bad_len


def test_longest_and_shortest_frames():
    longest = P.encode(0x42, bytes(range(P.MAX_LEN - 1)))
    assert len(longest) == P.MAX_FRAME
    p = P.Parser()
    out = feed_all(p, HELLO + longest + HELLO, chunk=5)
    assert out == [(P.HELLO, b""), (0x42, bytes(range(P.MAX_LEN - 1))), (P.HELLO, b"")]
    assert p.length_errors == 0 and p.garbage_bytes == 0 and p.frame_bytes == 5 + 68 + 5
    try:
        P.encode(0x42, bytes(P.MAX_LEN))
    except ValueError:
        return
    raise AssertionError("encode accepted a 65-byte CMD+PAYLOAD")


def test_bad_crc_then_good_frame():
    p = P.Parser()
    out = feed_all(p, bad_crc(ST) + SV)
    assert out == [(P.SET_VEL, SV[3:-2])]
    # the whole broken frame is garbage: its sync byte, then the hunt through the rest
    assert p.crc_errors == 1 and p.garbage_bytes == len(ST) and p.length_errors == 0


def test_every_single_bit_flip_is_rejected():
    # CRC-16 detects every single-bit error, and a flipped sync or length bit is a hunt or a length error. The
    # good frame after the broken one always comes through, once enough bytes follow to reject what a flipped
    # LEN bit claims (up to MAX_FRAME bytes): the padding stands for the traffic that follows on a live link.
    pad = bytes(P.MAX_FRAME)
    for i in range(len(SV) * 8):
        b = bytearray(SV)
        b[i // 8] ^= 1 << (i % 8)
        p = P.Parser()
        out = feed_all(p, bytes(b) + HELLO + pad)
        assert out == [(P.HELLO, b"")], (i, out)
        assert p.pending() == 0 and p.garbage_bytes == len(SV) + len(pad), i
        if i < 8:
            assert p.crc_errors == 0 and p.length_errors == 0, i     # no sync byte: plain garbage
        elif SV[1] ^ (1 << (i % 8)) > P.MAX_LEN and i < 16:
            assert p.length_errors == 1 and p.crc_errors == 0, i
        else:
            assert p.crc_errors == 1 and p.length_errors == 0, i


def test_frame_starting_inside_a_broken_frame():
    # A header whose LEN claims 30 bytes, then a real frame that starts inside it. The real frame is found once
    # the claimed frame is complete and fails its CRC: only the broken sync byte and its own bytes are lost.
    broken = bytes((P.SYNC, 30, P.SET_VEL))
    tail = b"\x01" * (30 + P.OVERHEAD - len(broken) - len(SV))   # the rest of the claimed frame
    p = P.Parser()
    out = feed_all(p, broken + SV + tail)
    assert out == [(P.SET_VEL, SV[3:-2])]
    assert p.crc_errors == 1 and p.garbage_bytes == len(broken) + len(tail) and p.pending() == 0


def test_frame_inside_a_truncated_header_waits_for_the_claimed_length():
    # Until enough bytes arrive to check the claimed frame, the embedded one is held (pending), not lost.
    broken = bytes((P.SYNC, 60, 0x01))
    p = P.Parser()
    assert feed_all(p, broken + SV) == []
    assert p.pending() == len(broken) + len(SV)
    out = feed_all(p, b"\x00" * (60 + P.OVERHEAD - len(broken) - len(SV)))
    assert out == [(P.SET_VEL, SV[3:-2])]
    assert p.crc_errors == 1


def test_sync_bytes_inside_payload_and_crc():
    # 0xAA in the payload and a frame whose CRC bytes contain 0xAA: the parser must not resync inside them
    payload = b"\xaa\xaa\x01\xaa"
    f = P.encode(0x33, payload)
    p = P.Parser()
    out = feed_all(p, f + f + GARBAGE + f, chunk=1)
    assert out == [(0x33, payload)] * 3 and p.crc_errors == 0 and p.garbage_bytes == len(GARBAGE)
    # search a few payloads for one whose CRC has an 0xAA byte, then check it parses
    for k in range(2000):
        f = P.encode(0x01, bytes((k & 0xFF, k >> 8)))
        if P.SYNC in f[-2:]:
            p = P.Parser()
            assert feed_all(p, f + SV, chunk=1) == [(0x01, f[3:-2]), (P.SET_VEL, SV[3:-2])]
            return
    raise AssertionError("no frame with 0xAA in its CRC among 2000 payloads")


def test_split_at_every_position():
    stream = GARBAGE + SV + ST + HELLO
    expect = [(P.SET_VEL, SV[3:-2]), (P.STATE, ST[3:-2]), (P.HELLO, b"")]
    for cut in range(len(stream) + 1):
        p = P.Parser()
        out = p.feed(stream[:cut])
        check_counters(p)
        out += p.feed(stream[cut:])
        check_counters(p)
        assert out == expect, cut
        assert p.garbage_bytes == len(GARBAGE) and p.frame_bytes == len(stream) - len(GARBAGE)


def test_several_frames_in_one_chunk_and_byte_by_byte():
    stream = (SV + ST + HELLO) * 5 + bad_crc(SV) + GARBAGE + ST
    for chunk in (None, 1, 2, 3, 7, 64, 1000):
        p = P.Parser()
        out = feed_all(p, stream, chunk)
        assert len(out) == 16, (chunk, len(out))
        assert out[-1] == (P.STATE, ST[3:-2])
        assert p.frames == 16 and p.crc_errors == 1 and p.garbage_bytes == len(SV) + len(GARBAGE), chunk
        assert p.bytes_in == len(stream)


def test_feed_byte_and_poll_api():
    # the board's allocation-free path: cmd code back, payload in buf[3:3+payload_len] until the next call
    p = P.Parser()
    got = []
    for b in SV + HELLO + ST:
        cmd = p.feed_byte(b)
        while cmd >= 0:
            got.append((cmd, bytes(p.buf[3:3 + p.payload_len]), p.payload()))
            cmd = p.poll()
    assert [g[0] for g in got] == [P.SET_VEL, P.HELLO, P.STATE]
    assert got[0][1] == got[0][2] == SV[3:-2]
    assert got[2][1] == ST[3:-2]
    assert p.poll() == -1 and p.pending() == 0


def test_reset_drops_a_partial_frame_as_garbage():
    p = P.Parser()
    feed_all(p, ST[:10])
    assert p.pending() == 10
    p.reset()
    check_counters(p)
    assert p.pending() == 0 and p.garbage_bytes == 10 and p.timeouts == 1
    # the tail of the dropped frame is garbage now, the next frame is whole
    out = feed_all(p, ST[10:] + SV)
    assert out == [(P.SET_VEL, SV[3:-2])] and p.garbage_bytes == len(ST)


def test_reset_counts_a_dropped_partial_frame_as_a_timeout():
    p = P.Parser()
    p.reset()                       # nothing held: nothing counted
    assert p.timeouts == 0
    feed_all(p, bytes((P.SYNC, 0x40)))
    p.reset()
    assert p.timeouts == 1 and p.garbage_bytes == 2 and p.pending() == 0


def read(p, now, data=b""):
    """What a reader does per read at ticks `now`: mark + feed when the read returned bytes, expire when it did
    not. -> the frames that came out."""
    out = []
    if not data:
        cmd = p.expire(now)
        while cmd >= 0:
            out.append((cmd, p.payload()))
            cmd = p.poll()
        check_counters(p)
        return out
    p.mark(now)
    out.extend(p.feed(data))
    check_counters(p)
    return out


def test_a_frame_left_half_sent_is_dropped_after_the_gap():
    # a client died after sync + length (LEN 64: the parser would wait for 66 more bytes); the next one sends HELLO
    p = P.Parser(gap_us=2000)
    assert read(p, 1000, bytes((P.SYNC, 0x40))) == []
    assert read(p, 2500) == [] and p.pending() == 2         # 1.5 ms of silence: still waiting
    assert read(p, 3001) == [] and p.pending() == 0         # 2.001 ms: dropped
    assert p.timeouts == 1 and p.garbage_bytes == 2 and p.crc_errors == 0
    assert read(p, 500000, HELLO) == [(P.HELLO, b"")]
    # without the gap the same HELLO disappears into the stale frame (what 13 `viperdrive info` runs saw)
    q = P.Parser(gap_us=0)
    assert read(q, 1000, bytes((P.SYNC, 0x40))) == [] and read(q, 9000000) == []
    assert read(q, 9500000, HELLO) == [] and q.pending() == 7


def test_a_late_read_that_finds_the_rest_drops_nothing():
    # only an empty read proves silence: a reader that comes back late and finds the rest of the frame waiting
    # has not seen a gap (it may have arrived right after the first part)
    p = P.Parser(gap_us=2000)
    read(p, 0, ST[:7])
    assert read(p, 10000000, ST[7:]) == [(P.STATE, ST[3:-2])]
    assert p.timeouts == 0 and p.garbage_bytes == 0


def test_expire_keeps_a_complete_frame_held_behind_the_stale_one():
    # a corrupted LEN (0x30: 52 bytes claimed) holds back a whole SET_VEL that came right after it; after the
    # silence the broken candidate is dropped and the SET_VEL comes out of expire()
    p = P.Parser(gap_us=2000)
    broken = bytes((P.SYNC, 0x30, P.SET_VEL, 1, 2, 3))
    assert read(p, 0, broken + SV) == []
    assert read(p, 1000) == []
    assert read(p, 2100) == [(P.SET_VEL, SV[3:-2])]
    assert p.timeouts == 1 and p.garbage_bytes == len(broken) and p.pending() == 0
    # a partial candidate inside the stale bytes is dropped too: each counts
    p = P.Parser(gap_us=2000)
    read(p, 0, bytes((P.SYNC, 0x30, 7, 7, P.SYNC, 0x09, P.SET_VEL)))
    assert read(p, 5000) == [] and p.timeouts == 2 and p.pending() == 0
    assert read(p, 6000, SV) == [(P.SET_VEL, SV[3:-2])]


def test_new_bytes_after_the_silence_never_complete_a_stale_candidate():
    # sync + LEN 1 + CMD + one CRC byte, silence, then the last CRC byte: the frame's bytes stopped arriving, so
    # it is dropped before the late byte is looked at (even though the CRC would match)
    p = P.Parser(gap_us=2000)
    assert read(p, 0, HELLO[:4]) == []
    assert read(p, 3000) == [] and p.timeouts == 1
    assert read(p, 3100, HELLO[4:] + HELLO) == [(P.HELLO, b"")]


def test_gap_times_wrap_like_ticks_us():
    # tick differences are modulo 2**30 (ticks_us on 32-bit ports): a silence across the wrap is measured right
    p = P.Parser(gap_us=2000)
    top = 0x3FFFFFFF
    read(p, top - 500, bytes((P.SYNC, 0x40)))
    assert read(p, 1000) == [] and p.pending() == 2         # 1.5 ms after, across the wrap
    assert read(p, 1600) == [] and p.pending() == 0 and p.timeouts == 1


def test_frame_gap_is_a_few_byte_times_with_a_floor():
    assert P.frame_gap_us(115200) == P.FRAME_GAP_MIN_US == 2000
    assert P.frame_gap_us(9600) == 8 * 10 * 1000000 // 9600       # 8.3 ms: 8 byte times at 9600 baud
    assert P.frame_gap_us(921600, 20000) == 20000
    assert P.Parser().gap_us == 2000


def test_counters_are_cumulative_across_many_errors():
    p = P.Parser()
    stream = b""
    for i in range(20):
        stream += GARBAGE[: i % 12] + bytes((P.SYNC, 0)) + bad_crc(SV) + HELLO
    out = feed_all(p, stream, chunk=11)
    assert len(out) == 20 and all(o == (P.HELLO, b"") for o in out)
    assert p.length_errors == 20 and p.crc_errors == 20 and p.frames == 20
    assert p.garbage_bytes == sum(i % 12 for i in range(20)) + 20 * (2 + len(SV))


def test_counters_wrap_below_the_small_int_limit():
    # 2**30 - 1 is the largest small int on a 32-bit board: past it every increment would allocate. Each counter
    # wraps to 0 there instead, and the byte accounting still adds up modulo 2**30.
    top = 0x3FFFFFFF
    p = P.Parser()
    p.bytes_in = top - 5
    p.garbage_bytes = top - 3
    p.frame_bytes = top - 1       # consistent start: bytes_in == frame_bytes + garbage_bytes (mod 2**30)
    p.frames = p.crc_errors = p.length_errors = top
    out = feed_all_wrapped(p, GARBAGE + bytes((P.SYNC, 0)) + bad_crc(HELLO) + SV)
    assert out == [(P.SET_VEL, SV[3:-2])]
    assert p.bytes_in == len(GARBAGE) + 2 + len(HELLO) + len(SV) - 6
    assert p.garbage_bytes == len(GARBAGE) + 2 + len(HELLO) - 4
    assert p.frame_bytes == len(SV) - 2
    assert p.frames == 0 and p.crc_errors == 0 and p.length_errors == 0
    for name in ("bytes_in", "garbage_bytes", "frame_bytes", "frames", "crc_errors", "length_errors"):
        assert 0 <= getattr(p, name) <= top, name


def feed_all_wrapped(p, data):
    out = p.feed(data)
    assert (p.bytes_in - p.frame_bytes - p.garbage_bytes - p.pending()) % 0x40000000 == 0
    return out
