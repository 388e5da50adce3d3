# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# boardcfg: every example board file loads; defaults are filled; each kind of bad value is a ValueError naming
# the key, the value and what is allowed; the input dict is not modified.
import os

from viperdrive import boardcfg

BOARDS = "mcu/boards"


def _rp2(**over):
    d = {"backend": "rp2", "counts_per_rev": 1496,
         "pins": {"left": {"pwm": 6, "dir": 7, "enc_a": 2, "enc_b": 3},
                  "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}}
    d.update(over)
    return d


def _stm32(**over):
    d = {"backend": "stm32", "counts_per_rev": 1496,
         "pins": {"left": {"pwm": "X9", "dir": "X11", "enc_a": "X1", "enc_b": "X2", "enc_timer": 2,
                           "pwm_timer": 4, "pwm_channel": 1},
                  "right": {"pwm": "X10", "dir": "X12", "enc_a": "Y1", "enc_b": "Y2", "enc_timer": 8,
                            "pwm_timer": 4, "pwm_channel": 2}}}
    d.update(over)
    return d


def _error(d, *words):
    try:
        boardcfg.validate(d)
    except ValueError as e:
        msg = str(e)
        for w in words:
            assert w in msg, "%r not in %r" % (w, msg)
        return msg
    raise AssertionError("accepted %r" % (d,))


def test_every_example_board_loads():
    names = sorted(n for n in os.listdir(BOARDS) if n.endswith(".json"))
    backends = set()
    for n in names:
        cfg = boardcfg.load(BOARDS + "/" + n)
        backends.add(cfg["backend"])
        assert 100 <= cfg["control_hz"] <= 1000
        if cfg["backend"] != "sim":
            for side in ("left", "right"):
                assert "enc_a" in cfg["pins"][side] and "enc_b" in cfg["pins"][side]
    assert backends == set(boardcfg.BACKENDS), backends
    pico = boardcfg.load(BOARDS + "/pico.json")
    assert pico["driver"] == "pwm_dir" and pico["motor_sign"] == [1, -1] and pico["counter_bits"] == 32
    drv = boardcfg.load(BOARDS + "/pico_drv8833.json")
    assert drv["driver"] == "in1_in2" and drv["link"] == {"type": "uart", "uart_id": 0, "baud": 460800,
                                                             "tx": 0, "rx": 1}


def test_defaults_filled():
    cfg = boardcfg.validate({"backend": "sim", "counts_per_rev": 4096})
    assert cfg["control_hz"] == 500
    assert cfg["counter_bits"] == 32
    assert cfg["driver"] == "pwm_dir"
    assert cfg["pwm_freq"] == 20000
    assert cfg["motor_sign"] == [1, 1] and cfg["encoder_sign"] == [1, 1]
    assert cfg["watchdog_ms"] == 500
    assert cfg["link"] == {"type": "usb"}
    assert cfg["name"] == "viperdrive"
    assert "repl_pin" not in cfg
    assert boardcfg.validate(_rp2())["counter_bits"] == 32
    assert boardcfg.validate(_stm32())["counter_bits"] == 16
    assert boardcfg.validate(_stm32())["control_timer"] == 7
    uart = boardcfg.validate(_rp2(link={"type": "uart", "uart_id": 1}))["link"]
    assert uart == {"type": "uart", "uart_id": 1, "baud": 115200}


def test_input_not_modified():
    d = _rp2()
    before = repr(d)
    boardcfg.validate(d)
    assert repr(d) == before


def test_range_errors_name_key_value_and_allowed():
    _error(_rp2(control_hz=2000), "control_hz", "2000", "100..1000")
    _error(_rp2(control_hz=99), "control_hz", "99")
    _error(_rp2(control_hz=True), "control_hz", "True")          # a bool is not an integer here
    _error(_rp2(control_hz=500.0), "control_hz", "500.0")
    _error(_rp2(watchdog_ms=9000), "watchdog_ms", "9000", "8300")
    _error(_rp2(counts_per_rev=0), "counts_per_rev", "0")
    _error(_rp2(pwm_freq=1), "pwm_freq", "1")
    _error(_rp2(counter_bits=16), "counter_bits", "16", "32 for backend rp2")
    _error(_stm32(counter_bits=32), "counter_bits", "32", "16 for backend stm32")


def test_choice_and_sign_errors():
    _error(_rp2(backend="avr"), "backend", '"avr"', '"rp2"', '"sim"')
    _error(_rp2(driver="l298"), "driver", '"l298"', '"pwm_dir"', '"in1_in2"')
    _error(_rp2(motor_sign=[1, 0]), "motor_sign", "[1, 0]", "+1 or -1")
    _error(_rp2(encoder_sign=[1]), "encoder_sign")
    _error(_rp2(link={"type": "wifi"}), "link.type", '"wifi"')
    _error(_rp2(link={"type": "uart", "uart_id": 0, "baud": 300}), "link.baud", "300")


def test_missing_and_unknown_keys():
    _error({"counts_per_rev": 10}, "backend is missing")
    _error({"backend": "sim"}, "counts_per_rev is missing")
    _error({"backend": "rp2", "counts_per_rev": 10}, "pins is missing")
    _error(_rp2(contol_hz=500), '"contol_hz"', "unknown key", "control_hz")   # a typo is caught, not ignored
    d = _rp2()
    d["pins"]["left"]["pwn"] = 6
    _error(d, "pins.left.", '"pwn"')
    d = _rp2()
    del d["pins"]["right"]
    _error(d, "pins.right is missing")
    d = _rp2(driver="in1_in2")
    _error(d, "pins.left.in1 is missing", "in1_in2")
    _error(_rp2(link={"type": "uart"}), "link.uart_id is missing")
    _error(_rp2(encoder="pcnt"), "encoder", "esp32")
    _error(_rp2(sim={}), "sim", "backend sim")
    _error([1, 2], "one JSON object")


def test_backend_specific_rules():
    d = _rp2()
    d["pins"]["left"]["enc_b"] = 9
    _error(d, "pins.left.enc_b", "9", "enc_a + 1 = 3")       # the PIO program reads two adjacent GPIOs
    d = _rp2()
    d["pins"]["right"]["pwm"] = "GP8"
    _error(d, "pins.right.pwm", "GPIO number")
    d = _stm32()
    del d["pins"]["left"]["enc_timer"]
    _error(d, "pins.left.enc_timer is missing")
    d = _stm32(driver="in1_in2")
    for side in ("left", "right"):
        p = d["pins"][side]
        p["in1"] = p.pop("pwm")
        p["in2"] = p.pop("dir")
    _error(d, "pins.left.in2_channel is missing")
    d["pins"]["left"]["in2_channel"] = 3
    d["pins"]["right"]["in2_channel"] = 4
    cfg = boardcfg.validate(d)
    assert cfg["pins"]["left"]["in2_channel"] == 3
    esp = boardcfg.validate({"backend": "esp32", "counts_per_rev": 100, "driver": "in1_in2",
                             "pins": {"left": {"in1": 25, "in2": 26, "enc_a": 32, "enc_b": 33, "pcnt_unit": 2},
                                      "right": {"in1": 14, "in2": 12, "enc_a": 18, "enc_b": 19}}})
    assert esp["encoder"] == "auto" and esp["pins"]["left"]["pcnt_unit"] == 2 and esp["counter_bits"] == 16
    assert "pcnt_unit" not in esp["pins"]["right"]


def test_load_file_errors_name_the_file():
    path = "/tmp/vd_boardcfg_test_%d.json" % os.getpid() if hasattr(os, "getpid") else "/tmp/vd_boardcfg.json"
    try:
        boardcfg.load(path + ".absent")
    except ValueError as e:
        assert path + ".absent" in str(e) and "cannot read" in str(e)
    else:
        raise AssertionError("missing file accepted")
    with open(path, "w") as f:
        f.write('{"backend": "sim", "counts_per_rev": ')
    try:
        boardcfg.load(path)
    except ValueError as e:
        assert path in str(e) and "not valid JSON" in str(e)
    else:
        raise AssertionError("broken JSON accepted")
    with open(path, "w") as f:
        f.write('{"backend": "sim", "counts_per_rev": 4096, "control_hz": 250}')
    assert boardcfg.load(path)["control_hz"] == 250
    os.remove(path)


def test_every_key_is_documented():
    with open("docs/board-config.md") as f:
        doc = f.read()
    for keys in (boardcfg._TOP_KEYS, boardcfg._WHEEL_KEYS, boardcfg._LINK_KEYS, boardcfg._IMU_KEYS,
                 boardcfg._BATTERY_KEYS, boardcfg._ESTOP_KEYS):
        for k in keys:
            if k != "comment":
                assert "`%s`" % k in doc, "docs/board-config.md does not document %s" % k
    for b in boardcfg.BACKENDS + boardcfg.DRIVERS + boardcfg.LINK_TYPES:
        assert "`%s`" % b in doc or "**%s**" % b in doc, b


def test_sensor_sections():
    base = {"backend": "rp2", "counts_per_rev": 1496,
            "pins": {"left": {"pwm": 6, "dir": 7, "enc_a": 2, "enc_b": 3},
                     "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}}

    def bad(extra, words):
        d = dict(base)
        d.update(extra)
        try:
            boardcfg.validate(d)
        except ValueError as e:
            assert words in str(e), (str(e), words)
        else:
            raise AssertionError("accepted %r" % (extra,))

    d = dict(base, imu={"part": "lsm6ds3", "i2c": 0, "sda": 16, "scl": 17, "axes": ["y", "-x", "z"]},
             battery={"adc": 26, "divider": 3.0}, estop={"pin": 14})
    cfg = boardcfg.validate(d)
    assert cfg["imu"]["address"] == 0x6A and cfg["imu"]["map"] == [1, 0, 2] and cfg["imu"]["sign"] == [1, -1, 1]
    assert cfg["imu"]["gyro_fs_dps"] == 500 and cfg["imu"]["rate_hz"] == 100 and cfg["imu"]["freq"] == 400000
    assert cfg["battery"] == {"adc": 26, "divider": 3.0, "vref": 3.3}
    assert cfg["estop"] == {"pin": 14, "closed": 0, "pull": "up"}
    bad({"imu": {"part": "bno055"}}, 'imu.part = "bno055"')
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4}}, "imu.scl is missing")
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5, "address": 0x6A}}, "mpu6050 answers at 104 or 105")
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5, "axes": ["x", "x", "z"]}}, "imu.axes")
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5, "gyro_fs_dps": 300}}, "imu.gyro_fs_dps")
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5, "rate_hz": 1000}}, "imu.rate_hz")
    bad({"imu": {"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5, "adress": 104}}, 'unknown key imu."adress"')
    bad({"battery": {"adc": 5, "divider": 3.0}}, "GPIO 26..29 on rp2")
    bad({"battery": {"adc": 26}}, "battery.divider is missing")
    bad({"battery": {"adc": 26, "divider": float("nan")}}, "battery.divider")
    bad({"estop": {"pin": 30}}, "estop.pin")
    bad({"estop": {"closed": 0}}, "estop.pin is missing")
    bad({"estop": {"pin": 3, "closed": 2}}, "estop.closed")
    cp = {"backend": "circuitpython", "counts_per_rev": 100,
          "pins": {"left": {"pwm": "D1", "dir": "D2", "enc_a": "D3", "enc_b": "D4"},
                   "right": {"pwm": "D5", "dir": "D6", "enc_a": "D7", "enc_b": "D8"}},
          "link": {"type": "uart", "uart_id": 0, "tx": "TX", "rx": "RX"}}
    for k, v in (("estop", {"pin": "D9"}), ("imu", {"part": "mpu6050"}), ("battery", {"divider": 2.0})):
        try:
            boardcfg.validate(dict(cp, **{k: v}))
        except ValueError as e:
            assert "circuitpython" in str(e)
        else:
            raise AssertionError(k)


def test_every_pin_has_one_role():
    # each case the hardening round found passing `flash --dry-run`: the error names both roles
    cases = (
        (_rp2(estop={"pin": 6}), ("pins.left.pwm", "estop.pin", "pin 6")),
        (_rp2(pins={"left": {"pwm": 6, "dir": 7, "enc_a": 2, "enc_b": 3},
                    "right": {"pwm": 6, "dir": 9, "enc_a": 4, "enc_b": 5}}), ("pins.left.pwm", "pins.right.pwm")),
        (_rp2(imu={"part": "mpu6050", "i2c": 0, "sda": 2, "scl": 17}), ("pins.left.enc_a", "imu.sda")),
        (_rp2(repl_pin=8), ("pins.right.pwm", "repl_pin")),
        (_rp2(battery={"adc": 26, "divider": 4.0}, estop={"pin": 26}), ("battery.adc", "estop.pin")),
        (_rp2(link={"type": "uart", "uart_id": 0, "tx": 9, "rx": 1}), ("pins.right.dir", "link.tx")),
        (_stm32(repl_pin="x9"), ("pins.left.pwm", "repl_pin", "x9")),
    )
    for d, words in cases:
        _error(d, "every pin has one role", *words)
    # the same pins, each on its own: accepted
    boardcfg.validate(_rp2(estop={"pin": 22}, repl_pin=15, imu={"part": "mpu6050", "i2c": 0, "sda": 16, "scl": 17}))


def test_pins_within_the_ports_gpio_range():
    # rp2 has GPIO 0..29 (a motor pin up to 255 was accepted); esp32's widest chip has 0..48
    _error(_rp2(pins={"left": {"pwm": 40, "dir": 7, "enc_a": 2, "enc_b": 3},
                      "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}), "pins.left.pwm", "40", "0..29", "rp2")
    _error(_rp2(repl_pin=30), "repl_pin", "0..29")
    # enc_b = enc_a + 1 = 30 does not exist
    _error(_rp2(pins={"left": {"pwm": 6, "dir": 7, "enc_a": 29, "enc_b": 30},
                      "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}), "pins.left.enc_b", "0..29")
    esp = {"backend": "esp32", "counts_per_rev": 1496,
           "pins": {"left": {"pwm": 25, "dir": 26, "enc_a": 34, "enc_b": 35},
                    "right": {"pwm": 27, "dir": 14, "enc_a": 36, "enc_b": 49}}}
    _error(esp, "pins.right.enc_b", "49", "0..48", "esp32")
