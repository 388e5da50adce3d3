# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make bench`: run every bench/bench_*.py in turn with this interpreter (the venv's), passing their output
through. A failing bench is reported and the rest still run; the exit status is non-zero if any failed, or if one
left a file in the tree that git neither tracks nor ignores (a bench writes into a temporary folder).

    python bench/run_all.py [NAME_SUBSTRING ...]     # e.g. `python bench/run_all.py protocol` runs bench_protocol
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def untracked() -> set[str]:
    """The files git does not track and does not ignore (empty outside a git checkout)."""
    r = subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=HERE.parent, capture_output=True,
                       text=True)
    return set(r.stdout.split()) if r.returncode == 0 else set()


def main(argv: list[str]) -> int:
    benches = sorted(HERE.glob("bench_*.py"))
    if argv:
        benches = [b for b in benches if any(a in b.stem for a in argv)]
    if not benches:
        print("run_all: no bench matched", file=sys.stderr)
        return 1
    failed = []
    before = untracked()
    for bench in benches:
        t0 = time.monotonic()
        sys.stdout.flush()
        # output goes straight to our stdout/stderr: the bench's lines appear as it prints them
        rc = subprocess.call([sys.executable, str(bench)], cwd=HERE.parent)
        if rc != 0:
            failed.append(bench.name)
            print(f"run_all: {bench.name} failed with exit {rc} after {time.monotonic() - t0:.1f} s",
                  file=sys.stderr)
        left = untracked() - before
        if left:
            # a bench writes into a temporary folder (or an ignored one), never next to the sources
            failed.append(bench.name)
            print(f"run_all: {bench.name} left files in the tree: {', '.join(sorted(left))}", file=sys.stderr)
            before |= left
    sys.stdout.flush()
    if failed:
        print(f"run_all: {len(failed)} of {len(benches)} benches failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
