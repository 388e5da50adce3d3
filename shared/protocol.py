# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# viperdrive wire protocol: the one definition of every frame, imported unchanged by the board (MicroPython,
# CircuitPython) and by the host (CPython, as viperdrive.shared.protocol). docs/protocol.md is its prose twin.
#
# Frame: [0xAA][LEN][CMD][PAYLOAD ...][CRC_LO][CRC_HI]
#   LEN = len(CMD + PAYLOAD), 1..64. CRC-16/CCITT-FALSE over LEN, CMD, PAYLOAD, little-endian on the wire.
#   All multi-byte fields little-endian. Replies use CMD | 0x80; NACK is 0xFF [u8 cmd][u8 code].
#
# Imports only struct (both interpreters have it); micropython.const where it exists.
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):  # type: ignore[misc]  # mypy (make typecheck) sees the stubs' generic const
        return x

PROTOCOL_VERSION = const(6)     # 2: STOP_LINK / STOP_LINK_ACK; 3: FAULT_ENCODER_*, NACK_BUSY, DIAG frame_timeouts,
#                                 LOAD_PARAMS / LOAD_ACK, DIAG_PARAMS_UNSAVED; 4: board sensors (SENSORS /
#                                 SENSORS_ACK / SENSORS_DATA, ST_BATTERY_LOW, ST_ESTOP, FAULT_ESTOP,
#                                 FAULT_BATTERY_LOW, ODOM's encoder heading, DIAG imu_state / imu_errors);
#                                 5: moves on the board (MOVE / MOVE_LEASE / MOVE_STATE, GET_STATE);
#                                 6: the DIAG flags DIAG_FROZEN and DIAG_UNUSED_PACKAGE / _MAIN / _ROOT

SYNC = const(0xAA)
MAX_LEN = const(64)             # LEN upper bound: CMD + PAYLOAD
OVERHEAD = const(4)             # SYNC, LEN, CRC16
MAX_FRAME = const(68)           # OVERHEAD + MAX_LEN
REPLY = const(0x80)

# host -> board commands
HELLO = const(0x00)
SET_VEL = const(0x01)
ENABLE = const(0x02)
ZERO = const(0x03)
TIME = const(0x04)
GET_PARAM = const(0x05)
SET_PARAM = const(0x06)
SAVE_PARAMS = const(0x07)
CLEAR_FAULT = const(0x08)
GET_DIAG = const(0x09)
TELEMETRY = const(0x0A)
GET_ODOM = const(0x0B)
STOP_LINK = const(0x0C)        # hand the board back to its REPL (docs/protocol.md)
LOAD_PARAMS = const(0x0D)      # live parameters back to the saved ones (what a reset would load)
SENSORS = const(0x0E)          # u16 rate Hz of the SENSORS_DATA stream (0: off)
MOVE = const(0x0F)             # queue a straight line, a turn in place or an arc (docs/protocol.md "Moves")
MOVE_LEASE = const(0x10)       # renew the moves' lease (flag: cancel them); replies MOVE_STATE
GET_STATE = const(0x11)        # STATE without a command (the host watches while moves drive); not a deadman feed

# board -> host replies (CMD | 0x80)
INFO = const(0x80)
STATE = const(0x81)
ENABLE_ACK = const(0x82)
ZERO_ACK = const(0x83)
TIME_ACK = const(0x84)
PARAM = const(0x85)
PARAM_SET = const(0x86)
SAVE_ACK = const(0x87)
FAULT_CLEARED = const(0x88)
DIAG = const(0x89)
TELEMETRY_ACK = const(0x8A)
ODOM = const(0x8B)
STOP_LINK_ACK = const(0x8C)
LOAD_ACK = const(0x8D)
SENSORS_ACK = const(0x8E)
MOVE_STATE = const(0x8F)        # the move queue: reply to MOVE and MOVE_LEASE
# unsolicited board -> host frames (0x90..0xFE): sent without a request
TELEMETRY_DATA = const(0x90)
SENSORS_DATA = const(0x91)      # one record per sensor sample (IMU, battery, e-stop), at the rate SENSORS set
NACK = const(0xFF)

COMMAND_NAMES = {
    HELLO: "HELLO", SET_VEL: "SET_VEL", ENABLE: "ENABLE", ZERO: "ZERO", TIME: "TIME",
    GET_PARAM: "GET_PARAM", SET_PARAM: "SET_PARAM", SAVE_PARAMS: "SAVE_PARAMS", CLEAR_FAULT: "CLEAR_FAULT",
    GET_DIAG: "GET_DIAG", TELEMETRY: "TELEMETRY", GET_ODOM: "GET_ODOM", STOP_LINK: "STOP_LINK",
    LOAD_PARAMS: "LOAD_PARAMS", SENSORS: "SENSORS", MOVE: "MOVE", MOVE_LEASE: "MOVE_LEASE",
    GET_STATE: "GET_STATE",
    INFO: "INFO", STATE: "STATE", ENABLE_ACK: "ENABLE_ACK", ZERO_ACK: "ZERO_ACK", TIME_ACK: "TIME_ACK",
    PARAM: "PARAM", PARAM_SET: "PARAM_SET", SAVE_ACK: "SAVE_ACK", FAULT_CLEARED: "FAULT_CLEARED",
    DIAG: "DIAG", TELEMETRY_ACK: "TELEMETRY_ACK", ODOM: "ODOM", STOP_LINK_ACK: "STOP_LINK_ACK",
    LOAD_ACK: "LOAD_ACK", SENSORS_ACK: "SENSORS_ACK", MOVE_STATE: "MOVE_STATE",
    TELEMETRY_DATA: "TELEMETRY_DATA", SENSORS_DATA: "SENSORS_DATA",
    NACK: "NACK",
}

# NACK codes
NACK_UNKNOWN = const(1)         # unknown command
NACK_BAD_LENGTH = const(2)      # payload length does not match the command
NACK_OUT_OF_RANGE = const(3)    # value outside the parameter's [min, max] or not finite
NACK_NOT_ALLOWED = const(4)     # not allowed in this state (e.g. ENABLE while FAULT is latched)
NACK_STORAGE = const(5)         # filesystem error while saving parameters
NACK_UNKNOWN_PARAM = const(6)   # parameter id not in the schema
NACK_BUSY = const(7)            # another client holds the link (the virtual board's TCP server to a second client)
NACK_NAMES = {
    NACK_UNKNOWN: "unknown command", NACK_BAD_LENGTH: "bad length", NACK_OUT_OF_RANGE: "out of range",
    NACK_NOT_ALLOWED: "not allowed in this state", NACK_STORAGE: "storage error",
    NACK_UNKNOWN_PARAM: "unknown parameter id", NACK_BUSY: "busy: another client holds the link",
}

# STATE status byte
ST_ENABLED = const(0x01)        # outputs energized
ST_DEADMAN = const(0x02)        # no valid SET_VEL within deadman_ms; clears on the next one
ST_FAULT = const(0x04)          # latched fault; cleared only by CLEAR_FAULT
ST_SATURATED = const(0x08)      # a wheel's PID output is at its limit
ST_WDT_RESET = const(0x10)      # the last reset was the watchdog's; cleared by CLEAR_FAULT
ST_BATTERY_LOW = const(0x20)    # battery below battery_warn_v (a warning; below battery_cutoff_v: FAULT_BATTERY_LOW)
ST_ESTOP = const(0x40)          # the e-stop input is open now (pressed, or its wire broken)
STATUS_BITS = ((ST_ENABLED, "ENABLED"), (ST_DEADMAN, "DEADMAN"), (ST_FAULT, "FAULT"),
               (ST_SATURATED, "SATURATED"), (ST_WDT_RESET, "WDT_RESET"), (ST_BATTERY_LOW, "BATTERY_LOW"),
               (ST_ESTOP, "ESTOP"))

# fault codes (GET_DIAG fault_code, CLEAR_FAULT reply)
FAULT_NONE = const(0)
FAULT_STALL_LEFT = const(1)     # left output saturated while |speed| < stall_speed for stall_ms
FAULT_STALL_RIGHT = const(2)
FAULT_TRACKING_LEFT = const(3)  # |setpoint - speed| > track_err_max for track_err_ms
FAULT_TRACKING_RIGHT = const(4)
FAULT_OVERSPEED_LEFT = const(5)  # measured speed above 1.5 x max_wheel_speed
FAULT_OVERSPEED_RIGHT = const(6)
FAULT_WATCHDOG = const(7)       # the board came back from a watchdog reset
FAULT_ENCODER_LEFT = const(8)   # left wheel measured far slower than its duty predicts (enc_ratio/enc_margin/enc_ms)
FAULT_ENCODER_RIGHT = const(9)
FAULT_ESTOP = const(10)         # the e-stop input opened: outputs cut in that control period (stop category 0)
FAULT_BATTERY_LOW = const(11)   # battery below battery_cutoff_v for battery_ms
FAULT_NAMES = {
    FAULT_NONE: "none",
    FAULT_STALL_LEFT: "left wheel stalled (output saturated, no motion)",
    FAULT_STALL_RIGHT: "right wheel stalled (output saturated, no motion)",
    FAULT_TRACKING_LEFT: "left wheel tracking error too large",
    FAULT_TRACKING_RIGHT: "right wheel tracking error too large",
    FAULT_OVERSPEED_LEFT: "left wheel over speed",
    FAULT_OVERSPEED_RIGHT: "right wheel over speed",
    FAULT_WATCHDOG: "watchdog reset",
    FAULT_ENCODER_LEFT: "left wheel turns far faster than its encoder counts, or is held back (encoder or mechanical)",
    FAULT_ENCODER_RIGHT: "right wheel turns far faster than its encoder counts, or is held back (encoder or "
                         "mechanical)",
    FAULT_ESTOP: "emergency stop: the e-stop input opened (button pressed or its wire broken)",
    FAULT_BATTERY_LOW: "battery below the cut-off voltage (battery_cutoff_v)",
}

# IMU states (SENSORS_DATA imu_state, DIAG imu_state)
IMU_NONE = const(0)             # the board config names no IMU
IMU_OK = const(1)               # samples arriving
IMU_STARTING = const(2)         # configured, its init sequence has not run yet
IMU_NO_ANSWER = const(3)        # NACK on its address or an I2C timeout (missing, unpowered, stopped answering):
#                                 retried every IMU_RETRY_MS; the odometry heading falls back to the encoders
IMU_WRONG_ID = const(4)         # something answers at the address, but WHO_AM_I is not the configured part's
IMU_NAMES = {IMU_NONE: "none", IMU_OK: "ok", IMU_STARTING: "starting", IMU_NO_ANSWER: "no answer",
             IMU_WRONG_ID: "wrong WHO_AM_I"}
IMU_RETRY_MS = const(1000)

# SENSORS_DATA flags byte
SF_ESTOP_OPEN = const(0x01)     # the e-stop input is open now
SF_BATTERY_LOW = const(0x02)    # battery below battery_warn_v
SF_GYRO_HEADING = const(0x04)   # the board odometry's heading comes from the gyro now (else the encoders)
SF_BIAS_VALID = const(0x08)     # gyro_bias_z is an estimate from a still period (else 0)
SF_STILL = const(0x10)          # the encoders say the robot is still: the bias estimate is being updated
SF_HAS_ESTOP = const(0x20)      # the board config has an e-stop input
SF_HAS_BATTERY = const(0x40)    # the board config has a battery ADC input (else battery_mv is 0)
SENSOR_FLAG_BITS = ((SF_ESTOP_OPEN, "ESTOP_OPEN"), (SF_BATTERY_LOW, "BATTERY_LOW"),
                    (SF_GYRO_HEADING, "GYRO_HEADING"), (SF_BIAS_VALID, "BIAS_VALID"), (SF_STILL, "STILL"),
                    (SF_HAS_ESTOP, "HAS_ESTOP"), (SF_HAS_BATTERY, "HAS_BATTERY"))

# reset causes (GET_DIAG reset_cause)
RESET_POWER_ON = const(0)
RESET_WATCHDOG = const(1)
RESET_SOFT = const(2)
RESET_OTHER = const(3)
RESET_NAMES = {RESET_POWER_ON: "power on", RESET_WATCHDOG: "watchdog", RESET_SOFT: "soft reset",
               RESET_OTHER: "other"}

# GET_DIAG flags
DIAG_PARAMS_DEFAULTED = const(0x01)  # the parameter file was missing or corrupt: defaults are in use
DIAG_TIMER_SOFT = const(0x02)        # the control loop runs from a soft timer/thread, not a hard IRQ
DIAG_PARAMS_UNSAVED = const(0x04)    # a live parameter differs from the saved one (what a reset would load)
# the firmware runs from a Pico image it is frozen into (tools/build_uf2.py); the three after it: what an earlier
# flash left on the filesystem, which does not run beside a frozen firmware
DIAG_FROZEN = const(0x08)
DIAG_UNUSED_PACKAGE = const(0x10)    # lib/viperdrive/ (the frozen package comes before /lib on sys.path)
DIAG_UNUSED_MAIN = const(0x20)       # main.py (a frozen main.py runs instead)
DIAG_UNUSED_ROOT = const(0x40)       # the firmware's modules at the root (flashes before the package)
DIAG_FLAG_NAMES = ((DIAG_PARAMS_DEFAULTED, "PARAMS_DEFAULTED"), (DIAG_TIMER_SOFT, "TIMER_SOFT"),
                   (DIAG_PARAMS_UNSAVED, "PARAMS_UNSAVED"), (DIAG_FROZEN, "FROZEN"),
                   (DIAG_UNUSED_PACKAGE, "UNUSED_PACKAGE"), (DIAG_UNUSED_MAIN, "UNUSED_MAIN"),
                   (DIAG_UNUSED_ROOT, "UNUSED_ROOT"))


def status_names(status):
    """The names of the bits set in a STATE status byte, e.g. ['ENABLED', 'DEADMAN']."""
    return [name for bit, name in STATUS_BITS if status & bit]


# ---- CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, xorout 0; check('123456789') = 0x29B1 ----

def _make_crc_table():
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        t.append(c & 0xFFFF)
    # a tuple of small ints: no per-lookup allocation on MicroPython
    return tuple(t)


_CRC_TABLE = _make_crc_table()


def crc16(data, crc=0xFFFF, start=0, end=-1):
    """CRC-16/CCITT-FALSE of data[start:end] (end=-1: to the end) continuing from crc."""
    if end < 0:
        end = len(data)
    table = _CRC_TABLE
    for i in range(start, end):
        crc = ((crc << 8) & 0xFF00) ^ table[((crc >> 8) ^ data[i]) & 0xFF]
    return crc


# ---- framing ----

def encode(cmd, payload=b""):
    """A whole frame for cmd with payload (bytes-like)."""
    n = len(payload) + 1
    if n > MAX_LEN:
        raise ValueError("payload too long")
    buf = bytearray(n + OVERHEAD)
    buf[0] = SYNC
    buf[1] = n
    buf[2] = cmd
    buf[3:3 + n - 1] = payload
    crc = crc16(buf, 0xFFFF, 1, n + 2)
    buf[n + 2] = crc & 0xFF
    buf[n + 3] = crc >> 8
    return bytes(buf)


_COUNTER_MAX = const(0x3FFFFFFF)    # Parser counters wrap to 0 after this (see _count)
_TICKS_MASK = const(0x3FFFFFFF)     # tick differences are taken modulo 2**30 (ticks_us wraps there on 32-bit ports)

# A partial frame is dropped once its bytes stopped arriving for longer than the frame gap: FRAME_GAP_BYTES byte
# times at the line's baud rate, and at least FRAME_GAP_MIN_US, which covers how the bytes reach the reader (USB
# full-speed packets every 1 ms, a UART's receive FIFO timeout). A frame is written in one piece, so a gap inside
# one means its sender stopped (a client that went away, a board that reset mid-frame). The host uses a larger
# minimum (the latency timer of USB-serial adapters; host/viperdrive/board/link.py).
FRAME_GAP_BYTES = const(8)
FRAME_GAP_MIN_US = const(2000)
BITS_PER_BYTE = const(10)           # UART 8N1: start bit, 8 data bits, stop bit


def frame_gap_us(baud, min_us=FRAME_GAP_MIN_US):
    """The silence (us) after which a partial frame is dropped at baud: FRAME_GAP_BYTES byte times, >= min_us."""
    t = FRAME_GAP_BYTES * BITS_PER_BYTE * 1000000 // baud
    return t if t > min_us else min_us


def _count(c, k):
    """(c + k) wrapped to [0, _COUNTER_MAX], without an intermediate value above _COUNTER_MAX.

    2**30 - 1 is the largest small int on 32-bit MicroPython ports: one more and every increment would allocate a
    long int, so the board's receive path would start allocating after ~1 GB of traffic (a day at 115200 baud).
    """
    if c <= _COUNTER_MAX - k:
        return c + k
    return c - _COUNTER_MAX - 1 + k


class Parser:
    """Byte-stream deframer: feed(data) -> [(cmd, payload bytes), ...].

    Resynchronises after garbage, a bad length and a bad CRC: on an error it drops only the sync byte and
    hunts for the next 0xAA among the bytes it already holds, so a real frame that starts inside a broken one
    is still found. Every byte fed ends in exactly one place: a good frame (frame_bytes), garbage_bytes, or
    the pending buffer, so bytes_in == frame_bytes + garbage_bytes + pending() at all times (modulo 2**30: every
    counter wraps to 0 after _COUNTER_MAX so it stays a small int on a 32-bit board). crc_errors, length_errors
    and timeouts count events.

    feed_byte(b) and poll() are the allocation-free core over one preallocated buffer: each returns the
    command code of a completed frame (payload readable as buf[3:3+payload_len] until the next call) or -1.
    Work per byte is constant; the CRC is computed once per candidate frame when its last byte arrives.

    Stale partial frames (gap_us): the caller says when it read, in ticks of a microsecond clock it owns (the
    parser reads no clock): mark(now) after a read that returned bytes, expire(now) after one that returned
    none. An empty read proves the line was silent since the last bytes; when that silence is longer than gap_us
    every held candidate that still needs bytes is dropped like a bad CRC (its sync byte, counted in timeouts) and
    the hunt goes on among the held bytes, so a complete frame held behind it still comes out (expire() returns
    it like poll()). A late read that returns bytes proves nothing about gaps, so a slow reader never drops a
    frame that arrived whole.
    """

    def __init__(self, gap_us=FRAME_GAP_MIN_US):
        self.buf = bytearray(MAX_FRAME + 1)
        self.n = 0              # bytes held in buf[0:n]
        self.consumed = 0       # bytes of the frame returned last time, dropped on the next call
        self.payload_len = 0
        self.gap_us = gap_us    # silence after which a partial frame is dropped (0: never)
        self.t_mark = 0         # caller's ticks_us of the last read that returned bytes
        self.stale = 0          # buf[0:stale] arrived before a silence longer than gap_us
        self.frames = 0
        self.frame_bytes = 0
        self.crc_errors = 0
        self.length_errors = 0
        self.garbage_bytes = 0
        self.timeouts = 0       # partial frames dropped: their bytes stopped arriving, or reset() with one held
        self.bytes_in = 0

    def pending(self):
        return self.n - self.consumed

    def reset(self):
        """Drop a pending partial frame (its bytes counted as garbage, the frame in timeouts: its sender went away,
        e.g. a new connection); counters are kept."""
        self._drop(self.consumed)
        self.consumed = 0
        if self.n:
            self.garbage_bytes = _count(self.garbage_bytes, self.n)
            self.timeouts = _count(self.timeouts, 1)
        self.n = 0
        self.stale = 0

    def mark(self, now):
        """A read returned bytes at now (the caller's ticks_us): the line is alive."""
        self.t_mark = now

    def expire(self, now):
        """A read returned nothing at now (ticks_us): after a silence longer than gap_us the held partial frames
        are dropped (timeouts). -> the command of a complete frame that was held behind one, or -1 (then poll()
        for more, as after feed_byte)."""
        if self.consumed:
            self._drop(self.consumed)
            self.consumed = 0
        if self.n == 0 or self.gap_us <= 0 or ((now - self.t_mark) & _TICKS_MASK) <= self.gap_us:
            return -1
        self.stale = self.n
        return self.poll()

    def _drop(self, k):
        # Shift buf[k:n] down to buf[0:] in place (a slice copy would allocate).
        if k <= 0:
            return
        buf = self.buf
        n = self.n
        i = k
        while i < n:
            buf[i - k] = buf[i]
            i += 1
        self.n = n - k
        st = self.stale
        self.stale = st - k if st > k else 0

    def _timed_out(self):
        # a held candidate that needs bytes from after the silence: its sender stopped mid-frame
        self.timeouts = _count(self.timeouts, 1)
        self.garbage_bytes = _count(self.garbage_bytes, 1)
        self._drop(1)

    def poll(self):
        """Scan the held bytes for a complete frame without adding input; cmd or -1."""
        if self.consumed:
            self._drop(self.consumed)
            self.consumed = 0
        buf = self.buf
        while self.n:
            n = self.n
            if buf[0] != SYNC:
                # hunt: discard everything up to the next sync byte
                j = 1
                while j < n and buf[j] != SYNC:
                    j += 1
                self.garbage_bytes = _count(self.garbage_bytes, j)
                self._drop(j)
                continue
            if n < 2:
                if self.stale:
                    self._timed_out()
                    continue
                return -1
            ln = buf[1]
            if ln < 1 or ln > MAX_LEN:
                self.length_errors = _count(self.length_errors, 1)
                self.garbage_bytes = _count(self.garbage_bytes, 1)
                self._drop(1)
                continue
            total = ln + OVERHEAD
            if self.stale and total > self.stale:
                self._timed_out()
                continue
            if n < total:
                return -1
            crc = crc16(buf, 0xFFFF, 1, total - 2)
            if (crc & 0xFF) != buf[total - 2] or (crc >> 8) != buf[total - 1]:
                self.crc_errors = _count(self.crc_errors, 1)
                self.garbage_bytes = _count(self.garbage_bytes, 1)
                self._drop(1)
                continue
            self.frames = _count(self.frames, 1)
            self.frame_bytes = _count(self.frame_bytes, total)
            self.payload_len = ln - 1
            self.consumed = total
            return buf[2]
        return -1

    def feed_byte(self, b):
        """Add one byte; the command code of a frame it completed, or -1."""
        if self.consumed:
            self._drop(self.consumed)
            self.consumed = 0
        c = self.bytes_in
        self.bytes_in = c + 1 if c < _COUNTER_MAX else 0     # _count(c, 1), inlined: this runs for every byte
        n = self.n
        if n == 0 and b != SYNC:
            # fast path while hunting: nothing held, not a sync byte
            c = self.garbage_bytes
            self.garbage_bytes = c + 1 if c < _COUNTER_MAX else 0
            return -1
        self.buf[n] = b
        self.n = n + 1
        return self.poll()

    def payload(self):
        """The last completed frame's payload as bytes (allocates; the board reads buf directly)."""
        return bytes(self.buf[3:3 + self.payload_len])

    def feed(self, data):
        """Feed a chunk of bytes; returns [(cmd, payload), ...] for every good frame completed."""
        out = []
        for b in data:
            cmd = self.feed_byte(b)
            while cmd >= 0:
                out.append((cmd, bytes(self.buf[3:3 + self.payload_len])))
                cmd = self.poll()
        return out


# ---- payload layouts (struct formats, little-endian) ----

FMT_SET_VEL = "<ii"             # v_left, v_right: counts/s
FMT_STATE = "<iiiiB"            # p_left, p_right (counts), v_left, v_right (counts/s, board estimate), status
FMT_INFO_HEAD = "<BIHI"         # version, schema hash, control rate Hz, counts per wheel rev; then 2 short strings
FMT_U8 = "<B"
FMT_U16 = "<H"
FMT_TIME = "<I"                 # host time us (u32, wraps)
FMT_TIME_ACK = "<III"           # host time echoed, board ticks_us at receipt, board ticks_us at reply
FMT_NACK = "<BB"                # command, code
FMT_ODOM = "<IiiiiB"            # board time us, x um, y um, theta urad (wrapped to [-pi, pi)), encoder-only theta
#                                 urad (the same), heading source (ODOM_HEADING_*)
ODOM_HEADING_ENCODERS = const(0)  # theta is the encoders' heading (no IMU, or it is not answering)
ODOM_HEADING_GYRO = const(1)      # theta is integrated from the bias-corrected gyro z rate
FMT_SENSORS_DATA = "<HIiiihhhiHBBB"  # seq, board time us of the sample, gyro x, y, z (urad/s, board axes, bias not
#                                      subtracted), accel x, y, z (mm/s^2, board axes), gyro bias z (urad/s),
#                                      battery mV, flags (SF_*), imu_state (IMU_*), status byte (ST_*)
GYRO_SCALE = 1e6                # urad/s per rad/s (SENSORS_DATA gyro and bias)
ACCEL_SCALE = 1e3               # mm/s^2 per m/s^2 (SENSORS_DATA accel, saturated at +-32767)
BATTERY_SCALE = 1e3             # mV per V
FMT_TELEMETRY_DATA = "<HIiihhiihhB"  # seq, board time us, then per wheel (left, right): setpoint counts/s,
#                                    measured counts/s, output (Q15 duty), integrator (Q15 duty); status byte
ODOM_LENGTH_SCALE = 1e6         # um per m
ODOM_ANGLE_SCALE = 1e6          # urad per rad
Q15 = const(32768)              # duty 1.0 on the wire (telemetry output and integrator)

DIAG_FIELDS = (
    ("period_min_us", "I"), ("period_max_us", "I"), ("exec_max_us", "I"), ("exec_avg_us", "I"),
    ("overruns", "I"), ("frames_ok", "I"), ("crc_errors", "I"), ("length_errors", "I"),
    ("garbage_bytes", "I"), ("frame_timeouts", "I"), ("nacks", "I"), ("deadman_trips", "I"), ("fault_code", "B"),
    ("uptime_ms", "I"), ("free_heap", "I"), ("reset_cause", "B"), ("flags", "B"), ("imu_state", "B"),
    ("imu_errors", "H"),
)
FMT_DIAG = "<" + "".join(t for _, t in DIAG_FIELDS)


def _check_len(payload, fmt):
    if len(payload) != struct.calcsize(fmt):
        raise ValueError("bad payload length %d for %s" % (len(payload), fmt))


def _unpack(fmt, payload):
    _check_len(payload, fmt)
    return struct.unpack(fmt, payload)


# HELLO / INFO
def pack_hello():
    return encode(HELLO)


def _short_str(s):
    b = s.encode() if isinstance(s, str) else bytes(s)
    b = b[:20]
    return bytes((len(b),)) + b


def pack_info(version, schema_hash, control_hz, counts_per_rev, firmware, board):
    return encode(INFO, struct.pack(FMT_INFO_HEAD, version, schema_hash, control_hz, counts_per_rev)
                  + _short_str(firmware) + _short_str(board))


def unpack_info(payload):
    """-> (protocol_version, schema_hash, control_hz, counts_per_rev, firmware, board)."""
    head = struct.calcsize(FMT_INFO_HEAD)
    if len(payload) < head + 2:
        raise ValueError("INFO payload too short")
    version, schema_hash, hz, cpr = struct.unpack(FMT_INFO_HEAD, payload[:head])
    i = head
    strings = []
    for _ in range(2):
        n = payload[i]
        if i + 1 + n > len(payload):
            raise ValueError("INFO string runs past the payload")
        strings.append(bytes(payload[i + 1:i + 1 + n]).decode())
        i += 1 + n
    return version, schema_hash, hz, cpr, strings[0], strings[1]


# MOVE / MOVE_LEASE / MOVE_STATE
MOVE_STRAIGHT = const(0)        # a: distance m (negative: backwards); speed m/s, accel m/s^2
MOVE_TURN = const(1)            # a: heading change rad (REP-103: positive turns left); speed rad/s, accel rad/s^2
MOVE_ARC = const(2)             # a: radius m (negative: backwards), b: heading change rad; speed m/s, accel m/s^2
MOVE_KIND_NAMES = {MOVE_STRAIGHT: "straight", MOVE_TURN: "turn", MOVE_ARC: "arc"}
MOVE_END_ARRIVED = const(1)     # within move_tol_distance and move_tol_heading at the end (or passed on, chained)
MOVE_END_STALLED = const(2)     # path error above move_stall_tol for move_stall_ms: outputs off
MOVE_END_TIMEOUT = const(3)     # ran longer than its timeout: braked stop
MOVE_END_CANCELLED = const(4)   # SET_VEL, MOVE_LEASE cancel, ENABLE / disable, CLEAR_FAULT
MOVE_END_FAULTED = const(5)     # a latched fault (the safety chain) stopped it
MOVE_END_LEASE = const(6)       # no MOVE / MOVE_LEASE for move_lease_ms: braked stop
MOVE_END_NAMES = {MOVE_END_ARRIVED: "arrived", MOVE_END_STALLED: "stalled", MOVE_END_TIMEOUT: "timed out",
                  MOVE_END_CANCELLED: "cancelled", MOVE_END_FAULTED: "faulted", MOVE_END_LEASE: "lease expired"}
FMT_MOVE = "<HBBfffff"          # id, kind, flags (0), a, b, speed, accel, timeout s (0: twice the planned time + 1 s)
FMT_MOVE_STATE = "<HBHH" + "HB" * 4    # oldest id not ended (0: none), moves not ended, ends so far (u16, wraps),
#                                         the oldest move's progress in per mille of its length (0: not started),
#                                         then the last four ends (id, MOVE_END_*), oldest first (0, 0: none)
MOVE_LEASE_CANCEL = const(0x01)  # MOVE_LEASE flag: end every move (cancelled), braked


def pack_move(move_id, kind, a, b, speed, accel, timeout=0.0):
    return encode(MOVE, struct.pack(FMT_MOVE, move_id, kind, 0, a, b, speed, accel, timeout))


def unpack_move(payload):
    """-> (id, kind, flags, a, b, speed, accel, timeout)."""
    return _unpack(FMT_MOVE, payload)


def pack_get_state():
    return encode(GET_STATE)


def pack_move_lease(cancel=False):
    return encode(MOVE_LEASE, bytes((MOVE_LEASE_CANCEL if cancel else 0,)))


def pack_move_state(running_id, active, n_ends, ends, progress=0):
    """ends: the last (id, reason) pairs, oldest first (at most 4 are sent; the newest); progress: per mille."""
    e = list(ends)[-4:]
    e = [(0, 0)] * (4 - len(e)) + e
    return encode(MOVE_STATE, struct.pack(FMT_MOVE_STATE, running_id & 0xFFFF, min(active, 255), n_ends & 0xFFFF,
                                          max(0, min(progress, 1000)), e[0][0], e[0][1], e[1][0], e[1][1],
                                          e[2][0], e[2][1], e[3][0], e[3][1]))


def unpack_move_state(payload):
    """-> (running id, active, ends so far, [(id, reason), ...] oldest first (only the real ones), progress of the
    running one in per mille)."""
    v = _unpack(FMT_MOVE_STATE, payload)
    n = v[2]
    ends = [(v[4 + 2 * i], v[5 + 2 * i]) for i in range(4)]
    return v[0], v[1], n, ends[4 - min(n, 4):], v[3]


# SET_VEL / STATE
def pack_set_vel(v_left, v_right):
    return encode(SET_VEL, struct.pack(FMT_SET_VEL, v_left, v_right))


def unpack_set_vel(payload):
    return _unpack(FMT_SET_VEL, payload)


def pack_state(p_left, p_right, v_left, v_right, status):
    return encode(STATE, struct.pack(FMT_STATE, p_left, p_right, v_left, v_right, status))


def unpack_state(payload):
    """-> (p_left, p_right, v_left, v_right, status): counts, counts/s."""
    return _unpack(FMT_STATE, payload)


# ENABLE
def pack_enable(on):
    return encode(ENABLE, bytes((1 if on else 0,)))


def unpack_enable(payload):
    """-> True to energize. Any value other than 0 or 1 is a ValueError (NACK 3 on the board)."""
    (v,) = _unpack(FMT_U8, payload)
    if v > 1:
        raise ValueError("ENABLE takes 0 or 1")
    return v == 1


def pack_enable_ack(enabled):
    return encode(ENABLE_ACK, bytes((1 if enabled else 0,)))


def unpack_enable_ack(payload):
    return _unpack(FMT_U8, payload)[0] == 1


# ZERO
def pack_zero():
    return encode(ZERO)


def pack_zero_ack():
    return encode(ZERO_ACK)


# TIME
def pack_time(host_us):
    return encode(TIME, struct.pack(FMT_TIME, host_us & 0xFFFFFFFF))


def unpack_time(payload):
    return _unpack(FMT_TIME, payload)[0]


def pack_time_ack(host_us, board_rx_us, board_tx_us):
    return encode(TIME_ACK, struct.pack(FMT_TIME_ACK, host_us & 0xFFFFFFFF, board_rx_us & 0xFFFFFFFF,
                                        board_tx_us & 0xFFFFFFFF))


def unpack_time_ack(payload):
    """-> (host_us echoed, board_rx_us, board_tx_us)."""
    return _unpack(FMT_TIME_ACK, payload)


# GET_PARAM / SET_PARAM (value type from shared.params)
def _param_type(pid):
    from . import params  # late: params imports this module's const helper only
    p = params.by_id(pid)
    if p is None:
        raise KeyError(pid)
    return p[params.TYPE]


def pack_get_param(pid):
    return encode(GET_PARAM, bytes((pid,)))


def unpack_get_param(payload):
    return _unpack(FMT_U8, payload)[0]


def _pack_param_payload(pid, value):
    t = _param_type(pid)
    if t == "f":
        return struct.pack("<Bf", pid, value)
    return struct.pack("<B" + t, pid, int(value))


def unpack_param_value(payload):
    """(id, value) from a SET_PARAM, PARAM or PARAM_SET payload. KeyError for an unknown id,
    ValueError for a length that does not match the parameter's type."""
    if len(payload) < 1:
        raise ValueError("empty parameter payload")
    pid = payload[0]
    t = _param_type(pid)
    return _unpack("<B" + t, payload)


def pack_set_param(pid, value):
    return encode(SET_PARAM, _pack_param_payload(pid, value))


def pack_param(pid, value):
    return encode(PARAM, _pack_param_payload(pid, value))


def pack_param_set(pid, value):
    return encode(PARAM_SET, _pack_param_payload(pid, value))


# SAVE_PARAMS / CLEAR_FAULT
def pack_save_params():
    return encode(SAVE_PARAMS)


def pack_save_ack():
    return encode(SAVE_ACK)


def pack_clear_fault():
    return encode(CLEAR_FAULT)


# LOAD_PARAMS
def pack_load_params():
    return encode(LOAD_PARAMS)


def pack_load_ack(from_file):
    """from_file: 1 when every value came from the saved file, 0 when defaults stood in (file missing or bad)."""
    return encode(LOAD_ACK, bytes((1 if from_file else 0,)))


def unpack_load_ack(payload):
    """-> True when every value came from the saved file."""
    return _unpack(FMT_U8, payload)[0] == 1


def pack_fault_cleared(code):
    return encode(FAULT_CLEARED, bytes((code,)))


def unpack_fault_cleared(payload):
    return _unpack(FMT_U8, payload)[0]


# GET_DIAG
def pack_get_diag():
    return encode(GET_DIAG)


def pack_diag(values):
    """values: a dict with every DIAG_FIELDS name."""
    return encode(DIAG, struct.pack(FMT_DIAG, *[values[name] for name, _ in DIAG_FIELDS]))


def unpack_diag(payload):
    """-> dict keyed by the DIAG_FIELDS names."""
    vals = _unpack(FMT_DIAG, payload)
    return {name: vals[i] for i, (name, _) in enumerate(DIAG_FIELDS)}


# TELEMETRY
def pack_telemetry(rate_hz):
    return encode(TELEMETRY, struct.pack(FMT_U16, rate_hz))


def unpack_telemetry(payload):
    return _unpack(FMT_U16, payload)[0]


def pack_telemetry_ack(rate_hz):
    return encode(TELEMETRY_ACK, struct.pack(FMT_U16, rate_hz))


def unpack_telemetry_ack(payload):
    return _unpack(FMT_U16, payload)[0]


def pack_telemetry_data(seq, t_us, sp_l, meas_l, out_l, integ_l, sp_r, meas_r, out_r, integ_r, status):
    return encode(TELEMETRY_DATA, struct.pack(FMT_TELEMETRY_DATA, seq & 0xFFFF, t_us & 0xFFFFFFFF, sp_l, meas_l,
                                              out_l, integ_l, sp_r, meas_r, out_r, integ_r, status))


def unpack_telemetry_data(payload):
    """-> (seq, t_us, sp_l, meas_l, out_l, integ_l, sp_r, meas_r, out_r, integ_r, status)."""
    return _unpack(FMT_TELEMETRY_DATA, payload)


# GET_ODOM
def pack_get_odom():
    return encode(GET_ODOM)


def pack_odom(t_us, x_um, y_um, theta_urad, theta_enc_urad, heading_source):
    return encode(ODOM, struct.pack(FMT_ODOM, t_us & 0xFFFFFFFF, x_um, y_um, theta_urad, theta_enc_urad,
                                    heading_source))


def unpack_odom(payload):
    """-> (t_us, x_um, y_um, theta_urad, theta_enc_urad, heading_source); divide by ODOM_*_SCALE for m and rad.
    theta is the odometry's heading (from the gyro when heading_source is ODOM_HEADING_GYRO), theta_enc the
    encoders' own heading, integrated alongside for comparison."""
    return _unpack(FMT_ODOM, payload)


# SENSORS
def pack_sensors(rate_hz):
    return encode(SENSORS, struct.pack(FMT_U16, rate_hz))


def unpack_sensors(payload):
    return _unpack(FMT_U16, payload)[0]


def pack_sensors_ack(rate_hz):
    return encode(SENSORS_ACK, struct.pack(FMT_U16, rate_hz))


def unpack_sensors_ack(payload):
    return _unpack(FMT_U16, payload)[0]


def pack_sensors_data(seq, t_us, gx, gy, gz, ax, ay, az, bias_z, battery_mv, flags, imu_state, status):
    return encode(SENSORS_DATA, struct.pack(FMT_SENSORS_DATA, seq & 0xFFFF, t_us & 0xFFFFFFFF, gx, gy, gz, ax, ay,
                                            az, bias_z, battery_mv, flags, imu_state, status))


def unpack_sensors_data(payload):
    """-> (seq, t_us, gx, gy, gz, ax, ay, az, bias_z, battery_mv, flags, imu_state, status): wire units
    (urad/s, mm/s^2, urad/s, mV); divide by GYRO_SCALE, ACCEL_SCALE, BATTERY_SCALE for SI."""
    return _unpack(FMT_SENSORS_DATA, payload)


# STOP_LINK
def pack_stop_link():
    return encode(STOP_LINK)


def pack_stop_link_ack(reset_ms):
    """reset_ms: the board resets into REPL mode within this many ms (its watchdog timeout); 0: no reset, the
    REPL is there now."""
    return encode(STOP_LINK_ACK, struct.pack(FMT_U16, reset_ms))


def unpack_stop_link_ack(payload):
    """-> ms within which the board resets into REPL mode (0: it is in its REPL already)."""
    return _unpack(FMT_U16, payload)[0]


# NACK
def pack_nack(cmd, code):
    return encode(NACK, bytes((cmd & 0xFF, code)))


def unpack_nack(payload):
    """-> (cmd, code)."""
    return _unpack(FMT_NACK, payload)
