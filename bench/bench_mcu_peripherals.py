# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
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

import sys

from mpbench import run_workload


def main() -> int:
    return 0 if run_workload("mcu_peripherals_workload.py", "bench_mcu_peripherals") else 1


if __name__ == "__main__":
    sys.exit(main())
