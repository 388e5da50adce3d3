# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Telemetry ring: the control step logs one fixed-size integer record per period into preallocated RAM (no
# print in the hot path: a 60-byte print at 115200 baud costs 5 ms); the slow link task drains it into
# TELEMETRY_DATA frames. One producer (the control step, possibly in a hard IRQ) and one consumer (the slow
# task); no lock: the producer owns hdr[H_HEAD], the consumer owns self.tail, and a record the producer may
# have overwritten while it was being copied is detected and counted as dropped.
#
# Layout (all int32):
#   buf  = array('i', n * REC)   record k lives in buf[slot * REC : slot * REC + REC], slot = k & hdr[H_MASK]
#   hdr  = array('i', 2)         hdr[H_HEAD] = records written so far (the next record's number; wraps at
#                                2**32), hdr[H_MASK] = n - 1 (n is a power of two)
# Fields of a record, in the order of protocol.pack_telemetry_data's arguments after seq:
#   T_US (ticks_us), SP_L, MEAS_L (counts/s), OUT_L, INTEG_L (Q15 duty), SP_R, MEAS_R, OUT_R, INTEG_R, STATUS
#
# Writing a record from viper, allocation-free and with no call (the exact arithmetic the control step uses):
#   h = ptr32(hdr); b = ptr32(buf)
#   k = h[0]                          # H_HEAD
#   base = (k & h[1]) * 10            # H_MASK, REC
#   b[base + 0] = t_us; b[base + 1] = sp_l; ... b[base + 9] = status
#   h[0] = k + 1                      # publish last: the consumer never sees a half-written record as new
# Overflow policy: the producer never waits; when the consumer falls behind, the oldest records are
# overwritten and drain() counts them in `drops`.
from array import array

from micropython import const

T_US = const(0)
SP_L = const(1)
MEAS_L = const(2)
OUT_L = const(3)
INTEG_L = const(4)
SP_R = const(5)
MEAS_R = const(6)
OUT_R = const(7)
INTEG_R = const(8)
STATUS = const(9)
REC = const(10)

H_HEAD = const(0)
H_MASK = const(1)

_SEQ_MASK = const(0x3FFFFFFF)   # record numbers compared modulo 2**30: small ints on every port


class Ring:
    """Preallocated ring that holds at least n undrained records without a drop.

    The slot count self.n is the power of two above n: one slot stays free so the record the producer may be
    overwriting is never handed out (drain() discards the oldest record once the ring is completely full).
    """

    def __init__(self, n):
        size = 2
        while size < n + 1:
            size <<= 1
        self.n = size
        self.buf = array("i", bytes(4 * size * REC))
        self.hdr = array("i", (0, size - 1))
        self.tail = 0           # the next record number the consumer reads (modulo 2**30)
        self.drops = 0          # records overwritten before they were drained

    def push(self, t_us, sp_l, meas_l, out_l, integ_l, sp_r, meas_r, out_r, integ_r, status):
        """Plain-Python writer with the same arithmetic (CircuitPython's float step, tests, the REPL)."""
        buf = self.buf
        hdr = self.hdr
        k = hdr[H_HEAD]
        base = (k & hdr[H_MASK]) * REC
        buf[base] = t_us
        buf[base + 1] = sp_l
        buf[base + 2] = meas_l
        buf[base + 3] = out_l
        buf[base + 4] = integ_l
        buf[base + 5] = sp_r
        buf[base + 6] = meas_r
        buf[base + 7] = out_r
        buf[base + 8] = integ_r
        buf[base + 9] = status
        # int32 wrap, the same as the viper writer's machine-word store
        k += 1
        if k > 0x7FFFFFFF:
            k -= 0x100000000
        hdr[H_HEAD] = k

    def pending(self):
        """Records written and not drained yet (at most n; more means some were overwritten)."""
        return (self.hdr[H_HEAD] - self.tail) & _SEQ_MASK

    def reset(self):
        """Forget everything not drained yet (e.g. when streaming starts: no stale records)."""
        self.tail = self.hdr[H_HEAD] & _SEQ_MASK

    def drain(self, max_n):
        """Up to max_n oldest records as tuples (seq, t_us, sp_l, meas_l, out_l, integ_l, sp_r, meas_r, out_r,
        integ_r, status): protocol.pack_telemetry_data(*record) frames one. seq counts records (mod 2**30), so
        a gap in seq on the host is exactly the records dropped here."""
        out = []
        buf = self.buf
        hdr = self.hdr
        n = self.n
        while len(out) < max_n:
            behind = (hdr[H_HEAD] - self.tail) & _SEQ_MASK
            if behind == 0:
                break
            if behind > n:
                # the producer lapped us: the oldest `behind - n` records are gone
                self.drops += behind - n
                self.tail = (self.tail + behind - n) & _SEQ_MASK
            seq = self.tail
            base = (seq & hdr[H_MASK]) * REC
            rec = (seq, buf[base], buf[base + 1], buf[base + 2], buf[base + 3], buf[base + 4], buf[base + 5],
                   buf[base + 6], buf[base + 7], buf[base + 8], buf[base + 9])
            self.tail = (seq + 1) & _SEQ_MASK
            # Was the slot rewritten while we copied it? The producer starts overwriting record seq's slot
            # when it writes record seq + n, i.e. once head - seq >= n. Then the copy may mix two records.
            if ((hdr[H_HEAD] - seq) & _SEQ_MASK) >= n:
                self.drops += 1
                continue
            out.append(rec)
        return out
