# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Files that ate the machine (hardening round two, item 4): given as a robot file or an EKF file, each of these took
a command down (24 GB of /dev/zero until the OOM killer, a YAML alias bomb at 3.5 GB, a FIFO blocking forever, a
RecursionError traceback for deep nesting, 10.9 s to parse 1 MB). Each now ends with exit 7, the file named, no
traceback, under 200 MB of memory, for about the CPU of one more start of the CLI: the one reader
(viperdrive/robot/files.py) refuses what is not a regular file or is larger than a robot file can be, and the
YAML's shape is measured (depth, aliases expanded, recursion) before it is walked."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli_helpers import VIPERDRIVE

from viperdrive.robot.files import MAX_BYTES, check_tree, read_text, shorten

pytestmark = pytest.mark.unit

# a child that runs one command and reports its exit code, stderr, CPU time and peak memory (RUSAGE_CHILDREN of a
# fresh process: only that command). CPU time, not the wall clock: a busy machine stretches the wall clock of every
# command, not the work one does; and it is compared with the CPU time of `viperdrive --version` in the same run, so
# a slow machine stretches both sides (the wall-clock figures are printed by bench/bench_hostile_files.py)
PROBE = r"""
import json, resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": r.returncode, "err": r.stderr[-2000:], "out": r.stdout[-2000:], "s": time.monotonic() - t,
                  "cpu_s": u.ru_utime + u.ru_stime, "rss_mb": u.ru_maxrss / 1024}))
"""


def probe(*argv) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, VIPERDRIVE, *map(str, argv)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _alias_bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"wheel_separation: *a{levels - 1}")
    return "\n".join(lines) + "\n"


CASES = {
    "/dev/zero": lambda tmp: "/dev/zero",
    "a FIFO": lambda tmp: (os.mkfifo(tmp / "fifo.yaml"), tmp / "fifo.yaml")[1],
    "a directory": lambda tmp: (os.mkdir(tmp / "dir.yaml"), tmp / "dir.yaml")[1],
    "an alias bomb": lambda tmp: (tmp / "bomb.yaml").write_text(_alias_bomb()) and tmp / "bomb.yaml",
    "lists nested 100,000 deep": lambda tmp: (tmp / "deep.yaml").write_text(
        "a: " + "[" * 100_000 + "]" * 100_000 + "\n") and tmp / "deep.yaml",
    "mappings nested 3000 deep": lambda tmp: (tmp / "deepmap.yaml").write_text(
        "a: " + "{b: " * 3000 + "1" + "}" * 3000 + "\n") and tmp / "deepmap.yaml",
    "a self-referencing alias": lambda tmp: (tmp / "self.yaml").write_text("a: &x [1, *x]\n") and tmp / "self.yaml",
    "a 50 MB file": lambda tmp: (tmp / "big.yaml").write_bytes(b"# padding\n" * 5_000_000) and tmp / "big.yaml",
    "TOML nested 100,000 deep": lambda tmp: (tmp / "deep.toml").write_text(
        "a = " + "[" * 100_000 + "]" * 100_000 + "\n") and tmp / "deep.toml",
}


# an EKF file is YAML (robot_localization reads nothing else): the TOML case is a robot file's only
HOSTILE = [(as_, what) for as_ in ("robot", "ekf") for what in sorted(CASES) if not (as_ == "ekf" and "TOML" in what)]


def run_hostile(tmp_path, as_: str, what: str) -> tuple[str, dict]:
    """Give the command `as_` names (check-config for a robot file, fuse for an EKF file) the hostile file `what`."""
    path = CASES[what](tmp_path)
    if as_ == "robot":
        r = probe("check-config", path)
    else:
        rec = tmp_path / "none.mcap"
        rec.write_bytes(b"")
        r = probe("fuse", rec, "--config", path, "--out", tmp_path / "o.csv")
    return str(path), r


@pytest.mark.parametrize("as_, what", HOSTILE)
def test_a_hostile_file_ends_promptly_with_exit_7(tmp_path, as_, what):
    path, r = run_hostile(tmp_path, as_, what)
    print(f"{as_} file, {what}: exit {r['rc']} in {r['s']:.2f} s, {r['rss_mb']:.0f} MB: {r['err'].strip()[:200]}")
    assert r["rc"] == 7, r
    assert "Traceback" not in r["err"] and path in r["err"], r["err"]
    # the process's own start (Python, the CLI's imports) is most of it: the file costs less than two more starts
    assert r["cpu_s"] < 3.0 * _startup_cpu_s(), (r, _startup_cpu_s())
    assert r["rss_mb"] < 200, r


# the other files a user names: a drive script, a board config, a CIRCUITPY drive's boot_out.txt (hardening round
# three): the same reader, the same refusals
OTHER = ("/dev/zero", "a FIFO", "a directory", "a 50 MB file")


def _drive_with_boot_out(tmp, make) -> str:
    drive = tmp / "CIRCUITPY"
    drive.mkdir()
    mark = drive / "boot_out.txt"
    if make == "/dev/zero":
        mark.symlink_to("/dev/zero")
    elif make == "a FIFO":
        os.mkfifo(mark)
    elif make == "a directory":
        mark.mkdir()
    else:
        mark.write_bytes(b"Adafruit CircuitPython 10.2.1\n" * 2_000_000)
    return str(drive)


@pytest.mark.parametrize("as_", ["drive --script", "flash --board", "flash --drive (its boot_out.txt)"])
@pytest.mark.parametrize("what", OTHER)
def test_every_other_file_a_user_names_ends_promptly_with_exit_7(tmp_path, as_, what):
    if as_ == "flash --drive (its boot_out.txt)":
        drive = _drive_with_boot_out(tmp_path, what)
        r = probe("flash", "--board", "circuitpython_pico", "--drive", drive)
        named = drive
    else:
        path = str(CASES[what](tmp_path))
        named = path
        if as_ == "drive --script":
            # the script is read before any board is opened: a port that is never reached
            r = probe("drive", "--script", path, "--port", "socket://127.0.0.1:9")
        else:
            r = probe("flash", "--board", path, "--dry-run", "--port", "loop://")
    print(f"{as_}, {what}: exit {r['rc']} in {r['s']:.2f} s, {r['rss_mb']:.0f} MB: {r['err'].strip()[:200]}")
    assert r["rc"] == 7, r
    assert "Traceback" not in r["err"] and named in r["err"], r["err"]
    assert "not found" not in r["err"]
    assert r["cpu_s"] < 3.0 * _startup_cpu_s(), (r, _startup_cpu_s())
    assert r["rss_mb"] < 200, r


_STARTUP: list[float] = []


def _startup_cpu_s() -> float:
    """The CPU time of `viperdrive --version` here: the floor of any command's cost on this machine (the least of
    three, the one least disturbed)."""
    if not _STARTUP:
        _STARTUP.append(min(probe("--version")["cpu_s"] for _ in range(3)))
    return _STARTUP[0]


def test_the_reader_refuses_what_is_not_a_file_or_too_large(tmp_path):
    from viperdrive.errors import BadValue
    with pytest.raises(BadValue, match="a character device, not a file"):
        read_text("/dev/null", "robot file")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_BYTES + 1))
    with pytest.raises(BadValue, match=f"{MAX_BYTES + 1:,} bytes; a robot file is a few kilobytes"):
        read_text(big, "robot file")
    with pytest.raises(BadValue, match="does not exist"):
        read_text(tmp_path / "nope.yaml", "robot file")
    ok = tmp_path / "ok.yaml"
    ok.write_text("wheel_radius: 0.03\n")
    assert read_text(ok, "robot file") == "wheel_radius: 0.03\n"


def test_the_shape_check_counts_aliases_once_each_time_they_are_used():
    from viperdrive.errors import BadValue

    class N:
        def __init__(self, *kids):
            self.kids = list(kids)

    # ten references to one node at each of six levels: 10**6 values from 60 edges, measured, not walked
    n = N()
    for _ in range(6):
        n = N(*([n] * 10))
    with pytest.raises(BadValue, match="more than 100,000 values"):
        check_tree(n, "x.yaml", lambda v: v.kids)
    small = N()
    for _ in range(4):
        small = N(*([small] * 10))
    check_tree(small, "x.yaml", lambda v: v.kids)               # 11,111 values: fine
    loop = N()
    loop.kids.append(N(loop))
    with pytest.raises(BadValue, match="contains itself"):
        check_tree(loop, "x.yaml", lambda v: v.kids)
    deep = N()
    for _ in range(70):
        deep = N(deep)
    with pytest.raises(BadValue, match="nested more than 64 levels"):
        check_tree(deep, "x.yaml", lambda v: v.kids)


def _many_keys(path, n: int):
    path.write_text("base_controller:\n  ros__parameters:\n    type: diff_drive_controller/DiffDriveController\n"
                    "    wheel_separation: 0.15\n    wheel_radius: 0.03\n"
                    + "".join(f"    key_{i}: {i}\n" for i in range(n)))
    return path


def test_a_file_of_many_unknown_keys_lists_a_few_and_counts_the_rest(tmp_path):
    # up to the size cap of keys: one short note, and a cost that grows with the file, not with its square (an
    # unknown key looked up in a list of the unknown keys cost 0.6 s at 12,000 keys). The cost is the reader's and
    # the robot file's own, timed in this process (the least CPU time of three): a command's cost less a separately
    # measured start-up was a difference of two noisy figures (0.01 s for 625 keys in one idle run, where 0.22 s
    # was usual). 8 times the keys cost ~8 times the CPU if linear, 64 times if quadratic; the bound is between.
    import time

    from viperdrive.robot.config import RobotConfig, read_robot_file
    small, big = _many_keys(tmp_path / "small.yaml", 625), _many_keys(tmp_path / "big.yaml", 5000)
    assert big.stat().st_size < MAX_BYTES
    r = probe("check-config", big)
    assert r["rc"] == 0, r
    assert "... and 4,980 more" in r["out"] + r["err"], r
    assert max(len(line) for line in (r["out"] + r["err"]).splitlines()) < 2000

    def cpu(path) -> float:
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            RobotConfig.from_document(read_robot_file(str(path)))
            best = min(best, time.process_time() - t0)
        return best
    cpu(small)                                          # imports and first-call costs out of the way
    cost_small, cost_big = cpu(small), cpu(big)
    print(f"CPU of reading the robot file: {cost_small:.3f} s for 625 keys, {cost_big:.3f} s for 5,000 "
          f"({cost_big / cost_small:.1f}x)")
    assert cost_big < 16.0 * cost_small, (cost_small, cost_big)
    assert shorten(["a", "b", "c"], 2) == "a, b ... and 1 more"
