# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive monitor`: a live view of the board without driving it: per-wheel setpoint, measured speed, PWM output
and integrator (the control telemetry stream), status bits, the board's own pose (GET_ODOM), its sensors (gyro z and
yaw rate, battery volts, e-stop, IMU state: the SENSORS_DATA stream), its loop timing and jitter, and the link
counters of both ends. --json prints the same summary as one JSON object per line, four times a second; --foxglove
serves the same data live to Foxglove Studio over a local WebSocket (foxglove-sdk); --duration ends it on its own
(scripts, tests).

Keys (on a terminal): q quit, c clear a latched FAULT, space pause the display."""
from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time

from .. import extras
from ..board.livestate import LiveState
from ..board.recovery import LINK, Recovery
from ..errors import LinkError, UserError
from .boardopen import open_board
from .livefilter import ODOM_TOPIC, fused_lines, load_live_filter_config, start_live_filter
from .options import add_board_options, host_port, int_range, seconds
from .output import warn
from .signals import stop_signals_as_interrupt
from .terminal import LiveView, TerminalKeys

HELP = ("live view of setpoints, speeds, PWM, pose, sensors, status bits, link statistics and loop jitter "
        "(--foxglove, --json)")

WHEEL_SCHEMA = {
    "type": "object", "title": "viperdrive wheel telemetry (SI units, duty 1.0 = full PWM)",
    "properties": {k: {"type": "number"} for k in (
        "board_time_us", "setpoint_left", "measured_left", "output_left", "integrator_left",
        "setpoint_right", "measured_right", "output_right", "integrator_right", "status")},
}
STATUS_SCHEMA = {
    "type": "object", "title": "viperdrive board status, loop and link",
    "properties": {"status": {"type": "array", "items": {"type": "string"}}, "fault": {"type": "string"},
                   "x": {"type": "number"}, "y": {"type": "number"}, "theta": {"type": "number"},
                   "period_min_us": {"type": "number"}, "period_max_us": {"type": "number"},
                   "jitter_us": {"type": "number"}, "exec_max_us": {"type": "number"},
                   "overruns": {"type": "number"}, "crc_errors": {"type": "number"},
                   "telemetry_hz": {"type": "number"}, "telemetry_lost": {"type": "number"},
                   "rtt_p50_ms": {"type": "number"},
                   "gyro_z_rad_s": {"type": "number"}, "yaw_rate_rad_s": {"type": "number"},
                   "gyro_bias_z_rad_s": {"type": "number"},
                   "battery_v": {"type": "number"}, "battery_low": {"type": "boolean"},
                   "estop_open": {"type": "boolean"}, "imu_state": {"type": "string"},
                   "sensor_hz": {"type": "number"}},
}


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hz", type=int_range(1, 1000, "Hz"), default=50, metavar="HZ",
                        help="telemetry records per second from the board (default %(default)s)")
    parser.add_argument("--sensors", type=int_range(0, 200, "Hz"), default=10, metavar="HZ",
                        help="sensor records per second from the board (default %(default)s; 0: none)")
    parser.add_argument("--duration", type=seconds(), default=None, metavar="S", help="stop after S seconds")
    parser.add_argument("--foxglove", nargs="?", const="127.0.0.1:8765", default=None, metavar="HOST:PORT",
                        type=host_port,
                        help="serve the data to Foxglove on this WebSocket (default 127.0.0.1:8765; port 0: any)")
    parser.add_argument("--ekf", metavar="EKF.yaml", default=None,
                        help="run the EKF live on the board's odometry and show it beside the raw pose "
                             "(robot_localization's file; a sensor on topic odom reads the board's odometry)")
    parser.add_argument("--ekf-node", default=None, metavar="NAME", help="the node in --ekf to use")
    add_board_options(parser, data_output=True)


EKF_ODOM_HZ = 10.0      # with --ekf: the board's odometry (GET_ODOM) this often, the filter's odom input
DEFAULT_DIAGONAL = 1e-3  # the odom input's covariance diagonal unless the robot file's ros2 section gives one


class FoxgloveOut:
    """The live data as Foxglove channels: /viperdrive/wheels and /viperdrive/status (JSON), /tf (odom->base_link)."""

    def __init__(self, spec: str, odom_frame: str, base_frame: str):
        extras.require("foxglove", "monitor --foxglove")
        import foxglove
        from foxglove.channels import FrameTransformChannel
        host, _, port = spec.rpartition(":")
        try:
            port_n = int(port)
        except ValueError:
            raise UserError(f"--foxglove {spec!r}: write HOST:PORT, e.g. 127.0.0.1:8765", exit_code=2) from None
        try:
            self.server = foxglove.start_server(name="viperdrive monitor", host=host or "127.0.0.1", port=port_n)
        except Exception as e:  # the SDK raises its own error types for a busy or bad address
            raise UserError(f"cannot serve Foxglove on {spec}: {e}", exit_code=3) from None
        self.wheels = foxglove.Channel("/viperdrive/wheels", schema=WHEEL_SCHEMA)
        self.status = foxglove.Channel("/viperdrive/status", schema=STATUS_SCHEMA)
        self.tf = FrameTransformChannel("/tf")
        self.odom_frame = odom_frame
        self.base_frame = base_frame
        self.url = f"ws://{host or '127.0.0.1'}:{self.server.port}"

    def wheel(self, rec: dict) -> None:
        self.wheels.log(rec)

    def state(self, d: dict) -> None:
        from foxglove.messages import FrameTransform, Quaternion, Vector3
        self.status.log(d)
        th = d["theta"]
        self.tf.log(FrameTransform(parent_frame_id=self.odom_frame, child_frame_id=self.base_frame,
                                   translation=Vector3(x=d["x"], y=d["y"], z=0.0),
                                   rotation=Quaternion(x=0.0, y=0.0, z=math.sin(th / 2), w=math.cos(th / 2))))

    def close(self) -> None:
        self.server.stop()


def view_lines(m: LiveState, d: dict, url: str, paused: bool, fox: str | None) -> list[str]:
    t = m.last or {k: 0.0 for k in WHEEL_SCHEMA["properties"]}
    diag = m.diag
    host = diag.get("host_link", {})
    status = " ".join(d["status"]) or "disabled"
    lines = [
        f"viperdrive monitor  {url}{'  [paused]' if paused else ''}   (q quit, c clear fault, space pause)",
        f"status    {status}   fault: {d['fault']}",
        "wheel       setpoint     measured        PWM   integrator",
    ]
    for side in ("left", "right"):
        lines.append(f"{side:<8}{t[f'setpoint_{side}']:+9.2f}    {t[f'measured_{side}']:+9.2f} rad/s "
                     f"{100 * t[f'output_{side}']:+6.1f} %  {100 * t[f'integrator_{side}']:+6.1f} %")
    lines += [
        f"pose      x {d['x']:+.3f} m  y {d['y']:+.3f} m  heading {math.degrees(d['theta']):+.1f} deg (board odometry)",
        f"loop      period {d['period_min_us']}..{d['period_max_us']} us (jitter {d['jitter_us']:.0f} us), step "
        f"{diag.get('exec_avg_us', 0)} us avg / {d['exec_max_us']} us max, overruns {d['overruns']}",
        f"link      board: frames {diag.get('frames_ok', 0)}, CRC {d['crc_errors']}, NACK {diag.get('nacks', 0)}, "
        f"deadman trips {diag.get('deadman_trips', 0)} | host: rx {host.get('frames_rx', 0)} tx "
        f"{host.get('frames_tx', 0)}, rtt {d['rtt_p50_ms']:.1f} ms",
        f"telemetry {d['telemetry_hz']:.0f} records/s, {m.received} received, {m.lost} lost",
        sensor_line(d),
    ]
    if m.live is not None:
        lines += fused_lines(m.live, m.pose)
    if fox:
        lines.append(f"foxglove  {fox} (Foxglove: Open connection -> Foxglove WebSocket)")
    return lines


def _odom_input(board, m: LiveState):
    """The board's odometry (GET_ODOM pose, twist from the telemetry's measured wheel speeds) as the filter's odom
    message. Its covariances are the robot file's ros2 diagonals, else DEFAULT_DIAGONAL (the monitor does not
    propagate them: it does not read the encoders)."""
    from ..motion.kinematics import DifferentialDriveKinematics
    from ..ros2 import msgs
    cfg = board.config
    t = m.last or {}
    v, w = DifferentialDriveKinematics.from_config(cfg).to_twist(t.get("measured_left", 0.0),
                                                                 t.get("measured_right", 0.0))

    def cov(diag):
        out = [0.0] * 36
        for i, d in enumerate(diag or (DEFAULT_DIAGONAL,) * 6):
            out[i * 7] = float(d)
        return out
    stamp = msgs.time_from_s(time.time())
    return msgs.odometry(stamp, cfg.ros2.odom_frame_id, cfg.ros2.base_frame_id, m.pose, (v, w),
                         cov(cfg.ros2.pose_covariance_diagonal), cov(cfg.ros2.twist_covariance_diagonal))


def sensor_line(d: dict) -> str:
    if d["yaw_rate_rad_s"] is None:
        return f"sensors   no record yet (IMU {d['imu_state']})"
    bias = d["gyro_bias_z_rad_s"]
    battery = "no input" if d["battery_v"] is None else f"{d['battery_v']:.2f} V{' LOW' if d['battery_low'] else ''}"
    estop = {None: "no input", True: "OPEN", False: "closed"}[d["estop_open"]]
    return (f"sensors   yaw rate {d['yaw_rate_rad_s']:+.4f} rad/s (gyro z {d['gyro_z_rad_s']:+.4f}, bias "
            + (f"{bias:+.5f})" if bias is not None else "not estimated)")
            + f"  battery {battery}  e-stop {estop}  IMU {d['imu_state']} ({d['imu_errors']} errors)"
            + f"  {d['sensor_hz']:.0f} records/s")


def run(args) -> int:
    if args.foxglove is not None:
        extras.require("foxglove", "monitor --foxglove")     # before the port is opened
    ekf = load_live_filter_config(args)                         # read and checked before the port is opened
    keys = TerminalKeys()
    fox = None
    with stop_signals_as_interrupt(), open_board(args) as board:
        granted = board.telemetry(min(args.hz, board.info.control_hz))
        if args.sensors:
            board.sensors(args.sensors)
        m = LiveState(board.counts_per_rev, board.info.control_hz)
        live_stop = live_thread = None
        next_odom = board.clock.now()
        if ekf is not None:
            m.live, live_stop, live_thread = start_live_filter(ekf, None, lambda text: warn(args, text))
        if args.foxglove:
            cfg = board.config
            fox = FoxgloveOut(args.foxglove, cfg.ros2.odom_frame_id, cfg.ros2.base_frame_id)
            print(f"foxglove: serving on {fox.url}", flush=True)
        view = LiveView()
        paused = False
        # the board's time (a real board's is the host's): rates per second and --duration count what the board
        # did, not how long a busy machine took to show it
        clock = board.clock
        t0 = clock.now()
        next_slow = t0
        # a monitor only watches: a lost link is waited out and the streams asked for again (board.recovery's
        # schedule and log lines, the board left as it is found)
        recovery = Recovery(board, "auto", log=_warn_logger(args), activate=False)
        try:
            with keys:
                while True:
                    now = clock.now()
                    if recovery.outage is not None:
                        if recovery.poll() is not None:
                            granted = board.telemetry(min(args.hz, board.info.control_hz))
                            if args.sensors:
                                board.sensors(args.sensors)
                        elif now >= next_slow:
                            next_slow = now + 0.25
                            _show_down(args, view, recovery, board.link.url if board.link else "?")
                    else:
                        try:
                            next_odom, next_slow = _watch(args, board, m, fox, view, paused, now, next_odom,
                                                          next_slow)
                        except LinkError as e:
                            recovery.lost(LINK, str(e))
                    for key in keys.read() if keys.tty else ():
                        if key in ("q", "Q"):
                            return _done(m, granted, args)
                        if key == " ":
                            paused = not paused
                            # redraw at once: while paused nothing else is drawn, so this frame says so
                            if recovery.outage is None:
                                view.show(view_lines(m, m.summary(), board.link.url, paused,
                                                     fox.url if fox else None))
                        if key == "c" and recovery.outage is None:
                            board.clear_fault()
                    if args.duration is not None and now - t0 >= args.duration:
                        if live_stop is not None and live_thread is not None:
                            # the filter works off what it was sent first: the end line shows its last estimate
                            # (a filter process that a busy machine started late may have none before that)
                            live_stop.set()
                            live_thread.join(timeout=120.0)
                        return _done(m, granted, args)
                    time.sleep(0.01)
        finally:
            if live_stop is not None and live_thread is not None:
                live_stop.set()
                live_thread.join(timeout=5.0)       # the filter process: its summary, then its end
            for stop in (board.telemetry, board.sensors):
                try:
                    stop(0)
                except UserError:
                    pass
            if fox is not None:
                fox.close()


def _watch(args, board, m, fox, view, paused, now, next_odom, next_slow):
    """One pass of the view: the streams, the filter's odometry, a few times a second pose and diagnostics."""
    for rec in board.telemetry_frames():
        si = m.add(rec, now)
        if fox is not None:
            fox.wheel(si)
    if m.live is not None and now >= next_odom:
        next_odom = now + 1.0 / EKF_ODOM_HZ
        bo = board.odometry()
        m.pose = (bo.x, bo.y, bo.theta)
        m.live.feed(ODOM_TOPIC, _odom_input(board, m))
    if args.sensors:
        m.add_sensors(board.sensor_readings(), now)
    if now >= next_slow:
        # pose and diagnostics are request/response: a few times a second is plenty
        next_slow = now + 0.25
        if m.live is None:
            bo = board.odometry()
            m.pose = (bo.x, bo.y, bo.theta)
        m.diag = board.diag()
        m.update_rate(now)
        d = m.summary()
        if fox is not None:
            fox.state(d)
        if args.json:
            print(json.dumps(d), flush=True)
        elif not paused:
            view.show(view_lines(m, d, board.link.url, paused, fox.url if fox else None))
    return next_odom, next_slow


def _show_down(args, view, recovery, url: str) -> None:
    """While the board is away: one line in the view, or a JSON object with the outage."""
    st = recovery.status()
    if args.json:
        print(json.dumps({"board_down": st}), flush=True)
        return
    view.show([f"viperdrive monitor  {url}   (q quit)",
               f"BOARD DOWN for {st['down_for_s']:.1f} s: {st['down_reason']}",
               f"retrying (attempt {st['attempts'] + 1}, next in {st.get('next_try_in_s', 0):.1f} s)"])


def _warn_logger(args) -> logging.Logger:
    """The recovery's log lines as the command's warnings on stderr."""
    class ToWarn(logging.Handler):
        def emit(self, record):
            warn(args, record.getMessage())

    log = logging.getLogger("viperdrive.monitor.recovery")
    log.propagate = False
    log.handlers[:] = [ToWarn()]
    log.setLevel(logging.INFO)
    return log


def _done(m: LiveState, granted: int, args) -> int:
    # with --json stdout holds only the JSON lines
    out = sys.stderr if args.json else sys.stdout
    print(f"monitor: {m.received} telemetry records at {granted}/s requested, {m.lost} lost, {m.sensor_records} "
          f"sensor records", file=out)
    e = m.live.estimate if m.live is not None else None
    if e is not None:
        x, y, th = m.pose
        print(f"monitor: raw pose x {x:+.4f} m  y {y:+.4f} m  heading {math.degrees(th):+.2f} deg; fused (--ekf) x "
              f"{float(e.state[0]):+.4f} m  y {float(e.state[1]):+.4f} m  heading "
              f"{math.degrees(float(e.state[5])):+.2f} deg", file=out)
    return 0
