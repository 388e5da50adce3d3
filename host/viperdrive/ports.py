# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Port resolution for every board command: what `--port` means, and the one place a port name becomes a Board.

    device path        /dev/ttyACM0, COM3: opened as is (a missing one is an error listing the ports that exist)
    pyserial URL       socket://host:port, rfc2217://host:port, loop://: opened as is
    auto               the single USB serial device that looks like a MicroPython board (USB vendor table below);
                       several or none is an error listing what was found
    sim                a private virtual board (the real firmware on the MicroPython unix port) for the command's
                       lifetime

    with open_board("sim", config=config) as board:    # a Board that owns its private virtual board
        board.activate()

    with resolve_port("auto") as port:      # -> ResolvedPort: .url for Board/Link, .virtual_board for "sim"
        board = Board(port.url, clock=port.clock)

list_serial_ports() describes every serial port with its USB vendor/product and a guess of the board type.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .boardtime.registry import clock_for
from .errors import PortError, UserError
from .timebase import HOST_CLOCK, Clock

if TYPE_CHECKING:
    from .board.board import Board
    from .rigs.virtual import VirtualBoard
    from .robot.config import RobotConfig

# USB vendor id -> (vendor, kind). kind "board": the MCU's own USB (a MicroPython/CircuitPython board);
# "bridge": a USB-UART bridge chip, what ESP32 dev kits and many STM32/ESP8266 boards carry.
USB_VENDORS = {
    0x2E8A: ("Raspberry Pi", "board"),
    0x303A: ("Espressif", "board"),
    0x0483: ("STMicroelectronics", "board"),
    0xF055: ("MicroPython (pyboard)", "board"),
    0x239A: ("Adafruit", "board"),
    0x10C4: ("Silicon Labs CP210x USB-UART bridge", "bridge"),
    0x1A86: ("WCH CH340/CH9102 USB-UART bridge", "bridge"),
    0x0403: ("FTDI USB-UART bridge", "bridge"),
}

# (vid, pid) -> what is almost certainly on the other end
USB_PRODUCTS = {
    (0x2E8A, 0x0005): "Raspberry Pi Pico / RP2040 or RP2350 running MicroPython",
    (0x2E8A, 0x000A): "Raspberry Pi RP2040 (Pico SDK CDC)",
    (0x2E8A, 0x000F): "Raspberry Pi RP2350 (BOOTSEL mode: flash MicroPython first)",
    (0x2E8A, 0x0003): "Raspberry Pi RP2040 (BOOTSEL mode: flash MicroPython first)",
    (0x303A, 0x1001): "ESP32-S3/C3/C6 (built-in USB serial/JTAG)",
    (0x303A, 0x4001): "ESP32-S2/S3 running MicroPython (TinyUSB)",
    (0x0483, 0x5740): "STM32 (USB CDC virtual COM port)",
    (0xF055, 0x9800): "pyboard (STM32) running MicroPython",
    (0xF055, 0x9802): "pyboard (STM32) running MicroPython",
    (0x10C4, 0xEA60): "CP2102/CP2104 bridge: ESP32 dev kit or a UART-wired board",
    (0x1A86, 0x7523): "CH340 bridge: ESP32/ESP8266 dev kit or a UART-wired board",
    (0x1A86, 0x55D4): "CH9102 bridge: ESP32 dev kit or a UART-wired board",
    (0x0403, 0x6001): "FT232R bridge: a UART-wired board",
    (0x0403, 0x6010): "FT2232 bridge: a UART-wired board",
    (0x0403, 0x6014): "FT232H bridge: a UART-wired board",
    (0x0403, 0x6015): "FT-X bridge: a UART-wired board",
}


@dataclass(frozen=True)
class SerialPortInfo:
    device: str
    description: str = ""
    vid: int | None = None
    pid: int | None = None
    manufacturer: str | None = None
    product: str | None = None
    serial_number: str | None = None

    @property
    def usb_id(self) -> str | None:
        return None if self.vid is None else f"{self.vid:04x}:{self.pid or 0:04x}"

    @property
    def vendor(self) -> str | None:
        if self.vid is None:
            return None
        known = USB_VENDORS.get(self.vid)
        return known[0] if known else (self.manufacturer or "unknown vendor")

    @property
    def looks_like_board(self) -> bool:
        """A USB serial device from the vendor table (MCU USB or a common USB-UART bridge)."""
        if self.vid not in USB_VENDORS:
            return False
        # the RP2 boot ROM is a mass-storage device, but a serial port with its id is not MicroPython either
        return USB_PRODUCTS.get((self.vid, self.pid or 0), "").find("BOOTSEL") < 0

    @property
    def guess(self) -> str:
        """A human guess of what is on this port."""
        if self.vid is None:
            return "not USB (built-in UART or virtual)"
        exact = USB_PRODUCTS.get((self.vid, self.pid or 0))
        if exact:
            return exact
        known = USB_VENDORS.get(self.vid)
        if known is None:
            return "unknown USB serial device"
        vendor, kind = known
        if self.vid == 0x239A:
            return "Adafruit board (CircuitPython or MicroPython)"
        if kind == "board":
            return f"{vendor} board"
        return f"{vendor}: a dev kit or a UART-wired board"

    def to_dict(self) -> dict:
        return {"device": self.device, "usb_id": self.usb_id, "vendor": self.vendor,
                "manufacturer": self.manufacturer, "product": self.product, "serial_number": self.serial_number,
                "description": self.description, "guess": self.guess, "looks_like_board": self.looks_like_board}

    def one_line(self) -> str:
        usb = f" [{self.usb_id}]" if self.usb_id else ""
        return f"{self.device}{usb} {self.guess}"


def list_serial_ports() -> list[SerialPortInfo]:
    """Every serial port the OS reports, sorted by device name."""
    from serial.tools import list_ports
    out = []
    for p in list_ports.comports():
        out.append(SerialPortInfo(device=p.device, description=p.description or "", vid=p.vid, pid=p.pid,
                                  manufacturer=p.manufacturer, product=p.product, serial_number=p.serial_number))
    return sorted(out, key=lambda p: p.device)


def describe_ports(ports: list[SerialPortInfo]) -> str:
    if not ports:
        return "none (is the board plugged in? `dmesg | tail` shows what the kernel saw)"
    return "; ".join(p.one_line() for p in ports)


def choose_auto(ports: list[SerialPortInfo]) -> SerialPortInfo:
    """The one port that looks like a MicroPython board, or PortError listing what was found."""
    boards = [p for p in ports if p.looks_like_board]
    if len(boards) == 1:
        return boards[0]
    if not boards:
        raise PortError(f"--port auto: no USB serial device looks like a MicroPython board; serial ports present: "
                        f"{describe_ports(ports)}. Plug the board in, or name the port with --port")
    raise PortError(f"--port auto: {len(boards)} devices look like a MicroPython board: {describe_ports(boards)}; "
                    f"pick one with --port DEVICE")


@dataclass
class ResolvedPort:
    """What a --port value turned into: url (for Board/Link), for "sim" the private virtual board, and the board's
    time (`clock`: the host's for a real board; a virtual board's or an emulated Pico's, found in
    boardtime.registry)."""
    spec: str
    url: str
    description: str
    virtual_board: VirtualBoard | None = None
    clock: Clock = HOST_CLOCK

    def close(self) -> None:
        vb, self.virtual_board = self.virtual_board, None
        if vb is not None:
            vb.close()

    def __enter__(self) -> ResolvedPort:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def is_url(spec: str) -> bool:
    return "://" in spec


NETWORK_SCHEMES = ("socket", "rfc2217")      # pyserial URLs that name HOST:PORT


def check_url(spec: str) -> None:
    """A socket:// or rfc2217:// URL must name a host and a port 1..65535 (pyserial itself fails with a Python
    comparison error on a missing port); UserError (exit 2) otherwise."""
    from urllib.parse import urlsplit
    scheme = spec.split("://", 1)[0].lower()
    if scheme not in NETWORK_SCHEMES:
        return
    try:
        parts = urlsplit(spec)
        port = parts.port
    except ValueError as e:          # a port that is not a number, or outside 0..65535
        raise UserError(f"--port {spec}: {e}; write {scheme}://HOST:PORT, e.g. {scheme}://127.0.0.1:5799",
                        exit_code=2) from None
    if not parts.hostname or port is None or not 1 <= port <= 65535:
        missing = "host" if not parts.hostname else "port (1..65535)"
        raise UserError(f"--port {spec}: the URL has no {missing}; write {scheme}://HOST:PORT, e.g. "
                        f"{scheme}://127.0.0.1:5799", exit_code=2)


def resolve_port(spec: str | None, baud: int = 115200, sim_options: dict | None = None,
                 ports: list[SerialPortInfo] | None = None) -> ResolvedPort:
    """Turn a --port value into something to open. `ports` (default: the OS's list) is consulted for "auto" and
    for the error message of a missing device."""
    if spec is None or spec == "":
        spec = "auto"
    if spec == "sim":
        from .rigs.virtual import VirtualBoard
        vb = VirtualBoard(baud=baud, **(sim_options or {}))
        vb.start()
        assert vb.url is not None       # start() returns once the board listens
        return ResolvedPort(spec, vb.url, f"virtual board {vb.url}", vb, vb.clock)
    if spec == "auto":
        found = choose_auto(list_serial_ports() if ports is None else ports)
        return ResolvedPort(spec, found.device, found.one_line())
    if is_url(spec):
        check_url(spec)
        return ResolvedPort(spec, spec, spec, clock=clock_for(spec))
    if os.name == "posix" and not os.path.exists(spec):
        present = list_serial_ports() if ports is None else ports
        raise PortError(f"port {spec} does not exist; serial ports present: {describe_ports(present)}")
    return ResolvedPort(spec, spec, spec, clock=clock_for(spec))


def open_board(spec: str | None = None, baud: int | None = None, config: RobotConfig | None = None,
               sim_options: dict | None = None, **options) -> Board:
    """A Board for a --port value (None: the robot file's port, else "auto"): a device, a URL, "auto", or "sim", a
    private virtual board started now and stopped when the Board is cleaned up (its `owns`). The Board is not
    configured yet (`with open_board(...) as b:` or b.configure()). options: Board's (counts_per_rev, ...)."""
    from .board.board import Board
    from .robot.config import RobotConfig
    config = config if config is not None else RobotConfig()
    baud = int(baud if baud is not None else config.baud)
    port = resolve_port(spec if spec is not None else config.port, baud, sim_options)
    try:
        options.setdefault("clock", port.clock)
        return Board(port.url, baud=baud, config=config, owns=port, **options)
    except BaseException:
        port.close()
        raise
