# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every .py under mcu/ and shared/ compiles with mpy-cross for the boards' architectures, and the x64 build
loads and imports on the MicroPython unix port from a folder laid out like a board's filesystem.

Files are discovered, not listed: a new firmware module is checked the moment it exists. Viper code only
compiles for an architecture with a native emitter, so a viper function that uses something an emitter lacks
fails here, for the board it would fail on.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
ARCHS = ("armv6m", "armv7emsp", "xtensawin", "x64")   # RP2040, STM32F4/RP2350, ESP32, the unix port here
SKIP_ON_BOARD = {"main", "boot"}   # entry points: importing them runs the firmware
# Modules that only exist on some port. A mcu/hal/<port>.py backend may fail to import on the unix port for
# naming one of them; nothing else may.
PORT_ONLY_MODULES = {
    "rp2", "esp32", "esp", "pyb", "stm", "nrf", "samd", "mimxrt", "network", "bluetooth", "neopixel",
    "microcontroller", "rotaryio", "pwmio", "countio", "digitalio", "analogio", "board", "busio", "supervisor",
    "usb_cdc", "keypad", "storage",
}
# Names of the `machine` module that the unix port lacks (`from machine import Pin` -> "can't import name Pin").
MACHINE_PORT_ONLY = {
    "Pin", "PWM", "Timer", "WDT", "ADC", "UART", "I2C", "SPI", "RTC", "Counter", "Encoder", "freq", "reset_cause",
    "soft_reset", "deepsleep", "lightsleep", "PWRON_RESET", "HARD_RESET", "WDT_RESET", "SOFT_RESET",
    "DEEPSLEEP_RESET", "disable_irq", "enable_irq", "unique_id",
}
JOBS = max(2, os.cpu_count() or 2)


def tool(name: str) -> str:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        pytest.fail(f"{name} not found: run `make test`, which installs it in .venv")
    return found


def sources(root: Path = ROOT) -> list[Path]:
    """Every .py under mcu/ and shared/ (tests included: they run on MicroPython too)."""
    found = []
    for top in ("mcu", "shared"):
        for p in sorted((root / top).rglob("*.py")):
            if not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(root).parts):
                found.append(p)
    return found


def board_path(root: Path, src: Path) -> Path:
    """Where a source file lives on the board: mcu/ as the package lib/viperdrive (its entry files main.py and
    boot.py at the root), shared/ as its subpackage lib/viperdrive/shared."""
    rel = src.relative_to(root)
    if rel.parts[0] != "mcu":
        return Path("lib", "viperdrive", *rel.parts)
    if len(rel.parts) == 2 and rel.stem in SKIP_ON_BOARD:
        return Path(rel.name)
    return Path("lib", "viperdrive", *rel.parts[1:])


def is_test_file(board_rel: Path) -> bool:
    return "tests" in board_rel.parts[:-1] or board_rel.name.startswith(("test_", "mptest_"))


def module_name(board_rel: Path) -> str:
    parts = list(board_rel.with_suffix("").parts)
    if parts[0] == "lib":
        parts.pop(0)            # /lib is on the board's sys.path
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def mpy_cross(src: Path, arch: str, out: Path, source_name: str) -> str | None:
    """Compile one file; None on success, else the compiler's message."""
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([tool("mpy-cross"), f"-march={arch}", "-s", source_name, "-o", str(out), str(src)],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return (proc.stderr + proc.stdout).strip() or f"mpy-cross exited with {proc.returncode}"
    return None


def compile_tree(root: Path, arch: str, out_dir: Path) -> tuple[list[Path], list[str]]:
    """Compile every source for arch into out_dir laid out like the board; (outputs, error messages)."""
    srcs = sources(root)
    jobs = []
    for src in srcs:
        rel = board_path(root, src)
        jobs.append((src, arch, out_dir / rel.with_suffix(".mpy"), str(rel)))
    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(lambda j: mpy_cross(*j), jobs))
    errors = [f"{arch}: {src.relative_to(root)}:\n{msg}" for (src, *_), msg in zip(jobs, results, strict=True) if msg]
    return [j[2] for j in jobs], errors


IMPORT_SCRIPT = """
import sys
sys.path[:] = [%r, %r + '/lib'] + [p for p in sys.path if p.startswith('.frozen')]
try:
    m = __import__(%r)
    for part in %r.split('.')[1:]:
        m = getattr(m, part)
    f = getattr(m, '__file__', '')
    print('@@OK', f)
except ImportError as e:
    print('@@IMPORTERROR', e.args[0] if e.args else '')
except BaseException as e:
    print('@@ERROR', type(e).__name__)
    sys.print_exception(e, sys.stdout)
"""


def import_on_unix_port(board_dir: Path, module: str) -> tuple[str, str]:
    """Import one module in a fresh micropython process with only board_dir on sys.path: (verdict, detail)."""
    try:
        script = IMPORT_SCRIPT % (str(board_dir), str(board_dir), module, module)
        proc = subprocess.run([tool("micropython"), "-X", "heapsize=8M", "-c", script], cwd=board_dir,
                              capture_output=True, text=True, timeout=30, errors="replace")
    except subprocess.TimeoutExpired:
        return "ERROR", "import did not finish within 30 s (does the module run something at import?)"
    out = proc.stdout
    for verdict in ("@@OK", "@@IMPORTERROR", "@@ERROR"):
        if verdict in out:
            detail = out.split(verdict, 1)[1].strip()
            return verdict[2:], detail
    return "ERROR", f"micropython exited with {proc.returncode} and no verdict\n{out}\n{proc.stderr}"


def port_only_import_error(message: str) -> bool:
    m = re.match(r"no module named '([\w.]+)'", message)
    if m and m.group(1).split(".")[0] in PORT_ONLY_MODULES:
        return True
    m = re.match(r"can't import name (\w+)", message)
    return bool(m and m.group(1) in MACHINE_PORT_ONLY)


def is_port_backend(module: str) -> bool:
    # mcu/hal/<port>.py; the sim backend runs on the unix port and must import there
    return module.startswith("viperdrive.hal.") and module != "viperdrive.hal.sim"


def check_imports(root: Path, board_dir: Path) -> tuple[list[str], list[str]]:
    """Import every module (not main/boot/tests) from board_dir; (failures, modules accepted as port-only)."""
    modules = []
    for src in sources(root):
        rel = board_path(root, src)
        name = module_name(rel)
        if is_test_file(rel) or name in SKIP_ON_BOARD or not name:
            continue
        modules.append(name)
    with ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(lambda m: import_on_unix_port(board_dir, m), modules))
    failures, port_only = [], []
    for module, (verdict, detail) in zip(modules, results, strict=True):
        if verdict == "OK":
            if not detail.endswith(".mpy"):
                failures.append(f"{module}: imported from {detail!r}, not from a .mpy")
        elif verdict == "IMPORTERROR" and is_port_backend(module) and port_only_import_error(detail):
            port_only.append(f"{module}: {detail}")
        else:
            failures.append(f"{module}: {verdict}: {detail}")
    return failures, port_only


@pytest.mark.parametrize("arch", ARCHS)
def test_every_module_compiles(arch, tmp_path):
    outs, errors = compile_tree(ROOT, arch, tmp_path)
    assert len(outs) >= 3, outs     # shared/__init__.py, protocol.py, params.py at least
    assert not errors, "mpy-cross failed:\n" + "\n\n".join(errors)
    for out in outs:
        assert out.stat().st_size > 0, out


def test_x64_build_imports_on_unix_port(tmp_path):
    outs, errors = compile_tree(ROOT, "x64", tmp_path)
    assert not errors, "mpy-cross failed:\n" + "\n\n".join(errors)
    assert not list(tmp_path.rglob("*.py")), "sources leaked into the board folder"
    failures, port_only = check_imports(ROOT, tmp_path)
    if port_only:
        print("accepted port-only import errors:\n  " + "\n  ".join(port_only))
    assert not failures, "modules failing on the unix port:\n" + "\n".join(failures)


# ---- the checks above can fail: a synthetic tree with the faults they must catch ----

def make_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_compile_error_is_reported_with_the_compilers_message(tmp_path):
    src = tmp_path / "src"
    make_tree(src, {
        "shared/__init__.py": "",
        "mcu/good.py": "X = 1\n",
        "mcu/broken.py": "def f(:\n    pass\n",
        # viper with a float: fine as syntax, rejected by every native emitter
        "mcu/badviper.py": "import micropython\n@micropython.viper\ndef f(x: int) -> int:\n    y = 1.5\n"
                           "    return x + y\n",
    })
    for arch in ARCHS:
        _, errors = compile_tree(src, arch, tmp_path / arch)
        text = "\n".join(errors)
        assert len(errors) == 2, text
        assert "mcu/broken.py" in text and "SyntaxError" in text, text
        assert "mcu/badviper.py" in text and "ViperTypeError" in text, text


def test_import_rules_on_a_synthetic_board(tmp_path):
    src = tmp_path / "src"
    make_tree(src, {
        "shared/__init__.py": "",
        "shared/thing.py": "VALUE = 3\n",
        "mcu/main.py": "raise SystemExit('main must not be imported')\n",
        "mcu/uses_shared.py": "from .shared import thing\nassert thing.VALUE == 3\n",
        "mcu/hal/__init__.py": "",
        "mcu/hal/rp2.py": "import rp2\n",                        # port-only: accepted for a backend
        "mcu/hal/stm32.py": "from machine import Pin\n",         # machine feature missing on unix: accepted
        "mcu/hal/sim.py": "import rp2\n",                        # the sim backend must import on unix
        "mcu/notahal.py": "import rp2\n",                        # port-only import outside hal/: a failure
        "mcu/typo.py": "import controll\n",                      # a missing firmware module: a failure
        "mcu/crash.py": "x = 1 // 0\n",                          # any other exception: a failure
        "mcu/tests/mptest_x.py": "raise SystemExit\n",           # tests are not imported
    })
    board = tmp_path / "board"
    _, errors = compile_tree(src, "x64", board)
    assert not errors, errors
    failures, port_only = check_imports(src, board)
    failed = sorted(f.split(":")[0] for f in failures)
    assert failed == ["viperdrive.crash", "viperdrive.hal.sim", "viperdrive.notahal", "viperdrive.typo"], failures
    assert sorted(p.split(":")[0] for p in port_only) == ["viperdrive.hal.rp2", "viperdrive.hal.stm32"], port_only
    assert any("ZeroDivisionError" in f for f in failures), failures
