# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The SENSORS stream on the emulated Raspberry Pi Pico (stock MicroPython rp2, sim/pico/), wired by
mcu/boards/pico_sensors.json (an MPU-6050 on I2C0, the battery divider, the e-stop; control at its 500 Hz, or --hz),
while the host drives both wheels with one SET_VEL/STATE exchange per 10 ms of chip time, as a 100 Hz host loop does.

For each rate asked (50 and 100 Hz) the stream runs for 60 s of chip time. The rate is the records' count over their
span on the firmware's own clock (each record carries the board time it was sampled at), so a slow emulator does not
change it. Prints one line per rate:
  pico_sensors rate_asked_hz=100 chip_s=60.0 records=... rate_hz=... share=... seq_gaps=...
      interval_median_us=... interval_max_us=... intervals_over_1_5_periods=... exchanges=...
and the control step's figures since boot (DIAG): pico_sensors_step control_hz=... exec_max_us=... overruns=...
and what one garbage collection of the slow loop's heap costs on the chip (bench/pico_gc_probe.py, REPL mode):
  pico_gc collect_us_min=... collect_us_max=... heap_free=... heap_alloc=...

    python bench/bench_pico_sensors.py          # ~8 min (one flash of the emulated chip, 2 x 60 chip s)
    python bench/bench_pico_sensors.py --chip-s 10 --hz 1000
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from bench_pico import flash, line, prepare  # bench/ is this script's folder: the same flash and output lines

from viperdrive.board import Board, wait_for_hello
from viperdrive.executables import require
from viperdrive.rigs.pico import PicoRig
from viperdrive.robot.config import RobotConfig

ROOT = Path(__file__).resolve().parent.parent
BOARD_FILE = ROOT / "mcu" / "boards" / "pico_sensors.json"


def stream(b: Board, rig: PicoRig, rate_hz: int, chip_s: float, wheels: float = 5.0) -> dict:
    """The stream at rate_hz for chip_s chip seconds while driving; -> figures on the firmware's clock."""
    assert b.sensors(rate_hz) == rate_hz
    b.sensor_readings()
    recs = []
    clock = rig.clock
    t0 = clock.now()
    k = 0
    while clock.now() - t0 < chip_s:
        b.write(wheels, wheels)
        b.read()
        k += 1
        clock.sleep(t0 + k * 0.01 - clock.now())
        recs += b.sensor_readings()
    b.sensors(0)
    recs += b.sensor_readings()
    gaps = sum(((y.seq - x.seq) & 0xFFFF) - 1 for x, y in pairwise(recs))
    intervals = sorted(((y.board_us - x.board_us) & 0xFFFFFFFF) for x, y in pairwise(recs))
    span_s = sum(intervals) / 1e6
    rate = (len(recs) - 1) / span_s
    period_us = 1e6 / rate_hz
    return {"rate_asked_hz": rate_hz, "chip_s": round(chip_s, 1), "records": len(recs), "rate_hz": round(rate, 2),
            "share": round(rate / rate_hz, 4), "seq_gaps": gaps,
            "interval_median_us": intervals[len(intervals) // 2], "interval_max_us": intervals[-1],
            "intervals_over_1_5_periods": sum(i > 1.5 * period_us for i in intervals), "exchanges": k,
            "imu_ok_share": round(statistics.fmean(1.0 if r.imu_ok else 0.0 for r in recs), 3)}


def main(argv: list[str]) -> int:
    a = argparse.ArgumentParser()
    a.add_argument("--chip-s", type=float, default=60.0)
    a.add_argument("--hz", type=int, default=None, help="control rate (default: the board file's)")
    args = a.parse_args(argv)
    ready = prepare("bench_pico_sensors", "pico_sensors")
    if ready is None:
        return 0
    tmp, _ = ready
    cfg = json.loads(BOARD_FILE.read_text())
    if args.hz is not None:
        cfg["control_hz"] = args.hz
    board_file = tmp / "pico_sensors.json"
    board_file.write_text(json.dumps(cfg))
    # the rig wired as pico_sensors.json, the firmware flashed with it as board.json (`viperdrive flash --mpy`)
    with PicoRig(flash=tmp / "sensors.flash", board=board_file, seed=11) as rig:
        flash(rig, board_file, mpy=True)
        wait_for_hello(rig.url, rig.clock, seconds=60)
        with Board(rig.url, config=RobotConfig(), max_misses=50) as b:
            b.clear_fault()
            b.activate()
            for rate in (50, 100):
                line("pico_sensors", **stream(b, rig, rate, args.chip_s))
            d = b.diag()
            line("pico_sensors_step", control_hz=cfg["control_hz"], exec_max_us=d["exec_max_us"],
                 share_of_period_max=round(d["exec_max_us"] * cfg["control_hz"] / 1e6, 3), overruns=d["overruns"],
                 note="since_boot")
            b.deactivate()
    # the same flashed board in REPL mode (the repl pin held at boot): one garbage collection, timed on the chip
    probe = tmp / "probe.flash"
    probe.write_bytes((tmp / "sensors.flash").read_bytes())
    with PicoRig(flash=probe, board=board_file, seed=11, hold_repl_pin=True) as rig:
        rig.clock.sleep(1.0)
        r = subprocess.run([require("mpremote"), "connect", rig.url, "run", str(ROOT / "bench" / "pico_gc_probe.py")],
                           capture_output=True, text=True, timeout=900)
        got = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines() if ln.split()}
        if r.returncode != 0 or "gc_us" not in got:
            print(f"bench_pico_sensors: gc probe failed: {r.stdout[-500:]} {r.stderr[-500:]}", file=sys.stderr)
        else:
            us = [int(x) for x in got["gc_us"]]
            line("pico_gc", collect_us_min=min(us), collect_us_max=max(us), heap_free=got["free"][0],
                 heap_alloc=got["alloc"][0], note="chip_us_app_built_repl_mode")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
