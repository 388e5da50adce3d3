# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Properties of the frame Parser, checked by hypothesis under CPython. The conftest plugin also runs this file in
# MicroPython, which has no hypothesis: there proptest_lite draws the same strategies from a seeded PRNG (no
# shrinking), so the board's parser is held to the same properties.
#
# Frames under test are built here with an independent CRC (binascii.crc_hqx is CRC-16/CCITT-FALSE with init
# 0xFFFF; MicroPython's binascii lacks it, so a bitwise implementation stands in), not with protocol.encode.
import binascii

from shared import protocol as P

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    def fast(n):
        return settings(max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow])
except ImportError:  # MicroPython
    from proptest_lite import given, settings
    from proptest_lite import strategies as st

    def fast(n):
        return settings(max_examples=n // 4)   # MicroPython runs slower: fewer examples per property


def _crc_bitwise(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def crc_ref(data):
    if hasattr(binascii, "crc_hqx"):
        return binascii.crc_hqx(data, 0xFFFF)
    return _crc_bitwise(data)


def frame_ref(cmd, payload):
    """[0xAA][LEN][CMD][PAYLOAD][CRC_LO][CRC_HI] with the reference CRC."""
    body = bytes((len(payload) + 1, cmd)) + payload
    crc = crc_ref(body)
    return bytes((P.SYNC,)) + body + bytes((crc & 0xFF, crc >> 8))


def no_sync(b):
    return bytes(x for x in b if x != P.SYNC)


def flip(t):
    frame, pos, mask = t
    b = bytearray(frame)
    b[pos % len(b)] ^= mask
    return bytes(b)


# strategies
frame_parts = st.tuples(st.integers(0, 255), st.binary(min_size=0, max_size=P.MAX_LEN - 1))
frames = frame_parts.map(lambda t: frame_ref(t[0], t[1]))
clean_garbage = st.binary(min_size=0, max_size=24).map(no_sync)
pieces = st.one_of(
    st.binary(min_size=0, max_size=24),                                       # any noise, sync bytes included
    frames,                                                                   # a good frame
    st.tuples(frames, st.integers(0, 200), st.integers(1, 255)).map(flip),   # a frame with a corrupted byte
    st.tuples(frames, st.integers(1, 67)).map(lambda t: t[0][:t[1]]),         # a frame cut short
    st.integers(0, 255).map(lambda n: bytes((P.SYNC, n))),                    # a bare header: any LEN
)
streams = st.lists(pieces, min_size=0, max_size=12).map(lambda ps: b"".join(ps))
chunk_sizes = st.lists(st.integers(1, 40), min_size=1, max_size=20)


def feed_chunked(p, data, sizes):
    out = []
    i = 0
    k = 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        out.extend(p.feed(data[i:i + n]))
        assert p.bytes_in == p.frame_bytes + p.garbage_bytes + p.pending()
        i += n
        k += 1
    return out


def counters(p):
    return (p.frames, p.frame_bytes, p.crc_errors, p.length_errors, p.garbage_bytes, p.bytes_in, p.pending())


@fast(1000)
@given(st.binary(min_size=0, max_size=400))
def test_never_raises_on_random_bytes(data):
    p = P.Parser()
    out = p.feed(data)
    assert p.frames == len(out)
    assert p.bytes_in == len(data) == p.frame_bytes + p.garbage_bytes + p.pending()


@fast(1000)
@given(streams)
def test_every_returned_frame_has_a_correct_crc_and_was_in_the_stream(data):
    p = P.Parser()
    out = p.feed(data)
    for cmd, payload in out:
        assert 0 <= len(payload) <= P.MAX_LEN - 1
        # rebuilt with the independent CRC, the frame must be there, byte for byte
        assert frame_ref(cmd, payload) in data, (cmd, payload)


@fast(1000)
@given(st.lists(st.tuples(clean_garbage, frame_parts), min_size=0, max_size=10), clean_garbage)
def test_frames_between_sync_free_garbage_are_all_recovered(parts, tail):
    data = b""
    expect = []
    garbage = len(tail)
    for junk, (cmd, payload) in parts:
        data += junk + frame_ref(cmd, payload)
        expect.append((cmd, payload))
        garbage += len(junk)
    data += tail
    p = P.Parser()
    out = p.feed(data)
    assert out == expect
    assert p.crc_errors == 0 and p.length_errors == 0
    assert p.garbage_bytes == garbage and p.pending() == 0
    assert p.frame_bytes == sum(len(pl) + 1 + P.OVERHEAD for _, pl in expect)


@fast(1000)
@given(streams, chunk_sizes)
def test_counters_add_up(data, sizes):
    p = P.Parser()
    out = feed_chunked(p, data, sizes)   # asserts bytes_in == frame_bytes + garbage_bytes + pending() per chunk
    assert p.bytes_in == len(data)
    assert p.frames == len(out)
    assert p.frame_bytes == sum(len(pl) + 1 + P.OVERHEAD for _, pl in out)
    assert p.pending() < P.MAX_FRAME


@fast(1000)
@given(streams, chunk_sizes)
def test_chunking_does_not_change_the_result(data, sizes):
    whole = P.Parser()
    out_whole = whole.feed(data)
    chunked = P.Parser()
    out_chunked = feed_chunked(chunked, data, sizes)
    assert out_chunked == out_whole
    assert counters(chunked) == counters(whole)


@fast(1000)
@given(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-2 ** 31, 2 ** 31 - 1),
       st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(0, 31))
def test_set_vel_and_state_round_trip(a, b, c, d, status):
    p = P.Parser()
    out = p.feed(P.pack_set_vel(a, b) + P.pack_state(a, b, c, d, status))
    assert [cmd for cmd, _ in out] == [P.SET_VEL, P.STATE]
    assert P.unpack_set_vel(out[0][1]) == (a, b)
    assert P.unpack_state(out[1][1]) == (a, b, c, d, status)
    assert P.pack_set_vel(a, b) == frame_ref(P.SET_VEL, out[0][1])
