# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a long-running command does when the board goes away, and when it may take it back (docs/ros2.md,
"Recovery"). One policy for the ROS 2 bridge and the CLI:

- the link is lost (the port vanished, a USB re-plug, the line silent past the miss budget), or the board
  restarted or turned its outputs off without a latched fault (a power-on, a brown-out, its deadman): recovered
  on its own, retried every RETRY_FIRST_S and backing off to RETRY_MAX_S, one log line per change of state;
- a watchdog reset: the board latches FAULT_WATCHDOG, its record that it reset. Recovered on its own, at most
  WATCHDOG_BUDGET times in WATCHDOG_WINDOW_S (a firmware that hangs again and again is not driven on forever);
- a latched safety fault (e-stop, battery cut-off, stall, tracking, over-speed, encoder plausibility) is never
  cleared here. It waits for an explicit clear (the bridge's ~/clear_fault service, `viperdrive info
  --clear-fault`); then recovery goes on;
- another firmware on the port (protocol or parameter schema): not recovered; the command says so.

`policy="never"` recovers nothing: the caller stops as before. After a recovery nothing moves until a command
newer than it arrives; that part is the caller's (the bridge drops what was queued before).
"""
from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

from viperdrive.shared import protocol as P

from ..errors import LinkError, PortError, UserError, VersionMismatch
from ..timebase import HOST_CLOCK, Clock
from .board import FaultLatched
from .records import fault_text

RETRY_FIRST_S = 0.5         # the first attempt after the board went away
RETRY_MAX_S = 4.0           # the back-off's ceiling: a board that stays away is asked this often
WATCHDOG_BUDGET = 3         # watchdog resets recovered on their own ...
WATCHDOG_WINDOW_S = 600.0   # ... within this long
POLICIES = ("auto", "never")

# kinds of outage: recovered on their own or not
LINK = "link"               # the port vanished or the line went silent
RESTART = "restart"         # the board restarted or de-energized without a latched safety fault
FAULT = "fault"             # a latched fault the host does not clear on its own
FIRMWARE = "firmware"       # another firmware answers on the port
RECOVERABLE = (LINK, RESTART)


@dataclass
class Outage:
    kind: str
    reason: str
    since: float                            # host monotonic s the board went away
    fault_code: int = 0
    attempts: int = 0
    retry_delay_s: float = RETRY_FIRST_S
    next_try: float = 0.0
    last_failure: str = ""

    @property
    def recoverable(self) -> bool:
        return self.kind in RECOVERABLE


@dataclass
class Recovered:
    """One outage from start to the board commanded again (the soak's figures)."""
    kind: str
    reason: str
    down_s: float                           # from going away to the board answering and active again
    attempts: int
    back_at: float                          # host monotonic s
    commanding_s: float | None = None       # from back_at to the first command executed after it


@dataclass
class Recovery:
    board: object                           # a viperdrive.board.Board
    policy: str = "auto"
    activate: bool = True                   # take the board back active (False: a monitor, which only watches)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("viperdrive.recovery"))
    clock: Clock = HOST_CLOCK               # what outages and retries are timed in (viperdrive.timebase)
    outage: Outage | None = None
    history: list[Recovered] = field(default_factory=list)
    _watchdog_clears: deque = field(default_factory=deque)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"recovery policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")

    # ---- going away ----
    def lost(self, kind: str, reason: str, fault_code: int = 0) -> Outage:
        """The board went away now (`kind`: LINK, RESTART or FAULT). An outage already open keeps its start."""
        now = self.clock.now()
        if kind == FAULT and fault_code == P.FAULT_WATCHDOG and self._watchdog_budget(now):
            kind = RESTART      # the board's record of its own reset, acknowledged while the budget allows
        o = self.outage
        if o is None:
            o = self.outage = Outage(kind, reason, now, fault_code, next_try=now + RETRY_FIRST_S)
        else:
            o.kind, o.reason, o.fault_code = kind, reason, fault_code
        self.log.error("board down: %s [%s]%s", reason, kind, self._plan(o))
        return o

    def _plan(self, o: Outage) -> str:
        if self.policy == "never":
            return "; --recover never: not taken back"
        if o.kind == FAULT:
            return ("; the latched fault is not cleared by the host on its own: clear it (the ~/clear_fault "
                    "service, `viperdrive info --clear-fault`) once its cause is fixed")
        if o.kind == FIRMWARE:
            return "; not taken back: another firmware answers on the port"
        return f"; retrying every {RETRY_FIRST_S:g} s (backing off to {RETRY_MAX_S:g} s)"

    def cleared(self) -> None:
        """The latched fault was cleared on request: the outage becomes one that may be recovered, now."""
        o = self.outage
        if o is not None and o.kind == FAULT:
            o.kind = RESTART
            o.fault_code = 0
            o.next_try = self.clock.now()
            o.retry_delay_s = RETRY_FIRST_S
            self.log.info("fault cleared on request: taking the board back")

    # ---- coming back ----
    def _watchdog_budget(self, now: float) -> bool:
        q = self._watchdog_clears
        while q and now - q[0] > WATCHDOG_WINDOW_S:
            q.popleft()
        return len(q) < WATCHDOG_BUDGET

    def poll(self) -> Recovered | None:
        """One attempt when one is due; the Recovered record when the board is back and active now."""
        o = self.outage
        now = self.clock.now()
        if o is None or self.policy == "never" or not o.recoverable or now < o.next_try:
            return None
        o.attempts += 1
        clear: tuple[int, ...] = (P.FAULT_WATCHDOG,) if self._watchdog_budget(now) else ()
        try:
            self.board.recover(clear=clear, activate=self.activate)     # type: ignore[attr-defined]
        except FaultLatched as e:
            if e.code == P.FAULT_WATCHDOG:
                why = (f"watchdog reset more than {WATCHDOG_BUDGET} times within {WATCHDOG_WINDOW_S:g} s: the "
                       f"firmware keeps hanging")
            else:
                why = f"FAULT latched: {fault_text(e.code)}"
            self.lost(FAULT, why, e.code)
            return None
        except VersionMismatch as e:
            self.lost(FIRMWARE, str(e))
            return None
        except (LinkError, PortError) as e:
            self._retry_later(o, now, str(e))
            return None
        except UserError as e:          # anything else the board said (a NACK on ENABLE): not back yet
            self._retry_later(o, now, str(e))
            return None
        back = self.clock.now()
        if clear and o.fault_code == P.FAULT_WATCHDOG:
            self._watchdog_clears.append(back)
        rec = Recovered(o.kind, o.reason, back - o.since, o.attempts, back)
        self.history.append(rec)
        self.outage = None
        self.log.warning("board back after %.2f s (%d attempts): %s%s", rec.down_s, rec.attempts, o.reason,
                         "; nothing moves until a new command arrives" if self.activate else "")
        return rec

    def _retry_later(self, o: Outage, now: float, failure: str) -> None:
        o.next_try = now + o.retry_delay_s
        o.retry_delay_s = min(o.retry_delay_s * 2.0, RETRY_MAX_S)
        if failure != o.last_failure:
            o.last_failure = failure
            self.log.warning("board still down: %s (next try in %.1f s)", failure, o.next_try - now)

    def commanding(self) -> None:
        """The first command after the last recovery was executed now (for its Recovered record)."""
        if self.history and self.history[-1].commanding_s is None:
            self.history[-1].commanding_s = self.clock.now() - self.history[-1].back_at

    def status(self) -> dict:
        o = self.outage
        d: dict = {"recover": self.policy, "recoveries": len(self.history)}
        if o is not None:
            d.update(down_kind=o.kind, down_reason=o.reason, down_for_s=round(self.clock.now() - o.since, 3),
                     attempts=o.attempts, recoverable=o.recoverable and self.policy != "never")
            if o.recoverable and self.policy != "never":
                d["next_try_in_s"] = round(max(0.0, o.next_try - self.clock.now()), 3)
        return d


__all__ = ["Recovery", "Outage", "Recovered", "POLICIES", "LINK", "RESTART", "FAULT", "FIRMWARE",
           "RETRY_FIRST_S", "RETRY_MAX_S", "WATCHDOG_BUDGET", "WATCHDOG_WINDOW_S"]
