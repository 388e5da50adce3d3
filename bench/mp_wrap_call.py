# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# MicroPython workload of bench_mcu_wrap.py: what the counter-wrap difference costs inlined and as a call, in viper
# (as fixedstep.step runs it) and in plain bytecode (as FloatLaw and the App's odometry run it), per wheel and
# per call, side by side in one process. The reason the viper step keeps its own inline copy while the firmware's
# Python code calls hal.portable.wrap_delta (docs/firmware.md, "Counter wrap").
#
#   micropython bench/mp_wrap_call.py REPO_ROOT
import sys
import time

root = sys.argv[1]
for p in (root + "/sim", root):
    sys.path.insert(0, p)

import firmware_package  # noqa: E402

firmware_package.mount(root)     # the firmware as the package viperdrive, as on a board (sim/firmware_package.py)

import micropython  # noqa: E402

from viperdrive.hal.portable import wrap_delta  # noqa: E402

N = 100000
ROUNDS = 5


@micropython.viper
def _vwrap(now: int, prev: int, mask: int, half: int) -> int:
    d = (now - prev) & mask
    if d & half:
        d -= half + half
    return d


@micropython.viper
def viper_empty(n: int) -> int:
    c = 0
    i = 0
    while i < n:
        c += i
        i += 1
    return c


@micropython.viper
def viper_inline(n: int, mask: int, half: int) -> int:
    c = 0
    i = 0
    prev = 1000
    while i < n:
        d = (i - prev) & mask
        if d & half:
            d -= half + half
        c += d
        i += 1
    return c


@micropython.viper
def viper_calls_viper(n: int, mask: int, half: int) -> int:
    c = 0
    i = 0
    prev = 1000
    f = _vwrap
    while i < n:
        c += int(f(i, prev, mask, half))
        i += 1
    return c


@micropython.viper
def viper_calls_python(n: int, bits: int) -> int:
    c = 0
    i = 0
    prev = 1000
    f = wrap_delta
    while i < n:
        c += int(f(i, prev, bits))
        i += 1
    return c


def py_empty(n):
    c = 0
    for i in range(n):
        c += i
    return c


def py_inline(n):
    # FloatLaw's former inline copy
    modulus = 1 << 16
    half = modulus >> 1
    prev = 1000
    c = 0
    for i in range(n):
        d = (i - prev) % modulus
        if d >= half:
            d -= modulus
        c += d
    return c


def py_call(n):
    prev = 1000
    c = 0
    for i in range(n):
        c += wrap_delta(i, prev, 16)
    return c


def us_per(fn, *args):
    t = time.ticks_us()
    fn(N, *args)
    return time.ticks_diff(time.ticks_us(), t) / N


def main():
    best = {}
    for _ in range(ROUNDS):
        ve = us_per(viper_empty)
        pe = us_per(py_empty)
        row = {"viper_inline_us": us_per(viper_inline, 0xFFFF, 0x8000) - ve,
               "viper_call_viper_us": us_per(viper_calls_viper, 0xFFFF, 0x8000) - ve,
               "viper_call_python_us": us_per(viper_calls_python, 16) - ve,
               "python_inline_us": us_per(py_inline) - pe,
               "python_call_us": us_per(py_call) - pe}
        for k, v in row.items():
            best[k] = min(best.get(k, v), v)        # the least disturbed of the rounds
    print("mcu_wrap_call " + " ".join("%s=%.4f" % (k, best[k]) for k in
                                      ("viper_inline_us", "viper_call_viper_us", "viper_call_python_us",
                                       "python_inline_us", "python_call_us")) + " rounds=%d n=%d" % (ROUNDS, N))


main()
