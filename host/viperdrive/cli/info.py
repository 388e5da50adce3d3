# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive info`: who the board is (HELLO), its state, faults in words, loop and link health (GET_DIAG) and every
parameter. --clear-fault clears a latched fault after showing it."""
from __future__ import annotations

import argparse
from typing import Any

from viperdrive.shared import params as PARAMS
from viperdrive.shared import protocol as P

from .. import __version__
from ..board.records import fault_text
from .boardopen import FAULT_HINTS, open_board, read_sensors, read_status
from .options import add_board_options
from .output import note, print_json, warn

HELP = ("show the board: firmware, protocol, status, faults in words, sensors (IMU, battery, e-stop), loop timing, "
        "link counters, parameters")

FLAG_MEANING = {
    "PARAMS_DEFAULTED": "the parameter file was missing or corrupt: defaults in use (`viperdrive params save`)",
    "TIMER_SOFT": "the control loop runs from a soft timer/thread, not a hard IRQ",
    "PARAMS_UNSAVED": "live parameters differ from the saved ones (a reset would change them): "
                      "`viperdrive params restore` brings back the saved values, `viperdrive params save` keeps these",
}


def register(parser: argparse.ArgumentParser) -> None:
    add_board_options(parser, data_output=True)
    parser.add_argument("--clear-fault", action="store_true", help="clear a latched FAULT (after reporting it)")


def collect(board) -> dict:
    info = board.info
    status = read_status(board)
    diag = board.diag()
    values = {p[PARAMS.NAME]: board.get_param(p[PARAMS.NAME]) for p in PARAMS.TABLE}
    sensors = sensors_info(read_sensors(board), diag, values, board.config)
    return {
        "board": info.board, "firmware": info.firmware, "protocol_version": info.protocol_version,
        "firmware_version": info.firmware_version, "host_version": __version__,
        "versions_match": info.firmware_version == __version__,
        "frozen": "FROZEN" in diag["flag_names"], "unused_files": unused_files(diag["flag_names"]),
        "schema_hash": f"{info.schema_hash:08x}", "control_hz": info.control_hz,
        "counts_per_rev": info.counts_per_rev, "url": board.link.url, "baud": board.baud,
        "status": status, "status_names": P.status_names(status),
        "fault_code": diag["fault_code"], "fault": diag["fault"],
        "fault_hint": FAULT_HINTS.get(diag["fault_code"]),
        "reset_cause": diag["reset"], "flags": diag["flag_names"],
        "diag": {k: v for k, v in diag.items() if k not in ("host_link", "fault", "reset", "flag_names")},
        "host_link": diag["host_link"], "params": values, "sensors": sensors,
    }


def sensors_info(r, diag: dict, params: dict, config) -> dict:
    """The board's sensors in SI units: one SENSORS_DATA record r (None: none came), GET_DIAG's IMU state and
    error count, the battery thresholds. The IMU part is not on the wire: the robot file's ros2.imu_part (what
    the ROS covariances assume) is shown as such."""
    part = config.ros2.imu_part if config is not None else None
    imu = {"state": diag["imu"], "errors": diag["imu_errors"], "part_assumed": part}
    out: dict[str, Any] = {"record": r is not None, "imu": imu,
           "battery": {"warn_v": params.get("battery_warn_v"), "cutoff_v": params.get("battery_cutoff_v"),
                       "volts": None, "low": None},
           "estop": {"configured": None, "open": None}}
    if r is None:
        return out
    imu.update(state=r.imu_state_name, gyro_rad_s=list(r.gyro_rad_s), accel_m_s2=list(r.accel_m_s2),
               gyro_bias_z_rad_s=r.gyro_bias_z_rad_s, yaw_rate_rad_s=r.yaw_rate_rad_s,
               heading_source="gyro" if r.heading_from_gyro else "encoders", still=r.still)
    out["battery"].update(volts=r.battery_v, low=r.battery_low)
    out["estop"].update(configured=r.estop_open is not None, open=r.estop_open)
    return out


def run(args) -> int:
    with open_board(args) as board:
        d = collect(board)
        cleared = None
        if args.clear_fault:
            cleared = board.clear_fault()
            d["cleared_fault"] = {"code": cleared, "fault": fault_text(cleared)}
            d["status"] = read_status(board)
            d["status_names"] = P.status_names(d["status"])
        if args.json:
            print_json(d)
            return 0
        if not args.quiet:
            print_info(d)
        if d["unused_files"]:
            warn(args, unused_warning(d["unused_files"], args.port))
        if "PARAMS_UNSAVED" in d["flags"]:
            # the trace a killed tune/calibrate leaves (its test values, e.g. max_accel 5000, are still live)
            warn(args, "live parameters differ from the saved ones (flag PARAMS_UNSAVED: a command killed before it "
                       "put its test values back, or `params set` without --save). `viperdrive params restore` "
                       "brings back the saved values; `viperdrive params save` keeps the live ones")
        if cleared is not None:
            print(f"cleared: {fault_text(cleared)}" if cleared else "no fault was latched")
        elif d["fault_code"]:
            note(args, "clear it with `viperdrive info --clear-fault` once the cause is fixed")
    return 0


UNUSED = (("UNUSED_PACKAGE", "lib/viperdrive/"), ("UNUSED_MAIN", "main.py"),
          ("UNUSED_ROOT", "the firmware's modules at the root (app.py, hal/, shared/, ...)"))


def unused_files(flag_names) -> list[str]:
    """What a frozen firmware found on its filesystem (GET_DIAG's UNUSED_* flags) that an earlier flash left."""
    return [what for flag, what in UNUSED if flag in flag_names]


def unused_warning(names, port) -> str:
    shown = ", ".join(names)
    where = f" --port {port}" if port else ""
    return (f"the board's firmware is frozen into its MicroPython image, and its filesystem still holds what an "
            f"earlier flash wrote, which does not run beside it: {shown}. `viperdrive flash --board NAME "
            f"--config-only{where}` lists them and removes those a flash wrote when you agree")


def print_info(d: dict) -> None:
    g = d["diag"]
    h = d["host_link"]
    status = " ".join(d["status_names"]) or "disabled, idle"
    print(f"board       {d['board']}  (firmware {d['firmware']!r}, protocol v{d['protocol_version']}, "
          f"parameter schema {d['schema_hash']})")
    print(f"versions    firmware {d['firmware_version'] or 'unknown'}"
          + (" (frozen into the board's MicroPython image)" if d["frozen"] else "") + f", host {d['host_version']}"
          + ("" if d["versions_match"] else "  (DIFFERENT: see the warning above)"))
    print(f"port        {d['url']} at {d['baud']} baud")
    print(f"control     {d['control_hz']} Hz, {d['counts_per_rev']} counts per wheel revolution")
    print(f"status      {status}")
    fault = d["fault"] if d["fault_code"] == 0 else f"FAULT {d['fault_code']}: {d['fault']}"
    print(f"fault       {fault}")
    if d["fault_hint"]:
        print(f"            what to do: {d['fault_hint']}")
    print_sensors(d["sensors"])
    print(f"last reset  {d['reset_cause']}; up {g['uptime_ms'] / 1000:.1f} s; free heap {g['free_heap']} B")
    period = 1e6 / d["control_hz"]
    jitter = max(g["period_max_us"] - period, period - g["period_min_us"])
    print(f"loop        period {g['period_min_us']}..{g['period_max_us']} us (nominal {period:.0f}, jitter "
          f"{jitter:.0f} us), step {g['exec_avg_us']} us avg / {g['exec_max_us']} us max "
          f"({100 * g['exec_max_us'] / period:.1f} % of the period), overruns {g['overruns']}")
    print(f"link board  frames ok {g['frames_ok']}, CRC errors {g['crc_errors']}, length errors "
          f"{g['length_errors']}, garbage bytes {g['garbage_bytes']}, frame timeouts {g['frame_timeouts']}, "
          f"NACKs {g['nacks']}, deadman trips "
          f"{g['deadman_trips']}")
    rtt = f"{h['rtt_p50_ms']} ms median, {h['rtt_max_ms']} ms max" if h["rtt_n"] else "n/a"
    print(f"link host   frames rx {h['frames_rx']} tx {h['frames_tx']}, CRC errors {h['crc_errors']}, timeouts "
          f"{h['timeouts']}, round trip {rtt}")
    for f in d["flags"]:
        print(f"flag        {f}: {FLAG_MEANING.get(f, '')}")
    print("parameters")
    for p in PARAMS.TABLE:
        name = p[PARAMS.NAME]
        v = d["params"][name]
        changed = "*" if abs(v - p[PARAMS.DEFAULT]) > 1e-6 * max(1.0, abs(p[PARAMS.DEFAULT])) else " "
        print(f"  {name:<19}{changed}{_num(v):>10} {p[PARAMS.UNIT]:<15} {p[PARAMS.HELP]}")
    print("  (* differs from the default)")


def print_sensors(s: dict) -> None:
    imu, bat, es = s["imu"], s["battery"], s["estop"]
    part = f" (robot file assumes {imu['part_assumed']})" if imu.get("part_assumed") else ""
    line = f"imu         {imu['state']}, {imu['errors']} I2C errors{part}"
    if "gyro_rad_s" in imu:
        bias = imu["gyro_bias_z_rad_s"]
        gx, gy, gz = imu["gyro_rad_s"]
        line += (f"; gyro {gx:+.4f} {gy:+.4f} {gz:+.4f} rad/s, bias z "
                 + (f"{bias:+.5f} rad/s" if bias is not None else "not estimated yet (robot still 0.5 s)")
                 + f", heading from {imu['heading_source']}")
    print(line)
    thresholds = f"warning below {_num(bat['warn_v'])} V, cut-off below {_num(bat['cutoff_v'])} V"
    if not s["record"]:
        print(f"battery     no sensor record from the board; {thresholds}")
    elif bat["volts"] is None:
        print(f"battery     no battery input configured; {thresholds}")
    else:
        print(f"battery     {bat['volts']:.2f} V{' LOW' if bat['low'] else ''}; {thresholds}")
    if s["record"]:
        print("e-stop      " + ("no e-stop input configured" if not es["configured"]
                                else "OPEN: outputs off (close it, then clear the fault)" if es["open"] else "closed"))


def _num(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)
