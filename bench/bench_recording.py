# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a SIGKILL costs a recording: `viperdrive drive --script --record` on a virtual board, killed at a few
moments of the run (host time: the recorder flushes once a second of the host's clock, viperdrive.recording.mcap
FLUSH_PERIOD_S); the seconds of the run kept on disk and lost before the kill.

Prints one line per kill and a summary:
  recording_kill after_s=... kept_messages=... kept_span_s=... lost_s=...
  recording_kill_summary runs=... lost_max_s=... flush_period_s=1.0
"""
from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from viperdrive.recording.mcap import FLUSH_PERIOD_S
from viperdrive.rigs import VirtualBoard

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")


def kept(path: Path) -> tuple[int, int | None, int | None]:
    from mcap.reader import NonSeekingReader
    n, first, last = 0, None, None
    with open(path, "rb") as f:
        try:
            for _s, _c, m in NonSeekingReader(f).iter_messages(log_time_order=False):
                n += 1
                first = m.log_time if first is None else first
                last = m.log_time
        except Exception:  # noqa: BLE001 -- the cut
            pass
    return n, first, last


def main() -> int:
    lost_all = []
    with tempfile.TemporaryDirectory() as tmp, VirtualBoard() as vb:
        script = Path(tmp) / "long.txt"
        script.write_text("twist 0.05 0 30\n")
        for i, after in enumerate((3.25, 3.5, 3.75, 4.0)):
            out = Path(tmp) / f"k{i}.mcap"
            proc = subprocess.Popen([VIPERDRIVE, "drive", "--script", str(script), "--record", str(out), "--port",
                                     vb.url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 30
            while not (out.exists() and kept(out)[0]) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(after)
            killed_ns = time.time_ns()
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            n, first, last = kept(out)
            if not n:
                print(f"recording_kill after_s={after} kept_messages=0")
                continue
            lost = (killed_ns - last) / 1e9
            lost_all.append(lost)
            print(f"recording_kill after_s={after} kept_messages={n} kept_span_s={(last - first) / 1e9:.2f} "
                  f"lost_s={lost:.2f}", flush=True)
    if lost_all:
        print(f"recording_kill_summary runs={len(lost_all)} lost_max_s={max(lost_all):.2f} "
              f"flush_period_s={FLUSH_PERIOD_S}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
