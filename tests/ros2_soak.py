# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The ride-through soak: an in-process bridge (recover="auto") on a virtual board (the real firmware on the
MicroPython unix port, on a fixed TCP port so it can be killed and started again there), driven by a second DDS
participant (tests/ros2_graph.py) at 0.2 m/s, while the soak takes the board away in a seeded random order:

  cut     the line goes silent (the control endpoint's cut_link) past the bridge's miss budget, then comes back;
  replug  the board process is killed and a new one started on the same port (a USB re-plug, a power cycle);
  reset   the board restarts behind the open link (the control endpoint's reset: a watchdog or a brown-out);
  estop   the e-stop opens once: it must NOT be taken back, neither while open nor once closed, until the
          ~/clear_fault service is called (which refuses while the circuit is open).

For each event the peer either keeps publishing through the outage or goes quiet at the event (seeded). A quiet
event checks that nothing moves after the recovery until a new command comes: the drive's cmd_vel_timeout is
10 s here, so a command kept from before the outage would drive the robot through the whole quiet window.

Checked at the end: the bridge never exited, every event recovered (the e-stop only after the clear), no wheel
moved without a fresh command, the odometry published on `odom` is continuous across every recovery. Figures:
`report()`.

Every wait is on a condition with a deadline; windows that decide an outcome are in the board's time (the
virtual board's clock file). Run as a script for the long version (bench/bench_ros2_soak.py)."""
from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field

from ros2_graph import LOCAL_ENV, Graph

from viperdrive.board import Board
from viperdrive.robot.config import RobotConfig
from viperdrive.ros2.bridge import Ros2Bridge
from viperdrive.ros2.options import BridgeOptions
from viperdrive.timebase import WaitTimeout, wait_until

DRIVE_V = 0.2                   # m/s commanded by the peer
MOVING_W = 3.0                  # wheel rad/s (truth) that counts as driving (0.2 m/s is ~6.2 rad/s)
STILL_M = 0.005                 # a quiet window's largest truth displacement (a kept command drives 0.1 m)
QUIET_BOARD_S = 0.5             # board seconds of the quiet window after a recovery
HOLD_BOARD_S = (0.3, 1.5)       # how long an outage lasts past its detection (board s; host s for a re-plug)
DRIVE_BOARD_S = (2.0, 6.0)      # board seconds of driving before each event (the long soak's; make test's: 1-2 s)
WAIT_S = 60.0                   # deadline of every wait (host s): a condition that never comes fails the soak
KINDS = ("cut", "replug", "reset")


def config() -> RobotConfig:
    return RobotConfig.from_dict({"update_rate": 100, "cmd_vel_timeout": 10.0, "max_rim_acceleration": 1.0,
                                  "ros2": {"use_stamped_vel": False, "publish_rate": 50}})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Event:
    kind: str
    quiet: bool                                 # the peer stopped publishing at the event
    down_s: float = 0.0                         # bridge outage, host s (Recovered.down_s)
    back_to_recovered_s: float = 0.0            # from the board being back to the bridge active on it
    back_to_commanding_s: float | None = None   # ... to the first command executed (publishing events)
    motion_down_m: float = 0.0                  # truth path while the bridge was down (same plant)
    motion_quiet_m: float | None = None         # truth displacement in the quiet window after the recovery
    attempts: int = 0
    clear_refused_open: str = ""                # estop: the service's answer while the circuit was open


@dataclass
class Soak:
    events: int = 20
    seed: int = 1
    namespace: str = "soak"
    drive_s: tuple[float, float] = DRIVE_BOARD_S    # board s of driving before each event, drawn in this range
    log: object = print
    domain: int = field(default_factory=lambda: random.SystemRandom().randint(120, 220))
    done: list[Event] = field(default_factory=list)

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self.port = free_port()
        self.vb = None
        self.publishing = True
        self.truths: list[tuple[float, float, float, int]] = []    # (host s, x, y, plant generation)
        self.generation = 0

    # ---- the board ----
    def _start_board(self):
        from viperdrive.rigs.virtual import VirtualBoard
        self.vb = VirtualBoard(listen=f"127.0.0.1:{self.port}").start()
        self.generation += 1

    def truth(self) -> dict:
        t = self.vb.truth()
        self.truths.append((time.monotonic(), t["x"], t["y"], self.generation))
        return t

    def board_wait(self, seconds: float) -> None:
        """seconds of the board's time, publishing and taking meanwhile."""
        end = self.vb.clock.now() + seconds
        self.until(lambda: self.vb.clock.now() >= end, f"{seconds} board s")

    def until(self, pred, what: str, sample: bool = True):
        """pred() true, publishing (while the peer publishes) and taking meanwhile, every 20 ms; a deadline of
        WAIT_S host seconds, and the bridge must stay up."""
        def step():
            if not self.runner.is_alive():
                raise AssertionError(f"soak: the bridge exited while waiting for {what}: {self.bridge.stop_reason}")
            if self.publishing:
                self.graph.command(DRIVE_V)
            self.graph.take()
            if sample and self.vb is not None and self.vb.alive:
                self.truth()
            return pred()

        try:
            return wait_until(step, WAIT_S, poll=0.02, what=what)
        except WaitTimeout as e:
            raise AssertionError(f"soak: {e} (bridge: {self.bridge.recovery.status()})") from None

    def moving(self) -> bool:
        t = self.truth()
        return t["w_left"] > MOVING_W and t["w_right"] > MOVING_W

    def down(self) -> bool:
        return self.bridge.recovery.outage is not None

    # ---- the run ----
    def run(self) -> list[Event]:
        kinds = [KINDS[i % len(KINDS)] for i in range(self.events - 1)]
        self.rng.shuffle(kinds)
        kinds.insert(self.rng.randrange(len(kinds) + 1), "estop")
        self._start_board()
        cfg = config()
        self.bridge = Ros2Bridge(Board(self.vb.url, config=cfg), cfg,
            BridgeOptions(namespace=self.namespace, domain_id=self.domain, env=LOCAL_ENV, recover="auto"))
        self.graph = Graph(self.namespace, self.domain)
        self.runner = threading.Thread(target=self.bridge.run, daemon=True)
        self.runner.start()
        try:
            self.until(self.moving, "driving at the start")
            for i, kind in enumerate(kinds):
                ev = Event(kind, quiet=self.rng.random() < 0.5)
                self.event(ev)
                self.done.append(ev)
                self.log(f"soak event {i + 1}/{len(kinds)}: {json.dumps(asdict(ev))}")
            self.graph.take()
            assert self.runner.is_alive(), self.bridge.stop_reason
        finally:
            self.bridge.stop("soak done")
            self.runner.join(20)
            self.graph.take()
            self.graph.close()
            if self.vb is not None:
                self.vb.close()
        assert not self.runner.is_alive(), "the bridge did not stop"
        assert self.bridge.stop_reason == "soak done", self.bridge.stop_reason
        return self.done

    def event(self, ev: Event) -> None:
        self.publishing = True
        self.until(self.moving, "driving before the event")
        self.board_wait(self.rng.uniform(*self.drive_s))
        recoveries = len(self.bridge.recovery.history)
        if ev.quiet:
            self.publishing = False
        hold = self.rng.uniform(*HOLD_BOARD_S)
        t_down = None
        if ev.kind == "cut":
            self.vb.fault("cut_link", on=True)
            self.until(self.down, "outage after cut_link")
            t_down = time.monotonic()
            self.board_wait(hold)
            self.vb.fault("cut_link", on=False)
        elif ev.kind == "reset":
            self.vb.reset("board")
            self.until(self.down, "outage after the reset")
            t_down = time.monotonic()
        elif ev.kind == "replug":
            self.vb.close()
            self.until(self.down, "outage after the board vanished", sample=False)
            t_down = time.monotonic()
            end = time.monotonic() + hold
            self.until(lambda: time.monotonic() >= end, "the re-plug's pause", sample=False)
            self._start_board()
        elif ev.kind == "estop":
            self.vb.fault("estop", open=True)
            self.until(self.down, "outage after the e-stop opened")
            t_down = time.monotonic()
            self.board_wait(1.0)
            assert self.bridge.recovery.outage is not None and self.bridge.recovery.outage.kind == "fault", \
                self.bridge.recovery.status()
            ok, ev.clear_refused_open = self.graph.clear_fault()
            assert not ok and "still latched" in ev.clear_refused_open, ev.clear_refused_open
            self.vb.fault("estop", open=False)
            self.board_wait(1.0)            # closed: still not taken back on its own
            assert self.down() and len(self.bridge.recovery.history) == recoveries, "e-stop recovered on its own"
            ok, text = self.graph.clear_fault()
            assert ok and "cleared" in text, text
            # the graph sees the calls in the diagnostics (the refused one and this one)
            self.until(lambda: any(st[3].get("recovery.clear_fault_calls") == "2"
                                   for st in self.graph.statuses(f"viperdrive /{self.namespace}: board")),
                       "clear_fault_calls 2 in the diagnostics")
        t_back = time.monotonic()
        self.until(lambda: len(self.bridge.recovery.history) > recoveries, f"recovery from {ev.kind}")
        rec = self.bridge.recovery.history[-1]
        ev.down_s, ev.attempts = rec.down_s, rec.attempts
        ev.back_to_recovered_s = max(0.0, rec.back_at - t_back)
        ev.motion_down_m = self._path(t_down, rec.back_at)
        if ev.quiet:
            t0 = self.truth()
            self.board_wait(QUIET_BOARD_S)
            t1 = self.truth()
            ev.motion_quiet_m = ((t1["x"] - t0["x"]) ** 2 + (t1["y"] - t0["y"]) ** 2) ** 0.5
            assert ev.motion_quiet_m < STILL_M, f"moved {ev.motion_quiet_m:.4f} m after {ev.kind} with no command"
            self.publishing = True
        self.until(self.moving, f"driving again after {ev.kind}")
        if rec.commanding_s is not None and not ev.quiet:     # a quiet event's first command waits for the peer
            ev.back_to_commanding_s = ev.back_to_recovered_s + rec.commanding_s

    def _path(self, t0: float, t1: float) -> float:
        """Truth path length between two host times, within one plant (a new or reset plant starts at rest)."""
        pts = [p for p in self.truths if t0 <= p[0] <= t1]
        return sum(((b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2) ** 0.5
                   for a, b in zip(pts, pts[1:], strict=False) if a[3] == b[3])

    # ---- the verdict ----
    def odom_steps(self) -> list[float]:
        """x steps between consecutive odom messages (the robot only drives forward)."""
        xs = [o[2] for o in self.graph.odom]
        return [b - a for a, b in zip(xs, xs[1:], strict=False)]

    def report(self) -> dict:
        evs = self.done
        back = [e.back_to_recovered_s for e in evs]
        cmd = [e.back_to_commanding_s for e in evs if e.back_to_commanding_s is not None]
        steps = self.odom_steps()
        return {
            "events": len(evs), "kinds": {k: sum(e.kind == k for e in evs) for k in (*KINDS, "estop")},
            "recoveries": len(self.bridge.recovery.history), "quiet_events": sum(e.quiet for e in evs),
            "back_to_recovered_s": {"median": statistics.median(back), "max": max(back)},
            "back_to_commanding_s": {"n": len(cmd), "median": statistics.median(cmd) if cmd else None,
                                     "max": max(cmd) if cmd else None},
            "down_s": {"median": statistics.median(e.down_s for e in evs), "max": max(e.down_s for e in evs)},
            "motion_down_m": {"median": statistics.median(e.motion_down_m for e in evs),
                              "max": max(e.motion_down_m for e in evs)},
            "motion_quiet_m_max": max((e.motion_quiet_m for e in evs if e.motion_quiet_m is not None), default=None),
            "odom_messages": len(self.graph.odom), "odom_step_min_m": min(steps), "odom_step_max_m": max(steps),
            "ignored_commands": self.bridge.ignored_commands, "attempts_max": max(e.attempts for e in evs),
        }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20)
    p.add_argument("--minutes", type=float, default=None, help="run events until this long (overrides --events)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    events = a.events
    if a.minutes is not None:
        events = max(4, int(a.minutes * 60 / 5.8))     # an event: 5.8 s measured (514 events in 49.4 min)
    soak = Soak(events=events, seed=a.seed, log=lambda s: print(s, file=sys.stderr, flush=True))
    t0 = time.monotonic()
    soak.run()
    rep = soak.report()
    rep["wall_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
