# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive check-config FILE [--recording REC.mcap]`: what viperdrive reads from a ROS parameter file, and the
config lint (viperdrive.estimation.lint) for a robot_localization file. Nothing is changed or fused."""
from __future__ import annotations

import sys

HELP = ("check a robot_localization config (the lint: vy, absolute sources, gates, 2-D mode, process noise, frames) "
        "or a robot file (what is read from it)")


def register(parser) -> None:
    parser.add_argument("file", metavar="FILE.yaml", help="robot_localization parameter file, or a robot file "
                        "(viperdrive, ros2_control or ROS 1 diff_drive_controller)")
    parser.add_argument("--node", default=None, help="node name when the file configures several")
    parser.add_argument("--recording", default=None, metavar="REC.mcap",
                        help="also check against this recording: process noise vs the recorded accelerations, "
                             "frame ids, topics, whether the base is nonholonomic")
    parser.add_argument("--strict", action="store_true",
                        help="robot file: refuse keys diff_drive_controller does not declare")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument("-q", "--quiet", action="store_true", help="only the findings")


def run(args) -> int:
    from ..errors import EXIT_ERROR, BadValue
    from ..estimation.config import is_filter_node
    from ..robot.config import read_robot_file
    from ..robot.rosparams import ros1_nodes, ros2_entries
    from .output import print_json

    try:
        doc = read_robot_file(args.file)        # read and parsed once, whichever kind of file it turns out to be
    except BadValue as e:
        raise _named(e) from None
    kind = "robot"
    if isinstance(doc.data, dict) and not args.file.lower().endswith(".toml"):
        entries = ros2_entries(doc.data)
        groups = [e.params for e in entries] if entries else [p for _, p, _ in ros1_nodes(doc.data)]
        if any(is_filter_node(_flat_keys(g)) for g in groups):
            kind = "filter"
    if kind == "filter":
        return _filter(args, doc, print_json, EXIT_ERROR)
    return _robot(args, doc, print_json)


def _named(e):
    """The loader's BadValue without its leading 'robot file ' (check-config reads either kind of file)."""
    from ..errors import BadValue

    text = str(e)
    return BadValue(text[len("robot file "):] if text.startswith("robot file ") else text)


def _flat_keys(mapping: dict) -> set:
    return {str(k) for k in mapping}


def _filter(args, doc, print_json, exit_findings) -> int:
    from ..estimation.config import config_from_document
    from ..estimation.lint import lint, scan_recording

    cfg = config_from_document(doc, node=args.node)
    scan = scan_recording(args.recording, cfg) if args.recording else None
    findings = lint(cfg, scan)
    report = [(cat, key, text) for cat, key, text in cfg.report if cat in ("unknown", "unsupported", "warning")]
    if args.json:
        print_json({"file": args.file, "node": cfg.node, "kind": "robot_localization",
                    "sensors": [{"name": s.name, "kind": s.kind, "topic": s.topic,
                                 "config": list(s.update_vector)} for s in cfg.sensors],
                    "report": [{"category": c, "key": k, "text": t} for c, k, t in report],
                    "findings": [{"rule": f.rule, "key": f.key, "text": f.text, "fix": f.fix} for f in findings]})
        return exit_findings if findings else 0
    where = args.file + (f" ({cfg.node})" if cfg.node else "")
    if not args.quiet:
        print(f"{where}: robot_localization parameters; sensors: "
              + (", ".join(f"{s.name} ({s.kind}, {s.topic})" for s in cfg.sensors) or "none"))
        for cat, key, text in report:
            print(f"  {cat}: {key}: {text}")
    for f in findings:
        print(f"{where}: {f.rule}: {f}")
    if not args.quiet or findings:
        checked = "the config" + (f" and {args.recording}" if args.recording else " (no --recording: the process "
                                  "noise, frame and topic checks need one)")
        print(f"{len(findings)} finding{'s' * (len(findings) != 1)} in {checked}", file=sys.stdout)
    return exit_findings if findings else 0


def _robot(args, doc, print_json) -> int:
    from ..errors import BadValue
    from ..robot.config import RobotConfig
    from ..robot.files import shorten

    try:
        cfg = RobotConfig.from_document(doc, node=args.node, strict=args.strict)
    except BadValue as e:
        raise _named(e) from None
    values = {k: cfg.get(k) for k in ("wheel_separation", "wheel_radius", "wheel_separation_multiplier",
                                      "left_wheel_radius_multiplier", "right_wheel_radius_multiplier",
                                      "update_rate", "cmd_vel_timeout", "max_rim_speed",
                                      "linear.x.max_velocity", "linear.x.max_acceleration",
                                      "angular.z.max_velocity", "angular.z.max_acceleration")}
    if args.json:
        print_json({"file": args.file, "node": cfg.node, "kind": "robot", "layout": cfg.layout, "values": values,
                    "ignored": list(cfg.ignored), "notes": list(cfg.notes)})
        return 0
    where = args.file + (f" ({cfg.node})" if cfg.node else "")
    print(f"{where}: robot file, {cfg.layout} layout")
    if not args.quiet:
        for k, v in values.items():
            shown = "unlimited" if v is None and "." in k else v
            print(f"  {k}: {shown}{'' if k in cfg.explicit else '  (default)'}")
        if cfg.ignored:
            print(f"  read, no meaning here (ignored): {shorten(cfg.ignored)}")
    for n in cfg.notes:
        print(f"  note: {n}")
    return 0
