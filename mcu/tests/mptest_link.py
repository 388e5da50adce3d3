# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The link service and the App on the unix port, through the hal test double's stream: every command of
# shared/protocol.py, every NACK code, garbage, parameters (validation, storage, corrupt file), telemetry, odometry.
import os
import struct

import micropython

import fakehal
from viperdrive import app as app_mod
from viperdrive import fixedstep as fx
from viperdrive.shared import params
from viperdrive.shared import protocol as P

CFG = {"control_hz": 500, "counts_per_rev": 4096, "name": "fake", "watchdog_ms": 500}
TMP = "/tmp/viperdrive-mptest-link"


def _rm(path):
    try:
        os.remove(path)
    except OSError:
        pass


def make(params_path=None, reset_cause=P.RESET_POWER_ON, **hal_kw):
    hal = fakehal.Board(CFG, reset_cause=reset_cause, **hal_kw)
    path = params_path or TMP + "-params.json"
    if params_path is None:
        _rm(path)
    a = app_mod.App(hal, CFG, params_path=path)
    a.start()
    return hal, a


class Host:
    def __init__(self, hal, a):
        self.hal = hal
        self.app = a
        self.parser = P.Parser()

    def xfer(self, data, periods=1):
        """Send bytes, run the slow loop and a control period; -> [(cmd, payload)] the board sent."""
        self.hal.stream.inject(data)
        self.app.service()
        self.hal.fire(periods)
        self.app.service()
        return self.parser.feed(self.hal.stream.take())

    def one(self, data, want):
        frames = [f for f in self.xfer(data) if f[0] != P.TELEMETRY_DATA]
        assert len(frames) == 1, frames
        cmd, payload = frames[0]
        assert cmd == want, (P.COMMAND_NAMES.get(cmd, cmd), payload)
        return payload

    def nack(self, data, code):
        cmd, got = P.unpack_nack(self.one(data, P.NACK))
        assert got == code, (got, code)
        return cmd


def test_hello_info():
    hal, a = make()
    h = Host(hal, a)
    v, schema, hz, cpr, fw, board = P.unpack_info(h.one(P.pack_hello(), P.INFO))
    assert v == P.PROTOCOL_VERSION and schema == params.schema_hash()
    assert (hz, cpr, board) == (500, 4096, "fake") and fw.startswith("viperdrive")


def test_the_schema_hash_is_computed_once_and_then_costs_nothing():
    # App.start() computes it (a HELLO used to: ~100 ms of big-int arithmetic per HELLO on an RP2040, and a host
    # retrying HELLO kept the slow loop busy past the watchdog); afterwards it allocates nothing
    hal, a = make()         # make() starts the App
    first = params.schema_hash()
    micropython.heap_lock()
    try:
        again = params.schema_hash()
    finally:
        micropython.heap_unlock()
    assert again == first == params.schema_hash()
    a.stop()


def test_set_vel_answers_state_enabled_or_not():
    hal, a = make()
    h = Host(hal, a)
    # disabled: moves nothing, still answers STATE
    pl, pr, vl, vr, st = P.unpack_state(h.one(P.pack_set_vel(2000, 1000), P.STATE))
    assert st & P.ST_ENABLED == 0 and hal.duty == [0, 0]
    assert P.unpack_enable_ack(h.one(P.pack_enable(True), P.ENABLE_ACK))
    hal.counts = [4, 2]
    pl, pr, vl, vr, st = P.unpack_state(h.one(P.pack_set_vel(2000, 1000), P.STATE))
    assert st & P.ST_ENABLED and hal.energized
    h.xfer(P.pack_set_vel(2000, 1000), periods=5)
    pl, pr, vl, vr, st = P.unpack_state(h.one(P.pack_set_vel(2000, 1000), P.STATE))
    assert (pl, pr) == (4, 2), (pl, pr)
    assert hal.duty[0] > 0 and hal.duty[1] > 0
    assert not P.unpack_enable_ack(h.one(P.pack_enable(False), P.ENABLE_ACK))
    assert not hal.energized and hal.duty == [0, 0]


def test_enable_nacks():
    hal, a = make()
    h = Host(hal, a)
    assert h.nack(P.encode(P.ENABLE, b"\x02"), P.NACK_OUT_OF_RANGE) == P.ENABLE
    assert h.nack(P.encode(P.ENABLE, b""), P.NACK_BAD_LENGTH) == P.ENABLE
    # a latched fault: ENABLE is not allowed until CLEAR_FAULT
    a.ctrl.st[fx.G_FAULT] = P.FAULT_STALL_LEFT
    assert h.nack(P.pack_enable(True), P.NACK_NOT_ALLOWED) == P.ENABLE
    assert P.unpack_fault_cleared(h.one(P.pack_clear_fault(), P.FAULT_CLEARED)) == P.FAULT_STALL_LEFT
    assert P.unpack_enable_ack(h.one(P.pack_enable(True), P.ENABLE_ACK))


def test_zero_time_odom():
    hal, a = make()
    h = Host(hal, a)
    h.one(P.pack_enable(True), P.ENABLE_ACK)
    # drive straight 1 m: both wheels 4096 counts per 2*pi*0.0325 m
    n = int(1.0 / (6.283185307179586 * 0.0325) * 4096)
    for i in range(1, 101):
        hal.counts = [n * i // 100, n * i // 100]
        h.xfer(P.pack_set_vel(0, 0), periods=3)
        hal.now_us += 10000             # odometry runs at 100 Hz of the hal's millisecond clock
    a.service()
    t, x, y, th, th_enc, src = P.unpack_odom(h.one(P.pack_get_odom(), P.ODOM))
    assert abs(x - 1000000) < 1000 and abs(y) < 10 and abs(th) < 10, (x, y, th)
    assert th_enc == th and src == P.ODOM_HEADING_ENCODERS     # no IMU in this config: the encoders' heading
    h.one(P.pack_zero(), P.ZERO_ACK)
    assert a.ctrl.positions() == (0, 0)
    t, x, y, th, th_enc, src = P.unpack_odom(h.one(P.pack_get_odom(), P.ODOM))
    assert (x, y, th, th_enc) == (0, 0, 0, 0)
    host_us, rx, tx = P.unpack_time_ack(h.one(P.pack_time(123456789), P.TIME_ACK))
    assert host_us == 123456789 and rx == hal.ticks_us() - 2000 or rx <= tx


def test_params_get_set_validate():
    hal, a = make()
    h = Host(hal, a)
    pid, v = P.unpack_param_value(h.one(P.pack_get_param(0), P.PARAM))
    assert pid == 0 and abs(v - params.by_id(0)[params.DEFAULT]) < 1e-6
    pid, v = P.unpack_param_value(h.one(P.pack_set_param(0, 0.07), P.PARAM_SET))
    assert pid == 0 and abs(v - 0.07) < 1e-6 and abs(a.ctrl.values["kp"] - 0.07) < 1e-6
    pid, v = P.unpack_param_value(h.one(P.pack_set_param(12, 150), P.PARAM_SET))
    assert v == 150 and a.ctrl.values["deadman_ms"] == 150
    assert a.ctrl.k[a.ctrl.st[fx.G_BANK_REQ] * fx.KB + fx.K_DM_N] == 75
    # NACK 3: out of range, not finite; NACK 6: unknown id; NACK 2: wrong size for the type
    h.nack(P.pack_set_param(0, 50.0), P.NACK_OUT_OF_RANGE)
    h.nack(P.encode(P.SET_PARAM, struct.pack("<Bf", 0, float("nan"))), P.NACK_OUT_OF_RANGE)
    h.nack(P.encode(P.SET_PARAM, struct.pack("<Bf", 0, float("inf"))), P.NACK_OUT_OF_RANGE)
    h.nack(P.encode(P.SET_PARAM, struct.pack("<BH", 12, 5)), P.NACK_OUT_OF_RANGE)
    h.nack(P.encode(P.SET_PARAM, struct.pack("<Bf", 99, 1.0)), P.NACK_UNKNOWN_PARAM)
    h.nack(P.pack_get_param(99), P.NACK_UNKNOWN_PARAM)
    h.nack(P.encode(P.SET_PARAM, struct.pack("<BH", 0, 1)), P.NACK_BAD_LENGTH)
    h.nack(P.encode(P.SET_PARAM, b""), P.NACK_BAD_LENGTH)
    # refused values changed nothing
    assert abs(a.params.values["kp"] - 0.07) < 1e-6 and a.params.values["deadman_ms"] == 150


def test_save_params_and_storage_error():
    path = TMP + "-save.json"
    _rm(path)
    hal, a = make(params_path=path)
    h = Host(hal, a)
    assert a.params.defaulted
    h.one(P.pack_set_param(1, 1.25), P.PARAM_SET)
    h.one(P.pack_save_params(), P.SAVE_ACK)
    hal2, a2 = make(params_path=path)
    assert not a2.params.defaulted and abs(a2.params.values["ki"] - 1.25) < 1e-6
    assert abs(a2.ctrl.values["ki"] - 1.25) < 1e-6
    d = P.unpack_diag(Host(hal2, a2).one(P.pack_get_diag(), P.DIAG))
    assert d["flags"] & P.DIAG_PARAMS_DEFAULTED == 0
    # a directory that does not exist: the filesystem refuses, NACK 5, nothing lost
    a2.params_path = "/nonexistent-dir-viperdrive/params.json"
    Host(hal2, a2).nack(P.pack_save_params(), P.NACK_STORAGE)
    assert abs(a2.params.values["ki"] - 1.25) < 1e-6


def _unsaved(h):
    return bool(P.unpack_diag(h.one(P.pack_get_diag(), P.DIAG))["flags"] & P.DIAG_PARAMS_UNSAVED)


def test_params_unsaved_flag_and_load_params():
    """DIAG_PARAMS_UNSAVED while a live value differs from the saved one; LOAD_PARAMS brings the saved ones back
    (the way to undo a killed host's test values)."""
    path = TMP + "-unsaved.json"
    _rm(path)
    hal, a = make(params_path=path)
    h = Host(hal, a)
    assert not _unsaved(h)                                    # defaults, no file: a reset gives the same
    _, kp0 = P.unpack_param_value(h.one(P.pack_get_param(0), P.PARAM))
    h.one(P.pack_set_param(0, 0.07), P.PARAM_SET)
    assert _unsaved(h)
    h.one(P.pack_set_param(0, kp0), P.PARAM_SET)                # the value read back (f32) and set again
    assert not _unsaved(h)                                    # is no difference, doubles or not
    h.one(P.pack_set_param(0, 0.07), P.PARAM_SET)
    h.one(P.pack_set_param(12, 150), P.PARAM_SET)
    h.one(P.pack_save_params(), P.SAVE_ACK)
    assert not _unsaved(h)                                    # saved: live == stored
    h.one(P.pack_set_param(0, 10.0), P.PARAM_SET)               # a relay test's values, then the host dies
    h.one(P.pack_set_param(9, 0.9), P.PARAM_SET)               # max_duty
    assert _unsaved(h)
    assert P.unpack_load_ack(h.one(P.pack_load_params(), P.LOAD_ACK)) is True
    assert not _unsaved(h)
    assert abs(a.params.values["kp"] - 0.07) < 1e-6 and a.params.values["deadman_ms"] == 150
    assert abs(a.ctrl.values["kp"] - 0.07) < 1e-6 and a.ctrl.values["max_duty"] == params.by_id(9)[params.DEFAULT]
    h.nack(P.encode(P.LOAD_PARAMS, b"\x00"), P.NACK_BAD_LENGTH)
    # no file at all: LOAD_PARAMS gives the defaults (as a reset would) and says so
    _rm(path)
    assert P.unpack_load_ack(h.one(P.pack_load_params(), P.LOAD_ACK)) is False
    assert a.params.values["deadman_ms"] == 100 and not _unsaved(h)


def test_corrupt_params_file_boots_on_defaults():
    path = TMP + "-corrupt.json"
    with open(path, "w") as f:
        f.write('{"kp": 0.5, "ki": ')      # cut off mid-write
    hal, a = make(params_path=path)
    assert a.params.defaulted and a.ctrl.values["kp"] == params.by_name("kp")[params.DEFAULT]
    d = P.unpack_diag(Host(hal, a).one(P.pack_get_diag(), P.DIAG))
    assert d["flags"] & P.DIAG_PARAMS_DEFAULTED and d["flags"] & P.DIAG_TIMER_SOFT
    with open(path, "w") as f:
        f.write('{"kp": 99.0}')             # out of range and incomplete
    hal, a = make(params_path=path)
    assert a.params.defaulted and a.params.values["kp"] == params.by_name("kp")[params.DEFAULT]


def test_diag_counts_frames_errors_and_garbage():
    hal, a = make()
    h = Host(hal, a)
    h.xfer(P.pack_hello())
    bad = bytearray(P.pack_hello())
    bad[-1] ^= 0xFF                     # CRC error
    h.xfer(bytes(bad) + b"\x01\x02\x03" + b"\xaa\x00")     # garbage and a bad length
    h.nack(P.encode(0x42), P.NACK_UNKNOWN)                  # unknown command
    h.nack(P.encode(P.STATE, b"\x00" * 17), P.NACK_UNKNOWN)  # a reply code is not a command
    h.nack(P.encode(P.GET_DIAG, b"\x00"), P.NACK_BAD_LENGTH)
    d = P.unpack_diag(h.one(P.pack_get_diag(), P.DIAG))
    assert d["frames_ok"] == 5 and d["crc_errors"] == 1 and d["length_errors"] >= 1, d
    assert d["garbage_bytes"] >= 3 and d["nacks"] == 3, d
    assert d["period_min_us"] == 2000 and d["period_max_us"] == 2000 and d["overruns"] == 0, d
    assert d["reset_cause"] == P.RESET_POWER_ON and d["fault_code"] == 0 and d["free_heap"] == 123456


def test_garbage_burst_is_bounded_per_pass_and_loses_no_frame():
    hal, a = make()
    h = Host(hal, a)
    junk = bytes((i * 37 + 11) & 0xFF for i in range(5000)).replace(b"\xaa", b"\x55")
    hal.stream.inject(junk + P.pack_hello())
    passes = 0
    got = []
    while hal.stream.rx or not got:
        before = len(hal.stream.rx)
        a.service()
        hal.fire(1)                     # the control period runs between passes, whatever the link holds
        assert before - len(hal.stream.rx) <= a.link.max_bytes
        got += h.parser.feed(hal.stream.take())
        passes += 1
        assert passes < 100
    assert [c for c, _ in got] == [P.INFO], got
    print("5 kB of garbage then HELLO: %d slow-loop passes of <= %d bytes; the control loop ran %d periods"
          % (passes, a.link.max_bytes, a.ctrl.ticks()))
    assert a.link.parser.garbage_bytes == len(junk)
    assert a.ctrl.stats()["overruns"] == 0


def test_telemetry_stream():
    hal, a = make()
    h = Host(hal, a)
    h.nack(P.pack_telemetry(1000), P.NACK_OUT_OF_RANGE)         # above the control rate
    assert P.unpack_telemetry_ack(h.one(P.pack_telemetry(100), P.TELEMETRY_ACK)) == 100
    h.one(P.pack_enable(True), P.ENABLE_ACK)
    frames = []
    for _ in range(20):
        frames += h.xfer(P.pack_set_vel(3000, -1000), periods=5)
    data = [P.unpack_telemetry_data(p) for c, p in frames if c == P.TELEMETRY_DATA]
    assert len(data) >= 15, len(data)
    seqs = [d[0] for d in data]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    # 5 periods (10 ms) apart on the board clock; setpoints ramp toward the command
    assert all(data[i + 1][1] - data[i][1] == 10000 for i in range(len(data) - 1))
    assert data[-1][2] > 0 and data[-1][6] < 0 and data[-1][10] & P.ST_ENABLED
    assert P.unpack_telemetry_ack(h.one(P.pack_telemetry(0), P.TELEMETRY_ACK)) == 0
    assert not [c for c, _ in h.xfer(b"", periods=20) if c == P.TELEMETRY_DATA]


def test_a_frame_left_half_sent_is_dropped_after_the_frame_gap():
    # a client died after sync + length (LEN 64): without the gap the board waits for 66 more bytes and the next
    # client's HELLOs vanish into it; with it, one empty read 2 ms later drops it and the next HELLO is answered
    hal, a = make()
    h = Host(hal, a)
    assert h.xfer(bytes((P.SYNC, 0x40))) == []
    assert a.link.parser.pending() == 2
    hal.fire(2)                     # 4 ms of silence on the line, then a pass that reads nothing
    a.service()
    assert a.link.parser.pending() == 0
    v = P.unpack_info(h.one(P.pack_hello(), P.INFO))[0]
    d = P.unpack_diag(h.one(P.pack_get_diag(), P.DIAG))
    assert v == P.PROTOCOL_VERSION and d["frame_timeouts"] == 1 and d["garbage_bytes"] == 2, d


def test_a_frame_split_by_a_slow_pass_is_not_dropped():
    # the board's slow loop busy for 50 ms between two reads of one frame (bytes kept in the UART buffer): the
    # second read returns the rest, which proves no silence, so the frame is whole
    hal, a = make()
    h = Host(hal, a)
    frame = P.pack_set_vel(100, 100)
    hal.stream.inject(frame[:5])
    a.service()
    hal.fire(25)
    hal.stream.inject(frame[5:])
    a.service()
    assert [c for c, _ in h.parser.feed(hal.stream.take())] == [P.STATE]
    assert a.link.parser.timeouts == 0


def test_a_new_peer_restarts_the_parser():
    # the virtual board's TCP link counts new clients in `reconnects`: a partial frame of the old one is dropped
    # at once, without waiting for the gap
    hal, a = make()
    h = Host(hal, a)
    assert h.xfer(bytes((P.SYNC, 0x40))) == []
    hal.stream.reconnects = 1
    v = P.unpack_info(h.one(P.pack_hello(), P.INFO))[0]
    assert v == P.PROTOCOL_VERSION and a.link.parser.timeouts == 1
