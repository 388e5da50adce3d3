# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Minimal on purpose: nothing here may fail or wait. main.py decides between link mode and REPL mode.
