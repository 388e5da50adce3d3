# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""docs/protocol.md agrees with shared/protocol.py: the byte-budget table is tools/byte_budget.py's output, every
code, bit, field and frame size the doc states is the protocol's, and the versioning rule is enforced (a change
to any wire definition without a PROTOCOL_VERSION bump fails here)."""
from __future__ import annotations

import hashlib
import importlib.util
import re
import struct
from pathlib import Path

import pytest

from viperdrive.shared import params
from viperdrive.shared import protocol as P

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "protocol.md").read_text()

# PROTOCOL_VERSION -> fingerprint of every wire definition in protocol.py. Changing a layout, code, bit or
# framing constant changes the fingerprint: bump PROTOCOL_VERSION and add the new line here (and update
# docs/protocol.md). Old lines stay, for the record.
WIRE_FINGERPRINTS = {
    1: "a8b17d20ad4b1bfc7e6ea6edc662fd03b0ca8c8a91a74a3c395839ad460b7834",
    2: "8a732d5cd12bb52436cbec53f7d65ac73b35d20a694a7973b076ca3fa4629e95",   # STOP_LINK, STOP_LINK_ACK
    # FAULT_ENCODER_LEFT/RIGHT, NACK_BUSY, DIAG frame_timeouts, the frame gap (FRAME_GAP_*), LOAD_PARAMS, LOAD_ACK,
    # DIAG_PARAMS_UNSAVED
    3: "bec16b4d80a95f1d4a0ba6bfeaf77bd39c6fa18eb0e59395a58f4d6cd291bf2d",
    # board sensors: SENSORS/SENSORS_ACK/SENSORS_DATA (SF_*, IMU_*, *_SCALE), ST_BATTERY_LOW, ST_ESTOP, FAULT_ESTOP,
    # FAULT_BATTERY_LOW, ODOM's encoder heading and heading source, DIAG imu_state and imu_errors
    4: "79a21645e4bf401475a9cfa5be76863100a7c92600a4bca4630765a18e6437b2",
    # moves on the board: MOVE, MOVE_LEASE, MOVE_STATE (MOVE_*, MOVE_END_*), GET_STATE
    5: "83595e987d8d0e043484e0ec1722d8db0ec0ccd1845a140ce286d4b30f7bfc27",
    # the DIAG flags DIAG_FROZEN, DIAG_UNUSED_PACKAGE, DIAG_UNUSED_MAIN, DIAG_UNUSED_ROOT (the Pico image)
    6: "207abce58b97f2c3cb80df0dea604aa13e616155d44a26b8492ff78983a21131",
}


def load_byte_budget():
    spec = importlib.util.spec_from_file_location("byte_budget", ROOT / "tools" / "byte_budget.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def wire_fingerprint() -> str:
    items = []
    for name in sorted(dir(P)):
        value = getattr(P, name)
        if (name.isupper() and not name.startswith("_") and name != "PROTOCOL_VERSION"
                and isinstance(value, (int, float, str, tuple))):
            items.append((name, value))
    items.append(("crc16('123456789')", P.crc16(b"123456789")))
    return hashlib.sha256(repr(items).encode()).hexdigest()


def table_rows(heading: str) -> list[list[str]]:
    """The cells of every table row in the section that starts with `heading` (up to the next heading)."""
    section = DOC.split(heading, 1)[1]
    section = re.split(r"\n#{2,4} ", section, maxsplit=1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows[1:]   # without the header row


def test_byte_budget_table_is_the_scripts_output():
    bb = load_byte_budget()
    assert bb.doc_table(DOC) == bb.table(), "run: .venv/bin/python tools/byte_budget.py --write"


def test_byte_budget_numbers():
    # spot checks of the model itself against hand arithmetic (35 B per cycle at 10 bits per byte: 3.0 ms at 115200)
    bb = load_byte_budget()
    sv_state = [t for t in bb.traffic() if t[0] == "SET_VEL -> STATE"][0]
    assert sv_state[1:] == (13, 22)
    uart = dict(bb.links())["115200 baud"]
    assert abs(uart(13, 22) - 35 * 10 / 115200) < 1e-12          # 3.04 ms
    usb = dict(bb.links())["USB FS CDC"]
    assert usb(13, 22) == 0.001 and usb(0, 36) == 36 / 1216000
    assert "| SET_VEL -> STATE | 13 + 22 = 35 | 100 Hz | 30% ok |" in bb.table()
    assert "| SET_VEL -> STATE | 13 + 22 = 35 | 1000 Hz | 304% **no** |" in bb.table()


def test_every_command_and_reply_is_documented_with_its_code_and_frame_size():
    sample = {   # a frame of each, built by the protocol itself
        "HELLO": P.pack_hello(), "SET_VEL": P.pack_set_vel(1, 2), "ENABLE": P.pack_enable(True),
        "ZERO": P.pack_zero(), "TIME": P.pack_time(1), "GET_PARAM": P.pack_get_param(0),
        "SAVE_PARAMS": P.pack_save_params(), "CLEAR_FAULT": P.pack_clear_fault(), "GET_DIAG": P.pack_get_diag(),
        "TELEMETRY": P.pack_telemetry(50), "GET_ODOM": P.pack_get_odom(),
        "STOP_LINK": P.pack_stop_link(), "STOP_LINK_ACK": P.pack_stop_link_ack(500),
        "LOAD_PARAMS": P.pack_load_params(), "LOAD_ACK": P.pack_load_ack(True),
        "STATE": P.pack_state(1, 2, 3, 4, 5), "ENABLE_ACK": P.pack_enable_ack(True), "ZERO_ACK": P.pack_zero_ack(),
        "TIME_ACK": P.pack_time_ack(1, 2, 3), "SAVE_ACK": P.pack_save_ack(),
        "FAULT_CLEARED": P.pack_fault_cleared(1), "DIAG": P.pack_diag({n: 0 for n, _ in P.DIAG_FIELDS}),
        "TELEMETRY_ACK": P.pack_telemetry_ack(50), "ODOM": P.pack_odom(1, 2, 3, 4, 5, 1),
        "SENSORS": P.pack_sensors(100), "SENSORS_ACK": P.pack_sensors_ack(100),
        "SENSORS_DATA": P.pack_sensors_data(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 1),
        "TELEMETRY_DATA": P.pack_telemetry_data(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), "NACK": P.pack_nack(1, 1),
        "MOVE": P.pack_move(1, P.MOVE_STRAIGHT, 0.5, 0.0, 0.2, 0.5), "MOVE_LEASE": P.pack_move_lease(True),
        "GET_STATE": P.pack_get_state(), "MOVE_STATE": P.pack_move_state(1, 2, 3, [(1, 1), (2, 4)], 500),
    }
    f_param = [p[params.ID] for p in params.TABLE if p[params.TYPE] == "f"][0]
    h_param = [p[params.ID] for p in params.TABLE if p[params.TYPE] == "H"][0]
    variable = {
        "SET_PARAM": {len(P.pack_set_param(f_param, 1.0)), len(P.pack_set_param(h_param, 100))},
        "PARAM": {len(P.pack_param(f_param, 1.0)), len(P.pack_param(h_param, 100))},
        "PARAM_SET": {len(P.pack_param_set(f_param, 1.0)), len(P.pack_param_set(h_param, 100))},
        "INFO": {len(P.pack_info(1, 2, 3, 4, "", "")), len(P.pack_info(1, 2, 3, 4, "v" * 20, "b" * 20))},
    }
    rows = table_rows("## Commands and replies")
    documented = {}
    for cells in rows:
        if len(cells) >= 4 and re.fullmatch(r"0x[0-9A-F]{2}", cells[1]):
            documented[cells[0]] = (int(cells[1], 16), cells[3])
    assert set(documented) == set(P.COMMAND_NAMES.values()), set(P.COMMAND_NAMES.values()) ^ set(documented)
    for code, name in P.COMMAND_NAMES.items():
        doc_code, doc_size = documented[name]
        assert doc_code == code, (name, hex(doc_code), hex(code))
        if name in sample:
            assert doc_size == str(len(sample[name])), (name, doc_size, len(sample[name]))
        else:
            lo, hi = min(variable[name]), max(variable[name])
            assert doc_size in (f"{hi} or {lo}", f"{lo}..{hi}"), (name, doc_size, variable[name])


def test_status_bits_fault_and_nack_codes_are_documented():
    status = {int(c[1], 16): c[2] for c in table_rows("### Status byte") if c[1]}
    assert status == {bit: name for bit, name in P.STATUS_BITS}
    faults = {int(c[0]): c[1] for c in table_rows("### Fault codes")}
    fault_consts = [n for n in dir(P) if n.startswith("FAULT_") and n not in ("FAULT_NAMES", "FAULT_CLEARED")]
    assert faults == {getattr(P, n): n for n in fault_consts}
    nacks = {int(c[0]): c[1] for c in table_rows("### NACK codes")}
    assert nacks == {getattr(P, n): n for n in dir(P) if n.startswith("NACK_") and n != "NACK_NAMES"}


def test_diag_and_telemetry_layouts_are_documented():
    diag = [(int(c[0]), c[1], c[2]) for c in table_rows("### DIAG fields")]
    types = {"I": "u32", "B": "u8", "H": "u16"}
    offset, expect = 0, []
    for name, t in P.DIAG_FIELDS:
        expect.append((offset, types[t], name))
        offset += struct.calcsize("<" + t)
    assert diag == expect
    assert f"Payload {struct.calcsize(P.FMT_DIAG)} bytes" in DOC
    for code in ("RESET_POWER_ON", "RESET_WATCHDOG", "RESET_SOFT", "RESET_OTHER", "DIAG_PARAMS_DEFAULTED",
                 "DIAG_TIMER_SOFT", "DIAG_PARAMS_UNSAVED"):
        assert f"{getattr(P, code)} {code}" in DOC or f"0x{getattr(P, code):02x} {code}" in DOC, code
    tele = [(int(c[0]), c[1]) for c in table_rows("### TELEMETRY_DATA")]
    wire = {"H": "u16", "I": "u32", "i": "i32", "h": "i16", "B": "u8"}
    offset, expect = 0, []
    for t in P.FMT_TELEMETRY_DATA[1:]:
        expect.append((offset, wire[t]))
        offset += struct.calcsize("<" + t)
    assert tele == expect
    assert f"Payload, {offset} bytes" in DOC
    sens = [(int(c[0]), c[1]) for c in table_rows("### SENSORS_DATA")]
    offset, expect = 0, []
    for t in P.FMT_SENSORS_DATA[1:]:
        expect.append((offset, wire[t]))
        offset += struct.calcsize("<" + t)
    assert sens == expect
    assert f"Payload, {offset} bytes, format `protocol.FMT_SENSORS_DATA`" in DOC
    flags = {int(c[1], 16): c[2] for c in table_rows("### Sensor flags") if c[1]}
    assert flags == {bit: name for bit, name in P.SENSOR_FLAG_BITS}
    imu = {int(c[0]): c[1] for c in table_rows("### IMU states")}
    assert imu == {getattr(P, n): n for n in dir(P) if n.startswith("IMU_") and n not in ("IMU_NAMES",
                                                                                           "IMU_RETRY_MS")}


def test_false_accept_theory_in_the_doc_matches_the_bench():
    spec = importlib.util.spec_from_file_location("bench_fuzz", ROOT / "bench" / "bench_fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p_false, p_check, p_len = mod.theory_per_byte()
    assert p_false == 2.0 ** -26 and p_check == 2.0 ** -10 and p_len == 2.0 ** -8 * 0.75
    assert "2^-26 = 1.49e-8 per byte position" in DOC and f"{p_false * 1e6:.4f} per MB" in DOC


def test_wire_definitions_match_the_protocol_version():
    fp = wire_fingerprint()
    known = WIRE_FINGERPRINTS.get(P.PROTOCOL_VERSION)
    assert known == fp, (
        f"the wire definitions in shared/protocol.py changed (fingerprint {fp}) but PROTOCOL_VERSION is still "
        f"{P.PROTOCOL_VERSION}: bump it, add the fingerprint to WIRE_FINGERPRINTS in tests/test_protocol_doc.py "
        "and update docs/protocol.md")
    assert f"**`PROTOCOL_VERSION`** (now {P.PROTOCOL_VERSION}" in DOC
