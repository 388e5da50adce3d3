# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The MicroPython pytest plugin itself (conftest.py + tests/mp_runner.py), run for real: pytest in a subprocess
over a throwaway tree laid out like this repo (the same conftest.py and mp_runner.py, copied) whose MicroPython
tests fail, leave the heap locked, crash the interpreter and hang. Each must be reported, with the MicroPython
file, line and message, and none may take the run down or hang it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent

MCU_TEST = '''\
import micropython


def test_passes():
    assert 1 + 1 == 2


def test_fails_with_a_message():
    x = 3
    assert x == 4, "x was %d" % x


def test_fails_with_the_heap_locked():
    micropython.heap_lock()
    micropython.heap_lock()
    raise ValueError("left the heap locked twice")


def test_allocates_after_the_failures():
    b = bytearray(1000)
    assert len(b) == 1000 and [i for i in range(3)] == [0, 1, 2]
'''

CRASH_TEST = '''\
import micropython


def test_before_the_crash():
    assert True


@micropython.viper
def poke_null():
    p = ptr32(0)
    p[0] = 1


def test_segfaults():
    poke_null()
'''

HANG_TEST = '''\
def test_hangs():
    while True:
        pass
'''

BOTH_TEST = '''\
import sys


def test_runs_here():
    assert sys.implementation.name in ("cpython", "micropython")
'''


def run_pytest(tmp_path: Path, files: dict[str, str], timeout_s: str = "600", wall_s: float = 120):
    for rel in ("conftest.py", "tests/mp_runner.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = test_*.py\n")
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    env = dict(os.environ, VD_MP_TIMEOUT=timeout_s)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                           str(tmp_path), str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=wall_s, env=env)
    return proc, time.monotonic() - t0


def test_failure_names_micropython_file_line_and_message(tmp_path):
    proc, _ = run_pytest(tmp_path, {"mcu/tests/mptest_demo.py": MCU_TEST})
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert re.search(r"\b2 failed, 2 passed\b", out), out
    # the MicroPython traceback: file, line of the failing assert, and the assert's message
    line = MCU_TEST.splitlines().index('    assert x == 4, "x was %d" % x') + 1
    assert f'File "mcu/tests/mptest_demo.py", line {line}, in test_fails_with_a_message' in out, out
    assert "AssertionError: x was 3" in out, out
    assert "ValueError: left the heap locked twice" in out, out
    # every item is reported under its own name, and the run went on after the failures
    assert "FAILED mcu/tests/mptest_demo.py::[mpy]test_fails_with_a_message" in out, out
    assert "FAILED mcu/tests/mptest_demo.py::[mpy]test_fails_with_the_heap_locked" in out, out
    assert "test_allocates_after_the_failures" not in out.split("short test summary")[1], out


def test_crash_inside_a_test_is_reported(tmp_path):
    proc, _ = run_pytest(tmp_path, {"mcu/tests/mptest_crash.py": CRASH_TEST})
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert re.search(r"\b1 failed, 1 passed\b", out), out
    assert "FAILED mcu/tests/mptest_crash.py::[mpy]test_segfaults" in out, out
    # SIGSEGV: the process's exit status, inside the test that crashed
    assert "micropython exited with -11 inside this test" in out, out


def test_hang_inside_a_test_times_out_and_is_reported(tmp_path):
    proc, elapsed = run_pytest(tmp_path, {"mcu/tests/mptest_hang.py": HANG_TEST}, timeout_s="3")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "FAILED mcu/tests/mptest_hang.py::[mpy]test_hangs" in out, out
    assert "timed out after 3 s" in out, out
    assert elapsed < 60, elapsed


def test_shared_test_file_runs_in_both_interpreters(tmp_path):
    proc, _ = run_pytest(tmp_path, {"shared/__init__.py": "", "shared/tests/__init__.py": "",
                                    "shared/tests/test_both.py": BOTH_TEST})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert re.search(r"\b2 passed\b", out), out


def test_bench_runner_goes_on_after_a_failure_and_fails_at_the_end(tmp_path):
    # bench/run_all.py (what `make bench` runs), copied beside three benches: one fails in the middle
    shutil.copy(ROOT / "bench" / "run_all.py", tmp_path / "run_all.py")
    (tmp_path / "bench_a.py").write_text("print('a_line x=1')\n")
    (tmp_path / "bench_b.py").write_text("import sys\nprint('b_line x=2')\nsys.exit(3)\n")
    (tmp_path / "bench_c.py").write_text("import sys\nprint('c_line impl=%s' % sys.implementation.name)\n")
    proc = subprocess.run([sys.executable, str(tmp_path / "run_all.py")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["a_line x=1", "b_line x=2", "c_line impl=cpython"], proc.stdout
    assert "bench_b.py failed with exit 3" in proc.stderr and "1 of 3 benches failed" in proc.stderr
    (tmp_path / "bench_b.py").write_text("print('b_line x=2')\n")
    proc = subprocess.run([sys.executable, str(tmp_path / "run_all.py")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 3, proc.stdout + proc.stderr
