# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The board config file (board.json on the board's filesystem): which backend, pins, PWM, encoder resolution and
# direction signs, link and watchdog. The firmware code never names a pin; a robot builder edits this file.
# docs/board-config.md documents every key. validate() is pure (tests need no file); load() reads and validates.
#
# Every error is a ValueError whose message names the key, the bad value and what is allowed, e.g.
#   board config: control_hz = 2000 is not allowed (an integer 100..1000)
import json

BACKENDS = ("rp2", "esp32", "stm32", "circuitpython", "sim")
DRIVERS = ("pwm_dir", "in1_in2")
LINK_TYPES = ("usb", "uart")

# what each backend's encoder counters can be (the hardware decides, the config may only pick among these)
_COUNTER_BITS = {"rp2": (32,), "esp32": (16,), "stm32": (16,), "circuitpython": (16,), "sim": (32, 16)}
# hardware watchdog ceilings: rp2 ~8.3 s (24-bit us counter, halved by the RP2040 erratum), STM32 IWDG ~32 s
_WATCHDOG_MAX = {"rp2": 8300, "stm32": 32000, "esp32": 60000, "circuitpython": 60000, "sim": 60000}
# the control timer each backend uses unless told otherwise (pyboard: TIM7, a basic timer no pin needs;
# rp2: -1 = a virtual timer; esp32: hardware timer 0)
_TIMER_DEFAULT = {"rp2": -1, "esp32": 0, "stm32": 7, "circuitpython": -1, "sim": -1}

_TOP_KEYS = ("name", "backend", "control_hz", "counts_per_rev", "counter_bits", "driver", "pwm_freq",
             "motor_sign", "encoder_sign", "pins", "link", "watchdog_ms", "repl_pin", "repl_pull",
             "control_timer", "pio", "encoder", "sim", "imu", "battery", "estop", "comment")
_WHEEL_KEYS = ("pwm", "dir", "in1", "in2", "enc_a", "enc_b", "enable", "pwm_timer", "pwm_channel",
               "in2_channel", "enc_timer", "pcnt_unit", "comment")
_LINK_KEYS = ("type", "uart_id", "baud", "tx", "rx", "comment")
# board sensors (docs/board-config.md, "imu", "battery", "estop")
IMU_PARTS = ("mpu6050", "lsm6ds3")
_IMU_KEYS = ("part", "i2c", "sda", "scl", "freq", "address", "axes", "gyro_fs_dps", "accel_fs_g", "rate_hz",
             "comment")
_IMU_ADDRESSES = {"mpu6050": (0x68, 0x69), "lsm6ds3": (0x6A, 0x6B)}
_GYRO_FS = (250, 500, 1000, 2000)       # deg/s (the LSM6DS3's 245 is its "250")
_ACCEL_FS = (2, 4, 8, 16)               # g
_AXIS_NAMES = ("x", "y", "z")
_BATTERY_KEYS = ("adc", "divider", "vref", "comment")
_ESTOP_KEYS = ("pin", "closed", "pull", "comment")


def _bad(key, value, allowed):
    return ValueError("board config: %s = %s is not allowed (%s)" % (key, _show(value), allowed))


def _show(value):
    if isinstance(value, str):
        return '"%s"' % value
    return str(value)


def _is_int(v):
    # bool is an int subclass: reject it explicitly so `"control_hz": true` is an error, not 1
    return isinstance(v, int) and not isinstance(v, bool)


def _int(d, key, lo, hi, default=None, label=None):
    label = label or key
    if key not in d:
        if default is None:
            raise ValueError("board config: %s is missing (an integer %d..%d)" % (label, lo, hi))
        return default
    v = d[key]
    if not _is_int(v) or v < lo or v > hi:
        raise _bad(label, v, "an integer %d..%d" % (lo, hi))
    return v


def _choice(d, key, choices, default=None, label=None):
    label = label or key
    if key not in d:
        if default is None:
            raise ValueError("board config: %s is missing (one of %s)" % (label, ", ".join(choices)))
        return default
    v = d[key]
    if v not in choices or not isinstance(v, type(choices[0])) or isinstance(v, bool):
        raise _bad(label, v, "one of %s" % ", ".join(_show(c) for c in choices))
    return v


def _signs(d, key):
    if key not in d:
        return [1, 1]
    v = d[key]
    if not isinstance(v, list) or len(v) != 2 or any((not _is_int(s)) or s not in (1, -1) for s in v):
        raise _bad(key, v, "[left, right] with each +1 or -1")
    return [v[0], v[1]]


# the GPIO numbers each port has: rp2 GPIO 0..29 (RP2040, bank 0); esp32 0..48 (the ESP32-S3's range, the widest
# of the family: a classic ESP32 stops at 39, a C3 at 21); the others take a number 0..255 or a pin name
_GPIO_MAX = {"rp2": 29, "esp32": 48}


def _pin(v, label, backend):
    # a GPIO number (rp2, esp32) or a board pin name ("X1" on a pyboard, "GP2"/"D5" on CircuitPython)
    top = _GPIO_MAX.get(backend, 255)
    if _is_int(v) and 0 <= v <= top:
        return v
    if backend in _GPIO_MAX:
        raise _bad(label, v, "a GPIO number 0..%d on %s" % (top, backend))
    if isinstance(v, str) and 0 < len(v) <= 16:
        return v
    raise _bad(label, v, "a GPIO number 0..255 or a pin name")


def _pin_roles(cfg):
    """[(role, pin)] of every pin the config gives a job, in the order the file describes them."""
    roles = []
    pins = cfg.get("pins") or {}
    for side in ("left", "right"):
        for k in ("pwm", "dir", "in1", "in2", "enable", "enc_a", "enc_b"):
            if k in pins.get(side, {}):
                roles.append(("pins.%s.%s" % (side, k), pins[side][k]))
    link = cfg.get("link") or {}
    for k in ("tx", "rx"):
        if k in link:
            roles.append(("link." + k, link[k]))
    if "repl_pin" in cfg:
        roles.append(("repl_pin", cfg["repl_pin"]))
    imu = cfg.get("imu") or {}
    for k in ("sda", "scl"):
        if k in imu:
            roles.append(("imu." + k, imu[k]))
    if "adc" in (cfg.get("battery") or {}):
        roles.append(("battery.adc", cfg["battery"]["adc"]))
    if "estop" in cfg:
        roles.append(("estop.pin", cfg["estop"]["pin"]))
    return roles


def _pin_key(pin):
    # pin names are compared as a port spells them case-insensitively ("x1" is the pyboard's X1)
    return pin.upper() if isinstance(pin, str) else pin


def _check_pin_roles(cfg):
    """Every pin has one role: an e-stop input that is also a motor output cannot be trusted, two motors on one
    PWM pin drive both from one duty. ValueError naming both roles."""
    seen = {}
    for role, pin in _pin_roles(cfg):
        key = _pin_key(pin)
        if key in seen:
            raise ValueError("board config: %s and %s are both pin %s: every pin has one role (give one of them "
                             "another pin)" % (seen[key], role, _show(pin)))
        seen[key] = role


def _unknown(d, known, where):
    for k in d:
        if k not in known:
            raise ValueError("board config: unknown key %s%s (known: %s)" % (where, _show(k), ", ".join(known)))


def _wheel(p, side, driver, backend):
    where = "pins.%s" % side
    if not isinstance(p, dict):
        raise _bad(where, p, "an object with the %s wheel's pins" % side)
    _unknown(p, _WHEEL_KEYS, where + ".")
    out = {}
    need = ("pwm", "dir") if driver == "pwm_dir" else ("in1", "in2")
    for k in need + ("enc_a", "enc_b"):
        if k not in p:
            raise ValueError("board config: %s.%s is missing (driver %s needs %s, enc_a, enc_b)"
                             % (where, k, driver, ", ".join(need)))
        out[k] = _pin(p[k], where + "." + k, backend)
    if "enable" in p:
        out["enable"] = _pin(p["enable"], where + ".enable", backend)
    if backend == "rp2" and out["enc_b"] != out["enc_a"] + 1:
        # the PIO program samples both channels with one `in pins, 2`: they must be adjacent GPIOs, A first
        raise _bad(where + ".enc_b", out["enc_b"], "enc_a + 1 = %d: rp2 PIO reads A and B as two adjacent GPIOs"
                   % (out["enc_a"] + 1))
    if backend == "stm32":
        # pyboard: encoder mode needs the timer whose CH1/CH2 the encoder pins are on; PWM a timer channel
        out["enc_timer"] = _int(p, "enc_timer", 1, 14, label=where + ".enc_timer")
        out["pwm_timer"] = _int(p, "pwm_timer", 1, 14, label=where + ".pwm_timer")
        out["pwm_channel"] = _int(p, "pwm_channel", 1, 4, label=where + ".pwm_channel")
        if driver == "in1_in2":
            out["in2_channel"] = _int(p, "in2_channel", 1, 4, label=where + ".in2_channel")
    if backend == "esp32" and "pcnt_unit" in p:
        out["pcnt_unit"] = _int(p, "pcnt_unit", 0, 7, label=where + ".pcnt_unit")
    return out


def _link(d, backend):
    if "link" not in d:
        return {"type": "usb"}
    v = d["link"]
    if not isinstance(v, dict):
        raise _bad("link", v, 'an object like {"type": "usb"} or {"type": "uart", "uart_id": 0, ...}')
    _unknown(v, _LINK_KEYS, "link.")
    out = {"type": _choice(v, "type", LINK_TYPES, "usb", "link.type")}
    if out["type"] == "uart":
        out["uart_id"] = _int(v, "uart_id", 0, 9, label="link.uart_id")
        out["baud"] = _int(v, "baud", 9600, 4000000, 115200, "link.baud")
        for k in ("tx", "rx"):
            if k in v:
                out[k] = _pin(v[k], "link." + k, backend)
            elif backend == "circuitpython":
                raise ValueError("board config: link.%s is missing (CircuitPython's busio.UART needs tx and rx)" % k)
    return out


def _axes(v):
    """["x", "-y", "z"]-style axis map -> ([part axis index per board axis], [sign per board axis])."""
    ok = isinstance(v, list) and len(v) == 3 and all(isinstance(a, str) for a in v)
    if ok:
        idx = []
        sign = []
        for a in v:
            neg = a.startswith("-")
            name = a[1:] if neg or a.startswith("+") else a
            if name not in _AXIS_NAMES:
                ok = False
                break
            idx.append(_AXIS_NAMES.index(name))
            sign.append(-1 if neg else 1)
        if ok and sorted(idx) == [0, 1, 2]:
            return idx, sign
    raise _bad("imu.axes", v, 'the part\'s axis on each board axis x, y, z, e.g. ["x", "y", "z"] or ["-y", "x", "z"]'
               ' (each part axis once; board axes REP-103: x forward, y left, z up)')


def _section(d, key, keys, example):
    """The board config's object d[key], its keys checked against keys."""
    v = d[key]
    if not isinstance(v, dict):
        raise _bad(key, v, "an object like %s" % example)
    _unknown(v, keys, key + ".")
    return v


def _imu(d, backend):
    v = _section(d, "imu", _IMU_KEYS, '{"part": "mpu6050", "i2c": 0, "sda": 4, "scl": 5}')
    part = _choice(v, "part", IMU_PARTS, label="imu.part")
    out = {"part": part}
    if backend != "sim":
        out["i2c"] = _int(v, "i2c", 0, 9, label="imu.i2c")
        for k in ("sda", "scl"):
            if k not in v:
                raise ValueError("board config: imu.%s is missing (the I2C bus pins)" % k)
            out[k] = _pin(v[k], "imu." + k, backend)
    out["freq"] = _int(v, "freq", 10000, 1000000, 400000, "imu.freq")
    addrs = _IMU_ADDRESSES[part]
    out["address"] = _int(v, "address", 0, 127, addrs[0], "imu.address")
    if out["address"] not in addrs:
        raise _bad("imu.address", out["address"], "%s answers at %s" % (part, " or ".join(str(a) for a in addrs)))
    out["map"], out["sign"] = _axes(v.get("axes", ["x", "y", "z"]))
    out["gyro_fs_dps"] = _choice(v, "gyro_fs_dps", _GYRO_FS, 500, "imu.gyro_fs_dps")
    out["accel_fs_g"] = _choice(v, "accel_fs_g", _ACCEL_FS, 4, "imu.accel_fs_g")
    out["rate_hz"] = _int(v, "rate_hz", 100, 200, 100, "imu.rate_hz")
    return out


def _number(v, label, lo, hi):
    if (not isinstance(v, (int, float))) or isinstance(v, bool) or not lo <= v <= hi:
        raise _bad(label, v, "a number %s..%s" % (lo, hi))
    return float(v)


def _battery(d, backend):
    v = _section(d, "battery", _BATTERY_KEYS, '{"adc": 26, "divider": 3.0}')
    out = {}
    if backend != "sim":
        if "adc" not in v:
            raise ValueError("board config: battery.adc is missing (the ADC pin of the divider's midpoint)")
        out["adc"] = _pin(v["adc"], "battery.adc", backend)
        if backend == "rp2" and out["adc"] not in (26, 27, 28, 29):
            raise _bad("battery.adc", out["adc"], "an ADC pin: GPIO 26..29 on rp2")
    if "divider" not in v:
        raise ValueError("board config: battery.divider is missing (battery volts per ADC pin volt, e.g. 3.0 for "
                         "20k over 10k)")
    out["divider"] = _number(v["divider"], "battery.divider", 1.0, 100.0)
    out["vref"] = _number(v.get("vref", 3.3), "battery.vref", 1.0, 5.5)
    return out


def _estop(d, backend):
    v = _section(d, "estop", _ESTOP_KEYS, '{"pin": 14, "closed": 0, "pull": "up"}')
    out = {}
    if "pin" not in v:
        raise ValueError("board config: estop.pin is missing (the normally-closed stop circuit's input)")
    pin = v["pin"]
    if backend in ("rp2", "sim"):
        # rp2: the period reads it from SIO GPIO_IN (bank 0, GPIO 0..29); the sim's inputs word has 30 bits too
        if not _is_int(pin) or not 0 <= pin <= 29:
            raise _bad("estop.pin", pin, "a GPIO number 0..29 on %s" % backend)
        out["pin"] = pin
    else:
        out["pin"] = _pin(pin, "estop.pin", backend)
    out["closed"] = _int(v, "closed", 0, 1, 0, "estop.closed")
    out["pull"] = _choice(v, "pull", ("up", "down", "none"), "up" if out["closed"] == 0 else "down", "estop.pull")
    return out


def validate(d):
    """A validated copy of the config dict d with every default filled in; ValueError naming the bad key."""
    if not isinstance(d, dict):
        raise ValueError("board config: the file must hold one JSON object, not %s" % type(d).__name__)
    _unknown(d, _TOP_KEYS, "")
    backend = _choice(d, "backend", BACKENDS)
    cfg = {"backend": backend}
    name = d.get("name", "viperdrive")
    if not isinstance(name, str) or not 0 < len(name) <= 20:
        raise _bad("name", name, "a string of 1..20 characters (sent in HELLO's INFO)")
    cfg["name"] = name
    cfg["control_hz"] = _int(d, "control_hz", 100, 1000, 500)
    cfg["counts_per_rev"] = _int(d, "counts_per_rev", 4, 10000000)
    bits = _COUNTER_BITS[backend]
    if "counter_bits" in d and (not _is_int(d["counter_bits"]) or d["counter_bits"] not in bits):
        raise _bad("counter_bits", d["counter_bits"], "%s for backend %s" % (" or ".join(str(b) for b in bits),
                                                                              backend))
    cfg["counter_bits"] = d.get("counter_bits", bits[0])
    cfg["driver"] = _choice(d, "driver", DRIVERS, "pwm_dir")
    cfg["pwm_freq"] = _int(d, "pwm_freq", 100, 100000, 20000)
    cfg["motor_sign"] = _signs(d, "motor_sign")
    cfg["encoder_sign"] = _signs(d, "encoder_sign")
    cfg["watchdog_ms"] = _int(d, "watchdog_ms", 50, _WATCHDOG_MAX[backend], 500)
    cfg["control_timer"] = _int(d, "control_timer", -1, 14, _TIMER_DEFAULT[backend])
    if "pins" in d:
        pins = d["pins"]
        if not isinstance(pins, dict):
            raise _bad("pins", pins, 'an object {"left": {...}, "right": {...}}')
        _unknown(pins, ("left", "right"), "pins.")
        cfg["pins"] = {}
        for side in ("left", "right"):
            if side not in pins:
                raise ValueError("board config: pins.%s is missing" % side)
            cfg["pins"][side] = _wheel(pins[side], side, cfg["driver"], backend)
    elif backend != "sim":
        raise ValueError("board config: pins is missing (backend %s drives real pins)" % backend)
    cfg["link"] = _link(d, backend)
    if "repl_pin" in d:
        cfg["repl_pin"] = _pin(d["repl_pin"], "repl_pin", backend)
        cfg["repl_pull"] = _choice(d, "repl_pull", ("up", "down"), "up")
    for k in ("imu", "battery"):
        if k in d and backend == "circuitpython":
            raise ValueError("board config: %s is not supported on backend circuitpython yet (its hal has no I2C "
                             "bus or ADC reading for the sensor task)" % k)
    if "imu" in d:
        cfg["imu"] = _imu(d, backend)
    if "battery" in d:
        cfg["battery"] = _battery(d, backend)
    if "estop" in d:
        if backend == "circuitpython":
            # its control loop is run from the slow loop (no timer IRQ): no period to check the input in
            raise ValueError("board config: estop is not supported on backend circuitpython (no control timer)")
        cfg["estop"] = _estop(d, backend)
    if backend == "rp2":
        cfg["pio"] = _int(d, "pio", 0, 2, 0)
    if backend == "esp32":
        cfg["encoder"] = _choice(d, "encoder", ("auto", "pcnt", "irq"), "auto")
    _check_pin_roles(cfg)
    if backend == "sim":
        sim = d.get("sim", {})
        if not isinstance(sim, dict):
            raise _bad("sim", sim, "an object (options of the virtual board)")
        cfg["sim"] = sim
    for k in ("pio", "encoder", "sim"):
        if k in d and k not in cfg:
            raise ValueError("board config: %s is only meaningful for backend %s, not %s"
                             % (k, {"pio": "rp2", "encoder": "esp32", "sim": "sim"}[k], backend))
    return cfg


def load(path="board.json"):
    """The validated config from the JSON file at path; ValueError naming the file or the bad key."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ValueError("board config: cannot read %s (%s)" % (path, e)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeError:
        # a text-mode read would raise a UnicodeError without a message on MicroPython
        raise ValueError("board config: %s is not a JSON file (not UTF-8 text)" % path) from None
    try:
        d = json.loads(text)
    except ValueError as e:
        raise ValueError("board config: %s is not valid JSON (%s)" % (path, e)) from None
    return validate(d)
