"""`viperdrive sim`: run the virtual board (the real firmware on MicroPython with a simulated robot) in the
foreground. Prints `listening on socket://HOST:PORT`; any host tool then opens that URL like a serial port.
`--repl` gives the MicroPython REPL with the firmware loop running in the background (docs/tuning.md)."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading

from ..sim import _die_with_parent, startup_error, vboard_command
from .options import int_range

HELP = "run the virtual board: the real firmware on MicroPython with a simulated robot, served on TCP"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT",
                        help="serve the board's serial link here (port 0: a free port; default %(default)s)")
    parser.add_argument("--control", default=None, metavar="HOST:PORT",
                        help="serve the sim control endpoint (JSON lines: truth, faults, push) here")
    parser.add_argument("--baud", type=int_range(300, 20_000_000), default=115200,
                        help="emulated serial byte rate, 10 bits per byte both ways (default %(default)s)")
    parser.add_argument("--robot", default=None, metavar="FILE",
                        help="robot description JSON (default: sim/robots/default.json)")
    parser.add_argument("--board", default=None, metavar="FILE",
                        help="board config JSON (default: mcu/boards/sim.json)")
    parser.add_argument("--params", default=None, metavar="FILE",
                        help="the firmware's parameter file (default: a temporary one, gone on exit)")
    parser.add_argument("--seed", type=int_range(0, 2**31 - 1), default=None,
                        help="noise seed (default: the robot file's)")
    parser.add_argument("--repl", action="store_true",
                        help="MicroPython REPL with the firmware loop in the background instead of the link")


def run(args) -> int:
    import tempfile
    tmp = tempfile.TemporaryDirectory(prefix="viperdrive-sim-") if args.params is None else None
    params = args.params if tmp is None else f"{tmp.name}/params.json"
    cmd = vboard_command(listen=args.listen, control=args.control, baud=args.baud, robot=args.robot,
                         board=args.board, params=params, seed=args.seed, repl=args.repl)
    try:
        if args.repl:
            return _run_repl(cmd)
        return _run_link(cmd)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _run_repl(cmd: list[str]) -> int:
    # The terminal belongs to MicroPython: ^C interrupts the REPL there, not this process.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(cmd)
    finally:
        signal.signal(signal.SIGINT, old)


def _run_link(cmd: list[str]) -> int:
    # stdout (the "listening on" line) goes straight through; stderr is passed on too, and kept so that a start-up
    # failure becomes a clear error with an exit code instead of a dead process
    kw = {"preexec_fn": _die_with_parent} if sys.platform.startswith("linux") else {}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1, **kw)
    lines: list[str] = []

    def pump():
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if not line.startswith("vboard: error:"):
                sys.stderr.write(line)
                sys.stderr.flush()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    try:
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    t.join(timeout=2)
    if rc != 0 and any(ln.startswith("vboard: error:") for ln in lines):
        raise startup_error(lines, rc)
    return rc
