# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The release artifacts (`make dist`), into one folder:

    viperdrive-VERSION.tar.gz                         the sdist      } built from the files git tracks, in a copy
    viperdrive-VERSION-py3-none-any.whl               the wheel      } of them (nothing else in the checkout gets in)
    viperdrive-VERSION-firmware-BACKEND.zip           per MicroPython backend (rp2, esp32, stm32): the files
                                                      `viperdrive flash` copies, laid out as on the board, with
                                                      the manifest (viperdrive-files.json); board.json is yours
    viperdrive-VERSION-circuitpy.zip                  a CIRCUITPY drive's files as `flash --drive` writes them
                                                      (code.py, boot.py, the firmware, circuitpython_pico.json as
                                                      board.json), with the manifest
    viperdrive-VERSION-RPI_PICO.uf2                   MicroPython for the Pico with the firmware frozen in
                                                      (tools/build_uf2.py, `make uf2`): drag it onto the Pico's
                                                      RPI-RP2 drive, then `viperdrive flash --config-only`
    SHA256SUMS                                        `sha256sum -c SHA256SUMS` checks them all

    python tools/dist.py OUT_DIR [--snapshot] [--root CHECKOUT]

Refused (exit 1, nothing written) when the versions disagree: shared/version.py (the package's version and the
firmware's, which the firmware's HELLO says), the version the built wheel carries, and CHANGELOG.md's heading for
that version, which must carry the release date (`## 0.1.0 (2026-12-07)`); `(unreleased)` is accepted only with
--snapshot, for a build that is not a release. A release needs the MicroPython source kit the Pico image is built
from (tools/build_uf2.py says where it is looked for); a --snapshot without it leaves the image out and says so.
The zip files are reproducible: sorted, fixed timestamps, and the
manifests dated with the release (or "snapshot")."""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MICROPYTHON_BACKENDS = ("rp2", "esp32", "stm32")
CIRCUITPY_BOARD = "circuitpython_pico"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class DistError(Exception):
    pass


def source_version(root: Path) -> str:
    text = (root / "shared" / "version.py").read_text()
    m = re.search(r'^VERSION = "([^"]+)"$', text, re.M)
    if not m:
        raise DistError(f"{root / 'shared' / 'version.py'}: no VERSION = \"...\" line")
    return m.group(1)


def changelog_date(root: Path, version: str, snapshot: bool) -> str:
    """The release date CHANGELOG.md gives `version`; "snapshot" for an unreleased one with snapshot."""
    text = (root / "CHANGELOG.md").read_text()
    m = re.search(rf"^## {re.escape(version)} \(([^)]*)\)\s*$", text, re.M)
    if not m:
        found = re.findall(r"^## (\S+)", text, re.M)
        raise DistError(f"CHANGELOG.md has no heading for {version} (shared/version.py); its newest is "
                        f"{found[0] if found else 'none'}: the two must agree")
    when = m.group(1)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", when):
        return when
    if when == "unreleased" and snapshot:
        return "snapshot"
    raise DistError(f"CHANGELOG.md's heading for {version} says ({when}), not a release date (YYYY-MM-DD): date it "
                    f"to release, or build a --snapshot")


def tracked_copy(root: Path, dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                           capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        p = root / rel
        if p.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / rel)
    return dest


def build_packages(src: Path, out: Path) -> list[Path]:
    """The sdist and the wheel, with the PEP 517 hooks of this venv's setuptools (no isolation, no network), each
    in a process of its own (in one, the second hook's output went missing)."""
    made = []
    for hook in ("build_sdist", "build_wheel"):
        code = f"import sys; from setuptools import build_meta as b; print('VD_BUILT', b.{hook}(sys.argv[1]))"
        r = subprocess.run([sys.executable, "-c", code, str(out)], cwd=src, capture_output=True, text=True,
                           timeout=600)
        m = re.search(r"^VD_BUILT (\S+)$", r.stdout, re.M)
        if r.returncode != 0 or not m or not (out / m.group(1)).is_file():
            raise DistError(f"{hook} failed:\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}")
        made.append(out / m.group(1))
    return made


def wheel_version(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        m = re.search(r"^Version: (\S+)$", z.read(meta).decode(), re.M)
    if not m:
        raise DistError(f"{wheel.name}: no Version in its METADATA")
    return m.group(1)


def write_zip(path: Path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name])


def firmware_bundles(root: Path, version: str, when: str, out: Path) -> list[Path]:
    from viperdrive.deploy import circuitpy, flashing, ownership
    from viperdrive.shared.version import FIRMWARE_PREFIX
    made = []
    for backend in MICROPYTHON_BACKENDS:
        files = {f.dest: f.source.read_bytes() for f in flashing.firmware_files(backend, root=root)}
        files[ownership.MANIFEST] = ownership.make_manifest(files, FIRMWARE_PREFIX + version, written=when)
        path = out / f"viperdrive-{version}-firmware-{backend}.zip"
        write_zip(path, files)
        made.append(path)
    drive = {dest: src.read_bytes() for dest, src in circuitpy.drive_files(root / "mcu" / "boards" /
                                                                          f"{CIRCUITPY_BOARD}.json")}
    drive[ownership.MANIFEST] = ownership.make_manifest(drive, FIRMWARE_PREFIX + version, written=when)
    path = out / f"viperdrive-{version}-circuitpy.zip"
    write_zip(path, drive)
    made.append(path)
    return made


def pico_image(root: Path, snapshot: bool) -> Path | None:
    """The Pico image with the firmware frozen in, built (or found up to date) in root/build/uf2; None for a
    snapshot on a machine without the source kit."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import build_uf2
    try:
        image, _ = build_uf2.build(root / "build" / "uf2", build_uf2.default_kit().resolve(), os.cpu_count() or 2,
                                   root=root)
    except FileNotFoundError as e:
        if not snapshot:
            raise DistError(f"a release includes the Pico image, and {e}") from None
        print(f"dist: the Pico image is left out of this snapshot: {e}", file=sys.stderr)
        return None
    except build_uf2.BuildError as e:
        raise DistError(f"the Pico image: {e}") from None
    return image


def sha256sums(paths: list[Path], out: Path) -> Path:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(paths)]
    target = out / "SHA256SUMS"
    target.write_text("".join(lines))
    return target


def dist(out: Path, snapshot: bool = False, root: Path = ROOT) -> list[Path]:
    version = source_version(root)
    when = changelog_date(root, version, snapshot)
    with tempfile.TemporaryDirectory(prefix="viperdrive-dist-") as tmp:
        staging = Path(tmp) / "out"
        staging.mkdir()
        packages = build_packages(tracked_copy(root, Path(tmp) / "src"), staging)
        built = wheel_version(next(p for p in packages if p.suffix == ".whl"))
        if built != version:
            raise DistError(f"the wheel says version {built}, shared/version.py {version}: they must agree")
        made = packages + firmware_bundles(root, version, when, staging)
        image = pico_image(root, snapshot)
        if image is not None:
            made.append(image)
        out.mkdir(parents=True, exist_ok=True)
        for p in made:
            shutil.copy2(p, out / p.name)
    final = [out / p.name for p in made]
    return final + [sha256sums(final, out)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the folder the artifacts go to")
    ap.add_argument("--snapshot", action="store_true", help="accept an (unreleased) CHANGELOG heading")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to build from (default: this one)")
    args = ap.parse_args(argv)
    try:
        made = dist(args.out, args.snapshot, args.root.resolve())
    except DistError as e:
        print(f"dist: error: {e}; nothing written", file=sys.stderr)
        return 1
    except OSError as e:        # the folder is a file, not writable, the disk full
        print(f"dist: error: {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    for p in made:
        print(f"{p}  ({p.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
