# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Moves on the board, the slow path's half (docs/firmware.md, "Moves"): a MOVE's SI values (metres, radians, their
# speeds and accelerations) become the words of one queue slot the move engine (in fixedstep.step(), in the control
# period) runs. Floats and allocation are allowed here: this runs once per MOVE, in the link's pass.
#
# The engine has two axes in wheel counts: D, the wheels' mean travel, and H, half their difference (the heading
# times half the wheel separation). A straight line profiles D and holds H, a turn profiles H and holds D, an arc
# profiles the longer of the two and has the other follow it at a fixed ratio.
from .control import ACCEL_SHARE, ratio_fixed
from .shared import protocol

TWO_PI = 6.283185307179586
Q16 = 65536.0
BRAKE_MAX = 536870912.0         # the engine's braking-distance product: vmax**2 / (16 acc) stays below 2**29
DELTA_MAX = 536870912.0         # |a move's change| in Q12 counts (131072 counts; the host splits longer paths:
#                                 viperdrive.board.moves.MOVE_COUNTS_MAX, checked equal by tests/test_moves.py)
TIMEOUT_MAX = 1073741823        # periods
SPEED_SHARE = 0.9               # a move's reference uses at most this share of max_wheel_speed (and
#                                 control.ACCEL_SHARE of max_accel, two overlapping moves together)


def _finite(x):
    return x == x and x != float("inf") and x != float("-inf")


def planned_time(distance, speed, accel):
    """Seconds of a trapezoid from rest to rest over distance (> 0) with cruise speed and acceleration."""
    if distance * accel > speed * speed:
        return distance / speed + speed / accel
    return 2.0 * (distance / accel) ** 0.5


def plan(values, cpr, hz, kind, a, b, speed, accel, timeout):
    """-> (axis, delta, vmax, acc, cm, cs, follower delta, timeout periods) for Controller.move_queue;
    ValueError with the reason when the move cannot run as asked (not finite, empty, beyond the board's ranges)."""
    for name, x in (("the distance, angle or radius", a), ("the arc's angle", b), ("speed", speed),
                    ("accel", accel), ("timeout", timeout)):
        if not _finite(x):
            raise ValueError("%s must be a finite number" % name)
    if not (speed > 0.0 and accel > 0.0):
        raise ValueError("speed and accel must be > 0")
    if timeout < 0.0:
        raise ValueError("timeout must be >= 0 (0: twice the planned time plus 1 s)")
    r_wheel = values["wheel_radius"]
    m_per_count = TWO_PI * r_wheel / cpr
    half = 0.5 * values["wheel_separation"]
    # the primary axis's change, speed and acceleration in m of wheel travel; the follower's change
    if kind == protocol.MOVE_STRAIGHT:
        d, h, v, acc = a, 0.0, speed, accel
    elif kind == protocol.MOVE_TURN:
        d, h, v, acc = 0.0, a * half, speed * half, accel * half
    elif kind == protocol.MOVE_ARC:
        if a == 0.0:
            raise ValueError("an arc of radius 0 is a turn in place")
        d, h, v, acc = a * (b if b >= 0.0 else -b), b * half, speed, accel
    else:
        raise ValueError("unknown move kind %d" % kind)
    if d == 0.0 and h == 0.0:
        raise ValueError("the move has no length")
    if abs(d) >= abs(h):
        axis, p, f = 0, d, h
    else:
        axis, p, f = 1, h, d
        if kind == protocol.MOVE_ARC:
            # speed and accel are the path's: the heading axis runs faster by |h / d|
            v *= abs(h / d)
            acc *= abs(h / d)
    ratio = f / p
    # the outer wheel travels (1 + |ratio|) x the primary axis: it stays within the wheel limits, with headroom
    # for the position correction on top (a reference at the limit itself would leave the correction nothing)
    k = 1.0 + abs(ratio)
    v = min(v, SPEED_SHARE * values["max_wheel_speed"] * r_wheel / k)
    acc = min(acc, ACCEL_SHARE * values["max_accel"] * r_wheel / k)
    vq = int(v / m_per_count / hz * Q16 + 0.5)
    aq = int(acc / m_per_count / hz / hz * Q16 + 0.5)
    if aq < 1 or vq < 1:
        raise ValueError("speed %g / accel %g are below what the board resolves at %d Hz" % (speed, accel, hz))
    if vq * float(vq) / (16.0 * aq) >= BRAKE_MAX:
        raise ValueError("speed %g with accel %g brakes over more than the board's range" % (speed, accel))
    delta = p / m_per_count * 4096.0
    if not abs(delta) < DELTA_MAX:
        raise ValueError("the move is longer than the board's range of %.1f m of wheel travel"
                         % (DELTA_MAX / 4096.0 * m_per_count))
    cm, cs = ratio_fixed(abs(ratio))
    if ratio < 0.0:
        cm = -cm
    if timeout == 0.0:
        timeout = 2.0 * planned_time(abs(p), v, acc) + 1.0
    periods = min(int(timeout * hz + 0.5), TIMEOUT_MAX)
    fdelta = f / m_per_count * 4096.0
    return axis, _round(delta), vq, aq, cm, cs, _round(fdelta), max(1, periods)


def _round(x):
    return int(x + (0.5 if x >= 0 else -0.5))
