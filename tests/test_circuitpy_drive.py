# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A CircuitPython board's drive: the FAT12 image of a CIRCUITPY drive (deploy.fatimage) and `viperdrive flash
--drive`, which copies the firmware onto a mounted one, and its refusals. The chip side is
tests/test_circuitpython_rig.py."""
from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import board_imports
from test_circuitpython_rig import ROOT, mounted_drive, viperdrive

from viperdrive.deploy import circuitpy, ownership
from viperdrive.deploy.fatimage import FatError, FatVolume, read_files

pytestmark = pytest.mark.unit


def test_fat_image_holds_long_names_and_folders_byte_for_byte():
    vol = FatVolume()
    files = {"code.py": b"import app\n", "control_float.py": b"x" * 1500, "hal/circuitpython.py": bytes(range(256)) * 9,
             "shared/protocol.py": b"p" * 513, "board.json": b"{}", "BOOT.PY": b"", "a/b/c/deep_name.txt": b"deep"}
    for k, v in files.items():
        vol.add(k, v)
    image = vol.image()
    assert len(image) == 2048 * 512 and image[510:512] == b"\x55\xaa" and image[54:62] == b"FAT12   "
    assert image[43:54] == b"CIRCUITPY  "
    assert read_files(image) == files


def test_fat_image_refuses_more_than_the_drive_holds():
    vol = FatVolume()
    vol.add("big.bin", b"\x00" * (1024 * 1024))
    with pytest.raises(FatError, match="full"):
        vol.image()


def test_flash_drive_copies_what_circuitpython_runs_and_removes_stale_twins(tmp_path):
    drive = mounted_drive(tmp_path)
    # a main.py an older flash left (before manifests: its copyright line) is removed, as code.py runs first
    (drive / "main.py").write_bytes((ROOT / "mcu" / "main.py").read_bytes())
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    assert not (drive / "main.py").exists()
    # an earlier flash's compiled twin (listed in its manifest) would win the import: removed
    manifest = json.loads((drive / ownership.MANIFEST).read_text())
    (drive / "app.mpy").write_bytes(b"C\x06stale")
    manifest["files"]["app.mpy"] = {"size": 7, "sha256": ownership.sha256(b"C\x06stale")}
    (drive / ownership.MANIFEST).write_text(json.dumps(manifest))
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    on_drive = {p.relative_to(drive).as_posix() for p in drive.rglob("*") if p.is_file()}
    expected = {dest for dest, _ in circuitpy.drive_files("circuitpython_pico")}
    assert expected <= on_drive and "code.py" in expected and "boot.py" in expected and "board.json" in expected
    assert on_drive == expected | {"boot_out.txt", ownership.MANIFEST}       # no temporary file left
    assert "lib/viperdrive/hal/circuitpython.py" in expected and "lib/viperdrive/hal/rp2.py" not in expected
    # viper: a SyntaxError there; control.py falls back without it
    assert "lib/viperdrive/fixedstep.py" not in expected
    assert not (drive / "app.mpy").exists() and not (drive / "main.py").exists()
    assert (drive / "code.py").read_bytes() == (ROOT / "mcu" / "main.py").read_bytes()
    assert (drive / "board.json").read_bytes() == (ROOT / "mcu" / "boards" / "circuitpython_pico.json").read_bytes()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


USER_FILES = {"code.py": b"print('my robot')\n", "boot.py": b"import storage\nstorage.remount('/', False)\n",
              "main.py": b"print('old main')\n", "sensors.py": b"def read():\n    return 1\n",
              "lib/imu.py": b"WHO = 'the user'\n", "imu.mpy": b"C\x06user", "board.json": b'{"mine": true}\n'}


def _users_drive(tmp_path) -> Path:
    drive = mounted_drive(tmp_path)
    for path, data in USER_FILES.items():
        (drive / path).parent.mkdir(parents=True, exist_ok=True)
        (drive / path).write_bytes(data)
    return drive


def test_flash_drive_never_replaces_a_users_file_without_force_and_keeps_each_with_it(tmp_path):
    drive = _users_drive(tmp_path)
    before = _snapshot(drive)
    dry = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert _snapshot(drive) == before
    for name in ("code.py", "boot.py", "board.json"):
        assert f"replace {name}: NOT written by viperdrive" in dry.stdout, dry.stdout
    # the firmware is the package lib/viperdrive/: the user's sensors.py and imu.mpy are not in its way
    for name in ("main.py", "sensors.py", "imu.mpy"):
        assert f"leave {name}" in dry.stdout, dry.stdout
    assert "would be refused" in dry.stdout
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    print(r.stderr)
    assert r.returncode == 7 and "Nothing was changed" in r.stderr and "Traceback" not in r.stderr
    refused = r.stderr.split("would shadow the firmware: ")[1].split(". Nothing")[0].split(", ")
    assert sorted(refused) == ["board.json", "boot.py", "code.py"], r.stderr
    assert _snapshot(drive) == before           # byte for byte, nothing added
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--force")
    assert r.returncode == 0, r.stderr
    backups = list((drive / ownership.BACKUP_DIR).iterdir())
    assert len(backups) == 1
    kept = _snapshot(backups[0])
    print(f"--force kept {sorted(kept)} in {backups[0].name}: {r.stderr.strip().splitlines()[0]}")
    assert kept == {p: USER_FILES[p] for p in ("code.py", "boot.py", "board.json")}
    for path in ("lib/imu.py", "sensors.py", "imu.mpy"):      # not in the firmware's way: untouched
        assert (drive / path).read_bytes() == USER_FILES[path]
    assert (drive / "main.py").read_bytes() == USER_FILES["main.py"]      # not used while code.py exists: left
    for path in kept:
        assert f"{path} was not written by viperdrive: kept as" in r.stderr
    assert (drive / "code.py").read_bytes() == (ROOT / "mcu" / "main.py").read_bytes()
    # the next flash knows its own files: no --force, no new backup
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    assert len(list((drive / ownership.BACKUP_DIR).iterdir())) == 1


@pytest.mark.parametrize("link", ["code.py", "lib", "lib/viperdrive/hal", "lib/viperdrive/shared/protocol.py"])
def test_flash_drive_never_writes_through_a_symlink(tmp_path, link):
    drive = mounted_drive(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"precious\n")
    (outside / "circuitpython.py").write_bytes(b"mine\n")
    (drive / link).parent.mkdir(parents=True, exist_ok=True)
    (drive / link).symlink_to(outside if link.endswith(("hal", "lib")) else outside / "victim.txt")
    before = _snapshot(outside)
    for force in ((), ("--force",)):
        r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, *force)
        assert r.returncode == 7 and "symbolic link" in r.stderr and link in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert _snapshot(outside) == before
    assert (drive / link).is_symlink() and not (drive / "boot.py").exists()


def _first_flash(drive) -> dict[str, bytes]:
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    return _snapshot(drive)


def _tmpfs(mnt: Path, kib: int) -> None:
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(mnt)], capture_output=True,
                       text=True)
    assert r.returncode == 0, f"a test drive needs a tmpfs mount (root): {r.stderr}"


def test_a_flash_onto_a_drive_without_room_leaves_the_old_firmware_intact(tmp_path):
    """A real small drive (a 512 KiB tmpfs, as root; CI is root) holding a firmware and a user's data file that
    leaves less room than the new firmware needs: refused before anything is written."""
    mnt = tmp_path / "small"
    _tmpfs(mnt, 512)
    try:
        drive = mounted_drive(mnt)
        old = _first_flash(drive)
        free = shutil.disk_usage(drive).free
        (drive / "log.csv").write_bytes(b"x" * (free - 64 * 1024))     # the user's data: most of what is left
        old = _snapshot(drive)
        (drive / "board.json").unlink()     # the new flash has a file to add: the old one is kept as it was
        old.pop("board.json")
        r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
        print(r.stderr.strip())
        assert r.returncode == 1 and "bytes free" in r.stderr and "nothing was changed" in r.stderr
        assert "Traceback" not in r.stderr
        assert _snapshot(drive) == old
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_room_is_counted_in_the_drives_allocation_units_not_bytes(tmp_path):
    """Each file takes whole allocation units (a FAT cluster, a tmpfs page): on a drive with room for the firmware's
    bytes but not for its units, the flash is refused up front, not run out of room half-way (which the byte sum
    let happen when the firmware grew by one module)."""
    from viperdrive.deploy.circuitpy import DRIVE_SPARE, drive_files
    sizes = [len(src.read_bytes()) for _, src in drive_files(ROOT / "mcu" / "boards" / "circuitpython_pico.json")]
    in_bytes = sum(sizes) + 4096 + DRIVE_SPARE                  # 4096: the manifest, generously
    in_pages = sum(-(-n // 4096) * 4096 for n in sizes) + 4096 + DRIVE_SPARE
    kib = (in_bytes + in_pages) // 2 // 1024                     # between the two
    assert in_bytes < kib * 1024 < in_pages, (in_bytes, kib, in_pages)
    mnt = tmp_path / "tight"
    _tmpfs(mnt, kib)
    try:
        drive = mounted_drive(mnt)
        before = _snapshot(drive)
        r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
        print(r.stderr.strip())
        assert r.returncode == 1 and "bytes free" in r.stderr and "nothing was changed" in r.stderr, r.stderr
        assert _snapshot(drive) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_a_write_that_fails_part_way_removes_what_it_wrote_and_leaves_the_old_firmware(tmp_path):
    """A device that fails mid-copy (here a file-size limit: every write past 8 KiB fails with EFBIG, as a full
    or unplugged drive fails a write): the temporary files are removed, nothing was renamed over the old
    firmware, and the message says so."""
    drive = mounted_drive(tmp_path)
    old = _first_flash(drive)
    (drive / "board.json").unlink()
    old.pop("board.json")
    exe = Path(sys.executable).with_name("viperdrive")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    r = subprocess.run([str(exe), "flash", "--board", "circuitpython_pico", "--drive", str(drive)],
                       capture_output=True, text=True, timeout=120, preexec_fn=limit)
    print(r.stderr.strip())
    assert r.returncode == 1 and "the old firmware is as it was" in r.stderr and "Traceback" not in r.stderr
    assert _snapshot(drive) == old


def test_flash_drive_refusals_say_why_and_copy_nothing(tmp_path):
    plain = tmp_path / "usbstick"
    plain.mkdir()
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", plain)
    assert r.returncode == 7 and "not a CIRCUITPY drive" in r.stderr and "Traceback" not in r.stderr
    assert list(plain.iterdir()) == []
    drive = mounted_drive(tmp_path)
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--mpy")
    assert r.returncode == 2 and "CircuitPython's own mpy-cross" in r.stderr
    r = viperdrive("flash", "--board", "pico", "--drive", drive)
    assert r.returncode == 7 and "only a CircuitPython board" in r.stderr
    r = viperdrive("flash", "--board", "circuitpython_pico", "--port", "loop://")
    assert r.returncode == 2 and "--drive PATH" in r.stderr
    assert sorted(p.name for p in drive.iterdir()) == ["boot_out.txt"]


def test_flash_check_on_a_drive_says_current_stale_changed_and_missing_and_copies_nothing(tmp_path):
    """flash --check compares the drive with what this host's flash writes: exit 0 right after a flash; a file an
    earlier flash wrote (its manifest says so) that differs from this host's is stale, one edited on the drive is
    changed, a deleted one missing: exit 5, each named; nothing is written."""
    drive = mounted_drive(tmp_path)
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--check")
    assert r.returncode == 5 and "manifest missing" in r.stdout and "missing    code.py" in r.stdout, r.stdout
    assert not (drive / "code.py").exists()
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--check")
    n = len(circuitpy.drive_files("circuitpython_pico"))
    assert r.returncode == 0 and f"{n} of {n} files current" in r.stdout, (r.stdout, r.stderr)
    assert f"written by viperdrive {viperdrive_version()}" in r.stdout
    # stale: an older flash wrote control.py (the manifest records it) and this host's differs
    manifest = json.loads((drive / ownership.MANIFEST).read_text())
    old = b"# an older control.py\n"
    (drive / "lib/viperdrive/control.py").write_bytes(old)
    manifest["files"]["lib/viperdrive/control.py"] = {"size": len(old), "sha256": ownership.sha256(old)}
    (drive / ownership.MANIFEST).write_text(json.dumps(manifest))
    # changed: link.py edited on the drive; missing: odometry.py deleted
    (drive / "lib/viperdrive/link.py").write_bytes((drive / "lib/viperdrive/link.py").read_bytes() + b"\n# edited\n")
    (drive / "lib/viperdrive/odometry.py").unlink()
    before = {p: p.read_bytes() for p in drive.rglob("*") if p.is_file()}
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--check")
    assert r.returncode == 5, (r.returncode, r.stderr)
    for line in ("stale      lib/viperdrive/control.py", "changed    lib/viperdrive/link.py",
                 "missing    lib/viperdrive/odometry.py",
                 f"{n - 3} of {n} files current, 1 stale, 1 changed, 1 missing"):
        assert line in r.stdout, r.stdout
    assert {p: p.read_bytes() for p in drive.rglob("*") if p.is_file()} == before        # nothing written
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive, "--check", "--dry-run")
    assert r.returncode == 2 and "exclude each other" in r.stderr


def viperdrive_version() -> str:
    from viperdrive import __version__
    return __version__


IMPORTS = ("import imu, sensors\nprint('user', imu.WHO, sensors.X)\n"
           "from viperdrive import app, imu as fw_imu, sensors as fw_sensors\n"
           "print('firmware', app.FIRMWARE, fw_imu.__name__, fw_sensors.__name__)\n")


def test_after_a_flash_the_users_lib_imu_still_imports_as_imu_and_an_older_layout_is_gone(tmp_path):
    """The firmware is the package lib/viperdrive/: the user's lib/imu.py and root sensors.py import as `imu` and
    `sensors` on the board (MicroPython's own importer on the drive's files, root then lib/ as CircuitPython
    searches), the firmware's as viperdrive.imu and viperdrive.sensors; an older flash's root-level modules
    (before manifests: their copyright line says whose) are removed, with the folders they emptied."""
    drive = mounted_drive(tmp_path)
    (drive / "lib").mkdir()
    (drive / "lib" / "imu.py").write_text("WHO = 'the user'\n")
    (drive / "sensors.py").write_text("X = 'their sensors'\n")
    for old in ("imu.py", "link.py", "hal/circuitpython.py", "shared/protocol.py"):   # an older flash's layout
        src = ROOT / ("mcu/" + old if not old.startswith("shared/") else old)
        (drive / old).parent.mkdir(parents=True, exist_ok=True)
        (drive / old).write_bytes(src.read_bytes())
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    for old in ("imu.py", "link.py", "hal", "shared"):
        assert not (drive / old).exists(), old
    assert "leave sensors.py" not in r.stderr and (drive / "sensors.py").read_text() == "X = 'their sensors'\n"
    out = board_imports(drive, IMPORTS)
    print(out)
    assert "user the user their sensors" in out
    assert f"firmware viperdrive {viperdrive_version()} viperdrive.imu viperdrive.sensors" in out
