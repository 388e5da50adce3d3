# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The bridge's /diagnostics (diagnostic_msgs/DiagnosticArray): what a person reading `ros2 topic echo /diagnostics`
or rqt_robot_monitor needs to know about the board, its sensors, the bridge's loop, cmd_vel and the live filter.

One status per concern, named "viperdrive[ NS]: <concern>" (/diagnostics is one topic for the whole graph):
board (link counters, board faults, the outage and the recovery plan), e-stop / battery / imu (the newest sensor
record), bridge loop (overruns, lateness, what was published and dropped), cmd_vel (the reader, the drive
controller), ekf (per source its state, dead reckoning), and at shutdown bridge (what the last message may claim
about the board: disabled only when the board acknowledged it).
"""
import math

from viperdrive.shared import protocol

from ..board.recovery import FAULT
from ..messages.sensors import sensor_statuses
from ..stats import percentile
from . import msgs


def bridge_diagnostics(bridge, final: str | None = None) -> msgs.DiagnosticArray:
    """The DiagnosticArray of a viperdrive.ros2.bridge.Ros2Bridge (read, never changed): link, board, sensors, loop
    timing, cmd_vel, filter; `final`, the shutdown's reason, adds the bridge's own status."""
    hw = str(getattr(bridge.board, "port", "") or "")
    statuses = []
    # /diagnostics is one topic for the whole graph: the namespace tells two robots' statuses apart
    who = "viperdrive" if bridge.node.namespace == "/" else f"viperdrive {bridge.node.namespace}"

    # link + board
    diag = bridge.board_diag
    state = bridge.last_state
    status_bits = getattr(state, "status", None)
    level = msgs.DIAG_OK
    message = "ok"
    if diag.get("diag_error"):
        level, message = msgs.DIAG_WARN, "board diagnostics unavailable"
    if status_bits is not None:
        names = protocol.status_names(status_bits)
        if status_bits & protocol.ST_FAULT:
            level, message = msgs.DIAG_ERROR, "FAULT latched: " + str(diag.get("fault", "see values"))
        elif status_bits & protocol.ST_DEADMAN:
            level, message = max(level, msgs.DIAG_WARN), "deadman: the board stopped the wheels"
        elif not status_bits & protocol.ST_ENABLED and bridge.activated and final is None:
            level, message = max(level, msgs.DIAG_WARN), "outputs disabled"
    else:
        names = []
    down = bridge.board_down
    outage = bridge.recovery.outage
    if outage is not None:
        level = msgs.DIAG_ERROR
        cause = f"board {down.cause}" if down is not None else "board down"
        if bridge.recovery.policy == "never":
            plan = "stop the bridge, fix the cause, restart"
        elif outage.kind == FAULT:
            plan = "waiting for ~/clear_fault (a latched fault is not cleared by the bridge on its own)"
        elif outage.recoverable:
            plan = f"recovering (attempt {outage.attempts + 1})"
        else:
            plan = "not recovered: " + outage.reason
        what = f"{cause}: outputs off, not commanding ({plan})"
        message = f"{message}; {what}" if message.startswith("FAULT latched") else what
    values = [msgs.KeyValue("status", " ".join(names) if names else "-")]
    if down is not None:
        values += [msgs.KeyValue("board_down", str(down)),
                   msgs.KeyValue("encoders_restarted", str(down.restarted))]
    if outage is not None:
        values.append(msgs.KeyValue("ignored_commands", str(bridge.ignored_commands)))
    values += [msgs.KeyValue("recovery." + k, fmt(v)) for k, v in bridge.recovery.status().items()]
    values.append(msgs.KeyValue("recovery.clear_fault_calls", str(bridge.clear_fault.calls)))
    values += [msgs.KeyValue(k, fmt(v)) for k, v in flatten(diag)]
    if bridge.board_diag_at is not None:
        values.append(msgs.KeyValue("board_diag_age_s", fmt(bridge.clock.now() - bridge.board_diag_at)))
    try:    # host-side counters: live every time, no serial traffic
        values += [msgs.KeyValue("host." + k, fmt(v)) for k, v in flatten(bridge.board.stats())]
    except Exception as e:
        values.append(msgs.KeyValue("host.stats_error", f"{type(e).__name__}: {e}"))
    if state is not None:
        values.append(msgs.KeyValue("fresh", str(bool(state.fresh))))
    statuses.append(msgs.DiagnosticStatus(level=level, name=f"{who}: board", message=message,
                                          hardware_id=hw, values=values))

    # e-stop, battery, IMU (the newest sensor record; STATE's e-stop bit when it is newer)
    if bridge.sensors.hz:
        latest = bridge.sensors.latest
        estop_now = None
        if state is not None and (latest is None or state.sampled > latest.sampled):
            estop_now = state.estop
        fault = diag.get("fault_code", 0) if status_bits is not None and status_bits & protocol.ST_FAULT else 0
        warn_v, cutoff_v = bridge.sensors.battery_thresholds
        for name, lvl, text, kv in sensor_statuses(latest, fault, warn_v, cutoff_v,
                                                    imu_errors=diag.get("imu_errors"), estop_now=estop_now):
            if name == "imu":
                kv = kv + [("records", str(bridge.sensors.records)), ("rate_hz", str(bridge.sensors.rate)),
                           ("frame_id", bridge.topics.imu_frame)]
            statuses.append(msgs.DiagnosticStatus(level=lvl, name=f"{who}: {name}", message=text,
                                                  hardware_id=hw, values=[msgs.KeyValue(k, v) for k, v in kv]))

    # loop timing (viperdrive.motion.loop.FixedRateLoop statistics: lateness = wake-up jitter, exec = tick body)
    t = bridge.drive_loop.loop.stats() if bridge.drive_loop is not None else {}
    overruns = t.get("overruns", 0)
    statuses.append(msgs.DiagnosticStatus(
        level=msgs.DIAG_WARN if overruns else msgs.DIAG_OK, name=f"{who}: bridge loop",
        message=f"{overruns} overruns" if overruns else "on time", hardware_id=hw,
        values=[msgs.KeyValue("update_rate_hz", fmt(1.0 / bridge.period)),
                msgs.KeyValue("publish_rate_hz", fmt(1.0 / bridge.publish_period))]
        + [msgs.KeyValue(k, fmt(v)) for k, v in t.items() if k != "rate_hz"]
        + [msgs.KeyValue("dropped_writes", str(bridge.topics.dropped_writes))]
        + [msgs.KeyValue(f"published_{k}", str(v)) for k, v in bridge.topics.published.items()]))

    # cmd_vel + drive controller
    c = bridge.cmd.status() if bridge.cmd is not None else {}
    d = bridge.drive.status()
    cmd_level = msgs.DIAG_OK
    cmd_msg = f"reading {c.get('type')}"
    if c.get("matched_publishers", 0) == 0:
        cmd_level, cmd_msg = msgs.DIAG_WARN, "no publisher matched"
    wrong = [t for t in c.get("offered_types", []) if t != c.get("type")]
    if wrong and c.get("type") != "(none yet)":
        cmd_level, cmd_msg = msgs.DIAG_WARN, f"publisher of {', '.join(wrong)} ignored (type mismatch)"
    if c.get("refused_samples"):
        cmd_level = msgs.DIAG_WARN
        cmd_msg = f"{c['refused_samples']} commands refused (not in --allow-publisher); {cmd_msg}"
    statuses.append(msgs.DiagnosticStatus(
        level=cmd_level, name=f"{who}: cmd_vel", message=cmd_msg, hardware_id=hw,
        values=[msgs.KeyValue(str(k), fmt(v)) for k, v in c.items()]
        + [msgs.KeyValue(str(k), fmt(v)) for k, v in d.items()]
        + [msgs.KeyValue("wheel_command_rad_s", fmt(bridge.last_wheels)),
           msgs.KeyValue("commands_in", str(bridge.commands_in)),
           msgs.KeyValue("stamped_age_p50_ms", fmt((percentile(sorted(bridge.command_age), 0.5) or 0.0) * 1e3)),
           msgs.KeyValue("stamped_age_max_ms", fmt(max(bridge.command_age, default=0.0) * 1e3))]))

    if bridge.live is not None:
        statuses.append(filter_status(bridge, who, hw))

    if final is not None:
        problems = bridge.shutdown_problems
        failed = bridge.stop_reason.startswith(("error", "internal error"))
        level = msgs.DIAG_ERROR if problems or failed or outage is not None else msgs.DIAG_OK
        values = [msgs.KeyValue("board", board_final_state(problems))]
        values += [msgs.KeyValue(f"problem_{i}", p) for i, p in enumerate(problems, 1)]
        if down is not None:
            values.append(msgs.KeyValue("board_down", str(down)))
        statuses.append(msgs.DiagnosticStatus(level=level, name=f"{who}: bridge", message=f"shut down: {final}",
                                              hardware_id=hw, values=values))
    return msgs.DiagnosticArray(header=msgs.Header(stamp=bridge.stamp(bridge.clock.now())), status=statuses)


def filter_status(bridge, who: str, hw: str) -> msgs.DiagnosticStatus:
    """The live filter's account: per source its state and why, dead reckoning and its horizon, the events."""
    values, level, message = filter_diagnostics(bridge.live)
    error = bridge.filter.error if bridge.filter is not None else None
    if error is not None:
        level, message = msgs.DIAG_ERROR, f"filter stopped: {error}"
    return msgs.DiagnosticStatus(level=level, name=f"{who}: ekf", message=message, hardware_id=hw,
                                 values=[msgs.KeyValue(k, v) for k, v in values])


def filter_diagnostics(live) -> tuple[list, int, str]:
    """([(key, value)], level, message) of a viperdrive.estimation.live.LiveFilter, for /diagnostics (and the CLI)."""
    values = []
    level, message = msgs.DIAG_OK, "fusing"
    est = live.estimate
    if est is None:
        level, message = msgs.DIAG_WARN, "waiting for a first measurement"
    for src in list(live.sources.values()):
        values.append((f"source.{src.name}", f"{src.state}: {src.reason}"))
        values.append((f"source.{src.name}.topic", src.topic))
        if src.state in ("stale", "rejected"):
            level = max(level, msgs.DIAG_WARN)
    dr = live.dead_reckoning()
    if dr["active"]:
        level = max(level, msgs.DIAG_WARN)
        ttl = dr["seconds_to_limit"]
        ttl_text = "never (within 600 s)" if ttl is not None and math.isinf(ttl) else (
            f"{ttl:.0f} s" if ttl is not None else "?")
        message = (f"dead reckoning since t={dr['since']:.2f}: position 1-sigma {dr['position_sigma_m']:.3f} m, "
                   f"passes {dr['limit_m']:g} m in {ttl_text}")
    values += [("dead_reckoning", str(dr["active"])), ("position_sigma_m", fmt(dr["position_sigma_m"])),
               ("seconds_to_uncertainty_limit", fmt(dr["seconds_to_limit"]) if dr["seconds_to_limit"] is not None
                else "-"), ("uncertainty_limit_m", fmt(dr["limit_m"]))]
    if est is not None:
        values += [("t", f"{est.t:.3f}"), ("x", fmt(float(est.state[0]))), ("y", fmt(float(est.state[1]))),
                   ("yaw", fmt(float(est.state[5])))]
    for k, v in live.cost().items():
        values.append((f"step_{k}", fmt(v)))
    for i, (t, name, state, reason) in enumerate(live.recent_events(10)):
        values.append((f"event_{i}", f"t={t:.3f} {name} {state}: {reason}"))
    return values, level, message


def board_final_state(problems: list) -> str:
    """What the last message may claim about the board: disabled only when the board acknowledged it."""
    if problems:
        return "NOT confirmed disabled (the board's deadman stops the wheels)"
    return "disabled, command zero"


def flatten(d: dict, prefix: str = "") -> list:
    """(key, value) pairs with nested dicts spelled out as dotted keys (host_link.rtt_p99_ms), sorted."""
    out = []
    for k, v in d.items():
        if isinstance(v, dict):
            out += flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return sorted(out)


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    if isinstance(v, tuple | list):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return str(v)
