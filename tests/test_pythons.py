# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The wheel on the Pythons a user has: the oldest supported (3.10: Ubuntu 22.04, ROS 2 Humble) and the newest
present (3.13 here; Jazzy's Ubuntu 24.04 has 3.12). For each: a fresh venv, the wheel built from the tracked files
installed with its [ros2] extra from the package index as a user installs it (pip resolving the dependencies'
versions for that Python, tomli on 3.10), then `viperdrive --version`, `python -m viperdrive --help`,
`viperdrive boards`, `viperdrive ros2 --help`, and the board-free tests that need nothing but the package, pytest
and hypothesis (BOARD_FREE), run by that interpreter against the installed package.

An interpreter is found in pyenv's versions folder or on PATH (python3.10, not a pyenv shim). Where one is absent
the test is skipped naming it, except under CI=true, where an absent interpreter fails: CI must prove both."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from wheel_helpers import build_wheel

from viperdrive import __version__

pytestmark = [pytest.mark.install, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
OLDEST = (3, 10)
NEWEST_TRIED = ((3, 14), (3, 13), (3, 12))
# host logic that imports only the package, pytest and hypothesis (no reference libraries, no board, no
# MicroPython): robot files and ROS parameter files (tomli on 3.10), kinematics of calibration and tuning, the EKF's
# inputs, the CLI's units and hostile files
BOARD_FREE = ["tests/test_arm.py", "tests/test_calibrate.py", "tests/test_config.py",
              "tests/test_ekf_example_config.py", "tests/test_ekf_inputs.py", "tests/test_rosfiles.py",
              "tests/test_sensormsgs.py", "tests/test_tuning_design.py", "tests/test_stats.py",
              "tests/test_cli_units.py", "tests/test_hardening_files.py", "tests/test_boards_cli.py"]
# not run there: one needs the [plot] extra, three need the emulated Pico's firmware images (a checkout's)
NOT_THERE = ["test_a_file_that_is_not_mcap_is_exit_7_from_fuse_and_log_plot",
             "test_an_unusable_flash_path_is_refused_before_any_port_is_announced",
             "test_a_random_flash_image_is_refused_naming_what_it_lacks",
             "test_sim_pico_uf2_that_is_not_an_image_is_refused_with_one_line"]


def _up_to_pin(name: str) -> str:
    """name<=version as requirements.lock pins it: the suite's own tools at the lock's version where that Python
    has it, else the newest that supports it (hypothesis 6.170 needs Python 3.11)."""
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.lower().startswith(name + "=="):
            return line.strip().replace("==", "<=")
    raise AssertionError(f"{name} is not pinned in requirements.lock")


def find_python(version: tuple[int, int]) -> str | None:
    """pyenv's interpreter of that version, else one on PATH (not a pyenv shim: it needs a version chosen)."""
    name = f"python{version[0]}.{version[1]}"
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(Path(root, "versions").glob(f"{version[0]}.{version[1]}.*/bin/{name}"))
    if found:
        return str(found[-1])
    on_path = shutil.which(name)
    return on_path if on_path and "/shims/" not in on_path else None


def _interpreters() -> list[tuple[str, tuple[int, int]]]:
    newest = next((v for v in NEWEST_TRIED if find_python(v)), NEWEST_TRIED[-1])
    return [("oldest", OLDEST), ("newest", newest)]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.parametrize("which, version", _interpreters(), ids=lambda v: v if isinstance(v, str) else None)
def test_the_wheel_installs_and_runs_on(which, version, wheel, tmp_path):
    exe = find_python(version)
    label = f"Python {version[0]}.{version[1]}"
    if exe is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{label} ({which} supported) is not on this machine, and CI must prove it")
        pytest.skip(f"{label} ({which} supported) is not on this machine (PATH, pyenv)")
    venv = tmp_path / "venv"
    subprocess.run([exe, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[ros2]",
                        _up_to_pin("pytest"), _up_to_pin("hypothesis")], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{label}: pip install failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIPERDRIVE", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"

    def run(*argv, cwd=tmp_path, timeout=120):
        out = subprocess.run(list(argv), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout,
                             stdin=subprocess.DEVNULL)
        assert "Traceback" not in out.stderr, (label, argv, out.stderr[-3000:])
        return out

    got = run(py, "-c", "import sys, viperdrive; print(sys.version_info[:2], viperdrive.__file__)")
    assert got.stdout.startswith(f"({version[0]}, {version[1]})") and str(venv) in got.stdout, got.stdout
    r = run(str(venv / "bin" / "viperdrive"), "--version")
    assert r.returncode == 0 and r.stdout.strip() == f"viperdrive {__version__}", (label, r.stdout, r.stderr)
    r = run(py, "-m", "viperdrive", "--help")
    assert r.returncode == 0 and "usage: viperdrive" in r.stdout and "ros2" in r.stdout, (label, r.stderr)
    r = run(str(venv / "bin" / "viperdrive"), "boards")
    assert r.returncode == 0 and "pico" in r.stdout and "emulated" in r.stdout, (label, r.stderr)
    r = run(str(venv / "bin" / "viperdrive"), "ros2", "--help")
    assert r.returncode == 0 and "usage: viperdrive ros2" in r.stdout, (label, r.stderr)
    # the board-free tests, by this interpreter, from the checkout's tests against the installed package
    r = run(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "-m", "unit",
            *BOARD_FREE, "-k", " and ".join(f"not {t}" for t in NOT_THERE), cwd=ROOT, timeout=900)
    tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-500:]
    print(f"{label} ({exe}): {tail}")
    assert r.returncode == 0, (label, r.stdout[-4000:], r.stderr[-2000:])
    assert " passed" in tail and "failed" not in tail and "error" not in tail and "skipped" not in tail, tail


def test_the_oldest_python_is_what_the_package_says_it_supports():
    from viperdrive import tomlread
    project = tomlread.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["requires-python"] == f">={OLDEST[0]}.{OLDEST[1]}"
    assert project["tool"]["ruff"]["target-version"] == f"py{OLDEST[0]}{OLDEST[1]}"
    assert project["tool"]["mypy"]["python_version"] == f"{OLDEST[0]}.{OLDEST[1]}"
    assert "tomli>=1.1; python_version < '3.11'" in project["project"]["dependencies"]
    said = {c.rsplit(" :: ", 1)[1] for c in project["project"]["classifiers"]
            if c.startswith("Programming Language :: Python :: 3.")}
    assert min(said, key=lambda v: tuple(map(int, v.split(".")))) == f"{OLDEST[0]}.{OLDEST[1]}"
    assert max(said, key=lambda v: tuple(map(int, v.split(".")))) == "3.13"
    assert sys.version_info >= OLDEST
