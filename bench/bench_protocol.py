# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Protocol throughput: the Parser in MB/s and host-side round trips (encode SET_VEL + parse STATE) per second,
on CPython (in this process) and on the MicroPython unix port (the same workload, bench/protocol_workload.py).

Prints:
  protocol_parser impl=cpython mb_per_s=... api=feed64 bytes=... frames=...     (Parser.feed, 64-byte chunks)
  protocol_parser impl=cpython mb_per_s=... api=feed_byte bytes=... frames=...  (feed_byte/poll: the board's path)
  protocol_roundtrip impl=cpython per_s=... n=...
  ... and the same three lines with impl=micropython
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpbench import run_workload  # noqa: E402

from bench import protocol_workload  # noqa: E402


def main() -> int:
    protocol_workload.main(str(ROOT))
    sys.stdout.flush()
    return 0 if run_workload("protocol_workload.py", "bench_protocol", heapsize="16M", timeout=600) else 1


if __name__ == "__main__":
    sys.exit(main())
