# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The board's link service: the shared Parser over the hal's link stream, dispatch of every command of
# shared/protocol.py, replies, NACKs with the documented codes, and counters for GET_DIAG.
#
# Runs in the slow loop (soft, 50-1000 passes/s). The control step runs from its own timer and never waits for
# this task: a burst of garbage costs this task time, never the control loop's. Work per pass is bounded
# (max_bytes) so one pass cannot starve the supervisor or odometry either.
import struct

from .shared import params, protocol

# payload length each fixed-size command must have (SET_PARAM depends on the parameter's type)
_LENGTHS = {
    protocol.HELLO: 0, protocol.SET_VEL: 8, protocol.ENABLE: 1, protocol.ZERO: 0, protocol.TIME: 4,
    protocol.GET_PARAM: 1, protocol.SAVE_PARAMS: 0, protocol.CLEAR_FAULT: 0, protocol.GET_DIAG: 0,
    protocol.TELEMETRY: 2, protocol.GET_ODOM: 0, protocol.STOP_LINK: 0, protocol.LOAD_PARAMS: 0,
    protocol.SENSORS: 2, protocol.MOVE: 24, protocol.MOVE_LEASE: 1, protocol.GET_STATE: 0,
}
_TYPE_SIZE = {"f": 4, "H": 2}


class Link:
    """handler: the App (or anything with its methods: info, set_velocity, state, enable, fault, zero, get_param,
    set_param, save_params, load_params, clear_fault, diag, set_telemetry, set_sensors, odom, ticks_us, stop_link,
    move, move_lease, move_report).

    After STOP_LINK (stopped = True) the link interprets nothing more: the bytes that follow belong to the REPL.

    A partial frame whose bytes stopped arriving for longer than the frame gap (protocol.frame_gap_us at the
    stream's baud, 115200 when it has none) is dropped and counted (DIAG frame_timeouts). A stream that knows its
    peer (the virtual board's TCP link: `reconnects` counts new clients) restarts the parser for a new one."""

    def __init__(self, stream, handler, max_bytes=256):
        self.stream = stream
        self.handler = handler
        self.parser = protocol.Parser(protocol.frame_gap_us(getattr(stream, "baud", None) or 115200))
        self._peer = getattr(stream, "reconnects", 0)
        self.rx = bytearray(64)
        self.tx = bytearray(protocol.MAX_FRAME)
        self.max_bytes = max_bytes
        self.passes = 0             # the supervisor's progress mark for this task
        self.nacks = 0
        self.replies = 0
        self.rx_us = 0              # ticks_us when the frame being handled completed (TIME_ACK)
        self.stopped = False        # STOP_LINK served: service() reads nothing more

    def close(self):
        self.stream.close()

    def service(self):
        """One pass: read what is waiting (at most max_bytes), handle every frame it completes."""
        parser = self.parser
        rx = self.rx
        stream = self.stream
        budget = self.max_bytes
        while budget > 0 and not self.stopped:
            now = self.handler.ticks_us()
            n = stream.readinto(rx)
            peer = getattr(stream, "reconnects", 0)
            if peer != self._peer:
                # a new client on the line: nothing the previous one left half-sent belongs to its frames
                self._peer = peer
                parser.reset()
            if not n:
                # nothing arrived since the last read: a partial frame older than the frame gap is dropped (a
                # complete frame held behind it comes out)
                self._handle(parser.expire(now))
                break
            parser.mark(now)
            budget -= n
            for i in range(n):
                if self._handle(parser.feed_byte(rx[i])):
                    break
        self.passes += 1

    def _handle(self, cmd):
        """Dispatch the frame cmd completed and every further one the parser holds; True after STOP_LINK."""
        parser = self.parser
        while cmd >= 0:
            self.rx_us = self.handler.ticks_us()
            self.dispatch(cmd, bytes(parser.buf[3:3 + parser.payload_len]))
            if self.stopped:
                # what follows STOP_LINK is the host talking to the REPL (mpremote's Ctrl-C, Ctrl-A): no frame of
                # it may act on the board
                return True
            cmd = parser.poll()
        return False

    # ---- replies ----

    def send(self, frame):
        self.stream.write(frame)
        self.replies += 1

    def nack(self, cmd, code):
        self.nacks += 1
        self.send(protocol.pack_nack(cmd, code))

    def counters(self):
        p = self.parser
        return {"frames_ok": p.frames, "crc_errors": p.crc_errors, "length_errors": p.length_errors,
                "garbage_bytes": p.garbage_bytes, "frame_timeouts": p.timeouts, "nacks": self.nacks}

    # ---- dispatch ----

    def dispatch(self, cmd, payload):
        h = self.handler
        want = _LENGTHS.get(cmd)
        if want is None and cmd != protocol.SET_PARAM:
            # replies and unsolicited frame codes are not commands a board takes
            self.nack(cmd, protocol.NACK_UNKNOWN)
            return
        if want is not None and len(payload) != want:
            self.nack(cmd, protocol.NACK_BAD_LENGTH)
            return
        if cmd == protocol.SET_VEL:
            # the hot command first; valid frames only reach here, so only they restart the deadman
            vl, vr = protocol.unpack_set_vel(payload)
            h.set_velocity(vl, vr)
            self.send(protocol.pack_state(*h.state()))
        elif cmd == protocol.HELLO:
            hz, cpr, firmware, board = h.info()
            self.send(protocol.pack_info(protocol.PROTOCOL_VERSION, params.schema_hash(), hz, cpr, firmware,
                                         board))
        elif cmd == protocol.ENABLE:
            try:
                on = protocol.unpack_enable(payload)
            except ValueError:
                self.nack(cmd, protocol.NACK_OUT_OF_RANGE)
                return
            if on and h.fault():
                # a latched fault needs CLEAR_FAULT first: enabling over it would hide the cause
                self.nack(cmd, protocol.NACK_NOT_ALLOWED)
                return
            self.send(protocol.pack_enable_ack(h.enable(on)))
        elif cmd == protocol.ZERO:
            h.zero()
            self.send(protocol.pack_zero_ack())
        elif cmd == protocol.TIME:
            host_us = protocol.unpack_time(payload)
            self.send(protocol.pack_time_ack(host_us, self.rx_us, h.ticks_us()))
        elif cmd == protocol.GET_PARAM:
            pid = payload[0]
            if params.by_id(pid) is None:
                self.nack(cmd, protocol.NACK_UNKNOWN_PARAM)
                return
            self.send(protocol.pack_param(pid, h.get_param(pid)))
        elif cmd == protocol.SET_PARAM:
            self._set_param(payload)
        elif cmd == protocol.SAVE_PARAMS:
            try:
                h.save_params()
            except OSError:
                self.nack(cmd, protocol.NACK_STORAGE)
                return
            self.send(protocol.pack_save_ack())
        elif cmd == protocol.LOAD_PARAMS:
            self.send(protocol.pack_load_ack(h.load_params()))
        elif cmd == protocol.CLEAR_FAULT:
            self.send(protocol.pack_fault_cleared(h.clear_fault()))
        elif cmd == protocol.GET_DIAG:
            self.send(protocol.pack_diag(h.diag()))
        elif cmd == protocol.TELEMETRY:
            rate = protocol.unpack_telemetry(payload)
            applied = h.set_telemetry(rate)
            if applied is None:
                self.nack(cmd, protocol.NACK_OUT_OF_RANGE)
                return
            self.send(protocol.pack_telemetry_ack(applied))
        elif cmd == protocol.SENSORS:
            applied = h.set_sensors(protocol.unpack_sensors(payload))
            if applied is None:
                self.nack(cmd, protocol.NACK_OUT_OF_RANGE)
                return
            self.send(protocol.pack_sensors_ack(applied))
        elif cmd == protocol.GET_STATE:
            self.send(protocol.pack_state(*h.state()))
        elif cmd == protocol.MOVE:
            code = h.move(*protocol.unpack_move(payload))
            if code:
                self.nack(cmd, code)
                return
            self.send(protocol.pack_move_state(*h.move_report()))
        elif cmd == protocol.MOVE_LEASE:
            h.move_lease(payload[0] & protocol.MOVE_LEASE_CANCEL)
            self.send(protocol.pack_move_state(*h.move_report()))
        elif cmd == protocol.GET_ODOM:
            self.send(protocol.pack_odom(*h.odom()))
        elif cmd == protocol.STOP_LINK:
            # the handler de-energizes at once and returns the ms until its reset into REPL mode; the ACK goes
            # out before the link closes, so the host knows the silence that follows is on purpose
            self.stopped = True
            self.send(protocol.pack_stop_link_ack(h.stop_link()))

    def _set_param(self, payload):
        cmd = protocol.SET_PARAM
        if len(payload) < 1:
            self.nack(cmd, protocol.NACK_BAD_LENGTH)
            return
        p = params.by_id(payload[0])
        if p is None:
            self.nack(cmd, protocol.NACK_UNKNOWN_PARAM)
            return
        if len(payload) != 1 + _TYPE_SIZE[p[params.TYPE]]:
            self.nack(cmd, protocol.NACK_BAD_LENGTH)
            return
        pid, value = struct.unpack("<B" + p[params.TYPE], payload)
        if self.handler.set_param(pid, value) is not None:
            # the handler returns the reason it refused (not finite, outside [min, max], not whole)
            self.nack(cmd, protocol.NACK_OUT_OF_RANGE)
            return
        self.send(protocol.pack_param_set(pid, self.handler.get_param(pid)))
