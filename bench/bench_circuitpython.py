# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The firmware on stock CircuitPython 10.2.1 on the emulated Raspberry Pi Pico (sim/pico/ with --firmware
circuitpython), flashed as a user does it (`viperdrive flash --drive`, the drive's FAT image on the chip's flash).
Every figure is chip time, cycle-counted by the emulator (a lower bound for a real Pico: no XIP cache misses).

For each control rate: the control period as the firmware ran it (every period's start from TELEMETRY_DATA at the
control rate: mean, p99, worst, and the jitter worst - nominal), the step's execution time and overruns (GET_DIAG),
while the host drives at 3 rad/s with SET_VEL/STATE at 50 Hz. At the documented rate also: the deadman's stop (last
SET_VEL -> both true wheel speeds under 0.05 rad/s), the watchdog's recovery (a frozen CPU -> the bite -> HELLO
answered again) and a soak of SET_VEL/STATE at 50 Hz with the lost exchanges counted.

    python bench/bench_circuitpython.py            # 100 and 200 Hz (boardcfg allows 100..1000); 60 s soak at 100 Hz
    python bench/bench_circuitpython.py --quick    # 100 Hz only, 10 s soak
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from viperdrive.board import Board, wait_for_hello
from viperdrive.deploy import circuitpy
from viperdrive.rigs.pico import ImagesMissing, PicoRig, find_images
from viperdrive.robot.config import RobotConfig
from viperdrive.timebase import WaitTimeout, wait_until

ROOT = Path(__file__).resolve().parent.parent
BOARD = ROOT / "mcu" / "boards" / "circuitpython_pico.json"


def line(name: str, **kv) -> None:
    print(name + " " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def drive_image(tmp: Path, hz: int) -> tuple[bytes, Path]:
    cfg = json.loads(BOARD.read_text())
    cfg["control_hz"] = hz
    board = tmp / f"cp_{hz}.json"
    board.write_text(json.dumps(cfg))
    drive = tmp / f"drive_{hz}"
    drive.mkdir()
    (drive / circuitpy.CIRCUITPY_MARK).write_text("Adafruit CircuitPython 10.2.1\n")
    circuitpy.copy_to_drive(board, drive)
    return circuitpy.folder_image(drive), board


def periods(rig: PicoRig, hz: int, seconds: float) -> dict:
    """Drive at 3 rad/s with SET_VEL/STATE at 50 Hz of chip time for `seconds`, TELEMETRY_DATA at the control
    rate: each record is one control period's start (t_us)."""
    with Board(rig.url, config=RobotConfig(), clock=rig.clock) as b:
        b.activate()
        granted = b.telemetry(hz)
        recs: list[dict] = []
        end = rig.clock.now() + seconds
        sent = fresh = 0
        while rig.clock.now() < end:
            b.write(3.0, 3.0)
            sent += 1
            fresh += b.read().fresh
            recs += b.telemetry_frames()
            rig.clock.sleep(0.02)
        b.telemetry(0)
        d = b.diag()
        b.deactivate()
    ts = [r["t_us"] for r in recs]
    gaps = sorted(((b - a) & 0x3FFFFFFF) * 1e-3 for a, b in zip(ts, ts[1:], strict=False) if b != a)
    seqs = [r["seq"] for r in recs]
    lost = sum(max(0, ((b - a) & 0x3FFFFFFF) - 1) for a, b in zip(seqs, seqs[1:], strict=False))
    out = {"telemetry_hz": granted, "records": len(recs), "record_gaps": lost, "sent": sent, "fresh": fresh,
           "exec_avg_us": d["exec_avg_us"], "exec_max_us": d["exec_max_us"], "overruns": d["overruns"],
           "period_min_us": d["period_min_us"], "period_max_us": d["period_max_us"], "free_heap": d["free_heap"]}
    if gaps:
        p99 = gaps[int(0.99 * (len(gaps) - 1))]
        out.update(period_mean_ms=round(sum(gaps) / len(gaps), 2), period_p99_ms=round(p99, 2),
                   period_max_ms=round(gaps[-1], 2), jitter_max_ms=round(gaps[-1] - 1e3 / hz, 2))
    return out


def deadman_stop(rig: PicoRig) -> float:
    """Chip s from the last SET_VEL at 3 rad/s to both true wheel speeds under 0.05 rad/s."""
    with Board(rig.url, config=RobotConfig(), clock=rig.clock) as b:
        b.activate()
        end = rig.clock.now() + 1.0
        while rig.clock.now() < end:
            b.write(3.0, 3.0)
            b.read()
            rig.clock.sleep(0.02)
        last = rig.clock.now()
        while True:
            t = rig.truth()
            if abs(t["w_left"]) < 0.05 and abs(t["w_right"]) < 0.05:
                return rig.clock.now() - last
            if rig.clock.now() - last > 5.0:
                raise SystemExit("bench_circuitpython: the wheels did not stop within 5 chip s of the last SET_VEL")
            rig.clock.sleep(0.005)


def watchdog_recovery(rig: PicoRig) -> tuple[float, float]:
    """(chip s from a frozen CPU to the bite, chip s to HELLO answered again)."""
    resets = rig.stats()["watchdog_resets"]
    rig.fault("freeze_control", on=True)
    t0 = rig.clock.now()
    while rig.stats()["watchdog_resets"] == resets:
        rig.clock.sleep(0.01)
    bite = rig.clock.now() - t0
    wait_for_hello(rig.url, rig.clock, seconds=60.0)
    return bite, rig.clock.now() - t0


def soak(rig: PicoRig, seconds: float) -> dict:
    """SET_VEL/STATE at 50 Hz of chip time for `seconds`: exchanges sent; STATEs received (link counters, after the
    ones still in flight came in); lost = sent - received (a reply that never came); in_time = the cycles whose
    reply was there by the read's deadline (80 % of the 20 ms period); the rest came later, and a later one is
    taken by the next cycle's read."""
    with Board(rig.url, config=RobotConfig(update_rate=50), clock=rig.clock) as b:
        b.activate()
        link0 = b.link.stats()
        sent = fresh = 0
        end = rig.clock.now() + seconds
        nxt = rig.clock.now()
        while rig.clock.now() < end:
            b.write(2.0, -2.0)
            sent += 1
            fresh += b.read().fresh
            nxt += 0.02
            rig.clock.sleep(nxt - rig.clock.now())

        def received() -> int:
            b.link.poll()
            return b.link.stats()["frames_rx"] - link0["frames_rx"]
        try:
            wait_until(lambda: received() >= sent, 0.2, rig.clock)
        except WaitTimeout:
            pass
        got = received()
        stats = b.link.stats()
        d = b.diag()
        b.deactivate()
    return {"sent": sent, "received": got, "lost": sent - got, "in_time": fresh, "misses": b.total_misses,
            "crc_errors": d["crc_errors"], "host_crc_errors": stats["crc_errors"], "board_frames_ok": d["frames_ok"],
            "deadman_trips": d["deadman_trips"]}


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    try:
        find_images(firmware="circuitpython")
    except ImagesMissing as e:
        print(f"bench_circuitpython: skipped: {e}", file=sys.stderr)
        line("cp_period", skipped="images_missing")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-circuitpython-"))
    documented = json.loads(BOARD.read_text())["control_hz"]
    for hz in ([documented] if quick else [100, 200]):
        image, board = drive_image(tmp, hz)
        w0 = time.monotonic()
        with PicoRig(firmware="circuitpython", drive=image, board=board) as rig:
            wait_for_hello(rig.url, rig.clock, seconds=60.0)
            line("cp_boot", hz=hz, hello_chip_s=round(rig.clock.now(), 2))
            line("cp_period", hz=hz, **periods(rig, hz, 5.0 if quick else 10.0))
            if hz == documented:
                line("cp_deadman", hz=hz, stop_chip_ms=round(1e3 * deadman_stop(rig), 1), deadman_ms=100)
                line("cp_soak_50hz", hz=hz, seconds=10 if quick else 60, **soak(rig, 10.0 if quick else 60.0))
                bite, back = watchdog_recovery(rig)
                line("cp_watchdog", hz=hz, bite_chip_s=round(bite, 3), hello_again_chip_s=round(back, 2),
                     watchdog_ms=1000)
            st = rig.stats()
            line("cp_rig", hz=hz, chip_s=round(st["chip_s"], 1), wall_s=round(time.monotonic() - w0, 1),
                 speed=round(st["speed_overall"], 3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
