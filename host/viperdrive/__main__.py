# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`python -m viperdrive`: the same CLI as the `viperdrive` command (for a venv whose bin/ is not on PATH)."""
import sys

from .cli import main

sys.exit(main())
