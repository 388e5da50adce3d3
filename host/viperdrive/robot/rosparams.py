# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS parameter files read the way ROS reads them: the YAML, the node layouts, and typed values whose errors name
the file, the node, the key and the value read.

YAML is read as YAML 1.2 (ruamel.yaml, safe loader): `1e-9` is a number, as ROS 2's parameter parser
(rcl_yaml_param_parser: strtol/strtod on every unquoted scalar) and ROS 1 read it; PyYAML (YAML 1.1) made it the
string '1e-9'. A duplicate key, a tab used for indentation or any other syntax error is an error with its line.
Where YAML 1.2 and ROS 2 type an unquoted scalar differently, the typed getters follow ROS 2 and say so in a note:
rcl reads unquoted y/yes/on/true/... (any case it lists) as booleans and nan/inf spellings as numbers, where YAML 1.2
gives strings. A quoted 'yes' is a string for both and stays an error where a boolean is expected.

Layouts (docs/host.md, docs/estimation.md):

- ROS 2: `<node>: {ros__parameters: {...}}`, nodes nested under namespace keys (`robot1: {ekf: {ros__parameters:`),
  absolute names (`/robot1/ekf:`) and the wildcards `/**` and `*` (`/**:`, `/**/ekf:`, `/*/ekf:`). The parameters
  of a node are those of every entry whose name matches it (rcl turns `/**` into `(/\\w+)*` and `/*` into `(/\\w+)`),
  later entries in the file overriding earlier ones, as rclcpp applies them. A relative name (`ekf:`) is the node in
  the root namespace (rclcpp prefixes '/').
- ROS 1: a flat file (what `<rosparam file=...>` loads into a node) or `<node>: {...}` mappings, possibly under
  namespace mappings; `linear/x/max_velocity` and nested `linear: {x: ...}` are the same key.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from ..errors import BadValue
from .files import MAX_DEPTH, check_flow_depth, check_tree

RCL_TRUE = frozenset("Y y yes Yes YES true True TRUE on On ON".split())
RCL_FALSE = frozenset("N n no No NO false False FALSE off Off OFF".split())

_D = TypeVar("_D")     # a getter's default: what it returns for a missing key


class ParamError(BadValue):
    """A parameter file that cannot be used; the message names the file, the node, the key and the value."""


# ------------------------------------------------------------------------------------------ reading

@dataclass
class Document:
    """A parsed parameter file: the data, and for each value (by its path of keys and list indices) its line and
    whether it was written as a plain (unquoted) scalar."""
    data: Any
    source: str = ""
    marks: dict = field(default_factory=dict)

    def line(self, path: tuple) -> int | None:
        m = self.marks.get(path)
        return m[0] if m else None

    def plain(self, path: tuple) -> bool:
        """Written unquoted in the file (a value from a Python dict, or one without a mark, is not)."""
        m = self.marks.get(path)
        return m is not None and m[1]


def yaml_problem(e: Exception, node=None) -> str:
    """One line for a ruamel.yaml error: what, and where (line, column). `node`: the composed document, to find
    the first of two duplicate keys."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or " ".join(str(e).split())
    if "duplicate key" in problem and mark is not None:
        key = re.search(r'duplicate key "(.*?)"', problem)
        name = key.group(1) if key else "?"
        lines = sorted(_key_lines(node, name)) if node is not None else []
        first = lines[0] if len(lines) > 1 else (getattr(e, "context_mark", None) or mark).line + 1
        return (f"duplicate key '{name}' (line {first} and line {mark.line + 1}): a parameter file sets "
                f"each key once (ROS keeps the last one without a word)")
    at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    if "'\\t'" in problem or "'\t'" in problem:
        problem += ": YAML does not allow a tab for indentation; indent with spaces"
    return problem + at


def _key_lines(node, name: str) -> list[int]:
    """Lines of the keys spelled `name` in the mapping that holds a duplicate of it."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    found: list[int] = []
    if isinstance(node, MappingNode):
        hits = [k.start_mark.line + 1 for k, _ in node.value if getattr(k, "value", None) == name]
        if len(hits) > 1:
            return hits
        for _, v in node.value:
            found = _key_lines(v, name)
            if found:
                return found
    elif isinstance(node, SequenceNode):
        for v in node.value:
            found = _key_lines(v, name)
            if found:
                return found
    return found


def parse_yaml(text: str, source: str = "") -> Document:
    """YAML 1.2 text -> Document. ParamError naming the file and the line for anything YAML refuses."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    y = YAML(typ="safe")
    node = None
    check_flow_depth(text, source, error=ParamError)
    try:
        node = y.compose(text)
        if node is not None:
            # the shape first (depth, aliases expanded, recursion): every walk below is then bounded
            check_tree(node, source, _node_children, error=ParamError)
        data = y.constructor.construct_document(node) if node is not None else None
    except YAMLError as e:
        raise ParamError(f"{source}: not valid YAML: {yaml_problem(e, node)}") from None
    except ValueError as e:        # e.g. an int too long for the interpreter's limit
        raise ParamError(f"{source}: not valid YAML: {e}") from None
    except RecursionError:          # the parser's own recursion, before our check could see the shape
        raise ParamError(f"{source}: nested too deeply to read (more than {MAX_DEPTH} levels; a robot or EKF file "
                         f"has a few)") from None
    marks: dict = {}
    if node is not None:
        _mark(node, data, (), marks)
    return Document(data, source, marks)


def _node_children(node) -> list:
    from ruamel.yaml.nodes import MappingNode, SequenceNode
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _mark(node, value, path: tuple, out: dict) -> None:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if isinstance(node, ScalarNode):
        out[path] = (node.start_mark.line + 1, node.style is None)
        return
    out[path] = (node.start_mark.line + 1, True)
    if isinstance(node, MappingNode) and isinstance(value, dict) and len(node.value) == len(value):
        for (_, vnode), (k, v) in zip(node.value, value.items(), strict=True):
            _mark(vnode, v, path + (k,), out)
    elif isinstance(node, SequenceNode) and isinstance(value, list) and len(node.value) == len(value):
        for i, (vnode, v) in enumerate(zip(node.value, value, strict=True)):
            _mark(vnode, v, path + (i,), out)


# ------------------------------------------------------------------------------------------ ROS 2 nodes

@dataclass
class NodeEntry:
    """One `<name>: ros__parameters:` entry of a ROS 2 file."""
    key: str                 # the node name as written, namespaces joined: "diff_cont", "/**/diff_cont", "robot1/ekf"
    segments: tuple          # ("**", "diff_cont")
    path: tuple              # document path of its ros__parameters mapping
    params: dict

    @property
    def basename(self) -> str:
        return self.segments[-1] if self.segments else "**"

    @property
    def wildcard(self) -> bool:
        return self.basename in ("*", "**")

    @property
    def pattern(self) -> re.Pattern:
        regex = "".join(r"(/\w+)*" if s == "**" else r"(/\w+)" if s == "*" else "/" + re.escape(s)
                        for s in self.segments)
        return re.compile(regex or r"(/\w+)*")

    @property
    def fqn(self) -> str:
        """The node this entry names, in the shortest namespace its wildcards allow ("/**/x" -> "/x")."""
        return "/" + "/".join("ns" if s == "*" else s for s in self.segments if s != "**")


def ros2_entries(data) -> list[NodeEntry]:
    """Every node entry of a ROS 2 parameter file, in file order ([] when the file has no ros__parameters)."""
    out: list[NodeEntry] = []
    if not isinstance(data, dict):
        return out
    if isinstance(data.get("ros__parameters"), dict):      # a file for one unnamed node
        out.append(NodeEntry("/**", ("**",), ("ros__parameters",), data["ros__parameters"]))

    def walk(mapping: dict, segments: tuple, written: str, path: tuple):
        for k, v in mapping.items():
            if not isinstance(v, dict) or k == "ros__parameters":
                continue
            segs = segments + tuple(s for s in str(k).split("/") if s)
            name = f"{written}/{str(k).lstrip('/')}" if written else str(k)
            if isinstance(v.get("ros__parameters"), dict):
                out.append(NodeEntry(name, segs, path + (k, "ros__parameters"), v["ros__parameters"]))
            walk(v, segs, name, path + (k,))

    walk(data, (), "", ())
    return out


def check_ros2_layout(doc: Document, error=ParamError) -> None:
    """A ROS 2 file holds values only under ros__parameters: rcl refuses one with a value beside the node names
    ("Cannot have a value before ros__parameters"), so such a file is an error here too, naming the key."""
    def walk(mapping: dict, path: tuple):
        for k, v in mapping.items():
            if k == "ros__parameters":
                continue
            if isinstance(v, dict):
                walk(v, path + (k,))
            else:
                line = doc.line(path + (k,))
                at = f" (line {line})" if line else ""
                where = "/".join(map(str, path + (k,)))
                raise error(f"{doc.source}: {where}: a value outside any node's ros__parameters{at}; ROS 2 refuses "
                            f"the file (\"Cannot have a value before ros__parameters\"): move it under a node")

    if isinstance(doc.data, dict):
        walk(doc.data, ())


def node_params(doc: Document, entries: list[NodeEntry], fqn: str, display: str, error=ParamError) -> Params:
    """The parameters node `fqn` gets from the file: every matching entry, later ones overriding earlier ones."""
    p = Params(doc=doc, source=doc.source, node=display, ros2=True, error=error)
    for e in entries:
        if e.pattern.fullmatch(fqn):
            p.merge(e.params, e.path)
    return p


def choose_entry(entries: list[NodeEntry], name: str, candidates: list[NodeEntry], what: str, source: str,
                 error=ParamError) -> NodeEntry:
    """The entry `--node NAME` means: a full name (/ns/name) or a base name; the error lists `candidates`."""
    written = [e for e in entries if e.key == name and not e.wildcard]
    if written:
        return written[0]               # the name as the file writes it ("/**/ekf", "robot1/ekf")
    if name.startswith("/"):
        hits = [e for e in entries if not e.wildcard and e.fqn == name]
        if not hits and any(e.pattern.fullmatch(name) for e in entries):
            segs = tuple(s for s in name.split("/") if s)
            return NodeEntry(name, segs, (), {})
    else:
        hits = [e for e in entries if not e.wildcard and e.basename == name]
    fqns = sorted({e.fqn for e in hits})
    if len(fqns) == 1:
        return hits[0]
    if len(fqns) > 1:
        raise error(f"{source}: --node {name} matches {len(fqns)} nodes ({', '.join(fqns)}): give the full name")
    listed = ", ".join(e.key for e in candidates) or "none"
    raise error(f"{source}: no node '{name}' ({what}: {listed})")


# ------------------------------------------------------------------------------------------ ROS 1 nodes

def ros1_nodes(data) -> list[tuple[str | None, dict, tuple]]:
    """(name, parameters, path) of every node of a ROS 1 file: the file itself when it holds values (flat), else
    each mapping holding values, namespaces joined with '/'."""
    if not isinstance(data, dict):
        return []
    if any(not isinstance(v, dict) for v in data.values()) or not data:
        return [(None, data, ())]
    out: list[tuple[str | None, dict, tuple]] = []

    def walk(mapping: dict, prefix: str, path: tuple):
        for k, v in mapping.items():
            if not isinstance(v, dict):
                continue
            name = f"{prefix}/{k}" if prefix else str(k)
            if any(not isinstance(x, dict) for x in v.values()):
                out.append((name, v, path + (k,)))
            else:
                walk(v, name, path + (k,))

    walk(data, "", ())
    return out


# ------------------------------------------------------------------------------------------ typed values

BOOL_WORDS = "true/false"


@dataclass
class Params:
    """One node's parameters, flattened to dotted names (`linear.x.max_velocity`), with where each came from.
    The typed getters raise `error` with file, node, key, value and line; `notes` collects what ROS reads
    differently from the file's face value (each (key, text) once)."""
    values: dict[str, Any] = field(default_factory=dict)
    paths: dict = field(default_factory=dict)
    doc: Document | None = None
    source: str = ""
    node: str | None = None
    ros2: bool = False             # ROS 2's static parameter types apply (integer vs double)
    error: type = ParamError
    notes: list = field(default_factory=list)

    # ---- building
    def merge(self, mapping: dict, path: tuple, prefix: str = "") -> None:
        for k, v in mapping.items():
            key = prefix + str(k).replace("/", ".").strip(".")
            if isinstance(v, dict) and v:
                self.merge(v, path + (k,), key + ".")
            else:
                self.values.pop(key, None)      # keep file order: a later entry moves the key to its place
                self.values[key] = v
                self.paths[key] = path + (k,)

    @classmethod
    def of(cls, mapping: dict, doc: Document | None = None, path: tuple = (), **kw) -> Params:
        p = cls(doc=doc, source=doc.source if doc is not None else kw.pop("source", ""), **kw)
        p.merge(mapping, path)
        return p

    # ---- where
    def where(self, key: str, index: int | None = None) -> str:
        name = key + (f"[{index}]" if index is not None else "")
        return ": ".join(x for x in (self.source, self.node, name) if x)

    def line(self, key: str, index: int | None = None) -> int | None:
        path = self.paths.get(key)
        if path is None or self.doc is None:
            return None
        return self.doc.line(path + ((index,) if index is not None else ()))

    def at(self, key: str, index: int | None = None) -> str:
        line = self.line(key, index)
        return f" (line {line})" if line else ""

    def fail(self, key: str, text: str, index: int | None = None) -> NoReturn:
        raise self.error(f"{self.where(key, index)}: {text}{self.at(key, index)}")

    def note(self, key: str, text: str) -> None:
        if (key, text) not in self.notes:
            self.notes.append((key, text))

    def plain(self, key: str, index: int | None = None) -> bool:
        path = self.paths.get(key)
        if path is None or self.doc is None:
            return False
        return self.doc.plain(path + ((index,) if index is not None else ()))

    # ---- access
    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default=None):
        return self.values.get(key, default)

    def keys(self):
        return self.values.keys()

    # ---- scalar conversion (what ROS reads)
    def as_bool(self, key: str, v, index: int | None = None) -> bool:
        if isinstance(v, bool):
            return v
        if isinstance(v, str):
            if self.plain(key, index) and (v in RCL_TRUE or v in RCL_FALSE):
                b = v in RCL_TRUE
                self.note(key, f"{v!r} is a string in YAML 1.2 but ROS 2's parameter parser reads the unquoted "
                               f"word as {str(b).lower()}, and so does viperdrive{self.at(key, index)}; write "
                               f"{str(b).lower()}")
                return b
            quoted = " (quoted, so a string for ROS too)" if not self.plain(key, index) else ""
            self.fail(key, f"expected {BOOL_WORDS}, got {v!r}{quoted}", index)
        self.fail(key, f"expected {BOOL_WORDS}, got {v!r}", index)

    def as_number(self, key: str, v, index: int | None = None) -> float:
        if isinstance(v, bool) or v is None:
            self.fail(key, f"expected a number, got {_shown(v)}", index)
        if isinstance(v, int):
            return float(v)
        if isinstance(v, float):
            return v
        if isinstance(v, str) and self.plain(key, index) and "_" not in v:
            try:
                x = float(v)         # the strtod spellings YAML 1.2 leaves as strings: nan, inf, infinity
            except ValueError:
                pass
            else:
                self.note(key, f"{v!r} is a string in YAML 1.2 but ROS 2's parameter parser reads it as the "
                               f"number {x}{self.at(key, index)}; write .{'nan' if math.isnan(x) else 'inf'}")
                return x
        self.fail(key, f"expected a number, got {_shown(v)}", index)

    def check_ros2_double(self, key: str, v) -> None:
        """ROS 2 parameters are statically typed: an integer for a double parameter stops the node
        (rclcpp: "Wrong parameter type ... setting it to {integer} is not allowed")."""
        if not self.ros2:
            return
        if isinstance(v, int) and not isinstance(v, bool):
            self.note(key, f"{v} is an integer; ROS 2 refuses an integer for a floating-point parameter (Wrong "
                           f"parameter type){self.at(key)}: write {float(v)!r}")
        elif isinstance(v, list):
            ints = [i for i, e in enumerate(v) if isinstance(e, int) and not isinstance(e, bool)]
            if ints and len(ints) < len(v):
                i = ints[0]
                self.note(key, f"the list mixes integers and decimals (entry {i} is {v[i]}); ROS 2's parameter "
                               f"parser refuses the whole file (Sequence should be of same type){self.at(key, i)}: "
                               f"write {float(v[i])!r}")
            elif ints and v:
                self.note(key, f"every entry is an integer: ROS 2 reads an integer array, not the floating-point "
                               f"array this parameter is, and refuses it{self.at(key)}: write {float(v[0])!r}, ...")

    # ---- typed getters: default when absent, the value when of the right type, else an error naming it
    def boolean(self, key: str, default: _D) -> bool | _D:
        if key not in self.values:
            return default
        return self.as_bool(key, self.values[key])

    def number(self, key: str, default, *, positive: bool = False, minimum: float | None = None,
               maximum: float | None = None, unit: str = "", finite: bool = True, double: bool = True):
        """A number; refused outside its range with the range in the message ((0, max] when positive, [minimum,
        maximum] otherwise, in `unit`)."""
        if key not in self.values:
            return default
        v = self.values[key]
        x = self.as_number(key, v)
        if double:
            self.check_ros2_double(key, v)
        if finite and not math.isfinite(x):
            self.fail(key, f"expected a finite number, got {_shown(v)}")
        rng = ""
        if maximum is not None:
            lo = "(0" if positive else (f"[{minimum:g}" if minimum is not None else "(-inf")
            rng = f" in {lo}, {maximum:g}]{' ' + unit if unit else ''}"
        if positive and not x > 0:
            self.fail(key, f"expected a number{rng or ' > 0'}, got {_shown(v)}")
        if minimum is not None and not x >= minimum:
            self.fail(key, f"expected a number{rng or f' >= {minimum}'}, got {_shown(v)}")
        if maximum is not None and not x <= maximum:
            self.fail(key, f"expected a number{rng}, got {_shown(v)}")
        return x

    def string(self, key: str, default: _D) -> str | _D:
        if key not in self.values:
            return default
        v = self.values[key]
        if not isinstance(v, str):
            self.fail(key, f"expected a string, got {_shown(v)}")
        return v

    def bool_list(self, key: str, n: int, what: str = "") -> list[bool] | None:
        if key not in self.values:
            return None
        v = self.values[key]
        if not isinstance(v, list):
            self.fail(key, f"expected a list of {n} {BOOL_WORDS} values{what}, got {_shown(v)}")
        if len(v) != n:
            self.fail(key, f"expected a list of {n} {BOOL_WORDS} values{what}, got {len(v)} entries")
        return [self.as_bool(key, e, i) for i, e in enumerate(v)]

    def number_list(self, key: str, sizes: tuple, what: str = "") -> list[float] | None:
        if key not in self.values:
            return None
        v = self.values[key]
        want = " or ".join(str(s) for s in sizes)
        if not isinstance(v, list):
            self.fail(key, f"expected a list of {want} numbers{what}, got {_shown(v)}")
        out = [self.as_number(key, e, i) for i, e in enumerate(v)]
        if len(v) not in sizes:
            self.fail(key, f"expected a list of {want} numbers{what}, got {len(v)} entries")
        for i, x in enumerate(out):
            if not math.isfinite(x):
                self.fail(key, f"expected a finite number, got {_shown(v[i])}", i)
        self.check_ros2_double(key, v)
        return out


def _shown(v) -> str:
    if isinstance(v, list):
        return f"a list of {len(v)} entries"
    if isinstance(v, dict):
        return "a mapping"
    if v is None:
        return "nothing (null)"
    return repr(v)


__all__ = ["Document", "Params", "ParamError", "NodeEntry", "parse_yaml", "ros2_entries", "ros1_nodes", "node_params",
           "choose_entry", "check_ros2_layout"]
