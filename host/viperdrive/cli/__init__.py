# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The `viperdrive` command. Each subcommand is a module in this package that defines

    HELP = "one line for `viperdrive --help`"
    def register(parser: argparse.ArgumentParser) -> None   # add its arguments
    def run(args) -> int                                     # do it; return the exit code

Modules are discovered, so a new command is one new file. The commands: boards, calibrate, check_config,
dashboard, drive, flash, fuse, info, log, monitor, move, params, ports, repl, ros2, sim, tune (tune_design: its
--design). The helpers they share: options (argparse converters, the common options), boardopen (opening the
board, faults in words), output (JSON and warnings), terminal (progress, keystrokes), signals (one stop policy),
session (a drive session), livefilter (the live filter without DDS). Errors a user can cause are raised as
viperdrive.errors.UserError (message + exit code) and printed without a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from .. import __version__, extras
from ..errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, UserError


def _commands():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "register") and hasattr(mod, "run"):
            yield info.name.replace("_", "-"), mod


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="viperdrive", description="viperdrive motor board tools",
                                     epilog=extras.summary(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"viperdrive {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in _commands():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.register(p)
        p.set_defaults(command_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command_run", None):
        parser.print_help()
        return 2
    from .signals import stop_signals_as_interrupt
    try:
        # SIGTERM (a service manager, `kill`), SIGHUP (a closed terminal) and SIGQUIT end every command the way
        # Ctrl-C does: its clean-up runs (board disabled, parameters put back), exit 130 (cli/signals.py)
        with stop_signals_as_interrupt():
            return int(args.command_run(args) or 0)
    except UserError as e:
        _say(f"viperdrive {args.command}: error: {e}")
        return e.exit_code
    except KeyboardInterrupt as e:
        _say(f"viperdrive {args.command}: {e or 'interrupted'}")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`viperdrive ... | head`): not an error worth a traceback; stdout goes to /dev/null
        # so the interpreter's final flush does not raise again
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _say(text: str) -> None:
    # the last line a command prints; its terminal may be gone (SIGHUP) or closed: the exit code still counts
    try:
        print(text, file=sys.stderr)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
