# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Boards that are programs: the virtual board (the real firmware on the MicroPython unix port in a simulated robot)
and the emulated Pico rig (stock MicroPython rp2 on an emulated RP2040 in the same robot), started from the host,
opened like a serial board, with ground truth and fault injection on their control endpoint.

- virtual.py: VirtualBoard, SimError, vboard_command (the firmware it runs: viperdrive.deploy.firmware)
- pico.py: PicoRig, the images it needs, the pty relay

Each publishes its board time and registers its port (viperdrive.boardtime); `--port sim` and
`viperdrive.ports.open_board("sim")` start a private virtual board through VirtualBoard.
"""
from .virtual import SimError, VirtualBoard

__all__ = ["SimError", "VirtualBoard"]
