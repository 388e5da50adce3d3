# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Golden vectors: exact frame bytes for every command. This one file runs in CPython (pytest) and in the
# MicroPython unix port (conftest.py plugin): both interpreters must produce and accept the same bytes.
import binascii

from shared import protocol as P

# every DIAG field numbered in order: u32 fields 1000 x their position, u8 and u16 fields their position
DIAG_SAMPLE = {name: (i + 1 if t in "BH" else 1000 * (i + 1)) for i, (name, t) in enumerate(P.DIAG_FIELDS)}

GOLDEN = (
    ("HELLO", lambda: P.pack_hello(), "aa01003e2e"),
    ("SET_VEL 1000 -1000", lambda: P.pack_set_vel(1000, -1000), "aa0901e803000018fcffff2d8c"),
    ("SET_VEL 0 0", lambda: P.pack_set_vel(0, 0), "aa09010000000000000000142f"),
    ("SET_VEL extremes", lambda: P.pack_set_vel(2147483647, -2147483648), "aa0901ffffff7f0000008062a3"),
    ("STATE", lambda: P.pack_state(123456, -654321, 4096, -2048, P.ST_ENABLED | P.ST_SATURATED),
     "aa128140e201000f04f6ff0010000000f8ffff091074"),
    ("ENABLE 1", lambda: P.pack_enable(True), "aa020201bfd4"),
    ("ENABLE_ACK 0", lambda: P.pack_enable_ack(False), "aa02820006df"),
    ("ZERO", lambda: P.pack_zero(), "aa01035d1e"),
    ("TIME", lambda: P.pack_time(0xDEADBEEF), "aa0504efbeadde7c30"),
    ("TIME_ACK", lambda: P.pack_time_ack(1, 2, 3), "aa0d84010000000200000003000000c763"),
    ("GET_PARAM kp", lambda: P.pack_get_param(0), "aa020500095d"),
    ("SET_PARAM kp 0.5", lambda: P.pack_set_param(0, 0.5), "aa0606000000003fb61a"),
    ("SET_PARAM deadman_ms 150", lambda: P.pack_set_param(12, 150), "aa04060c9600bf78"),
    ("SAVE_PARAMS", lambda: P.pack_save_params(), "aa0107d95e"),
    ("CLEAR_FAULT", lambda: P.pack_clear_fault(), "aa010836af"),
    ("FAULT_CLEARED stall left", lambda: P.pack_fault_cleared(P.FAULT_STALL_LEFT), "aa028801ec20"),
    ("GET_DIAG", lambda: P.pack_get_diag(), "aa010917bf"),
    ("TELEMETRY 50 Hz", lambda: P.pack_telemetry(50), "aa030a32002abb"),
    ("GET_ODOM", lambda: P.pack_get_odom(), "aa010b559f"),
    # v4 layout (v1-v3: "aa118b40420f0040420f00702ffcffecf7170044bd", without the encoder heading and source)
    ("ODOM", lambda: P.pack_odom(1000000, 1000000, -250000, 1570796, 1555000, P.ODOM_HEADING_GYRO),
     "aa168b40420f0040420f00702ffcffecf7170038ba17000152c1"),
    ("NACK", lambda: P.pack_nack(P.SET_PARAM, P.NACK_OUT_OF_RANGE), "aa03ff0603ba4a"),
    ("INFO", lambda: P.pack_info(1, 0x12345678, 500, 4096, "0.1.0", "sim"),
     "aa16800178563412f4010010000005302e312e300373696d50f3"),
    ("TELEMETRY_DATA", lambda: P.pack_telemetry_data(7, 5000, 100, 90, 3000, 200, -100, -95, -3000, -150, 1),
     "aa2090070088130000640000005a000000b80bc8009cffffffa1ffffff48f46aff0154fc"),
    ("STOP_LINK", lambda: P.pack_stop_link(), "aa010cb2ef"),
    ("STOP_LINK_ACK 500 ms", lambda: P.pack_stop_link_ack(500), "aa038cf401039e"),
    # protocol v3
    ("NACK busy", lambda: P.pack_nack(P.HELLO, P.NACK_BUSY), "aa03ff000798a0"),
    ("FAULT_CLEARED encoder right", lambda: P.pack_fault_cleared(P.FAULT_ENCODER_RIGHT), "aa028809e4a1"),
    # v4 layout: imu_state, imu_errors appended (v3: 59 bytes, "aa3c89...0010115d5b")
    ("DIAG", lambda: P.pack_diag(DIAG_SAMPLE),
     "aa3f89e8030000d0070000b80b0000a00f00008813000070170000581b0000401f00002823000010270000f82a0000e02e00000d"
     "b0360000983a0000101112130028df"),
    ("LOAD_PARAMS", lambda: P.pack_load_params(), "aa010d93ff"),
    ("LOAD_ACK from file", lambda: P.pack_load_ack(True), "aa028d0119df"),
    ("LOAD_ACK defaults", lambda: P.pack_load_ack(False), "aa028d0038cf"),
    # protocol v4 (board sensors)
    ("SENSORS 100 Hz", lambda: P.pack_sensors(100), "aa030e6400f3c3"),
    ("SENSORS_ACK 100 Hz", lambda: P.pack_sensors_ack(100), "aa038e6400a9f8"),
    ("SENSORS_DATA", lambda: P.pack_sensors_data(9, 123456, -1000, 2000, 500000, 150, -300, 9810, -1234, 7400,
                                                 P.SF_GYRO_HEADING | P.SF_BIAS_VALID | P.SF_HAS_BATTERY
                                                 | P.SF_HAS_ESTOP, P.IMU_OK, P.ST_ENABLED),
     "aa2291090040e2010018fcffffd007000020a107009600d4fe52262efbffffe81c6c010134ca"),
    ("FAULT_CLEARED estop", lambda: P.pack_fault_cleared(P.FAULT_ESTOP), "aa02880a8791"),
    ("FAULT_CLEARED battery low", lambda: P.pack_fault_cleared(P.FAULT_BATTERY_LOW), "aa02880ba681"),
    ("STATE estop, battery low", lambda: P.pack_state(0, 0, 0, 0, P.ST_FAULT | P.ST_ESTOP | P.ST_BATTERY_LOW),
     "aa128100000000000000000000000000000000642f14"),
)


def hexs(b):
    return binascii.hexlify(b).decode()


def test_crc_check_value():
    # the catalogue check value of CRC-16/CCITT-FALSE
    assert P.crc16(b"123456789") == 0x29B1


def test_golden_frames_encode():
    for name, make, expected in GOLDEN:
        got = hexs(make())
        assert got == expected, "%s: %s != %s" % (name, got, expected)


def test_golden_frames_parse():
    # all vectors back to back in one stream, fed in 7-byte chunks: every one comes out, in order
    stream = b"".join(binascii.unhexlify(e) for _, _, e in GOLDEN)
    p = P.Parser()
    out = []
    for i in range(0, len(stream), 7):
        out.extend(p.feed(stream[i:i + 7]))
    assert len(out) == len(GOLDEN), len(out)
    for (name, _, expected), (cmd, payload) in zip(GOLDEN, out):
        frame = binascii.unhexlify(expected)
        assert cmd == frame[2], name
        assert payload == frame[3:-2], name
    assert p.crc_errors == 0 and p.length_errors == 0 and p.garbage_bytes == 0
    assert p.frames == len(GOLDEN) and p.bytes_in == len(stream) == p.frame_bytes


def test_golden_payloads_unpack():
    def payload(i):
        return binascii.unhexlify(GOLDEN[i][2])[3:-2]
    assert P.unpack_set_vel(payload(1)) == (1000, -1000)
    assert P.unpack_set_vel(payload(3)) == (2147483647, -2147483648)
    assert P.unpack_state(payload(4)) == (123456, -654321, 4096, -2048, P.ST_ENABLED | P.ST_SATURATED)
    assert P.unpack_enable(payload(5)) is True
    assert P.unpack_time(payload(8)) == 0xDEADBEEF
    assert P.unpack_time_ack(payload(9)) == (1, 2, 3)
    assert P.unpack_param_value(payload(11)) == (0, 0.5)
    assert P.unpack_param_value(payload(12)) == (12, 150)
    assert P.unpack_fault_cleared(payload(15)) == P.FAULT_STALL_LEFT
    assert P.unpack_telemetry(payload(17)) == 50
    assert P.unpack_odom(payload(19)) == (1000000, 1000000, -250000, 1570796, 1555000, 1)
    assert P.unpack_nack(payload(20)) == (P.SET_PARAM, P.NACK_OUT_OF_RANGE)
    assert P.unpack_info(payload(21)) == (1, 0x12345678, 500, 4096, "0.1.0", "sim")
    assert P.unpack_telemetry_data(payload(22)) == (7, 5000, 100, 90, 3000, 200, -100, -95, -3000, -150, 1)
    assert payload(23) == b"" and binascii.unhexlify(GOLDEN[23][2])[2] == P.STOP_LINK == 0x0C
    assert P.unpack_stop_link_ack(payload(24)) == 500 and P.STOP_LINK_ACK == P.STOP_LINK | P.REPLY
    assert P.unpack_nack(payload(25)) == (P.HELLO, P.NACK_BUSY) and P.NACK_BUSY == 7
    assert P.unpack_fault_cleared(payload(26)) == P.FAULT_ENCODER_RIGHT == 9
    d = P.unpack_diag(payload(27))
    assert d == DIAG_SAMPLE and d["frame_timeouts"] == 10000 and d["fault_code"] == 13
    assert payload(28) == b"" and binascii.unhexlify(GOLDEN[28][2])[2] == P.LOAD_PARAMS == 0x0D
    assert P.unpack_load_ack(payload(29)) is True and P.unpack_load_ack(payload(30)) is False
    assert P.LOAD_ACK == P.LOAD_PARAMS | P.REPLY
    assert P.unpack_sensors(payload(31)) == 100 and P.SENSORS == 0x0E
    assert P.unpack_sensors_ack(payload(32)) == 100 and P.SENSORS_ACK == P.SENSORS | P.REPLY
    assert P.unpack_sensors_data(payload(33)) == (9, 123456, -1000, 2000, 500000, 150, -300, 9810, -1234, 7400,
                                                  0x6C, 1, 1)
    assert P.unpack_fault_cleared(payload(34)) == P.FAULT_ESTOP == 10
    assert P.unpack_fault_cleared(payload(35)) == P.FAULT_BATTERY_LOW == 11
    assert P.unpack_state(payload(36))[4] == 0x64 and P.status_names(0x64) == ["FAULT", "BATTERY_LOW", "ESTOP"]


def test_diag_round_trip():
    values = {}
    for i, (name, t) in enumerate(P.DIAG_FIELDS):
        values[name] = i + 1 if t == "B" else (1000 * (i + 1) if t == "H" else 100000 * (i + 1))
    frame = P.pack_diag(values)
    assert len(frame) <= P.MAX_FRAME
    assert P.unpack_diag(frame[3:-2]) == values


def test_bad_payload_lengths_raise():
    for fn, payload in ((P.unpack_set_vel, b"\x00" * 7), (P.unpack_state, b"\x00" * 18),
                        (P.unpack_time_ack, b""), (P.unpack_enable, b"\x01\x00"),
                        (P.unpack_stop_link_ack, b"\x00")):
        try:
            fn(payload)
        except ValueError:
            continue
        raise AssertionError("%s accepted %d bytes" % (fn.__name__, len(payload)))


def test_enable_rejects_values_other_than_0_1():
    try:
        P.unpack_enable(b"\x02")
    except ValueError:
        return
    raise AssertionError("ENABLE 2 accepted")
