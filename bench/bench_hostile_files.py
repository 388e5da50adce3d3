# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a hostile file costs a command, in wall-clock and CPU seconds beside the start of the CLI itself
(`viperdrive --version`) in the same run: `check-config` given a robot file that is /dev/zero, a FIFO, an alias
bomb, lists nested 100,000 deep, a file at the size cap full of unknown keys, and one just over the cap. The tests
(tests/test_user_files.py) assert exit codes, messages, memory and CPU; the wall-clock figures live here.

Prints one line per file and the start beside it:
  hostile_file what=... rc=7 wall_s=... cpu_s=... rss_mb=... wall_x_start=...
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from viperdrive.robot.files import MAX_BYTES

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")

# one command in a fresh child: its own rusage (RUSAGE_CHILDREN of that child is only the command)
PROBE = r"""
import json, resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": r.returncode, "wall_s": time.monotonic() - t, "cpu_s": u.ru_utime + u.ru_stime,
                  "rss_mb": u.ru_maxrss / 1024}))
"""


def probe(*argv: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, VIPERDRIVE, *argv], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out)


def keys_file(path: Path, limit: int, pad: int = 0) -> Path:
    """A robot file of as many unknown keys as fit in `limit` bytes, then `pad` bytes of comment."""
    head = ("base_controller:\n  ros__parameters:\n    type: diff_drive_controller/DiffDriveController\n"
            "    wheel_separation: 0.15\n    wheel_radius: 0.03\n")
    lines, size, i = [head], len(head), 0
    while True:
        line = f"    key_{i}: {i}\n"
        if size + len(line) > limit:
            break
        lines.append(line)
        size += len(line)
        i += 1
    path.write_text("".join(lines) + ("#" * (pad - 1) + "\n" if pad else ""))
    return path


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        fifo = tmp / "fifo.yaml"
        os.mkfifo(fifo)
        bomb = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        bomb += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
        (tmp / "bomb.yaml").write_text("\n".join(bomb) + "\nwheel_separation: *a8\n")
        (tmp / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
        files = {
            "/dev/zero": "/dev/zero",
            "a FIFO": str(fifo),
            "an alias bomb": str(tmp / "bomb.yaml"),
            "lists nested 100,000 deep": str(tmp / "deep.yaml"),
            f"{MAX_BYTES // 1024} KB of unknown keys (the cap)": str(keys_file(tmp / "cap.yaml", MAX_BYTES)),
            "16 bytes over the cap": str(keys_file(tmp / "over.yaml", MAX_BYTES, pad=16)),
        }
        start = min((probe("--version") for _ in range(3)), key=lambda r: r["wall_s"])
        print(f"hostile_file what='viperdrive --version (the start)' rc={start['rc']} wall_s={start['wall_s']:.3f} "
              f"cpu_s={start['cpu_s']:.3f} rss_mb={start['rss_mb']:.0f} wall_x_start=1.00")
        for what, path in files.items():
            r = probe("check-config", path)
            print(f"hostile_file what='{what}' rc={r['rc']} wall_s={r['wall_s']:.3f} cpu_s={r['cpu_s']:.3f} "
                  f"rss_mb={r['rss_mb']:.0f} wall_x_start={r['wall_s'] / start['wall_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
