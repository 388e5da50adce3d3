# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The command line's plumbing: typed argparse converters for every numeric option, the options every board
command shares (--port, --baud, --config/--node/--strict, --quiet, --json) and what they resolve to (the port, the
baud rate, the robot file: read once per command, robot_config).

Every numeric option's converter gives a finite number inside its range, or argparse's usage error (exit 2)
naming the option, e.g.

    viperdrive drive: error: argument --speed: nan is not a finite number; give a number in (0, 10] m/s

`x <= 0` lets NaN through (every comparison with NaN is false), so the checks here are written the other way
round (`not lo <= x`). Every `add_argument` of a number in the CLI uses one of these; tests/test_cli_fuzz.py walks
the parsers and fails on a numeric option that does not, then tries nan, inf, -inf, 0, a negative value and
1e308 on each.

Not a command (no register/run): discovery skips it.
"""
from __future__ import annotations

import argparse
import difflib
import math
import os

from viperdrive.shared import params as PARAMS

from .. import ranges
from ..errors import BadValue, UserError
from ..motion.scripts import LIMITS
from ..ports import check_url, is_url
from ..robot.config import RobotConfig
from ..robot.files import shorten
from .output import note


class Number:
    """argparse `type=`: text -> float (or int) inside [lo, hi] (open ends with lo_open / hi_open); nonzero
    refuses 0. `describe()` is the range as text for help and errors."""

    numeric = True      # what the fuzz test looks for

    def __init__(self, lo: float | None = None, hi: float | None = None, unit: str = "", *, lo_open: bool = False,
                 hi_open: bool = False, integer: bool = False, nonzero: bool = False):
        self.lo, self.hi, self.unit = lo, hi, unit
        self.lo_open, self.hi_open = lo_open, hi_open
        self.integer = integer
        self.nonzero = nonzero
        # argparse names the type in its own "invalid ... value" message
        self.__name__ = "integer" if integer else "number"

    def range_text(self) -> str:
        """'(0, 10] m/s', '300..12000000', '>= 0 s'."""
        if self.integer and self.lo is not None and self.hi is not None:
            return f"{self.lo}..{self.hi}" + (f" {self.unit}" if self.unit else "")
        return ranges.Range(self.lo, self.hi, self.unit, self.lo_open, self.hi_open).text()

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} in {self.range_text()}{', not 0' if self.nonzero else ''}"

    def __call__(self, text: str):
        s = str(text).strip()
        try:
            value = int(s, 10) if self.integer else float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.describe()}") from None
        if not self.integer and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number; give {self.describe()}")
        ok = True
        if self.lo is not None:
            ok = ok and (value > self.lo if self.lo_open else value >= self.lo)
        if self.hi is not None:
            ok = ok and (value < self.hi if self.hi_open else value <= self.hi)
        if not ok:
            raise argparse.ArgumentTypeError(f"{text} is outside {self.range_text()}")
        if self.nonzero and value == 0:
            raise argparse.ArgumentTypeError(f"{text} is not allowed: give {self.describe()}")
        return value

    def __repr__(self) -> str:
        return f"Number({self.describe()})"


def finite_float(lo: float | None = None, hi: float | None = None, unit: str = "", **kw) -> Number:
    """A finite float in [lo, hi] (lo_open=True / hi_open=True for open ends)."""
    return Number(lo, hi, unit, **kw)


def from_range(r: ranges.Range) -> Number:
    """The argparse type of one of viperdrive.ranges' shared ranges (the dashboard checks the same one)."""
    return Number(r.lo, r.hi, r.unit, lo_open=r.lo_open, hi_open=r.hi_open, nonzero=r.nonzero)


def int_range(lo: int, hi: int, unit: str = "") -> Number:
    """A whole number in lo..hi."""
    return Number(lo, hi, unit, integer=True)


def positive(hi: float, unit: str) -> Number:
    """A finite float in (0, hi]."""
    return Number(0.0, hi, unit, lo_open=True)


# shared by several commands (one definition, one range)
def seconds(hi: float = LIMITS["duration_s"]) -> Number:
    """A duration in (0, hi] s: 0 would end before it starts, infinity never ends."""
    return positive(hi, "s")


BAUD = int_range(300, 12_000_000)


def host_port(text: str) -> str:
    """argparse `type=` for HOST:PORT (port 0..65535, 0: any free one); the text back, checked."""
    host, sep, port = str(text).strip().rpartition(":")
    try:
        n = int(port, 10)
    except ValueError:
        n = -1
    if not sep or not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: write HOST:PORT with a port in 0..65535, e.g. 127.0.0.1:8765")
    return f"{host}:{n}"


def script_options(parser: argparse.ArgumentParser, turn_help: str = "script turn rate in place, rad/s (1.0)") -> None:
    """--side, --speed, --turn-rate of the built-in scripts (drive, log record): the ranges of a script file's own
    values (viperdrive.motion.scripts.LIMITS)."""
    parser.add_argument("--side", type=positive(LIMITS["distance_m"], "m"), default=0.5,
                        help="square side / figure-8 loop diameter, m (0.5)")
    parser.add_argument("--speed", type=positive(LIMITS["speed_m_s"], "m/s"), default=0.2,
                        help="script cruise speed, m/s (0.2)")
    parser.add_argument("--turn-rate", type=positive(LIMITS["rate_rad_s"], "rad/s"), default=1.0, help=turn_help)


# ------------------------------------------------------------------------------------------ board, robot file, output

PORT_ENV = "VIPERDRIVE_PORT"


def add_board_options(parser: argparse.ArgumentParser, data_output: bool = False) -> None:
    """--port, --baud, --config (every board command); --quiet and --json where the output is data."""
    g = parser.add_argument_group("board connection")
    g.add_argument("--port", default=None, metavar="PORT",
                   help="device path, pyserial URL (socket://HOST:PORT, rfc2217://...), 'auto' (the one USB device "
                        "that looks like a MicroPython board) or 'sim' (a private virtual board). Default: "
                        f"${PORT_ENV}, else the robot file's port, else auto")
    g.add_argument("--baud", type=BAUD, default=None, help="serial baud rate (default: the robot file's, else 115200)")
    add_robot_file_options(g)
    add_output_options(parser, data_output)


def add_output_options(parser: argparse.ArgumentParser, data_output: bool = True) -> None:
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or chatter on stderr")
    if data_output:
        parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def add_loop_options(parser: argparse.ArgumentParser) -> None:
    """--realtime PRIO: the host loop's thread on SCHED_FIFO (motion.loop.prepare_loop_thread)."""
    from ..motion.loop import REALTIME_PRIORITY_RANGE
    lo, hi = REALTIME_PRIORITY_RANGE
    parser.add_argument("--realtime", type=int_range(lo, hi), default=None, metavar="PRIO",
                        help=f"run the loop's thread at real-time priority PRIO ({lo}-{hi}, SCHED_FIFO) where the OS "
                             f"allows it (Linux: CAP_SYS_NICE or an rtprio limit); said when it does not. Default: "
                             f"normal priority (docs/host.md, \"Loop\")")


def add_robot_file_options(parser, help_text: str | None = None) -> None:
    """--config ROBOT_FILE, --node NAME and --strict (every command that reads a robot file)."""
    parser.add_argument("--config", default=None, metavar="ROBOT_FILE",
                        help=help_text or "robot file (viperdrive YAML/TOML, a ros2_control or ROS 1 "
                        "diff_drive_controller YAML; docs/host.md). One that exists but cannot be read stops the "
                        "command")
    parser.add_argument("--node", default=None, metavar="NAME",
                        help="the diff-drive controller's node in a robot file with several (name or /ns/name; "
                             "default: the one of type diff_drive_controller/DiffDriveController, else the one with "
                             "diff-drive parameters)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a ROS robot file with keys diff_drive_controller does not declare (default: a "
                             "note)")


def robot_config(args) -> RobotConfig:
    """The robot file of --config (--node, --strict). Anything wrong with it (missing, unreadable, not UTF-8,
    invalid YAML/TOML, a duplicate key, a bad value) is a BadValue naming file, node, key and reason (exit code 7):
    driving on the built-in defaults instead of the file's limits is worse than stopping."""
    cached = getattr(args, "loaded_config", None)
    if cached is not None:
        return cached
    path = getattr(args, "config", None)
    if path is None:
        config = RobotConfig()
    else:
        try:
            config = RobotConfig.load(path, node=getattr(args, "node", None), strict=getattr(args, "strict", False))
        except BadValue as e:
            text = str(e)
            raise BadValue("invalid robot file: " + (text[len("robot file "):] if text.startswith("robot file ")
                                                     else text)) from None
        where = f"robot file {path}" + (f" ({config.node})" if config.node else "")
        if config.ignored:
            note(args, f"{where}: read, no meaning here (ignored): {shorten(config.ignored)}")
        for text in config.notes:
            note(args, f"{where}: note: {text}")
    args.loaded_config = config
    return config


def port_spec(args, config: RobotConfig | None = None) -> str:
    """--port, else $VIPERDRIVE_PORT, else the robot file's port (when the file names one), else auto. A network
    URL without HOST:PORT is a usage error here already (flash and repl hand the URL to mpremote)."""
    spec = _port_spec(args, config)
    if is_url(spec):
        check_url(spec)
    return spec


def _port_spec(args, config: RobotConfig | None) -> str:
    if getattr(args, "port", None):
        return args.port
    if os.environ.get(PORT_ENV):
        return os.environ[PORT_ENV]
    if config is not None and config.source and "port" in config.explicit:
        return config.port
    return "auto"


def baud_of(args, config: RobotConfig) -> int:
    """--baud (checked by argparse), else the robot file's baud."""
    baud = getattr(args, "baud", None)
    if baud is None:
        baud = config.baud
    if not 300 <= baud <= 12_000_000:
        raise UserError(f"--baud {baud} is outside 300..12000000", exit_code=2)
    return int(baud)


# ---- board parameters on the command line (NAME=VALUE), checked against the table before the port is opened ----

PARAM_NAMES = [p[PARAMS.NAME] for p in PARAMS.TABLE]


def param_spec(name: str):
    p = PARAMS.by_name(name)
    if p is None:
        close = difflib.get_close_matches(name, PARAM_NAMES, n=1)
        raise BadValue(f"unknown parameter {name!r}{f' (did you mean {close[0]!r}?)' if close else ''}; "
                       f"known: {', '.join(PARAM_NAMES)}")
    return p


def check_value(name: str, raw) -> float | int:
    """A value from the command line or a file, checked against the table: BadValue names the range."""
    p = param_spec(name)
    rng = f"[{p[PARAMS.MIN]}, {p[PARAMS.MAX]}] {p[PARAMS.UNIT]}"
    try:
        value = float(raw) if not isinstance(raw, (int, float)) or isinstance(raw, bool) else raw
        if isinstance(raw, bool):
            raise ValueError
    except (TypeError, ValueError):
        raise BadValue(f"invalid value for {name}: {raw!r} is not a number (allowed {rng})") from None
    if p[PARAMS.TYPE] != "f":
        if not math.isfinite(value) or value != int(value):
            raise BadValue(f"invalid value for {name}: {raw!r} must be a whole number in {rng}")
        value = int(value)
    reason = PARAMS.check(p[PARAMS.ID], value)
    if reason is not None:
        extra = "" if "outside" in reason else f" (allowed {rng})"
        raise BadValue(f"invalid value for {name}: {reason}{extra}")
    return value


def parse_assignments(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"{item!r}: write NAME=VALUE, e.g. kp=0.05", exit_code=2)
        name, _, raw = item.partition("=")
        out[name.strip()] = check_value(name.strip(), raw.strip())
    return out
