# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The Pico image with the firmware frozen in (tools/build_uf2.py, `make uf2`) against the stock image with the
firmware's files (`viperdrive flash --mpy`), side by side on the emulated Pico: the install onto a blank flash, the
boot to HELLO, the free heap with the App built, and the 1 kHz control step with board moves running. Every time is
chip time (rp2040js cycle counts, no XIP cache misses: a lower bound for a real Pico).

    python bench/bench_pico_frozen.py     # ~4 min; prints `pico_frozen_* key=value` lines (make bench)
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench_pico import ROOT, VIPERDRIVE, boot_time, line, moves_window, prepare

from viperdrive.board import wait_for_hello
from viperdrive.executables import require
from viperdrive.rigs.pico import PicoRig

BOOTS = 3           # power cycles per image for the boot figure


def build_image() -> Path | None:
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_uf2.py"), "--if-kit"], capture_output=True,
                       text=True, timeout=900)
    if r.returncode != 0 or not r.stdout.strip():
        print(f"bench_pico_frozen: skipped: {(r.stderr.strip().splitlines() or ['no image'])[-1]}", file=sys.stderr)
        return None
    return Path(r.stdout.split()[0])


def install(rig: PicoRig, board_cfg: Path, frozen: bool) -> float:
    """The user's install onto a blank flash; -> chip seconds it took."""
    cmd = [VIPERDRIVE, "flash", "--board", str(board_cfg), "--port", rig.url,
           *(["--config-only"] if frozen else ["--mpy"])]
    c0 = rig.clock.now()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise SystemExit(f"bench_pico_frozen: {' '.join(cmd[1:4])} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return rig.clock.now() - c0


def heap(flash: Path, uf2: Path | None) -> dict[str, int]:
    """bench/pico_heap_probe.py on the board booted into REPL mode (repl pin held)."""
    with PicoRig(flash=flash, uf2=uf2, hold_repl_pin=True) as rig:
        rig.clock.sleep(1.5)
        r = subprocess.run([require("mpremote"), "connect", rig.url, "run", str(ROOT / "bench" / "pico_heap_probe.py")],
                           capture_output=True, text=True, timeout=600)
    got = {k: int(v) for k, v in (ln.split() for ln in r.stdout.splitlines() if len(ln.split()) == 2)}
    if r.returncode != 0 or "free_app_built" not in got:
        raise SystemExit(f"bench_pico_frozen: heap probe failed: {r.stdout[-800:]} {r.stderr[-800:]}")
    return got


def main() -> int:
    ready = prepare("bench_pico_frozen", "pico_frozen_install")
    if ready is None:
        return 0
    uf2 = build_image()
    if uf2 is None:
        line("pico_frozen_install", skipped="no_image")
        return 0
    tmp, base = ready
    cfg = tmp / "pico_1000.json"
    cfg.write_text(json.dumps(dict(base, control_hz=1000)))
    res: dict[str, dict] = {}
    for name, image in (("frozen", uf2), ("stock", None)):
        flash = tmp / f"{name}.flash"
        r: dict = {}
        with PicoRig(flash=flash, uf2=image) as rig:
            w0 = time.monotonic()
            r["install_chip_s"] = install(rig, cfg, frozen=image is not None)
            r["install_wall_s"] = time.monotonic() - w0
            r["boots"] = [boot_time(rig) for _ in range(BOOTS)]
            wait_for_hello(rig.url, rig.clock)
            d, arrived = moves_window(rig, 4.0)
            r["step"] = d
            r["arrived"] = arrived
        r["heap"] = heap(flash, image)
        res[name] = r
    f, s = res["frozen"], res["stock"]
    line("pico_frozen_install", frozen_chip_s=round(f["install_chip_s"], 1), stock_chip_s=round(s["install_chip_s"], 1),
         frozen_wall_s=round(f["install_wall_s"], 1), stock_wall_s=round(s["install_wall_s"], 1),
         note="blank_flash_to_verified_hello")
    line("pico_frozen_boot", frozen_max_s=round(max(f["boots"]), 3), frozen_min_s=round(min(f["boots"]), 3),
         stock_max_s=round(max(s["boots"]), 3), stock_min_s=round(min(s["boots"]), 3), power_cycles=BOOTS,
         note="chip_s_power_on_to_hello")
    line("pico_frozen_heap", frozen_free_app_built=f["heap"]["free_app_built"],
         stock_free_app_built=s["heap"]["free_app_built"], frozen_free_imported=f["heap"]["free_imported"],
         stock_free_imported=s["heap"]["free_imported"], note="bytes_after_gc_collect_repl_mode")
    period = 1e6 / 1000
    line("pico_frozen_control_step_moves", hz=1000,
         frozen_exec_avg_us=f["step"]["exec_avg_us"], stock_exec_avg_us=s["step"]["exec_avg_us"],
         frozen_share_max=round(f["step"]["exec_max_us"] / period, 3),
         stock_share_max=round(s["step"]["exec_max_us"] / period, 3),
         frozen_overruns=f["step"]["overruns"], stock_overruns=s["step"]["overruns"],
         frozen_moves_arrived=f["arrived"], stock_moves_arrived=s["arrived"], note="max_since_boot_moves_running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
