# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The `viperdrive` CLI as a user feels it, against one virtual board (`viperdrive sim`):

    cli_startup        wall time of `viperdrive --help` (imports and command discovery), median of 5
    cli_info           wall time of `viperdrive info --json` on an open virtual board (open, HELLO, clock sync, one
                       status record, GET_DIAG, 21 GET_PARAMs), median of 3
    cli_drive_square   a 0.5 m square by `drive --script square`: host loop cycles, overruns, late p99, link misses,
                       closing error of the host odometry and of the simulated robot's true pose
    cli_tune           `tune --json`: telemetry rate and samples, rise/settling time of the default gains
    cli_monitor        `monitor --duration 3`: telemetry records received vs requested (50/s), lost
    cli_interrupt      SIGTERM to `tune` (step test) and `tune --autotune` 0.8 s into the test: ms until the board
                       de-energized (the host's disable, not the 2 s deadman), s until the command exited (every
                       changed parameter put back by then)
    cli_killed_record  `drive --record` SIGKILLed 3.5 s after its first chunk: s of data kept, s lost before the kill
"""
from __future__ import annotations

import json
import math
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from cli_helpers import VIPERDRIVE, SharedSim, run_cli, signal_while_energized  # noqa: E402


def timed(*args, n=3):
    times = []
    r = None
    for _ in range(n):
        t0 = time.monotonic()
        r = run_cli(*args)
        times.append(time.monotonic() - t0)
        if r.returncode != 0:
            raise SystemExit(f"bench_cli: viperdrive {' '.join(map(str, args))} failed: {r.stderr}")
    return statistics.median(times), r


def _killed_recording(sim, d: Path) -> tuple[float, float]:
    from mcap.reader import NonSeekingReader
    out, script = d / "k.mcap", d / "s.txt"
    script.write_text("twist 0.05 0 30\n")
    proc = subprocess.Popen([VIPERDRIVE, "drive", "--script", str(script), "--record", str(out), "--port", sim.url,
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stamps():
        got = []
        try:
            with open(out, "rb") as f:
                for _s, _c, m in NonSeekingReader(f).iter_messages(log_time_order=False):
                    got.append(m.log_time)
        except Exception:  # noqa: BLE001 -- the cut
            pass
        return got

    while not (out.exists() and stamps()):
        time.sleep(0.05)
    time.sleep(3.5)
    killed = time.time_ns()
    proc.kill()
    proc.wait()
    got = stamps()
    return (got[-1] - got[0]) / 1e9, (killed - got[-1]) / 1e9


def main() -> int:
    t, _ = timed("--help", n=5)
    print(f"cli_startup help_s={t:.3f}")
    sim = SharedSim()
    try:
        t, _ = timed("info", "--port", sim.url, "--json", n=3)
        print(f"cli_info wall_s={t:.3f}")

        sim.control({"cmd": "reset", "what": "pose"})
        r = run_cli("drive", "--port", sim.url, "--script", "square", "--side", "0.5", "--speed", "0.25", "-q",
                    timeout=120)
        m = re.search(r"pose x ([+-][\d.]+) m  y ([+-][\d.]+) m  heading ([+-][\d.]+) deg; (\d+) cycles at "
                      r"([\d.]+) Hz, overruns (\d+), late p99 ([\d.]+) ms, link misses (\d+)", r.stdout)
        if r.returncode != 0 or not m:
            raise SystemExit(f"bench_cli: drive failed: {r.stdout}{r.stderr}")
        x, y, th, cycles, hz, overruns, late, misses = m.groups()
        truth = sim.control({"cmd": "truth"})
        print(f"cli_drive_square cycles={cycles} rate_hz={hz} overruns={overruns} late_p99_ms={late} "
              f"link_misses={misses} odom_close_m={math.hypot(float(x), float(y)):.4f} "
              f"odom_heading_deg={float(th):.2f} truth_close_m={math.hypot(truth['x'], truth['y']):.4f} "
              f"truth_heading_deg={math.degrees(math.remainder(truth['theta'], 2 * math.pi)):.2f}")

        r = run_cli("tune", "--port", sim.url, "--json", "--png", "/dev/null", timeout=60)
        d = json.loads(r.stdout)
        left = d["wheels"]["left"]
        print(f"cli_tune telemetry_hz={d['telemetry_hz']} samples={d['samples']} "
              f"rise_ms={left['rise_time_s'] * 1000:.1f} settling_ms={left['settling_time_s'] * 1000:.1f} "
              f"overshoot_pct={left['overshoot']:.2f}")

        r = run_cli("monitor", "--port", sim.url, "--duration", "3", timeout=60)
        m = re.search(r"monitor: (\d+) telemetry records at (\d+)/s requested, (\d+) lost", r.stdout)
        print(f"cli_monitor seconds=3 received={m.group(1)} requested_per_s={m.group(2)} lost={m.group(3)}")

        with tempfile.TemporaryDirectory() as d:
            png = ["--png", str(Path(d) / "tune_step.png")]     # a plot, if one is written, outside the tree
            for name, argv in (("step", ["tune", "--duration", "5", *png]),
                               ("autotune", ["tune", "--autotune", "--yes", "--wheel", "left", "--relay-time", "5",
                                             *png])):
                proc, _, off, t_exit = signal_while_energized(sim, argv, signal.SIGTERM, after_s=0.8)
                print(f"cli_interrupt test={name} signal=SIGTERM off_ms={off * 1000:.0f} exit_s={t_exit:.2f} "
                      f"exit_code={proc.returncode}")

        with tempfile.TemporaryDirectory() as d:
            kept, lost = _killed_recording(sim, Path(d))
        print(f"cli_killed_record after_first_chunk_s=3.5 kept_s={kept:.2f} lost_s={lost:.2f}")
    finally:
        sim.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
