# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Writing calibrated values into a robot file without losing what the user wrote there: the line of each key is
edited in place (comments, order and the other keys stay), a missing top-level key is added, and the result must
load with RobotConfig.load and give back exactly the new values before it replaces the file (atomically).

    update_values("robot.yaml", {"wheel_separation": 0.1547})
"""
from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

from ..errors import BadValue
from .config import RobotConfig, parse_robot_file


def _fmt(value) -> str:
    if isinstance(value, float):
        return repr(float(f"{value:.9g}"))     # 9 significant digits: far below any measurement's resolution
    return str(value)


def _replace_key_line(text: str, key: str, sep: str, value) -> tuple[str, bool] | None:
    """(`text` with the one line `key<sep>old  # comment` rewritten to the new value (indent and comment kept),
    whether such a line was there); None if several lines set the key (which one counts is the format's business)."""
    pat = re.compile(rf"^(?P<indent>[ \t]*){re.escape(key)}[ \t]*{re.escape(sep.strip())}[ \t]*"
                     r"(?P<value>[^#\n]*?)(?P<comment>[ \t]+#.*)?$", re.M)
    hits = list(pat.finditer(text))
    if len(hits) > 1:
        return None
    if not hits:
        return text, False
    m = hits[0]
    line = f"{m.group('indent')}{key}{sep}{_fmt(value)}{m.group('comment') or ''}"
    return text[:m.start()] + line + text[m.end():], True


def _append_key_line(text: str, key: str, sep: str, value) -> str:
    nl = "" if not text or text.endswith("\n") else "\n"
    return f"{text}{nl}{key}{sep}{_fmt(value)}\n"


def _edit_yaml(text: str, key: str, value, layout: str = "viperdrive") -> str | None:
    edited = _replace_key_line(text, key, ": ", value)
    if edited is None or edited[1]:
        return edited and edited[0]
    if layout != "viperdrive":
        return None     # a ros2_control / ROS 1 file: where the key goes is the user's layout
    return _append_key_line(text, key, ": ", value)


def _edit_toml(text: str, key: str, value) -> str | None:
    # only the top-level keys (before the first [table]) are the robot's
    first_table = re.search(r"^\s*\[", text, re.M)
    head_end = first_table.start() if first_table else len(text)
    head = text[:head_end]
    edited = _replace_key_line(head, key, " = ", value)
    if edited is None:
        return None
    head, found = edited
    if not found:
        head = _append_key_line(head, key, " = ", value)
    return head + text[head_end:]


def update_values(path, values: dict, node: str | None = None, config: RobotConfig | None = None) -> None:
    """Set keys of a robot file (in a ROS file: of its diff-drive controller `node`, chosen as RobotConfig.load
    chooses it). BadValue (nothing written) when the file cannot be edited safely. `config`: the RobotConfig the
    command already loaded from this file (its layout says where a missing key may go), so the file is not parsed
    a second time; the text edited is the file as it is now, and the edited text must load before it replaces it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadValue(f"cannot read robot file {p}: {e}") from None
    suffix = p.suffix.lower()
    if suffix not in (".yaml", ".yml", ".toml"):
        raise BadValue(f"robot file {p}: unknown format {suffix!r}")
    # refuse to touch a file that does not load now (it would hide the first problem)
    before = config if config is not None else RobotConfig.from_document(parse_robot_file(text, p), node=node)
    new = text
    for key, value in values.items():
        edited = _edit_toml(new, key, value) if suffix == ".toml" else _edit_yaml(new, key, value, before.layout)
        if edited is None:
            raise BadValue(f"robot file {p}: cannot place {key} automatically (nested or repeated); set "
                           f"{key} = {_fmt(value)} by hand")
        new = edited
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=p.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        try:
            check = RobotConfig.load(tmp, node=node)
        except BadValue as e:
            raise BadValue(f"robot file {p}: the edited file would not load ({e}); nothing written") from None
        for key, value in values.items():
            got = check.get(key)
            if not (isinstance(got, (int, float)) and math.isclose(got, float(_fmt(value)), rel_tol=1e-12)):
                raise BadValue(f"robot file {p}: after editing, {key} reads back as {got!r}, not {value!r}; "
                               f"nothing written (set it by hand)")
        os.chmod(tmp, os.stat(p).st_mode & 0o777)
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
