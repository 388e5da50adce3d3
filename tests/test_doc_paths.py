# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every file path the tree names for a reader exists: in the Markdown files, and in the comments and docstrings of
the code (Python, the rig's JavaScript, the Makefile, pyproject.toml). A path is a word that starts with one of the
tree's top-level folders (`mcu/`, `host/viperdrive/`, `docs/`, ...). After a file moves, the docs that still send a
reader to the old place fail here, with the file and line that name it.

Not checked: placeholders (`mcu/boards/NAME.json`, `hal/<backend>.py`, globs), the .mpy a .py compiles to, and
paths inside code (a test that builds a synthetic tree in a temporary folder names files that never exist here)."""
from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
TOP = ("mcu", "shared", "host", "sim", "tests", "hil_tests", "bench", "tools", "docs")
# a path: a top-level folder, then path characters; not inside a longer path (../shared/firmware is outside the
# tree), not a dotted module name
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./<>*{}-]*[\w/])" % "|".join(TOP))
PLACEHOLDER = re.compile(r"[<>*{}]|(?:^|/)[A-Z][A-Z_]+(?:\.\w+)?$")


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [ROOT / f for f in out.split()]


def python_prose(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment that names a path, and every docstring, of a Python file. (Tokenizing is
    what costs: a file without a path in a line that has a '#' has no comment to check.)"""
    out = []
    if any("#" in line and PATH.search(line) for line in text.splitlines()):
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None and node.body:
                first = node.body[0].lineno
                out.extend((first + i, line) for i, line in enumerate(doc.splitlines()))
    return out


def hash_comments(text: str) -> list[tuple[int, str]]:
    return [(i, line[line.index("#"):]) for i, line in enumerate(text.splitlines(), 1) if "#" in line]


def js_comments(text: str) -> list[tuple[int, str]]:
    out, block = [], False
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if block or s.startswith("/*"):
            out.append((i, s))
            block = "*/" not in s
        elif "//" in line:
            out.append((i, line[line.index("//"):]))
    return out


def prose_of(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(errors="replace")
    if path.suffix == ".md":
        return list(enumerate(text.splitlines(), 1))
    if path.suffix == ".py":
        return python_prose(text) if PATH.search(text) else []
    if path.suffix == ".mjs":
        return js_comments(text)
    if path.suffix in (".toml", ".in") or path.name == "Makefile":
        return hash_comments(text)
    return []


def named_paths(lines: list[tuple[int, str]]):
    for ln, line in lines:
        for m in PATH.finditer(line):
            ref = m.group(1).rstrip("./")
            if PLACEHOLDER.search(ref):
                continue
            yield ln, ref


def exists(ref: str) -> bool:
    p = ROOT / ref
    return p.exists() or (p.suffix == ".mpy" and p.with_suffix(".py").exists())


def test_every_path_named_in_docs_and_comments_exists():
    missing = []
    checked = 0
    for f in tracked():
        if "node_modules" in f.parts or not f.is_file():
            continue
        for ln, ref in named_paths(prose_of(f)):
            checked += 1
            if not exists(ref):
                missing.append(f"{f.relative_to(ROOT)}:{ln}: {ref}")
    assert checked > 300, checked          # the scan sees the docs at all
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_the_scan_finds_a_moved_file_and_skips_placeholders():
    text = ('"""See docs/architecture.md and host/viperdrive/link.py."""\n'
            "# mcu/boards/NAME.json, hal/<backend>.py, mcu/hal/<port>.py, ../shared/firmware, shared/params.mpy\n"
            "x = 'mcu/synthetic.py'\n")
    refs = [ref for _, ref in sorted(named_paths(python_prose(text)))]
    assert refs == ["docs/architecture.md", "host/viperdrive/link.py", "shared/params.mpy"], refs
    assert [exists(r) for r in refs] == [True, False, True]
