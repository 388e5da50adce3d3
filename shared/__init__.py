# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# viperdrive shared package: what the board and the host must agree on, byte for byte.
# Runs unchanged on MicroPython, CircuitPython and CPython (as viperdrive.shared).
