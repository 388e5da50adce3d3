# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# telemetry.Ring: records in order with sequence numbers, the overflow policy (overwrite oldest, count drops),
# the documented viper writer arithmetic under heap_lock, head wrap at 2**32, and the frame round trip.
import micropython

from viperdrive import telemetry
from viperdrive.shared import protocol


@micropython.viper
def vpush(buf, hdr, t_us: int, base_value: int):
    # the exact arithmetic documented in telemetry.py (what the control step does), no call, no allocation
    h = ptr32(hdr)
    b = ptr32(buf)
    k = int(h[0])
    base = (k & int(h[1])) * 10
    b[base + 0] = t_us
    i = 1
    while i < 9:
        b[base + i] = base_value + i
        i += 1
    b[base + 9] = base_value & 0x1F
    h[0] = k + 1


def _push(ring, k):
    ring.push(1000 + k, k, k + 1, k + 2, -k, -k - 1, k * 3, 100, -100, k & 0x1F)


def test_ring_size_holds_n():
    assert telemetry.Ring(64).n == 128
    assert telemetry.Ring(63).n == 64
    assert telemetry.Ring(1).n == 2
    r = telemetry.Ring(10)
    assert len(r.buf) == r.n * telemetry.REC
    assert r.hdr[telemetry.H_MASK] == r.n - 1


def test_drain_in_order_with_seq():
    r = telemetry.Ring(16)
    for k in range(10):
        _push(r, k)
    assert r.pending() == 10
    first = r.drain(4)
    rest = r.drain(100)
    assert [rec[0] for rec in first + rest] == list(range(10))
    rec = rest[-1]          # k = 9
    assert rec == (9, 1009, 9, 10, 11, -9, -10, 27, 100, -100, 9)
    assert r.drops == 0 and r.pending() == 0
    assert r.drain(5) == []


def test_n_records_fit_without_drop():
    r = telemetry.Ring(20)
    for k in range(20):
        _push(r, k)
    out = r.drain(100)
    assert len(out) == 20 and r.drops == 0


def test_overflow_overwrites_oldest_and_counts_drops():
    r = telemetry.Ring(7)           # 8 slots
    for k in range(50):
        _push(r, k)
    out = r.drain(100)
    seqs = [rec[0] for rec in out]
    assert seqs == list(range(50 - len(out), 50))       # the newest survive, in order
    assert len(out) + r.drops == 50                     # every record is either delivered or counted
    assert len(out) >= 7
    for rec in out:
        assert rec[1] == 1000 + rec[0]                  # no record mixes two writes
    # after catching up, nothing more is dropped
    for k in range(50, 55):
        _push(r, k)
    more = r.drain(100)
    assert [rec[0] for rec in more] == [50, 51, 52, 53, 54]
    assert len(out) + r.drops + 5 == 55


def test_reset_skips_stale_records():
    r = telemetry.Ring(8)
    for k in range(5):
        _push(r, k)
    r.reset()
    assert r.drain(10) == []
    _push(r, 5)
    assert [rec[0] for rec in r.drain(10)] == [5]


def test_viper_writer_allocation_free_and_compatible():
    r = telemetry.Ring(32)
    buf = r.buf
    hdr = r.hdr
    micropython.heap_lock()
    try:
        for k in range(1000):
            vpush(buf, hdr, k, k * 10)
    finally:
        micropython.heap_unlock()
    out = r.drain(1000)
    assert [rec[0] for rec in out] == list(range(1000 - len(out), 1000))
    assert len(out) + r.drops == 1000
    rec = out[-1]
    assert rec[1] == 999 and rec[2] == 9991 and rec[9] == 9998 and rec[10] == (9990 & 0x1F)


def test_plain_push_allocation_free():
    r = telemetry.Ring(8)
    micropython.heap_lock()
    try:
        for k in range(100):
            r.push(k, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    finally:
        micropython.heap_unlock()
    assert r.pending() == 100


def test_head_wraps_at_32_bits():
    r = telemetry.Ring(16)
    r.hdr[telemetry.H_HEAD] = 0x7FFFFFFD        # three records before int32 overflow
    r.reset()
    for k in range(6):
        vpush(r.buf, r.hdr, 500 + k, 0)
    assert r.hdr[telemetry.H_HEAD] == -0x80000000 + 3         # 0x80000003: wrapped through int32
    out = r.drain(10)
    assert [rec[1] for rec in out] == [500, 501, 502, 503, 504, 505]
    seqs = [rec[0] for rec in out]
    for a, b in zip(seqs, seqs[1:]):
        assert (b - a) & 0x3FFFFFFF == 1
    assert r.drops == 0


def test_record_frames_as_telemetry_data():
    r = telemetry.Ring(4)
    r.push(123456, 800, 790, 12000, -300, -800, -805, -12100, 310, protocol.ST_ENABLED)
    (rec,) = r.drain(1)
    frame = protocol.pack_telemetry_data(*rec)
    got = protocol.Parser().feed(frame)
    assert got[0][0] == protocol.TELEMETRY_DATA
    assert protocol.unpack_telemetry_data(got[0][1]) == rec
