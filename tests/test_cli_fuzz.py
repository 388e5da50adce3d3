# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Every numeric option of every command, found by walking the argparse parsers (a new option is covered without
touching this file), with nan, inf, -inf, 0, a negative value and 1e308: each must be a usage error naming the
option (exit 2, no traceback) or a bounded run that leaves the board disabled.

The usage errors are checked in this process through the CLI's own entry point (viperdrive.cli.main): argparse
refuses them before any port is opened, so ~250 cases take well under a second. The few values a parser accepts
run as real subprocesses against a shared virtual board, bounded by BOUNDED below.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import signal
import subprocess
import time

import pytest
from cli_helpers import VIPERDRIVE, run_cli

from viperdrive.cli import build_parser, main
from viperdrive.cli.options import Number

pytestmark = pytest.mark.board

VALUES = ("nan", "inf", "-inf", "0", "-1", "1e308")
NOWHERE = "/dev/ttyNOPE-fuzz"        # a port that does not exist: a value that slipped through fails fast (exit 3)


def _parsers(parser=None, path=()):
    """(command path, parser) for the top level and every subcommand, depth first."""
    parser = parser or build_parser()
    yield list(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numeric_options():
    """(path, option string, action) of every option that takes a number."""
    out = []
    for path, parser in _parsers():
        for a in parser._actions:
            if not a.option_strings or a.nargs == 0:
                continue
            if isinstance(a.type, Number) or a.type in (int, float) or (a.type is None and _is_number(a.default)):
                out.append((path, a.option_strings[-1], a))
    return out


def _filler(parser) -> list[str]:
    """Placeholders for a parser's positionals and required options (argparse does not look into them)."""
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction) or a.nargs == 0:
            continue
        if not a.option_strings:
            out.append("kp=0.05" if a.dest == "assignments" else "kp" if a.dest == "names" else
                       "0.1" if isinstance(a.type, Number) else "x.mcap")
        elif a.required:
            out += [a.option_strings[-1], "0.1" if isinstance(a.type, Number) else "x.yaml"]
    return out


_TOP = build_parser()        # the parser viperdrive.cli.main builds, once (building it costs ~20 ms)
_BY_PATH = {tuple(p): parser for p, parser in _parsers(_TOP)}


def _parser_of(path):
    return _BY_PATH[tuple(path)]


def _parse(argv) -> tuple[int | None, str]:
    """What main() does first: the top-level parser on argv. -> (exit code, or None when it parsed; stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            _TOP.parse_args(argv)
            return None, err.getvalue()
        except SystemExit as e:
            return e.code, err.getvalue()


def _main(argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, err.getvalue()


def test_the_walk_finds_the_options_of_the_issue():
    found = {(" ".join(p), o) for p, o, _ in numeric_options()}
    for case in [("drive", "--speed"), ("drive", "--side"), ("tune", "--duration"), ("tune", "--relay-time"),
                 ("calibrate wheelbase", "--time"), ("calibrate feedforward", "--ramp-time"),
                 ("log record", "--duration"), ("info", "--baud"), ("ros2", "--domain-id"), ("sim", "--seed"),
                 ("fuse", "--uncertainty-limit"), ("flash", "--verify-timeout")]:
        assert case in found, case
    assert len(found) >= 40


def test_every_numeric_option_has_a_bounded_type():
    """type=float or type=int takes nan, inf and 1e308 (float) or any size (int): cli/options.py has the types."""
    loose = [(" ".join(p), o, getattr(a.type, "__name__", a.type)) for p, o, a in numeric_options()
             if not isinstance(a.type, Number)]
    assert loose == [], "use viperdrive.cli.options (finite_float, int_range, seconds, ...) for these"


def _cases():
    for path, option, _ in numeric_options():
        for value in VALUES:
            yield path, option, value


ACCEPTED = []          # (path, option, value) the parsers let through: run against the board below


def test_hostile_numbers_are_usage_errors_naming_the_option():
    refused = 0
    for path, option, value in _cases():
        argv = [*path, *_filler(_parser_of(path)), f"{option}={value}"]
        if not path or path[0] not in ("sim", "fuse", "ports"):
            argv += ["--port", NOWHERE]                     # those three have no --port
        rc, text = _parse(argv)
        if rc is None:
            ACCEPTED.append((path, option, value))
            continue
        assert rc == 2, (argv, rc, text)
        assert f"error: argument {option}" in text or f"/{option}: " in text, (argv, text)
        assert "Traceback" not in text, (argv, text)
        refused += 1
    # what each accepted value is: zero where zero is a valid id or seed, a negative step (backwards)
    # (--sensors 0: no sensor records)
    assert sorted((" ".join(p), o, v) for p, o, v in ACCEPTED) == [
        ("log record", "--sensors", "0"), ("monitor", "--sensors", "0"), ("move arc", "--angle", "-1"),
        ("move arc", "--radius", "-1"), ("ros2", "--domain-id", "0"),
        ("sim", "--seed", "0"), ("tune", "--step", "-1")]
    assert refused >= 6 * 40 - len(ACCEPTED)
    # and through the entry point itself, as a user's shell runs it
    rc, text = _main(["drive", "--script", "square", "--side", "nan", "--port", NOWHERE])
    assert rc == 2 and "viperdrive drive: error: argument --side: nan is not a finite number" in text, text


# how to bound a run of each command whose parser accepted a value (the fuzzed option comes last and wins)
BOUNDED = {
    "tune": ["--duration", "0.3", "--png", "{tmp}/fuzz.png"],
    # a 20 Hz loop: at the default 100 Hz a loaded CI machine can miss 6 replies in a row (a lost link, exit 8)
    "ros2": ["--duration", "1", "--config", "{tmp}/slow.yaml"],
    "log record": ["{tmp}/fuzz.mcap", "--duration", "0.5", "--quiet"],
    "monitor": ["--duration", "0.5"],
    # a short arc (a negative radius drives it backwards, a negative angle turns right)
    "move arc": ["--radius", "0.1", "--angle", "5", "--encoders"],
}


def test_accepted_values_run_bounded_and_leave_the_board_disabled(sim, tmp_path):
    if not ACCEPTED:
        test_hostile_numbers_are_usage_errors_naming_the_option()
    (tmp_path / "slow.yaml").write_text("update_rate: 20\n")
    for path, option, value in ACCEPTED:
        name = " ".join(path)
        if name == "sim":
            proc = subprocess.Popen([VIPERDRIVE, "sim", f"{option}={value}"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            line = proc.stdout.readline()
            assert line.startswith("listening on socket://"), (line, proc.stderr.read() if proc.poll() else "")
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
            assert proc.returncode in (0, 130, -signal.SIGINT) and "Traceback" not in err, err
            continue
        assert name in BOUNDED, f"{name} {option}={value} is accepted: add how to bound a run of {name} to BOUNDED"
        base = [a.replace("{tmp}", str(tmp_path)) for a in BOUNDED[name]]
        env = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"} if name == "ros2" else None
        t0 = time.monotonic()
        r = run_cli(*path, *base, "--port", sim.url, f"{option}={value}", timeout=60, env=env)
        took = time.monotonic() - t0
        assert "Traceback" not in r.stderr, r.stderr
        assert r.returncode == 0, (name, option, value, r.stderr[-2000:])
        d = json.loads(run_cli("info", "--port", sim.url, "--json").stdout)
        assert "ENABLED" not in d["status_names"] and "PARAMS_UNSAVED" not in d["flags"], d["status_names"]
        print(f"{name} {option}={value}: bounded run, exit 0 in {took:.1f} s, board disabled")


# numbers inside text values: NAME=VALUE, measurements, HOST:PORT. All refused before a port is opened (a value that
# slipped through would meet NOWHERE and exit 3 instead)
TEXT_CASES = [
    (["tune", "--set", "kp=nan"], 7, "invalid value for kp"),
    (["params", "set", "kp=inf"], 7, "invalid value for kp"),
    (["params", "set", "deadman_ms=1e308"], 7, "invalid value for deadman_ms"),
    (["calibrate", "wheelbase", "--measured", "nan,360", "--yes"], 7, "--measured: must be finite"),
    (["calibrate", "umbmark", "--runs", "1", "--measured", "inf,0;0,0", "--yes"], 7, "must be finite"),
    (["monitor", "--foxglove", "127.0.0.1:nan"], 2, "argument --foxglove: '127.0.0.1:nan': write HOST:PORT"),
    (["monitor", "--foxglove", "127.0.0.1:1e308"], 2, "argument --foxglove"),
]


@pytest.mark.parametrize("argv,code,text", TEXT_CASES, ids=[" ".join(a) for a, _, _ in TEXT_CASES])
def test_numbers_inside_text_values_are_refused_before_the_board(argv, code, text):
    rc, err = _main([*argv, "--port", NOWHERE])
    assert "Traceback" not in err, err
    assert rc == code and text in err, (rc, err)
