# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The docs say what the tree holds, and cannot drift from it:

- every module of host/viperdrive is in docs/architecture.md's table of rooms, in its room's row (a command's
  module in cli/ is found as its command: every cli module but the helpers is one);
- every package's docstring (its __init__.py) names each of its modules and subpackages;
- every dotted name `viperdrive.x.y` in the Markdown docs resolves: to a module or attribute of the host package,
  or to a firmware module (mcu/: the board's package is `viperdrive` too, /lib/viperdrive);
- the protocol version the docs call current is shared/protocol.py's PROTOCOL_VERSION.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from viperdrive.shared import protocol as P
from viperdrive.shared.version import VERSION

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "host" / "viperdrive"
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
ROW = re.compile(r"^\| (\(top\)|`[\w/]+/`) \| (.*?) \|")
DOTTED = re.compile(r"(?<![\w./-])(viperdrive(?:\.\w+)+)")


def rooms_table(text: str) -> dict[str, set[str]]:
    """{room: module names} from the rooms table's rows ("(top)" for modules directly under viperdrive)."""
    rows: dict[str, set[str]] = {}
    in_rooms = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_rooms = line.startswith("## The host package: rooms")
        m = ROW.match(line)
        if in_rooms and m:
            rows.setdefault(m.group(1).strip("`"), set()).update(re.findall(r"`(\w+)`", m.group(2)))
    return rows


def host_modules() -> list[tuple[str, str]]:
    """(room, module) for every module of the host package but shared/ (the wire's, documented with it)."""
    out = []
    for f in sorted(PKG.rglob("*.py")):
        rel = f.relative_to(PKG)
        if rel.parts[0] == "shared":
            continue
        if len(rel.parts) == 1:
            out.append(("(top)", rel.stem))
        elif rel.stem != "__init__":
            out.append((rel.parts[0] + "/", rel.stem))
    return out


def missing_from_rooms(rows: dict[str, set[str]], modules: list[tuple[str, str]]) -> list[str]:
    missing = []
    for room, name in modules:
        if room == "cli/" and _is_command(PKG / "cli" / f"{name}.py"):
            continue        # the row says "one module per command"; docs/cli.md has each command
        if name not in rows.get(room, set()):
            missing.append(f"{room}{name}" if room != "(top)" else name)
    return missing


def _is_command(path: Path) -> bool:
    names = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
    return {"register", "run"} <= names


def test_every_host_module_is_in_the_rooms_table():
    rows = rooms_table((ROOT / "docs" / "architecture.md").read_text())
    missing = missing_from_rooms(rows, host_modules())
    assert not missing, "modules missing from docs/architecture.md's rooms table (add each to its room's row): " \
        + ", ".join(missing)


def docstring_lacks(init: Path) -> list[str]:
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    d = init.parent
    names = [p.stem for p in d.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in d.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    return sorted(n for n in names if not re.search(r"(?<![\w.])%s(?![\w])" % re.escape(n), doc))


@pytest.mark.parametrize("init", sorted(p for p in PKG.rglob("__init__.py") if "shared" not in p.parts),
                         ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_every_package_docstring_names_its_modules(init):
    lacks = docstring_lacks(init)
    assert not lacks, f"{init.relative_to(ROOT)}: its docstring does not name {', '.join(lacks)}"


def resolves(name: str) -> bool:
    """A dotted name of the host package (module, then attributes), or of the firmware's package on the board."""
    parts = name.split(".")
    if len(parts) >= 2 and ((ROOT / "mcu" / f"{parts[1]}.py").exists() or (ROOT / "mcu" / parts[1]).is_dir()):
        return True
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for attr in parts[k:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_dotted_name_in_the_docs_resolves():
    bad = [f"{md.relative_to(ROOT)}:{i}: {name}" for md in DOCS
           for i, line in enumerate(md.read_text().splitlines(), 1)
           for name in DOTTED.findall(line) if not resolves(name)]
    assert not bad, "dotted names the tree does not have:\n" + "\n".join(bad)


def current_protocol_claims() -> list[tuple[str, int]]:
    """(where, N) for each place the docs state the current protocol version."""
    out = []
    for md, pattern in ((ROOT / "docs" / "protocol.md", r"`PROTOCOL_VERSION`\*\* \(now (\d+)"),
                        (ROOT / "CHANGELOG.md", r"It ships \*\*protocol v(\d+)\*\*"),
                        (ROOT / "docs" / "cli.md", r"firmware 'viperdrive %s', protocol v(\d+)" % re.escape(VERSION))):
        found = re.findall(pattern, md.read_text())
        assert found, f"{md.relative_to(ROOT)} no longer states the current protocol version as {pattern!r}"
        out += [(md.name, int(n)) for n in found]
    return out


def test_the_protocol_version_the_docs_call_current_is_the_wires():
    wrong = [(where, n) for where, n in current_protocol_claims() if n != P.PROTOCOL_VERSION]
    assert not wrong, f"PROTOCOL_VERSION is {P.PROTOCOL_VERSION}; the docs say {wrong}"


def test_the_checks_fail_on_what_they_forbid(tmp_path):
    rows = rooms_table("## The host package: rooms\n| room | modules | what |\n| `board/` | `link`, `board` | x |\n"
                       "## Layers\n| `motion/` | `drive` | not the rooms table |\n")
    assert rows == {"board/": {"link", "board"}}
    assert missing_from_rooms(rows, [("board/", "link"), ("board/", "moves"), ("motion/", "drive")]) == \
        ["board/moves", "motion/drive"]
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text('"""The package: `alpha` does a thing; sub is below."""\n')
    (pkg / "alpha.py").write_text("")
    (pkg / "beta.py").write_text("")
    assert docstring_lacks(pkg / "__init__.py") == ["beta"]
    assert resolves("viperdrive.board.moves.Move") and resolves("viperdrive.imu")      # host; the board's package
    assert not resolves("viperdrive.board.moves.Nothing") and not resolves("viperdrive.nothing.here")
