# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Helpers for the `viperdrive` CLI tests: run the command as a subprocess, drive it through a pseudo-terminal, and
share one virtual board (`viperdrive sim`) across the tests of a module, with its control endpoint."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from viperdrive.boardtime.registry import clock_for
from viperdrive.timebase import HOST_CLOCK, Clock, wait_until

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")
ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args, timeout=60, input=None, env=None, **kw) -> subprocess.CompletedProcess:
    """`viperdrive ARGS` with stdin from /dev/null unless input is given."""
    e = dict(os.environ)
    e.pop("VIPERDRIVE_PORT", None)
    e.update(env or {})
    return subprocess.run([VIPERDRIVE, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL, env=e, **kw)


class SharedSim:
    """`viperdrive sim --listen 127.0.0.1:0 --control 127.0.0.1:0` for a module: url and control(request)."""

    def __init__(self):
        self.proc = subprocess.Popen([VIPERDRIVE, "sim", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = None
        self.control_addr = None
        deadline = time.monotonic() + 30
        while self.url is None:
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("viperdrive sim did not start")
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("viperdrive sim exited: " + self.proc.stderr.read())
            if line.startswith("control on "):
                host, _, port = line[len("control on "):].strip().rpartition(":")
                self.control_addr = (host, int(port))
            elif line.startswith("listening on "):
                self.url = line[len("listening on "):].strip()

    @property
    def clock(self) -> Clock:
        """The board's time (its clock file, found by the URL as every command finds it)."""
        if getattr(self, "_clock", None) is None:
            self._clock = clock_for(self.url)
        return self._clock

    def truth(self) -> dict:
        return self.control({"cmd": "truth"})

    def control(self, request: dict) -> dict:
        with socket.create_connection(self.control_addr, timeout=10) as s:
            s.sendall((json.dumps(request) + "\n").encode())
            f = s.makefile("rb")
            reply = json.loads(f.readline())
        assert reply.get("ok"), reply
        return reply

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def cut_link_during(sim: SharedSim, proc: subprocess.Popen, after_s: float = 0.0, timeout: float = 30.0):
    """Cut the virtual board's link `after_s` s from now and wait for `proc` to end; the link is restored
    whatever happens. -> proc.communicate()'s (stdout, stderr)."""
    try:
        sim.clock.sleep(after_s)
        sim.control({"cmd": "fault", "kind": "cut_link", "on": True})
        return proc.communicate(timeout=timeout)
    finally:
        sim.control({"cmd": "fault", "kind": "cut_link", "on": False})
        if proc.poll() is None:
            proc.kill()


def until_energized(sim, proc, timeout=30.0) -> None:
    """Wait until the virtual board's outputs are on (the command under test has enabled it), within `timeout` s of
    board time; the command's output when it ended first."""
    def energized():
        assert proc.poll() is None, proc.communicate()
        return sim.truth()["energized"]
    wait_until(energized, timeout, sim.clock, what="the board energized by the command")


def signal_while_energized(sim, argv, sig, after_s):
    """Run `viperdrive ARGV` on the shared board; `after_s` s after the board energized, send `sig`. -> (process,
    stderr, seconds from the signal to the board de-energized, seconds from the signal to the exit)."""
    proc = subprocess.Popen([VIPERDRIVE, *map(str, argv), "--port", sim.url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    clock = sim.clock
    try:
        until_energized(sim, proc)
        clock.sleep(after_s)
        assert sim.truth()["energized"], (proc.poll(), proc.stderr.read() if proc.poll() else "")
        t_sig = clock.now()
        proc.send_signal(sig)
        off = None
        t_exit = None

        def ended():
            nonlocal off, t_exit
            if off is None and not sim.truth()["energized"]:
                off = clock.now() - t_sig
            if t_exit is None and proc.poll() is not None:
                t_exit = clock.now() - t_sig
            return off is not None and t_exit is not None
        wait_until(ended, 20.0, clock, poll=0.002, what="the board de-energized and the command ended")
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc, err, off, t_exit


def no_traceback(r) -> None:
    """A CompletedProcess printed no Python traceback (no traceback is a user interface)."""
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]


def _controlling_tty():  # runs in the child: a new session whose controlling terminal is the pty (^C -> SIGINT)
    import fcntl
    import termios
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProcess:
    """A command on a pseudo-terminal (stdin, stdout and stderr), as a user's terminal: send keys, expect text.
    clock: the board time its waits count (the command's board's clock; the host's for a command without one)."""

    def __init__(self, argv, env=None, cwd=None, clock: Clock = HOST_CLOCK):
        self.clock = clock
        self.master, slave = pty.openpty()
        e = dict(os.environ)
        e.pop("VIPERDRIVE_PORT", None)
        e.update(env or {})
        e.setdefault("TERM", "xterm")
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=e, cwd=cwd,
                                     preexec_fn=_controlling_tty)
        os.close(slave)
        self.output = ""

    def _read(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:         # EIO: the child closed the terminal
            return None
        if not data:
            return None
        self.output += data.decode("utf-8", "replace")
        return True

    def expect(self, pattern, timeout=20.0, start=0) -> re.Match:
        """Wait until pattern (regex) appears in the output after index `start`, within `timeout` s of the clock's
        time (the pty is read however the bytes are split: one write may arrive in several reads)."""
        rx = re.compile(pattern)
        deadline = self.clock.now() + timeout
        while True:
            m = rx.search(self.output, start)
            if m:
                return m
            left = deadline - self.clock.now()
            if left <= 0 or self._read(min(self.clock.host_seconds(left), 0.2)) is None:
                m = rx.search(self.output, start)
                if m:
                    return m
                raise AssertionError(f"{pattern!r} not seen within {timeout} s; output:\n{self.output[-3000:]}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout=20.0) -> int:
        """The exit code, once the command ended within `timeout` s of the clock's time (its output read to the
        end)."""
        deadline = self.clock.now() + timeout
        while self.proc.poll() is None and self.clock.now() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        if self.proc.poll() is None:
            raise AssertionError(f"the command did not end within {timeout} s; output:\n{self.output[-3000:]}")
        return self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


def board_imports(folder, code: str) -> str:
    """Run `code` on the MicroPython unix port as a board would with `folder` as its filesystem: the root (cwd)
    first on sys.path, then /lib, as on MicroPython and CircuitPython; -> what it printed (AssertionError with its
    output when it failed)."""
    from viperdrive import executables
    exe = executables.require("micropython", AssertionError, "micropython (the unix port)")
    prog = "import sys\nsys.path[:] = ['', 'lib']\n" + code
    r = subprocess.run([exe, "-c", prog], cwd=str(folder), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout
