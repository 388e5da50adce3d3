# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The board's wheel-speed estimate on the emulated Raspberry Pi Pico (stock MicroPython rp2, sim/pico/), counting
only (parameter `vel_edges` 0) beside the PIO edge timer (`vel_edges` 1, the default), on the same flashed board, at
1 kHz and 500 Hz, with the shipped pico.json wiring (1496 counts/rev): at 1 kHz one count per period is 4.2 rad/s.

For each configuration and wheel speed (0.3, 1, 2, 5 rad/s), both wheels are commanded over the wire for 3 s of chip
time; over the last 1.5 s, at every 100 Hz SET_VEL/STATE exchange, the left wheel's estimate in STATE is compared with
the plant's true wheel speed read right after it (the method of the issue that asked for this: it also carries the
wheel's own ripple and the few chip microseconds between the two readings). Then the wheels are stopped from 1 rad/s
and the time from the true wheel coming to rest to the estimate reading zero is taken. Every time is chip time.

Prints one line per configuration and speed, then the stop and the control step's cost:
  pico_speed hz=1000 method=edge speed_rad_s=1.0 rms_pct=... peak_pct=... ripple_pct=... samples=...
  pico_speed_stop hz=1000 method=edge zero_after_rest_ms=...
  pico_speed_cost hz=1000 method=edge exec_avg_us=... exec_max_us=... share_of_period_max=...
and the ratio lines: pico_speed_vs_count hz=... speed_rad_s=... rms_count_pct=... rms_edge_pct=... ratio=...

    python bench/bench_pico_speed.py          # ~12 min (two flashes of the emulated chip)
"""
from __future__ import annotations

import json
import math
import statistics
import sys

from bench_pico import flash, line, prepare  # bench/ is this script's folder: the same flash and output lines

from viperdrive.board import Board, wait_for_hello
from viperdrive.rigs.pico import PicoRig
from viperdrive.robot.config import RobotConfig

SPEEDS = (0.3, 1.0, 2.0, 5.0)


def steady(b: Board, rig: PicoRig, speed: float) -> dict:
    """Drive both wheels at speed for 3 chip s; the last 1.5 s: estimate vs truth, and the truth's ripple."""
    c0 = rig.clock.now()
    pairs = []
    while rig.clock.now() - c0 < 3.0:
        b.write(speed, speed)
        rig.clock.sleep(0.01)
        s = b.read()
        truth = rig.truth()
        if rig.clock.now() - c0 > 1.5:
            pairs.append((s.velocity[0], truth["w_left"]))
    err = [(est - w) / speed for est, w in pairs]
    ripple = [(w - speed) / speed for _, w in pairs]
    return {"rms_pct": round(100 * math.sqrt(statistics.fmean(e * e for e in err)), 2),
            "peak_pct": round(100 * max(abs(e) for e in err), 2),
            "ripple_pct": round(100 * math.sqrt(statistics.fmean(r * r for r in ripple)), 2),
            "samples": len(pairs)}


def stop(b: Board, rig: PicoRig) -> dict:
    """From 1 rad/s to a stop: chip ms from the true wheel at rest (below 0.005 rad/s for good) to the estimate
    reading zero (STATE polled every 2 chip ms)."""
    for _ in range(150):
        b.write(1.0, 1.0)
        rig.clock.sleep(0.01)
        b.read()
    samples = []
    c0 = rig.clock.now()
    while rig.clock.now() - c0 < 0.6:
        b.write(0.0, 0.0)
        rig.clock.sleep(0.002)
        s = b.read()
        samples.append((rig.clock.now(), s.velocity[0], rig.truth()["w_left"]))
    moving = [t for t, _, w in samples if abs(w) >= 0.005]
    rest = moving[-1] if moving else c0
    nonzero = [t for t, est, _ in samples if est != 0.0]
    zero_at = next((t for t, est, _ in samples if t > (nonzero[-1] if nonzero else c0) and est == 0.0), None)
    out = {"zero_after_rest_ms": round((zero_at - rest) * 1e3, 1) if zero_at is not None else "never"}
    return out


def main(argv: list[str]) -> int:
    ready = prepare("bench_pico_speed", "pico_speed")
    if ready is None:
        return 0
    tmp, base = ready
    rms: dict = {}
    for hz in (1000, 500):
        p = tmp / f"pico_{hz}.json"
        p.write_text(json.dumps(dict(base, control_hz=hz)))
        with PicoRig(flash=tmp / f"{hz}.flash") as rig:
            flash(rig, p, mpy=True)
            wait_for_hello(rig.url, rig.clock)
            for method in ("count", "edge"):
                with Board(rig.url, config=RobotConfig()) as b:
                    b.clear_fault()
                    b.set_param("vel_edges", 1 if method == "edge" else 0)
                    b.activate()
                    for speed in SPEEDS:
                        r = steady(b, rig, speed)
                        rms[(hz, method, speed)] = r["rms_pct"]
                        line("pico_speed", hz=hz, method=method, speed_rad_s=speed, **r)
                    line("pico_speed_stop", hz=hz, method=method, **stop(b, rig))
                    d = b.diag()
                    line("pico_speed_cost", hz=hz, method=method, exec_avg_us=d["exec_avg_us"],
                         exec_max_us=d["exec_max_us"], share_of_period_max=round(d["exec_max_us"] * hz / 1e6, 3),
                         overruns=d["overruns"], note="chip_time_lower_bound_max_since_boot")
                    b.deactivate()
                    b.set_param("vel_edges", 1)
    for hz in (1000, 500):
        for speed in SPEEDS:
            c, e = rms[(hz, "count", speed)], rms[(hz, "edge", speed)]
            line("pico_speed_vs_count", hz=hz, speed_rad_s=speed, rms_count_pct=c, rms_edge_pct=e,
                 ratio=round(c / e, 1) if e else "inf")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
