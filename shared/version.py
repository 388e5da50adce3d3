# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The one version of viperdrive: the host package's (pyproject.toml reads it from here, viperdrive.__version__ is
# it) and the firmware's, which the board says in HELLO as "viperdrive <VERSION>". A host and a board that speak
# the same protocol and parameter schema still differ when their versions do (a board flashed before a fix): the
# host warns and `viperdrive flash --check` says which files differ. Changed only by a release (CHANGELOG.md).
VERSION = "0.1.0"
FIRMWARE_PREFIX = "viperdrive "     # HELLO's firmware string is FIRMWARE_PREFIX + VERSION
