# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive flash` (--dry-run checked for the exact mpremote and mpy-cross command lines, built here from the tree
independently of the flashing module, and run as printed through bash; the refusals) and `viperdrive repl` (the
virtual board's REPL through a pty)."""
from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import ROOT, VIPERDRIVE, PtyProcess, board_imports, run_cli

from viperdrive.deploy import ownership
from viperdrive.shared import protocol as P
from viperdrive.shared.version import FIRMWARE_PREFIX, VERSION
from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board

BIN = Path(sys.executable).parent
MPREMOTE = str(BIN / "mpremote")
PORT = "/dev/ttyACM7"       # a dry run does not open the port


FIRMWARE = FIRMWARE_PREFIX + VERSION     # what the firmware says in HELLO


def dry_run(*args, cwd=ROOT, root_env=None):
    """`viperdrive flash ... --dry-run` from cwd, the venv's tools on PATH (an activated venv), VIPERDRIVE_ROOT
    unset unless given."""
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if root_env is not None:
        env["VIPERDRIVE_ROOT"] = root_env
    e = {k: v for k, v in os.environ.items() if k != "VIPERDRIVE_ROOT"}
    e.update(env)
    e.pop("VIPERDRIVE_PORT", None)
    return subprocess.run([VIPERDRIVE, "flash", *map(str, args), "--dry-run"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, env=e, cwd=cwd)


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def expected_files(backend: str, mpy: bool) -> list[tuple[Path, str]]:
    """(source, board path) in copy order: shared/, the hal modules that are not another backend, then mcu/*.py;
    all in the package lib/viperdrive/ but the entry files main.py and boot.py, at the root."""
    backends = {"rp2", "esp32", "stm32", "circuitpython", "sim"}
    out = []
    for src in sorted((ROOT / "shared").glob("*.py")):
        out.append((src, f"lib/viperdrive/shared/{src.name}"))
    for src in sorted((ROOT / "mcu" / "hal").glob("*.py")):
        if src.stem in backends and src.stem != backend:
            continue
        out.append((src, f"lib/viperdrive/hal/{src.name}"))
    for src in sorted((ROOT / "mcu").glob("*.py")):
        out.append((src, src.name if src.name in ("main.py", "boot.py") else f"lib/viperdrive/{src.name}"))
    if mpy:
        out = [(s, d if d in ("main.py", "boot.py") else d[:-3] + ".mpy") for s, d in out]
    return out


PREPARE = ('import os\nfor d in ("lib", "lib/viperdrive", "lib/viperdrive/hal", "lib/viperdrive/shared"):\n'
           '    try:\n        os.mkdir(d)\n    except OSError:\n        pass\n')


def finish(dests) -> str:
    """The renames at the end of a copy: every file from its temporary name, main.py and boot.py last; then the
    REPL-mode switch file goes."""
    order = [d for d in dests if d not in ("main.py", "boot.py")] + [d for d in dests if d in ("main.py", "boot.py")]
    return ('import os\nfor f in (' + ", ".join(f'"{x}"' for x in order) + '):\n    try:\n        os.remove(f)\n'
            '    except OSError:\n        pass\n    os.rename(f + ".vdtmp", f)\n'
            'try:\n    os.remove("repl_mode")\nexcept OSError:\n    pass\n')


def test_dry_run_prints_the_exact_mpremote_commands():
    r = dry_run("--board", "pico", "--port", PORT)
    assert r.returncode == 0, r.stderr
    files = expected_files("rp2", mpy=False)
    # paths relative to the folder it was run in, the tool by the name PATH finds it under
    copy = ["mpremote", "connect", PORT, "exec", PREPARE]
    for src, dest in files:
        copy += ["+", "fs", "cp", rel(src), ":" + dest + ".vdtmp"]
    copy += ["+", "fs", "cp", "mcu/boards/pico.json", ":board.json.vdtmp", "+", "exec",
             finish([d for _, d in files] + ["board.json"])]
    lines = r.stdout.replace("\\\n  +", "+").splitlines(keepends=True)
    text = "".join(lines)
    # a board in link mode is asked to leave it first (no shell command: the host sends the frame itself)
    assert lines[0] == (f"# first: if {PORT} answers HELLO at 115200 baud (viperdrive link mode), send STOP_LINK "
                        "and wait for the board's reset into REPL mode (Board.stop_link())\n")
    commands = [shlex.split(c) for c in _split_commands(text)]
    assert commands[0] == copy
    assert commands[1] == ["mpremote", "connect", PORT, "reset"]
    assert str(ROOT) not in r.stdout            # no path of this machine
    assert text.rstrip().endswith(f"# then: HELLO on {PORT} at 115200 baud must answer protocol "
                                  f"v{P.PROTOCOL_VERSION} (viperdrive info --port {PORT})")
    # the firmware's own tests and other ports' backends stay off the board
    assert "mcu/tests" not in r.stdout and "hal/esp32.py" not in r.stdout and "hal/sim.py" not in r.stdout


def _split_commands(text: str) -> list[str]:
    """Shell commands of a dry run: comment lines dropped, quoted multi-line arguments kept together."""
    out, cur = [], ""
    for line in text.splitlines(keepends=True):
        if not cur and line.startswith("#"):
            continue
        cur += line
        try:
            shlex.split(cur)
        except ValueError:      # an open quote: the argument goes on
            continue
        if cur.strip():
            out.append(cur)
        cur = ""
    return out


def test_dry_run_with_arch_compiles_everything_but_main_and_boot():
    r = dry_run("--board", "esp32_devkit", "--port", PORT, "--arch", "xtensawin")
    assert r.returncode == 0, r.stderr
    commands = [shlex.split(c) for c in _split_commands(r.stdout.replace("\\\n  +", "+"))]
    files = expected_files("esp32", mpy=True)
    stage = Path("STAGE/xtensawin")            # a private mkdtemp folder at run time (flashing.private_stage)
    assert "# STAGE: a private temporary folder (tempfile.mkdtemp)" in r.stdout
    compiled = [(s, d) for s, d in files if d.endswith(".mpy")]
    assert commands[:len(compiled)] == [
        ["mpy-cross", "-march=xtensawin", "-s", d[:-4] + ".py", "-o", str(stage / d), rel(s)] for s, d in compiled]
    copy = commands[len(compiled)]
    sources = [copy[i + 1] for i, a in enumerate(copy) if a == "cp"]
    assert sources[:-1] == [str(stage / d) if d.endswith(".mpy") else rel(s) for s, d in files]
    assert ":main.py.vdtmp" in copy and ":boot.py.vdtmp" in copy and ":lib/viperdrive/app.mpy.vdtmp" in copy
    assert ":lib/viperdrive/app.py.vdtmp" not in copy
    # the renames at the end: main.py and boot.py last (an interrupted copy leaves the old entry files)
    assert copy[-1].index('"lib/viperdrive/app.mpy"') < copy[-1].index('"main.py"') < copy[-1].index('"repl_mode"')


def test_dry_run_mpy_without_arch_asks_the_board_first():
    r = dry_run("--board", "pyboard", "--port", PORT, "--mpy")
    assert r.returncode == 0
    first = _split_commands(r.stdout)[0]
    assert shlex.split(first) == ["mpremote", "connect", PORT, "exec",
                                  'import sys;print("VD_MPY", getattr(sys.implementation, "_mpy", -1))']
    assert "-march=ARCH" in r.stdout


# stand-ins for the two tools: each checks that every local file it is given exists where the line says (the
# mpy-cross stand-in writes its -o file, as mpy-cross would)
STUBS = r"""
set -e
mpremote() {
    local prev=""
    for a in "$@"; do
        if [ "$prev" = cp ]; then [ -f "$a" ] || { echo "missing: $a" >&2; exit 3; }; echo "cp $a"; fi
        prev="$a"
    done
}
mpy-cross() {
    local prev="" last="" out=""
    for last in "$@"; do [ "$prev" = -o ] && out="$last"; prev="$last"; done
    [ -f "$last" ] || { echo "missing: $last" >&2; exit 3; }
    mkdir -p "$(dirname "$out")" && : > "$out"
    echo "mpy-cross $last"
}
"""


@pytest.mark.parametrize("where, mpy", [("checkout", False), ("elsewhere", True),
                                        ("elsewhere, VIPERDRIVE_ROOT set", False)])
def test_dry_run_lines_run_as_printed(tmp_path, where, mpy):
    """The printed commands run in bash from the folder they were printed in: from the checkout with paths relative
    to it, from anywhere else through $VIPERDRIVE_ROOT (set by the first lines, or taken from the environment).
    The tools are stand-ins that check each file they are handed exists."""
    cwd = ROOT if where == "checkout" else tmp_path
    root_env = str(ROOT) if "set" in where else None
    r = dry_run("--board", "pico", "--port", PORT, *(["--arch", "armv6m"] if mpy else []), cwd=cwd,
                root_env=root_env)
    assert r.returncode == 0, r.stderr
    if where == "elsewhere":
        assert r.stdout.startswith(f"# VIPERDRIVE_ROOT: the firmware folder (mcu/, shared/)\n"
                                   f"VIPERDRIVE_ROOT={shlex.quote(str(ROOT))}\n")
    else:
        assert "VIPERDRIVE_ROOT=" not in r.stdout
    assert ('"$VIPERDRIVE_ROOT"/mcu/app.py' in r.stdout) == (where != "checkout")
    env = {"PATH": os.environ["PATH"], **({"VIPERDRIVE_ROOT": root_env} if root_env else {})}
    ran = subprocess.run(["bash", "-c", STUBS + r.stdout], capture_output=True, text=True, cwd=cwd, env=env,
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    copied = [line.split(" ", 1)[1] for line in ran.stdout.splitlines() if line.startswith("cp ")]
    compiled = [line for line in ran.stdout.splitlines() if line.startswith("mpy-cross ")]
    files = expected_files("rp2", mpy=mpy)
    # with --arch every source is compiled but main.py and boot.py; all of them are copied, then board.json
    assert len(compiled) == (len(files) - 2 if mpy else 0) and len(copied) == len(files) + 1
    assert copied[-1].endswith("mcu/boards/pico.json")


def test_compiled_files_build_for_a_board_arch(tmp_path):
    """The mpy-cross commands of a plan run as printed (the firmware compiles for RP2040)."""
    from viperdrive.deploy import flashing
    plan = flashing.flash_plan(PORT, "pico", arch="armv6m", stage=tmp_path)
    import subprocess
    for cmd in plan.compile_commands():
        Path(cmd[cmd.index("-o") + 1]).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(cmd, check=True, capture_output=True)
    built = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.mpy"))
    assert built == sorted(d for _, d in expected_files("rp2", mpy=True) if d.endswith(".mpy"))
    # .mpy header: 'M', version 6, then arch << 2 | sub-version: armv6m (4) and 3 in the module with viper code
    head = (tmp_path / "lib" / "viperdrive" / "fixedstep.mpy").read_bytes()[:3]
    assert head[0] == ord("M") and head[1] == 6 and head[2] >> 2 == 4 and head[2] & 3 == 3


def test_flash_refusals(tmp_path):
    r = run_cli("flash", "--port", PORT, "--dry-run")
    assert r.returncode == 2 and "--board" in r.stderr
    r = run_cli("flash", "--board", "pico", "--port", "sim")
    assert r.returncode == 2 and "nothing to flash" in r.stderr
    r = run_cli("flash", "--board", "nosuch", "--port", PORT, "--dry-run")
    assert r.returncode == 7 and "board config 'nosuch' not found; give a file or one of: " in r.stderr
    bad = tmp_path / "board.json"
    bad.write_text(json.dumps({"backend": "rp2", "control_hz": 2000, "counts_per_rev": 1000}))
    r = run_cli("flash", "--board", bad, "--port", PORT, "--dry-run")
    assert r.returncode == 7 and "board config: control_hz = 2000 is not allowed (an integer 100..1000)" in r.stderr
    r = run_cli("flash", "--board", "pico", "--port", "/dev/ttyNOPE3")
    assert r.returncode == 3 and "does not exist" in r.stderr
    r = run_cli("flash", "--board", "pico", "--port", PORT, "--arch", "arm64", "--dry-run")
    assert r.returncode == 7 and "not an mpy-cross architecture" in r.stderr


def test_flash_gives_up_on_a_board_without_a_repl():
    master, slave = pty.openpty()           # a port where nothing answers, neither HELLO nor a REPL
    try:
        r = run_cli("flash", "--board", "pico", "--port", os.ttyname(slave), "--mpremote-timeout", "1", "-q")
    finally:
        os.close(slave)
        os.close(master)
    assert r.returncode == 4
    assert "the board did not give mpremote its REPL" in r.stderr and "hold the repl pin" in r.stderr


def test_flash_stops_the_link_of_the_virtual_board_first(sim):
    """The real firmware gets STOP_LINK and halts (outputs off, link silent); the virtual board has no REPL on its
    link, so mpremote then finds none and flash says so."""
    sim.control({"cmd": "reset", "what": "board"})
    r = run_cli("flash", "--board", "pico", "--port", sim.url, "--mpremote-timeout", "1")
    assert r.returncode == 4, r.stderr
    assert (f"viperdrive-sim (viperdrive firmware '{FIRMWARE}') left link mode (STOP_LINK): it resets into REPL "
            "mode within 0.5 s") in r.stderr
    assert "the board did not give mpremote its REPL" in r.stderr
    stats = sim.control({"cmd": "stats"})
    assert stats["link_stopped"] and stats["link_stops"] == 1 and stats["watchdog_resets"] == 0
    assert not sim.control({"cmd": "truth"})["energized"]


def test_repl_on_the_virtual_board_through_a_pty(tmp_path):
    p = PtyProcess([VIPERDRIVE, "repl", "--port", "sim"], cwd=tmp_path)
    try:
        p.expect(r">>> ", timeout=30)
        p.send("print(6 * 7)\r")
        p.expect(r"\r\n42\r\n")
        p.send("t.gains()['kp']\r")
        p.expect(r"0\.04")
        p.send("t.stop()\r")        # the firmware loop runs in a background thread until stopped
        p.expect(r"tuning: stopped, outputs off")
        p.expect(r"is the new tuner")    # the virtual board's watchdog restarts the firmware, as a board would
        p.send("\x04")              # Ctrl-D leaves the REPL
        assert p.wait() == 0
    finally:
        p.close()
    assert list(tmp_path.iterdir()) == []       # the virtual board's files lived in a private folder
    r = run_cli("repl", "--port", PORT.replace("7", "8"), "--print-command")
    assert r.returncode == 3 and "does not exist" in r.stderr
    r = run_cli("repl", "--port", "socket://127.0.0.1:9", "--print-command")
    assert r.stdout.strip() == f"{MPREMOTE} connect socket://127.0.0.1:9 repl"


def test_flash_copies_through_real_mpremote_to_a_micropython_board(tmp_path):
    """The whole flash path against a board that speaks MicroPython's raw REPL (tests/mp_serial_board.py): an
    earlier flash's stale .mpy twin (its manifest says so) and the REPL-mode switch file are removed, every file
    lands flattened with its exact content and a manifest of them, the board config becomes board.json, progress
    follows mpremote's cp lines, the board is reset, and the HELLO check afterwards fails loudly because this
    stand-in runs no firmware."""
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs")
    try:
        fs = tmp_path / "fs"
        (fs / "app.mpy").write_bytes(b"M\x06old")        # would shadow the new app.py: an earlier flash's, removed
        (fs / ownership.MANIFEST).write_text(json.dumps(
            {"format": 1, "files": {"app.mpy": {"size": 5, "sha256": ownership.sha256(b"M\x06old")}}}))
        (fs / "repl_mode").write_text("")
        r = run_cli("flash", "--board", "pico", "--port", board.device, "--verify-timeout", "1", timeout=120)
        files = board.files()
        resets = board.resets
    finally:
        board.close()
    assert r.returncode == 4, r.stderr
    assert "did not answer HELLO within 1 s after the reset" in r.stderr
    expected = {dest: src.read_bytes() for src, dest in expected_files("rp2", mpy=False)}
    expected["board.json"] = (ROOT / "mcu" / "boards" / "pico.json").read_bytes()
    files.pop(ownership.MANIFEST)
    assert files == expected          # nothing else: app.mpy and repl_mode are gone, no temporary file left
    assert resets == 1
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith(f"copying to {os.path.realpath(board.device)}")
                or ln.startswith(f"copying to {board.device}")]
    n = len(expected) + 1
    assert progress[-2].endswith(f"100% ({n}/{n} files) {ownership.MANIFEST}.vdtmp") and "done" in progress[-1]


USER_FILES = {"main.py": b"print('my robot')\n", "boot.py": b"import machine\n", "sensors.py": b"X = 1\n",
              "imu.mpy": b"M\x06mine", "lib/imu.py": b"WHO = 'the user'\n"}


def test_flash_keeps_a_users_files_on_a_micropython_board(tmp_path):
    """A board holding the user's main.py, boot.py, sensors.py, imu.mpy and lib/imu.py: without --force nothing
    changes and the files are named; with --force each one in the way is kept under viperdrive-backup/ on the board
    first (lib/imu.py is not in the way: untouched); the manifest lets the next flash know its own files."""
    from mp_serial_board import SerialMicroPythonBoard
    fs = tmp_path / "fs"
    board = SerialMicroPythonBoard(fs)
    try:
        for path, data in USER_FILES.items():
            (fs / path).parent.mkdir(parents=True, exist_ok=True)
            (fs / path).write_bytes(data)
        before = board.files()
        r = run_cli("flash", "--board", "pico", "--port", board.device, "--no-verify", timeout=120)
        refused_files, refused_resets = board.files(), board.resets
        forced = run_cli("flash", "--board", "pico", "--port", board.device, "--no-verify", "--force", timeout=120)
        after = board.files()
    finally:
        board.close()
    print(r.stderr.strip().splitlines()[-1])
    assert r.returncode == 7 and "Nothing was changed" in r.stderr and "Traceback" not in r.stderr
    refused = r.stderr.split("would shadow the firmware: ")[1].split(". Nothing")[0].split(", ")
    assert sorted(refused) == ["boot.py", "main.py"], r.stderr       # the package is in nobody else's way
    assert refused_files == before and refused_resets == 0
    assert forced.returncode == 0, forced.stderr
    backups = {p: b for p, b in after.items() if p.startswith(ownership.BACKUP_DIR + "/")}
    kept = {p.split("/", 2)[2]: b for p, b in backups.items()}
    print(f"--force kept {sorted(backups)}")
    assert kept == {p: USER_FILES[p] for p in ("main.py", "boot.py")}
    for path in ("lib/imu.py", "sensors.py", "imu.mpy"):         # not in the firmware's way: untouched
        assert after[path] == USER_FILES[path]
    assert after["main.py"] == (ROOT / "mcu" / "main.py").read_bytes()
    for path in kept:
        assert f"{path} was not written by viperdrive: kept as :{ownership.BACKUP_DIR}/" in forced.stderr
    # the next flash knows its own files: every firmware file is in the manifest with what is on the board
    manifest = json.loads(after[ownership.MANIFEST])["files"]
    assert all(manifest[p]["sha256"] == ownership.sha256(after[p]) for p in manifest)
    assert ownership.decide({p: after[p] for p in manifest}, {p: ownership.Existing(
        len(after[p]), ownership.sha256(after[p])) for p in manifest}, manifest).users_in_the_way == []


def test_flash_mpy_detects_the_arch_and_copies_compiled_modules(tmp_path):
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs")     # the unix port: sys.implementation._mpy says x64
    # another user got there first: the fixed build folder an older flash used is theirs (a link to their folder)
    tmp = tmp_path / "tmp"
    theirs = tmp_path / "theirs"
    tmp.mkdir()
    theirs.mkdir()
    (tmp / "viperdrive-flash").symlink_to(theirs)
    try:
        r = run_cli("flash", "--board", "sim", "--port", board.device, "--mpy", "--no-verify", timeout=120,
                    env={"TMPDIR": str(tmp)})
        files = board.files()
    finally:
        board.close()
    assert r.returncode == 0, r.stderr
    assert list(theirs.iterdir()) == []                 # nothing built where another user could swap it
    assert sorted(p.name for p in tmp.iterdir()) == ["viperdrive-flash"]    # the private folder is gone again
    assert "board .mpy architecture: x64" in r.stderr
    mpys = {k: v for k, v in files.items() if k.endswith(".mpy")}
    assert set(files) - set(mpys) == {"main.py", "boot.py", "board.json", "viperdrive-files.json"}
    assert "lib/viperdrive/hal/sim.mpy" in mpys and "lib/viperdrive/fixedstep.mpy" in mpys
    head = mpys["lib/viperdrive/fixedstep.mpy"][:3]
    assert head[:2] == b"M\x06" and head[2] >> 2 == 2          # x64: MP_NATIVE_ARCH_X64 = 2


def test_flash_takes_a_board_out_of_link_mode_copies_and_verifies(tmp_path):
    """A board running the viperdrive link (the stand-in with link=True: the firmware's boot switch, HELLO, and
    STOP_LINK followed by a reset into REPL mode that leaves the port deaf for 300 ms): flash sends STOP_LINK, waits
    out the reset, copies through real mpremote (repl_mode removed last), resets, and the board's HELLO verifies."""
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs", link=True, reset_ms=300)
    try:
        assert board.link_mode
        r = run_cli("flash", "--board", "pico", "--port", board.device, "--verify-timeout", "10", timeout=120)
        files = board.files()
    finally:
        board.close()
    assert r.returncode == 0, r.stderr
    assert (f"stand-in (viperdrive firmware '{FIRMWARE}') left link mode (STOP_LINK): it resets into REPL mode "
            "within 0.3 s") in r.stderr
    assert board.link_stops == 1 and board.resets == 1
    # HELLO, STOP_LINK before the copy; after the reset (repl_mode gone: link mode again) the verifying HELLO
    assert board.link_frames == [P.HELLO, P.STOP_LINK, P.HELLO], board.link_frames
    assert board.repl_ignored == 0      # flash waited out the reset: no byte of mpremote's went to a deaf port
    assert f"verified: stand-in runs '{FIRMWARE}', protocol v{P.PROTOCOL_VERSION}" in r.stdout
    expected = {dest: src.read_bytes() for src, dest in expected_files("rp2", mpy=False)}
    expected["board.json"] = (ROOT / "mcu" / "boards" / "pico.json").read_bytes()
    manifest = json.loads(files.pop(ownership.MANIFEST))
    assert files == expected            # repl_mode, written by STOP_LINK, was removed as the copy's last step
    assert {p: e["sha256"] for p, e in manifest["files"].items()} == {p: ownership.sha256(b) for p, b in
                                                                       expected.items()}


def test_flash_check_through_mpremote_compares_and_puts_the_board_back_in_link_mode(tmp_path):
    """flash --check on a board in link mode (the stand-in): STOP_LINK, the board lists its files, nothing is
    written, repl_mode is removed and the board reset (link mode again, HELLO answers). Exit 0 right after a flash,
    5 naming a file edited on the board."""
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs", link=True, reset_ms=300)
    try:
        r = run_cli("flash", "--board", "pico", "--port", board.device, "--verify-timeout", "10", timeout=120)
        assert r.returncode == 0, r.stderr
        r1 = run_cli("flash", "--board", "pico", "--port", board.device, "--check", timeout=120)
        after_check = board.files()
        # the stand-in handles mpremote's reset as it reads it, maybe after mpremote has gone: a condition
        link_mode_again = wait_until(lambda: board.link_mode, 10.0, what="the stand-in in link mode again")
        fs = tmp_path / "fs"
        edit = fs / "lib" / "viperdrive" / "safety.py"
        edit.write_bytes(edit.read_bytes() + b"\n# edited on the board\n")
        edited = board.files()
        r2 = run_cli("flash", "--board", "pico", "--port", board.device, "--check", timeout=120)
        after_second = board.files()
        stops = board.link_stops
    finally:
        board.close()
    n = len(expected_files("rp2", mpy=False)) + 1        # and board.json
    assert r1.returncode == 0 and f"{n} of {n} files current" in r1.stdout, (r1.stdout, r1.stderr)
    assert f"written by {FIRMWARE}" in r1.stdout
    assert link_mode_again, r1.stderr
    assert stops == 3, (stops, r2.stderr)               # the flash's STOP_LINK and one per check
    assert r2.returncode == 5 and "changed    lib/viperdrive/safety.py" in r2.stdout, (r2.stdout, r2.stderr)
    assert after_second == edited and ownership.MANIFEST in after_check and "repl_mode" not in after_second


def test_flash_on_an_old_link_firmware_without_stop_link_says_to_hold_the_repl_pin(tmp_path):
    """A protocol v1 firmware answers HELLO (a version mismatch) and NACKs STOP_LINK: flash stops before mpremote,
    names the way out, and the board's files are untouched."""
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs", link=True, version=1)
    try:
        (tmp_path / "fs" / "app.py").write_text("old firmware\n")
        r = run_cli("flash", "--board", "pico", "--port", board.device, timeout=60)
        files = board.files()
    finally:
        board.close()
    assert r.returncode == 4, r.stderr
    assert "does not know STOP_LINK" in r.stderr and "protocol v1" in r.stderr and "hold the repl pin" in r.stderr
    assert board.link_frames == [P.HELLO, P.STOP_LINK] and board.link_stops == 0 and board.executed == []
    assert files == {"app.py": b"old firmware\n"}


def test_dry_run_refuses_a_pin_with_two_roles(tmp_path):
    # the hardening round's four cases passed the dry run with exit 0; each is refused before any command is built,
    # naming both roles, exit 7 (a bad board file)
    base = json.loads((ROOT / "mcu" / "boards" / "pico.json").read_text())
    cases = {
        "estop on the left PWM pin": ({"estop": {"pin": 6}}, ("pins.left.pwm", "estop.pin")),
        "two motors on one PWM pin": ({"pins": {"left": {"pwm": 6, "dir": 7, "enc_a": 2, "enc_b": 3},
                                                "right": {"pwm": 6, "dir": 9, "enc_a": 4, "enc_b": 5}}},
                                      ("pins.left.pwm", "pins.right.pwm")),
        "IMU SDA on an encoder pin": ({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 17}},
                                      ("pins.right.enc_a", "imu.sda")),
        "repl_pin on a PWM pin": ({"repl_pin": 8}, ("pins.right.pwm", "repl_pin")),
        "a motor pin beyond the RP2040's GPIOs": ({"pins": {"left": {"pwm": 200, "dir": 7, "enc_a": 2, "enc_b": 3},
                                                            "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}},
                                                  ("pins.left.pwm", "0..29")),
    }
    for what, (change, words) in cases.items():
        board = tmp_path / "board.json"
        board.write_text(json.dumps({**base, **change}))
        r = dry_run("--board", board, "--port", PORT)
        assert r.returncode == 7, (what, r.returncode, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "mpremote" not in r.stdout, (what, r.stdout, r.stderr)
        for w in words:
            assert w in r.stderr, (what, w, r.stderr)


def test_a_flashed_micropython_board_imports_the_users_lib_imu_as_imu(tmp_path):
    """The firmware is the package lib/viperdrive/ on a MicroPython board too: with the user's lib/imu.py and an
    older flash's root-level firmware (its manifest lists it), a flash removes the old layout, and MicroPython's
    own importer on the board's files finds the user's `imu` and the firmware's viperdrive.imu."""
    from mp_serial_board import SerialMicroPythonBoard
    fs = tmp_path / "fs"
    old = {"imu.py": (ROOT / "mcu" / "imu.py").read_bytes(),
           "hal/rp2.py": (ROOT / "mcu" / "hal" / "rp2.py").read_bytes()}
    for path, data in {**old, "lib/imu.py": b"WHO = 'the user'\n", "sensors.py": b"X = 'their sensors'\n"}.items():
        (fs / path).parent.mkdir(parents=True, exist_ok=True)
        (fs / path).write_bytes(data)
    (fs / ownership.MANIFEST).write_text(json.dumps({"format": 1, "files": {
        p: {"size": len(b), "sha256": ownership.sha256(b)} for p, b in old.items()}}))
    board = SerialMicroPythonBoard(fs)
    try:
        r = run_cli("flash", "--board", "pico", "--port", board.device, "--no-verify", timeout=120)
        files = board.files()
    finally:
        board.close()
    assert r.returncode == 0, r.stderr
    assert "imu.py" not in files and "hal/rp2.py" not in files and not (fs / "hal").exists()
    assert files["lib/imu.py"] == b"WHO = 'the user'\n" and files["sensors.py"] == b"X = 'their sensors'\n"
    out = board_imports(fs, "import imu, sensors\nprint('user', imu.WHO, sensors.X)\n"
                            "from viperdrive import app, imu as fw_imu\n"
                            "print('firmware', app.FIRMWARE, fw_imu.__name__)\n")
    assert "user the user their sensors" in out and f"firmware {FIRMWARE} viperdrive.imu" in out, out


def _frozen_standin(fs: Path) -> dict[str, bytes]:
    """A stand-in board whose image has the firmware frozen in (viperdrive.frozen_image imports), holding what an
    earlier flash wrote (its manifest says so) and the user's own main.py, changed since that flash."""
    (fs / "viperdrive").mkdir(parents=True)
    (fs / "viperdrive" / "frozen_image.py").write_text(f"VERSION = {VERSION!r}\nFILES = ('app.py',)\n")
    ours = {"lib/viperdrive/app.py": b"# app\n", "lib/viperdrive/hal/rp2.py": b"# rp2\n",
            "lib/viperdrive/shared/protocol.py": b"# protocol\n", "main.py": b"from viperdrive import app\n"}
    (fs / ownership.MANIFEST).write_bytes(ownership.make_manifest(ours, FIRMWARE_PREFIX + "0.0.9"))
    for path, data in ours.items():
        (fs / path).parent.mkdir(parents=True, exist_ok=True)
        (fs / path).write_bytes(data)
    (fs / "main.py").write_bytes(b"from viperdrive import app\n# my change\n")
    return ours


def test_config_only_writes_board_json_and_removes_only_with_consent_never_the_users(tmp_path):
    from mp_serial_board import SerialMicroPythonBoard
    fs = tmp_path / "fs"
    _frozen_standin(fs)
    board = SerialMicroPythonBoard(fs)
    try:
        full = run_cli("flash", "--board", "pico", "--port", board.device, timeout=120)
        after_full = board.files()
        asked = run_cli("flash", "--board", "pico", "--config-only", "--port", board.device, "--verify-timeout", "1",
                        timeout=120)
        kept = board.files()
        agreed = run_cli("flash", "--board", "pico", "--config-only", "--remove-unused", "--port", board.device,
                         "--verify-timeout", "1", timeout=120)
        files = board.files()
    finally:
        board.close()
    # a full flash onto it is refused: its files would not run
    assert full.returncode == 7 and "frozen in" in full.stderr and "Nothing was changed" in full.stderr
    assert "board.json" not in after_full
    # no consent (no terminal): board.json written, the earlier flash's files left and named, the manifest still
    # knows them
    for r in (asked, agreed):
        assert r.returncode == 4 and "did not answer HELLO within 1 s" in r.stderr, r.stderr   # a stand-in
        assert "Traceback" not in r.stderr
    assert kept["board.json"] == (ROOT / "mcu" / "boards" / "pico.json").read_bytes()
    assert "left what an earlier flash wrote, which no longer runs: lib/viperdrive/app.py" in asked.stderr
    assert ":main.py does not run beside the frozen firmware and was not written by viperdrive" in asked.stderr
    assert kept["lib/viperdrive/app.py"] == b"# app\n" and "deleting" not in asked.stderr
    assert "lib/viperdrive/app.py" in json.loads(kept[ownership.MANIFEST])["files"]
    # consent: what the earlier flash wrote is gone with its folders; the user's changed main.py stays
    for path in ("lib/viperdrive/app.py", "lib/viperdrive/hal/rp2.py", "lib/viperdrive/shared/protocol.py"):
        assert f"deleting :{path}" in agreed.stderr and path not in files
    assert not (fs / "lib" / "viperdrive").exists()
    assert files["main.py"] == b"from viperdrive import app\n# my change\n"
    assert set(json.loads(files[ownership.MANIFEST])["files"]) == {"board.json", "main.py"}
    assert not [p for p in files if p.endswith(ownership.TEMP_SUFFIX)]


def test_config_only_on_a_stock_image_and_its_option_refusals(tmp_path):
    from mp_serial_board import SerialMicroPythonBoard
    board = SerialMicroPythonBoard(tmp_path / "fs")
    try:
        before = board.files()
        r = run_cli("flash", "--board", "pico", "--config-only", "--port", board.device, timeout=120)
        after = board.files()
    finally:
        board.close()
    assert r.returncode == 7 and "no viperdrive firmware frozen in (a stock image)" in r.stderr, r.stderr
    assert "Nothing was changed" in r.stderr and after == before
    for args, words in ((["--config-only", "--mpy"], "--config-only writes the board config"),
                        (["--config-only", "--drive", str(tmp_path)], "--config-only writes the board config"),
                        (["--config-only", "--check"], "--config-only writes the board config"),
                        (["--remove-unused"], "--remove-unused goes with --config-only")):
        r = run_cli("flash", "--board", "pico", "--port", PORT, *args)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    r = run_cli("flash", "--keep-board-config", "--backend", "rp2", "--config-only", "--port", PORT)
    assert r.returncode == 2 and "--config-only writes the board config" in r.stderr


def test_config_only_dry_run_copies_the_board_config_and_nothing_else():
    r = run_cli("flash", "--board", "pico", "--config-only", "--port", PORT, "--dry-run")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    copies = [ln for ln in r.stdout.splitlines() if "fs cp " in ln]
    assert len(copies) == 1 and copies[0].rstrip(" \\").endswith(":board.json.vdtmp"), copies
    assert "lib/viperdrive" not in r.stdout and "mkdir" not in r.stdout
    assert "whether its image has the firmware frozen in" in r.stdout and f"connect {PORT} reset" in r.stdout
