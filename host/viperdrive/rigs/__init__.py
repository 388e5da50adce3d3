# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Boards that are programs: the virtual board (the real firmware on the MicroPython unix port in a simulated robot)
and the emulated Pico rig (stock MicroPython rp2 on an emulated RP2040 in the same robot), started from the host,
opened like a serial board, with ground truth and fault injection on their control endpoint.

- virtual.py: VirtualBoard, SimError, firmware_root, vboard_command
- pico.py: PicoRig, the images it needs, the pty relay
- clockfile.py: the board time a rig publishes, for the commands that open it
- registry.py: where a running rig says who it is (its control endpoint, clock file and process)
"""
from .virtual import SimError, VirtualBoard

__all__ = ["SimError", "VirtualBoard"]
