"""Cost of the firmware's peripheral code on the MicroPython unix port: telemetry ring writes (the viper writer
the control step uses vs the plain-Python one) and drains, the pin-IRQ quadrature decoder (esp32 fallback),
the H-bridge mapping, and a board odometry update (floats: it allocates, which is why it is a slow task).

Prints (from bench/mcu_peripherals_workload.py, run by micropython):
  mcu_telemetry push_viper_us=... push_plain_us=... drain_us_per_record=... records=... slots=...
  mcu_quad_decoder edge_us=... max_edges_per_s=... note=unix_port_x64
  mcu_bridge_levels us=...
  mcu_odometry update_us=... alloc_bytes_per_update=...
  mcu_pio_quadrature program_words=32 longest_cycles_between_samples=... sample_interval_ns_at_125mhz=...
      max_edge_rate_mhz=...   (the rp2 PIO program on the tests' PIO interpreter: edges must be further apart)
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    exe = Path(sys.executable).parent / "micropython"
    if not exe.exists():
        print("bench_mcu_peripherals: micropython not found next to %s: run `make setup`" % sys.executable,
              file=sys.stderr)
        return 1
    proc = subprocess.run([str(exe), "-X", "heapsize=8M", str(ROOT / "bench" / "mcu_peripherals_workload.py"),
                           str(ROOT)], capture_output=True, text=True, timeout=300)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        print("bench_mcu_peripherals: micropython exited with %d" % proc.returncode, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
