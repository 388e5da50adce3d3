# The encoder plausibility check of the control step (FAULT_ENCODER_LEFT/RIGHT), closed loop on the virtual board's
# physical model (sim/plant.py, the default robot) in simulated time: the viper Controller (through the hal test
# double) and the float reference FloatLaw, each driving its own plant. A half-dead encoder trips it; no normal
# drive, ramp, push, slip, turn, low battery or stall does (docs/firmware.md, "Encoder plausibility").
import math
import sys

import control
import control_float
import fakehal
from shared import params, protocol

_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import plant  # noqa: E402

HZ = 500
DT = 1.0 / HZ
R = 0.0325                      # the default robot's wheel radius, m
HOST_EVERY = 5                  # periods between SET_VELs (a 100 Hz host)


def _robot():
    return plant.load_description(_root + "/sim/robots/default.json")


class Viper:
    def __init__(self, p, vals):
        cfg = {"control_hz": HZ, "counts_per_rev": p.cpr, "motor_sign": [1, 1], "encoder_sign": [1, 1]}
        self.hal = fakehal.Board(cfg, counter_bits=p.counter_bits)
        self.c = control.Controller(self.hal, cfg, vals)
        self.c.start()
        self.plant = p
        self.buf = [0, 0]
        self.c.enable(True)

    def period(self, cmd):
        if cmd is not None:
            self.c.set_velocity(int(cmd[0]), int(cmd[1]))
        p = self.plant
        p.energized = self.c.enabled()
        p.step(DT, self.hal.duty[0], self.hal.duty[1])
        p.counts(self.buf)
        self.hal.counts[0] = self.buf[0]
        self.hal.counts[1] = self.buf[1]
        self.hal.fire(1)
        return self.c.fault()

    def energized(self):
        return self.hal.energized


class Float:
    def __init__(self, p, vals):
        self.law = control_float.FloatLaw(HZ, p.cpr, p.counter_bits)
        self.law.configure(vals)
        self.plant = p
        self.buf = [0, 0]
        p.counts(self.buf)
        self.law.enable([self.buf[0], self.buf[1]])
        self.duty = (0.0, 0.0)

    def period(self, cmd):
        if cmd is not None:
            self.law.set_velocity(cmd[0], cmd[1])
        p = self.plant
        p.energized = self.law.enabled
        p.step(DT, self.duty[0], self.duty[1])
        p.counts(self.buf)
        self.duty = self.law.step([self.buf[0], self.buf[1]])
        return self.law.fault

    def energized(self):
        return self.law.enabled


def drive(kind, seconds, cmd, setup=None, events=(), **over):
    """Run one scenario: cmd(t) -> (left, right) wheel rad/s; events: (t, fn(plant)). -> (fault, t_fault s,
    peak true/commanded speed ratio of a wheel while it was driven, plant)."""
    d = _robot()
    d["noise"] = {"seed": 7, "torque_std_nm": 0.004}
    p = plant.Plant(d)
    vals = params.defaults()
    vals.update(over)
    if setup is not None:
        setup(p)
    law = kind(p, vals)
    per_rad = p.cpr / (2 * math.pi)
    peak = 0.0
    todo = list(events)
    for i in range(int(seconds * HZ)):
        t = i * DT
        while todo and todo[0][0] <= t:
            todo.pop(0)[1](p)
        c = None
        cl, cr = cmd(t)
        if i % HOST_EVERY == 0:
            c = (cl * per_rad, cr * per_rad)
        f = law.period(c)
        if f:
            p.energized = law.energized()      # what the bridges get from the next period on
            return f, t, peak, p
        # true / commanded speed of each wheel, once the board's ramp has reached the command
        for cw, tw in ((cl, p.w_l), (cr, p.w_r)):
            if abs(cw) > 1.0 and t > abs(cw) / vals["max_accel"]:
                peak = max(peak, tw / cw)
    return 0, None, peak, p


def straight(v):
    return lambda t: (v / R, v / R)


def reverse(t):
    return (0.5 / R, 0.5 / R) if t < 1.5 else (-0.5 / R, -0.5 / R)


def zigzag(t):
    return (-16.0, 16.0) if int(t / 0.4) % 2 else (16.0, -16.0)


def turn(t):
    return ((0.4 - 3.0 * 0.076) / R, (0.4 + 3.0 * 0.076) / R)


def _push(wheel, torque, seconds):
    return lambda p: p.push(wheel, torque, seconds)


def _battery(volts):
    return lambda p: p.set_battery(volts)


def _drop(wheel, rate):
    return lambda p: p.set_encoder_drop_wheel(wheel, rate)


# (name, seconds, command, setup, events, parameter overrides): none of these may latch a fault (except the
# stall, which must latch the stall fault, not the encoder one)
NORMAL = (
    ("straight 0.05 m/s", 2.0, straight(0.05), None, (), {}),
    ("straight 0.3 m/s", 2.0, straight(0.3), None, (), {}),
    ("straight 0.6 m/s (above the top speed: saturated)", 2.0, straight(0.6), None, (), {}),
    ("forward 0.5 then reverse at the ramp", 3.5, reverse, None, (), {}),
    ("forward 0.5 then reverse, max_accel 5000 (slip)", 3.5, reverse, None, (), {"max_accel": 5000.0}),
    ("spin in place, wheels swapped every 0.4 s, max_accel 5000 (slip)", 3.0, zigzag, None, (), {"max_accel": 5000.0}),
    ("fast turn v 0.4 w 3", 2.0, turn, None, (), {}),
    ("battery 6.2 V (2S nearly flat) at 0.3 m/s", 2.0, straight(0.3), _battery(6.2), (), {}),
    ("battery 6.2 V at 0.6 m/s", 2.0, straight(0.6), _battery(6.2), (), {}),
    ("battery 8.4 V (full) at 0.5 m/s", 2.0, straight(0.5), _battery(8.4), (), {}),
    ("a hand brakes the left wheel, 0.3 N m for 0.4 s", 2.5, straight(0.2), None,
     ((1.0, _push("left", -0.3, 0.4)),), {}),
    ("a hand brakes both wheels, 0.5 N m for 0.4 s", 2.5, straight(0.2), None,
     ((1.0, _push("both", -0.5, 0.4)),), {}),
    ("a hand pushes the right wheel forward, 0.3 N m for 1 s", 2.5, straight(0.2), None,
     ((1.0, _push("right", 0.3, 1.0)),), {}),
    ("a steady 0.1 N m drag on the left wheel (3x what the ground can put on it)", 2.5, straight(0.3), None,
     ((0.5, _push("left", -0.1, None)),), {}),
)


def test_no_normal_scenario_trips_it():
    for name, sec, cmd, setup, ev, over in NORMAL:
        for kind in (Viper, Float):
            code, t, peak, p = drive(kind, sec, cmd, setup, ev, **over)
            assert code == 0, "%s (%s): fault %d (%s) at %.3f s" % (name, kind.__name__, code,
                                                                   protocol.FAULT_NAMES.get(code), t)
        print("ok: %s" % name)


def test_stall_against_a_wall_is_a_stall_not_an_encoder_fault():
    for kind in (Viper, Float):
        code, t, _, _ = drive(kind, 2.0, lambda t: (10.0, 10.0), lambda p: p.set_stall("both", True))
        print("%s: blocked wheels at 10 rad/s: fault %d after %.3f s" % (kind.__name__, code, t))
        assert code in (protocol.FAULT_STALL_LEFT, protocol.FAULT_STALL_RIGHT), code


def test_half_dead_encoder_trips_it():
    # the case: every second count lost at 0.3 m/s; before the check the true speed settled at 1.84x the
    # command (the top speed of the motors) for as long as it ran
    results = {}
    for kind in (Viper, Float):
        code, t, peak, p = drive(kind, 3.0, straight(0.3), _drop("both", 0.5))
        print("%s: encoder_drop 0.5 at 0.3 m/s: fault %d (%s) %.3f s after the command, true speed at most "
              "%.2fx the command before it" % (kind.__name__, code, protocol.FAULT_NAMES.get(code), t, peak))
        assert code in (protocol.FAULT_ENCODER_LEFT, protocol.FAULT_ENCODER_RIGHT), code
        assert t < 0.7 and not p.energized
        results[kind] = t
    # the two number formats latch within a few periods of each other
    assert abs(results[Viper] - results[Float]) <= 5 * DT, results


def test_each_wheel_reports_its_own_encoder():
    for wheel, want in (("left", protocol.FAULT_ENCODER_LEFT), ("right", protocol.FAULT_ENCODER_RIGHT)):
        for kind in (Viper, Float):
            code, t, peak, _ = drive(kind, 3.0, straight(0.2), _drop(wheel, 0.5))
            print("%s: %s encoder half dead at 0.2 m/s: fault %d after %.3f s (peak %.2fx)"
                  % (kind.__name__, wheel, code, t, peak))
            assert code == want, (wheel, code)


def test_range_of_drops_and_speeds():
    # what the check catches on the default robot with the default thresholds (enc_ratio 1.75, enc_margin 0.25):
    # a third of the counts lost or more, from 0.1 m/s up
    for rate, v in ((0.33, 0.3), (0.5, 0.1), (0.5, 0.5), (0.75, 0.3), (0.9, 0.3)):
        code, t, peak, _ = drive(Viper, 3.0, straight(v), _drop("both", rate))
        print("encoder_drop %.2f at %.2f m/s: fault %d after %s s, peak %.2fx"
              % (rate, v, code, "%.3f" % t if t else "-", peak))
        assert code in (protocol.FAULT_ENCODER_LEFT, protocol.FAULT_ENCODER_RIGHT), (rate, v, code)


def test_enc_ms_zero_turns_it_off_and_kv_zero_disables_it():
    for over in ({"enc_ms": 0}, {"kv": 0.0}):
        for kind in (Viper, Float):
            code, _, peak, _ = drive(kind, 2.0, straight(0.3), _drop("both", 0.5), **over)
            assert code == 0, (over, code)
    print("off with enc_ms 0 or kv 0: the half-dead encoder runs the wheels at %.2fx" % peak)
    assert peak > 1.7     # what the check is there for
