# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The firmware on the emulated Raspberry Pi Pico (stock MicroPython rp2 on rp2040js, sim/pico/): the control step's
execution time and period jitter from the firmware's own counters (GET_DIAG) at 500 Hz and 1 kHz, overruns, free
heap, boot time with .py and with .mpy, and the rig's speed with each way of running the PIO. Every time is chip
time, cycle-counted by the emulator (Cortex-M0+ cycle counts, no XIP cache misses: a lower bound for a real Pico).

    python bench/bench_pico.py            # ~6 min; prints `pico_* key=value` lines (make bench)
    python bench/bench_pico.py --quick    # only the control-step lines (two flashes), the step layouts included
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from viperdrive.board import Board, wait_for_hello
from viperdrive.errors import LinkLost, NoReplyError
from viperdrive.rigs.pico import ImagesMissing, PicoRig, find_images
from viperdrive.robot.config import RobotConfig

ROOT = Path(__file__).resolve().parent.parent
VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")


def flash(rig: PicoRig, board_cfg: Path, mpy: bool) -> None:
    cmd = [VIPERDRIVE, "flash", "--board", str(board_cfg), "--port", rig.url] + (["--mpy"] if mpy else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise SystemExit(f"bench_pico: flash failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def boot_time(rig: PicoRig) -> float:
    """Chip seconds from a power cycle to the first HELLO answer."""
    rig.reset()
    t0 = rig.clock.now()
    while True:
        b = Board(rig.url, config=RobotConfig(), clock_sync=False)
        try:
            b.configure()
            return rig.clock.now() - t0
        except (NoReplyError, LinkLost):
            if rig.clock.now() - t0 > 120:
                raise SystemExit("bench_pico: no HELLO within 120 chip s of a power cycle") from None
        finally:
            b.cleanup()


def drive_window(rig: PicoRig, seconds: float, speed: float = 8.0) -> tuple[dict, dict, float]:
    """Enable, drive both wheels at `speed` rad/s for `seconds` chip s with the counters reset at the start; ->
    (DIAG at the end, rig stats, rig speed in chip s per wall s over the window)."""
    from viperdrive.shared import protocol as P
    with Board(rig.url, config=RobotConfig()) as b:
        b.clear_fault()
        b.activate()
        b.link.request(P.pack_get_diag(), P.DIAG)
        c0, w0 = rig.clock.now(), time.monotonic()
        # the counters keep their maxima since boot: read them once the ramp is done, as a difference is not possible
        while rig.clock.now() - c0 < seconds:
            b.write(speed, speed)
            time.sleep(0.01 / max(rig.clock.speed, 0.05))
            b.read()
        rate = (rig.clock.now() - c0) / (time.monotonic() - w0)
        d = b.diag()
        b.deactivate()
    return d, rig.stats(), rate


def moves_window(rig: PicoRig, seconds: float) -> tuple[dict, int]:
    """Board moves (0.3 m lines back and forth, half turns between them, chained) for `seconds` chip s, the host
    watching with GET_STATE at 100 Hz as `drive --script` does; -> (DIAG at the end, moves that arrived). The step's
    maxima are since boot: an upper bound of the periods with a move running."""
    import math
    with Board(rig.url, config=RobotConfig()) as b:
        b.clear_fault()
        b.activate()
        c0 = rig.clock.now()
        k = 0
        arrived = 0
        while rig.clock.now() - c0 < seconds:
            while len(b.moves.pending) + b.moves.active < 3:
                if k % 2 == 0:
                    b.move_straight(0.3 if k % 4 == 0 else -0.3, 0.2, 0.5)
                else:
                    b.move_turn(math.pi, 2.0, 6.0)
                k += 1
            b.moves.keep()
            b.observe()
            time.sleep(0.01 / max(rig.clock.speed, 0.05))
            b.read()
            arrived += sum(1 for m in b.moves.ended if m.arrived) - arrived
        d = b.diag()
        b.moves.cancel()
        b.deactivate()
    return d, arrived


def step_layouts(rig: PicoRig, tmp: Path) -> None:
    """The step as shipped vs split into functions (bench/split_step.py), on the chip in one process
    (bench/pico_step_layouts.py, REPL mode): prints its pico_control_step_layout line."""
    sys.path.insert(0, str(ROOT / "bench"))
    from split_step import split_source

    from viperdrive.executables import require
    src = tmp / "fixedstep_split.py"
    src.write_text(split_source((ROOT / "mcu" / "fixedstep.py").read_text()))
    mpy = tmp / "fixedstep_split.mpy"
    subprocess.run([require("mpy-cross"), "-march=armv6m", "-o", str(mpy), str(src)], check=True)
    mpremote = require("mpremote")
    r = subprocess.run([mpremote, "connect", rig.url, "cp", str(mpy), ":fixedstep_split.mpy", "+", "run",
                        str(ROOT / "bench" / "pico_step_layouts.py")], capture_output=True, text=True, timeout=900)
    found = [ln for ln in r.stdout.splitlines() if ln.startswith("pico_control_step_layout ")]
    if r.returncode != 0 or not found:
        print(f"bench_pico: step layouts failed: {r.stdout[-800:]} {r.stderr[-800:]}", file=sys.stderr)
    else:
        print(found[0], flush=True)


def _fig(v: str):
    try:
        return round(float(v), 1)
    except ValueError:
        return v


def line(name: str, **kv) -> None:
    print(name + " " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def prepare(bench: str, first_line: str) -> tuple[Path, dict] | None:
    """(a fresh temporary folder, mcu/boards/pico.json) for a bench on the emulated Pico; None without the images,
    after a `skipped` line under the bench's first line name."""
    try:
        find_images()
    except ImagesMissing as e:
        print(f"{bench}: skipped: {e}", file=sys.stderr)
        line(first_line, skipped="images_missing")
        return None
    tmp = Path(tempfile.mkdtemp(prefix=bench.replace("_", "-") + "-"))
    return tmp, json.loads((ROOT / "mcu" / "boards" / "pico.json").read_text())


def main(argv: list[str]) -> int:
    quick = "--quick" in argv          # only the control-step lines (two flashes)
    ready = prepare("bench_pico", "pico_control_step")
    if ready is None:
        return 0
    tmp, base = ready
    cfgs = {}
    for hz in (500, 1000):
        cfg = dict(base, control_hz=hz)
        p = tmp / f"pico_{hz}.json"
        p.write_text(json.dumps(cfg))
        cfgs[hz] = p
    boots = {}
    for hz in (500, 1000):
        with PicoRig(flash=tmp / f"mpy_{hz}.flash") as rig:
            flash(rig, cfgs[hz], mpy=True)
            boots.setdefault("mpy", boot_time(rig))
            wait_for_hello(rig.url, rig.clock)
            d, st, rate = drive_window(rig, 3.0)
            period = 1e6 / hz
            line("pico_control_step", hz=hz, exec_avg_us=d["exec_avg_us"], exec_max_us=d["exec_max_us"],
                 share_of_period_max=round(d["exec_max_us"] / period, 3),
                 period_min_us=d["period_min_us"], period_max_us=d["period_max_us"],
                 jitter_us=d["period_max_us"] - d["period_min_us"], overruns=d["overruns"],
                 free_heap=d["free_heap"], rig_chip_s_per_wall_s=round(rate, 3), note="chip_time_lower_bound")
            d, arrived = moves_window(rig, 4.0)
            line("pico_control_step_moves", hz=hz, exec_avg_us=d["exec_avg_us"], exec_max_us=d["exec_max_us"],
                 share_of_period_max=round(d["exec_max_us"] / period, 3), overruns=d["overruns"],
                 moves_arrived=arrived, note="max_since_boot_moves_running")
    # the tick's parts, timed on the chip in REPL mode (the repl pin held at boot) by bench/pico_tick_profile.py
    f = tmp / "profile.flash"
    f.write_bytes((tmp / "mpy_500.flash").read_bytes())
    with PicoRig(flash=f, hold_repl_pin=True) as rig:
        rig.clock.sleep(1.0)
        from viperdrive.executables import require
        script = str(ROOT / "bench" / "pico_tick_profile.py")
        r = subprocess.run([require("mpremote"), "connect", rig.url, "run", script], capture_output=True, text=True,
                           timeout=900)
        parts = dict(ln.split()[:2] for ln in r.stdout.splitlines() if len(ln.split()) == 2)
        if r.returncode != 0 or "period_enabled_us" not in parts:
            print(f"bench_pico: tick profile failed: {r.stdout[-500:]} {r.stderr[-500:]}", file=sys.stderr)
        else:
            line("pico_tick_parts", hz=500, **{k: _fig(v) for k, v in parts.items()},
                 note="chip_us_per_call_net_of_the_call")
        step_layouts(rig, tmp)
    if quick:
        return 0
    # boot with plain .py files: the board compiles every module at import
    with PicoRig(flash=tmp / "py.flash") as rig:
        flash(rig, cfgs[500], mpy=False)
        boots["py"] = boot_time(rig)
    line("pico_boot", mpy_s=round(boots["mpy"], 2), py_s=round(boots["py"], 2),
         ratio=round(boots["py"] / boots["mpy"], 1), note="chip_s_power_on_to_hello")
    # the rig's own speed with each way of running the PIO, on the same flashed board driving at 8 rad/s
    speeds = {}
    for mode in ("lazy", "every", "timer"):
        f = tmp / f"mode_{mode}.flash"
        f.write_bytes((tmp / "mpy_500.flash").read_bytes())
        with PicoRig(flash=f, pio=mode) as rig:
            try:
                wait_for_hello(rig.url, rig.clock, seconds=20)
                d, st, rate = drive_window(rig, 2.0)
                speeds[mode] = (round(rate, 3), d["exec_max_us"])
            except Exception as e:  # noqa: BLE001 - rp2040js's own PIO timer: the control IRQ may never finish
                print(f"bench_pico: pio {mode}: {e}", file=sys.stderr)
                speeds[mode] = ("no_link", "none")
    line("pico_rig_speed", **{f"{m}_chip_s_per_wall_s": v[0] for m, v in speeds.items()},
         **{f"{m}_exec_max_us": v[1] for m, v in speeds.items()},
         lazy_vs_every=round(speeds["lazy"][0] / speeds["every"][0], 1)
         if all(isinstance(speeds[m][0], float) for m in ("lazy", "every")) else "n/a")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
