# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The virtual board from the host side: launch the real firmware on the MicroPython unix port with the simulated
robot (sim/vboard.py), connect to it like a serial board (socket:// URL) and drive its control endpoint.

    with VirtualBoard(baud=115200) as vb:
        board = Board(vb.url)                  # any host tool: pyserial's socket:// URL
        vb.control({"cmd": "truth"})           # -> {"ok": True, "x": .., "y": .., "theta": .., ...}
        vb.fault("stall", wheel="left", on=True)

The process always dies with the VirtualBoard (close(), the context manager's exit, and, on Linux, when the
Python process that started it dies). docs/virtual-board.md is the manual.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from io import BufferedReader
from pathlib import Path
from typing import Any

from .. import executables, extras
from ..boardtime import clockfile, registry
from ..boardtime.clockfile import BoardTimeFile
from ..deploy.firmware import firmware_root
from ..errors import BadValue, PortError, UserError

START_TIMEOUT_S = 20.0      # a loaded CI machine compiles the firmware's viper code at start
HEAPSIZE = "4M"


class SimError(UserError):
    """The virtual board could not start, died, or refused a control request."""


def micropython_exe() -> str:
    """The MicroPython unix port: next to this Python (the project's venv), else on PATH."""
    extras.require("sim", "the virtual board")
    return executables.require("micropython", SimError, "the MicroPython unix port (micropython)")


def die_with_parent():  # pragma: no cover - runs in the child between fork and exec
    # Linux: the kernel kills the virtual board when the process that started it dies (pytest killed, ^C...)
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def robot_path(robot: str | os.PathLike) -> Path:
    """A robot description by file path, or by the name of one in sim/robots/ ("default": a robot with a real
    one's imperfections; "ideal": perfect kinematics, for tests that compare odometry with ground truth)."""
    text = os.fspath(robot)
    if text and "/" not in text and "." not in text:
        named = firmware_root() / "sim" / "robots" / f"{text}.json"
        if named.is_file():
            return named
        names = sorted(p.stem for p in (firmware_root() / "sim" / "robots").glob("*.json"))
        raise SimError(f"no robot named {text!r} (sim/robots/ has {', '.join(names)}; or give a file path)")
    return Path(text).resolve()


def vboard_command(*, listen: str = "127.0.0.1:0", control: str | None = "127.0.0.1:0", baud: int = 115200,
                   robot: str | os.PathLike | None = None, board: str | os.PathLike | None = None,
                   params: str | os.PathLike | None = None, seed: int | None = None, repl: bool = False,
                   heapsize: str = HEAPSIZE, clock_path: str | os.PathLike | None = None,
                   time_ratio: float | None = None) -> list[str]:
    """The micropython command line that runs the virtual board with these options."""
    root = firmware_root()
    cmd = [micropython_exe(), "-X", f"heapsize={heapsize}"]
    if repl:
        cmd.append("-i")
    cmd += [str(root / "sim" / "vboard.py"), "--listen", listen, "--baud", str(int(baud))]
    if control:
        cmd += ["--control", control]
    if robot is not None:
        cmd += ["--robot", str(robot_path(robot))]
    if board is not None:
        cmd += ["--board", str(Path(board).resolve())]
    if params is not None:
        cmd += ["--params", str(Path(params).resolve())]
    if seed is not None:
        cmd += ["--seed", str(int(seed))]
    if clock_path is not None:
        cmd += ["--clock", str(Path(clock_path).resolve())]
    if time_ratio is not None:
        cmd += ["--time-ratio", repr(float(time_ratio))]     # else VIPERDRIVE_SIM_SPEED from the environment
    if repl:
        cmd.append("--repl")
    return cmd


def startup_error(lines: list[str], rc: int | None, prefix: str = "vboard: error:",
                  what: str = "virtual board") -> UserError:
    """The error to raise when the virtual board (or `what`: the emulated Pico) exits before it listens, from its
    stderr lines."""
    msgs = [ln.split("error:", 1)[1].strip() for ln in lines if ln.startswith(prefix)]
    text = msgs[-1] if msgs else ("\n".join(lines[-15:]).strip() or f"exit code {rc}")
    low = text.lower()
    if "listen" in low or "resolve" in low:
        return PortError(f"{what}: {text}")
    if "robot description" in low or "board config" in low or "flash file" in low or "--" in low:
        return BadValue(f"{what}: {text}")
    return SimError(f"{what} did not start: {text}")


class VirtualBoard:
    """A private virtual board process. Context manager; `url` is its socket:// link, control() its endpoint.

    baud: the emulated serial line's rate (both directions, 10 bits per byte).
    robot: a robot description file (sim/robots/*.json), a name of one ("ideal"), or a dict of one; None:
    sim/robots/default.json (the robot with a real one's imperfections).
    listen / control: "HOST:PORT" for the link and the control endpoint; None: 127.0.0.1 on a free port.
    board: the board config file (default mcu/boards/sim.json); params: the firmware's parameter file (default:
    a fresh one in a temporary folder, removed on close); seed: the noise seed (default: the robot file's).
    `clock` is its board time (boardtime.clockfile.BoardTimeFile): wait on it, and hand it to Board(clock=...). While it
    runs it is registered (boardtime.registry), so a command given only its URL finds that clock too.
    """

    ERROR_PREFIX = "vboard: error:"
    NAME = "virtual board"

    def __init__(self, baud: int = 115200, robot: str | os.PathLike | dict | None = None, listen: str | None = None,
                 control: str | None = None, board: str | os.PathLike | None = None,
                 params: str | os.PathLike | None = None, seed: int | None = None,
                 start_timeout_s: float = START_TIMEOUT_S):
        self.baud = int(baud)
        self.robot = robot
        self.listen = listen or "127.0.0.1:0"
        self.control_address = control or "127.0.0.1:0"
        self.board = board
        self.params = params
        self.seed = seed
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None
        self.console_url: str | None = None     # a rig whose REPL has a port of its own (CircuitPython's console)
        self.control_host: str | None = None
        self.control_port: int | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._sock: socket.socket | None = None
        self._rfile: BufferedReader | None = None
        self._lock = threading.Lock()
        self._stdout: queue.Queue[str | None] = queue.Queue()
        self.stderr_lines: list[str] = []
        self.output_lines: list[str] = []
        self.clock_path: Path | None = None
        self._clock: BoardTimeFile | None = None

    # ---- lifecycle ----

    def start(self) -> VirtualBoard:
        if self.proc is not None:
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="viperdrive-sim-")
        self.clock_path = clockfile.create(Path(self._tmp.name) / "board.clock")
        robot = self.robot
        if isinstance(robot, dict):
            path = Path(self._tmp.name) / "robot.json"
            path.write_text(json.dumps(robot))
            robot = path
        cmd = self._command(robot)
        kw: dict[str, Any] = {"preexec_fn": die_with_parent} if sys.platform.startswith("linux") else {}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, cwd=self._tmp.name, **kw)
        self._clock = BoardTimeFile(self.clock_path, board_pid=self.proc.pid)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        try:
            self._wait_listening()
        except BaseException:
            self.close()
            raise
        return self

    def _command(self, robot) -> list[str]:
        assert self._tmp is not None        # made by start()
        params = self.params if self.params is not None else Path(self._tmp.name) / "params.json"
        return vboard_command(listen=self.listen, control=self.control_address, baud=self.baud, robot=robot,
                              board=self.board, params=params, seed=self.seed, clock_path=self.clock_path)

    KIND = "virtual"

    def _started(self) -> None:
        """Called once the board listens: it is registered with its clock (a subclass adds its pty)."""
        assert self.url is not None and self.proc is not None
        control = f"{self.control_host}:{self.control_port}" if self.control_port is not None else None
        registry.register(self.url, control, self.clock_path, self.proc.pid, kind=self.KIND)

    def _stopping(self) -> None:
        """Called first thing in close()."""
        if self.url:
            registry.unregister(self.url)

    @property
    def clock(self) -> BoardTimeFile:
        """The board's time (its clock file): it stops while the machine does not run the virtual board."""
        if self._clock is None:
            raise SimError("the virtual board is not running: start() first")
        return self._clock

    def _pump_stdout(self):
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._stdout.put(line.rstrip("\n"))
        self._stdout.put(None)

    def _pump_stderr(self):
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_lines.append(line.rstrip("\n"))
            del self.stderr_lines[:-200]

    def _wait_listening(self):
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SimError(f"virtual board did not start within {self.start_timeout_s:.0f} s"
                               + ("; stderr:\n" + "\n".join(self.stderr_lines[-10:]) if self.stderr_lines else ""))
            try:
                line = self._stdout.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                rc = self.proc.wait(timeout=5) if self.proc else None
                time.sleep(0.05)   # let the stderr reader finish
                raise startup_error(self.stderr_lines, rc, self.ERROR_PREFIX, self.NAME)
            self.output_lines.append(line)
            if line.startswith("control on "):
                host, _, port = line[len("control on "):].rpartition(":")
                self.control_host, self.control_port = host, int(port)
            elif line.startswith("console on "):
                self.console_url = line[len("console on "):].strip()
            elif line.startswith("listening on "):
                self.url = line[len("listening on "):].strip()
                self._started()
                return

    def close(self) -> None:
        """Stop the virtual board (always kills the process) and remove its temporary files."""
        self._stopping()
        with self._lock:
            if self._sock is not None:
                try:
                    self._sock.close()
                except OSError:
                    pass
                self._sock = None
                self._rfile = None
        proc, self.proc = self.proc, None
        if self._clock is not None:
            self._clock.close()
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> VirtualBoard:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # ---- control endpoint ----

    def _connect(self):
        if self.control_port is None:
            raise SimError("this virtual board has no control endpoint")
        s = socket.create_connection((self.control_host, self.control_port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = s
        self._rfile = s.makefile("rb")

    def control(self, request: dict, timeout_s: float = 10.0) -> dict:
        """Send one request to the control endpoint; the reply dict (with "ok": true, or "ok": false and
        "error"). SimError when the virtual board is gone. timeout_s: host seconds for the reply."""
        data = (json.dumps(request) + "\n").encode()
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._sock is None or self._rfile is None:
                        self._connect()
                    sock, rfile = self._sock, self._rfile
                    assert sock is not None and rfile is not None      # made by _connect()
                    sock.settimeout(timeout_s)
                    sock.sendall(data)
                    line = rfile.readline()
                    if not line:
                        raise ConnectionError("the control endpoint closed the connection")
                    return json.loads(line)
                except (OSError, ConnectionError, ValueError) as e:
                    if self._sock is not None:
                        self._sock.close()
                    self._sock = None
                    if attempt == 2 or not self.alive:
                        why = "" if self.alive else " (the virtual board process has exited)"
                        raise SimError(f"virtual board control endpoint: {e}{why}") from None
        raise AssertionError("unreachable")

    def _ok(self, request: dict) -> dict:
        rep = self.control(request)
        if not rep.get("ok"):
            raise SimError(f"virtual board refused {request}: {rep.get('error')}")
        return rep

    def truth(self) -> dict:
        """Ground truth: x, y (m), theta (rad), w_left, w_right (wheel rad/s), t (sim s), v, omega, ..."""
        return self._ok({"cmd": "truth"})

    def fault(self, kind: str, **kw) -> dict:
        """Inject a fault: cut_link(on), corrupt(rate), garbage(n), inject(hex: exact bytes toward the board),
        stall(wheel, on), lift(on), encoder_drop(rate, wheel="both"), battery(volts), freeze_control(on)."""
        return self._ok({"cmd": "fault", "kind": kind, **kw})

    def push(self, wheel: str, torque: float, duration_s: float | None = None) -> dict:
        """An external torque (N m, + = forward) on 'left', 'right' or 'both' wheels (a hand turning them), for
        duration_s of board time (None: until the next push)."""
        req = {"cmd": "push", "wheel": wheel, "torque": torque}
        if duration_s is not None:
            req["duration"] = duration_s
        return self._ok(req)

    def stats(self) -> dict:
        """Link bytes and faults, watchdog resets, control periods, loop timing."""
        return self._ok({"cmd": "stats"})

    def reset(self, what: str = "board") -> dict:
        """'board': power cycle (plant at rest at the origin, firmware restarted); 'pose': zero the ground truth."""
        return self._ok({"cmd": "reset", "what": what})


__all__ = ["VirtualBoard", "SimError", "vboard_command", "startup_error", "die_with_parent",
           "robot_path"]
