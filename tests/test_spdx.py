# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every file of the repo says its license: source files in their first lines (SPDX-License-Identifier), the
files that cannot hold a comment through REUSE.toml's annotations."""
import fnmatch
import shutil
import subprocess
from pathlib import Path

import pytest

from viperdrive import tomlread

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
TAG = "SPDX-License-Identifier: MIT"


def tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked file list comes from git")
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def annotated(path: str, globs: list[str]) -> bool:
    # REUSE's ** matches across directories; fnmatch's * already does, so ** and * agree here
    return any(fnmatch.fnmatch(path, g.replace("**/", "*").replace("/**", "/*")) for g in globs)


def test_every_file_has_its_license():
    reuse = tomlread.loads((ROOT / "REUSE.toml").read_text())
    globs = [g for a in reuse["annotations"] for g in a["path"] if a["SPDX-License-Identifier"] == "MIT"]
    missing = []
    for f in tracked():
        p = ROOT / f
        if not p.exists():
            continue                    # deleted in the work tree, not yet committed
        if annotated(f, globs):
            continue
        head = p.read_text(errors="replace").splitlines()[:4]
        if not any(TAG in line for line in head):
            missing.append(f)
    assert not missing, f"files without an SPDX line in their first lines or a REUSE.toml annotation: {missing}"


def test_the_generated_step_keeps_the_line():
    # mcu/fixedstep.py is written by tools/gen_fixedstep.py: the tool's header carries the line
    assert TAG in (ROOT / "mcu" / "fixedstep.py").read_text().splitlines()[0]
