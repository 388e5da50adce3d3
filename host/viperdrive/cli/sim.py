# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive sim`: run the virtual board (the real firmware on MicroPython with a simulated robot) in the
foreground. Prints `listening on socket://HOST:PORT`; any host tool then opens that URL like a serial port.
`--repl` gives the MicroPython REPL with the firmware loop running in the background (docs/tuning.md)."""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from ..boardtime import clockfile, registry
from ..errors import UserError
from ..rigs.virtual import die_with_parent, startup_error, vboard_command
from .options import finite_float, int_range, positive

HELP = "run the virtual board: the real firmware on MicroPython with a simulated robot, served on TCP"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT",
                        help="serve the board's serial link here (port 0: a free port; default %(default)s)")
    parser.add_argument("--control", default=None, metavar="HOST:PORT",
                        help="serve the sim control endpoint (JSON lines: truth, faults, push) here")
    parser.add_argument("--baud", type=int_range(300, 20_000_000), default=115200,
                        help="emulated serial byte rate, 10 bits per byte both ways (default %(default)s)")
    parser.add_argument("--robot", default=None, metavar="FILE",
                        help="robot description JSON, or the name of one in sim/robots/: default (a real robot's "
                             "imperfections: mismatched tyres, wheelbase, turn scrub, encoder jitter) or ideal "
                             "(perfect kinematics). Default: default")
    parser.add_argument("--board", default=None, metavar="FILE",
                        help="board config JSON (default: mcu/boards/sim.json)")
    parser.add_argument("--params", default=None, metavar="FILE",
                        help="the firmware's parameter file (default: a temporary one, gone on exit)")
    parser.add_argument("--seed", type=int_range(0, 2**31 - 1), default=None,
                        help="noise seed (default: the robot file's)")
    parser.add_argument("--repl", action="store_true",
                        help="MicroPython REPL with the firmware loop in the background instead of the link")
    pico = parser.add_argument_group("emulated Pico (docs/pico-rig.md)")
    pico.add_argument("--pico", action="store_true",
                      help="run the emulated Raspberry Pi Pico instead: stock MicroPython rp2 on an emulated RP2040 "
                           "in the simulated robot; flash it with `viperdrive flash --board pico --port URL`")
    pico.add_argument("--circuitpython", action="store_true",
                      help="--pico on stock CircuitPython 10.2.1 instead of MicroPython: the firmware is on its "
                           "CIRCUITPY drive as `viperdrive flash --board circuitpython_pico --drive` copies it "
                           "(from this checkout; --board another CircuitPython config); the link is the data "
                           "channel (listening on), the REPL the console (console on)")
    pico.add_argument("--flash", default=None, metavar="FILE",
                      help="--pico: the chip's flash image (kept across runs; default: a temporary blank one)")
    pico.add_argument("--uf2", default=None, metavar="FILE",
                      help="--pico: a MicroPython image written over the flash at start, as a drag onto the Pico's "
                           "RPI-RP2 drive (the filesystem stays): viperdrive-VERSION-RPI_PICO.uf2 from `make uf2` "
                           "runs the firmware frozen in; then `viperdrive flash --board pico --config-only`")
    pico.add_argument("--pty", action="store_true", help="--pico: also relay the USB CDC port to a pseudo-terminal")
    pico.add_argument("--hold-repl-pin", action="store_true",
                      help="--pico: hold the board config's repl_pin at its active level (boots into REPL mode)")
    parser.add_argument("--time-ratio", type=finite_float(0.05, 20.0, "board s per real s"), default=None,
                        metavar="R", help="the virtual board's speed: R seconds of board time per real second "
                                          "(default: VIPERDRIVE_SIM_SPEED, else 1). 0.5 shows on an idle machine what "
                                          "a busy one shows; above 1 it runs faster where the CPU keeps up")
    pico.add_argument("--max-time-ratio", type=positive(100.0, "chip s per wall s"), default=None, metavar="R",
                      help="--pico: at most R chip seconds per wall second (default 1)")


def run(args) -> int:
    if args.circuitpython and not args.pico:
        raise UserError("--circuitpython runs on the emulated Pico: add --pico", exit_code=2)
    if args.pico:
        return _run_pico(args)
    import tempfile
    tmp = tempfile.TemporaryDirectory(prefix="viperdrive-sim-")
    params = args.params if args.params is not None else f"{tmp.name}/params.json"
    # its board time, published for the commands that open it (boardtime.registry: they find it by the URL)
    clock = clockfile.create(f"{tmp.name}/board.clock")
    cmd = vboard_command(listen=args.listen, control=args.control, baud=args.baud, robot=args.robot,
                         board=args.board, params=params, seed=args.seed, repl=args.repl, clock_path=clock,
                         time_ratio=args.time_ratio)
    try:
        if args.repl:
            return _run_repl(cmd)
        return _run_link(cmd, clock)
    finally:
        tmp.cleanup()


def _run_repl(cmd: list[str]) -> int:
    # The terminal belongs to MicroPython: ^C interrupts the REPL there, not this process.
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return subprocess.call(cmd)
    finally:
        signal.signal(signal.SIGINT, old)


def _run_link(cmd: list[str], clock) -> int:
    # stdout (the "listening on" line) is passed on and registers the board with its clock once it listens; stderr
    # is passed on too, and kept so that a start-up failure becomes a clear error with an exit code instead of a
    # dead process
    kw: dict[str, Any] = {"preexec_fn": die_with_parent} if sys.platform.startswith("linux") else {}
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1, **kw)
    lines: list[str] = []
    urls: list[str] = []

    def announce():
        assert proc.stdout is not None
        control = None
        for line in proc.stdout:
            if line.startswith("control on "):
                control = line[len("control on "):].strip()
            elif line.startswith("listening on "):
                url = line[len("listening on "):].strip()
                registry.register(url, control, clock, proc.pid)
                urls.append(url)
            sys.stdout.write(line)
            sys.stdout.flush()

    out = threading.Thread(target=announce, daemon=True)
    out.start()

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
    finally:
        for url in urls:
            registry.unregister(url)
    t.join(timeout=2)
    out.join(timeout=2)
    if rc != 0 and any(ln.startswith("vboard: error:") for ln in lines):
        raise startup_error(lines, rc)
    return rc


def _circuitpy_drive(board: str, flash: str | None) -> bytes | None:
    """The CIRCUITPY drive a fresh flash starts with: this checkout's firmware copied as `flash --drive` copies it
    (into a folder, then as the FAT image the copy leaves). None when --flash names an image that exists: its
    drive is what it holds."""
    import os
    import tempfile
    from pathlib import Path

    from ..deploy import circuitpy
    if flash is not None and os.path.exists(flash):
        return None
    with tempfile.TemporaryDirectory(prefix="viperdrive-circuitpy-") as d:
        (Path(d) / circuitpy.CIRCUITPY_MARK).write_text("CircuitPython (the drive as the rig's first boot left it)\n")
        circuitpy.copy_to_drive(board, d)
        return circuitpy.folder_image(d)


def _run_pico(args) -> int:
    from ..rigs.pico import PicoRig
    if args.repl or args.params:
        raise UserError("--repl and --params are options of the virtual board; the emulated Pico keeps its "
                        "parameters in its flash (--flash) and gives its REPL on the port (`viperdrive repl`)",
                        exit_code=2)
    firmware, drive, board = "micropython", None, args.board
    if args.uf2 is not None and args.circuitpython:
        raise UserError("--uf2 is a MicroPython image: it goes without --circuitpython", exit_code=2)
    if args.circuitpython:
        from ..deploy import flashing
        board = args.board or str(flashing.load_board_config("circuitpython_pico")[0])
        drive = _circuitpy_drive(board, args.flash)
        firmware = "circuitpython"
    rig = PicoRig(flash=args.flash, robot=args.robot, board=board, seed=args.seed,
                  hold_repl_pin=args.hold_repl_pin, max_time_ratio=args.max_time_ratio, pty=args.pty,
                  listen=args.listen, control=args.control, firmware=firmware, drive=drive, uf2=args.uf2)
    # every stop signal (cli/signals.py, installed by the CLI's main) ends it like Ctrl-C: the rig process stops,
    # its flash is saved, its registry entry is removed
    with rig:
        print(f"listening on {rig.url}", flush=True)
        if rig.console_url:
            print(f"console on {rig.console_url} (CircuitPython's REPL)", flush=True)
        if rig.pty:
            print(f"pty {rig.pty}", flush=True)
        print(f"control on {rig.control_host}:{rig.control_port}", flush=True)
        print(f"flash image {rig.flash_path}" + ("" if args.flash else " (temporary: gone on exit; keep one with "
                                                 "--flash FILE)"), flush=True)
        shown = 0
        last = time.monotonic()
        try:
            while rig.alive:
                for line in rig.stderr_lines[shown:]:
                    sys.stderr.write(line + "\n")
                shown = len(rig.stderr_lines)
                time.sleep(0.5)
                if rig.alive and time.monotonic() - last >= 10.0:
                    last = time.monotonic()
                    st = rig.stats()
                    print(f"speed {st['speed']:.2f} chip s per wall s (chip {st['chip_s']:.1f} s, "
                          f"{st['boots']} boots, {st['watchdog_resets']} watchdog resets)", flush=True)
        except KeyboardInterrupt:
            return 130
    return 0
