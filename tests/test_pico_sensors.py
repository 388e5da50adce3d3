# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The board's sensors on the emulated Pico (sim/pico/sensors.mjs, docs/pico-rig.md "Sensors"), met by stock
MicroPython rp2 on the emulated RP2040 through mpremote's raw REPL: machine.I2C against the MPU-6050 and LSM6DS3
register models, machine.ADC against the battery divider, machine.Pin against the e-stop contact. No firmware
drivers: a blank flash, the REPL, and what a robot builder would type to check the wiring."""
from __future__ import annotations

import ast
import json
import math
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.pico

MPU, LSM = 0x68, 0x6A
SDA, SCL, ADC_PIN, ESTOP_PIN = 16, 17, 26, 22        # the rig's default wiring (docs/pico-rig.md)
RIG = Path(__file__).resolve().parent.parent / "sim" / "pico"
NODE_OK = (RIG / "node_modules" / "rp2040js").is_dir()
DIVIDER = 133 / 33
LSB_V = 3.3 / 4096 * DIVIDER                          # one ADC code at the battery


@pytest.fixture(scope="module")
def chip():
    """(rig, raw-REPL transport) on one blank emulated Pico for the module."""
    from mpremote.transport_serial import SerialTransport

    from viperdrive.rigs.pico import PicoRig, require_images_or_skip
    require_images_or_skip(pytest.skip)
    with PicoRig(seed=7) as rig:
        rig.clock.sleep(1.0)                          # MicroPython boots and formats its filesystem
        t = SerialTransport(rig.url, baudrate=115200)
        try:
            t.enter_raw_repl(soft_reset=False, timeout_overall=120)
            run(t, "import machine, struct, time\n"
                   f"i2c = machine.I2C(0, sda=machine.Pin({SDA}), scl=machine.Pin({SCL}), freq=400000)\n"
                   f"adc = machine.ADC({ADC_PIN})\n"
                   "def rd(a, r, n):\n    return i2c.readfrom_mem(a, r, n)\n"
                   "def wr(a, r, v):\n    i2c.writeto_mem(a, r, bytes([v]))\n")
            yield rig, t
        finally:
            try:
                t.exit_raw_repl()
            finally:
                t.close()


def run(t, code: str) -> str:
    out, err = t.exec_raw(code, timeout=120)
    assert not err, err.decode()
    return out.decode().strip()


def ev(t, expr: str):
    return ast.literal_eval(run(t, f"print(repr({expr}))"))


def test_both_imus_answer_who_am_i_and_an_empty_address_is_a_nack(chip):
    rig, t = chip
    assert ev(t, f"rd({MPU:#x}, 0x75, 1)[0]") == 0x68            # MPU-6050 WHO_AM_I
    assert ev(t, f"rd({LSM:#x}, 0x0F, 1)[0]") == 0x69            # LSM6DS3 WHO_AM_I
    # nobody at 0x50: the address byte is not acknowledged, OSError EIO as on a real Pico (not a timeout)
    assert run(t, "try:\n    rd(0x50, 0, 1)\nexcept OSError as e:\n    print(e.errno)") == "5"
    # the other I2C block on its own pins has nothing wired to it
    assert run(t, "b = machine.I2C(1, sda=machine.Pin(18), scl=machine.Pin(19))\n"
                  "try:\n    b.readfrom_mem(0x68, 0x75, 1)\nexcept OSError as e:\n    print(e.errno)") == "5"
    # I2C.scan() (zero-length writes, which the rp2 port bit-bangs on the pins) and SoftI2C meet the same parts on
    # the wires; the hardware block takes the pins back afterwards
    assert ev(t, "i2c.scan()") == [MPU, LSM]
    assert run(t, f"s = machine.SoftI2C(sda=machine.Pin({SDA}), scl=machine.Pin({SCL}), freq=100000)\n"
                  "print(s.scan(), s.readfrom_mem(0x68, 0x75, 1), s.readfrom_mem(0x6A, 0x0F, 2))\n"
                  f"i2c = machine.I2C(0, sda=machine.Pin({SDA}), scl=machine.Pin({SCL}), freq=400000)") \
        == "[104, 106] b'h' b'i\\x00'"
    assert ev(t, f"rd({MPU:#x}, 0x75, 1)[0]") == 0x68
    # every byte costs its bus time: a 14-byte burst read at 400 kHz is ~150 SCL periods (> 370 us of chip time)
    us = ev(t, "(lambda t0: (rd(0x68, 0x3B, 14), time.ticks_diff(time.ticks_us(), t0))[1])(time.ticks_us())")
    print(f"14-byte read at 400 kHz: {us} chip us")
    assert 370 <= us < 2000


def test_mpu6050_sleeps_after_reset_then_scales_big_endian(chip):
    rig, t = chip
    run(t, f"wr({MPU:#x}, 0x6B, 0x80)")                          # DEVICE_RESET
    assert ev(t, f"rd({MPU:#x}, 0x6B, 1)[0]") == 0x40            # PWR_MGMT_1: SLEEP after reset
    assert ev(t, f"rd({MPU:#x}, 0x3B, 14)") == b"\x00" * 14      # asleep: no samples yet
    run(t, f"wr({MPU:#x}, 0x6B, 0x01)\nwr({MPU:#x}, 0x1A, 0x03)\ntime.sleep_ms(5)")   # wake, PLL; DLPF 42 Hz
    raw = ev(t, f"rd({MPU:#x}, 0x3B, 14)")
    ax, ay, az, temp, gx, gy, gz = ev(t, f"struct.unpack('>7h', {raw!r})")
    assert abs(az - 16384) < 150 and abs(ax) < 150 and abs(ay) < 150      # 1 g on z at +-2 g: 16384 LSB/g
    assert abs(temp / 340 + 36.53 - 25.0) < 0.1                            # the die at 25 degC
    # big-endian: the high byte at the lower address (the same word read one byte at a time)
    assert raw[4] == (az >> 8) & 0xFF and raw[5] == az & 0xFF
    run(t, f"wr({MPU:#x}, 0x1C, 0x10)\nwr({MPU:#x}, 0x1B, 0x18)\ntime.sleep_ms(3)")  # +-8 g, +-2000 deg/s
    az8 = ev(t, f"struct.unpack('>h', rd({MPU:#x}, 0x3F, 2))[0]")
    assert abs(az8 - 4096) < 40                                            # 4096 LSB/g at +-8 g
    bias = rig.truth()["imu"][0]["gyro_bias_rad_s"][2]
    gz16 = ev(t, f"struct.unpack('>h', rd({MPU:#x}, 0x47, 2))[0]")
    assert abs(gz16 / 16.4 * math.pi / 180 - bias) < 0.01                  # at rest: the bias (16.4 LSB/(deg/s))


def test_lsm6ds3_power_down_full_scale_and_byte_order(chip):
    rig, t = chip
    run(t, f"wr({LSM:#x}, 0x12, 0x01)")                          # SW_RESET
    assert ev(t, f"rd({LSM:#x}, 0x12, 1)[0]") == 0x04            # CTRL3_C: IF_INC after reset
    assert ev(t, f"rd({LSM:#x}, 0x22, 12)") == b"\x00" * 12      # power-down (ODR 0): no output
    run(t, f"wr({LSM:#x}, 0x10, 0x40)\nwr({LSM:#x}, 0x11, 0x40)\ntime.sleep_ms(20)")  # 104 Hz, +-2 g, 245 dps
    raw = ev(t, f"rd({LSM:#x}, 0x22, 12)")
    gx, gy, gz, ax, ay, az = ev(t, f"struct.unpack('<6h', {raw!r})")
    assert abs(az * 0.061e-3 - 1.0) < 0.01 and abs(ax) < 200               # 0.061 mg/LSB at +-2 g
    assert raw[10] == az & 0xFF and raw[11] == (az >> 8) & 0xFF           # little-endian: low byte first
    assert ev(t, f"rd({LSM:#x}, 0x1E, 1)[0]") & 0x03 == 0x03               # STATUS_REG: XLDA, GDA
    run(t, f"wr({LSM:#x}, 0x10, 0x4C)\nwr({LSM:#x}, 0x12, 0x06)\ntime.sleep_ms(20)")  # +-8 g; BLE: high first
    az8 = ev(t, f"struct.unpack('>h', rd({LSM:#x}, 0x2C, 2))[0]")
    assert abs(az8 * 0.244e-3 - 1.0) < 0.01                                # 0.244 mg/LSB at +-8 g
    # without IF_INC the pointer stays: two bytes of the same register
    run(t, f"wr({LSM:#x}, 0x12, 0x00)")
    b = ev(t, f"rd({LSM:#x}, 0x0F, 2)")
    assert b == b"\x69\x69"
    run(t, f"wr({LSM:#x}, 0x12, 0x04)")


def _gyro_z(t) -> tuple[float, float]:
    """(MPU-6050, LSM6DS3) gyro z in rad/s, both at +-2000 deg/s."""
    mpu = ev(t, f"struct.unpack('>h', rd({MPU:#x}, 0x47, 2))[0]") / 16.4
    lsm = ev(t, f"struct.unpack('<h', rd({LSM:#x}, 0x26, 2))[0]") * 0.070
    return mpu * math.pi / 180, lsm * math.pi / 180


def test_gyro_z_follows_the_plant_turning(chip):
    rig, t = chip
    run(t, f"wr({MPU:#x}, 0x6B, 0x01)\nwr({MPU:#x}, 0x1B, 0x18)\nwr({MPU:#x}, 0x1A, 0x03)\n"
           f"wr({LSM:#x}, 0x12, 0x04)\nwr({LSM:#x}, 0x11, 0x5C)\ntime.sleep_ms(20)")      # 2000 dps; LSM 208 Hz
    truth = rig.truth()
    bias = [d["gyro_bias_rad_s"][2] for d in truth["imu"]]
    still = _gyro_z(t)
    assert abs(truth["omega"]) < 1e-6
    for g, b in zip(still, bias, strict=True):
        assert abs(g - b) < 0.01, (still, bias)
    # turn the robot on the spot, counter-clockwise (REP-103: +z): opposite torques on the wheels
    rig.push("left", -0.3)
    rig.push("right", 0.3)
    try:
        rig.clock.sleep(1.0)
        w0 = rig.truth()["omega"]
        turning = _gyro_z(t)
        w1 = rig.truth()["omega"]
    finally:
        rig.push("both", 0.0)
    print(f"turning: true yaw rate {w0:.3f}..{w1:.3f} rad/s, gyro z MPU-6050 {turning[0]:.3f}, "
          f"LSM6DS3 {turning[1]:.3f} rad/s (biases {bias[0]:.4f}, {bias[1]:.4f})")
    assert w0 > 0.5 and abs(w1 - w0) < 0.05 * w0
    for g, b in zip(turning, bias, strict=True):
        # scale error +1 %, the bias, noise of a few mdeg/s and the speed's change between the reads
        assert abs(g - (w0 * 1.01 + b)) < 0.03 * w0 + 0.01, (turning, w0, bias)


def _volts(t, n=8) -> float:
    code = ev(t, f"sum(adc.read_u16() >> 4 for _ in range({n}))") / n
    return code * 3.3 / 4096 * DIVIDER


def _code_at_sample(rig, t) -> tuple[int, float]:
    """One conversion at the REPL: (its 12-bit code, the terminal volts the rig's ADC sampled for it)."""
    code = ev(t, "adc.read_u16() >> 4")
    return code, rig.truth()["battery_adc_sampled_v"]


def test_battery_on_the_adc_through_the_divider_sags_with_motor_current(chip):
    rig, t = chip
    rig.fault("battery", volts=7.0)
    tr = rig.truth()
    v = _volts(t)
    assert tr["battery_current_a"] < 0.1                                  # the board alone
    assert abs(v - tr["battery_terminal_v"]) <= LSB_V                     # within one code of the divider
    # the left bridge full on (MDD10: PWM GP6, DIR GP7): the motor's current drops the pack's voltage
    run(t, "d = machine.Pin(7, machine.Pin.OUT, value=1)\np = machine.PWM(machine.Pin(6), freq=20000)\n"
           "p.duty_u16(65535)")
    try:
        rig.clock.sleep(0.5)
        a = rig.truth()
        run_v = _volts(t)
        # the driven motor's current moves with the plant's torque noise, so the voltage at each conversion is its
        # own: each code is floor(V / divider / 3.3 V * 4096) of the volts at that conversion's sampling instant
        pairs = [_code_at_sample(rig, t) for _ in range(6)]
    finally:
        run(t, "p.duty_u16(0)\np.deinit()")
        rig.fault("battery", volts=7.4)
    print(f"battery 7.0 V: at rest {v:.3f} V; left motor full on: {run_v:.3f} V "
          f"(truth {a['battery_terminal_v']:.4f} V, {a['battery_current_a']:.2f} A); codes and sampled volts {pairs}")
    assert a["battery_current_a"] > 0.2 and run_v < v - 2 * LSB_V
    for code, volts in pairs:
        assert volts < v - 2 * LSB_V
        assert code == math.floor(volts / DIVIDER / 3.3 * 4096), (code, volts)


def test_estop_contact_closed_to_ground_opens_to_the_pull_up(chip):
    rig, t = chip
    run(t, f"es = machine.Pin({ESTOP_PIN}, machine.Pin.IN, machine.Pin.PULL_UP)")
    assert ev(t, "es.value()") == 0                                       # closed: the contact holds it low
    rig.fault("estop", open=True)
    try:
        assert rig.truth()["estop_open"] is True
        assert ev(t, "es.value()") == 1                                   # open: the pull-up
    finally:
        rig.fault("estop", open=False)
    assert ev(t, "es.value()") == 0


def test_an_imu_that_stops_answering_is_a_nack_until_it_is_back(chip):
    rig, t = chip
    rig.fault("imu", answer=False)
    try:
        assert run(t, f"try:\n    rd({MPU:#x}, 0x75, 1)\nexcept OSError as e:\n    print(e.errno)") == "5"
    finally:
        rig.fault("imu", answer=True)
    assert ev(t, f"rd({MPU:#x}, 0x75, 1)[0]") == 0x68


# ---- without a chip: the rig's wiring checks and the mounting ----

def _node(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["node", "--input-type=module", "-e", script, *args], capture_output=True, text=True,
                          cwd=RIG, timeout=60)


@pytest.mark.skipif(not NODE_OK, reason="rp2040js not installed (make setup)")
def test_a_sensor_on_a_pin_the_board_config_uses_is_refused_at_start():
    from viperdrive.rigs.pico import images_dir
    r = subprocess.run(["node", str(RIG / "rig.mjs"), "--images", str(images_dir()),
                        "--i2c", "0:4:5"], capture_output=True, text=True, timeout=60)
    if "missing image" in r.stderr:
        pytest.skip(r.stderr.strip())
    # GP4/GP5 carry the right encoder in mcu/boards/pico.json
    assert r.returncode == 2, r.stderr
    assert "i2c sda on GP4, which the board config uses for right.enc_a" in r.stderr and " at " not in r.stderr
    r = subprocess.run(["node", str(RIG / "rig.mjs"), "--images", str(images_dir()),
                        "--i2c", "0:17:16"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "GP17 is not an SDA pin of I2C0" in r.stderr, r.stderr


@pytest.mark.skipif(not NODE_OK, reason="rp2040js not installed (make setup)")
def test_the_mounting_maps_body_axes_to_part_axes_as_the_board_config_reads_them():
    """The robot file's imu.axes, read by both plants alike: board axis i is sign[i] x part axis map[i]."""
    import sys
    sys.path.insert(0, str(RIG.parent))
    import plant as pyplant
    r = _node("import { mount } from './plant.mjs';\n"
              "const [map, sign] = mount(['-y', 'x', 'z']);\n"
              "const part = (v) => { const p = [0, 0, 0]; for (let i = 0; i < 3; i++) p[map[i]] = sign[i] * v[i]; "
              "return p; };\n"
              "console.log(JSON.stringify([map, sign, part([1, 0, 0]), part([0, 1, 0]), part([0, 0, 1])]));\n"
              "try { mount(['x', 'x', 'z']); } catch (e) { console.log(e.message); }")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    js_map, js_sign, fwd, left, up = json.loads(lines[0])
    # board x = -part y: a forward motion is -y on the part; board y = part x
    assert (fwd, left, up) == ([0, -1, 0], [1, 0, 0], [0, 0, 1])
    assert [js_map, js_sign] == [list(x) for x in pyplant._mount(["-y", "x", "z"])]
    with pytest.raises(pyplant.DescriptionError) as e:
        pyplant._mount(["x", "x", "z"])
    # the same words (the value is printed as each language prints a list)
    assert lines[1].split(", got ")[0] == str(e.value).split(", got ")[0], (lines[1], str(e.value))
