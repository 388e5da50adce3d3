# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make demo` (python -m viperdrive.demo): a virtual board (the real firmware on MicroPython, simulated robot)
driven along a 1 m square and a figure-8 twice: through the host stack (DriveController ramps -> Board -> link,
the path closed on the host's odometry), and as board moves (the board plans, chains and closes them on its
gyro heading; the host only watches).
Prints commanded path, ground truth, board odometry, host odometry, end-point errors, the largest cross-track
error against the commanded path, link statistics and loop jitter, and writes a PNG of the paths to
out/demo_paths.png.

The default robot drifts as a real one does (sim/robots/default.json: tyres 0.6 % apart, wheelbase 4 % off, turn
scrub), so first a UMBmark (3 + 3 squares of 0.5 m, ground truth as the tape measure: what `viperdrive
calibrate umbmark` computes) corrects the wheel radii and the wheelbase; the paths then carry, side by side, the
raw host odometry (nominal geometry), the calibrated odometry (the same wheel positions, corrected geometry) and
the live EKF (viperdrive.estimation.live) fusing the calibrated odometry with a gyro (the virtual board's true yaw rate
+ noise, standing in for the board's IMU), each with its end error against the ground truth. The board's gyro
scale is calibrated the same way (turns as board moves, the ground truth as the mark) before the board moves
run on it.

The driving helpers (PathRunner) are reused by hil_tests/ for the closed-loop square.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .board.board import Board
from .errors import BoardFault, UserError
from .motion.drive import DriveController
from .motion.odometry import Odometry, wrap_pi
from .robot.config import RobotConfig

if TYPE_CHECKING:
    import random
    import threading

    from .estimation.live import LiveFilter

RATE_HZ = 100.0
GYRO_SIGMA = 0.005      # rad/s, the stand-in gyro's noise (an MPU-6050 at 100 Hz is ~6e-4 rad/s)
# the live EKF of the demo (robot_localization's parameters): the calibrated wheel odometry's twist, the gyro's
# yaw rate; small pose process noise (the robot stays on the floor), room for quick turn-rate changes
_Q = [1e-4, 1e-4, 0.06, 0.03, 0.03, 1e-4, 0.025, 0.025, 0.04, 0.01, 0.01, 0.5, 0.01, 0.01, 0.015]
EKF_PARAMS = {"ekf_filter_node": {"ros__parameters": {
    "frequency": 50.0, "sensor_timeout": 0.1, "two_d_mode": True,
    "process_noise_covariance": [(_Q[i // 16] if i % 16 == 0 else 0.0) for i in range(225)],
    "odom0": "odom", "odom0_config": [False] * 6 + [True, True, False, False, False, True] + [False] * 3,
    "imu0": "imu", "imu0_config": [False] * 11 + [True] + [False] * 3}}}
HEADING_GAIN = 2.0      # rad/s per rad of heading error while driving straight
GYRO_REST_S = 2.0       # board s at rest before board moves (wait_gyro): more of the gyro's bias windows
LAG_S = 0.06            # command -> wheel motion lag of the chain at 100 Hz (measured on the virtual board)


@dataclass
class Track:
    name: str
    commanded: list = field(default_factory=list)   # (x, y) of the ideal path
    truth: list = field(default_factory=list)       # (x, y) ground truth (virtual board only)
    host: list = field(default_factory=list)        # (x, y) host odometry
    calibrated: list = field(default_factory=list)  # (x, y) host odometry with the UMBmark corrections
    fused: list = field(default_factory=list)       # (x, y) live EKF: calibrated odometry + gyro
    board: list = field(default_factory=list)       # (x, y) board odometry (GET_ODOM)
    end: dict = field(default_factory=dict)
    crossing: tuple | None = None                   # (x, y, theta) where the figure-8 changed circles
    board_moves: bool = False                       # run as board moves (the board closes it on its gyro)


class PathRunner:
    """A fixed-rate host loop (absolute deadlines): read -> odometry -> drive controller -> write. In the board's
    time (board.clock: the host's clock, or an emulated chip's at its measured speed): its period, the drive
    controller's ramps and timeouts."""

    def __init__(self, board: Board, config: RobotConfig, vb=None, rate_hz: float = RATE_HZ):
        self.board = board
        self.config = config
        self.vb = vb
        self.period = 1.0 / rate_hz
        self.drive = DriveController(config)
        self.odom = Odometry(config, counts_per_rev=board.counts_per_rev)
        self.cycles = 0
        self.late_max = 0.0
        self.late_sum = 0.0
        self.track: Track | None = None
        self._next = 0.0        # the next cycle's deadline (board clock s), set by start()
        self.calibrated_config: RobotConfig | None = None     # set after the UMBmark: a second odometry
        self.cal_odom: Odometry | None = None
        self.live: LiveFilter | None = None     # the live EKF of the track
        self._live_stop: threading.Event | None = None
        self._rng: random.Random | None = None

    def start(self, track: Track | None) -> None:
        """Activate from rest with every pose at zero (truth, board odometry via ZERO, host odometry)."""
        if self.board.active:
            self.board.deactivate()
        if self.vb is not None:
            self.vb.reset("pose")
        self.board.activate()
        self.drive.reset()
        self.track = None
        self._next = self.board.clock.now()
        # a few zero cycles before the odometry takes its baseline: a STATE still in flight from before ZERO
        # (a reply that crossed the ENABLE/ZERO requests) must not become the baseline and make the pose jump
        for _ in range(10):
            self.cycle(0.0, 0.0)
        self.odom.reset()
        if self.calibrated_config is not None:
            self.cal_odom = Odometry(self.calibrated_config, counts_per_rev=self.board.counts_per_rev)
            self._start_filter()
        self.track = track

    def _start_filter(self) -> None:
        import random
        import threading

        from .estimation import config_from_dict
        from .estimation.live import LiveFilter
        from .ros2 import msgs  # imported now, not inside the loop
        self._msgs = msgs
        self._stop_filter()
        self.live = live = LiveFilter(config_from_dict(EKF_PARAMS))
        self._live_stop = threading.Event()
        threading.Thread(target=live.run, args=(self._live_stop,), daemon=True).start()
        self._rng = random.Random(7)

    def _stop_filter(self) -> None:
        if self._live_stop is not None:
            self._live_stop.set()
            self._live_stop = None

    def _feed_filter(self, st, truth) -> None:
        msgs, o, live, rng = self._msgs, self.cal_odom, self.live, self._rng
        assert o is not None and live is not None and rng is not None, "_feed_filter after _start_filter"
        stamp = msgs.time_from_s(st.sampled + (time.time() - time.monotonic()))
        live.feed("odom", msgs.odometry(stamp, "odom", "base_link", o.pose, o.twist,
                                        [float(v) for v in o.pose_covariance.ravel()],
                                        [float(v) for v in o.twist_covariance.ravel()]))
        if truth is not None:
            gc = [0.0] * 9
            gc[0] = gc[4] = 1e-4
            gc[8] = GYRO_SIGMA ** 2
            live.feed("imu", msgs.Imu(
                header=msgs.Header(stamp=msgs.time_from_s(time.time()), frame_id="base_link"),
                orientation_covariance=[-1.0] + [0.0] * 8, linear_acceleration_covariance=[-1.0] + [0.0] * 8,
                angular_velocity=msgs.Vector3(0.0, 0.0, truth["omega"] + rng.gauss(0.0, GYRO_SIGMA)),
                angular_velocity_covariance=gc))

    def cycle(self, v: float, w: float) -> None:
        self._sample(self.board.read())
        now = self.board.clock.now()
        self.drive.command(v, w, now=now)
        left, right = self.drive.update(now)
        self.board.write(left, right)
        self._pace()

    def _sample(self, st) -> None:
        """One cycle's state into the odometries, the filter and the track."""
        self.odom.update(st.position[0], st.position[1], st.velocity[0], st.velocity[1], st.sampled)
        tr = self.track
        if tr is not None:
            # sampled between read() and write(): no STATE is in flight, so the extra request (GET_ODOM) cannot
            # take this cycle's reply out of the loop's hands
            tr.host.append((self.odom.x, self.odom.y))
            t = None
            if self.vb is not None and self.cycles % 5 == 0:
                t = self.vb.truth()
                tr.truth.append((t["x"], t["y"]))
            if self.cal_odom is not None:
                o = self.cal_odom
                o.update(st.position[0], st.position[1], st.velocity[0], st.velocity[1], st.sampled)
                tr.calibrated.append((o.x, o.y))
                self._feed_filter(st, t)
                assert self.live is not None        # started with the calibrated odometry
                e = self.live.estimate
                if e is not None and self.cycles % 5 == 0:
                    tr.fused.append((float(e.state[0]), float(e.state[1])))
            if self.cycles % 25 == 0:
                bo = self.board.odometry()
                tr.board.append((bo.x, bo.y))

    def _pace(self) -> None:
        clock = self.board.clock
        self.cycles += 1
        self._next += self.period
        now = clock.now()
        if self._next > now:
            clock.sleep(self._next - now)
        else:
            late = now - self._next
            self.late_max = max(self.late_max, late)
            self.late_sum += late
            if late > self.period:
                self._next = now        # a long stall (GC, loaded machine): restart the schedule

    def wait_gyro(self, seconds: float = 3.0, rest_s: float = GYRO_REST_S) -> str:
        """Hold still rest_s, then until the board's heading comes from its gyro (its bias is known after still_ms
        at rest), at most `seconds` more, all in board time: board moves turn on the board's heading. Its source at
        the end. At rest the board refines its gyro bias, a window of samples every 0.32 s after still_ms, and a
        bias error integrates into the heading of everything driven after it: a robot that rests before it moves
        starts with a better estimate (as a careful user lets it sit for a moment)."""
        clock = self.board.clock
        t_rest = clock.now() + rest_s
        while clock.now() < t_rest:
            self.cycle(0.0, 0.0)
        t_end = clock.now() + seconds
        while self.board.odometry().heading_source != "gyro" and clock.now() < t_end:
            self.cycle(0.0, 0.0)
        return self.board.odometry().heading_source

    def watch_moves(self, moves: list, every: tuple | None = None) -> None:
        """While the board runs the queued moves: ask for the state (GET_STATE, which commands nothing), keep
        the odometries, the filter and the track, renew the lease; until every move has ended. every: (n, f) calls
        f() every n cycles. BoardFault naming the first move that did not arrive."""
        queue = self.board.moves
        while queue.busy:
            self.board.observe()
            self._sample(self.board.read())
            queue.keep()
            if every is not None and self.cycles % every[0] == 0:
                every[1]()
            self._pace()
        bad = [m for m in moves if not m.arrived]
        if bad:
            raise BoardFault(f"a board move ended {bad[0].reason}: {bad[0].describe()}")

    def settle(self, seconds: float = 0.5) -> None:
        for _ in range(int(seconds / self.period)):
            self.cycle(0.0, 0.0)

    def straight(self, distance_m: float, v: float, heading_rad: float | None = None) -> None:
        """Drive distance_m forward at up to v (m/s), closed on the host odometry, braking at the ramp's
        deceleration, holding heading_rad (absolute; None: the present one)."""
        x0, y0 = self.odom.x, self.odom.y
        hold = self.odom.theta if heading_rad is None else heading_rad
        a = self.config.max_rim_acceleration
        while True:
            done = math.hypot(self.odom.x - x0, self.odom.y - y0)
            left = distance_m - done
            # stop commanding when what the robot still travels while the chain (board ramp, PID, one link
            # exchange) catches up would reach the goal: ~LAG_S at the present speed
            if left <= 0.002 + abs(self.odom.v) * LAG_S:
                break
            # the speed from which half the ramp's deceleration stops at the goal (the wheels lag the command by
            # the board's own ramp and PID), never above v, never below a creep speed above the deadband
            self.cycle(min(v, max(0.03, math.sqrt(a * left))), HEADING_GAIN * wrap_pi(hold - self.odom.theta))
        self.settle(0.3)

    def turn_to(self, heading_rad: float, w: float) -> None:
        """Turn in place to an absolute heading at up to w (rad/s), closed on the host odometry (an overshoot of
        one corner is taken out by the next instead of adding up)."""
        alpha = 2.0 * self.config.max_rim_acceleration / self.config.effective_separation
        while True:
            err = wrap_pi(heading_rad - self.odom.theta)
            left = abs(err)
            if left <= 0.003 + abs(self.odom.w) * LAG_S:
                break
            self.cycle(0.0, math.copysign(min(w, max(0.15, math.sqrt(alpha * left))), err))
        self.settle(0.3)

    def arc(self, v: float, w: float, angle_rad: float, stop: bool, on_reversed=None) -> None:
        """Drive at (v, w) (m/s, rad/s) until the host odometry's heading has changed by angle_rad (the sign of
        w), as a path follower closes a circle: on the heading turned, not on time. The command changes where the
        ramp that follows is centred on the goal heading: for the reversal into the next arc (stop=False) half of
        the w reversal's heading, w**2 / (2 alpha); for a stop, half of the joint ramp down. Plus ~LAG_S of motion.
        on_reversed(): called once, when the measured turn rate first has the sign of w (a reversal's midpoint)."""
        sep = self.config.effective_separation
        a = self.config.max_rim_acceleration
        if stop:
            ramp = (abs(v) + abs(w) * sep / 2.0) / a            # the faster wheel's rim speed down to zero
            lead = abs(w) * (ramp / 2.0 + LAG_S)
        else:
            alpha = 2.0 * a / sep                               # w's rate when only the wheels' difference moves
            lead = w * w / (2.0 * alpha)
        turned = 0.0
        last = self.odom.theta
        while True:
            th = self.odom.theta
            turned += wrap_pi(th - last)
            last = th
            if on_reversed is not None and self.odom.w * w > 0.0:
                on_reversed()
                on_reversed = None
            if abs(angle_rad) - math.copysign(1.0, angle_rad) * turned <= lead:
                break
            self.cycle(v, w)

    def finish(self) -> dict:
        """End points: host and board odometry, truth; errors vs the commanded end (the origin) and vs truth."""
        tr = self.track
        assert tr is not None, "finish() after start()"
        bo = self.board.odometry()
        end = {"host": (self.odom.x, self.odom.y, self.odom.theta), "board": (bo.x, bo.y, bo.theta)}
        if self.cal_odom is not None and self.live is not None:
            end["calibrated"] = self.cal_odom.pose
            time.sleep(2.5 / self.live.config.frequency)      # the filter's last periods
            e = self.live.estimate
            if e is not None:
                end["fused"] = (float(e.state[0]), float(e.state[1]), float(e.state[5]))
                tr.fused.append(end["fused"][:2])
            self._stop_filter()
        if self.vb is not None:
            t = self.vb.truth()
            end["truth"] = (t["x"], t["y"], t["theta"])
            tr.truth.append((t["x"], t["y"]))
        tr.board.append((bo.x, bo.y))
        tr.end = end
        return end


def square(runner: PathRunner, side: float = 1.0, v: float = 0.3, w: float = 1.5, clockwise: bool = False) -> Track:
    sign = -1.0 if clockwise else 1.0
    tr = Track(f"square {side:g} m {'CW' if clockwise else 'CCW'}",
               commanded=[(0, 0), (side, 0), (side, sign * side), (0, sign * side), (0, 0)])
    runner.start(tr)
    for k in range(4):
        runner.straight(side, v, heading_rad=wrap_pi(sign * k * math.pi / 2))
        runner.turn_to(wrap_pi(sign * (k + 1) * math.pi / 2), w)
    runner.finish()
    return tr


def calibrate_gyro(runner: PathRunner, turns: int = 2, rate_rad_s: float = 1.5):
    """The board's gyro scale on the virtual board: whole turns in place each way as board moves, the ground truth
    as the mark on the floor (what `viperdrive calibrate gyro --measured` is given on a real one); the scale is set
    live (not saved). The simulated MPU-6050 reads 0.3 % fast: a square's four corners on it end a degree off."""
    from .tuning.calibrate import GyroRun, gyro_scale
    b, vb = runner.board, runner.vb
    assert vb is not None, "the ground truth is the mark: a virtual board"
    old = {k: b.get_param(k) for k in ("gyro_scale_ccw", "gyro_scale_cw")}
    runs = []
    for direction in (1, -1):
        runner.start(None)
        runner.wait_gyro()
        heading = [b.odometry().theta, vb.truth()["theta"]]
        turned = [0.0, 0.0]

        def follow(heading: list = heading, turned: list = turned) -> None:
            for i, th in enumerate((b.odometry().theta, vb.truth()["theta"])):
                turned[i] += math.remainder(th - heading[i], 2.0 * math.pi)
                heading[i] = th

        runner.watch_moves([b.move_turn(direction * 2.0 * math.pi * turns, rate_rad_s)], every=(5, follow))
        runner.settle(0.3)
        follow()
        runs.append(GyroRun(turned[0], old["gyro_scale_ccw" if direction > 0 else "gyro_scale_cw"], turned[1]))
    res = gyro_scale(runs, old["gyro_scale_ccw"], old["gyro_scale_cw"])
    if res.ok:
        for k in old:
            b.set_param(k, res.scale)
    return res


def square_moves(runner: PathRunner, side_m: float = 1.0, speed_m_s: float = 0.3,
                 rate_rad_s: float = 1.5) -> Track:
    """The same square as board moves: four lines and four turns queued at once, planned, chained and closed by
    the board on its gyro heading; the host only watches."""
    tr = Track(f"square {side_m:g} m CCW, board moves",
               commanded=[(0, 0), (side_m, 0), (side_m, side_m), (0, side_m), (0, 0)], board_moves=True)
    runner.start(tr)
    runner.wait_gyro()
    moves = []
    for _ in range(4):
        moves += [runner.board.move_straight(side_m, speed_m_s), runner.board.move_turn(math.pi / 2, rate_rad_s)]
    runner.watch_moves(moves)
    runner.settle(0.3)
    runner.finish()
    return tr


def figure8_moves(runner: PathRunner, radius_m: float = 0.35, speed_m_s: float = 0.25) -> Track:
    """The same figure-8 as two board arcs, left then right, chained by the board without a stop."""
    tr = Track(f"figure-8 r={radius_m} m, board moves", board_moves=True)
    tr.commanded = figure8_path(radius_m)
    runner.start(tr)
    runner.wait_gyro()
    runner.watch_moves([runner.board.move_arc(radius_m, 2.0 * math.pi, speed_m_s),
                        runner.board.move_arc(radius_m, -2.0 * math.pi, speed_m_s)])
    runner.settle(0.3)
    runner.finish()
    return tr


def figure8_path(radius_m: float) -> list[tuple[float, float]]:
    """The ideal figure-8: 400 chords per circle (chord error < 0.01 mm), CCW then CW from the origin."""
    n, r = 400, radius_m
    return [(r * math.sin(2.0 * math.pi * k / n), r * (1 - math.cos(2.0 * math.pi * k / n))) if k <= n else
            (r * math.sin(2.0 * math.pi * k / n), -r * (1 - math.cos(2.0 * math.pi * k / n)))
            for k in range(2 * n + 1)]


def calibrate_umbmark(runner: PathRunner, side: float = 0.5, runs: int = 3):
    """UMBmark on the virtual board: runs clockwise and counter-clockwise squares, the ground truth as the tape
    measure (what `viperdrive calibrate umbmark --measured` is given on a real floor) -> (result, corrected
    RobotConfig or None when the result is refused)."""
    from .tuning.calibrate import umbmark
    cw: list[tuple[float, float]] = []
    ccw: list[tuple[float, float]] = []
    for i in range(2 * runs):
        clockwise = i % 2 == 0
        tr = square(runner, side=side, clockwise=clockwise)
        ox, oy, _ = tr.end["host"]
        tx, ty, _ = tr.end["truth"]
        (cw if clockwise else ccw).append((tx - ox, ty - oy))
    cfg = runner.config
    res = umbmark(cw, ccw, side, cfg.effective_separation)
    if not res.ok:
        return res, None
    return res, cfg.with_values(left_wheel_radius_multiplier=cfg.left_wheel_radius_multiplier * res.left_factor,
                                right_wheel_radius_multiplier=cfg.right_wheel_radius_multiplier * res.right_factor,
                                wheel_separation=res.wheelbase / cfg.wheel_separation_multiplier)


def figure8(runner: PathRunner, radius_m: float = 0.35, v: float = 0.25) -> Track:
    """Two circles, CCW then CW, each closed on the host odometry's heading (turn through 2 pi); the wheel loops
    close the speeds, the heading closes each circle."""
    tr = Track(f"figure-8 r={radius_m} m")
    w = v / radius_m
    tr.commanded = figure8_path(radius_m)
    runner.start(tr)
    runner.arc(v, w, 2.0 * math.pi, stop=False)

    def crossed() -> None:
        # where the turn rate changed sign: the figure-8's crossing (ground truth where there is one)
        tr.crossing = (runner.odom.x, runner.odom.y, runner.odom.theta)
        if runner.vb is not None:
            t = runner.vb.truth()
            tr.crossing = (t["x"], t["y"], t["theta"])

    runner.arc(v, -w, -2.0 * math.pi, stop=True, on_reversed=crossed)
    runner.settle(0.6)
    runner.finish()
    return tr


def cross_track(points, path) -> float:
    """Largest distance (m) from any of points to the polyline path (the commanded path)."""
    worst = 0.0
    segs = list(zip(path[:-1], path[1:], strict=True))
    for px, py in points:
        best = math.inf
        for (ax, ay), (bx, by) in segs:
            dx, dy = bx - ax, by - ay
            ll = dx * dx + dy * dy
            t = 0.0 if ll == 0.0 else min(1.0, max(0.0, ((px - ax) * dx + (py - ay) * dy) / ll))
            d = math.hypot(px - ax - t * dx, py - ay - t * dy)
            if d < best:
                best = d
        worst = max(worst, best)
    return worst


def _err(a, b) -> str:
    return f"{math.hypot(a[0] - b[0], a[1] - b[1]) * 1000:6.1f} mm"


def table(tracks: list[Track], board: Board, vb, runner: PathRunner) -> str:
    rows = []
    fmt = "{:<45} {:>22} {:>22} {:>22} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}"
    rows.append(fmt.format("path (who closes it)", "truth end (x,y,th)", "board odom end", "host odom end",
                           "truth-cmd", "th-cmd", "board-tru", "host-tru", "calib-tru", "ekf+gyro", "xtrk truth",
                           "xtrk host"))
    for tr in tracks:
        e = tr.end
        cmd = tr.commanded[-1]
        tru = e.get("truth", (float("nan"),) * 3)

        def p(t):
            return f"({t[0]:+.3f},{t[1]:+.3f},{math.degrees(t[2]):+5.1f}°)"

        # the largest distance of the driven path (truth, and the host's own estimate of it) from the commanded
        xt_truth = f"{cross_track(tr.truth, tr.commanded) * 1000:6.1f} mm" if tr.truth else "n/a"
        xt_host = f"{cross_track(tr.host, tr.commanded) * 1000:6.1f} mm"
        cal = _err(e["calibrated"], tru) if "calibrated" in e else "n/a"
        fused = _err(e["fused"], tru) if "fused" in e else "n/a"
        who = "board moves, gyro heading" if tr.board_moves else "host, odometry"
        rows.append(fmt.format(f"{tr.name.split(',')[0]} ({who})", p(tru), p(e["board"]), p(e["host"]),
                               _err(tru, cmd), f"{math.degrees(wrap_pi(tru[2])):+6.2f}°", _err(e["board"], tru),
                               _err(e["host"], tru), cal, fused, xt_truth, xt_host))
    for tr in tracks:
        if tr.crossing is not None:
            x, y, th = tr.crossing
            rows.append(f"{tr.name}: circles changed at ({x:+.3f}, {y:+.3f}) m, heading {math.degrees(th):+.1f}° "
                        f"(commanded: the origin, 0°)")
    assert board.link is not None and board.info is not None     # a configured board
    ls = board.link.stats()
    rows.append("")
    rows.append(f"link: {ls['frames_tx']} frames sent, {ls['frames_rx']} received, crc errors {ls['crc_errors']}, "
                f"timeouts {ls['timeouts']}, host misses {board.total_misses}, round trip p50 {ls['rtt_p50_ms']} ms "
                f"p99 {ls['rtt_p99_ms']} ms at {board.baud} baud")
    d = board.diag()
    rows.append(f"board loop: period {d['period_min_us']}..{d['period_max_us']} us (nominal "
                f"{1e6 / board.info.control_hz:.0f}), exec max {d['exec_max_us']} us, overruns {d['overruns']}, "
                f"frames ok {d['frames_ok']}, crc errors {d['crc_errors']}")
    if vb is not None:
        s = vb.stats()
        rows.append(f"virtual board thread: late avg {s['late_avg_us']} us, max {s['late_max_us']} us, "
                    f"overruns {s['overruns']}, plant step max {s['plant_max_us']} us")
    rows.append(f"host loop ({RATE_HZ:.0f} Hz): {runner.cycles} cycles, late max {runner.late_max * 1e3:.1f} ms")
    return "\n".join(rows)


def plot(pairs: list[tuple[Track, Track | None]], path: Path) -> None:
    """One panel per path: the host-closed run with its odometries and filter, and beside it the same path as
    board moves (its ground truth, thick, and the board's odometry)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(pairs), figsize=(7 * len(pairs), 7))
    for ax, (tr, moves) in zip(axes if len(pairs) > 1 else [axes], pairs, strict=False):
        lines: list[tuple[list, str, str, float]] = [
            (tr.commanded, "k--", "commanded", 1.0), (tr.truth, "g-", "host-closed: ground truth", 1.0),
            (tr.board, "b.", "host-closed: board odometry", 1.0), (tr.host, "r-", "host odometry (raw)", 1.0),
            (tr.calibrated, "-", "odometry after UMBmark", 1.0),
            (tr.fused, "-", "live EKF: calibrated odometry + gyro", 1.0)]
        if moves is not None:
            lines += [(moves.truth, "m-", "board moves (gyro heading): ground truth", 2.5),
                      (moves.board, "c.", "board moves: board odometry", 1.0)]
        for pts, style, label, width in lines:
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, style, label=label, linewidth=width, markersize=3)
        ax.set_title(tr.name + (" and as board moves" if moves is not None else ""))
        ax.set_aspect("equal")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m viperdrive.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--out", default="out/demo_paths.png")
    args = ap.parse_args(argv)
    from .rigs.virtual import VirtualBoard
    t0 = time.monotonic()
    config = RobotConfig()
    with VirtualBoard(baud=args.baud) as vb, Board(vb.url, baud=args.baud, config=config) as board:
        assert board.info is not None
        print(f"virtual board at {vb.url} ({board.info.firmware}, {board.info.control_hz} Hz, "
              f"{board.info.counts_per_rev} counts/rev), {args.baud} baud", flush=True)
        runner = PathRunner(board, config, vb)
        print("calibrating: UMBmark, 3 + 3 squares of 0.5 m (ground truth as the tape measure)...", flush=True)
        res, calibrated = calibrate_umbmark(runner)
        print(res.summary())
        print("calibrating the board's gyro: 2 + 2 turns in place as board moves (ground truth as the mark)...",
              flush=True)
        print(calibrate_gyro(runner).summary())
        if calibrated is not None:
            runner.calibrated_config = calibrated
            print(f"corrected: left x{calibrated.left_wheel_radius_multiplier:.5f} right "
                  f"x{calibrated.right_wheel_radius_multiplier:.5f} wheelbase {calibrated.effective_separation:.5f} m "
                  f"(nominal {config.effective_separation:.5f} m)", flush=True)
        pairs: list[tuple[Track, Track | None]] = []
        print("driving a 1 m square (0.3 m/s, ramps 1 m/s^2), closed by the host on its odometry, then as board "
              "moves...", flush=True)
        pairs.append((square(runner), square_moves(runner)))
        print("driving a figure-8 (r = 0.35 m, 0.25 m/s), closed by the host, then as two board arcs...", flush=True)
        pairs.append((figure8(runner), figure8_moves(runner)))
        board.deactivate()
        print()
        print(table([t for pair in pairs for t in pair if t is not None], board, vb, runner))
    out = Path(args.out)
    plot(pairs, out)
    print(f"\npaths plotted to {out}; {time.monotonic() - t0:.1f} s in all")
    return 0


def run(argv: list[str] | None = None) -> int:
    """main() with what can go wrong said in one line (a move that did not arrive, a lost link, no MicroPython)."""
    try:
        return main(argv)
    except UserError as e:
        print(f"demo: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(run())
