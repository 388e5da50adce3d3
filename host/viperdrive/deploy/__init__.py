# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Putting the firmware on a board: where its files are, what a flash copies and how, whose files on the board are
the user's, and the boards the package ships a config for. Nothing here talks the wire protocol (viperdrive.board
does); a flash stops the link and uses mpremote, or writes a CIRCUITPY drive.

- firmware.py: firmware_root(), the folder holding mcu/ and sim/ (a checkout, an installed wheel, VIPERDRIVE_ROOT)
- flashing.py: copying the firmware to a board with mpremote and mpy-cross (the plan, the commands, the board's
  inventory)
- circuitpy.py: flashing a CircuitPython board's mounted CIRCUITPY drive, and a folder as the drive's image
- ownership.py: whose files are on a board, what a flash may replace or delete (the manifest, backups)
- fatimage.py: a FAT12 volume in memory, a CIRCUITPY drive as CircuitPython makes it
- catalog.py: the board configs the package ships, with what is proven of each (`viperdrive boards`)
"""
