# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Tuning and calibrating a robot on its board:

- steptest.py: the experiments on the board (step test, relay experiment), ParamGuard (test values put back)
- calibrate.py: the fits (wheelbase, UMBmark, motor feedforward kS/kV/kA, relay autotune rules)
- design.py: PI gains from the motor model for a settle time and overshoot (the SIMC rule), with its check
"""
