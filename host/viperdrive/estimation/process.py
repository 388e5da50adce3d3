# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The live filter in a process of its own, so the board loop never waits for it (docs/estimation.md, "The live
filter's process").

A LiveFilter is pure computation on messages, and its cycles are uneven: a lagged pose fix rewinds the history
and replays it (milliseconds of Python). In the loop's process every one of those milliseconds is taken from the
board loop's interpreter (one GIL). FilterProcess has LiveFilter's surface for its users (feed, run(stop),
estimate, sources, dead_reckoning, cost, recent_events, summary) and runs the filter in a child Python:

  loop thread   feed(topic, msg): the arrival time on the log clock, the recorder, a list append. Nothing else:
                it never touches the pipe, so a slow or dead child cannot block it.
  feeder        run(stop), the thread the callers already start: at each filter period boundary (as
                LiveFilter.run wakes) it takes what the pollers have (DDS inputs, stamped with their arrival
                then) and hands what arrived, then the time, to
  sender        a thread that writes them down the pipe: only it waits when the child lags.
  child         feeds each message at its arrival time and steps the filter when the time comes, as the
                filter's own thread did; it answers each step with its estimates and its status. It runs at a
                lower priority (os.nice NICE): the loop's process wins the CPU when both are ready.
  receiver      on_estimate(est) for each estimate, in the parent (the bridge publishes odometry/filtered).

Every message reaches the child before the time that follows it in the pipe, so each step fuses exactly what
arrived before it: the recording of a live run still fuses offline into the same estimates. The child ends when
the pipe closes (its parent gone, however it went).
"""
from __future__ import annotations

import math
import os
import queue
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from ..recording.mcap import LogClock, SetClock
from .config import FilterConfig
from .live import LiveFilter, check_uncertainty_limit, sources_of, topics_of

NICE = 5                    # the child's niceness above the parent's
START_TIMEOUT_S = 30.0      # the child imports numpy and the filter: a loaded machine takes seconds
STOP_TIMEOUT_S = 10.0      # at the end: the child works off what it was sent (a starved child lags) and is waited
#                            for while it makes progress; this long without a step from it, it is given up
MARGIN_S = 0.0005           # after a period boundary, as LiveFilter.run


class FilterProcess:
    """LiveFilter's surface, the work in a child process (see the module's text). on_estimate runs on the
    receiver thread; recorder(topic, msg, ns) on the caller's, at feed()."""

    def __init__(self, config: FilterConfig, on_estimate=None, recorder=None, clock: LogClock | None = None,
                 uncertainty_limit: float = 1.0, pollers=(), nice: int = NICE):
        check_uncertainty_limit(uncertainty_limit)
        self.config = config
        self.clock = clock or LogClock()
        self.period = 1.0 / config.frequency
        self.uncertainty_limit = uncertainty_limit
        self.readers_of, self.sources = sources_of(config)
        self.on_estimate = on_estimate
        self.recorder = recorder
        self.pollers = list(pollers)
        self.nice = nice
        self.estimate = None
        self.steps = 0
        self.error: str | None = None       # why the child stopped, when it did on its own
        self._lock = threading.Lock()
        self._pending: list = []
        self._status_lock = threading.Lock()
        self._cost: dict = {"steps": 0}
        self._events: list = []
        self._dead = {"active": False, "since": None, "position_sigma_m": 0.0, "seconds_to_limit": None,
                      "limit_m": uncertainty_limit}
        self._summary = None
        self._done = threading.Event()      # the child's summary arrived (or it is gone)
        self.child: subprocess.Popen | None = None
        self._conn: _Duplex | None = None
        self._receiver: threading.Thread | None = None
        self._sender: threading.Thread | None = None
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()     # (inputs, time) per step; None: the end
        self._finished = False

    # ---- inputs (the loop's thread) ----
    def topics(self) -> dict:
        return topics_of(self.readers_of, self.sources)

    def feed(self, topic: str, msg) -> bool:
        from .schedule import norm_topic
        topic = norm_topic(topic)
        if topic not in self.readers_of:
            return False
        with self._lock:
            ns = self.clock.ns()
            self._pending.append((ns, topic, msg))
            if self.recorder is not None:
                self.recorder(topic, msg, ns)
        return True

    # ---- the feeder (the caller's filter thread) ----
    def run(self, stop: threading.Event) -> None:
        """start(), then step() at each period boundary until stop is set (or the child fails), then finish().
        RuntimeError with the child's reason when it failed."""
        self.start()
        try:
            while not stop.is_set() and self.error is None:
                now = self.clock.ns() * 1e-9
                boundary = (math.floor(now / self.period) + 1) * self.period
                if stop.wait(max(0.0, boundary - now + MARGIN_S)):
                    break
                self.step()
            self.step()     # the end, as LiveFilter.run's: every input fed so far is stepped
        finally:
            self.finish()
        if self.error is not None:
            raise RuntimeError(self.error)

    def start(self) -> None:
        """The child, the sender and the receiver threads."""
        if self._conn is not None:
            return
        self._conn, self.child = self._start()
        self._receiver = threading.Thread(target=self._receive, args=(self._conn,), name="viperdrive-ekf-rx",
                                          daemon=True)
        self._receiver.start()
        self._sender = threading.Thread(target=self._send, args=(self._conn,), name="viperdrive-ekf-tx",
                                        daemon=True)
        self._sender.start()

    def step(self) -> None:
        """The filter's period, as LiveFilter.step (one verb for both): take what the pollers have now (each input
        stamped with its arrival here and now), then hand what arrived since the last step and the time to the
        sender. Never blocks: a child that lags (the pipe full) holds up the sender only, so the arrival times stay
        those of the arrivals."""
        assert self._conn is not None, "start() first"
        if self.error is not None:
            return
        for poll in self.pollers:
            for topic, msg in poll():
                self.feed(topic, msg)
        with self._lock:
            batch, self._pending = self._pending, []
            now_ns = self.clock.ns()
        self._outbox.put((batch, now_ns))

    def finish(self) -> None:
        """Ask the child for its summary (after every estimate it owes), then let it end."""
        if self._conn is None or self.child is None or self._finished:
            return
        self._finished = True
        self._outbox.put(None)
        self._wait_while_progressing()
        self._conn.close_send()
        try:
            self.child.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait(STOP_TIMEOUT_S)
        if self._receiver is not None:
            self._receiver.join(STOP_TIMEOUT_S)

    def _wait_while_progressing(self) -> None:
        """Until the summary arrives (or the child is gone), for as long as the child keeps answering steps: how
        long a starved child takes to work off its backlog depends on the machine, so only a child that makes no
        progress for STOP_TIMEOUT_S of wall time is given up."""
        last = -1
        quiet_since = time.monotonic()
        while not self._done.wait(0.2):
            steps = self.steps
            if steps != last:
                last = steps
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > STOP_TIMEOUT_S:
                return

    def _start(self) -> tuple[_Duplex, subprocess.Popen]:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        child = subprocess.Popen([sys.executable, "-m", "viperdrive.estimation.process", str(to_child_r),
                                  str(from_child_w), str(self.nice)], pass_fds=(to_child_r, from_child_w),
                                 stdin=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.child = child
        conn = _Duplex(Connection(from_child_r, writable=False), Connection(to_child_w, readable=False))
        conn.send(("config", self.config, self.uncertainty_limit))
        return conn, child

    def _send(self, conn) -> None:
        """The sender thread: each step's inputs, then its time, down the pipe (blocking while the child lags);
        at the end the request for the summary."""
        try:
            while True:
                item = self._outbox.get()
                if item is None:
                    conn.send(("stop",))
                    return
                batch, now_ns = item
                for ns, topic, msg in batch:
                    conn.send(("m", ns, topic, msg))
                conn.send(("t", now_ns))
        except (OSError, EOFError) as e:        # the child went away: its own reason, if it sent one, wins
            self._done.wait(STOP_TIMEOUT_S)
            if self.error is None:
                self.error = f"the filter process is gone ({type(e).__name__}: {e})"

    # ---- the receiver ----
    def _receive(self, conn) -> None:
        try:
            while True:
                msg = conn.recv()
                kind = msg[0]
                if kind == "s":
                    _, estimates, status = msg
                    with self._status_lock:
                        self.steps = status["steps"]
                        self._cost = status["cost"]
                        self._events = status["events"]
                        self._dead = status["dead_reckoning"]
                        self.sources = status["sources"]
                    for est in estimates:
                        self.estimate = est
                        if self.on_estimate is not None:
                            self.on_estimate(est)
                elif kind == "summary":
                    self._summary = msg[1]
                    break
                elif kind == "error":
                    self.error = msg[1]
                    break
        except (EOFError, OSError):
            if self.error is None and self._summary is None:
                self.error = "the filter process ended without a word"
        finally:
            self._done.set()
            conn.close_recv()

    # ---- status (any thread) ----
    def dead_reckoning(self) -> dict:
        with self._status_lock:
            return dict(self._dead)

    def cost(self) -> dict:
        with self._status_lock:
            return dict(self._cost)

    def recent_events(self, n: int = 10) -> list:
        with self._status_lock:
            return list(self._events)[-n:]

    def summary(self):
        """The run's summary, as `viperdrive fuse` prints it (the child's, once run() has returned)."""
        if self._summary is None:
            raise RuntimeError("the filter process has not finished (or failed: " + str(self.error) + ")")
        return self._summary


class _Duplex:
    """The two one-way pipes as one connection."""

    def __init__(self, rx: Connection, tx: Connection):
        self.rx, self.tx = rx, tx

    def send(self, obj) -> None:
        self.tx.send(obj)

    def recv(self):
        return self.rx.recv()

    def close_send(self) -> None:
        self.tx.close()

    def close_recv(self) -> None:
        self.rx.close()


# ---------------------------------------------------------------------------------------------------- the child
def serve(rx: Connection, tx: Connection) -> int:
    """The child's loop: feed each message at its arrival time; at each time, step the filter; answer with the
    estimates and the status."""
    first = rx.recv()
    _, config, limit = first
    clock = SetClock()
    out: list = []
    live = LiveFilter(config, clock=clock, uncertainty_limit=limit, on_estimate=out.append)
    try:
        while True:
            try:
                msg = rx.recv()
            except EOFError:
                return 0                            # the parent is gone
            kind = msg[0]
            if kind == "m":
                _, ns, topic, body = msg
                live.feed(topic, body, ns=ns)
            elif kind == "t":
                # the feeder sends the time once per wake-up, just after a period boundary: a step, as
                # LiveFilter.run steps once per wake-up
                clock.t = msg[1] * 1e-9
                live.step()
                tx.send(("s", out[:], {"steps": live.steps, "cost": live.cost(), "events": live.recent_events(50),
                                       "dead_reckoning": live.dead_reckoning(), "sources": live.sources}))
                out.clear()
            elif kind == "stop":
                tx.send(("summary", live.summary()))
                return 0
    except Exception as e:      # said to the parent, which reports it; the board loop goes on without the filter
        try:
            tx.send(("error", f"{type(e).__name__}: {e}"))
        except OSError:
            pass
        return 1


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rx_fd, tx_fd, nice = int(argv[0]), int(argv[1]), int(argv[2])
    try:
        os.nice(nice)
    except OSError:         # not allowed here: the same priority as the parent, said nowhere (not fatal)
        pass
    rx = Connection(rx_fd, writable=False)
    tx = Connection(tx_fd, readable=False)
    return serve(rx, tx)


__all__ = ["FilterProcess", "serve", "NICE"]

if __name__ == "__main__":
    sys.exit(main())
