# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Talking to a motor board: the serial link, the Board (SI units above it, counts below), what it reports,
finding ports and flashing firmware.

- link.py: Link (any pyserial URL; framing, request/response, counters, clock sync), NackError
- records.py: what a board reports, in SI units (BoardInfo, BoardState, SensorReading, BoardOdometry)
- board.py: Board (configure, activate, read/write once per cycle, deactivate braked, cleanup), BoardDeenergized
- ports.py: finding the board's serial port (--port auto, sim, a path or a URL)
- flashing.py: copying the firmware to a board with mpremote and mpy-cross
- ownership.py: whose files are on a board, what a flash may replace or delete (the manifest, backups)
- fatimage.py: a FAT12 volume in memory, a CIRCUITPY drive as CircuitPython makes it
- catalog.py: the board configs the package ships, with what is proven of each (`viperdrive boards`)
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
