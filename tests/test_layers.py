# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The layers of the tree hold (docs/architecture.md, "Layers"): every import, read from the source with ast (at
module level, inside functions, under TYPE_CHECKING), runs down or sideways, never up.

- host/viperdrive: each module belongs to one layer; it imports only from its own layer or lower ones.
- mcu/ and sim/ (MicroPython): never import the host package, nor a module only the host has.
- shared/ (the same files on the board and the host): imports only what MicroPython and CPython both have;
  a module one of them lacks only behind `except ImportError`, `typing` only under TYPE_CHECKING.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
HOST_PKG = ROOT / "host" / "viperdrive"

# Lowest first. A name is a module or subpackage directly under viperdrive (viperdrive.estimation.ekf is "estimation").
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"shared", "errors", "ranges", "stats", "transforms", "executables", "extras", "timebase", "messages",
              "tomlread", "boardtime"}),
    ("robot", {"robot"}),
    ("deploy", {"deploy"}),
    ("board", {"board"}),
    # above board: a rig is a program that serves a port, and Board never learns that such boards exist
    ("rigs", {"rigs"}),
    ("ports", {"ports"}),
    ("motion", {"motion"}),
    ("tuning", {"tuning"}),
    ("recording", {"recording"}),
    ("estimation", {"estimation"}),
    ("applications", {"cli", "ros2", "demo", "dashboard", "__init__", "__main__"}),
]
RANK = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}

# What the MicroPython ports and CPython both provide, as far as shared/ may use it.
BOTH = {"struct", "math", "binascii", "array", "sys", "errno", "json", "re", "io", "collections"}


@dataclass(frozen=True)
class Import:
    module: str         # absolute dotted name ("" level: as written)
    line: int
    guarded: bool       # inside `try: ... except ImportError`
    typing_only: bool   # under `if TYPE_CHECKING:`


def imports_of(path: Path, package: str | None = None) -> list[Import]:
    """Every import in the file; relative ones resolved against `package` (the module's package)."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[Import] = []

    def absolute(node: ast.ImportFrom) -> list[str]:
        if node.level == 0:
            return [node.module or ""]
        assert package is not None, f"{path}:{node.lineno}: a relative import outside a package"
        base = package.split(".")
        base = base[:len(base) - (node.level - 1)]
        if node.module:
            return [".".join(base + [node.module])]
        return [".".join(base + [a.name]) for a in node.names]     # from . import x: the submodule x

    def visit(node: ast.AST, guarded: bool, typing_only: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, node.lineno, guarded, typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.extend(Import(m, node.lineno, guarded, typing_only) for m in absolute(node))
        if isinstance(node, ast.Try):
            catches = any(h.type is None or "ImportError" in ast.unparse(h.type) for h in node.handlers)
            for child in node.body:
                visit(child, guarded or catches, typing_only)
            for child in node.handlers + node.orelse + node.finalbody:
                visit(child, guarded, typing_only)
            return
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.body:
                visit(child, guarded, True)
            for child in node.orelse:
                visit(child, guarded, typing_only)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, typing_only)

    visit(tree, False, False)
    return found


def host_modules() -> dict[str, Path]:
    """viperdrive.* dotted name -> file, for every module of the host package (shared/ is checked on its own)."""
    out = {}
    for path in sorted(HOST_PKG.rglob("*.py")):
        rel = path.relative_to(HOST_PKG).with_suffix("")
        parts = ("viperdrive",) + rel.parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def layer_key(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_host_module_has_a_layer():
    keys = {layer_key(m) for m in host_modules()}
    missing = sorted(keys - set(RANK))
    assert not missing, f"put these in a layer of tests/test_layers.py and docs/architecture.md: {missing}"
    gone = sorted(set(RANK) - keys - {"shared"})       # shared/ is shipped as viperdrive.shared
    assert not gone, f"listed in a layer but not in host/viperdrive: {gone}"


def test_host_imports_never_run_up_a_layer():
    mods = host_modules()
    upward = []
    for dotted, path in mods.items():
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        mine = RANK[layer_key(dotted)]
        for imp in imports_of(path, package):
            if imp.module != "viperdrive" and not imp.module.startswith("viperdrive."):
                continue
            target = imp.module
            while target not in mods and target.count(".") > 1:    # `from .. import __version__`: a name of
                target = target.rpartition(".")[0]                 # the package, not a submodule
            if target not in mods and target.count(".") == 1 and layer_key(target) not in RANK:
                target = "viperdrive"
            theirs = RANK[layer_key(target)]
            if theirs > mine:
                upward.append(f"{path.relative_to(ROOT)}:{imp.line}: {dotted} ({LAYERS[mine][0]}) imports "
                              f"{imp.module} ({LAYERS[theirs][0]})")
    assert not upward, "\n".join(upward)


MODULE_LINES_MAX = 700         # a module past this is more than one concern: split it by what it does
ROOM_LINES_MAX = {"ros2": 500}


def test_no_module_is_more_than_one_concern_long():
    """A module's length is the cheapest sign of a second concern moving in (ros2/bridge.py grew to 1,197 lines with
    the cmd_vel input, the diagnostics and the filter's wiring inside it): none over MODULE_LINES_MAX, none in ros2/
    over its bar."""
    too_long = []
    for dotted, path in host_modules().items():
        bar = ROOM_LINES_MAX.get(layer_key(dotted), MODULE_LINES_MAX)
        n = len(path.read_text().splitlines())
        if n > bar:
            too_long.append(f"{path.relative_to(ROOT)}: {n} lines (at most {bar})")
    assert not too_long, "\n".join(too_long)


def test_board_knows_nothing_of_rigs_ports_or_deploy():
    """Board is handed a port and a clock (viperdrive.ports turns a port name into one; a rig serves a port; a flash
    is deploy/'s): the layer order forbids board/ importing any of them, and this names that order so a reshuffle
    of LAYERS cannot quietly allow it."""
    assert RANK["board"] < RANK["rigs"] < RANK["ports"]
    assert RANK["deploy"] < RANK["rigs"] and RANK["boardtime"] < RANK["board"]
    board_imports = {imp.module for dotted, path in host_modules().items() if layer_key(dotted) == "board"
                     for imp in imports_of(path, dotted if path.name == "__init__.py" else dotted.rpartition(".")[0])}
    assert not {m for m in board_imports if m.startswith(("viperdrive.rigs", "viperdrive.ports", "viperdrive.deploy"))}
    assert "viperdrive.boardtime.registry" in board_imports     # the check reads board/'s imports


def micropython_sources() -> list[Path]:
    return sorted(p for d in ("mcu", "sim") for p in (ROOT / d).rglob("*.py") if "node_modules" not in p.parts)


def test_mcu_and_sim_never_import_the_host():
    # names only the host package has (mcu/ has its own link and odometry; `board` is CircuitPython's module).
    # On MicroPython `viperdrive` is the firmware's package (lib/viperdrive/ on a board: mcu/, with shared/ as
    # viperdrive.shared): viperdrive.X there is fine only where X is a firmware module
    board_side = {p.stem for p in micropython_sources()} | {"board", "hal"}
    host_only = {p.stem for p in HOST_PKG.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    host_only = host_only - board_side - {"__init__", "shared"}
    # frozen_image: the module tools/build_uf2.py writes into the Pico image with the firmware frozen in
    firmware = {p.stem for p in (ROOT / "mcu").glob("*.py")} | {"hal", "shared", "frozen_image"}
    assert {"robot", "motion", "estimation", "rigs"} <= host_only     # the check has teeth
    assert "dashboard" not in firmware and "control" in firmware
    bad = []
    for path in micropython_sources():
        rel = path.relative_to(ROOT)
        # mcu/hal/<module>.py: package "viperdrive.hal" (mcu/ is the package viperdrive on a board)
        package = ".".join(("viperdrive", *rel.parts[1:-1])) if rel.parts[0] == "mcu" else None
        for imp in imports_of(path, package):
            parts = imp.module.split(".")
            if parts[0] == "viperdrive":
                if len(parts) > 1 and parts[1] not in firmware:
                    bad.append(f"{rel}:{imp.line}: imports {imp.module} (not a firmware module)")
            elif parts[0] in host_only:
                bad.append(f"{rel}:{imp.line}: imports {imp.module}")
    assert not bad, "\n".join(bad)


def test_shared_imports_only_what_both_pythons_have():
    bad = []
    for path in sorted((ROOT / "shared").glob("*.py")):
        for imp in imports_of(path, "shared"):
            top = imp.module.split(".")[0]
            if top == "shared" or imp.guarded or top in BOTH:
                continue
            if imp.typing_only and top == "typing":
                continue
            bad.append(f"{path.relative_to(ROOT)}:{imp.line}: {imp.module}")
    assert not bad, "shared/ runs on MicroPython and CPython alike:\n" + "\n".join(bad)


def test_the_checker_sees_the_imports_it_judges(tmp_path):
    """The parser finds imports at every depth, resolves relative ones, and tells guarded and typing-only ones
    apart: the checks above cannot pass by missing an import."""
    src = tmp_path / "m.py"
    src.write_text("import struct\n"
                   "from . import board\n"
                   "from ..config import RobotConfig\n"
                   "try:\n    from micropython import const\nexcept ImportError:\n    pass\n"
                   "if TYPE_CHECKING:\n    from typing import Final\n"
                   "def f():\n    from .sim import VirtualBoard\n")
    got = {(i.module, i.guarded, i.typing_only) for i in imports_of(src, "viperdrive.cli")}
    assert got == {("struct", False, False), ("viperdrive.cli.board", False, False),
                   ("viperdrive.config", False, False), ("micropython", True, False), ("typing", False, True),
                   ("viperdrive.cli.sim", False, False)}


# ---- no import circles, no private names across modules ----

def module_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """dotted module -> the modules of `mods` it imports (every import: module level, functions, TYPE_CHECKING).
    `from pkg import name` is an edge to pkg.name when that is a module of the tree, else to pkg."""
    graph: dict[str, set[str]] = {}
    for dotted, path in mods.items():
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        deps = set()
        for imp in imports_of(path, package):
            target = imp.module
            if not target.startswith("viperdrive") or target.startswith("viperdrive.shared"):
                continue        # not the host package (shared/ imports nothing of it)
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != dotted:
                deps.add(target)
        graph[dotted] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_circles():
    found = circles(module_graph(host_modules()))
    assert not found, "import circles (break each: move what both need into a lower module):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def private_reaches(path: Path, package: str | None) -> list[str]:
    """A private name (one leading underscore) taken from another module or object: `from m import _x`, or
    `thing._x` where thing is not self/cls. Dunder names and `__future__` are not private."""
    tree = ast.parse(path.read_text(), str(path))
    bad = []

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for a in node.names:
                if private(a.name):
                    bad.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: "
                               f"imports {a.name} from {'.' * node.level}{node.module or ''}")
        elif isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            bad.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: "
                       f"reaches {ast.unparse(node)}")
    return bad


# Reaches into a third-party package that offers no public way, each with its reason (and a test that fails when
# the package changes under it).
THIRD_PARTY_REACHES = {
    # mcap_ros2's Writer does not wrap mcap's public Writer.flush(), which the recorder needs to put each second on
    # disk (a SIGKILLed recording keeps all but the last second: tests/test_cli_hardening.py)
    "host/viperdrive/recording/mcap.py": {"self._writer._writer"},
}


def cli_commands(mods: dict[str, Path]) -> set[str]:
    """The CLI's command modules: the ones viperdrive.cli discovers (a module-level register() and run())."""
    out = set()
    for dotted, path in mods.items():
        if not dotted.startswith("viperdrive.cli.") or path.name == "__init__.py":
            continue
        names = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        if {"register", "run"} <= names:
            out.add(dotted)
    return out


def test_no_command_imports_another_command():
    """What two commands share lives in a module of its own (cli/options.py, boardopen.py, session.py,
    livefilter.py, ...), never in a command that another command then imports: a command is one file that can
    change without touching the others."""
    mods = host_modules()
    commands = cli_commands(mods)
    assert {"viperdrive.cli.drive", "viperdrive.cli.monitor", "viperdrive.cli.params"} <= commands, commands
    graph = module_graph(mods)
    crossing = sorted(f"{a} imports {b}" for a in commands for b in graph.get(a, ()) if b in commands and b != a)
    assert not crossing, "\n".join(crossing)


def test_no_private_names_across_modules():
    bad = []
    for dotted, path in host_modules().items():
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        bad += private_reaches(path, package)
    # the product's code; tests may look inside what they test (white-box checks of the firmware's state)
    for path in micropython_sources() + sorted((ROOT / "shared").glob("*.py")):
        if "tests" not in path.relative_to(ROOT).parts:
            bad += private_reaches(path, None)
    bad = [b for b in bad if b.split(": reaches ", 1)[-1] not in THIRD_PARTY_REACHES.get(b.split(":", 1)[0], ())]
    assert not bad, "a private name is its module's own: make it public API or keep it inside:\n" + "\n".join(bad)


def test_the_circle_and_private_checks_fail_on_what_they_forbid(tmp_path):
    # the old tree's circle (link -> sim.pico -> board -> link) and its private imports, rebuilt small
    pkg = tmp_path / "viperdrive"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "link.py").write_text("def rate():\n    from .sim.pico import board_speed\n")
    (pkg / "sim" / "__init__.py").write_text("")
    (pkg / "sim" / "pico.py").write_text("from ..board import Board\n")
    (pkg / "board.py").write_text("from .link import Link\nfrom .fuse import _norm_topic\n")
    (pkg / "fuse.py").write_text("def _norm_topic(t): return t\n")
    (pkg / "drive.py").write_text("def f(recorder):\n    return recorder._wall0, self_like._x, super().x\n")
    mods = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(tmp_path).with_suffix("")
        parts = rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts
        mods[".".join(parts)] = path
    assert circles(module_graph(mods)) == [["viperdrive.board", "viperdrive.link", "viperdrive.sim.pico"]]
    found = private_reaches(pkg / "board.py", "viperdrive") + private_reaches(pkg / "drive.py", "viperdrive")
    assert [f.split(": ", 1)[1] for f in found] == ["imports _norm_topic from .fuse", "reaches recorder._wall0",
                                                    "reaches self_like._x"], found
