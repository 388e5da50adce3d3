# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The names every board command once imported from here, each now in the module of its one concern:

- cli/options.py: numeric option types, --port/--baud/--config/--node/--strict, --quiet/--json, and what they
  resolve to (load_config reads the robot file once per command, port_spec, baud_of)
- cli/boardopen.py: open_board, the latched faults in words (FAULT_HINTS, fault_message, check_no_fault,
  activate, explain_fault), read_status, param_guard, warn_unsaved
- cli/output.py: print_json, warn, note
- cli/terminal.py: Progress, TerminalKeys, LiveView
- cli/signals.py: stop_signals_as_interrupt, deferred_signals

`from viperdrive.cli.common import ...` keeps working; new code imports from the module itself.
Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

from .boardopen import (FAULT_HINTS, activate, check_no_fault, explain_fault, fault_message, open_board, param_guard,
                        read_status, warn_unsaved)
from .options import (BAUD, PORT_ENV, add_board_options, add_output_options, add_robot_file_options, baud_of,
                      load_config, port_spec)
from .output import finite_or_none, note, print_json, warn
from .signals import deferred_signals, stop_signals_as_interrupt
from .terminal import KEY_NAMES, LiveView, Progress, TerminalKeys

__all__ = [
    "BAUD", "FAULT_HINTS", "KEY_NAMES", "LiveView", "PORT_ENV", "Progress", "TerminalKeys", "activate",
    "add_board_options", "add_output_options", "add_robot_file_options", "baud_of", "check_no_fault",
    "deferred_signals", "explain_fault", "fault_message", "finite_or_none", "load_config", "note", "open_board",
    "param_guard", "port_spec", "print_json", "read_status", "stop_signals_as_interrupt", "warn", "warn_unsaved",
]
