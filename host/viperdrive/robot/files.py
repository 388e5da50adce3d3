# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Reading a user's file (a robot file, a ROS parameter file, an EKF file) without letting the file take the command
down: the one reader every such file goes through, and the checks on what it parses to.

- read_text(path, what): a regular file only (a FIFO would block forever, /dev/zero never ends, a directory is not a
  file), at most MAX_BYTES (a robot file is a few kilobytes; robot_localization's fully commented example is 15 KB),
  UTF-8. Opened non-blocking, so a FIFO is refused at once instead of waiting for a writer.
- check_tree(root, what, children): the parsed document's shape: at most MAX_DEPTH levels of nesting and at most
  MAX_NODES values with every alias expanded (a YAML alias bomb: nine levels of ten aliases is a billion values
  built from a few hundred bytes), no value that contains itself (a recursive alias). Iterative, memoized: a bomb is
  measured, not walked.
- shorten(names): a long list of names (unknown keys) cut to its first LIST_MAX with the count of the rest.

Each refusal is the caller's error class (exit code 7 for BadValue), naming the file and what is wrong with it.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import BadValue, UserError

MAX_BYTES = 128 * 1024          # 8x robot_localization's fully commented example; parsing this much takes ~0.5 s
MAX_DEPTH = 64                  # nesting levels (a robot file has 4, a ROS 2 file with namespaces 6)
MAX_NODES = 100_000             # values with every alias expanded
LIST_MAX = 20                   # names listed in one message


def _a(what: str) -> str:
    return ("an " if what[:1].lower() in "aeio" or what.startswith("EKF") else "a ") + what


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_text(path: str | os.PathLike, what: str, error: type[UserError] = BadValue,
              max_bytes: int = MAX_BYTES) -> str:
    """The text of the user's file `path` (`what` names it in messages: "robot file", "EKF config"); `error` (a
    UserError class) naming the file when it is missing, not a regular file, larger than max_bytes, unreadable or
    not UTF-8 text."""
    p = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise error(f"{what} {p} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {p} is a directory, not a file") from None
    except OSError as e:
        raise error(f"{what} {p} cannot be read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{what} {p} is {_kind(st.st_mode)}, not a file: give the path of a text file")
        if st.st_size > max_bytes:
            raise error(f"{what} {p} is {st.st_size:,} bytes; {_a(what)} is a few kilobytes (at most {max_bytes:,} "
                        f"bytes read): is it the right file?")
        chunks = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:        # it grew while we read it
            raise error(f"{what} {p} is larger than {max_bytes:,} bytes; {_a(what)} is a few kilobytes: is it the "
                        f"right file?")
    except OSError as e:
        raise error(f"{what} {p} cannot be read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} {p} is not UTF-8 text ({e.reason} at byte {e.start}; corrupt?)") from None


def check_flow_depth(text: str, source: str, error: type[UserError] = BadValue, max_depth: int = MAX_DEPTH) -> None:
    """YAML's flow brackets ([ { ] }) outside quotes and comments nested at most max_depth deep, found in one pass
    over the text before a parser recurses into them (100,000 nested lists took the parser 1.8 s to refuse)."""
    depth = 0
    quote = ""
    comment = False
    prev = "\n"
    for ch in text:
        if comment:
            if ch == "\n":
                comment = False
        elif quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and prev in " \t\n":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                raise error(f"{source}: nested more than {max_depth} levels deep; a robot or EKF file has a few")
        elif ch in "]}":
            depth -= 1
        prev = ch


def check_tree(root, source: str, children: Callable[[object], Iterable], error: type[UserError] = BadValue,
               max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """The document `root` (anything whose `children(node)` are its sub-nodes: a composed YAML node graph, where an
    alias is the very node it names) is at most max_depth deep and max_nodes large with every shared node counted
    each time it is used, and contains no node inside itself. `error` names `source` otherwise. Linear in the
    number of distinct nodes, whatever the aliases expand to."""
    size: dict[int, int] = {}       # id -> expanded size of a finished node
    depth: dict[int, int] = {}      # id -> depth below it
    on_path: set[int] = set()
    stack: list[tuple[object, list | None]] = [(root, None)]
    while stack:
        node, kids = stack[-1]
        key = id(node)
        if kids is None:
            if key in size:
                stack.pop()
                continue
            if key in on_path:
                raise error(f"{source}: a value contains itself (a recursive YAML alias): write the value out")
            on_path.add(key)
            kids = list(children(node))
            stack[-1] = (node, kids)
            if len(on_path) > max_depth:
                raise error(f"{source}: nested more than {max_depth} levels deep; a robot or EKF file has a few")
            for k in kids:
                if id(k) in on_path:
                    raise error(f"{source}: a value contains itself (a recursive YAML alias): write the value out")
                if id(k) not in size:
                    stack.append((k, None))
            continue
        # every child is finished: this node is
        stack.pop()
        on_path.discard(key)
        total = 1 + sum(size[id(k)] for k in kids)
        if total > max_nodes:
            raise error(f"{source}: more than {max_nodes:,} values once its YAML aliases are expanded (an alias "
                        f"bomb?); a robot or EKF file has a few hundred")
        size[key] = total
        depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
        if depth[key] > max_depth:
            raise error(f"{source}: nested more than {max_depth} levels deep; a robot or EKF file has a few")


def shorten(names: Iterable[str], limit: int = LIST_MAX) -> str:
    """"a, b, c" for a few names; the first `limit` and "... and N more" for many."""
    names = list(names)
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f" ... and {len(names) - limit:,} more"


__all__ = ["read_text", "check_tree", "check_flow_depth", "shorten", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES"]
