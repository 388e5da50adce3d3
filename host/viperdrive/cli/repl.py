# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive repl`: the board's MicroPython REPL through mpremote (Ctrl-] or Ctrl-X leaves it). With --port sim: the
virtual board's REPL with the firmware loop running in the background
(`from viperdrive import tuning; t = tuning.start()`).

The viperdrive firmware turns Ctrl-C off while its link runs (0x03 is frame data), so a board in link mode does not
give up its REPL: boot it in REPL mode (hold board.json's repl_pin at reset, or create a file named repl_mode)."""
from __future__ import annotations

import argparse
import signal
import subprocess
import tempfile

from ..deploy.flashing import mpremote_exe
from ..errors import UserError
from ..ports import choose_auto, list_serial_ports, resolve_port
from .options import add_board_options, port_spec, robot_config
from .output import note

HELP = "open the board's MicroPython REPL (mpremote); --port sim: the virtual board's REPL"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--print-command", action="store_true", help="print the command instead of running it")
    add_board_options(parser)


def command(args, workdir: str) -> list[str]:
    spec = port_spec(args, robot_config(args))
    if spec == "sim":
        from ..rigs.virtual import vboard_command
        # the virtual board's parameter file lives in a private folder, gone with the command
        return vboard_command(repl=True, control=None, params=f"{workdir}/params.json")
    if spec == "auto":
        spec = choose_auto(list_serial_ports()).device
    elif "://" not in spec:
        spec = resolve_port(spec).url
    return [mpremote_exe(), "connect", spec, "repl"]


def run(args) -> int:
    with tempfile.TemporaryDirectory(prefix="viperdrive-repl-") as workdir:
        return _run(args, workdir)


def _run(args, workdir: str) -> int:
    cmd = command(args, workdir)
    if args.print_command:
        import shlex
        print(" ".join(shlex.quote(a) for a in cmd))
        return 0
    note(args, "leave the REPL with Ctrl-] (mpremote) or Ctrl-D (virtual board)")
    # the terminal belongs to the REPL: Ctrl-C goes to the board, not to this process
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rc = subprocess.call(cmd)
    except OSError as e:
        raise UserError(f"cannot start {cmd[0]}: {e}") from None
    finally:
        signal.signal(signal.SIGINT, old)
    if rc != 0 and cmd[-1] == "repl":
        note(args, "mpremote failed: a board running the viperdrive link ignores Ctrl-C; boot it in REPL mode "
                   "(hold the repl pin at reset)")
    return rc
