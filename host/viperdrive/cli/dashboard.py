# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive dashboard`: a tuning and status page in the browser (docs/dashboard.md). Serves the page on
127.0.0.1 with a token in the URL it prints, streams the board's telemetry and status to it, and runs its step
tests, gain changes, Save/Restore and a drive pad behind an arm switch. Ends on Ctrl-C, SIGTERM or a lost link
with the board disabled and the parameters the page changed put back unless saved."""
from __future__ import annotations

import argparse
import secrets
import sys
import threading

from ..errors import EXIT_FAULT, EXIT_NO_REPLY, BoardFault, UserError
from .boardopen import open_board
from .options import add_board_options, host_port, seconds
from .output import note, warn
from .signals import deferred_signals

HELP = "a tuning and status page in the browser: live plots, step tests, gains, parameters, faults, a drive pad"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", type=host_port, default="127.0.0.1:8770", metavar="HOST:PORT",
                        help="where the page is served (default %(default)s; port 0: any free one; [::1]:PORT for "
                             "IPv6). An address other machines can reach (0.0.0.0, this machine's LAN address) "
                             "lets them open the page with its URL: the token is then all that guards the robot "
                             "(a warning says so)")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S", help="stop after S seconds")
    add_board_options(parser)


def run(args) -> int:
    from ..dashboard.core import Dashboard
    from ..dashboard.server import DashboardServer, is_loopback, split_host
    host, port = split_host(args.listen)
    with open_board(args) as board:
        dash = Dashboard(board, say=lambda text: note(args, text))
        try:
            server = DashboardServer((host, int(port)), dash, secrets.token_urlsafe(24))
        except OSError as e:
            raise UserError(f"cannot serve on {args.listen}: {e.strerror or e} (another dashboard? --listen "
                            f"127.0.0.1:0 picks a free port)", exit_code=3) from None
        why = "the dashboard was stopped (its --duration ended)"
        serving = threading.Thread(target=server.serve_forever, name="dashboard-http", daemon=True)
        try:
            dash.start()
            serving.start()
            print(f"dashboard on {server.url}", flush=True)
            if not is_loopback(host):
                warn(args, f"listening on {args.listen}: other machines that can reach this one can open the "
                           f"dashboard, and its token is all that keeps them from driving the robot; the token "
                           f"travels unencrypted (plain HTTP): use this on a network you trust, or keep "
                           f"127.0.0.1 and an SSH tunnel (ssh -L 8770:127.0.0.1:8770 robot)")
            note(args, "open that URL in a browser (it carries the token); Ctrl-C ends the dashboard")
            clock = board.clock
            end = None if args.duration is None else clock.now() + args.duration
            while not dash.ended.is_set():
                if end is not None and clock.now() >= end:
                    break
                dash.ended.wait(0.1)
        except KeyboardInterrupt as e:      # Ctrl-C, SIGTERM, SIGHUP (cli/signals.py): its name goes to the pages
            why = f"the dashboard was {e}"
            raise
        finally:
            # the board first (disabled, the parameters put back, the pages told why), then the server; a second
            # Ctrl-C or SIGTERM must not cut that short
            with deferred_signals():
                dash.stop(str(dash.error) if dash.error is not None else why)
                server.shutdown()
                server.server_close()
        if dash.error is not None:
            # a fault that ended it is 6 (EXIT_FAULT, as every command); a lost link, and anything else, 4 (the
            # board no longer answers the dashboard)
            code = EXIT_FAULT if isinstance(dash.error, BoardFault) else EXIT_NO_REPLY
            raise UserError(f"the dashboard ended: {dash.error}", exit_code=code)
    print("dashboard stopped; the board is disabled", file=sys.stderr)
    return 0
