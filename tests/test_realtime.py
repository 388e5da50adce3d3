# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""--realtime PRIO (drive and ros2): the loop's thread on SCHED_FIFO where the OS allows it, a clear sentence
where it does not, and a priority outside 1-99 refused before anything opens. What this machine allows is probed
first, in a process of its own, so the test checks the command against the OS's own answer: with the permission,
one thread of the running command is SCHED_FIFO at that priority (/proc); without it (CAP_SYS_NICE dropped with
setpriv, when the tests run as root), the command says so and drives at normal priority."""
import os
import shutil
import subprocess
import sys

import pytest
from cli_helpers import VIPERDRIVE, run_cli

from viperdrive.timebase import wait_until

pytestmark = pytest.mark.board

SCHED_FIFO = 1
PROBE = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))"


def _permitted(prefix=()) -> bool:
    return subprocess.run([*prefix, sys.executable, "-c", PROBE], capture_output=True).returncode == 0


def _fifo_threads(pid: int) -> list[tuple[int, int]]:
    """(policy, rt priority) of each thread of pid that is not SCHED_OTHER."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):     # the thread ended meanwhile
            continue
        # after "pid (comm)": field 3 is fields[0]; rt_priority is field 40, policy field 41
        policy, prio = int(fields[38]), int(fields[37])
        if policy != 0:
            out.append((policy, prio))
    return out


@pytest.mark.parametrize("value", ["0", "100", "ten"])
def test_a_priority_outside_the_range_is_refused_before_the_port_opens(value):
    r = run_cli("drive", "--port", "sim", "--script", "square", "--realtime", value)
    assert r.returncode == 2 and "--realtime" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="SCHED_FIFO and /proc are Linux's")
def test_realtime_is_applied_where_permitted_and_said_where_not():
    cases = [((), _permitted())]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        drop = ("setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--")
        cases.append((drop, _permitted(drop)))
    for prefix, allowed in cases:
        proc = subprocess.Popen([*prefix, VIPERDRIVE, "drive", "--port", "sim", "--script", "square", "--duration",
                                 "4", "--realtime", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen: list = []

        def fifo_or_ended(proc=proc):
            nonlocal seen
            if proc.poll() is not None:
                return True
            try:
                seen = _fifo_threads(proc.pid)
            except (FileNotFoundError, ProcessLookupError):     # ended between the poll and the read (ENOENT,
                return True                                     # or ESRCH while the process is being reaped)
            return bool(seen)

        wait_until(fifo_or_ended, 60.0, poll=0.05, what="a real-time thread or the command's end")
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        if allowed:
            assert seen == [(SCHED_FIFO, 20)], seen          # the loop's thread, and only it
            assert "the loop's thread runs SCHED_FIFO at priority 20" in err, err
        else:
            assert seen == [] and "--realtime 20: not permitted here (needs CAP_SYS_NICE" in err, err
