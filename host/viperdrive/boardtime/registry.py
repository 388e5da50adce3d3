# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Where a running virtual board or emulated Pico says who it is: one small JSON file per link URL (and pty) in
registry_dir(), naming its control endpoint, its clock file and its process. A command given only a port
(`viperdrive drive --port socket://127.0.0.1:5760`, from another shell) finds the board's clock here
(clock_for(url)), so its waits run in the board's time; a port nobody registered is a real board (the host's clock).

Entries are written by whoever starts the board (VirtualBoard, PicoRig, `viperdrive sim`) and removed when it stops;
an entry whose process is gone is removed by the first reader that finds it."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ..timebase import HOST_CLOCK, Clock
from .clockfile import BoardTimeFile


def registry_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / "viperdrive-rigs"


def _path(url: str) -> Path:
    return registry_dir() / (hashlib.sha1(url.encode()).hexdigest()[:16] + ".json")


def register(url: str, control: str | None, clock_path: str | os.PathLike | None = None,
             board_pid: int | None = None, kind: str = "virtual") -> Path:
    """Announce the board serving `url`: its control endpoint (HOST:PORT), its clock file and process."""
    d = registry_dir()
    d.mkdir(parents=True, exist_ok=True)
    p = _path(url)
    tmp = p.with_name(p.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "control": control, "clock": None if clock_path is None else str(clock_path),
                               "pid": os.getpid(), "board_pid": board_pid, "kind": kind}))
    tmp.replace(p)
    return p


def unregister(url: str) -> None:
    try:
        _path(url).unlink()
    except OSError:
        pass


def lookup(url: str) -> dict | None:
    """The registry entry for `url`, None when no live process registered it (a stale entry is removed)."""
    p = _path(url)
    try:
        entry = json.loads(p.read_text())
        pid = int(entry["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if entry.get("url") != url:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        unregister(url)         # left by a process that was killed: its port may be reused by anything
        return None
    except PermissionError:
        pass
    return entry


def clock_for(url: str) -> Clock:
    """The board time of the board at `url`: its clock file when a virtual board or rig registered it, else the
    host's clock (a real board keeps real time). VIPERDRIVE_LOCKSTEP=0 in the environment: this process never holds
    the board's time (docs/virtual-board.md, "Lockstep with the host"): a host stopped on purpose is then seen as a
    real board would see it."""
    entry = lookup(url)
    if entry is None or not entry.get("clock") or not Path(entry["clock"]).is_file():
        return HOST_CLOCK
    return BoardTimeFile(entry["clock"], board_pid=entry.get("board_pid"),
                         lockstep=os.environ.get("VIPERDRIVE_LOCKSTEP", "1") != "0")


__all__ = ["registry_dir", "register", "unregister", "lookup", "clock_for"]
