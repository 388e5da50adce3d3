# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The firmware's version against the host's (shared/version.py is both): a virtual board running this checkout's
firmware reports the host's version in `info --json`; one running a firmware that says another version (the
same protocol and parameter schema: a board flashed before a fix) is accepted with one warning naming both
versions, and `info` shows both."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import no_traceback, run_cli

from viperdrive import __version__

pytestmark = pytest.mark.board

ROOT = Path(__file__).resolve().parent.parent


def test_info_reports_the_host_and_firmware_versions_equal(sim):
    r = run_cli("info", "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["firmware_version"] == d["host_version"] == __version__ and d["versions_match"] is True
    assert d["firmware"] == f"viperdrive {__version__}" and "warning" not in r.stderr


def test_a_board_with_another_firmware_version_gets_one_warning_naming_both(tmp_path, monkeypatch):
    from viperdrive.rigs.virtual import VirtualBoard
    old = tmp_path / "firmware"
    for part in ("mcu", "sim", "shared"):
        shutil.copytree(ROOT / part, old / part, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    version_py = old / "shared" / "version.py"
    version_py.write_text(version_py.read_text().replace(f'VERSION = "{__version__}"', 'VERSION = "0.0.9"'))
    monkeypatch.setenv("VIPERDRIVE_ROOT", str(old))
    with VirtualBoard() as vb:
        monkeypatch.delenv("VIPERDRIVE_ROOT")
        r = run_cli("info", "--port", vb.url, "--json")
        text = run_cli("info", "--port", vb.url)
    no_traceback(r)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["firmware_version"] == "0.0.9" and d["host_version"] == __version__ and d["versions_match"] is False
    warnings = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1, r.stderr
    assert "viperdrive 0.0.9" in warnings[0] and f"viperdrive {__version__}" in warnings[0]
    assert "flash --check" in warnings[0]
    assert text.returncode == 0 and f"firmware 0.0.9, host {__version__}  (DIFFERENT" in text.stdout, text.stdout
