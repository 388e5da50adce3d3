# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Fixed-rate runner on absolute deadlines, and the host drive cycle built on it (the ros2_control cycle at a
fixed update_rate, 50-100 Hz: docs/host.md, "Loop").

FixedRateLoop: deadline k is t0 + k*period (never "sleep(period) after the work", which drifts by the work's
duration). A step that ends after the next deadline is an overrun: counted, and the missed deadlines are skipped
(not run back to back to catch up, which would send a burst of commands); the phase is kept. It measures
lateness (wake-up jitter) and execution time so the >= 20 % margin rule can be checked.

DriveLoop: the ros2_control cycle read() -> odometry -> controller.update() -> write(), one SET_VEL/STATE exchange
per period; while the board runs moves (board.moves), GET_STATE instead of SET_VEL and the moves' lease.
"""
from __future__ import annotations

import gc
import math
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..stats import percentile
from ..timebase import HOST_CLOCK, Clock

if TYPE_CHECKING:
    from ..board.board import Board
    from ..board.records import BoardState
    from .drive import DriveController
    from .odometry import Odometry


class FixedRateLoop:
    def __init__(self, rate_hz: float, spin: float = 0.0, clock: Clock = HOST_CLOCK, history: int = 10000):
        if not (math.isfinite(rate_hz) and rate_hz > 0):
            raise ValueError(f"rate_hz must be > 0, got {rate_hz}")
        self.rate_hz = rate_hz
        self.period = 1.0 / rate_hz
        # s before a deadline to stop sleeping and poll the clock (sleep overshoots by the OS's wake-up latency).
        # 0: one sleep to the deadline. A spin is a busy wait: 0.2 ms of it cost the ROS 2 bridge at 100 Hz 0.12 ms
        # of CPU per cycle (bench/bench_ros2_cpu.py), for a lateness a 100 Hz loop does not need
        self.spin = spin
        self.clock = clock          # what the deadlines are counted in (viperdrive.timebase: the board's time)
        self.cycles = 0
        self.overruns = 0           # steps that ended after the next deadline
        self.skipped = 0            # deadlines dropped because of overruns
        self._late: deque = deque(maxlen=history)   # s between a deadline and the step's start
        self._exec: deque = deque(maxlen=history)   # s the step took

    def _wait_until(self, deadline: float) -> float:
        while True:
            now = self.clock.now()
            left = deadline - now
            if left <= 0:
                return now
            if left > self.spin:
                self.clock.sleep(left - self.spin)
            elif self.spin:
                self.clock.sleep(0)       # yield while spinning the last fraction of a millisecond

    def run(self, step: Callable[[float, int], Any], cycles: int | None = None, duration_s: float | None = None,
            stop: threading.Event | None = None) -> dict:
        """Call step(now, k) at each deadline until cycles/duration_s are done, stop (a threading.Event) is set or
        step returns False. Returns stats()."""
        period = self.period
        t0 = self.clock.now()
        deadline = t0
        k = 0
        done = 0
        while True:
            if cycles is not None and done >= cycles:
                break
            if duration_s is not None and deadline - t0 >= duration_s:
                break
            if stop is not None and stop.is_set():
                break
            now = self._wait_until(deadline)
            self._late.append(now - deadline)
            keep_going = step(now, k)
            end = self.clock.now()
            self._exec.append(end - now)
            self.cycles += 1
            done += 1
            if keep_going is False:
                break
            k += 1
            deadline = t0 + k * period
            if end > deadline:
                # overrun: resume at the first deadline still ahead, on the same phase grid
                self.overruns += 1
                behind = int((end - deadline) / period) + 1
                self.skipped += behind
                k += behind
                deadline = t0 + k * period
        return self.stats()

    def reset_stats(self) -> None:
        """Start the statistics afresh (a measurement after a start-up; any thread: the loop appends on)."""
        self._late.clear()
        self._exec.clear()
        self.cycles = self.overruns = self.skipped = 0

    def stats(self) -> dict:
        late = sorted(self._late)
        ex = sorted(self._exec)

        def pct(v: list[float], q: float) -> float | None:
            p = percentile(v, q)
            return p * 1e6 if p is not None else None

        exec_max = ex[-1] if ex else None
        return {
            "rate_hz": self.rate_hz, "cycles": self.cycles, "overruns": self.overruns, "skipped": self.skipped,
            "late_p50_us": pct(late, 0.5), "late_p99_us": pct(late, 0.99),
            "late_max_us": late[-1] * 1e6 if late else None,
            "exec_mean_us": sum(ex) / len(ex) * 1e6 if ex else None, "exec_p99_us": pct(ex, 0.99),
            "exec_max_us": exec_max * 1e6 if exec_max is not None else None,
            # keep >= 20 % of the period free at the worst case: room for the jitter Linux does not bound
            "margin_pct": (1.0 - exec_max / self.period) * 100.0 if exec_max is not None else None,
        }


class DriveLoop:
    """read -> odometry -> controller -> write, once per period of config.update_rate.

    A held (missed) state does not advance odometry; when the board's encoders restart (board.epoch changes:
    activate, reconnect, a reopened port) the odometry baseline is dropped and the controller reset, so nothing
    jumps and no old command is replayed. A board that restarts or de-energizes behind the open port makes
    board.read()/write() raise BoardDeenergized out of cycle()/run(): the odometry keeps the last pose (the STATE
    that showed the restart is never integrated); after clear_fault()/activate() the loop continues from it.
    """

    def __init__(self, board: Board, controller: DriveController, odometry: Odometry | None = None,
                 rate_hz: float | None = None, clock: Clock | None = None):
        """clock: what the period is counted in (now()/sleep()); default the board's (Board.clock: the host's for a
        real board, board time for a virtual board or an emulated chip)."""
        self.board = board
        self.controller = controller
        self.odometry = odometry
        self.rate_hz = rate_hz if rate_hz is not None else controller.config.update_rate
        clock = clock if clock is not None else board.clock
        self.loop = FixedRateLoop(self.rate_hz, clock=clock)
        self._epoch = board.epoch
        self.state: BoardState | None = None

    def cycle(self, now: float) -> BoardState:
        state = self.board.read()
        if self.board.epoch != self._epoch:
            self._epoch = self.board.epoch
            self.controller.reset()
            if self.odometry is not None:
                self.odometry.rebase()
        if self.odometry is not None and state.fresh:
            self.odometry.update(state.position[0], state.position[1], state.velocity[0], state.velocity[1],
                                 state.sampled)
        left, right = self.controller.update(now)
        moves = self.board.moves
        if moves.busy:
            # the board's moves drive: renew their lease and watch (a SET_VEL would cancel them)
            moves.keep()
            self.board.observe()
        else:
            self.board.write(left, right)
        self.state = state
        return state

    def run(self, cycles: int | None = None, duration_s: float | None = None, stop: threading.Event | None = None,
            on_cycle: Callable[[BoardState, int], Any] | None = None) -> dict:
        """Run the cycle on absolute deadlines; on_cycle(state, k) after each (return False to stop)."""
        def step(now: float, k: int) -> Any:
            state = self.cycle(now)
            if on_cycle is not None:
                return on_cycle(state, k)
            return None
        return self.loop.run(step, cycles=cycles, duration_s=duration_s, stop=stop)


REALTIME_PRIORITY_RANGE = (1, 99)     # SCHED_FIFO's priorities on Linux


def prepare_loop_thread(realtime: int | None = None) -> tuple[bool, str | None]:
    """Call on the loop's thread once everything is set up, just before the loop runs: a last full garbage
    collection, then gc.freeze() (the objects made at start-up are never scanned again, so a later collection of
    the young generations stays short instead of walking the DDS and numpy objects of the whole process), and
    with `realtime` the thread on SCHED_FIFO at that priority (Linux: CAP_SYS_NICE or an rtprio limit,
    `ulimit -r`). -> (realtime applied, the sentence to log about it; None without realtime)."""
    gc.collect()
    gc.freeze()
    if realtime is None:
        return False, None
    lo, hi = REALTIME_PRIORITY_RANGE
    if not (isinstance(realtime, int) and lo <= realtime <= hi):
        raise ValueError(f"real-time priority {realtime!r} must be a whole number in [{lo}, {hi}]")
    if not hasattr(os, "sched_setscheduler"):
        return False, (f"--realtime {realtime}: this OS has no SCHED_FIFO (os.sched_setscheduler); the loop runs "
                       f"at normal priority")
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(realtime))
    except PermissionError:
        return False, (f"--realtime {realtime}: not permitted here (needs CAP_SYS_NICE, or an rtprio limit of at "
                       f"least {realtime}: `ulimit -r`, /etc/security/limits.conf); the loop runs at normal "
                       f"priority")
    return True, f"--realtime {realtime}: the loop's thread runs SCHED_FIFO at priority {realtime}"


__all__ = ["FixedRateLoop", "DriveLoop", "prepare_loop_thread", "REALTIME_PRIORITY_RANGE"]
