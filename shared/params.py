# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The board's parameter table: one source of truth for ids, names, types, units, ranges and defaults.
# The board validates SET_PARAM against it, stores it as JSON, and HELLO carries schema_hash() so a host built
# against another table refuses to talk. Gains act on wheel speed in rad/s and produce duty (1.0 = full PWM);
# the board converts them to its fixed-point counts domain when a value is applied.
#
# The default gains are those of the default robot (sim/robots/default.json; docs/tuning.md, "The default gains"):
# kS and kV as `viperdrive calibrate feedforward` identifies its motor, kp/ki/windup_tau as `viperdrive tune --design
# --settle 100ms --overshoot 5%` computes them from that model (rounded). kA stays 0: a board whose motor was not
# identified has no inertia model, and `tune --design` then asks for the identification instead of guessing.

# Column indexes of a TABLE entry. `# type: Final` makes each a literal for the type checker (so p[NAME] is a str,
# p[MIN] a number); a comment, and an import the type checker alone runs, because MicroPython has no typing module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final  # noqa: F401 -- used by the type comments below
ID = 0  # type: Final
NAME = 1  # type: Final
TYPE = 2  # type: Final     # struct code on the wire: "f" float32, "H" u16
UNIT = 3  # type: Final
MIN = 4  # type: Final
MAX = 5  # type: Final
DEFAULT = 6  # type: Final
HELP = 7  # type: Final

TABLE = (
    # id, name, type, unit, min, max, default, meaning
    (0, "kp", "f", "duty/(rad/s)", 0.0, 10.0, 0.04, "proportional gain on wheel speed error"),
    (1, "ki", "f", "duty/rad", 0.0, 100.0, 0.2, "integral gain (integrates speed error)"),
    (2, "kd", "f", "duty/(rad/s^2)", 0.0, 1.0, 0.0, "derivative gain, on the measurement"),
    (3, "kd_tau", "f", "s", 0.0005, 1.0, 0.01, "time constant of the derivative's one-pole filter"),
    (4, "windup_tau", "f", "s", 0.001, 10.0, 0.02, "anti-windup back-calculation tracking time Tt"),
    (5, "ks", "f", "duty", 0.0, 0.6, 0.14, "feedforward static friction kS*sign(w)"),
    (6, "kv", "f", "duty/(rad/s)", 0.0, 1.0, 0.05, "feedforward back-EMF kV*w"),
    (7, "ka", "f", "duty/(rad/s^2)", 0.0, 1.0, 0.0, "feedforward inertia kA*dw/dt"),
    (8, "deadband", "f", "duty", 0.0, 0.5, 0.0, "deadband compensation added in the direction of a nonzero output"),
    (9, "max_duty", "f", "duty", 0.05, 1.0, 1.0, "output clamp"),
    (10, "max_wheel_speed", "f", "rad/s", 0.1, 500.0, 20.0, "setpoints are scaled jointly to this"),
    (11, "max_accel", "f", "rad/s^2", 0.1, 5000.0, 30.0, "joint wheel acceleration limit (ratio kept)"),
    (12, "deadman_ms", "H", "ms", 20, 1000, 100, "no SET_VEL for this long: ramp to zero, DEADMAN"),
    (13, "deadman_disable_ms", "H", "ms", 100, 60000, 2000, "no SET_VEL for this long: de-energize"),
    (14, "stall_ms", "H", "ms", 50, 10000, 500, "saturated output with no motion this long: FAULT"),
    (15, "stall_speed", "f", "rad/s", 0.0, 50.0, 0.5, "below this |speed| a saturated wheel counts as stalled"),
    (16, "track_err_max", "f", "rad/s", 0.1, 500.0, 15.0, "tracking error above this for track_err_ms: FAULT"),
    (17, "track_err_ms", "H", "ms", 50, 10000, 1000, "how long the tracking error may persist"),
    (18, "vel_tau", "f", "s", 0.0, 0.5, 0.01, "velocity estimate one-pole filter time constant"),
    (19, "wheel_radius", "f", "m", 0.005, 1.0, 0.0325, "board odometry: wheel radius"),
    (20, "wheel_separation", "f", "m", 0.02, 5.0, 0.152, "board odometry: effective wheel separation"),
    # encoder plausibility (docs/firmware.md, "Encoder plausibility"): a wheel measured moving as commanded whose
    # duty beyond kS + deadband predicts more than enc_ratio times its measured speed, and exceeds
    # kS + deadband + kV*|speed| by more than enc_margin, for enc_ms: FAULT_ENCODER_LEFT/RIGHT
    (21, "enc_ratio", "f", "ratio", 1.1, 10.0, 1.5, "encoder check: duty-predicted / measured speed above this"),
    (22, "enc_margin", "f", "duty", 0.0, 1.0, 0.14, "encoder check: and duty above kS + kV*|speed| by this"),
    (23, "enc_ms", "H", "ms", 0, 10000, 500, "encoder check: both this long: FAULT (0: check off)"),
    # board sensors (docs/firmware.md, "Sensors"): only meaningful where the board config has the input
    (24, "battery_warn_v", "f", "V", 0.0, 60.0, 7.0, "battery below this: ST_BATTERY_LOW (a warning)"),
    (25, "battery_cutoff_v", "f", "V", 0.0, 60.0, 6.4, "battery below this for battery_ms: FAULT_BATTERY_LOW"),
    (26, "battery_ms", "H", "ms", 0, 10000, 500, "how long below battery_cutoff_v before the fault (0: off)"),
    (27, "still_ms", "H", "ms", 100, 10000, 500, "encoders still this long: the gyro bias estimate updates"),
    # the speed estimate (docs/firmware.md, "The law"): where the backend times encoder edges (rp2's PIO, esp32 with
    # pin IRQs, the virtual board), from the edges' times; 0: counts per period only (the relay experiment uses it)
    (28, "vel_edges", "H", "flag", 0, 1, 1, "wheel speed from the encoder edges' times (1) or counts only (0)"),
    # the gyro's scale (docs/firmware.md, "Sensors"; `viperdrive calibrate gyro`): the board's heading and the yaw
    # rate it reports are the gyro's (bias removed) times these, by the direction of the turn. A typical MEMS part
    # is off by a few tenths of a percent: 1 degree per full turn at 0.3 %
    (29, "gyro_scale_ccw", "f", "ratio", 0.9, 1.1, 1.0, "gyro: the true turn per turn read, turning CCW"),
    (30, "gyro_scale_cw", "f", "ratio", 0.9, 1.1, 1.0, "gyro: the true turn per turn read, turning CW"),
    # moves on the board (docs/firmware.md, "Moves"; MOVE / MOVE_LEASE): the host renews a lease instead of the
    # deadman; the engine follows a distance and a heading reference with a P term each on top of their speed
    (31, "move_lease_ms", "H", "ms", 100, 10000, 500, "moves: no MOVE/MOVE_LEASE this long: braked stop"),
    (32, "move_kp_distance", "f", "1/s", 0.0, 50.0, 12.0, "moves: distance error -> speed correction"),
    (33, "move_kp_heading", "f", "1/s", 0.0, 50.0, 12.0, "moves: heading error (as wheel travel) -> correction"),
    (34, "move_tol_distance", "f", "m", 0.0001, 0.1, 0.002, "moves: arrived within this distance"),
    (35, "move_tol_heading", "f", "rad", 0.0001, 0.2, 0.002, "moves: and within this heading"),
    (36, "move_stall_tol", "f", "m", 0.001, 1.0, 0.01, "moves: a path error above this (as wheel travel) ..."),
    (37, "move_stall_ms", "H", "ms", 10, 5000, 60, "moves: ... for this long ends the move as stalled"),
)

# The deadman's stop must end at rest (docs/firmware.md, "Deadman"): DEADMAN_REST_MS after its ramp has brought both
# setpoints to zero, a wheel more than DEADMAN_REST_COUNTS from where it was then is still moving (a relay
# experiment oscillating about a zero setpoint, a hand turning it) and the board turns its outputs off. Both laws
# (the viper step and the float law) and the host's braking bound use these.
DEADMAN_REST_MS = 200
DEADMAN_REST_COUNTS = 2


def rest_periods(hz):
    """Control periods of DEADMAN_REST_MS at hz, at least one."""
    return max(1, (hz * DEADMAN_REST_MS + 500) // 1000)


IRREGULAR_UP = 8                # edge regularity: what an edge interval that jumps adds to the score (-1 otherwise)


def irregular_score(enc_ms, hz):
    """The edge regularity score that latches FAULT_ENCODER (the encoder check's second witness, on backends that
    time edges): 2 x the periods of enc_ms, so a wheel whose intervals jump in 1 of 9 or fewer never gets there,
    and one whose intervals jump in 1 of 3 (half the counts lost) does within about enc_ms. 0 (off) with enc_ms 0."""
    return 0 if enc_ms == 0 else max(4 * IRREGULAR_UP, (2 * enc_ms * hz + 500) // 1000)


_BY_ID = {}
_BY_NAME = {}
for _p in TABLE:
    _BY_ID[_p[ID]] = _p
    _BY_NAME[_p[NAME]] = _p


def by_id(pid):
    return _BY_ID.get(pid)


def by_name(name):
    return _BY_NAME.get(name)


def defaults():
    """{name: default} for every parameter."""
    return {p[NAME]: p[DEFAULT] for p in TABLE}


# computed once: on a 32-bit MicroPython port every step of it is a heap-allocated big int
_SCHEMA_HASH = []  # type: list[int]


def schema_hash():
    """FNV-1a 32 over id, name, type and unit of every entry: changes when the wire meaning changes.
    Ranges and defaults are left out on purpose (a float's text differs between ports). Computed on the first call
    and kept: on an RP2040 the computation takes tens of milliseconds and allocates a big int per character."""
    if not _SCHEMA_HASH:
        h = 0x811C9DC5
        for p in TABLE:
            for ch in "%s:%s:%s:%s;" % (p[ID], p[NAME], p[TYPE], p[UNIT]):
                h ^= ord(ch)
                h = (h * 0x01000193) & 0xFFFFFFFF
        _SCHEMA_HASH.append(h)
    return _SCHEMA_HASH[0]


def check(pid, value):
    """None when value is acceptable for parameter pid, else the reason as text."""
    p = _BY_ID.get(pid)
    if p is None:
        return "unknown parameter id %d" % pid
    if value != value or value in (float("inf"), float("-inf")):
        return "%s must be a finite number" % p[NAME]
    if p[TYPE] != "f" and int(value) != value:
        return "%s must be a whole number" % p[NAME]
    if value < p[MIN] or value > p[MAX]:
        return "%s=%s outside [%s, %s] %s" % (p[NAME], value, p[MIN], p[MAX], p[UNIT])
    return None
