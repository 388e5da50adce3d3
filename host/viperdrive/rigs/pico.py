# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The emulated Pico rig from the host side: stock MicroPython rp2 on an emulated RP2040 (rp2040js, sim/pico/ run by
Node) inside the simulated robot. Its USB CDC port is a socket:// URL (and, with pty=True, a pseudo-terminal) that
pyserial, mpremote and every viperdrive command open like /dev/ttyACM0; its control endpoint speaks the virtual
board's JSON lines (truth, fault, push, reset, stats) plus `pin`.

    with PicoRig(flash="pico.flash") as rig:       # the flash file keeps MicroPython's filesystem across runs
        subprocess.run(["viperdrive", "flash", "--board", "pico", "--mpy", "--port", rig.url])
        rig.truth(); rig.fault("stall", wheel="left", on=True); rig.clock.now()   # chip seconds

The emulator is slower than a real chip (docs/pico-rig.md gives the figures). The rig publishes the chip's time in
its clock file (boardtime.clockfile) and registers its link URL (and pty) with it (boardtime.registry), so a command run
against the rig, from this process or another shell, counts every timeout in chip time (`rig.clock`, or
boardtime.registry.clock_for(url)), and the chip does not run ahead of a host the machine does not run.
"""
from __future__ import annotations

import os
import re
import select
import shutil
import socket
import threading
import time
from pathlib import Path

from ..boardtime import registry
from ..deploy.firmware import firmware_root
from ..errors import EXIT_USAGE, BadValue, UserError
from .virtual import SimError, VirtualBoard, robot_path

UF2_NAME = "micropython-v1.28.0-RPI_PICO.uf2"
CP_UF2_NAME = "circuitpython-10.2.1-raspberry_pi_pico.uf2"
BOOTROM_NAME = "rp2040-bootrom-b1.bin"
# the stock image each firmware runs on the rig (sim/pico/rig.mjs --firmware)
FIRMWARE_IMAGES = {"micropython": UF2_NAME, "circuitpython": CP_UF2_NAME}
IMAGE_ORIGINS = {
    UF2_NAME: "MicroPython v1.28.0 for the Raspberry Pi Pico: micropython.org/download/RPI_PICO (the .uf2)",
    CP_UF2_NAME: "CircuitPython 10.2.1 for the Raspberry Pi Pico: circuitpython.org/board/raspberry_pi_pico (the "
                 "10.2.1 .uf2)",
    BOOTROM_NAME: "the RP2040 B1 mask ROM: github.com/raspberrypi/pico-bootrom-rp2040 (b1.bin of its releases)",
}
START_TIMEOUT_S = 30.0
SENSOR_OPTIONS = ("imu", "i2c", "battery-adc", "estop")


class ImagesMissing(SimError):
    """An emulated-Pico image file is not there; the message names it and where users get it. Exit code 2, as the
    rig's own (docs/pico-rig.md): the command cannot run as asked."""

    exit_code = EXIT_USAGE


def images_dir() -> Path:
    """$VIPERDRIVE_PICO_IMAGES, else the `firmware` folder of a `shared` folder beside the checkout
    (../shared/firmware from the repo root)."""
    env = os.environ.get("VIPERDRIVE_PICO_IMAGES")
    if env:
        return Path(env)
    return firmware_root().parent / "shared" / "firmware"


def find_images(directory: str | os.PathLike | None = None, firmware: str = "micropython") -> dict[str, Path]:
    """{"uf2": path, "bootrom": path}; ImagesMissing naming the first missing file and where users get it."""
    d = Path(directory) if directory is not None else images_dir()
    if firmware not in FIRMWARE_IMAGES:
        raise BadValue(f"firmware must be one of {', '.join(FIRMWARE_IMAGES)}, not {firmware!r}")
    out = {}
    for key, name in (("uf2", FIRMWARE_IMAGES[firmware]), ("bootrom", BOOTROM_NAME)):
        p = d / name
        if not p.is_file():
            raise ImagesMissing(f"emulated Pico image {p} not found: {IMAGE_ORIGINS[name]}; put it there or point "
                                f"VIPERDRIVE_PICO_IMAGES at the folder holding it")
        out[key] = p
    return out


def rig_dir() -> Path:
    return firmware_root() / "sim" / "pico"


def node_exe() -> str:
    exe = shutil.which("node")
    if exe is None:
        raise SimError("the emulated Pico needs Node.js (`node` on PATH; Debian: apt-get install nodejs npm)")
    return exe


def rig_command(*, flash: str | os.PathLike | None, listen: str = "127.0.0.1:0", control: str = "127.0.0.1:0",
                robot: str | os.PathLike | None = None, board: str | os.PathLike | None = None,
                seed: int | None = None, hold_repl_pin: bool = False, max_time_ratio: float | None = None,
                pio: str | None = None, images: str | os.PathLike | None = None, quiet: bool = True,
                sensors: dict[str, str] | None = None, clock_path: str | os.PathLike | None = None,
                firmware: str = "micropython", fat: str | os.PathLike | None = None,
                console: str | None = None, uf2: str | os.PathLike | None = None) -> list[str]:
    """The node command line of the rig (sim/pico/rig.mjs) with these options. sensors: the rig's sensor wiring
    options by name without the dashes ({"imu": "mpu6050@0x68", "i2c": "0:16:17", "battery-adc": "26:4.03",
    "estop": "22"}; docs/pico-rig.md, "Sensors")."""
    d = rig_dir()
    if not (d / "node_modules" / "rp2040js").is_dir():
        raise SimError(f"rp2040js is not installed in {d}: run `make setup` (npm ci there)")
    cmd = [node_exe(), str(d / "rig.mjs"), "--listen", listen, "--control", control,
           "--images", str(Path(images) if images is not None else images_dir())]
    if flash is not None:
        cmd += ["--flash", str(Path(flash).resolve())]
    if robot is not None:
        cmd += ["--robot", str(robot_path(robot))]
    if board is not None:
        cmd += ["--board", str(Path(board).resolve())]
    if seed is not None:
        cmd += ["--seed", str(int(seed))]
    if hold_repl_pin:
        cmd.append("--hold-repl-pin")
    if max_time_ratio is not None:
        cmd += ["--max-speed", repr(float(max_time_ratio))]
    if pio is not None:
        cmd += ["--pio", pio]
    for name, value in (sensors or {}).items():
        if name not in SENSOR_OPTIONS:
            raise SimError(f"unknown rig sensor option {name!r} (one of {', '.join(SENSOR_OPTIONS)})")
        cmd += ["--" + name, str(value)]
    if clock_path is not None:
        cmd += ["--clock", str(Path(clock_path).resolve())]
    if firmware != "micropython":
        cmd += ["--firmware", firmware]
    if fat is not None:
        cmd += ["--fat", str(Path(fat).resolve())]
    if console is not None:
        cmd += ["--console", console]
    if uf2 is not None:
        cmd += ["--uf2", str(Path(uf2).resolve())]
    if quiet:
        cmd.append("--quiet")
    return cmd


def check_flash_path(flash: str | os.PathLike) -> Path:
    """The flash image file the rig keeps the chip's flash in: a regular file we may write, or a new one in a
    folder we may write to. BadValue naming the path otherwise (a missing folder, /proc, a read-only filesystem:
    the rig started, announced its port, and quit 1.4 s later with exit 0 when it first saved)."""
    p = Path(flash)
    if p.exists():
        if not p.is_file():
            raise BadValue(f"--flash {p}: not a file (the rig keeps the chip's 2 MiB flash in it)")
        if not os.access(p, os.R_OK | os.W_OK):
            raise BadValue(f"--flash {p}: cannot be read and written (permissions)")
        return p
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise BadValue(f"--flash {p}: the folder {parent} does not exist")
    probe = parent / f".{p.name}.{os.getpid()}.probe"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise BadValue(f"--flash {p}: cannot create a file in {parent} ({e.strerror or e})") from None
    return p


def control_request(address: str, request: dict, timeout_s: float = 2.0) -> dict:
    """One JSON-lines request to a rig's (or virtual board's) control endpoint at HOST:PORT (timeout_s: host
    seconds to connect and for the reply)."""
    import json
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as s:
        s.sendall((json.dumps(request) + "\n").encode())
        f = s.makefile("rb")
        line = f.readline()
    if not line:
        raise ConnectionError("the rig closed the control connection")
    return json.loads(line)


# ---------------------------------------------------------------------------------------------- pty relay

class PtyRelay:
    """A pseudo-terminal whose other end is the rig's socket:// port: programs that only take a device path
    (or want one) open `path` like /dev/ttyACM0."""

    def __init__(self, url: str):
        import pty
        import tty
        m = re.match(r"socket://([^:]+):(\d+)", url)
        if not m:
            raise SimError(f"cannot relay {url}: not a socket:// URL")
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.master, self.slave = pty.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self._stop = False
        self.thread = threading.Thread(target=self._run, name="viperdrive-pico-pty", daemon=True)
        self.thread.start()

    def _run(self):
        m, s = self.master, self.sock
        while not self._stop:
            try:
                watched: list[int | socket.socket] = [m, s]
                r, _, _ = select.select(watched, [], [], 0.2)
                if m in r:
                    data = os.read(m, 4096)
                    if data:
                        s.sendall(data)
                if s in r:
                    data = s.recv(4096)
                    if not data:
                        return
                    os.write(m, data)
            except OSError:
                if self._stop:
                    return
                time.sleep(0.01)        # EIO while no program has the pty open: keep relaying

    def close(self):
        self._stop = True
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
        self.sock.close()


# ---------------------------------------------------------------------------------------------- the rig

class PicoRig(VirtualBoard):
    """An emulated Pico rig process. Context manager; `url` is its USB CDC port (socket://), `pty` a
    pseudo-terminal relaying it (pty=True), control() its endpoint, `clock` its chip time.

    flash: the flash image file (2 MiB; kept across power cycles and runs; None: a fresh one in a temporary
    folder, removed on close); a missing file starts MicroPython on a blank filesystem. robot: a robot file or
    dict (default sim/robots/pico_mdd10.json); board: the board config the rig wires (default mcu/boards/pico.json);
    hold_repl_pin: the board's repl_pin held at its active level from power-on (release: pin(..., None));
    max_time_ratio: chip seconds per wall second at most (default 1: never faster than a real chip); sensors: the
    sensors' wiring (rig_command), default the board config's, else the rig's defaults (docs/pico-rig.md).
    """

    ERROR_PREFIX = "pico-rig: error:"
    NAME = "emulated Pico"

    def __init__(self, flash: str | os.PathLike | None = None, robot: str | os.PathLike | dict | None = None,
                 board: str | os.PathLike | None = None, seed: int | None = None, hold_repl_pin: bool = False,
                 max_time_ratio: float | None = None, pio: str | None = None, pty: bool = False,
                 listen: str | None = None, control: str | None = None, images: str | os.PathLike | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, sensors: dict[str, str] | None = None,
                 firmware: str = "micropython", drive: bytes | None = None, uf2: str | os.PathLike | None = None):
        super().__init__(robot=robot, listen=listen, control=control, board=board, seed=seed,
                         start_timeout_s=start_timeout_s)
        self.flash = flash
        self.hold_repl_pin = hold_repl_pin
        self.max_time_ratio = max_time_ratio
        self.pio = pio
        self.want_pty = pty
        self.images = images
        self.sensors = dict(sensors or {})
        self.pty: str | None = None
        self._relay: PtyRelay | None = None
        # CircuitPython: its console (the REPL) is console_url, the link the data channel (url); drive: the
        # CIRCUITPY drive's image (deploy.fatimage) a fresh flash starts with, as a user's copy left it
        self.firmware = firmware
        self.drive = drive
        # a MicroPython image written over the flash at every start, as a drag onto the RPI-RP2 drive writes it
        # (the filesystem stays): the image with the firmware frozen in (tools/build_uf2.py)
        self.uf2 = uf2
        if uf2 is not None and not Path(uf2).is_file():
            what = "is not a regular file" if os.path.exists(uf2) else "is not there"
            raise ImagesMissing(f"the image {uf2} {what} (make uf2 builds viperdrive's)")
        find_images(images, firmware)   # a missing image is an error before anything starts
        if flash is not None:
            check_flash_path(flash)     # the rig saves the chip's flash there: refused before anything starts

    def _command(self, robot) -> list[str]:
        assert self._tmp is not None        # made by start()
        flash = self.flash if self.flash is not None else Path(self._tmp.name) / "pico.flash"
        self.flash_path = Path(flash)
        fat = None
        if self.drive is not None:
            fat = Path(self._tmp.name) / "circuitpy.img"
            fat.write_bytes(self.drive)
        return rig_command(flash=flash, listen=self.listen, control=self.control_address, robot=robot,
                           board=self.board, seed=self.seed, hold_repl_pin=self.hold_repl_pin,
                           max_time_ratio=self.max_time_ratio, pio=self.pio, images=self.images, sensors=self.sensors,
                           clock_path=self.clock_path, firmware=self.firmware, fat=fat,
                           console="127.0.0.1:0" if self.firmware == "circuitpython" else None, uf2=self.uf2)

    KIND = "pico"

    def _started(self) -> None:
        super()._started()
        if self.want_pty:
            assert self.url is not None and self.proc is not None
            self._relay = PtyRelay(self.url)
            self.pty = self._relay.path
            registry.register(self.pty, f"{self.control_host}:{self.control_port}", self.clock_path, self.proc.pid,
                              kind=self.KIND)

    def _stopping(self) -> None:
        super()._stopping()
        if self._relay is not None:
            registry.unregister(self._relay.path)
            self._relay.close()
            self._relay = None

    def pin(self, pin: int, level: int | None) -> dict:
        """Drive an input pin from outside (0/1), or release it (None)."""
        return self._ok({"cmd": "pin", "pin": pin, "level": level})


def require_images_or_skip(skip, firmware: str = "micropython") -> dict[str, Path]:
    """For tests: the images, or `skip(reason)` outside CI (one line: which file, where users get it); under
    CI=true a missing image is a failure (UserError)."""
    try:
        return find_images(firmware=firmware)
    except ImagesMissing as e:
        if os.environ.get("CI", "").lower() == "true":
            raise UserError(f"CI=true and {e}") from None
        skip(str(e))
        raise


__all__ = ["PicoRig", "PtyRelay", "ImagesMissing", "find_images", "images_dir", "rig_command", "control_request",
           "check_flash_path",
           "require_images_or_skip"]
