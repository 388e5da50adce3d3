# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Board: the motor board as a ros2_control-style hardware component (docs/host.md, "Board"). SI above, counts
below: this is the one place where rad and rad/s become counts and counts/s, and counts become rad (positions
continued across the board's int32 counter wrap, count_delta()).

Lifecycle: configure() (open, HELLO: protocol version and parameter schema must match) -> activate() (zero
commands, zero encoders, enable) -> read()/write() once per loop period -> deactivate() (command zero, let the
board's acceleration ramp brake the wheels to rest, then disable; bounded in time) -> cleanup() (close). As a
context manager it configures on entry and always leaves the board disabled on exit.

One exchange per cycle (SET_VEL -> STATE takes 30 % of a 115200 baud line at 100 Hz; a second request per cycle
would use up the 50 % headroom, docs/protocol.md "Byte budget"): write() sends SET_VEL and returns at once; the
board answers with STATE, and the next read() returns that STATE. In a 100 Hz loop the reply has long arrived
when read() runs, so read() does not wait; called right after write() it waits for the reply at most until its
deadline (the per-command timeout, capped at 80 % of the loop period).

read() fills the state every cycle: a missed reply holds the last values (fresh=False); more than max_misses (5)
misses in a row raise LinkLost (a single lost frame must not stop the controllers; persistent loss must).

While active, every STATE is checked for a board that restarted or de-energized behind the open port (watchdog
reset, brown-out, a latched fault, its long-silence disable): a STATE without ST_ENABLED (we never disable while
active), with ST_WDT_RESET newly set, or with encoder counts that jumped further than the wheels can turn. Then
the Board goes inactive, epoch + 1 (the encoders may have restarted: DriveLoop drops the odometry baseline, so the
pose continues from where it was instead of jumping back to the new counts) and read()/write() raise
BoardDeenergized (a BoardFault: exit code 6) saying why; that STATE is never returned as a reading. A port that
vanished and reopened inside the miss budget is treated the same way: HELLO again, epoch + 1.
"""
from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable
from typing import Any, NoReturn

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from ..boardtime.registry import clock_for
from ..errors import BadValue, BoardFault, LinkError, LinkLost, NoReplyError, PortError, UserError, VersionMismatch
from ..robot.config import RobotConfig
from ..timebase import HOST_CLOCK, Clock
from .braking import Braking, table_ramp
from .link import Link, NackError
from .moves import Move, MoveQueue
from .records import BoardInfo, BoardState, SensorReading, fault_text, sensor_reading
from .services import HOLD_MARGIN_S

TWO_PI = 2.0 * math.pi
INT32_MAX = 2**31 - 1


class FaultLatched(BoardFault):
    """The board answers with a latched fault (`code`, protocol.FAULT_*): recover() leaves it for whoever may
    clear it."""

    def __init__(self, code: int):
        super().__init__(f"FAULT latched: {fault_text(code)}")
        self.code = code


class BoardDeenergized(BoardFault):
    """While active, the board restarted (watchdog, power) or turned its outputs off on its own (a latched fault,
    its long-silence disable). restarted: its encoders restarted too; cause: a few words (for diagnostics);
    state: the BoardState that showed it. The Board is inactive: clear a fault if one is latched, then
    activate() again."""

    def __init__(self, message: str, cause: str, restarted: bool, state: BoardState):
        super().__init__(message)
        self.cause = cause
        self.restarted = restarted
        self.state = state


_OPTIONS = {"counts_per_rev", "max_misses", "margin", "clock_sync", "owns", "link", "telemetry_queue",
            "sensor_queue", "clock"}

EARLY_SHARE = 0.8           # read() sleeps this share of the shortest round trip before it polls for the reply


class Board(Braking):
    """Board(port, baud=115200, config=None, **options). port: a device path or any pyserial URL; None takes
    config.port. A port name such as "auto" or "sim" (a private virtual board) is viperdrive.ports.open_board's.

    options: counts_per_rev (override HELLO's), max_misses (5), margin (s, reply-timeout margin, 0.05),
    clock_sync (True: sync the board clock on configure), owns (something with close(), closed with this Board:
    what open_board started for it), clock (the board's time, viperdrive.timebase: every wait, timeout and miss is
    counted in it; default: the clock of a board that is a program registered at that port
    (boardtime.registry.clock_for), else the host's clock, which is every real board's),
    link (an already-open Link to use instead of opening port), telemetry_queue (frames kept, 10000),
    sensor_queue (SENSORS_DATA records kept until sensor_readings() drains them, 10000).
    """

    def __init__(self, port: str | None = None, baud: int | None = None, config: RobotConfig | None = None,
                 **options: Any):
        unknown = set(options) - _OPTIONS
        if unknown:
            raise TypeError(f"unknown Board option(s): {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(sorted(_OPTIONS))}")
        self.config = config if config is not None else RobotConfig()
        self.port = port if port is not None else self.config.port
        self.baud = int(baud if baud is not None else self.config.baud)
        self.options = options
        self.max_misses = int(options.get("max_misses", 5))
        self.link: Link | None = options.get("link")
        self._owned = options.get("owns")   # closed with this Board (cleanup)
        self._ended = False                 # cleanup() closed what it owned: its port is gone for good
        self.info: BoardInfo | None = None
        self.active = False
        self.configured = False
        self.epoch = 0                      # +1 whenever the encoders (may) restart: activate, reconnect, reopen,
        #                                     a board restart seen in STATE
        self.down: BoardDeenergized | None = None   # why the board went inactive on its own (None: it did not)
        self._baseline: BoardState | None = None    # the last state accepted in this epoch (restart checks)
        self._state: BoardState | None = None
        self.moves = MoveQueue(self)        # moves on the board (move_straight/turn/arc), the lease
        self._pending: tuple[float, float] | None = None    # (host time sent, board-time deadline) of the
        #                                                     outstanding SET_VEL
        self.misses = 0                     # consecutive
        self.total_misses = 0
        self.late_replies = 0               # STATEs that came after their cycle's deadline (link alive, slow)
        self.cycles = 0
        self.last_nack: NackError | None = None
        self._telemetry: collections.deque[tuple[float, Any]] = collections.deque(
            maxlen=int(options.get("telemetry_queue", 10000)))
        self._sensors: collections.deque[SensorReading] = collections.deque(
            maxlen=int(options.get("sensor_queue", 10000)))
        self.latest_sensors: SensorReading | None = None    # the newest SENSORS_DATA record seen
        self._last_reopen = 0.0
        self._active_since = 0.0            # host time of the last activate()
        self._asked = False                 # write() was called since the last read()
        self._sent = 0.0                    # host time the last SET_VEL went out (its reply's sample time)
        self._clock_pair: tuple[float, float] | None = None     # (host time, board time) just after that send
        self._undelivered = False           # a state from activate()/reconnect() not yet returned by read()
        self._hold_s = table_ramp()[2] - HOLD_MARGIN_S      # the commanding hold (write()): inside the deadman
        self._ramp: tuple[float, float, float] | None = None    # the board's max_wheel_speed (rad/s), max_accel
        #                                                           (rad/s^2), deadman_ms (s): the braking bound
        self._unwrap: tuple[int, int, int, int, int] | None = None  # (epoch, raw l, raw r, continued l, continued
        #                                                               r) counts of the last STATE
        self.last_stop: dict | None = None  # how the last deactivate() stopped (seconds, braked, ...)
        self._clock_from_registry = False   # the clock was looked up for the URL (not given, not a private sim)
        self.recoveries = 0                 # successful recover() calls

    # ---- lifecycle ----
    def configure(self) -> BoardInfo:
        """Open the port and check HELLO. VersionMismatch when the board speaks another protocol or table."""
        if self._ended:
            raise PortError(f"{self.port}: the virtual board this Board started ended with its cleanup(); open a "
                            f"new one with viperdrive.ports.open_board(...)")
        if self.link is None:
            url = self.port
            if url in ("sim", "auto"):
                raise BadValue(f"Board({url!r}): a port name, not a port; open it with "
                               f"viperdrive.ports.open_board({url!r}, ...)")
            if self.options.get("clock") is None:
                # a board that is a program says so in the registry (a re-plug may bring a new one: recover())
                self._clock_from_registry = True
                self.options["clock"] = clock_for(url)
            self.link = Link(url, self.baud, margin=self.options.get("margin", 0.05), clock=self.options["clock"])
        try:
            self._io.open()
            self._hello()
            if self.options.get("clock_sync", True):
                self._io.sync_clock(5)
        except BaseException:
            self.cleanup()
            raise
        self.configured = True
        assert self.info is not None        # set by _hello()
        return self.info

    def _hello(self) -> None:
        payload = self._io.request(P.pack_hello(), P.INFO)
        try:
            info = BoardInfo(*P.unpack_info(payload))
        except (ValueError, UnicodeDecodeError) as e:
            raise VersionMismatch(f"the board's HELLO reply is malformed ({e}): it does not run this viperdrive "
                                  f"firmware; reflash it with `viperdrive flash`") from None
        want_hash = PARAMS.schema_hash()
        if info.protocol_version != P.PROTOCOL_VERSION or info.schema_hash != want_hash:
            raise VersionMismatch(
                f"board firmware {info.firmware!r} speaks protocol v{info.protocol_version} with parameter schema "
                f"{info.schema_hash:08x}; this host speaks protocol v{P.PROTOCOL_VERSION} with schema "
                f"{want_hash:08x}. Reflash the board with `viperdrive flash` (or install the matching host).")
        self.info = info

    @property
    def counts_per_rev(self) -> int:
        cpr = self.options.get("counts_per_rev") or self.config.counts_per_rev
        if cpr:
            return int(cpr)
        if self.info is None:
            raise UserError("counts_per_rev is unknown before configure() (put it in the robot file)")
        return self.info.counts_per_rev

    def activate(self) -> BoardState:
        """Zero the command, zero the encoders, enable; returns the first STATE. BoardFault if FAULT is latched."""
        self._require(configured=True)
        self._read_ramp()
        self._exchange_zero(tolerate_nack=True)     # a stale setpoint must never be executed on enable
        # The board answers in order: a STATE that comes before ZERO_ACK or ENABLE_ACK answers a SET_VEL sent
        # earlier (possibly by someone else just before) and carries positions from before the zero: drop it, so
        # the state activate() returns is the board's answer after ZERO and ENABLE.
        self._io.request(P.pack_zero(), P.ZERO_ACK, stale=P.STATE)
        try:
            payload = self._io.request(P.pack_enable(True), P.ENABLE_ACK, stale=P.STATE)
        except NackError as e:
            if e.code == P.NACK_NOT_ALLOWED:
                code = self._fault_code()
                raise BoardFault(f"the board refuses to enable: FAULT latched ({fault_text(code)}); fix the cause, "
                                 f"then clear it (Board.clear_fault() / `viperdrive info --clear-fault`)") from None
            raise
        if not P.unpack_enable_ack(payload):
            raise BoardFault("the board did not enable (ENABLE_ACK says off)")
        self.epoch += 1
        self.misses = 0
        self.down = None
        self._baseline = None
        self._active_since = self.clock.now()
        state = self._exchange_zero()
        assert state is not None            # None only with tolerate_nack
        # the restart checks start from the board's first answer after ENABLE (a WDT_RESET bit already latched
        # then is old news, not a new reset)
        self._baseline = state
        self.active = True
        return state

    def _exchange_zero(self, tolerate_nack: bool = False) -> BoardState | None:
        sent = time.monotonic()
        self._clock_pair = (sent, self._io.clock.now())
        try:
            payload = self._io.request(P.pack_set_vel(0, 0), P.STATE)
        except NackError:
            if tolerate_nack:
                return None
            raise
        self._pending = None
        state = self._accept_state(payload, self._io.sampled_at(sent, time.monotonic()), check=False)
        self._undelivered = True    # the next read() returns it as this cycle's fresh state
        return state

    def read(self) -> BoardState:
        """This cycle's state. Never raises on a single miss: holds the last values (fresh=False). LinkLost after
        more than max_misses consecutive misses."""
        self._require(active=True)
        self.cycles += 1
        asked, self._asked = self._asked, False
        payload, now = self._collect()
        if payload is not None:
            self.misses = 0
            return self._accept_state(payload, now)
        if not asked and self._state is not None:
            # nothing was asked since the last state (read twice without a write): not a miss
            fresh, self._undelivered = self._undelivered, False
            return self._state if fresh else _held(self._state, self.misses)
        self.misses += 1
        self.total_misses += 1
        self._pending = None
        if self.misses > self.max_misses:
            raise LinkLost(f"no STATE from the board on {self._io.url} for {self.misses} cycles in a row; the "
                           f"board's deadman stops the wheels (check the cable, power and the board's status LED)")
        held = self._state if self._state is not None else BoardState((0.0, 0.0), (0.0, 0.0), 0, (0, 0), now, False)
        self._state = _held(held, self.misses)
        return self._state

    def _collect(self) -> tuple[bytes | None, float]:
        """The newest STATE that arrived (waiting for the outstanding one up to its deadline), or None."""
        link = self._io         # once per call: the hot path
        latest = None
        last_empty = self._pending[0] if self._pending is not None else 0.0
        if self._pending is not None and link.rtt_min != math.inf:
            # no reply comes sooner than the line's shortest round trip: one sleep until most of it has passed,
            # instead of polls that find nothing (each a select and a read of CPU)
            early = self._pending[0] + EARLY_SHARE * link.rtt_min - time.monotonic()
            if early > 0:
                time.sleep(early)
        while True:
            try:
                if not link.is_open and not self._reopen():
                    return None, time.monotonic()
                frames = link.poll()
            except LinkLost:
                return None, time.monotonic()
            for cmd, payload in frames:
                if cmd == P.STATE:
                    latest = payload
                else:
                    self._other_frame(cmd, payload)
            now = time.monotonic()
            board_now = link.clock.now() if self._pending is not None else 0.0
            if latest is not None or self._pending is None or board_now >= self._pending[1]:
                if latest is not None and self._pending is not None:
                    if now - last_empty < 0.001:
                        # the reply was not there < 1 ms ago: now - sent is its round trip to within 1 ms
                        link.record_rtt(now - self._pending[0])
                    else:
                        # a reply that waited since the last look only bounds the round trip from above: counted,
                        # not recorded (how many there are is how often this process was descheduled)
                        link.counts["rtt_unmeasured"] += 1
                # sampled when the outstanding request reached the board (a STATE nobody asked for: on arrival)
                sent = self._pending[0] if latest is not None and self._pending is not None else None
                return latest, (now if sent is None else link.sampled_at(sent, now))
            last_empty = now
            link.wait_readable(min(link.clock.host_seconds(self._pending[1] - board_now), 0.002))

    def _reopen(self) -> bool:
        # the port vanished: one quick attempt per half second, never a wait inside the control loop
        now = time.monotonic()
        if now - self._last_reopen < 0.5:
            return False
        self._last_reopen = now
        if not self._io.try_reopen():
            return False
        # Whatever is on the port now may have rebooted (USB re-plug powers it down) or be another board: HELLO
        # again (one round trip, only on this rare path), and a new epoch, because counts from before the gap and
        # after it need not continue each other (DriveLoop drops the odometry baseline instead of integrating a
        # jump). A rebooted board then answers without ST_ENABLED, which read() reports as BoardDeenergized.
        try:
            self._hello()
        except (LinkError, NackError):
            self._io.close()       # not answering yet: stays a miss, the next attempt in half a second
            return False
        self.epoch += 1
        self._baseline = None
        self._pending = None
        return True

    def _other_frame(self, cmd: int, payload: bytes) -> None:
        if cmd == P.TELEMETRY_DATA:
            try:
                self._telemetry.append((time.monotonic(), P.unpack_telemetry_data(payload)))
            except ValueError:
                pass
        elif cmd == P.SENSORS_DATA:
            try:
                v = P.unpack_sensors_data(payload)
            except ValueError:
                return
            rec = sensor_reading(v, time.monotonic(), self.link.board_to_host(v[1]) if self.link else None)
            self._sensors.append(rec)
            self.latest_sensors = rec
        elif cmd == P.NACK and len(payload) == 2:
            self.last_nack = NackError(payload[0], payload[1])

    def _accept_state(self, payload: bytes, now: float, check: bool = True) -> BoardState:
        pl, pr, vl, vr, status = P.unpack_state(payload)
        k = TWO_PI / self.counts_per_rev
        cl, cr = self._continued(pl, pr)
        state = BoardState((cl * k, cr * k), (vl * k, vr * k), status, (pl, pr), now, True, 0)
        self._state = state
        self._undelivered = False
        if check and self.active:
            why = self._restart_reason(state)
            if why is not None:
                self._went_down(state, *why)
            self._baseline = state
        return state

    def _continued(self, pl: int, pr: int) -> tuple[int, int]:
        """The raw int32 counts continued across their wrap (so positions in rad never jump at +-2**31 counts);
        a new epoch (activate's zeroed encoders, a reopen, a restart) starts again from the raw counts."""
        last = self._unwrap
        if last is None or last[0] != self.epoch:
            cl, cr = pl, pr
        else:
            cl, cr = last[3] + count_delta(pl, last[1]), last[4] + count_delta(pr, last[2])
        self._unwrap = (self.epoch, pl, pr, cl, cr)
        return cl, cr

    def _restart_reason(self, state: BoardState) -> tuple[str, bool] | None:
        """(what happened, encoders restarted?) when this STATE shows the board restarted or de-energized."""
        base = self._baseline
        if state.status & P.ST_WDT_RESET and not (base is not None and base.status & P.ST_WDT_RESET):
            return "was reset by its watchdog", True
        if base is not None:
            jump = max(abs(count_delta(state.counts[0], base.counts[0])),
                       abs(count_delta(state.counts[1], base.counts[1])))
            if jump > self._max_count_step(state.sampled - base.sampled):
                # further than the wheels can turn in that time: the encoders restarted (a reboot that came back
                # enabled, e.g. someone else enabled it): integrating it would throw the pose back
                return f"restarted (encoder counts jumped by {jump} since the last reading)", True
        if not state.status & P.ST_ENABLED:
            # we never disable while active: the board did it on its own
            if state.status & P.ST_FAULT:
                return "de-energized: FAULT latched", False
            return "de-energized (no FAULT: a restart, or its long-silence disable after the host went quiet)", False
        return None

    def _max_count_step(self, dt: float) -> float:
        # generous on purpose (a false alarm stops the robot): three times the top wheel speed, a hand or a slope
        # turning the wheels faster, plus one whole turn; dt gets a period of slack for stamp jitter
        top = max(self.config.wheel_speed_limits)
        return 3.0 * top * self.counts_per_rev / TWO_PI * (max(dt, 0.0) + self.config.period) + self.counts_per_rev

    def _went_down(self, state: BoardState, what: str, restarted: bool) -> NoReturn:
        """Inactive, new epoch, raise BoardDeenergized naming what the board says (one GET_DIAG, off the hot path
        since the loop stops here anyway)."""
        self._not_commanding()
        self.active = False
        self._pending = None
        self._baseline = None
        self.epoch += 1         # the next activate() bumps it again; this one stops a caller integrating across
        detail = []
        try:
            d = P.unpack_diag(self._io.request(P.pack_get_diag(), P.DIAG))
            if d["fault_code"]:
                detail.append(f"fault: {fault_text(d['fault_code'])}")
            detail.append("last reset: " + P.RESET_NAMES.get(d["reset_cause"], f"unknown ({d['reset_cause']})"))
            # up for less time than we have been active: it rebooted behind the open port (power, brown-out)
            if d["uptime_ms"] * 1e-3 < self.clock.now() - self._active_since:
                restarted = True
                if what.startswith("de-energized (no FAULT"):
                    what = "restarted"
        except UserError as e:
            detail.append(f"GET_DIAG failed: {e}")
        status = " ".join(P.status_names(state.status)) or "none"
        todo = ("clear the fault (Board.clear_fault() / `viperdrive info --clear-fault`), then re-activate"
                if state.status & P.ST_FAULT else "re-activate")
        encoders = ("its encoders restarted; odometry continues from the last pose" if restarted
                    else "odometry continues from the last pose")
        self.down = BoardDeenergized(
            f"the board {what} while active (status {status}; {'; '.join(detail)}): its outputs are off and "
            f"nothing is commanded any more; {encoders}; {todo}", cause=what, restarted=restarted, state=state)
        self.moves.forget()
        raise self.down

    def write(self, left_rad_s: float, right_rad_s: float) -> None:
        """Send wheel speeds (rad/s). Clamped jointly (same ratio) to the robot file's max_rim_speed (as wheel rad/s:
        RobotConfig.wheel_speed_limits) BEFORE the conversion."""
        self._require(active=True)
        if not (math.isfinite(left_rad_s) and math.isfinite(right_rad_s)):
            raise BadValue(f"wheel speeds must be finite, got left={left_rad_s} right={right_rad_s}")
        lim_l, lim_r = self.config.wheel_speed_limits
        s = 1.0
        if abs(left_rad_s) > lim_l:
            s = min(s, lim_l / abs(left_rad_s))
        if abs(right_rad_s) > lim_r:
            s = min(s, lim_r / abs(right_rad_s))
        per_rad = self.counts_per_rev / TWO_PI
        cl = _clamp_i32(round(left_rad_s * s * per_rad))
        cr = _clamp_i32(round(right_rad_s * s * per_rad))
        if self.moves.busy:
            self.moves.forget()     # a SET_VEL ends every move on the board (cancelled)
        self._ask(P.pack_set_vel(cl, cr))
        self.clock.commanding(self._hold_s)

    def _not_commanding(self) -> None:
        """No SET_VEL is due any more (disabled, a board move drives, the board went down): a board that follows its
        host runs free again (timebase.Clock.commanding)."""
        if self.link is not None:
            self.link.clock.commanding(None)

    def observe(self) -> None:
        """Ask for the state without commanding anything (GET_STATE): the next read() returns it. The loop's
        exchange while board moves drive the wheels (a SET_VEL would cancel them); it does not feed the deadman."""
        self._require(active=True)
        self._not_commanding()
        self._ask(P.pack_get_state())

    def _ask(self, frame: bytes) -> None:
        link = self._io
        self._asked = True
        self._pending = None
        try:
            if not link.is_open:
                return      # counted as a miss by the next read(), which also tries to reopen
            # a STATE still unread belongs to an earlier exchange: take it now (newest values win) so the next
            # read() returns the reply to THIS command
            for cmd, payload in link.poll():
                if cmd == P.STATE:
                    # a late reply: the values are newer than what read() held, and the link is alive, so the
                    # run of misses ends here (a late frame is not a lost one; only persistent loss is an error)
                    self._accept_state(payload, link.sampled_at(self._sent, time.monotonic()))
                    self.late_replies += 1
                    self.misses = 0
                else:
                    self._other_frame(cmd, payload)
            link.send(frame)
            self._sent = time.monotonic()
        except LinkLost:
            return
        # the reply is due within 80 % of the loop's period of the board's time (the miss budget counts board
        # time: a board the machine does not run misses nothing); the per-command timeout caps it at slow baud
        wait = min(link.timeout_for(len(frame), P.STATE), 0.8 * self.config.period)
        board_now = link.clock.now()
        self._clock_pair = (self._sent, board_now)
        self._pending = (self._sent, board_now + wait)

    def on_clock(self, mono: float) -> float:
        """A host monotonic instant (a BoardState's stamp, a sensor record's host_time) on the board's clock
        (Board.clock): itself for a real board; for a board that is a program, the board time read just after the
        last exchange was sent plus the host time since, never past the board's time now (a stall of this process
        after the send is no board time)."""
        clock = self._io.clock
        if clock is HOST_CLOCK:
            return mono
        pair = self._clock_pair
        now = clock.now()
        if pair is None:
            return now
        return min(pair[1] + max(0.0, mono - pair[0]), now)

    @property
    def clock(self) -> Clock:
        """The board's time for host waits (viperdrive.timebase): the host's clock for a real board, the board time
        of a virtual board or an emulated chip."""
        if self.link is not None:
            return self.link.clock
        return self.options.get("clock") or HOST_CLOCK

    def cleanup(self) -> None:
        if self.link is not None:
            self._io.close()
        if self._owned is not None:
            owned, self._owned = self._owned, None
            owned.close()       # what open_board started for this Board (a private virtual board) ends with it
            self._ended = True
        self.configured = False
        self.active = False

    def recover(self, clear: tuple[int, ...] = (), activate: bool = True) -> BoardInfo:
        """One attempt to bring a lost or restarted board back, bounded by the link's own timeouts (it never waits
        for a port): reopen the port if it is closed, HELLO (protocol and parameter schema: VersionMismatch for
        another firmware), sync the clock, then with `activate` refuse a latched fault (FaultLatched, with its
        `.code`) unless its code is in `clear` (then CLEAR_FAULT first), and activate: zeroed command, zeroed
        encoders (a new epoch: DriveLoop rebases the odometry, so the pose continues), enabled. activate=False
        (a monitor) leaves the board as it is. LinkError or PortError when the board is not back yet: call
        again later.

        A board that is a program (the virtual board, the emulated Pico) and was started anew on the same port
        has a new clock: the registry is asked again, so the waits follow the new board's time. A board that was
        never configured (no board on the port when the command started) is configured first."""
        if not self.configured:
            self.configure()                # PortError, LinkError, VersionMismatch as configure() raises them

        def reopen_once():
            assert self.link is not None        # configured
            if self.link.is_open:
                return
            if self._clock_from_registry:
                fresh = clock_for(self.link.url)
                if getattr(fresh, "path", None) != getattr(self.link.clock, "path", None):
                    self.link.clock.detach()
                    self.link.clock = fresh
                    self.options["clock"] = fresh
            if not self._io.try_reopen():
                raise PortError(f"{self.link.url} is not back yet")

        self._rejoin(reopen_once)
        if activate:
            code = self._fault_code()
            if code > 0:
                if code not in clear:
                    raise FaultLatched(code)
                self.clear_fault()
            self._state = self.activate()
        self.recoveries += 1
        assert self.info is not None        # set by _rejoin()
        return self.info

    def reconnect(self, timeout_s: float = 10.0) -> BoardInfo:
        """After the port went away (USB re-plug): reopen (waiting up to timeout_s for the port), re-check HELLO,
        re-sync the clock and re-read the board's state; re-activate (zero + enable, epoch + 1) if it was active.
        The caller resets its controller and odometry baseline (DriveController.reset(), Odometry.rebase())."""
        was_active = self.active
        self._rejoin(lambda: self._io.reconnect(timeout_s))
        if was_active:
            self.activate()
        else:
            self._exchange_zero(tolerate_nack=True)
        assert self.info is not None        # set by _rejoin()
        return self.info

    def _rejoin(self, reopen: Callable[[], object]) -> None:
        """The part recover() and reconnect() share: inactive, reopen(), forget the counts from before the gap
        (they need not continue), HELLO, clock sync."""
        self._not_commanding()
        self.active = False
        reopen()
        self._pending = None
        self._unwrap = None
        self._hello()
        if self.options.get("clock_sync", True):
            self._io.sync_clock(5)
        self.misses = 0

    def __enter__(self) -> Board:
        self.configure()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.active:
                self.deactivate()
            elif self.link is not None and self.link.is_open:
                self._io.request(P.pack_enable(False), P.ENABLE_ACK)
        except UserError:
            if exc_type is None:
                raise
        finally:
            self.cleanup()
        return False

    @property
    def _io(self) -> Link:
        """The link, which every exchange needs: there from configure() (or the `link` option) on."""
        if self.link is None:
            raise RuntimeError("Board.configure() first")
        return self.link

    def _require(self, configured: bool = False, active: bool = False) -> None:
        if active and not self.active:
            raise RuntimeError("Board.activate() first")
        if configured and not self.configured:
            raise RuntimeError("Board.configure() first")

    # ---- moves on the board (board/moves.py): each returns a Move whose wait() renews the lease ----
    def move_straight(self, distance_m: float, speed_m_s: float | None = None, accel_m_s2: float | None = None,
                      timeout_s: float = 0.0) -> Move:
        """Drive distance_m straight (negative: backwards) at speed_m_s, accelerating at accel_m_s2 (defaults: half
        the robot file's rim limits), holding the board's heading; timeout_s board seconds (0: twice the planned
        time + 1 s)."""
        self._require(active=True)
        self._not_commanding()
        return self.moves.straight(distance_m, speed_m_s, accel_m_s2, timeout_s)

    def move_turn(self, angle_rad: float, rate_rad_s: float | None = None, accel_rad_s2: float | None = None,
                  timeout_s: float = 0.0) -> Move:
        """Turn in place by angle_rad (REP-103: positive turns left) at rate_rad_s, accelerating at accel_rad_s2."""
        self._require(active=True)
        self._not_commanding()
        return self.moves.turn(angle_rad, rate_rad_s, accel_rad_s2, timeout_s)

    def move_arc(self, radius_m: float, angle_rad: float, speed_m_s: float | None = None,
                 accel_m_s2: float | None = None, timeout_s: float = 0.0) -> Move:
        """Drive along a circle of radius_m (negative: backwards) until the heading has changed by angle_rad
        (positive: left), at speed_m_s along the path."""
        self._require(active=True)
        self._not_commanding()
        return self.moves.arc(radius_m, angle_rad, speed_m_s, accel_m_s2, timeout_s)


def _held(state: BoardState, misses: int) -> BoardState:
    return BoardState(state.position, state.velocity, state.status, state.counts, state.sampled, False, misses)


def count_delta(new: int, old: int, bits: int = 32) -> int:
    """new - old for a signed counter of `bits` bits (STATE's int32 encoder counts) that may have wrapped between
    the two readings. The host's one copy; the firmware's is hal/portable.wrap_delta (docs/firmware.md)."""
    m = 1 << bits
    return ((new - old + (m >> 1)) % m) - (m >> 1)


def _clamp_i32(x: int) -> int:
    return max(-INT32_MAX, min(INT32_MAX, int(x)))


def wait_for_hello(url: str, clock: Clock | None = None, seconds: float = 30.0, baud: int = 115200) -> BoardInfo:
    """HELLO until the board at `url` answers (a board that is still booting, a rig compiling its firmware), within
    `seconds` of its own time (`clock`); NoReplyError naming the last failure otherwise."""
    clock = clock or HOST_CLOCK
    end = clock.now() + seconds
    last: UserError | None = None
    while True:
        b = Board(url, baud, clock_sync=False, clock=clock)
        try:
            return b.configure()
        except LinkError as e:
            last = e
        finally:
            b.cleanup()
        if clock.now() >= end:
            raise NoReplyError(f"{url}: no HELLO answer within {seconds:g} s of board time ({last})")


__all__ = ["Board", "BoardDeenergized", "FaultLatched", "count_delta", "wait_for_hello"]
