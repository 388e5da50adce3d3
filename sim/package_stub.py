# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Empty on purpose: sim/firmware_package.py turns fresh imports of it into the firmware's package objects.
