"""Protocol throughput: the Parser in MB/s and host-side round trips (encode SET_VEL + parse STATE) per second,
on CPython (in this process) and on the MicroPython unix port (the same workload, bench/protocol_workload.py).

Prints:
  protocol_parser impl=cpython mb_per_s=... api=feed64 bytes=... frames=...     (Parser.feed, 64-byte chunks)
  protocol_parser impl=cpython mb_per_s=... api=feed_byte bytes=... frames=...  (feed_byte/poll: the board's path)
  protocol_roundtrip impl=cpython per_s=... n=...
  ... and the same three lines with impl=micropython
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import protocol_workload  # noqa: E402


def micropython_exe() -> str:
    from viperdrive import executables
    return executables.require("micropython", SystemExit)


def main() -> int:
    protocol_workload.main(str(ROOT))
    sys.stdout.flush()
    proc = subprocess.run([micropython_exe(), "-X", "heapsize=16M", str(ROOT / "bench" / "protocol_workload.py"),
                           str(ROOT)], capture_output=True, text=True, timeout=600)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        print("bench_protocol: micropython exited with %d" % proc.returncode, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
