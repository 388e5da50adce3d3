# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board odometry heading with and without the gyro, on the virtual board, against ground truth (issue 13).

A robot whose right wheel is 1% larger than the left (sim/robots/default.json with wheel_radius_scale.right =
1.01; the board's wheel_radius parameter is the nominal one for both) drives straight for 10 m: equal wheel speeds,
so it really curves left by about 0.01 x 10 m / 0.152 m = 0.66 rad while its encoders say it went straight. The
board integrates both headings (ODOM theta from the emulated MPU-6050's bias-corrected z rate, theta_enc from the
encoders); the control endpoint's truth has the real one.

Prints:
  heading_10m distance_m=... truth_rad=... gyro_err_rad=... encoder_err_rad=... ratio=... gyro_bias_est_rad_s=...
    gyro_bias_true_rad_s=... heading_source=... pos_err_gyro_m=... pos_err_encoder_m=... seconds=...

    .venv/bin/python bench/bench_heading.py [--distance M] [--speed M_PER_S] [--mismatch FRACTION]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from viperdrive.board import Board
from viperdrive.rigs.virtual import VirtualBoard

ROOT = Path(__file__).resolve().parent.parent


def wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def robot(mismatch: float) -> dict:
    d = json.loads((ROOT / "sim" / "robots" / "default.json").read_text())
    d["wheel_radius_scale"] = {"left": 1.0, "right": 1.0 + mismatch}
    return d


def drive(distance: float = 10.0, speed: float = 0.45, mismatch: float = 0.01, still_s: float = 1.5) -> dict:
    """Drive `distance` m of ground truth at `speed` m/s (equal wheel commands) on a fresh virtual board whose
    right wheel is `mismatch` larger. -> the figures the bench prints."""
    d = robot(mismatch)
    r = d["wheel_radius_m"]
    w = speed / r
    t0 = time.monotonic()
    # a loaded machine deschedules the virtual board for tens of ms: a generous miss budget (the figure is about
    # odometry, not the link)
    with VirtualBoard(robot=d) as vb, Board(vb.url, max_misses=50) as b:
        b.activate()
        # still: the board estimates the gyro bias (still_ms, then a 32-sample window) before it trusts the gyro
        end = time.monotonic() + still_s
        while time.monotonic() < end:
            b.write(0.0, 0.0)
            b.read()
            time.sleep(0.01)
        od0 = b.odometry()          # the pose the still period left (both headings ~0): subtracted below
        vb.reset("pose")
        period = 0.01
        nxt = time.monotonic()
        while True:
            b.write(w, w)
            b.read()
            nxt += period
            if b.cycles % 20 == 0 and vb.truth()["distance"] >= distance:
                break
            dt = nxt - time.monotonic()
            if dt > 0:
                time.sleep(dt)
        b.deactivate()
        time.sleep(0.1)
        truth = vb.truth()
        od = b.odometry()
        readings = b.sensor_readings()
    th = truth["theta"]
    e_g = abs(wrap(od.theta - od0.theta - th))
    e_e = abs(wrap(od.theta_encoders - od0.theta_encoders - th))
    # position: the encoder-only track rebuilt is not on the wire; the board's pose uses the gyro heading
    pos_g = math.hypot(od.x - od0.x - truth["x"], od.y - od0.y - truth["y"])
    return {"distance_m": truth["distance"], "truth_rad": th, "gyro_err_rad": e_g, "encoder_err_rad": e_e,
            "ratio": e_e / e_g if e_g > 0 else float("inf"), "heading_source": od.heading_source,
            "gyro_bias_true_rad_s": truth["gyro_bias_z"], "pos_err_gyro_m": pos_g,
            "readings": len(readings), "seconds": time.monotonic() - t0}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--distance", type=float, default=10.0)
    ap.add_argument("--speed", type=float, default=0.45)
    ap.add_argument("--mismatch", type=float, default=0.01)
    a = ap.parse_args(argv)
    r = drive(a.distance, a.speed, a.mismatch)
    print("heading_10m " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
