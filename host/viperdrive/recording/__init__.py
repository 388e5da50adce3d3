# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Recordings: what a run logs, as MCAP with ROS 2 schemas, read back whole or in part, and plotted.

- mcap.py: McapRecorder, LogClock, read_mcap, read_mcap_partial, open_reader, OutputFile
- plot.py: plot_mcap (the path, the wheels and the PID terms of a recording as PNGs)
"""
