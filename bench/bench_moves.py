# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Moves on the board against ground truth, on the virtual board with the default (imperfect) robot and its
gyro (issue 24). Every time is the board's (the plant's `t`): a machine that deschedules the virtual board stops
its time, not the robot.

Prints one line per figure:
  gyro_calibration scale=... ccw_read_deg=... cw_read_deg=...   (3 turns each way by board moves, the true turn
                                                                  from the simulator: what a user's mark gives)
  turn90_gyro n=20 max_err_deg=... mean_err_deg=...              (every end against ground truth)
  turn90_encoders n=5 max_err_deg=... mean_err_deg=...           (the IMU unplugged: the encoders' heading)
  turn360_gyro n=10 mean_err_deg=... max_err_deg=...
  straight1m n=10 max_dist_err_mm=... max_lateral_mm=...
  square1m end_mm=... end_deg=... stops_at_corners=...           (four lines and four turns chained)
  square1m_host_stalls max_path_diff_mm=...                      (the host stopped 3 x 150 ms, SIGSTOP/SIGCONT)
  host_killed moving_m_s=... rest_after_s=... bound_s=...        (SIGKILL during a move: the lease, then braked)
  blocked_wheel stalled_after_ms=... outputs=...

    .venv/bin/python bench/bench_moves.py [--quick]
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from viperdrive.board import Board
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.tuning import calibrate as cal

ROOT = Path(__file__).resolve().parent.parent
VIPERDRIVE = str(Path(sys.executable).with_name("viperdrive"))
TURN_RATE = 2.0                 # rad/s
TURN_ACCEL = 5.0                # rad/s^2
SPEED = 0.3                     # m/s
ACCEL = 0.35                    # m/s^2: with a turn's start it fits the moves' share of max_accel (blends)


def wait_gyro(b: Board) -> None:
    """Held at rest (zero commands: the deadman stays quiet) until the board's heading comes from its gyro."""
    end = time.monotonic() + 10.0
    while b.odometry().heading_source != "gyro":
        if time.monotonic() > end:
            raise RuntimeError("the board's heading never came from the gyro")
        for _ in range(5):
            b.write(0.0, 0.0)
            b.read()
            time.sleep(0.01)


def yaw(vb: VirtualBoard) -> float:
    return vb.truth()["yaw_total"]


def settle(vb: VirtualBoard, b: Board, s: float = 0.3) -> None:
    """s of board time at rest (the moves' last correction done, the deadman quiet)."""
    t0 = vb.truth()["t"]
    while vb.truth()["t"] - t0 < s:
        b.write(0.0, 0.0)
        b.read()
        time.sleep(0.01)


def calibrate_gyro(vb: VirtualBoard, b: Board, turns: int = 3) -> tuple[float, list[float]]:
    """The gyro's scale as `viperdrive calibrate gyro` computes it, the runs as board moves of whole turns by the
    gyro heading; the mark's reading (the true turn) from ground truth."""
    runs, reads = [], []
    for direction in (1, -1):
        old = b.get_param("gyro_scale_ccw" if direction > 0 else "gyro_scale_cw")
        wait_gyro(b)
        y0 = yaw(vb)
        th = b.odometry().theta
        m = b.move_turn(direction * 2 * math.pi * turns, TURN_RATE, TURN_ACCEL)
        # unwrap the board's heading while it turns
        read = 0.0
        while not m.done:
            b.moves.poll()
            t = b.odometry().theta
            read += math.remainder(t - th, 2 * math.pi)
            th = t
            time.sleep(0.02)
        settle(vb, b)
        t = b.odometry().theta
        read += math.remainder(t - th, 2 * math.pi)
        real = yaw(vb) - y0
        runs.append(cal.GyroRun(read, old, real))
        reads.append(math.degrees(read) - math.degrees(real))
    res = cal.gyro_scale(runs)
    b.set_param("gyro_scale_ccw", res.scale)
    b.set_param("gyro_scale_cw", res.scale)
    return res.scale, reads


def turns(vb: VirtualBoard, b: Board, angle: float, n: int) -> list[float]:
    """n turns of angle rad, each against ground truth: the errors in degrees."""
    errs = []
    for _ in range(n):
        y0 = yaw(vb)
        r = b.move_turn(angle, TURN_RATE, TURN_ACCEL).wait(60)
        settle(vb, b, 0.1)
        if r != "arrived":
            raise RuntimeError(f"turn ended {r}")
        errs.append(math.degrees(yaw(vb) - y0 - angle))
    return errs


def straights(vb: VirtualBoard, b: Board, n: int) -> tuple[list[float], list[float]]:
    dist, lat = [], []
    for i in range(n):
        t0 = vb.truth()
        d = 1.0 if i % 2 == 0 else -1.0          # there and back: the robot stays on the floor
        r = b.move_straight(d, SPEED, ACCEL).wait(60)
        settle(vb, b, 0.1)
        t1 = vb.truth()
        if r != "arrived":
            raise RuntimeError(f"straight ended {r}")
        dx, dy, th = t1["x"] - t0["x"], t1["y"] - t0["y"], t0["theta"]
        along = dx * math.cos(th) + dy * math.sin(th)
        dist.append(1000 * (abs(along) - 1.0))
        lat.append(1000 * (-dx * math.sin(th) + dy * math.cos(th)))
    return dist, lat


def square(vb: VirtualBoard, b: Board) -> tuple[float, float, int]:
    """1 m square chained; -> (end error mm, heading error deg, samples with both wheels still mid-run)."""
    t0 = vb.truth()
    ms = []
    for _ in range(4):
        ms.append(b.move_straight(1.0, SPEED, ACCEL))
        ms.append(b.move_turn(math.pi / 2, TURN_RATE, TURN_ACCEL))
    stops = 0
    moving = False
    while not ms[-2].done:              # until the last line has ended: the corners are all before it
        b.moves.poll()
        t = vb.truth()
        still = abs(t["w_left"]) < 0.05 and abs(t["w_right"]) < 0.05
        if moving and still and ms[0].done:
            stops += 1
        moving = moving or not still
        time.sleep(0.02)
    b.moves.wait_all(60)
    settle(vb, b, 0.2)
    t1 = vb.truth()
    if not all(m.arrived for m in ms):
        raise RuntimeError(f"square: {[m.reason for m in ms]}")
    end = 1000 * math.hypot(t1["x"] - t0["x"], t1["y"] - t0["y"])
    return end, math.degrees(math.remainder(t1["theta"] - t0["theta"], 2 * math.pi)), stops


def square_path(url: str, vb: VirtualBoard, stalls: int) -> list[tuple[float, float, float]]:
    """`viperdrive drive --script` (a 1 m square as board moves) in its own process, stopped `stalls` times for
    150 ms of board time; -> the truth path [(board s since the first motion, x, y)]."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(f"forward 1.0 {SPEED}\nturn 90 {TURN_RATE}\n" * 4)
        script = f.name
    vb.reset("pose")
    # the host must not hold the virtual board's time (lockstep): a stopped host is what is measured
    env = dict(os.environ, VIPERDRIVE_LOCKSTEP="0")
    p = subprocess.Popen([VIPERDRIVE, "drive", "--script", script, "--port", url, "-q"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    path: list[tuple[float, float, float]] = []
    t_start = None
    pauses = [4.0, 9.0, 14.0][:stalls]
    try:
        while p.poll() is None:
            t = vb.truth()
            if t_start is None and abs(t["v"]) > 0.01:
                t_start = t["t"]
            if t_start is not None:
                el = t["t"] - t_start
                path.append((el, t["x"], t["y"]))
                if pauses and el >= pauses[0]:
                    pauses.pop(0)
                    os.kill(p.pid, signal.SIGSTOP)
                    t_stop = t["t"]
                    while vb.truth()["t"] - t_stop < 0.15:
                        time.sleep(0.005)
                    os.kill(p.pid, signal.SIGCONT)
            time.sleep(0.01)
    finally:
        os.unlink(script)
    if p.returncode != 0:
        raise RuntimeError(f"drive --script: {p.stderr.read()[-2000:] if p.stderr else p.returncode}")
    return path


def path_diff(a: list, b: list) -> float:
    """Largest distance, mm, between the two paths at equal times (b interpolated at a's times)."""
    worst = 0.0
    j = 0
    for t, x, y in a:
        while j + 1 < len(b) and b[j + 1][0] < t:
            j += 1
        if j + 1 >= len(b):
            break
        (t0, x0, y0), (t1, x1, y1) = b[j], b[j + 1]
        f = 0.0 if t1 == t0 else (t - t0) / (t1 - t0)
        worst = max(worst, math.hypot(x - (x0 + f * (x1 - x0)), y - (y0 + f * (y1 - y0))))
    return 1000 * worst


def host_killed(url: str, vb: VirtualBoard, max_accel_rim: float) -> tuple[float, float, float]:
    """`viperdrive move straight 3` killed (SIGKILL) while it cruises: -> (speed then, board s until rest, bound)."""
    p = subprocess.Popen([VIPERDRIVE, "move", "straight", "3", "--speed", str(SPEED), "--port", url, "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ,
                                                                                         VIPERDRIVE_LOCKSTEP="0"))
    while True:
        t = vb.truth()
        if t["v"] > 0.95 * SPEED:
            break
        if p.poll() is not None:
            raise RuntimeError("move straight ended before it cruised")
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    t_kill, v = t["t"], t["v"]
    while abs(vb.truth()["v"]) > 0.002:
        time.sleep(0.01)
    rest = vb.truth()["t"] - t_kill
    return v, rest, 0.5 + v / max_accel_rim


def blocked(vb: VirtualBoard, b: Board) -> tuple[float, bool]:
    m = b.move_straight(2.0, SPEED, ACCEL)
    while vb.truth()["v"] < 0.95 * SPEED:
        b.moves.poll()
        time.sleep(0.01)
    vb.fault("stall", wheel="left", on=True)
    t_block = vb.truth()["t"]
    while vb.truth()["energized"]:
        b.moves.poll()
        time.sleep(0.002)
    t_off = vb.truth()["t"]
    b.moves.wait_all(10)
    vb.fault("stall", wheel="left", on=False)
    return 1000 * (t_off - t_block), m.reason == "stalled"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (5 turns of 90, 3 of 360, 4 straights)")
    a = ap.parse_args(argv)
    n90, n360, nst = (5, 3, 4) if a.quick else (20, 10, 10)
    with VirtualBoard() as vb, Board(vb.url, max_misses=50) as b:
        b.activate()
        scale, reads = calibrate_gyro(vb, b)
        print(f"gyro_calibration scale={scale:.5f} ccw_read_minus_true_deg={reads[0]:+.2f} "
              f"cw_read_minus_true_deg={reads[1]:+.2f}", flush=True)
        e = turns(vb, b, math.pi / 2, n90)
        print(f"turn90_gyro n={n90} max_err_deg={max(map(abs, e)):.3f} mean_err_deg={sum(e) / len(e):+.3f}",
              flush=True)
        e = turns(vb, b, 2 * math.pi, n360)
        print(f"turn360_gyro n={n360} mean_err_deg={sum(e) / len(e):+.3f} max_err_deg={max(map(abs, e)):.3f}",
              flush=True)
        d, lat = straights(vb, b, nst)
        print(f"straight1m n={nst} max_dist_err_mm={max(map(abs, d)):.2f} max_lateral_mm={max(map(abs, lat)):.2f}",
              flush=True)
        end, deg, stops = square(vb, b)
        print(f"square1m end_mm={end:.1f} end_deg={deg:+.2f} stops_at_corners={stops}", flush=True)
        ms, off = blocked(vb, b)
        print(f"blocked_wheel stalled_after_ms={ms:.0f} reported_stalled={off}", flush=True)
        b.deactivate()
        b.clear_fault()
        b.activate()
        vb.fault("imu", answer=False)
        time.sleep(0.2)
        e = turns(vb, b, math.pi / 2, 5)
        print(f"turn90_encoders n=5 max_err_deg={max(map(abs, e)):.3f} mean_err_deg={sum(e) / len(e):+.3f}",
              flush=True)
        vb.fault("imu", answer=True)
        rim_accel = b.get_param("max_accel") * b.get_param("wheel_radius")
        b.deactivate()
        b.cleanup()
        undisturbed = square_path(vb.url, vb, 0)
        disturbed = square_path(vb.url, vb, 3)
        print(f"square1m_host_stalls max_path_diff_mm={path_diff(disturbed, undisturbed):.2f} "
              f"(3 x 150 ms SIGSTOP of the host)", flush=True)
        v, rest, bound = host_killed(vb.url, vb, rim_accel)
        print(f"host_killed moving_m_s={v:.3f} rest_after_s={rest:.3f} bound_s={bound:.3f} (lease 0.5 s + braking)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
