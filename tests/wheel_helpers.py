# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The wheel as a user gets it: built from the files git tracks (or would: new files not ignored) in a copy of
them, so nothing a checkout has lying around (build/, .venv, caches) gets in."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import dist  # noqa: E402  (tools/dist.py: the copy of the tracked files make dist builds from)


def build_wheel(tmp: Path) -> Path:
    """Build the wheel from the tracked files into tmp/dist; its path."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("the wheel is built from the tracked files: needs git and a checkout")
    src = dist.tracked_copy(ROOT, tmp / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(tmp / "dist"), str(src)], check=True,
                   capture_output=True, timeout=300)
    return next((tmp / "dist").glob("viperdrive-*.whl"))
