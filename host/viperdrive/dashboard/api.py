# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's JSON API, checked in one place: every command's fields, their types and ranges.

`parse_body(raw)` turns a request body into a dict (strict JSON: no NaN or Infinity literals, no nesting deeper
than MAX_DEPTH); `check(name, body)` turns that dict into the command's arguments or raises BadValue (400) with a
reason. A boolean is a JSON `true`/`false` only ("false", 0 and [0] are refused, never read as truth); a number is a
JSON number, finite, inside the shared range the CLI uses for the same value (viperdrive.ranges), an integer of any
size refused by comparison, never by an OverflowError; text is a string of bounded length; a field the command
does not take is refused (a typo is not silently ignored). tests/test_dashboard_api.py sends every command random
JSON of the wrong types and sizes."""
from __future__ import annotations

import json
from dataclasses import dataclass

from .. import ranges
from ..errors import BadValue

MAX_DEPTH = 32          # nesting of a body's arrays and objects (json's own recursion would end in RecursionError)
TEXT_MAX = 200          # characters in a text field


@dataclass(frozen=True)
class Bool:
    default: bool | None = None

    def check(self, name: str, value) -> bool:
        if not isinstance(value, bool):
            raise BadValue(f"{name} must be true or false (a JSON boolean), got {_show(value)}")
        return value


@dataclass(frozen=True)
class Number:
    range: ranges.Range
    default: float | None = None

    def check(self, name: str, value) -> float:
        return self.range.check(name, value)


@dataclass(frozen=True)
class Text:
    choices: tuple[str, ...] = ()
    default: str | None = None
    max_len: int = TEXT_MAX

    def check(self, name: str, value) -> str:
        if not isinstance(value, str):
            raise BadValue(f"{name} must be text, got {_show(value)}")
        if self.choices and value not in self.choices:
            raise BadValue(f"{name} must be one of {', '.join(self.choices)}, got {_show(value)}")
        if len(value) > self.max_len:
            raise BadValue(f"{name} is longer than {self.max_len} characters")
        return value


# every command the page may send, its fields in the order the Dashboard method takes them
COMMANDS: dict[str, dict[str, Bool | Number | Text]] = {
    "hello": {},
    "params": {},
    "arm": {"on": Bool(), "why": Text(default="disarmed from the page")},
    "drive": {"v": Number(ranges.SPEED_M_S), "w": Number(ranges.TURN_RATE_RAD_S)},
    "param": {"name": Text(), "value": Number(ranges.PARAM_VALUE)},
    "save": {},
    "restore": {},
    "step": {"wheel": Text(("left", "right", "both"), default="both"), "size": Number(ranges.STEP_RAD_S),
             "lift_ramp": Bool(default=True)},
    "design": {"settle_s": Number(ranges.SETTLE_S), "overshoot_pct": Number(ranges.OVERSHOOT_PCT)},
    "clear_fault": {},
}


def _show(value, limit: int = 40) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _depth(value, limit: int) -> int:
    """How deep the arrays and objects nest (stops counting past limit)."""
    depth, level = 0, [value]
    while level and depth <= limit:
        nxt: list = []
        for v in level:
            if isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        if not nxt:
            break
        depth += 1
        level = nxt
    return depth


def parse_body(raw: bytes) -> dict:
    """A request's body -> a JSON object; BadValue for anything else (not UTF-8, not JSON, NaN/Infinity, a number
    literal of 4300+ digits, too deep, not an object). Empty is {}."""
    if not raw.strip():
        return {}
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _bracket_depth(raw) > MAX_DEPTH:
        raise BadValue(f"the body nests deeper than {MAX_DEPTH} levels")
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:       # UnicodeDecodeError and the int-digits limit are ValueErrors
        raise BadValue(f"the body is not JSON: {str(e)[:200]}") from None
    if not isinstance(body, dict):
        raise BadValue(f"the body must be a JSON object, got {type(body).__name__}")
    if _depth(body, MAX_DEPTH) > MAX_DEPTH:
        raise BadValue(f"the body nests deeper than {MAX_DEPTH} levels")
    return body


def _bracket_depth(raw: bytes) -> int:
    """The deepest nesting of [ and { outside strings (before parsing: json's recursion has a limit of its own)."""
    depth = deepest = 0
    in_str = escaped = False
    for b in raw:
        if in_str:
            if escaped:
                escaped = False
            elif b == 0x5C:         # backslash
                escaped = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


def check(name: str, body: dict) -> list:
    """The command's arguments from its body, in the order of COMMANDS[name]; BadValue naming what is wrong.
    KeyError for a command there is none of (404)."""
    fields = COMMANDS[name]
    extra = sorted(k for k in body if k not in fields)
    if extra:
        raise BadValue(f"{name} takes {', '.join(fields) or 'no fields'}; not {', '.join(map(_show, extra))}")
    args = []
    for field, kind in fields.items():
        if field not in body:
            if kind.default is None:
                raise BadValue(f"{name} needs {field}")
            args.append(kind.default)
            continue
        args.append(kind.check(field, body[field]))
    return args


__all__ = ["COMMANDS", "MAX_DEPTH", "parse_body", "check", "Bool", "Number", "Text"]
