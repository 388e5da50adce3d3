# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Putting the firmware on a board: which files go where, the mpy-cross and mpremote command lines, and the .mpy
architecture of a board.

Layout on the board (docs/architecture.md): the firmware is one package, /lib/viperdrive (mcu/control.py ->
/lib/viperdrive/control.py, mcu/hal/rp2.py -> /lib/viperdrive/hal/rp2.py: only the hal backend the board config
names, plus the shared hal modules; shared/ -> /lib/viperdrive/shared), so none of its modules shadows one of the
user's (their lib/imu.py stays `imu`); the root holds only the entry files (main.py, boot.py; CircuitPython's
code.py) and the board's own data (board.json, params.json). An older flash's root-level modules (LEGACY) are
recognised and removed when they are ours (ownership.decide).
With precompilation every module except main.py and boot.py (MicroPython runs those two only as source) becomes a
.mpy built for the board's architecture; a stale other variant (app.py next to app.mpy: the .py would win the
import) is removed on the board.

    plan = flash_plan(port="/dev/ttyACM0", board_config="mcu/boards/pico.json", arch="armv6m")
    plan.commands()     # [argv, ...]: mpy-cross runs, then the mpremote copy, then the mpremote reset
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import executables
from ..errors import BadValue, UserError
from ..robot.files import read_text
from . import ownership
from .firmware import firmware_root

# sys.implementation._mpy >> 10 -> the mpy-cross -march name (MicroPython py/persistentcode.h MP_NATIVE_ARCH_*)
MPY_ARCHES = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp", "xtensa",
              "xtensawin", "rv32imc", "rv64imc")
# what the usual boards are, for help texts and the error of an unknown arch
ARCH_EXAMPLES = {"armv6m": "RP2040 (Pico)", "armv7emsp": "STM32F4 (pyboard), RP2350 Arm", "xtensawin": "ESP32",
                 "rv32imc": "ESP32-C3, RP2350 RISC-V", "x64": "the unix port"}
# hal modules every hardware backend uses (the backend modules themselves: boardcfg.BACKENDS)
HAL_BACKENDS = ("rp2", "esp32", "stm32", "circuitpython", "sim")
SOURCE_ONLY = ("main.py", "boot.py")        # MicroPython runs these only as .py: the entry files, at the root
PACKAGE = "lib/viperdrive"                  # the firmware's package on the board (on sys.path's /lib)
BOARD_DIRS = ("lib", PACKAGE, PACKAGE + "/hal", PACKAGE + "/shared")
LEGACY_DIRS = ("hal", "shared")             # where flashes before the package put the firmware's subpackages


def mpremote_exe() -> str:
    return executables.require("mpremote")


def mpy_cross_exe() -> str:
    return executables.require("mpy-cross")


# ------------------------------------------------------------------------------------------ architecture

def decode_mpy(value: int) -> tuple[int, int, str | None]:
    """sys.implementation._mpy -> (mpy version, sub-version, arch name or None for bytecode-only ports)."""
    value = int(value)
    version = value & 0xFF
    sub = (value >> 8) & 3
    index = value >> 10
    if index >= len(MPY_ARCHES):
        raise BadValue(f"the board reports .mpy architecture #{index}, unknown to this host: pass --arch")
    return version, sub, MPY_ARCHES[index]


def mpy_cross_version(exe: str | None = None) -> tuple[int, int]:
    """(mpy version, sub-version) that mpy-cross emits, from `mpy-cross --version` ("... emitting mpy v6.3")."""
    out = subprocess.run([exe or mpy_cross_exe(), "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"mpy v(\d+)\.(\d+)", out.stdout + out.stderr)
    if not m:
        raise UserError(f"cannot tell which .mpy version mpy-cross emits: {(out.stdout + out.stderr).strip()!r}")
    return int(m.group(1)), int(m.group(2))


def check_arch(arch: str) -> str:
    if arch not in MPY_ARCHES[1:]:
        known = ", ".join(f"{a} ({ARCH_EXAMPLES[a]})" if a in ARCH_EXAMPLES else a for a in MPY_ARCHES[1:])
        raise BadValue(f"--arch {arch!r} is not an mpy-cross architecture; known: {known}")
    return arch


def check_mpy_compatible(board_mpy: int, emitted: tuple[int, int]) -> str:
    """The arch to compile for; UserError when the board cannot load what mpy-cross emits."""
    version, sub, arch = decode_mpy(board_mpy)
    if (version, sub) != emitted:
        raise UserError(f"the board's MicroPython loads .mpy v{version}.{sub}, this mpy-cross emits v{emitted[0]}."
                        f"{emitted[1]}: flash without --mpy (plain .py works everywhere), or update MicroPython on "
                        f"the board to the version of `mpy-cross --version`", exit_code=5)
    if arch is None:
        raise UserError("the board's MicroPython has no native code emitter (no .mpy architecture): the viper "
                        "control step cannot run precompiled there; flash without --mpy", exit_code=5)
    return arch


DETECT_CODE = 'import sys;print("VD_MPY", getattr(sys.implementation, "_mpy", -1))'


def parse_detect_output(text: str) -> int:
    m = re.search(r"VD_MPY (-?\d+)", text)
    if not m or int(m.group(1)) < 0:
        raise UserError("the board does not report sys.implementation._mpy (an old MicroPython or CircuitPython): "
                        "pass --arch, or flash without --mpy", exit_code=5)
    return int(m.group(1))


# ------------------------------------------------------------------------------------------ files

def load_board_config(spec: str) -> tuple[Path, dict]:
    """--board NAME (mcu/boards/NAME.json) or a path; validated with the firmware's own boardcfg (so a file the
    board would refuse at boot is refused here, with the same message)."""
    root = firmware_root()
    path = Path(spec)
    named = root / "mcu" / "boards" / f"{spec}.json"
    if not path.suffix and (named.is_file() or not os.path.lexists(path)):
        path = named        # a board's name (a folder of that name where flash runs is not a board config)
    if not os.path.lexists(path):
        names = sorted(p.stem for p in (root / "mcu" / "boards").glob("*.json"))
        raise BadValue(f"board config {spec!r} not found; give a file or one of: {', '.join(names)}")
    try:
        data = json.loads(read_text(path, "board config"))
    except json.JSONDecodeError as e:
        raise BadValue(f"board config {path}: not valid JSON ({e})") from None
    try:
        cfg = _boardcfg_module(root).validate(data)
    except ValueError as e:
        raise BadValue(f"{path}: {e}") from None
    return path, cfg if isinstance(cfg, dict) else data


def _boardcfg_module(root: Path):
    # the firmware's validator, loaded from its file: the same rules the board applies at boot
    spec = importlib.util.spec_from_file_location("_viperdrive_boardcfg", root / "mcu" / "boardcfg.py")
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load the firmware's board config validator {root / 'mcu' / 'boardcfg.py'}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass(frozen=True)
class FirmwareFile:
    source: Path        # the .py in the checkout
    dest: str           # path on the board, without the leading ':' (e.g. "hal/rp2.py" or "hal/rp2.mpy")
    compile: bool       # True: source -> .mpy with mpy-cross first


def firmware_files(backend: str, mpy: bool = False, root: Path | None = None) -> list[FirmwareFile]:
    """Every file the firmware needs on a board with this hal backend, in copy order (hal and shared first)."""
    root = root or firmware_root()
    mcu = root / "mcu"
    out = []

    def add(src: Path, dest: str):
        compiled = mpy and src.name not in SOURCE_ONLY
        out.append(FirmwareFile(src, dest[:-3] + ".mpy" if compiled else dest, compiled))

    for src in sorted((root / "shared").glob("*.py")):
        add(src, f"{PACKAGE}/shared/{src.name}")
    for src in sorted((mcu / "hal").glob("*.py")):
        name = src.stem
        if name in HAL_BACKENDS and name != backend:
            continue    # another port's backend: it cannot even be imported here
        add(src, f"{PACKAGE}/hal/{src.name}")
    for src in sorted(mcu.glob("*.py")):
        add(src, src.name if src.name in SOURCE_ONLY else f"{PACKAGE}/{src.name}")
    if not any(f.dest.startswith(f"{PACKAGE}/hal/{backend}.") for f in out):
        raise BadValue(f"no hal backend mcu/hal/{backend}.py in this firmware")
    return out


def legacy_paths(root: Path | None = None) -> list[str]:
    """Where flashes before the package put the firmware's modules (at the root: /app.py, /hal/rp2.py,
    /shared/protocol.py), as .py and .mpy, every backend's: a flash removes those that are ours."""
    root = root or firmware_root()
    mcu = root / "mcu"
    names = [p.name for p in sorted(mcu.glob("*.py")) if p.name not in SOURCE_ONLY]
    names += [f"hal/{p.name}" for p in sorted((mcu / "hal").glob("*.py"))]
    names += [f"shared/{p.name}" for p in sorted((root / "shared").glob("*.py"))]
    return [v for n in names for v in (n, n[:-3] + ".mpy")]


ROOT_VAR = "VIPERDRIVE_ROOT"     # the firmware folder (mcu/, shared/) in a printed command line


class RootPath(str):
    """A path printed as $VIPERDRIVE_ROOT/...: shell_line() leaves the variable outside the quotes."""


class PathDisplay:
    """How --dry-run prints local paths so that its lines run as printed, from the folder they were printed in, on
    any machine: a file under the current directory relative to it (mcu/app.py); one in the firmware folder
    elsewhere as $VIPERDRIVE_ROOT/mcu/app.py (preamble() then sets the variable unless the environment already
    names that folder); anything else as it is. A tool found on PATH is printed by its name (mpremote)."""

    def __init__(self, root: Path | None = None, cwd: Path | None = None, env=None):
        self.root = Path(root if root is not None else firmware_root()).resolve()
        self.cwd = Path(cwd if cwd is not None else os.getcwd()).resolve()
        self.env = os.environ if env is None else env
        self.used_root = False

    def path(self, p) -> str:
        full = Path(p)
        if not full.is_absolute():
            return str(p)               # relative already (the STAGE placeholder)
        full = full.resolve()
        for base, make in ((self.cwd, str), (self.root, lambda rel: RootPath(f"${ROOT_VAR}/{rel}"))):
            try:
                rel = full.relative_to(base)
            except ValueError:
                continue
            if base is self.root:
                self.used_root = True
            return make(rel.as_posix())
        return str(p)

    def exe(self, p) -> str:
        name = Path(p).name
        found = shutil.which(name, path=self.env.get("PATH"))
        if found and Path(found).resolve() == Path(p).resolve():
            return name
        return self.path(p)

    def preamble(self) -> list[str]:
        """Lines that go before the commands (call after the commands were built)."""
        if not self.used_root:
            return []
        env_root = self.env.get(ROOT_VAR)
        if env_root and Path(env_root).resolve() == self.root:
            return [f"# ${ROOT_VAR}: the firmware folder (mcu/, shared/), set in your environment"]
        return [f"# {ROOT_VAR}: the firmware folder (mcu/, shared/)", f"{ROOT_VAR}={shlex.quote(str(self.root))}"]


def _as_is(p) -> str:
    return str(p)


@dataclass
class FlashPlan:
    port: str
    board_config: Path | None
    files: list[FirmwareFile]
    arch: str | None                    # None: plain .py
    stage: Path                         # where .mpy files are built
    mpremote: str = field(default_factory=mpremote_exe)
    mpy_cross: str | None = None
    decision: ownership.Decision | None = None      # from the board's inventory (None: a dry run)
    backup: str | None = None                       # with --force: where the user's files in the way go
    manifest: Path | None = None                    # the local manifest to copy (None: a dry run)

    def compile_commands(self, show=_as_is, exe=_as_is) -> list[list[str]]:
        """show/exe: how local paths and tools appear (the defaults: as they are; a dry run passes a
        PathDisplay's path and exe)."""
        return [[exe(self.mpy_cross or mpy_cross_exe()), f"-march={self.arch}", "-s", f.dest[:-4] + ".py",
                 "-o", show(self.stage / f.dest), show(f.source)] for f in self.files if f.compile]

    def local_path(self, f: FirmwareFile, show=_as_is) -> str:
        return show(self.stage / f.dest) if f.compile else show(f.source)

    def prepare_code(self) -> str:
        """MicroPython run on the board before the copy: make the folders; with --force, move the user's files in
        the way into the backup folder (ownership.decide, from the board's inventory)."""
        dirs = tuple(d for d in BOARD_DIRS if any(f.dest.startswith(d + "/") for f in self.files))
        code = "import os\n"
        if dirs:        # none for a board.json alone (flash --config-only)
            code += (f"for d in {_tuple(dirs)}:\n"
                     "    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n")
        if self.decision is not None and self.backup is not None and self.decision.users_in_the_way:
            moves = [(p.rstrip("/"), f"{self.backup}/{p.rstrip('/')}") for p in self.decision.users_in_the_way]
            folders = sorted({"/".join(b.split("/")[:i]) for _, b in moves for i in range(1, b.count("/") + 1)},
                             key=lambda f: f.count("/"))
            code += (f"for d in {_tuple(folders)}:\n"
                     "    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n"
                     f"for a, b in {_pairs(moves)}:\n    os.rename(a, b)\n")
        return code

    def finish_code(self) -> str:
        """Run on the board after every file arrived under its temporary name: each renamed over its target (main.py
        and boot.py last), what an earlier flash wrote and this one does not use deleted, then the REPL-mode switch
        file removed (an interrupted copy leaves a board that boots into its REPL, with its old firmware)."""
        targets = [f.dest for f in self.files] + (["board.json"] if self.board_config is not None else [])
        if self.manifest is not None:
            targets.append(ownership.MANIFEST)
        targets.sort(key=lambda d: d in SOURCE_ONLY)
        delete = tuple(self.decision.delete) if self.decision is not None else ()
        code = (f"import os\nfor f in {_tuple(targets)}:\n"
                f"    try:\n        os.remove(f)\n    except OSError:\n        pass\n"
                f"    os.rename(f + \"{ownership.TEMP_SUFFIX}\", f)\n")
        if delete:
            code += (f"for f in {_tuple(delete)}:\n"
                     "    try:\n        os.remove(f)\n    except OSError:\n        pass\n")
            # an earlier flash's folders, deepest first: removed when nothing of yours is left in them
            folders = tuple(reversed(BOARD_DIRS[1:])) + LEGACY_DIRS
            emptied = tuple(d for d in folders if any(p.startswith(d + "/") for p in delete)
                            and not any(f.dest.startswith(d + "/") for f in self.files))
            if emptied:
                code += (f"for d in {_tuple(emptied)}:\n"
                         "    try:\n        os.rmdir(d)\n    except OSError:\n        pass\n")
        return code + self.FINISH_CODE

    # the REPL-mode switch file: removed last, so an interrupted copy leaves a board that boots into its REPL
    FINISH_CODE = 'try:\n    os.remove("repl_mode")\nexcept OSError:\n    pass\n'

    def copy_command(self, show=_as_is, exe=_as_is) -> list[str]:
        """One mpremote run: prepare, every file to its temporary name (TEMP_SUFFIX), finish (the renames)."""
        tmp = ownership.TEMP_SUFFIX
        cmd = [exe(self.mpremote), "connect", self.port, "exec", self.prepare_code()]
        for f in self.files:
            cmd += ["+", "fs", "cp", self.local_path(f, show), ":" + f.dest + tmp]
        if self.board_config is not None:
            cmd += ["+", "fs", "cp", show(self.board_config), ":board.json" + tmp]
        if self.manifest is not None:
            cmd += ["+", "fs", "cp", show(self.manifest), ":" + ownership.MANIFEST + tmp]
        cmd += ["+", "exec", self.finish_code()]
        return cmd

    def targets(self) -> dict[str, bytes]:
        """What lands on the board, path -> bytes (the .mpy files once compiled)."""
        out = {f.dest: (self.stage / f.dest if f.compile else f.source).read_bytes() for f in self.files}
        if self.board_config is not None:
            out["board.json"] = self.board_config.read_bytes()
        return out

    def reset_command(self, exe=_as_is) -> list[str]:
        return [exe(self.mpremote), "connect", self.port, "reset"]

    def copies(self) -> int:
        return len(self.files) + (1 if self.board_config is not None else 0) + (1 if self.manifest else 0)

    def commands(self, display: PathDisplay | None = None) -> list[list[str]]:
        """Every command in order; with a PathDisplay, as a dry run prints them (paths a reader can run)."""
        show, exe = (display.path, display.exe) if display is not None else (_as_is, _as_is)
        return self.compile_commands(show, exe) + [self.copy_command(show, exe), self.reset_command(exe)]


def detect_command(port: str, display: PathDisplay | None = None) -> list[str]:
    exe = mpremote_exe()
    return [display.exe(exe) if display is not None else exe, "connect", port, "exec", DETECT_CODE]


# Where .mpy files are built: a private folder made by tempfile.mkdtemp (mode 0700, a fresh random name) for each
# flash, removed afterwards (private_stage()). A fixed name such as /tmp/viperdrive-flash could be created or
# replaced beforehand by another user of the machine, who would then choose what is copied to the board.
# A dry run prints this placeholder instead of creating a folder.
STAGE_PLACEHOLDER = Path("STAGE")


@contextlib.contextmanager
def private_stage():
    """A fresh private build folder (mkdtemp) for one flash; removed with everything in it on the way out."""
    with tempfile.TemporaryDirectory(prefix="viperdrive-flash-") as d:
        yield Path(d)


ARCH_PLACEHOLDER = "ARCH"      # dry run of --mpy without --arch: the arch the board will report


def flash_plan(port: str, board_config: str | Path | None, arch: str | None = None, backend: str | None = None,
               stage: Path | None = None, mpy: bool | None = None) -> FlashPlan:
    """The plan for one board. board_config None: keep the board's board.json (backend must then be given).
    mpy (default: arch given) precompiles; arch ARCH_PLACEHOLDER stands for the one detected later. The .mpy files
    are built in stage: give a private_stage() folder (None: STAGE_PLACEHOLDER/ARCH, for printing only)."""
    cfg_path = None
    if board_config is not None:
        cfg_path, cfg = load_board_config(str(board_config))
        backend = cfg.get("backend", backend)
    if backend is None:
        raise BadValue("the hal backend is unknown: give --board (or --backend with --keep-board-config)")
    mpy = (arch is not None) if mpy is None else mpy
    if mpy:
        arch = arch or ARCH_PLACEHOLDER
        if arch != ARCH_PLACEHOLDER:
            check_arch(arch)
    else:
        arch = None
    files = firmware_files(backend, mpy=mpy)
    return FlashPlan(port, cfg_path, files, arch, stage if stage is not None else STAGE_PLACEHOLDER / (arch or "py"))


def _pairs(pairs) -> str:
    return "(" + ", ".join(f'("{a}", "{b}")' for a, b in pairs) + ("," if len(pairs) == 1 else "") + ")"


# MicroPython run on the board before a flash: what it has at the paths that matter (size, SHA-256 where the port
# has hashlib, the first bytes, folder or file), its manifest, its free bytes; a line each (VD_F per path, VD_M the
# manifest, VD_INV the free bytes, last). Line by line because one repr of it all (~30 KB for a flashed Pico: every
# file's first 400 bytes in hex) was a MemoryError on a Pico. The manifest is read whole when it is at most 256 KiB
# (larger: not ours, unread): MicroPython's read(n) allocates n bytes at once, and read(262144) failed the same way.
INVENTORY_CODE = """import os
try:
    import hashlib, binascii
except ImportError:
    hashlib = None
def info(p):
    try:
        st = os.stat(p)
    except OSError:
        return None
    if st[0] & 0x4000:
        return (p, 0, None, "", 1)
    h = hashlib.sha256() if hashlib else None
    head = b""
    with open(p, "rb") as f:
        while True:
            b = f.read(512)
            if not b:
                break
            if len(head) < 400:
                head += b[:400 - len(head)]
            if h:
                h.update(b)
    return (p, st[6], binascii.hexlify(h.digest()).decode() if h else None, binascii.hexlify(head).decode(), 0)
man = None
try:
    if os.stat("MANIFEST")[6] <= 262144:
        with open("MANIFEST") as f:
            man = f.read()
except OSError:
    pass
paths = list(PATHS)
if man:
    try:
        import json
        paths += list(json.loads(man)["files"])
    except Exception:
        man = None
for p in paths:
    i = info(p)
    if i:
        print("VD_F", repr(i))
print("VD_M", repr(man))
try:
    v = os.statvfs(".")
except OSError:
    v = os.statvfs("/")
print("VD_INV", v[0] * v[4])
"""


# A Pico image with the firmware frozen in (tools/build_uf2.py) has the module viperdrive.frozen_image; the frozen
# package comes before /lib on sys.path, so a flashed lib/viperdrive/ never runs on such a board
FROZEN_PROBE = """
try:
    from viperdrive import frozen_image
    print("VD_FROZEN", repr(frozen_image.VERSION))
except Exception:
    print("VD_FROZEN None")
"""


def parse_frozen(text: str) -> str | None:
    """The version of the firmware frozen into the board's image, from its answer to FROZEN_PROBE (None: a stock
    image)."""
    import ast
    m = re.search(r"VD_FROZEN (.*)", text)
    if not m:
        raise UserError(f"the board did not say whether its image has the firmware frozen in: "
                        f"{text.strip()[-300:]!r}")
    try:
        value = ast.literal_eval(m.group(1).strip())
    except (ValueError, SyntaxError):
        value = None
    return value if isinstance(value, str) and value else None


def firmware_paths(backend: str) -> list[str]:
    """Every path a flash for this backend may have written the firmware to, in either form (.py, .mpy), and where
    flashes before the package put it: what no longer runs on a board whose image has the firmware frozen in."""
    paths = {"main.py"}
    for f in firmware_files(backend):
        paths.add(f.dest)
        if f.dest not in SOURCE_ONLY:
            paths.add(f.dest[:-3] + ".mpy")
    paths.update(legacy_paths())
    paths.discard("boot.py")        # the frozen image has none: the filesystem's still runs, harmless
    return sorted(paths)


def inventory_code(paths) -> str:
    code = INVENTORY_CODE.replace("MANIFEST", ownership.MANIFEST)
    return code.replace("PATHS", _tuple(sorted(paths)) if paths else "()")


def parse_inventory(text: str) -> tuple[dict[str, ownership.Existing], dict[str, dict], int]:
    """The board's answer to inventory_code -> (what is where, its manifest's files, its free bytes)."""
    existing, manifest_text, free = _inventory(text)
    return existing, ownership.load_manifest(manifest_text), free


def inventory_firmware(text: str) -> str | None:
    """The firmware string of the manifest in the board's answer to inventory_code (None: no manifest)."""
    return ownership.manifest_firmware(_inventory(text)[1])


def _inventory(text: str) -> tuple[dict[str, ownership.Existing], str | None, int]:
    import ast
    end = re.search(r"^VD_INV (\d+)\s*$", text, re.M)
    if not end:
        raise UserError(f"the board did not list its files: {text.strip()[-300:]!r}")
    existing = {}
    manifest_text = None
    line = ""
    try:
        for line in text[:end.start()].splitlines():
            if line.startswith("VD_F "):
                path, size, digest, head, folder = ast.literal_eval(line[5:].strip())
                existing[str(path)] = ownership.Existing(int(size), digest, bytes.fromhex(head), folder=bool(folder))
            elif line.startswith("VD_M "):
                manifest_text = ast.literal_eval(line[5:].strip())
    except (ValueError, SyntaxError, TypeError):
        raise UserError(f"the board's list of its files cannot be read: {line[:200]!r}") from None
    return existing, manifest_text if isinstance(manifest_text, str) else None, int(end.group(1))


def _tuple(names) -> str:
    # double quotes inside: the shell line quotes the whole program in single quotes
    return "(" + ", ".join(f'"{n}"' for n in names) + ("," if len(names) == 1 else "") + ")"


def shell_line(argv: list[str]) -> str:
    """One command as a shell line, a chained mpremote command split before each '+' for reading. A RootPath keeps
    its $VIPERDRIVE_ROOT outside the quotes, so the shell expands it."""
    parts = []
    prefix = f"${ROOT_VAR}/"
    for a in argv:
        if a == "+":
            parts.append("\\\n  +")
        elif isinstance(a, RootPath) and a.startswith(prefix):
            parts.append(f'"${ROOT_VAR}"/' + shlex.quote(a[len(prefix):]))
        else:
            parts.append(shlex.quote(a))
    return " ".join(parts)
