# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make dist` (tools/dist.py): the sdist, the wheel, a firmware bundle per MicroPython backend holding exactly what
`flash` copies, a CIRCUITPY bundle holding exactly what `flash --drive` writes, each with its manifest, and
SHA256SUMS that `sha256sum -c` accepts; the bundles byte-identical when built again; refused, nothing written,
when CHANGELOG.md's heading for the version is undated (without --snapshot) or names another version."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from viperdrive.deploy import circuitpy, flashing, ownership
from viperdrive.shared.version import FIRMWARE_PREFIX, VERSION

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
DIST = [sys.executable, str(ROOT / "tools" / "dist.py")]
# the Pico image (tools/build_uf2.py) is in a snapshot where the MicroPython source kit is, and must be under CI
KIT = subprocess.run([sys.executable, str(ROOT / "tools" / "build_uf2.py"), "--kit-present"]).returncode == 0 \
    or os.environ.get("CI", "").lower() == "true"


def _files(zip_path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zip_path) as z:
        return {n: z.read(n) for n in z.namelist()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist") / "dist"
    r = subprocess.run([*DIST, str(out), "--snapshot"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_every_artifact_is_in_the_checksums_and_they_check(built):
    names = sorted(p.name for p in built.iterdir())
    assert names == sorted([f"viperdrive-{VERSION}.tar.gz", f"viperdrive-{VERSION}-py3-none-any.whl",
                            *(f"viperdrive-{VERSION}-firmware-{b}.zip" for b in ("rp2", "esp32", "stm32")),
                            f"viperdrive-{VERSION}-circuitpy.zip", "SHA256SUMS",
                            *([f"viperdrive-{VERSION}-RPI_PICO.uf2"] if KIT else [])])
    listed = [ln.split("  ", 1)[1] for ln in (built / "SHA256SUMS").read_text().splitlines()]
    assert sorted(listed) == [n for n in names if n != "SHA256SUMS"]
    if shutil.which("sha256sum"):
        r = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=built, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.count(": OK") == len(listed), r.stdout + r.stderr
    with zipfile.ZipFile(built / f"viperdrive-{VERSION}-py3-none-any.whl") as z:
        meta = next(n for n in z.namelist() if n.endswith("METADATA"))
        assert f"\nVersion: {VERSION}\n" in z.read(meta).decode()
        assert "viperdrive/firmware/shared/version.py" in z.namelist()


@pytest.mark.parametrize("backend", ["rp2", "esp32", "stm32"])
def test_a_firmware_bundle_holds_what_flash_copies_and_its_manifest(built, backend):
    files = _files(built / f"viperdrive-{VERSION}-firmware-{backend}.zip")
    manifest = json.loads(files.pop(ownership.MANIFEST))
    assert files == {f.dest: f.source.read_bytes() for f in flashing.firmware_files(backend)}
    assert manifest["firmware"] == FIRMWARE_PREFIX + VERSION and manifest["written"] == "snapshot"
    assert {p: e["sha256"] for p, e in manifest["files"].items()} == {p: ownership.sha256(b) for p, b in files.items()}


def test_the_circuitpy_bundle_holds_what_flash_drive_writes(built):
    files = _files(built / f"viperdrive-{VERSION}-circuitpy.zip")
    manifest = json.loads(files.pop(ownership.MANIFEST))
    assert files == {d: s.read_bytes() for d, s in circuitpy.drive_files("circuitpython_pico")}
    assert "code.py" in files and "boot.py" in files and "board.json" in files
    assert set(manifest["files"]) == set(files)


def test_the_bundles_are_the_same_bytes_built_again(built, tmp_path):
    r = subprocess.run([*DIST, str(tmp_path / "again"), "--snapshot"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    for p in built.glob("*.zip"):
        assert (tmp_path / "again" / p.name).read_bytes() == p.read_bytes(), p.name


def _tree(tmp_path: Path, changelog: str) -> Path:
    """A checkout's version and CHANGELOG only: what the refusals are decided by, before anything is built."""
    root = tmp_path / "tree"
    (root / "shared").mkdir(parents=True)
    shutil.copy(ROOT / "shared" / "version.py", root / "shared" / "version.py")
    (root / "CHANGELOG.md").write_text(changelog)
    return root


def test_an_undated_release_is_refused_without_snapshot_and_nothing_is_written(tmp_path):
    root = _tree(tmp_path, f"# Changelog\n\n## {VERSION} (unreleased)\n\nComing.\n")
    r = subprocess.run([*DIST, str(tmp_path / "out"), "--root", str(root)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 1 and "(unreleased), not a release date" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()


def test_a_changelog_for_another_version_is_refused(tmp_path):
    root = _tree(tmp_path, "# Changelog\n\n## 0.0.9 (2026-01-01)\n\nOlder.\n")
    r = subprocess.run([*DIST, str(tmp_path / "out"), "--root", str(root)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 1, r.stderr
    assert f"CHANGELOG.md has no heading for {VERSION}" in r.stderr and "its newest is 0.0.9" in r.stderr
    assert not (tmp_path / "out").exists()
