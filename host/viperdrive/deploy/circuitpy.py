# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Flashing a board that runs CircuitPython: its CIRCUITPY drive, mounted on this computer, is written as files
(`viperdrive flash --drive PATH`). The firmware as for any board (its hal backend only), mcu/main.py as code.py,
boot.py (it enables the link's USB serial port), the board config as board.json; every file through a temporary
name and a rename, never through a symbolic link, and a user's file (their code.py) is never replaced or deleted
without --force (deploy.ownership decides whose a file is). folder_image() turns such a folder into the drive's
FAT image the emulated board boots from.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadValue, UserError
from ..robot.files import read_text
from . import ownership
from .flashing import LEGACY_DIRS, PACKAGE, firmware_files, legacy_paths, load_board_config

CIRCUITPY_ENTRY = "code.py"         # CircuitPython starts code.py (main.py only when there is no code.py)
# the fixed-point step is viper, a SyntaxError on CircuitPython: control.py falls back to the float law when it
# cannot import it, and a drive without it spares every boot the parse of a module that cannot load
VIPER_ONLY = (f"{PACKAGE}/fixedstep.py",)
CIRCUITPY_MARK = "boot_out.txt"     # CircuitPython writes it at every boot: a drive without it is not one of its
# CircuitPython's .mpy files begin with b"C", MicroPython's with b"M": it refuses MicroPython's mpy-cross output
# (checked on 10.2.1 with a v1.28 .mpy: "ValueError: MicroPython .mpy file; use CircuitPython mpy-cross"), and
# this tool has only MicroPython's
CIRCUITPY_MPY_REFUSED = ("--mpy: CircuitPython loads only .mpy files made by CircuitPython's own mpy-cross (its "
                         "header starts with 'C', MicroPython's with 'M'), which this tool does not have; copy the "
                         "source (without --mpy), or compile with CircuitPython's mpy-cross for its version "
                         "(adafruit-circuitpython.s3.amazonaws.com/index.html?prefix=bin/mpy-cross/) yourself")


def drive_files(board_config: str | Path) -> list[tuple[str, Path]]:
    """(path on the drive, source) for a board running CircuitPython: the firmware as for any board (its hal
    backend only), mcu/main.py as code.py (what CircuitPython starts), boot.py (it enables the link's USB serial
    port, usb_cdc.data), the board config as board.json. BadValue for a board config that is not CircuitPython's."""
    cfg_path, cfg = load_board_config(str(board_config))
    if cfg.get("backend") != "circuitpython":
        raise BadValue(f"{cfg_path}: backend {cfg.get('backend')!r}: only a CircuitPython board (backend "
                       f"circuitpython) is flashed by copying onto its CIRCUITPY drive; flash this one through its "
                       f"serial port (--port)")
    out = []
    for f in firmware_files("circuitpython"):
        if f.dest in VIPER_ONLY:
            continue
        out.append((CIRCUITPY_ENTRY if f.dest == "main.py" else f.dest, f.source))
    out.append(("board.json", cfg_path))
    return out


BOOT_OUT_MAX = 4096        # CircuitPython's boot_out.txt: its version line and the board's, a few hundred bytes


def check_circuitpy_drive(drive: str | Path) -> Path:
    """The folder a CIRCUITPY drive is mounted at, or BadValue saying why it is not one (or is read-only)."""
    p = Path(drive)
    if not p.is_dir():
        raise BadValue(f"--drive {p}: not a folder (give where the CIRCUITPY drive is mounted, e.g. "
                       f"/media/$USER/CIRCUITPY, /Volumes/CIRCUITPY, E:\\)")
    mark = p / CIRCUITPY_MARK
    if not mark.exists() and not mark.is_symlink():
        raise BadValue(f"--drive {p}: not a CIRCUITPY drive (no {CIRCUITPY_MARK}, which CircuitPython writes at "
                       f"every boot); nothing copied")
    if mark.is_symlink():
        raise BadValue(f"--drive {p}: its {CIRCUITPY_MARK} is a symbolic link (CircuitPython writes a file): not a "
                       f"CIRCUITPY drive; nothing copied")
    # bounded, regular files only: a FIFO or a link to /dev/zero in its place is refused at once
    text = read_text(mark, f"--drive {p}: its {CIRCUITPY_MARK}", max_bytes=BOOT_OUT_MAX)
    if "CircuitPython" not in text:
        raise BadValue(f"--drive {p}: its {CIRCUITPY_MARK} does not come from CircuitPython; nothing copied")
    if not os.access(p, os.W_OK):
        raise BadValue(f"--drive {p}: read-only. Either the OS mounted it so, or code on the board took the drive "
                       f"(storage.remount in boot.py): docs/board-config.md, \"CircuitPython\"; nothing copied")
    return p


def drive_inventory(root: Path, paths) -> dict[str, ownership.Existing]:
    """What the drive has at each path (and each of their parent folders), never following a link."""
    out: dict[str, ownership.Existing] = {}
    wanted: set[str] = set()
    for path in paths:
        parts = path.split("/")
        wanted.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    for path in sorted(wanted):
        p = root / path
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            out[path] = ownership.Existing(st.st_size, link=True)
        elif stat.S_ISDIR(st.st_mode):
            out[path] = ownership.Existing(0, folder=True)
        elif stat.S_ISREG(st.st_mode):
            out[path] = ownership.Existing(st.st_size, *_digest_and_head(p, st.st_size))
        else:       # a FIFO, a device: never ours, never read
            out[path] = ownership.Existing(st.st_size, link=True)
    return out


def _digest_and_head(p: Path, size: int) -> tuple[str | None, bytes]:
    if size > DRIVE_FILE_MAX:
        return None, b""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None, b""
    try:
        data = b""
        while len(data) <= DRIVE_FILE_MAX:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None, b""
    finally:
        os.close(fd)
    return ownership.sha256(data), data[:ownership.MARK_WITHIN]


DRIVE_FILE_MAX = 4 * 1024 * 1024    # a file on a CIRCUITPY drive larger than this is hashed as "not ours" unread
DRIVE_SPARE = 16 * 1024             # free space left over after the copy: FAT's folder entries, the manifest


@dataclass
class DriveFlash:
    """One flash onto a mounted CIRCUITPY drive: what it writes, what it found, and what it decided."""
    root: Path
    targets: dict[str, bytes]
    decision: ownership.Decision
    backups: list[tuple[str, str]] = field(default_factory=list)    # (path, where it was kept)
    found: dict[str, ownership.Existing] = field(default_factory=dict)     # what the drive holds
    manifest: dict[str, dict] = field(default_factory=dict)     # the files the drive's manifest lists
    manifest_firmware: str | None = None                        # and the firmware it names

    def lines(self) -> list[str]:
        """--dry-run: every copy and what it replaces, deletes or backs up."""
        out = [f"copy {dest} ({len(data):,} bytes) -> {self.root / dest}" for dest, data in self.targets.items()]
        out += self.decision.describe()
        out.append(f"write {ownership.MANIFEST} (what this flash wrote: the next flash knows its own files)")
        return out


def plan_drive(board_config: str | Path, drive: str | Path) -> DriveFlash:
    """Check the drive, read what the firmware writes and what the drive holds, decide (ownership.decide)."""
    root = check_circuitpy_drive(drive)
    targets = {dest: src.read_bytes() for dest, src in drive_files(board_config)}
    manifest_path = root / ownership.MANIFEST
    manifest_text = None
    if manifest_path.is_file() and not manifest_path.is_symlink():
        try:
            manifest_text = read_text(manifest_path, "the drive's manifest", max_bytes=256 * 1024)
        except UserError:
            manifest_text = None        # unreadable: no file counts as ours by it
    manifest = ownership.load_manifest(manifest_text)
    legacy = legacy_paths()
    paths = (set(targets) | {t for p in targets if (t := ownership.twin(p))} | set(manifest) | {"main.py"}
             | set(legacy))
    found = drive_inventory(root, paths)
    decision = ownership.decide(targets, found, manifest, leave_alone=("main.py",), legacy=legacy)
    return DriveFlash(root, targets, decision, found=found, manifest=manifest,
                      manifest_firmware=ownership.manifest_firmware(manifest_text))


def drive_bytes(root: Path, sizes: list[int]) -> int:
    """What files of these sizes take on the drive at root: each a whole number of its allocation units (a FAT
    cluster; a page on tmpfs), at least one. Summing the bytes alone counted the 26-file firmware up to a unit per
    file short, and a flash the check let through ran out of room half-way."""
    try:
        unit = max(512, os.statvfs(root).f_frsize or 512)
    except OSError:
        unit = 4096
    return sum(max(1, -(-n // unit)) * unit for n in sizes)


def copy_to_drive(board_config: str | Path, drive: str | Path, force: bool = False, firmware: str = "",
                  shield=None) -> DriveFlash:
    """Copy the firmware for a CircuitPython board onto its mounted CIRCUITPY drive, keeping the user's files:
    1. refused, nothing changed: a symbolic link in the way; the user's files in the way without force
       (ownership.decide); less free space than the new files need;
    2. every file written under a temporary name (TEMP_SUFFIX) and flushed: a failure here (a full drive, an
       unplugged one, a signal) removes the temporary files, and the old firmware is left as it was;
    3. with force, each of the user's files in the way moved into the backup folder (named in `backups`);
    4. the temporary files renamed over their targets, the entry files (boot.py, code.py) last, under `shield`
       (the CLI holds stop signals there: a rename takes microseconds);
    5. what an earlier flash wrote and this one does not use deleted; the manifest written the same way."""
    job = plan_drive(board_config, drive)
    ownership.check(job.decision, f"--drive {job.root}", force)
    root, targets = job.root, job.targets
    manifest = ownership.make_manifest(targets, firmware)
    need = drive_bytes(root, [len(b) for b in targets.values()] + [len(manifest)]) + DRIVE_SPARE
    free = shutil.disk_usage(root).free
    if free < need:
        raise UserError(f"--drive {root}: {free:,} bytes free, the firmware needs {need:,}: nothing was changed. "
                        f"Make room on the drive (its old firmware stays as it is)", exit_code=1)
    temps: list[Path] = []
    made: list[Path] = []
    try:
        for dest, data in [*targets.items(), (ownership.MANIFEST, manifest)]:
            target = root / dest
            for parent in reversed(target.relative_to(root).parents):
                d = root / parent
                if parent != Path(".") and not d.exists():
                    d.mkdir()
                    made.append(d)
            tmp = target.with_name(target.name + ownership.TEMP_SUFFIX)
            temps.append(tmp)       # before the write: one that fails part-way is removed too
            _write_new(tmp, data)
    except BaseException as e:
        for tmp in temps:
            _quietly_remove(tmp)
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
        if isinstance(e, OSError):
            raise UserError(f"--drive {root}: writing the new firmware failed ({e.strerror or e}); nothing was "
                            f"replaced: the old firmware is as it was", exit_code=1) from None
        raise
    with shield() if shield is not None else contextlib.nullcontext():
        if force and job.decision.users_in_the_way:
            folder = ownership.backup_folder()
            for path in job.decision.users_in_the_way:
                path = path.rstrip("/")
                kept = root / folder / path
                kept.parent.mkdir(parents=True, exist_ok=True)
                os.replace(root / path, kept)
                job.backups.append((path, f"{folder}/{path}"))
        for path in job.decision.delete:
            _quietly_remove(root / path)
        for folder in LEGACY_DIRS:      # an older flash's folders, emptied above (a folder with yours stays)
            if any(p.startswith(folder + "/") for p in job.decision.delete):
                with contextlib.suppress(OSError):
                    (root / folder).rmdir()
        entry_last = sorted(temps, key=lambda t: t.name.startswith(("code.py", "boot.py", "main.py")))
        for tmp in entry_last:
            os.replace(tmp, tmp.with_name(tmp.name[:-len(ownership.TEMP_SUFFIX)]))
    return job


def _write_new(path: Path, data: bytes) -> None:
    """A new file (never through a link, never over an existing one), written whole and flushed to the device."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link")
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _quietly_remove(p: Path) -> None:
    with contextlib.suppress(OSError):
        p.unlink()


def folder_image(folder: str | Path) -> bytes:
    """Every file under folder as a CIRCUITPY drive image (deploy.fatimage): what a copy onto a mounted drive left
    on the flash, for a board that is emulated (the rig has no USB mass storage host)."""
    from .fatimage import FatVolume
    base = Path(folder)
    vol = FatVolume()
    for p in sorted(base.rglob("*")):
        if p.is_file():
            vol.add(p.relative_to(base).as_posix(), p.read_bytes())
    return vol.image()


# ------------------------------------------------------------------------------------------ the plan
