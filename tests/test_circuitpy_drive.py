# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A CircuitPython board's drive: the FAT12 image of a CIRCUITPY drive (board.fatimage) and `viperdrive flash
--drive`, which copies the firmware onto a mounted one, and its refusals. The chip side is
tests/test_circuitpython_rig.py."""
from __future__ import annotations

import pytest
from test_circuitpython_rig import ROOT, mounted_drive, viperdrive

from viperdrive.board import flashing
from viperdrive.board.fatimage import FatError, FatVolume, read_files

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
    (drive / "app.mpy").write_bytes(b"C\x06stale")       # an old compiled twin would win the import
    (drive / "main.py").write_text("print('old')\n")     # code.py runs first; a main.py left behind is confusing
    r = viperdrive("flash", "--board", "circuitpython_pico", "--drive", drive)
    assert r.returncode == 0, r.stderr
    on_drive = {p.relative_to(drive).as_posix() for p in drive.rglob("*") if p.is_file()}
    expected = {dest for dest, _ in flashing.drive_files("circuitpython_pico")}
    assert expected <= on_drive and "code.py" in expected and "boot.py" in expected and "board.json" in expected
    assert "hal/circuitpython.py" in expected and "hal/rp2.py" not in expected
    assert "fixedstep.py" not in expected       # viper: a SyntaxError there; control.py falls back without it
    assert not (drive / "app.mpy").exists() and not (drive / "main.py").exists()
    assert (drive / "code.py").read_bytes() == (ROOT / "mcu" / "main.py").read_bytes()
    assert (drive / "board.json").read_bytes() == (ROOT / "mcu" / "boards" / "circuitpython_pico.json").read_bytes()


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
