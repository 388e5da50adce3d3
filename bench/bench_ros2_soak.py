# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The ride-through soak, long: tests/ros2_soak.py (the bridge with recover="auto" on a virtual board, a DDS peer
driving at 0.2 m/s, cut link / re-plug on the same port / reset / one e-stop in a seeded order) for a number of
minutes instead of the suite's 20 events. `make bench` runs 3 minutes; the long run is

    python bench/bench_ros2_soak.py --minutes 60

Prints one line:
  ros2_soak minutes=... events=... recoveries=... cut=... replug=... reset=... estop=... quiet=...
            back_to_recovered_p50_s=... max_s=... back_to_commanding_p50_s=... max_s=...
            down_p50_s=... down_max_s=... motion_down_p50_m=... motion_down_max_m=... motion_quiet_max_m=...
            odom_step_min_m=... odom_step_max_m=...
It fails (exit 1) when the soak's checks fail: see tests/ros2_soak.py.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=11)
    a = p.parse_args()
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "ros2_soak.py"), "--minutes", str(a.minutes),
                           "--seed", str(a.seed)], cwd=ROOT / "tests", capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        return 1
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    k = r["kinds"]
    print(f"ros2_soak minutes={r['wall_s'] / 60:.1f} events={r['events']} recoveries={r['recoveries']} "
          f"cut={k['cut']} replug={k['replug']} reset={k['reset']} estop={k['estop']} quiet={r['quiet_events']} "
          f"back_to_recovered_p50_s={r['back_to_recovered_s']['median']:.3f} "
          f"max_s={r['back_to_recovered_s']['max']:.3f} "
          f"back_to_commanding_p50_s={r['back_to_commanding_s']['median']:.3f} "
          f"max_s={r['back_to_commanding_s']['max']:.3f} "
          f"down_p50_s={r['down_s']['median']:.3f} down_max_s={r['down_s']['max']:.3f} "
          f"motion_down_p50_m={r['motion_down_m']['median']:.4f} motion_down_max_m={r['motion_down_m']['max']:.4f} "
          f"motion_quiet_max_m={r['motion_quiet_m_max']:.4f} "
          f"odom_step_min_m={r['odom_step_min_m']:.5f} odom_step_max_m={r['odom_step_max_m']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
