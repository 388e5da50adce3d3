# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# MicroPython only: the board's receive path, Parser.feed_byte() + poll(), allocates nothing in steady state.
# micropython.heap_lock() turns any allocation into MemoryError, so a clean pass over a long stream of good
# frames, garbage, bad lengths and bad CRCs is the proof (docs/firmware.md). Parser.feed() builds a list and bytes
# objects on purpose (host convenience); the board never calls it.
import micropython

from shared import protocol as P


def make_stream(repeats):
    """A stream exercising every parser path, and the frames and payload byte sum a correct parser finds."""
    bad = bytearray(P.pack_state(1, 2, 3, 4, 5))
    bad[-2] ^= 0x40                                      # bad CRC
    good = (P.pack_set_vel(1000, -1000), P.pack_state(-5, 7, 100, -100, P.ST_ENABLED),
            P.encode(0x33, b"\xaa\x01\xaa"),             # sync bytes inside the payload
            P.encode(0x42, bytes(range(P.MAX_LEN - 1))),  # the longest frame
            P.pack_hello())                              # the shortest
    junk = (b"\x00\x01\xff\x55", bytes((P.SYNC, 0)), bytes((P.SYNC, 200)), bytes(bad), b"\xaa")
    s = bytearray()
    frames = 0
    total = 0
    for i in range(repeats):
        f = good[i % len(good)]
        s += junk[i % len(junk)]
        s += f
        frames += 1
        for b in f[3:-2]:
            total += b
    s += P.pack_hello()     # flushes a trailing lone sync byte through the hunt
    return bytes(s), frames + 1, total


def run_locked(p, stream):
    """Feed stream byte by byte with the heap locked; (frames, payload byte sum, MemoryError or None)."""
    n = len(stream)
    frames = 0
    total = 0
    err = None
    i = 0
    micropython.heap_lock()
    try:
        while i < n:
            cmd = p.feed_byte(stream[i])
            while cmd >= 0:
                frames += 1
                k = 3
                end = 3 + p.payload_len
                buf = p.buf
                while k < end:
                    total += buf[k]
                    k += 1
                cmd = p.poll()
            i += 1
    except MemoryError as e:
        err = e
    finally:
        micropython.heap_unlock()
    return frames, total, err, i


def test_heap_lock_catches_an_allocation():
    # the proof below can fail: under the lock, the allocating convenience API raises
    p = P.Parser()
    micropython.heap_lock()
    try:
        p.feed(P.pack_hello())
        raised = False
    except MemoryError:
        raised = True
    finally:
        micropython.heap_unlock()
    assert raised, "heap_lock did not catch Parser.feed's list allocation"


def test_feed_byte_and_poll_allocate_nothing():
    stream, frames, total = make_stream(4000)
    assert len(stream) > 100000, len(stream)
    p = P.Parser()
    # one pass warms up (nothing should need it, but steady state is what the board runs in)
    got = run_locked(p, stream[:1000])
    assert got[2] is None, "allocation in the first 1000 bytes at byte %d: %r" % (got[3], got[2])
    p = P.Parser()
    got_frames, got_total, err, at = run_locked(p, stream)
    assert err is None, "allocation at stream byte %d: %r" % (at, err)
    assert got_frames == frames, (got_frames, frames)
    assert got_total == total, (got_total, total)
    assert p.frames == frames
    # 800 of each broken thing went through the locked path (more CRC errors: candidates at 0xAA in payloads)
    assert p.crc_errors >= 800 and p.length_errors >= 1600, (p.crc_errors, p.length_errors)
    assert p.bytes_in == len(stream) == p.frame_bytes + p.garbage_bytes + p.pending()
    assert len(p.buf) == P.MAX_FRAME + 1   # the one preallocated buffer, never replaced


def test_garbage_hunt_allocates_nothing():
    # a long run of pure noise (no frame at all), with sync bytes sprinkled in: the hunt path under lock
    noise = bytearray(20000)
    x = 12345
    for i in range(len(noise)):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        noise[i] = (x >> 16) & 0xFF
    p = P.Parser()
    frames, _, err, at = run_locked(p, noise)
    assert err is None, "allocation at noise byte %d: %r" % (at, err)
    assert p.bytes_in == 20000 == p.frame_bytes + p.garbage_bytes + p.pending()
    # a good frame right after the noise comes through (the tail of the noise may hide it only up to 68 bytes)
    frames2, _, err, _ = run_locked(p, P.pack_set_vel(1, 2) + bytes(P.MAX_FRAME) + P.pack_set_vel(3, 4))
    assert err is None, "allocation after the noise: %r" % (err,)
    assert frames2 >= 1 and frames + frames2 == p.frames


def test_payload_read_in_place_matches_unpack():
    # the board reads the payload from buf without copying; it is the frame's payload until the next call
    p = P.Parser()
    frame = P.pack_set_vel(-123456, 654321)
    cmd = -1
    for b in frame:
        cmd = p.feed_byte(b)
    assert cmd == P.SET_VEL and p.payload_len == 8
    mv = memoryview(p.buf)[3:3 + p.payload_len]
    assert P.unpack_set_vel(bytes(mv)) == (-123456, 654321)
    assert p.poll() == -1 and p.pending() == 0


def test_counter_wrap_allocates_nothing():
    # the wrap path itself (taken once per 2**30 counts on a board) under the lock
    stream, frames, _ = make_stream(50)
    p = P.Parser()
    top = 0x3FFFFFFF
    p.bytes_in = top - 100
    p.frame_bytes = top - 100   # with garbage_bytes 0 the accounting starts consistent (mod 2**30)
    p.garbage_bytes = 0
    p.frames = p.crc_errors = p.length_errors = top - 2
    got_frames, _, err, at = run_locked(p, stream)
    assert err is None, "allocation at stream byte %d: %r" % (at, err)
    assert got_frames == frames
    assert p.bytes_in == len(stream) - 101 and p.frames == frames - 3
    assert (p.bytes_in - p.frame_bytes - p.garbage_bytes - p.pending()) % 0x40000000 == 0


def test_mark_and_expire_allocate_nothing():
    # the board's stale-frame path under the lock: partial frames dropped after a silence, a complete frame held
    # behind a broken one recovered, the tick difference across the wrap
    p = P.Parser(gap_us=2000)
    half = bytes((P.SYNC, 0x40))
    broken = bytes((P.SYNC, 0x30, P.SET_VEL, 1, 2, 3)) + P.pack_set_vel(5, 6)
    hello = P.pack_hello()
    chunks = (half, broken, hello)
    frames = 0
    err = None
    now = 0x3FFFFFFF - 50000
    micropython.heap_lock()
    try:
        for _k in range(200):
            j = 0
            while j < 3:
                chunk = chunks[j]
                j += 1
                p.mark(now)
                i = 0
                n = len(chunk)
                while i < n:
                    cmd = p.feed_byte(chunk[i])
                    i += 1
                    while cmd >= 0:
                        frames += 1
                        cmd = p.poll()
                now = (now + 1000) & 0x3FFFFFFF
                cmd = p.expire(now)
                now = (now + 2500) & 0x3FFFFFFF
                cmd = p.expire(now)
                while cmd >= 0:
                    frames += 1
                    cmd = p.poll()
    except MemoryError as e:
        err = e
    finally:
        micropython.heap_unlock()
    assert err is None, "allocation in mark/expire: %r" % (err,)
    # per round: the SET_VEL behind the broken frame and the HELLO; the half frame and the broken one time out
    assert frames == 400, frames
    assert p.timeouts == 400, p.timeouts
    assert p.bytes_in == p.frame_bytes + p.garbage_bytes + p.pending()
