# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""TOML reading on every Python the package supports: the standard library's tomllib from 3.11 on, its backport
tomli (the same parser, a dependency only there) on 3.10."""
from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover - Python 3.10 (tests/test_pythons.py runs it there)
    from tomli import TOMLDecodeError, loads

__all__ = ["loads", "TOMLDecodeError"]
