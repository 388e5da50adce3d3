# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Moves on the board (issue 24) in simulated time: the firmware's App (control step with the move engine, sensor
# task, odometry) on the virtual board's plant (sim/plant.py), and the engine alone on ideal wheels for the many
# random moves. Commands go in through the link, as the host sends them.
import math
import random

import fakehal
import planthal
from viperdrive import app as app_mod
from viperdrive import boardcfg, moves
from viperdrive.fixedstep import W_SP, WS
from viperdrive.shared import protocol as P

HZ = 500
CPR = 4096


class Rig:
    """App + plant, commands through the link's dispatch (the frames the host sends), replies decoded."""

    def __init__(self, imu=True, robot="default", values=None):
        self.pl = planthal.plant_mod.Plant(planthal.load_robot(robot))
        cfg = {"backend": "sim", "counts_per_rev": CPR, "counter_bits": 16, "control_hz": HZ, "name": "moves"}
        if imu:
            cfg["imu"] = {"part": "mpu6050"}
        cfg = boardcfg.validate(cfg)
        self.hal = planthal.PlantHal(cfg, self.pl, HZ)
        self.app = app_mod.App(self.hal, cfg, params_path="/tmp/viperdrive-mptest-moves.json", link=True,
                               watchdog=False)
        for name, v in (values or {}).items():
            assert self.app.params.set(self._pid(name), v) is None, name
        self.app._apply_params()
        self.app.start()
        self.stream = self.hal.stream
        assert self.app.enable(True)
        self.t = 0
        self.next_id = 1
        self.still(1.0)                 # the sensor task's gyro bias (still_ms, then its window)
        self.pl.reset_pose()

    @staticmethod
    def _pid(name):
        from viperdrive.shared import params
        return params.by_name(name)[params.ID]

    def request(self, frame):
        self.stream.inject(frame)
        self.app.service()
        return P.Parser().feed(self.stream.take())

    def periods(self, n, lease_every=50):
        for _ in range(n):
            self.hal.fire(1)
            self.t += 1
            if lease_every and self.t % lease_every == 0:
                self.lease()
            self.app.service()

    def still(self, s):
        for i in range(int(s * HZ)):
            self.hal.fire(1)
            if i % 5 == 0:
                self.app.set_velocity(0, 0)
            self.app.service()

    def move(self, kind, a, b=0.0, speed=0.3, accel=1.0, timeout=0.0):
        mid = self.next_id
        self.next_id += 1
        fr = self.request(P.pack_move(mid, kind, a, b, speed, accel, timeout))
        assert fr and fr[-1][0] == P.MOVE_STATE, fr
        return mid

    def lease(self, cancel=False):
        fr = self.request(P.pack_move_lease(cancel))
        return P.unpack_move_state([f for f in fr if f[0] == P.MOVE_STATE][-1][1])

    def run_until_done(self, max_s=30.0):
        """Periods until no move is left; -> {id: reason} of every end seen."""
        ends = {}
        for _ in range(int(max_s * HZ / 10)):
            self.periods(10, lease_every=0)
            mid, active, n, last, _ = self.lease()
            for i, r in last:
                ends[i] = r
            if active == 0:
                return ends
        raise AssertionError("moves still running after %g s" % max_s)


def _deg(x):
    return x * 180.0 / math.pi


def _wrap(a):
    return (a + math.pi) % (2 * math.pi) - math.pi


def test_straight_one_metre_on_the_default_robot():
    r = Rig()
    mid = r.move(P.MOVE_STRAIGHT, 1.0, speed=0.3, accel=0.8)
    # MOVE_STATE's progress: per mille of the length the reference has covered, rising to the end
    seen = []
    while not seen or seen[-1] < 1000:
        r.periods(HZ // 2, lease_every=0)
        rep = r.lease()
        seen.append(rep[4] if rep[1] else 1000)
    print("straight 1 m: progress every 0.5 s", seen)
    # cruising at 0.3 m/s: 0.15 m, 150 per mille, every 0.5 s
    assert seen == sorted(seen) and all(abs(b - a - 150) <= 1 for a, b in zip(seen[1:4], seen[2:5])), seen
    ends = r.run_until_done()
    pl = r.pl
    print("straight 1 m: x %.4f y %.4f theta %.3f deg, end %s" % (pl.x, pl.y, _deg(pl.theta), ends))
    assert ends == {mid: P.MOVE_END_ARRIVED}
    assert abs(pl.x - 1.0) <= 0.005 and abs(pl.y) <= 0.01, (pl.x, pl.y)


def test_turn_90_with_the_gyro():
    r = Rig()
    mid = r.move(P.MOVE_TURN, math.pi / 2, speed=2.0, accel=6.0)
    ends = r.run_until_done()
    print("turn 90: theta %.3f deg, x %.4f y %.4f, end %s" % (_deg(r.pl.theta), r.pl.x, r.pl.y, ends))
    assert ends == {mid: P.MOVE_END_ARRIVED}
    assert abs(_deg(r.pl.theta) - 90.0) < 1.0


DEBUG = 0
CALIBRATED = {"gyro_scale_ccw": 0.99701, "gyro_scale_cw": 0.99701}     # the default robot's part reads 0.3 % high


def test_a_square_chained_at_speed_closes_and_never_stops_at_a_corner():
    r = Rig(values=CALIBRATED)
    ids = []
    slowest = [1e9]
    pl = r.pl
    half = 0.5 * 0.152 * 1.04
    queue = []
    for _ in range(4):
        queue.append((P.MOVE_STRAIGHT, 1.0))
        queue.append((P.MOVE_TURN, math.pi / 2))
    ends = {}
    started = False
    for _ in range(60 * HZ // 10):
        while queue and r.app.ctrl.move_free() > 0:
            kind, a = queue.pop(0)
            # 0.35 m/s^2 braking the line and 5 rad/s^2 x 0.076 m starting the turn: 0.73 m/s^2 of wheel, within
            # the moves' share of max_accel (0.8 x 30 rad/s^2 x 0.0325 m): the turn starts as the line brakes
            ids.append(r.move(kind, a, speed=0.3 if kind == P.MOVE_STRAIGHT else 2.0,
                              accel=0.35 if kind == P.MOVE_STRAIGHT else 5.0))
        r.periods(10, lease_every=0)
        mid, active, n, last, _ = r.lease()
        for i, why in last:
            ends[i] = why
        started = len(ends) >= 1        # the first line is done: from there to the last corner
        # the outer wheel's ground speed, m/s: zero only when the robot stands still
        fastest = abs(pl.v) + abs(pl.wz) * half
        if started and active and len(ends) < 7:
            slowest[0] = min(slowest[0], fastest)
        if not queue and active == 0:
            break
    d = math.sqrt(pl.x * pl.x + pl.y * pl.y)
    print("square 4 x (1 m + 90 deg) chained: ends %.1f mm and %.2f deg from the start; slowest wheel from the "
          "first corner to the last %.3f m/s; ends %s" % (d * 1000, _deg(_wrap(pl.theta)), slowest[0], ends))
    assert all(ends.get(i) == P.MOVE_END_ARRIVED for i in ids), ends
    assert d <= 0.020 and abs(_deg(_wrap(pl.theta))) <= 1.0
    assert slowest[0] > 0.05


def test_a_blocked_wheel_ends_the_move_as_stalled_within_200_ms_outputs_off():
    r = Rig()
    mid = r.move(P.MOVE_STRAIGHT, 2.0, speed=0.3, accel=0.8)
    r.periods(HZ)                       # 1 s: cruising
    r.pl.set_stall("left", True)
    t0 = r.t
    while r.t - t0 < HZ:
        r.periods(1)
        if r.app.ctrl.move_report()[1] == 0:
            break
    ms = (r.t - t0) * 1000 // HZ
    rep = r.app.ctrl.move_report()
    print("left wheel blocked at 0.3 m/s: move ended %s after %d ms, outputs %s" % (
        P.MOVE_END_NAMES.get(rep[3][-1][1]), ms, "on" if r.hal.energized else "off"))
    assert rep[3][-1] == (mid, P.MOVE_END_STALLED)
    assert ms <= 200 and not r.hal.energized and not r.app.ctrl.enabled()


def test_the_lease_stops_the_robot_braked_when_the_host_goes_quiet():
    r = Rig(values={"move_lease_ms": 500})
    mid = r.move(P.MOVE_STRAIGHT, 3.0, speed=0.3, accel=0.8)
    r.periods(HZ, lease_every=50)       # 1 s with the lease renewed every 100 ms: runs
    assert r.app.ctrl.move_report()[1] == 1
    t0 = r.t
    while r.t - t0 < 2 * HZ and r.app.ctrl.move_report()[1]:
        r.hal.fire(1)                   # no lease, no service: the host is gone
        r.t += 1
    lease_ms = (r.t - t0) * 1000 // HZ
    while abs(r.pl.v) > 0.002 and r.t - t0 < 3 * HZ:
        r.hal.fire(1)
        r.t += 1
    rest_ms = (r.t - t0) * 1000 // HZ
    rep = r.app.ctrl.move_report()
    print("host quiet: the move ended (%s) %d ms after the last lease; at rest %d ms after it (0.3 m/s braked at "
          "max_accel)" % (P.MOVE_END_NAMES.get(rep[3][-1][1]), lease_ms, rest_ms))
    assert rep[3][-1] == (mid, P.MOVE_END_LEASE)
    brake_ms = 1000 * 0.3 / (r.app.params.values["max_accel"] * r.app.params.values["wheel_radius"])
    assert 480 <= lease_ms <= 520 and rest_ms < lease_ms + brake_ms + 40, (lease_ms, rest_ms, brake_ms)


def test_set_vel_cancels_the_moves_in_the_same_period():
    r = Rig()
    a = r.move(P.MOVE_STRAIGHT, 2.0)
    b = r.move(P.MOVE_TURN, 1.0)
    r.periods(HZ // 2)
    r.request(P.pack_set_vel(0, 0))
    r.hal.fire(1)
    rep = r.app.ctrl.move_report()
    assert rep[1] == 0 and rep[3][-2:] == [(a, P.MOVE_END_CANCELLED), (b, P.MOVE_END_CANCELLED)], rep


def test_an_arc_of_a_quarter_circle():
    r = Rig(values=CALIBRATED)
    mid = r.move(P.MOVE_ARC, 0.5, math.pi / 2, speed=0.3, accel=0.8)
    ends = r.run_until_done()
    pl = r.pl
    print("arc r 0.5 m, 90 deg: x %.4f y %.4f theta %.2f deg" % (pl.x, pl.y, _deg(pl.theta)))
    assert ends == {mid: P.MOVE_END_ARRIVED}
    assert abs(pl.x - 0.5) < 0.01 and abs(pl.y - 0.5) < 0.01 and abs(_deg(pl.theta) - 90.0) < 0.5


def test_refused_moves_say_why_and_queue_nothing():
    r = Rig()
    for kind, a, b, v, acc in ((P.MOVE_STRAIGHT, float("nan"), 0.0, 0.3, 1.0), (P.MOVE_STRAIGHT, 1.0, 0.0, 0.0, 1.0),
                               (P.MOVE_STRAIGHT, 0.0, 0.0, 0.3, 1.0), (P.MOVE_ARC, 0.0, 1.0, 0.3, 1.0),
                               (P.MOVE_STRAIGHT, 1e6, 0.0, 0.3, 1.0), (7, 1.0, 0.0, 0.3, 1.0)):
        fr = r.request(P.pack_move(9, kind, a, b, v, acc, 0.0))
        assert fr == [(P.NACK, bytes((P.MOVE, P.NACK_OUT_OF_RANGE)))], (kind, a, fr)
    assert r.app.ctrl.move_free() == 4
    r.app.enable(False)
    fr = r.request(P.pack_move(9, P.MOVE_STRAIGHT, 1.0, 0.0, 0.3, 1.0, 0.0))
    assert fr == [(P.NACK, bytes((P.MOVE, P.NACK_NOT_ALLOWED)))]


class Wheels(fakehal.Board):
    """Ideal wheels: each period the counters move by the setpoint the step holds (no plant, no IMU)."""

    def __init__(self, cfg):
        fakehal.Board.__init__(self, cfg, counter_bits=32)
        self.ctrl = None
        self.acc = [0, 0]               # Q8 counts/s x periods not yet turned into counts (integers: no allocation)

    def fire(self, n=1):
        st = self.ctrl.st
        one = 256 * HZ
        while n > 0:
            self.now_us += 1000000 // HZ
            if self.energized:
                w = 0
                while w < 2:
                    x = self.acc[w] + st[w * WS + W_SP]
                    whole = x // one
                    self.acc[w] = x - whole * one
                    self.counts[w] += whole
                    w += 1
            self.periodic()
            n -= 1


def test_a_thousand_random_moves_each_has_an_end():
    random.seed(24)
    rng = random
    cfg = boardcfg.validate({"backend": "sim", "counts_per_rev": 1024, "counter_bits": 32, "control_hz": HZ,
                             "name": "random"})
    hal = Wheels(cfg)
    a = app_mod.App(hal, cfg, params_path="/tmp/viperdrive-mptest-moves-r.json", link=False, watchdog=False)
    a.set_param(23, 0)                  # enc_ms: ideal wheels turn whatever the duty (no motor to check)
    a.start()
    hal.ctrl = a.ctrl
    assert a.enable(True)
    c = a.ctrl
    sent = 0
    ended = {}
    reasons = {}
    refused = 0
    longest = 0
    for k in range(1000):
        kind = rng.choice((P.MOVE_STRAIGHT, P.MOVE_TURN, P.MOVE_ARC))
        x = rng.uniform(-1.0, 1.0) * (0.3 if kind != P.MOVE_TURN else 4.0)
        y = rng.uniform(-3.0, 3.0)
        speed = rng.uniform(0.01, 3.0)
        accel = rng.uniform(0.05, 20.0)
        tol = rng.uniform(0.0001, 0.01)
        a.set_param(34, tol)
        a.set_param(35, tol)
        tmo = rng.choice((0.0, 0.0, rng.uniform(0.01, 2.0)))
        if a.move(k + 1, kind, 0, x, y, speed, accel, tmo) != 0:
            refused += 1
            continue
        sent += 1
        bound = moves.plan(a.params.values, 1024, HZ, kind, x, y, speed, accel, tmo)[-1] + HZ   # its timeout + 1 s
        t = 0
        while c.move_report()[1] and t < bound:
            hal.fire(5)
            c.move_lease()
            a.service()
            t += 5
        longest = max(longest, t)
        rep = c.move_report()
        assert rep[1] == 0, "move %d (%s %g %g at %g/%g) still running 1 s after its timeout" % (
            k + 1, kind, x, y, speed, accel)
        ended[rep[3][-1][0]] = rep[3][-1][1]
        if DEBUG and rep[3][-1][1] != 1:
            print(k + 1, kind, x, y, speed, accel, rep, c.fault())
        reasons[rep[3][-1][1]] = reasons.get(rep[3][-1][1], 0) + 1
        if not c.enabled():
            a.enable(True)              # a stall turned the outputs off
    print("random moves: %d queued, %d refused, %d ended (%s), longest %.1f s" % (
        sent, refused, len(ended), {P.MOVE_END_NAMES[r]: n for r, n in reasons.items()}, longest / HZ))
    assert len(ended) == sent and sent > 900


def test_the_control_period_allocates_nothing_while_moves_run():
    # a line into a turn into an arc (queue, blend, start, coupling, ends), lease renewals and heading samples
    # written the way the slow path writes them, under heap_lock: on rp2 the engine runs in the hard timer IRQ
    import micropython

    from viperdrive import fixedstep as fx
    cfg = boardcfg.validate({"backend": "sim", "counts_per_rev": 1024, "counter_bits": 32, "control_hz": HZ,
                             "name": "alloc"})
    hal = Wheels(cfg)
    a = app_mod.App(hal, cfg, params_path="/tmp/viperdrive-mptest-moves-a.json", link=False, watchdog=False)
    a.set_param(23, 0)
    a.start()
    hal.ctrl = a.ctrl
    assert a.enable(True)
    c = a.ctrl
    st = c.st
    for i, (kind, x, y) in enumerate(((P.MOVE_STRAIGHT, 0.3, 0.0), (P.MOVE_TURN, 1.0, 0.0),
                                      (P.MOVE_ARC, 0.2, -1.0))):
        assert a.move(i + 1, kind, 0, x, y, 0.5, 2.0, 0.0) == 0
    c.heading_sample(0, 0)
    n = 0
    micropython.heap_lock()
    try:
        while n < 3000 and st[fx.M_TAIL] != st[fx.M_HEADN]:
            hal.fire(1)
            st[fx.M_LEASE] = 0
            if n % 5 == 0:
                st[fx.M_HG] = (st[fx.WS + fx.W_POS] - st[fx.W_POS]) << 11
                st[fx.M_HE] = st[fx.M_HG]
                st[fx.M_HNEW] = 1
            n += 1
    finally:
        micropython.heap_unlock()
    rep = c.move_report()
    assert rep[1] == 0 and rep[3][-3:] == [(1, 1), (2, 1), (3, 1)], rep
