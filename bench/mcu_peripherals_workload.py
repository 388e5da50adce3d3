# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs inside the MicroPython unix port (bench/bench_mcu_peripherals.py starts it): the per-call cost of the
# firmware's peripheral code paths. Prints `name key=value ...` lines.
#   micropython bench/mcu_peripherals_workload.py REPO_ROOT
import gc
import sys
import time

import micropython

root = sys.argv[1]
sys.path.insert(0, root + "/sim")
sys.path.insert(0, root)

import firmware_package  # noqa: E402

firmware_package.mount(root)     # the firmware as the package viperdrive, as on a board (sim/firmware_package.py)

from viperdrive import odometry, telemetry  # noqa: E402
from viperdrive.hal import portable  # noqa: E402

N = 20000


@micropython.viper
def vpush(buf, hdr, t_us: int, v: int):
    # the telemetry.py arithmetic, as the control step writes a record
    h = ptr32(hdr)  # noqa: F821 - viper builtin
    b = ptr32(buf)  # noqa: F821
    k = int(h[0])
    base = (k & int(h[1])) * 10
    b[base] = t_us
    b[base + 1] = v
    b[base + 2] = v
    b[base + 3] = v
    b[base + 4] = v
    b[base + 5] = v
    b[base + 6] = v
    b[base + 7] = v
    b[base + 8] = v
    b[base + 9] = 1
    h[0] = k + 1


def per_call_us(fn, n):
    gc.collect()
    t0 = time.ticks_us()
    fn(n)
    return time.ticks_diff(time.ticks_us(), t0) / n


def empty(n):
    for _i in range(n):
        pass


def run_vpush(n):
    r = RING
    buf = r.buf
    hdr = r.hdr
    for i in range(n):
        vpush(buf, hdr, i, i)


def run_push(n):
    r = RING
    for i in range(n):
        r.push(i, i, i, i, i, i, i, i, i, 1)


def run_edge(n):
    dec = DEC
    seq = (0, 1, 3, 2)
    for i in range(n):
        s = seq[i & 3]
        dec.edge(s & 1, s >> 1, i)


def run_bridge(n):
    out = OUT
    for i in range(n):
        portable.bridge_levels(0, i - 10000, out)


def run_odom(n):
    o = ODOM
    for _i in range(n):
        o.update(13, 17)


from array import array  # noqa: E402

RING = telemetry.Ring(64)
DEC = portable.QuadDecoder(0, 0, 16)
OUT = array("i", (0, 0))
ODOM = odometry.Odometry(0.0325, 0.1853, 4096)

loop = per_call_us(empty, N)
vp = per_call_us(run_vpush, N) - loop
pp = per_call_us(run_push, N) - loop
RING.reset()
run_push(RING.n - 1)
gc.collect()
t0 = time.ticks_us()
recs = RING.drain(1000)
drain = time.ticks_diff(time.ticks_us(), t0) / max(1, len(recs))
print("mcu_telemetry push_viper_us=%.3f push_plain_us=%.3f drain_us_per_record=%.3f records=%d slots=%d"
      % (vp, pp, drain, len(recs), RING.n))
edge = per_call_us(run_edge, N) - loop
print("mcu_quad_decoder edge_us=%.3f max_edges_per_s=%d note=unix_port_x64"
      % (edge, int(1e6 / edge) if edge > 0 else 0))
br = per_call_us(run_bridge, N) - loop
print("mcu_bridge_levels us=%.3f" % br)
od = per_call_us(run_odom, N) - loop
gc.collect()
before = gc.mem_free()
ODOM.update(13, 17)
alloc = before - gc.mem_free()
print("mcu_odometry update_us=%.3f alloc_bytes_per_update=%d" % (od, alloc))

# the rp2 PIO counter, run by the instruction-level interpreter of the tests: the longest path between two pin
# samples (the CPU draining its FIFO between runs) bounds the edge rate it follows at a given system clock
sys.path.insert(0, root + "/mcu/tests")
from mptest_hal_portable import Pio  # noqa: E402

pio = Pio(portable.quadrature_pio_program())
pio.run(30)
longest = 0
last = None
state = 0
for k in range(3000):
    if k % 3 == 0:
        state = portable.QUAD_UP[state]
        pio.pins = state
    for _ in range(20):
        if pio.pc == portable.PIO_SAMPLE:
            if last is not None and pio.cycles - last > longest:
                longest = pio.cycles - last
            last = pio.cycles
        pio.step()
    pio.rx = []
ns = longest * 8.0      # 125 MHz: 8 ns per PIO cycle
print("mcu_pio_quadrature program_words=%d longest_cycles_between_samples=%d sample_interval_ns_at_125mhz=%.0f "
      "max_edge_rate_mhz=%.2f" % (len(pio.prog), longest, ns, 1000.0 / ns))
