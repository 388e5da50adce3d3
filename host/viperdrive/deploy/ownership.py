# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Whose files are on a board: what a flash may replace or delete, and what it must leave to the user.

A flash writes a manifest (MANIFEST, at the board's root) listing every file it wrote with its size and SHA-256. At
the next flash, a file at a path the firmware writes, or a stale twin (a .mpy beside the .py it shadows), is
- **ours** when the manifest lists it with the same content (the user did not change it since), or when it holds
  exactly what this flash writes (replacing it loses nothing), or, on a board flashed before manifests existed,
  when it is one of the firmware's own module names and its first lines carry the project's copyright line;
- **the user's** otherwise: their code.py, boot.py, main.py, sensors.py, an edited board.json, their imu.mpy.
A user's file is never replaced or deleted without `--force`; with it, it is first moved, under its own path, into
a backup folder on the board (BACKUP_DIR/<time>/...), named in the output. A symbolic link in the way is never
followed (it is refused, with or without --force). `decide()` is the one rule; flashing.py applies it to a
mounted CIRCUITPY drive and, through mpremote, to a MicroPython board."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

from ..errors import BadValue

MANIFEST = "viperdrive-files.json"
BACKUP_DIR = "viperdrive-backup"
TEMP_SUFFIX = ".vdtmp"
OUR_MARK = b"SPDX-FileCopyrightText: 2026 The viperdrive contributors"
MARK_WITHIN = 400           # bytes from a file's start where an older flash's module carries OUR_MARK


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Existing:
    """A path on the board as found: size, SHA-256 (None where the board could not hash it), its first bytes, and
    whether it is a symbolic link or a folder."""
    size: int
    digest: str | None = None
    head: bytes = b""
    link: bool = False
    folder: bool = False


@dataclass
class Decision:
    """What a flash does: write (every target), replace_ours / replace_users (targets that exist), delete (ours:
    stale twins, files an older flash wrote that this one does not), users_in_the_way (the user's files it would
    replace or that would shadow the firmware: refused without --force, backed up with it), links (refused)."""
    write: list[str] = field(default_factory=list)
    replace_ours: list[str] = field(default_factory=list)
    replace_users: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    shadowing_users: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)       # the user's files the flash leaves alone but names
    links: list[str] = field(default_factory=list)

    @property
    def users_in_the_way(self) -> list[str]:
        return self.replace_users + self.shadowing_users

    def describe(self) -> list[str]:
        """What --dry-run says, a line each."""
        out = []
        for p in self.replace_users:
            out.append(f"replace {p}: NOT written by viperdrive (yours): kept as a backup with --force, refused "
                       f"without")
        for p in self.shadowing_users:
            out.append(f"move {p} aside: NOT written by viperdrive (yours), it would shadow the firmware's module: "
                       f"kept as a backup with --force, refused without")
        for p in self.replace_ours:
            out.append(f"replace {p} (written by an earlier flash, unchanged since)")
        for p in self.delete:
            out.append(f"delete {p} (written by an earlier flash, unchanged since; no longer used)")
        for p in self.left:
            out.append(f"leave {p} (yours; not used by the firmware)")
        for p in self.links:
            out.append(f"refuse {p}: a symbolic link (never followed: nothing is written outside the board)")
        return out


def load_manifest(text: str | None) -> dict[str, dict]:
    """The manifest's files ({path: {"size", "sha256"}}); {} when there is none or it cannot be read (then no file
    counts as ours by the manifest, the safe side)."""
    if not text:
        return {}
    try:
        data = json.loads(text)
        files = data["files"]
        return {str(k): dict(v) for k, v in files.items() if isinstance(v, dict)}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}


def manifest_firmware(text: str | None) -> str | None:
    """The firmware string the manifest's flash wrote ("viperdrive 0.1.0"); None when there is none or it cannot
    be read."""
    try:
        value = json.loads(text or "")["firmware"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) and value else None


def make_manifest(targets: dict[str, bytes], firmware: str, written: str | None = None) -> bytes:
    """The manifest of a flash (or a release bundle: written is then the release's date, so the bundle's bytes
    do not depend on when it was built)."""
    files = {p: {"size": len(b), "sha256": sha256(b)} for p, b in sorted(targets.items())}
    return (json.dumps({"format": 1, "firmware": firmware, "written": written or time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "files": files}, indent=1) + "\n").encode()


# flash --check: each file the firmware needs, as the board holds it against this host's
CURRENT = "current"         # the board holds exactly what this host's flash writes
STALE = "stale"             # what an earlier flash wrote (the manifest says so), unchanged since, not this host's
CHANGED = "changed"         # neither this host's nor what the manifest says was written there: edited on the board
MISSING = "missing"
UNREADABLE = "unreadable"   # a link, a folder, or a board that could not hash it


def compare(targets: dict[str, bytes], existing: dict[str, Existing], manifest: dict[str, dict]) -> dict[str, str]:
    """{path: CURRENT | STALE | CHANGED | MISSING | UNREADABLE} for every path this host's flash writes."""
    out = {}
    for path, data in sorted(targets.items()):
        found = existing.get(path)
        if found is None:
            out[path] = MISSING
        elif found.link or found.folder or found.digest is None:
            out[path] = UNREADABLE
        elif found.size == len(data) and found.digest == sha256(data):
            out[path] = CURRENT
        elif (entry := manifest.get(path)) is not None and entry.get("sha256") == found.digest:
            out[path] = STALE
        else:
            out[path] = CHANGED
    return out


def _firmware_module(path: str) -> bool:
    return path.endswith((".py", ".mpy"))


def is_ours(path: str, found: Existing, manifest: dict[str, dict], new: bytes | None) -> bool:
    if found.link or found.folder:
        return False
    if new is not None and found.size == len(new) and found.digest is not None and found.digest == sha256(new):
        return True             # exactly what this flash writes: replacing it loses nothing
    entry = manifest.get(path)
    if entry is not None:
        return found.digest is not None and entry.get("sha256") == found.digest and entry.get("size") == found.size
    if not manifest and _firmware_module(path) and path.endswith(".py"):
        return OUR_MARK in found.head[:MARK_WITHIN]    # an older flash, before manifests: its copyright line
    return False


def twin(path: str) -> str | None:
    """The other form of a module (.py <-> .mpy): on the board the .mpy one wins the import."""
    if path.endswith(".py"):
        return path[:-3] + ".mpy"
    if path.endswith(".mpy"):
        return path[:-4] + ".py"
    return None


def decide(targets: dict[str, bytes], existing: dict[str, Existing], manifest: dict[str, dict],
           leave_alone: tuple[str, ...] = (), legacy: tuple[str, ...] | list[str] = ()) -> Decision:
    """targets: every path this flash writes and its bytes; existing: what the board has at every path that
    matters (targets, their twins, the manifest's paths, the legacy paths, their parent folders); leave_alone:
    paths an older flash may have written that are left when they are the user's (CircuitPython's main.py beside
    code.py); legacy: where older flashes put the firmware's modules (the root, before the package): deleted when
    ours (manifest or copyright line), else left and named (they no longer stand in the firmware's way)."""
    d = Decision(write=sorted(targets))
    for path in sorted(targets):
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = existing.get("/".join(parts[:i]))
            if parent is not None and parent.link and "/".join(parts[:i]) not in d.links:
                d.links.append("/".join(parts[:i]))
        found = existing.get(path)
        if found is None:
            continue
        if found.link:
            d.links.append(path)
        elif found.folder:
            d.replace_users.append(path + "/")
        elif is_ours(path, found, manifest, targets[path]):
            d.replace_ours.append(path)
        else:
            d.replace_users.append(path)
    for path in sorted(targets):
        other = twin(path)
        if other is None or other in targets:
            continue
        found = existing.get(other)
        if found is None:
            continue
        if found.link:
            d.links.append(other)
        elif other.endswith(".mpy") or path.endswith(".mpy"):
            # a .mpy twin shadows our .py; our .mpy needs its old .py gone (else both are there, confusingly)
            (d.delete if is_ours(other, found, manifest, None) else d.shadowing_users).append(other)
    for path in sorted(manifest):
        if path in targets or path in d.delete or path == MANIFEST:
            continue
        found = existing.get(path)
        if found is None or found.link or found.folder:
            continue
        if is_ours(path, found, manifest, None):
            d.delete.append(path)
    for path in legacy:
        found = existing.get(path)
        if found is None or found.link or found.folder or path in targets or path in d.delete:
            continue
        parts = path.split("/")
        if any((p := existing.get("/".join(parts[:i]))) is not None and p.link for i in range(1, len(parts))):
            continue        # reached through a link: outside the board, never touched
        if is_ours(path, found, manifest, None):
            d.delete.append(path)
        elif path not in d.left:
            d.left.append(path)
    for path in leave_alone:
        found = existing.get(path)
        if found is None or path in targets:
            continue
        if is_ours(path, found, manifest, None):
            d.delete.append(path)
        else:
            d.left.append(path)
    return d


def refuse_text(d: Decision, where: str) -> str:
    """The refusal when the user's files are in the way (nothing changed)."""
    names = ", ".join(d.users_in_the_way)
    return (f"{where} holds files viperdrive did not write, which this flash would replace or which would shadow "
            f"the firmware: {names}. Nothing was changed. Move them away, or flash again with --force: each is then "
            f"kept under {BACKUP_DIR}/<time>/ on the board before the new firmware is written (--dry-run lists "
            f"what would happen)")


def links_text(d: Decision, where: str) -> str:
    return (f"{where}: {', '.join(d.links)} {'is a symbolic link' if len(d.links) == 1 else 'are symbolic links'}; "
            f"a flash never writes through a link (it could land outside the board). Nothing was changed: remove "
            f"the link and flash again")


def check(d: Decision, where: str, force: bool) -> None:
    """BadValue (exit 7, nothing changed) for links in the way, and for the user's files without --force."""
    if d.links:
        raise BadValue(links_text(d, where))
    if d.users_in_the_way and not force:
        raise BadValue(refuse_text(d, where))


def backup_folder() -> str:
    return f"{BACKUP_DIR}/{time.strftime('%Y%m%d-%H%M%S')}"


__all__ = ["MANIFEST", "BACKUP_DIR", "TEMP_SUFFIX", "Existing", "Decision", "decide", "load_manifest",
           "make_manifest", "manifest_firmware", "check", "backup_folder", "sha256", "twin", "is_ours", "compare",
           "CURRENT", "STALE", "CHANGED", "MISSING", "UNREADABLE"]
