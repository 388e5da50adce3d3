# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Talking to a motor board: the serial link, the Board (SI units above it, counts below), what it reports. Which
port to open is viperdrive.ports' question (a device, a URL, auto, a private virtual board); putting the firmware on
a board is viperdrive.deploy's.

- link.py: Link (any pyserial URL; framing, request/response, counters, clock sync), NackError
- records.py: what a board reports, in SI units (BoardInfo, BoardState, SensorReading, BoardOdometry)
- board.py: Board (configure, activate, read/write once per cycle, deactivate braked, cleanup), BoardDeenergized
- services.py: what a Board asks besides the cycle (parameters, diagnostics, faults, streams), Board's base
- braking.py: how a Board stops (braked, then disabled, bounded in board time), Board's base
- moves.py: moves the board runs itself (Move, MoveQueue, the lease)
- recovery.py: what a long-running command does when the board goes away and comes back
- livestate.py: what a live view of a board shows, gathered from its streams (monitor, the dashboard)

    from viperdrive.board import Board
    with Board("/dev/ttyACM0") as b:
        b.activate(); b.write(5.0, 5.0); print(b.read().velocity)
"""
from .board import Board, BoardDeenergized, FaultLatched, count_delta, wait_for_hello
from .link import Link, NackError
from .records import BoardInfo, BoardOdometry, BoardState, SensorReading, fault_text, sensor_reading

__all__ = ["Board", "BoardDeenergized", "FaultLatched", "BoardInfo", "BoardOdometry", "BoardState", "Link", "NackError",
           "SensorReading", "count_delta", "fault_text", "sensor_reading", "wait_for_hello"]
