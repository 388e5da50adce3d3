# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A board's own time as the host reads it. A real board keeps real time (the host's clock, viperdrive.timebase); a
board that is a program (the virtual board, the emulated Pico) publishes its time in a clock file and registers its
port, so any command that opens that port waits in the board's time, and the board does not run ahead of a host
the machine does not run (the lockstep grant).

- clockfile.py: BoardTimeFile, the board time a program-board publishes and the host's grant of it
- registry.py: where a running program-board says who it is (its port, control endpoint, clock file, process);
  clock_for(url), the clock of whatever serves a port
"""
