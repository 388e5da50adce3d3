# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Run a MicroPython workload script of bench/ on the unix port and pass its figure lines through."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from viperdrive import executables

ROOT = Path(__file__).resolve().parent.parent


def run_workload(script: str, tag: str, heapsize: str = "8M", timeout: float = 300, expect: str | None = None,
                 args: tuple[str, ...] = ()) -> bool:
    """Run bench/<script> with the repo root (then args) as its arguments; False (reason on stderr) if it failed or
    did not print a line starting with `expect`."""
    exe = executables.require("micropython", SystemExit)
    proc = subprocess.run([exe, "-X", f"heapsize={heapsize}", str(ROOT / "bench" / script), str(ROOT), *args],
                          capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(proc.stdout)
    sys.stdout.flush()
    if proc.returncode != 0 or (expect is not None and expect not in proc.stdout):
        sys.stderr.write(proc.stderr)
        print(f"{tag}: micropython {script} exited with {proc.returncode}", file=sys.stderr)
        return False
    return True
