# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The CircuitPython board: the firmware on stock CircuitPython 10.2.1 on the emulated Pico, flashed as an Adafruit
user does it (`viperdrive flash --board circuitpython_pico --drive PATH` onto a CIRCUITPY drive), then driven by a
third-party wire client: pyserial and the frames of shared/protocol.py, no viperdrive host code in the exchange.
Every wait and every bound is in chip time (the rig's clock). The drive image and `flash --drive`'s refusals, which
need no chip: tests/test_circuitpy_drive.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import serial

from viperdrive.shared import params
from viperdrive.shared import protocol as P
from viperdrive.timebase import WaitTimeout, wait_until

pytestmark = pytest.mark.pico

ROOT = Path(__file__).resolve().parent.parent
BOOT_OUT = "Adafruit CircuitPython 10.2.1 on 2026-12-01; Raspberry Pi Pico with rp2040\nBoard ID:raspberry_pi_pico\n"


def viperdrive(*args):
    exe = Path(sys.executable).with_name("viperdrive")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)


def mounted_drive(tmp_path: Path) -> Path:
    """A folder as a mounted CIRCUITPY drive looks after CircuitPython's first boot."""
    d = tmp_path / "CIRCUITPY"
    d.mkdir()
    (d / "boot_out.txt").write_text(BOOT_OUT)
    return d


@pytest.fixture(scope="module")
def cp_rig(circuitpython_drive):
    """The rig on CircuitPython with the drive a user's `flash --drive` left (the session's circuitpython_drive,
    root conftest.py), booted until HELLO answers."""
    from viperdrive.rigs.pico import PicoRig
    with PicoRig(firmware="circuitpython", drive=circuitpython_drive,
                 board=ROOT / "mcu" / "boards" / "circuitpython_pico.json") as rig:
        with serial.serial_for_url(rig.url, timeout=0) as ser:
            client = WireClient(ser, rig.clock)
            # CircuitPython compiles every module from source at boot: several chip seconds
            wait_until(lambda: client.request(P.pack_hello(), P.INFO, 0.5), 60.0, rig.clock,
                       what="INFO from the firmware on CircuitPython")
            yield rig, client


class WireClient:
    """Frames by hand over pyserial: what any program that read docs/protocol.md would do."""

    def __init__(self, ser, clock):
        self.ser = ser
        self.clock = clock
        self.parser = P.Parser()

    def diag(self):
        payload = self.request(P.pack_get_diag(), P.DIAG, 1.0)
        return None if payload is None else P.unpack_diag(payload)

    def request(self, frame: bytes, reply: int, timeout: float):
        """The reply's payload, or None after `timeout` chip seconds."""
        self.ser.write(frame)
        found: list = []

        def got():
            data = self.ser.read(4096)
            for cmd, payload in self.parser.feed(data):
                if cmd == reply:
                    found.append(payload)
            return bool(found)
        try:
            wait_until(got, timeout, self.clock, what="a reply")
        except WaitTimeout:
            return None
        return found[0]


def test_a_third_party_client_drives_the_circuitpython_board(cp_rig):
    rig, c = cp_rig
    version, schema, hz, cpr, firmware, board = P.unpack_info(c.request(P.pack_hello(), P.INFO, 1.0))
    assert (version, schema, hz, cpr, board) == (P.PROTOCOL_VERSION, params.schema_hash(), 100, 1496,
                                                 "pico-cp-mdd10")
    diag = c.diag()
    # no hard IRQ: the control step runs from the slow loop
    assert diag is not None and diag["flags"] & P.DIAG_TIMER_SOFT

    # garbage and a frame with a bad CRC are counted and dropped; the link goes on
    rig.fault("garbage", n=300)
    bad = bytearray(P.pack_hello())
    bad[-1] ^= 0xFF
    c.ser.write(bytes(bad))
    after = wait_until(lambda: (lambda d: d if d is not None and d["garbage_bytes"] - diag["garbage_bytes"] >= 250
                                and d["crc_errors"] > diag["crc_errors"] else None)(c.diag()),
                       3.0, rig.clock, what="garbage and the bad CRC counted")
    assert after["crc_errors"] >= diag["crc_errors"] + 1

    # enable, then 1 s of chip time of SET_VEL forward: both wheels turn forward (REP-103: x grows)
    assert c.request(P.pack_enable(True), P.ENABLE_ACK, 1.0) is not None
    speed = int(3.0 / (2 * 3.141592653589793) * cpr)        # 3 rad/s in counts/s
    x0 = rig.truth()["x"]
    end = rig.clock.now() + 1.0
    while rig.clock.now() < end:
        st = c.request(P.pack_set_vel(speed, speed), P.STATE, 0.5)
        rig.clock.sleep(0.02)
    pl, pr, vl, vr, status = P.unpack_state(st)
    truth = rig.truth()
    assert status & P.ST_ENABLED and not status & P.ST_DEADMAN, status
    assert truth["w_left"] > 1.0 and truth["w_right"] > 1.0 and truth["x"] - x0 > 0.02, truth

    # the host goes silent: the deadman trips within deadman_ms plus one control period as the board measured
    # its worst (the check runs once per period), and the wheels come to rest
    last = rig.clock.now()
    tripped = wait_until(lambda: (lambda s: rig.clock.now() if s and P.unpack_state(s)[4] & P.ST_DEADMAN else None)(
        c.request(P.pack_get_state(), P.STATE, 0.5)), 2.0, rig.clock, what="DEADMAN in STATE")
    period_max = c.diag()["period_max_us"] * 1e-6
    print(f"deadman seen {1e3 * (tripped - last):.0f} ms after the last SET_VEL (deadman 100 ms, worst control "
          f"period {1e3 * period_max:.0f} ms, chip time)")
    assert tripped - last <= 0.100 + period_max + 0.05      # + the GET_STATE polling interval of this client
    wait_until(lambda: abs(rig.truth()["w_left"]) < 0.05 and abs(rig.truth()["w_right"]) < 0.05, 2.0, rig.clock,
               what="the wheels at rest after the deadman")

    # the CIRCUITPY drive belongs to the USB host unless boot.py remounts it for code: SAVE_PARAMS is refused with
    # the storage reason (the live values stand), and the link goes on
    assert c.request(P.pack_save_params(), P.NACK, 1.0) == bytes((P.SAVE_PARAMS, P.NACK_STORAGE))
    assert c.request(P.pack_hello(), P.INFO, 1.0) is not None


def test_a_frozen_control_task_brings_the_watchdog_and_the_board_back_disabled(cp_rig):
    rig, c = cp_rig
    resets = rig.stats()["watchdog_resets"]
    assert c.request(P.pack_enable(True), P.ENABLE_ACK, 1.0) is not None
    rig.fault("freeze_control", on=True)
    t0 = rig.clock.now()
    st = wait_until(lambda: (lambda s: s if s["watchdog_resets"] > resets else None)(rig.stats()), 5.0, rig.clock,
                    what="a watchdog reset")
    bitten = rig.clock.now() - t0
    assert st["last_reset_cause"] == "WATCHDOG", st
    assert bitten <= 1.0 + 0.2, bitten         # watchdog_ms 1000 of circuitpython_pico.json
    info = wait_until(lambda: c.request(P.pack_hello(), P.INFO, 0.5), 60.0, rig.clock, what="INFO after the reset")
    back = rig.clock.now() - t0
    assert P.unpack_info(info)[5] == "pico-cp-mdd10"
    diag = c.diag()
    assert diag is not None and diag["reset_cause"] == P.RESET_WATCHDOG, diag
    status = P.unpack_state(c.request(P.pack_set_vel(0, 0), P.STATE, 1.0))[4]
    assert status & P.ST_WDT_RESET and not status & P.ST_ENABLED, status     # back, and disabled
    assert rig.truth()["energized"] is False
    print(f"watchdog: bit {bitten:.2f} s after the freeze, firmware answering again {back:.1f} s after it (chip "
          f"time; CircuitPython compiles the firmware from source at every boot)")
