# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The installed `viperdrive` package: ships the repo's shared/ as viperdrive.shared (the same files, no copy),
has its console script, and every subpackage under host/viperdrive is importable and declared in pyproject."""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import viperdrive
from viperdrive import tomlread

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
HOST_PKG = ROOT / "host" / "viperdrive"


def subpackages() -> list[str]:
    """Dotted names of viperdrive and every folder under host/viperdrive that is a package."""
    names = ["viperdrive"]
    for init in sorted(HOST_PKG.rglob("__init__.py")):
        rel = init.parent.relative_to(HOST_PKG)
        if rel.parts and "__pycache__" not in rel.parts:
            names.append(".".join(("viperdrive",) + rel.parts))
    return names


def pyproject() -> dict:
    return tomlread.loads((ROOT / "pyproject.toml").read_text())


def test_shared_is_shipped_from_the_repo_folder():
    import viperdrive.shared as shared_pkg
    from viperdrive.shared import params, protocol
    for mod, rel in ((protocol, "shared/protocol.py"), (params, "shared/params.py"),
                     (shared_pkg, "shared/__init__.py")):
        assert os.path.samefile(mod.__file__, ROOT / rel), (mod.__name__, mod.__file__)


def test_console_script_runs():
    script = Path(sys.executable).parent / "viperdrive"
    assert script.exists() and os.access(script, os.X_OK), script
    eps = [ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "viperdrive"]
    assert [ep.value for ep in eps] == ["viperdrive.cli:main"]
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"viperdrive {viperdrive.__version__}"
    # no command: the help and the usage exit code, no traceback
    proc = subprocess.run([str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "usage: viperdrive" in proc.stdout and "Traceback" not in proc.stderr


def test_one_version_everywhere():
    """shared/version.py is the one version: the package's metadata (pyproject reads it there), __version__, and
    the firmware's HELLO string (mcu/app.py builds it from the same module); CHANGELOG has a heading for it."""
    from viperdrive.shared import version
    project = pyproject()["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "viperdrive.shared.version.VERSION"}
    assert importlib.metadata.version("viperdrive") == viperdrive.__version__ == version.VERSION
    app = (ROOT / "mcu" / "app.py").read_text()
    assert "\nFIRMWARE = version.FIRMWARE_PREFIX + version.VERSION" in app
    assert f"\n## {version.VERSION} " in (ROOT / "CHANGELOG.md").read_text()


def test_every_subpackage_imports():
    names = subpackages()
    assert "viperdrive.cli" in names, names
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:  # report every broken subpackage at once
            failed.append(f"{name}: {type(e).__name__}: {e}")
    assert not failed, "\n".join(failed)


def test_pyproject_declares_every_subpackage():
    # a subpackage missing from [tool.setuptools].packages imports in the editable install but is left out of a
    # wheel: the list must match the folders exactly
    setup = pyproject()["tool"]["setuptools"]
    firmware = {p for p in setup["packages"] if p.startswith("viperdrive.firmware.")}
    # the firmware ships as data from the repo's folders (tests/test_wheel.py installs and uses it)
    assert all((ROOT / setup["package-dir"][p]).is_dir() for p in firmware), setup["package-dir"]
    assert {setup["package-dir"][p] for p in firmware} == {"mcu", "mcu/hal", "mcu/boards", "shared", "sim",
                                                           "sim/robots"}
    declared = set(setup["packages"]) - firmware
    on_disk = set(subpackages()) | {"viperdrive.shared"}
    assert not on_disk - declared, f"add to [tool.setuptools].packages in pyproject.toml: {sorted(on_disk - declared)}"
    assert not declared - on_disk, f"declared but missing: {sorted(declared - on_disk)}"


def test_license_is_declared_and_shipped():
    meta = importlib.metadata.metadata("viperdrive")
    assert meta["License-Expression"] == "MIT" and "LICENSE" in meta.get_all("License-File")
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the viperdrive authors\n")


def test_py_typed_is_shipped():
    """PEP 561: the marker is in the package folder and declared as package data (a wheel built from this tree
    ships it: viperdrive/py.typed), so users' type checkers read viperdrive's annotations."""
    assert (HOST_PKG / "py.typed").is_file()
    assert "py.typed" in pyproject()["tool"]["setuptools"]["package-data"]["viperdrive"]


# The modules docs/architecture.md ("Host interfaces") and docs/host.md call public, with names they document.
PUBLIC = {
    "timebase": {"Clock", "HostClock", "HOST_CLOCK", "wait_until", "WaitTimeout"},
    "board": {"Board", "BoardState", "BoardInfo", "BoardDeenergized", "SensorReading", "BoardOdometry", "Link",
              "NackError", "count_delta", "fault_text", "wait_for_hello"},
    "board.link": {"Link", "NackError"},
    "board.board": {"Board", "BoardDeenergized", "count_delta", "wait_for_hello"},
    "motion.kinematics": {"twist_to_wheels", "wheels_to_twist", "max_angular", "desaturate", "envelope",
                          "DifferentialDriveKinematics"},
    "motion.drive": {"DriveController"},
    "motion.odometry": {"Odometry", "lint_covariance"},
    "motion.loop": {"FixedRateLoop", "DriveLoop"},
    "robot.config": {"RobotConfig", "Ros2Settings", "read_robot_file"},
    "robot.rosparams": {"Document", "Params"},
    "estimation": {"Ekf", "load_config", "SensorInput", "measurements_of"},
    "estimation.lint": {"lint"},
    "estimation.replay": {"fuse", "FuseSummary"},
    "estimation.schedule": {"FilterSchedule", "FuseSummary", "norm_topic"},
    "transforms": {"SE2", "SE3", "StaticFrames", "FrameContext"},
    "recording.mcap": {"McapRecorder", "LogClock", "read_mcap", "read_mcap_partial", "open_reader", "OutputFile"},
    "recording.plot": {"plot_mcap"},
    "rigs": {"VirtualBoard", "SimError"},
    "rigs.pico": {"PicoRig"},
    "boardtime.registry": {"clock_for", "register", "unregister", "lookup"},
    "boardtime.clockfile": {"BoardTimeFile"},
}


def test_public_modules_declare_all():
    problems = []
    for name, documented in PUBLIC.items():
        mod = importlib.import_module(f"viperdrive.{name}")
        exported = getattr(mod, "__all__", None)
        if exported is None:
            problems.append(f"viperdrive.{name}: no __all__")
            continue
        problems += [f"viperdrive.{name}.__all__ names {n!r}, which the module lacks" for n in exported
                     if not hasattr(mod, n)]
        problems += [f"viperdrive.{name}.__all__ lacks the documented {n!r}"
                     for n in sorted(documented - set(exported))]
        problems += [f"viperdrive.{name}.__all__ lists {n!r} twice" for n in set(exported) if exported.count(n) > 1]
    assert not problems, "\n".join(problems)
