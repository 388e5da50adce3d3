# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a command prints besides its progress: the result as JSON on stdout (--json), warnings on stderr (always
shown: they are about the result) and notes on stderr (chatter, silenced by --quiet).

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import json
import sys


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=_json_default))


def _json_default(o):
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)


def warn(args, message: str) -> None:
    """A warning on stderr (shown even with --quiet: it is about the result, not progress)."""
    print(f"viperdrive {getattr(args, 'command', '')}: warning: {message}".replace("  ", " "), file=sys.stderr)


def note(args, message: str) -> None:
    """Chatter on stderr, silenced by --quiet."""
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def confirm(question: str) -> bool:
    """A question the user answers on a terminal: True for y or yes; anything else, or no terminal (a script, a
    pipe, CI), is no."""
    if not sys.stdin.isatty():
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
