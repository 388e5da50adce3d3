# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A MicroPython board on a pseudo-terminal, for testing what mpremote does to a board (viperdrive flash).

A test helper, not a mock of mpremote or of the firmware: the far end of the pty speaks MicroPython's raw REPL
protocol (Ctrl-A raw mode, Ctrl-D soft reboot / end of code, "OK", output, EOF, error, EOF, ">") and runs every
code block in ONE real MicroPython unix-port process whose working directory is the "board filesystem", so
mpremote's multi-step file writes (open, then write chunks, then close) behave as on a board. Raw-paste mode is
spoken too (window flow control), as MicroPython 1.14+ does. machine.reset() is recorded, not executed.

With link=True the board boots like the viperdrive firmware does: in link mode unless a file repl_mode is on its
filesystem. In link mode it speaks the wire protocol (shared/protocol.py's Parser and pack functions) and ignores
every other byte as the firmware does with Ctrl-C off: HELLO answers INFO; STOP_LINK answers STOP_LINK_ACK with
reset_ms, writes repl_mode and leaves the REPL deaf for reset_ms (the board's watchdog reset into REPL mode);
other commands are NACK 1. machine.reset() boots again through the same switch.
"""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P
from viperdrive.shared.version import FIRMWARE_PREFIX, VERSION

MICROPYTHON = str(Path(sys.executable).parent / "micropython")

# runs inside MicroPython: read "<n>\n<n bytes of code>", exec it in one shared namespace, mark the end
_SERVER = r"""
import sys
g = {}
rd = sys.stdin.buffer.read
while True:
    n = b""
    while not n.endswith(b"\n"):
        c = rd(1)
        if not c:
            raise SystemExit
        n += c
    code = rd(int(n))
    try:
        exec(code, g)
        print("\x00ERR\x00", end="")
    except BaseException as e:
        print("\x00ERR\x00", end="")
        sys.print_exception(e, sys.stdout)
    print("\x00END\x00", end="")
"""

BANNER = b"MicroPython v1.29.0 on 2026-08-29; fake-board with viperdrive test helper\r\n>>> "


class SerialMicroPythonBoard:
    def __init__(self, root: Path, link: bool = False, reset_ms: int = 300, version: int = P.PROTOCOL_VERSION):
        self.link = link
        self.version = version                  # INFO's protocol version; before 2 STOP_LINK is NACK 1
        self.reset_ms = reset_ms
        self.link_stops = 0
        self.link_frames: list[int] = []        # commands the link mode received
        self.repl_ignored = 0                   # bytes that arrived while the board was resetting
        self._parser = P.Parser()
        self._deaf_until = 0.0
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.master, self.slave = pty.openpty()
        import tty
        tty.setraw(self.slave)
        self.device = os.ttyname(self.slave)
        self.resets = 0
        self.executed: list[str] = []
        self.link_mode = link and not (self.root / "repl_mode").exists()
        self._mp = self._start_mp()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _start_mp(self):
        machine = self.root / ".." / "fakemods"
        machine.mkdir(exist_ok=True)
        # machine.reset() on this "board" only counts: the test checks that flash asked for it
        (machine / "machine.py").write_text("def reset():\n    print('\\x00RESET\\x00', end='')\n")
        env = dict(os.environ, MICROPYPATH=f"{machine.resolve()}:.frozen")
        return subprocess.Popen([MICROPYTHON, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                cwd=self.root, env=env)

    def _run(self, code: bytes) -> tuple[bytes, bytes]:
        self.executed.append(code.decode("utf-8", "replace"))
        self._mp.stdin.write(b"%d\n" % len(code) + code)
        self._mp.stdin.flush()
        out = b""
        while not out.endswith(b"\x00END\x00"):
            chunk = os.read(self._mp.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
        out = out[:-len(b"\x00END\x00")]
        if b"\x00RESET\x00" in out:
            self.resets += 1
            out = out.replace(b"\x00RESET\x00", b"")
            # the boot switch, as app.main() reads it: link mode unless repl_mode is there
            self.link_mode = self.link and not (self.root / "repl_mode").exists()
            self._parser = P.Parser()
        std, _, err = out.partition(b"\x00ERR\x00")
        return std.replace(b"\n", b"\r\n"), err.replace(b"\n", b"\r\n")

    def _write(self, data: bytes) -> None:
        os.write(self.master, data)

    WINDOW = 4096

    def _serve(self):
        raw = False
        paste = False           # raw-paste mode: code bytes until Ctrl-D, flow control by windows
        got = 0
        buf = b""
        while not self._stop.is_set():
            r, _, _ = select.select([self.master], [], [], 0.1)
            if not r:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            for b in data:
                ch = bytes((b,))
                if self.link_mode:
                    for cmd, payload in self._parser.feed(ch):
                        self._link_frame(cmd, payload)
                    continue
                if time.monotonic() < self._deaf_until:
                    self.repl_ignored += 1          # resetting: nobody reads the port
                    continue
                if paste:
                    if ch == b"\x04":
                        paste = False
                        self._write(b"\x04")        # end of data acknowledged, then run it
                        out, err = self._run(buf)
                        buf = b""
                        self._write(out + b"\x04" + err + b"\x04>")
                        continue
                    buf += ch
                    got += 1
                    if got == self.WINDOW:
                        got = 0
                        self._write(b"\x01")        # room for another window
                    continue
                if not raw:
                    if ch == b"\x01":
                        raw, buf = True, b""
                        self._write(b"raw REPL; CTRL-B to exit\r\n>")
                    elif ch == b"\x03":
                        self._write(b"\r\n" + BANNER)
                    continue
                if ch == b"\x02":
                    raw = False
                    self._write(b"\r\n" + BANNER)
                elif ch == b"\x03":
                    buf = b""
                elif ch == b"\x01":
                    buf = b""
                    self._write(b"raw REPL; CTRL-B to exit\r\n>")
                elif ch == b"\x05":
                    buf = ch
                elif buf.startswith(b"\x05"):
                    buf += ch
                    if buf == b"\x05A\x01":
                        buf = b""
                        paste, got = True, 0
                        self._write(b"R\x01" + self.WINDOW.to_bytes(2, "little"))
                elif ch == b"\x04":
                    if not buf:
                        self._write(b"OK\r\nMPY: soft reboot\r\nraw REPL; CTRL-B to exit\r\n>")
                        continue
                    self._write(b"OK")
                    out, err = self._run(buf)
                    buf = b""
                    self._write(out + b"\x04" + err + b"\x04>")
                else:
                    buf += ch

    def _link_frame(self, cmd: int, payload: bytes) -> None:
        self.link_frames.append(cmd)
        if cmd == P.HELLO:
            self._write(P.pack_info(self.version, PARAMS.schema_hash(), 500, 4096, FIRMWARE_PREFIX + VERSION,
                                    "stand-in"))
        elif cmd == P.STOP_LINK and self.version >= 2:
            self._write(P.pack_stop_link_ack(self.reset_ms))
            (self.root / "repl_mode").write_text("STOP_LINK\n")
            self.link_stops += 1
            self.link_mode = False
            self._deaf_until = time.monotonic() + self.reset_ms / 1000.0
        else:
            self._write(P.pack_nack(cmd, P.NACK_UNKNOWN))

    def files(self) -> dict[str, bytes]:
        """Everything on the "board" filesystem: {relative path: content}."""
        return {p.relative_to(self.root).as_posix(): p.read_bytes() for p in self.root.rglob("*") if p.is_file()}

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)
        if self._mp.poll() is None:
            self._mp.kill()
            self._mp.wait()
        os.close(self.master)
        os.close(self.slave)
