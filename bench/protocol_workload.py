# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Protocol benchmark workload, the same code in both interpreters: bench_protocol.py runs it in CPython and,
# as `micropython bench/protocol_workload.py REPO_ROOT`, on the MicroPython unix port. Prints
#   protocol_parser impl=... mb_per_s=... api=feed64|feed_byte bytes=... frames=...
#   protocol_roundtrip impl=... per_s=... n=...
# (not named bench_*.py: run_all.py runs it through bench_protocol.py only)
import sys

try:
    from time import ticks_diff, ticks_us

    def clock_start():
        return ticks_us()

    def elapsed_s(t0):
        return ticks_diff(ticks_us(), t0) / 1e6
except ImportError:  # CPython
    from time import perf_counter

    def clock_start():
        return perf_counter()

    def elapsed_s(t0):
        return perf_counter() - t0


def make_stream(P, size):
    """Link traffic as the host sees it: STATE replies, an occasional NACK and a little line noise."""
    s = bytearray()
    i = 0
    while len(s) < size:
        s += P.pack_state(i, -i, 3 * i, -3 * i, P.ST_ENABLED)
        if i % 50 == 0:
            s += b"\x00\x13\x55"       # noise between frames
        if i % 97 == 0:
            s += P.pack_nack(P.SET_PARAM, P.NACK_OUT_OF_RANGE)
        i += 1
    return bytes(s)


def bench_feed(P, stream, chunk):
    p = P.Parser()
    t0 = clock_start()
    frames = 0
    for i in range(0, len(stream), chunk):
        frames += len(p.feed(stream[i:i + chunk]))
    return elapsed_s(t0), frames


def bench_feed_byte(P, stream):
    # the board's allocation-free path
    p = P.Parser()
    n = len(stream)
    frames = 0
    i = 0
    t0 = clock_start()
    while i < n:
        cmd = p.feed_byte(stream[i])
        while cmd >= 0:
            frames += 1
            cmd = p.poll()
        i += 1
    return elapsed_s(t0), frames


def bench_roundtrip(P, n):
    """Host side of one exchange, without the line: encode SET_VEL, parse the STATE reply, unpack it."""
    p = P.Parser()
    reply = P.pack_state(123456, -654321, 4096, -2048, P.ST_ENABLED)
    t0 = clock_start()
    good = 0
    for i in range(n):
        P.pack_set_vel(i, -i)
        for cmd, payload in p.feed(reply):
            if cmd == P.STATE:
                P.unpack_state(payload)
                good += 1
    dt = elapsed_s(t0)
    if good != n:
        raise SystemExit("round trip lost replies: %d of %d" % (good, n))
    return dt


def main(root, size=200000, n_roundtrip=20000):
    if root not in sys.path:
        sys.path.insert(0, root)
    from shared import protocol as P
    impl = sys.implementation.name
    stream = make_stream(P, size)
    expected = None
    for api, fn in (("feed64", lambda: bench_feed(P, stream, 64)), ("feed_byte", lambda: bench_feed_byte(P, stream))):
        fn()    # warm-up (and the frame count to compare)
        dt, frames = fn()
        if expected is None:
            expected = frames
        elif frames != expected:
            raise SystemExit("parsers disagree: %d vs %d frames" % (frames, expected))
        print("protocol_parser impl=%s mb_per_s=%.3f api=%s bytes=%d frames=%d"
              % (impl, len(stream) / dt / 1e6, api, len(stream), frames))
    bench_roundtrip(P, 1000)
    dt = bench_roundtrip(P, n_roundtrip)
    print("protocol_roundtrip impl=%s per_s=%.0f n=%d" % (impl, n_roundtrip / dt, n_roundtrip))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
