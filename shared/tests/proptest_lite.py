# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The subset of hypothesis that test_protocol_properties.py uses, for MicroPython (which has no hypothesis):
# the same properties run there on examples drawn from a seeded PRNG, with no shrinking. Under CPython the real
# hypothesis runs them. Not a test file itself (no test_ prefix).
import random

DEFAULT_EXAMPLES = 100
SEED = 20261129


class _Strategy:
    def __init__(self, draw):
        self.draw = draw

    def map(self, fn):
        return _Strategy(lambda rng: fn(self.draw(rng)))


def _size(rng, lo, hi):
    # favour the edges: empty/minimal and maximal sizes are where framing bugs live
    r = rng.getrandbits(3)
    if r == 0:
        return lo
    if r == 1:
        return hi
    return lo + rng.getrandbits(16) % (hi - lo + 1)


class _Strategies:
    @staticmethod
    def integers(min_value, max_value):
        span = max_value - min_value + 1

        def draw(rng):
            r = rng.getrandbits(3)
            if r == 0:
                return min_value
            if r == 1:
                return max_value
            # 32 random bits are plenty for the spans used here (up to 2**32)
            return min_value + ((rng.getrandbits(16) << 16) | rng.getrandbits(16)) % span
        return _Strategy(draw)

    @staticmethod
    def binary(min_size=0, max_size=64):
        return _Strategy(lambda rng: bytes(rng.getrandbits(8) for _ in range(_size(rng, min_size, max_size))))

    @staticmethod
    def lists(elements, min_size=0, max_size=10):
        return _Strategy(lambda rng: [elements.draw(rng) for _ in range(_size(rng, min_size, max_size))])

    @staticmethod
    def tuples(*strategies):
        return _Strategy(lambda rng: tuple(s.draw(rng) for s in strategies))

    @staticmethod
    def sampled_from(values):
        values = tuple(values)
        return _Strategy(lambda rng: values[rng.getrandbits(16) % len(values)])

    @staticmethod
    def one_of(*strategies):
        return _Strategy(lambda rng: strategies[rng.getrandbits(16) % len(strategies)].draw(rng))


strategies = _Strategies()


class _Property:
    def __init__(self, fn, strats):
        self.fn = fn
        self.strats = strats
        self.max_examples = DEFAULT_EXAMPLES

    def __call__(self):
        rng = random
        rng.seed(SEED)
        for i in range(self.max_examples):
            args = [s.draw(rng) for s in self.strats]
            try:
                self.fn(*args)
            except Exception as e:  # report the failing example, as hypothesis does
                raise AssertionError("example %d %r failed: %r" % (i, args, e)) from e


def given(*strats):
    return lambda fn: _Property(fn, strats)


def settings(max_examples=DEFAULT_EXAMPLES, **_ignored):
    def apply(prop):
        prop.max_examples = max_examples
        return prop
    return apply
