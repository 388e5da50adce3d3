# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The virtual board's physical model (sim/plant.py) on the MicroPython unix port: the numbers the robot
# description promises (deadband, top speed, traction limit), the encoder, the faults, reproducible noise.
import math
import sys

# this file is mcu/tests/mptest_plant.py; the model lives in the repo root's sim/
_root = __file__[:__file__.find("mcu/tests/")].rstrip("/") or "."
sys.path.insert(0, _root + "/sim")

import plant  # noqa: E402

DT = 0.002          # the firmware's default 500 Hz period
FULL = 32767


def _robot(**over):
    # the physics on the ideal robot (perfect kinematics); the default robot's imperfections are tested below
    d = plant.load_description(_root + "/sim/robots/ideal.json")
    for k, v in over.items():
        d[k] = v
    return d


def _plant(noise=True, **over):
    d = _robot(**over)
    if not noise:
        d["noise"] = {"seed": 1, "torque_std_nm": 0.0}
    p = plant.Plant(d)
    p.energized = True
    return p


def _run(p, duty_l, duty_r, seconds):
    for _ in range(int(seconds / DT + 0.5)):
        p.step(DT, duty_l, duty_r)


def test_deadband_is_about_15_percent_of_duty():
    # the lowest duty (1% steps) that moves the robot more than 1 mm in 1 s, from rest
    moving = None
    for pct in range(5, 30):
        p = _plant()
        _run(p, FULL * pct // 100, FULL * pct // 100, 1.0)
        if p.x > 0.001:
            moving = pct
            break
    print("deadband: first moving duty %d%%" % moving)
    assert moving is not None and 13 <= moving <= 18, moving
    # below it the wheels do not turn at all and the encoders stay still
    p = _plant()
    _run(p, FULL * 12 // 100, FULL * 12 // 100, 1.0)
    assert p.count_l == 0 and p.count_r == 0 and abs(p.x) < 1e-4


def test_top_speed_about_055_m_per_s():
    p = _plant()
    _run(p, FULL, FULL, 2.0)
    print("top speed %.3f m/s, wheel %.2f rad/s, predicted %.3f m/s" % (p.v, p.w_l, p.no_load_speed() * p.r))
    assert 0.50 < p.v < 0.60, p.v
    # rolling without slip at steady speed: rim speed equals ground speed
    assert abs(p.w_l * p.r - p.v) < 0.002 and abs(p.w_r * p.r - p.v) < 0.002
    # half duty: (0.5 - deadband) of the way: the motor is linear above the Coulomb friction
    p = _plant()
    _run(p, FULL // 2, FULL // 2, 2.0)
    expect = 0.55 * (0.5 - 0.15) / 0.85
    assert abs(p.v - expect) < 0.03, (p.v, expect)


def test_full_step_slips_at_the_traction_limit_and_encoders_count_it():
    p = _plant()
    v0 = p.v
    _run(p, FULL, FULL, 0.1)
    accel = (p.v - v0) / 0.1
    print("full-duty step: accel %.3f m/s^2 (limit %.3f), slip %.4f m" % (accel, p.traction_limit(), p.slip_distance))
    assert 1.45 < accel < 1.7, accel
    assert p.slip_l and p.slip_r
    # the encoders saw the spinning wheels: their distance runs ahead of the ground truth
    enc_dist = (p.count_l + p.count_r) / 2 / p.cpr * 2 * math.pi * p.r
    assert enc_dist > p.x + 0.005, (enc_dist, p.x)


def test_gentle_ramp_does_not_slip():
    # the firmware's default ramp (30 rad/s^2 at the wheel = ~1 m/s^2) stays under the traction limit: the duty
    # that follows such a ramp (deadband + speed share) never saturates the ground force
    p = _plant()
    for i in range(250):
        w = min(30.0 * (i * DT), 12.0)
        duty = (0.15 + 0.85 * w / p.no_load_speed()) + 0.03
        p.step(DT, int(FULL * duty), int(FULL * duty))
    print("ramp: slip %.5f m over %.3f m" % (p.slip_distance, p.x))
    assert p.slip_distance < 0.002 * max(p.x, 0.01), p.slip_distance
    enc_dist = (p.count_l + p.count_r) / 2 / p.cpr * 2 * math.pi * p.r
    assert abs(enc_dist - p.x) < 0.003, (enc_dist, p.x)


def test_opposite_duty_turns_counter_clockwise_in_place():
    # REP-103: the left wheel backwards and the right forwards is a positive (CCW) yaw, about the centre
    p = _plant()
    _run(p, -FULL // 2, FULL // 2, 1.0)
    print("spin: theta %.3f rad, x %.4f y %.4f" % (p.theta, p.x, p.y))
    assert p.theta > 0.5
    assert abs(p.x) < 0.01 and abs(p.y) < 0.01
    # kinematics of the truth: yaw rate = (rim_r - rim_l) / b while rolling
    assert abs(p.wz - (p.w_r * p.r - p.w_l * p.r) / p.b) < 0.05


def test_encoder_counts_wrap_at_counter_bits():
    p = _plant()
    assert p.counter_bits == 16
    buf = [0, 0]
    prev = 0
    total = 0
    for _ in range(int(8.0 / DT)):
        p.step(DT, FULL, FULL)
        p.counts(buf)
        assert 0 <= buf[0] < 65536 and 0 <= buf[1] < 65536
        d = (buf[0] - prev) & 0xFFFF
        if d >= 0x8000:
            d -= 0x10000
        total += d
        prev = buf[0]
    # 8 s at ~17 rad/s is ~88,000 counts: the 16-bit counter wrapped, the wrap-safe sum did not lose any
    assert p.count_l > 65536
    assert total == p.count_l
    assert abs(p.count_l - p.angle_l * p.cpr / (2 * math.pi)) <= 1


def test_encoder_drop_loses_that_share_of_counts():
    p = _plant()
    p.set_encoder_drop(0.25)
    _run(p, FULL, FULL, 2.0)
    true_counts = p.angle_l * p.cpr / (2 * math.pi)
    ratio = p.count_l / true_counts
    print("encoder_drop 0.25: counted %.3f of the true counts" % ratio)
    assert 0.72 < ratio < 0.78, ratio
    assert p.lost_counts > 0


def test_lift_spins_free_and_pose_stays():
    p = _plant()
    p.set_lift(True)
    _run(p, FULL, FULL, 1.0)
    assert p.x == 0.0 and p.y == 0.0 and p.theta == 0.0
    # no load: the wheel reaches the no-load speed much faster than the loaded robot (0.1 s vs ~0.35 s)
    q = _plant()
    q.set_lift(True)
    _run(q, FULL, FULL, 0.1)
    assert q.w_l > 0.9 * p.no_load_speed(), (q.w_l, p.no_load_speed())
    assert abs(p.w_l - p.no_load_speed()) < 0.3
    # put down spinning: the wheels slip until the body catches up, then roll
    p.set_lift(False)
    _run(p, FULL, FULL, 1.5)
    assert p.x > 0.3 and abs(p.w_l * p.r - p.v) < 0.002


def test_stall_blocks_the_wheel_and_the_robot_pivots():
    p = _plant()
    p.set_stall("left", True)
    _run(p, FULL, FULL, 1.0)
    assert p.w_l == 0.0 and p.count_l == 0
    # the right wheel drives around the blocked left one: a CCW turn
    assert p.theta > 0.3, p.theta
    # both blocked: the robot skids to a stop on its locked wheels and then stays put
    p.set_stall("both", True)
    _run(p, FULL, FULL, 0.5)
    x, y, th = p.x, p.y, p.theta
    _run(p, FULL, FULL, 0.5)
    assert abs(p.x - x) < 1e-4 and abs(p.y - y) < 1e-4 and abs(p.theta - th) < 1e-3 and p.w_r == 0.0


def test_battery_voltage_scales_speed():
    p = _plant()
    p.set_battery(3.7)
    _run(p, FULL, FULL, 2.0)
    full = 0.55
    # half the voltage: stall torque halves, so the Coulomb share doubles: (1 - 0.3) / 0.85 of half the speed
    expect = full * 0.5 * (1 - 0.30) / 0.85
    print("battery 3.7 V: %.3f m/s (expected %.3f)" % (p.v, expect))
    assert abs(p.v - expect) < 0.03, p.v


def test_push_turns_a_coasting_wheel_only_above_friction():
    p = _plant()
    p.energized = False
    p.set_lift(True)
    p.push("left", 0.10)          # below the 0.135 N m Coulomb friction: the gearbox holds it
    _run(p, 0, 0, 0.5)
    assert p.count_l == 0
    p.push("left", 0.30, duration=0.3)
    _run(p, 0, 0, 0.5)
    assert p.count_l > 100 and p.count_r == 0
    assert p.push_l == 0.0        # the push ended after its duration
    assert p.x == 0.0             # lifted: the robot did not move


def test_coast_vs_energized_zero_duty_braking():
    # a hand turning a lifted wheel: de-energized (open windings) only friction resists it; energized at zero
    # duty the shorted windings' back-EMF brakes it to a few rad/s
    p = _plant(noise=False)
    p.set_lift(True)
    p.energized = False
    p.push("left", 0.3)
    _run(p, 0, 0, 0.3)
    q = _plant(noise=False)
    q.set_lift(True)
    q.push("left", 0.3)
    _run(q, 0, 0, 0.3)
    print("0.3 s of 0.3 N m: coasting wheel %.1f rad/s, braked wheel %.2f rad/s" % (p.w_l, q.w_l))
    braked = (0.3 - 0.135) / (q.emf_damping + q.viscous)
    assert abs(q.w_l - braked) < 0.1, (q.w_l, braked)
    assert p.w_l > 5 * q.w_l


def test_noise_is_seeded_and_reproducible():
    a = _plant()
    b = _plant()
    c = plant.Plant(_robot(), seed=7)
    c.energized = True
    for p in (a, b, c):
        _run(p, FULL * 3 // 10, FULL * 4 // 10, 1.0)
    assert a.x == b.x and a.theta == b.theta and a.count_l == b.count_l
    assert a.x != c.x
    # the noise is there: without it the same run ends elsewhere
    d = _plant(noise=False)
    _run(d, FULL * 3 // 10, FULL * 4 // 10, 1.0)
    assert d.x != a.x


def test_truth_has_the_endpoint_keys_and_reset_restores_rest():
    p = _plant()
    _run(p, FULL, FULL // 2, 0.5)
    t = p.truth()
    for k in ("x", "y", "theta", "w_left", "w_right", "t"):
        assert k in t, k
    assert abs(t["t"] - 0.5) < 1e-6
    p.reset()
    assert p.x == 0.0 and p.w_l == 0.0 and p.count_l == 0 and p.t == 0.0 and not p.energized


def test_description_errors_name_the_key():
    d = _robot()
    del d["mass_kg"]
    try:
        plant.Plant(d)
    except plant.DescriptionError as e:
        assert "mass_kg" in str(e)
    else:
        raise AssertionError("missing key accepted")
    d = _robot()
    d["encoder"] = {"counts_per_rev": 4096, "counter_bits": 24}
    try:
        plant.Plant(d)
    except plant.DescriptionError as e:
        assert "counter_bits" in str(e)
    else:
        raise AssertionError("24-bit counter accepted")


def test_default_robot_imperfections_tyres_wheelbase_scrub_and_jitter():
    d = plant.load_description(_root + "/sim/robots/default.json")
    p = plant.Plant(d)
    p.energized = True
    assert abs(p.r_l / p.r - 1.003) < 1e-9 and abs(p.r_r / p.r - 0.997) < 1e-9
    assert abs(p.b - 0.152 * 1.04) < 1e-9 and p.turn_scrub == 0.02 and p.edge_jitter == 0.1
    _run(p, -FULL // 2, FULL // 2, 1.0)
    # rolling in place: the yaw rate is the rims' difference over the effective separation, widened by the scrub
    b_eff = p.b * (1.0 + p.turn_scrub * abs(p.wz))
    print("spin: wz %.4f rad/s, rims over the drawn b %.4f, over the effective b %.4f"
          % (p.wz, (p.w_r * p.r_r - p.w_l * p.r_l) / 0.152, (p.w_r * p.r_r - p.w_l * p.r_l) / b_eff))
    assert abs(p.wz - (p.w_r * p.r_r - p.w_l * p.r_l) / b_eff) < 0.02
    assert (p.w_r * p.r_r - p.w_l * p.r_l) / 0.152 > 1.04 * p.wz      # nominal odometry over-reports the turn
    # the edge jitter dithers the counts, never accumulates
    for _ in range(500):
        p.step(DT, FULL // 3, FULL // 3)
    k = p.cpr / (2 * math.pi)
    assert abs(p.count_l - p.angle_l * k) <= 1.1 and abs(p.count_r - p.angle_r * k) <= 1.1   # floor of +-0.1
