# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""What a Board asks of the board besides the cycle: request/response services, none for the hot loop (the cycle
is one SET_VEL -> STATE exchange, viperdrive.board.board). Parameters (get, set, save, load), diagnostics, faults,
the board's own odometry, the sensor and telemetry streams (their records arrive alongside read()/write() and are
drained here), the clock sync, handing the board back to its REPL, and the host's counters.

BoardServices is a part of Board (its base class): it uses the Board's link and lifecycle state, declared below,
and holds none of its own.
"""
from __future__ import annotations

import collections
import difflib
from typing import Any

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from ..errors import BadValue, LinkLost, UserError
from .link import Link, NackError
from .records import BoardOdometry, SensorReading, fault_text

HOLD_MARGIN_S = 0.01        # a board that follows its host is held this far inside its deadman (clock.commanding)


class BoardServices:
    """The request/response half of Board (see the module's docstring)."""
    # the Board's state these services read and update (viperdrive.board.board.Board sets them)
    link: Link | None
    active: bool
    total_misses: int
    cycles: int
    misses: int
    late_replies: int
    epoch: int
    _pending: tuple[float, float] | None
    _ramp: tuple[float, float, float] | None
    _hold_s: float
    _sensors: collections.deque[SensorReading]
    _telemetry: collections.deque[tuple[float, Any]]

    @property
    def _io(self) -> Link:
        raise NotImplementedError       # Board's

    def _require(self, configured: bool = False, active: bool = False) -> None:
        raise NotImplementedError       # Board's

    def _not_commanding(self) -> None:
        raise NotImplementedError       # Board's

    def _other_frame(self, cmd: int, payload: bytes) -> None:
        raise NotImplementedError       # Board's

    def cleanup(self) -> None:
        raise NotImplementedError       # Board's

    # ---- parameters ----
    def get_param(self, name: str) -> float:
        p = _param(name)
        self._require(configured=True)
        pid, value = P.unpack_param_value(self._io.request(P.pack_get_param(p[PARAMS.ID]), P.PARAM))
        return value

    def set_param(self, name: str, value: float) -> float:
        """Set a parameter (in the table's units); returns the value the board applied (float32)."""
        p = _param(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadValue(f"{name}={value!r} must be a number in [{p[PARAMS.MIN]}, {p[PARAMS.MAX]}] {p[PARAMS.UNIT]}")
        reason = PARAMS.check(p[PARAMS.ID], value)
        if reason is not None:
            raise BadValue(reason)
        self._require(configured=True)
        try:
            payload = self._io.request(P.pack_set_param(p[PARAMS.ID], value), P.PARAM_SET)
        except NackError as e:
            if e.code == P.NACK_OUT_OF_RANGE:
                raise BadValue(f"the board rejected {name}={value}: allowed [{p[PARAMS.MIN]}, {p[PARAMS.MAX]}] "
                               f"{p[PARAMS.UNIT]}") from None
            raise
        applied = P.unpack_param_value(payload)[1]
        if name in ("max_wheel_speed", "max_accel", "deadman_ms") and self._ramp is not None:
            # the braking bound of deactivate() follows the board's ramp and deadman
            top, acc, deadman = self._ramp
            if name == "max_wheel_speed":
                top = float(applied)
            elif name == "max_accel":
                acc = float(applied)
            else:
                deadman = applied / 1000.0
            self._ramp = (top, acc, deadman)
        if name == "deadman_ms":
            self._hold_s = max(applied / 1000.0 - HOLD_MARGIN_S, HOLD_MARGIN_S)
        return applied

    # ---- requests and streams ----
    def link_request(self, frame: bytes, reply_cmd: int) -> bytes:
        """One request/response exchange on the board's link (services, the move queue); not for the hot loop."""
        self._require(configured=True)
        return self._io.request(frame, reply_cmd)

    def save_params(self) -> None:
        self._require(configured=True)
        self._io.request(P.pack_save_params(), P.SAVE_ACK)

    def load_params(self) -> bool:
        """LOAD_PARAMS: every live parameter back to the saved one (what a reset would load), applied at once.
        Returns True when the board had a saved value for each, False when defaults stood in."""
        self._require(configured=True)
        return P.unpack_load_ack(self._io.request(P.pack_load_params(), P.LOAD_ACK))

    def diag(self) -> dict:
        """GET_DIAG decoded, plus fault/reset/flag names and this side's link counters."""
        self._require(configured=True)
        d = P.unpack_diag(self._io.request(P.pack_get_diag(), P.DIAG))
        d["fault"] = fault_text(d["fault_code"])
        d["reset"] = P.RESET_NAMES.get(d["reset_cause"], f"unknown ({d['reset_cause']})")
        d["flag_names"] = [name for bit, name in P.DIAG_FLAG_NAMES if d["flags"] & bit]
        d["imu"] = P.IMU_NAMES.get(d["imu_state"], f"unknown ({d['imu_state']})")
        d["host_link"] = self._io.stats()
        d["host_misses"] = self.total_misses
        return d

    def stop_link(self) -> float:
        """Hand the board back to its MicroPython REPL (STOP_LINK), e.g. so mpremote can reflash it.

        The board answers STOP_LINK_ACK, cuts its outputs, stops its control loop and link, writes its repl_mode
        boot switch and lets its watchdog reset it into REPL mode; it speaks no protocol after that, so this
        closes the port. It stays in REPL mode until its repl_mode file is removed (`viperdrive flash` does that
        last). Returns the seconds within which the board resets (0.0: its REPL is there already). A USB board
        re-enumerates in that reset: wait for its port to come back before opening it again."""
        self._require(configured=True)
        payload = self._io.request(P.pack_stop_link(), P.STOP_LINK_ACK, stale=P.STATE)
        reset_s = P.unpack_stop_link_ack(payload) / 1000.0
        self._not_commanding()
        self.active = False
        self._pending = None
        self.cleanup()
        return reset_s

    def _fault_code(self) -> int:
        try:
            return P.unpack_diag(self._io.request(P.pack_get_diag(), P.DIAG))["fault_code"]
        except UserError:
            return -1

    def clear_fault(self) -> int:
        """Clear a latched fault; returns the code that was latched (0: none)."""
        self._require(configured=True)
        return P.unpack_fault_cleared(self._io.request(P.pack_clear_fault(), P.FAULT_CLEARED))

    def odometry(self) -> BoardOdometry:
        """The board's own odometry (GET_ODOM) with both headings: the pose's (gyro when present) and the encoders'."""
        self._require(configured=True)
        t_us, x, y, th, th_enc, src = P.unpack_odom(self._io.request(P.pack_get_odom(), P.ODOM))
        return BoardOdometry(self._io.board_to_host(t_us), x / P.ODOM_LENGTH_SCALE, y / P.ODOM_LENGTH_SCALE,
                             th / P.ODOM_ANGLE_SCALE, th_enc / P.ODOM_ANGLE_SCALE,
                             "gyro" if src == P.ODOM_HEADING_GYRO else "encoders")

    def sensors(self, rate_hz: int) -> int:
        """Ask for SENSORS_DATA at rate_hz (0 stops); returns the rate the board granted (its sensor rate divided
        by a whole number). The records arrive alongside read()/write(): sensor_readings() drains them."""
        if not (isinstance(rate_hz, int) and not isinstance(rate_hz, bool) and 0 <= rate_hz <= 65535):
            raise BadValue(f"sensor rate {rate_hz!r} must be a whole number of Hz in [0, 65535]")
        self._require(configured=True)
        try:
            return P.unpack_sensors_ack(self._io.request(P.pack_sensors(rate_hz), P.SENSORS_ACK))
        except NackError as e:
            if e.code == P.NACK_OUT_OF_RANGE:
                raise BadValue(f"sensor rate {rate_hz} Hz is above the board's sensor rate") from None
            raise

    def sensor_readings(self, poll: bool = True) -> list[SensorReading]:
        """SENSORS_DATA records received so far (drained, oldest first); latest_sensors keeps the newest. poll=False
        takes only what read()/write() already took off the link (a loop that just read: no second read of the
        port each cycle)."""
        if poll:
            self._poll_other()
        out = list(self._sensors)
        self._sensors.clear()
        return out

    def _poll_other(self) -> None:
        if self.link is not None and self.link.is_open:
            try:
                for cmd, payload in self._io.poll():
                    if cmd == P.STATE:
                        # a STATE outside read(): keep it for the next read() rather than lose it
                        self._io.push_back([(cmd, payload)])
                    else:
                        self._other_frame(cmd, payload)
            except LinkLost:
                pass

    def telemetry(self, rate_hz: int) -> int:
        """Ask for TELEMETRY_DATA at rate_hz (0 stops); returns the rate the board granted."""
        if not (isinstance(rate_hz, int) and 0 <= rate_hz <= 65535):
            raise BadValue(f"telemetry rate {rate_hz!r} must be a whole number of Hz in [0, 65535]")
        self._require(configured=True)
        return P.unpack_telemetry_ack(self._io.request(P.pack_telemetry(rate_hz), P.TELEMETRY_ACK))

    def telemetry_frames(self) -> list[dict]:
        """TELEMETRY_DATA received so far (drained), each a dict with "handled" (host time it was taken off the
        link) and, when the clock is synced, "t": the board's stamp on the host clock (use that one)."""
        self._poll_other()
        out = []
        while self._telemetry:
            arrived, v = self._telemetry.popleft()
            rec = dict(zip(("seq", "t_us", "setpoint_l", "measured_l", "output_l", "integrator_l", "setpoint_r",
                            "measured_r", "output_r", "integrator_r", "status"), v, strict=True))
            rec["handled"] = arrived
            rec["t"] = self.link.board_to_host(rec["t_us"]) if self.link is not None else None
            out.append(rec)
        return out

    def sync_clock(self, samples: int = 5) -> dict:
        """Another TIME burst (Link.sync_clock): call every few seconds so drift is tracked."""
        self._require(configured=True)
        return self._io.sync_clock(samples)

    def stats(self) -> dict:
        return {"cycles": self.cycles, "misses": self.misses, "total_misses": self.total_misses,
                "late_replies": self.late_replies,
                "epoch": self.epoch, "link": self._io.stats() if self.link else None}


def _param(name: str) -> tuple:
    p = PARAMS.by_name(name)
    if p is None:
        names = [q[PARAMS.NAME] for q in PARAMS.TABLE]
        close = difflib.get_close_matches(name, names, n=1)
        raise BadValue(f"unknown parameter {name!r}{f' (did you mean {close[0]!r}?)' if close else ''}; "
                       f"known: {', '.join(names)}")
    return p
