# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive fuse`: run the EKF offline over a recording (docs/estimation.md)."""
from __future__ import annotations

import sys

from ..robot.files import shorten
from .options import positive
from .terminal import Progress

HELP = "fuse odometry/IMU/pose/twist from an MCAP recording with an EKF (robot_localization config) into CSV/MCAP"


def register(parser) -> None:
    parser.add_argument("input", metavar="INPUT.mcap", help="recording with nav_msgs/Odometry, sensor_msgs/Imu, "
                        "geometry_msgs/PoseWithCovarianceStamped or TwistWithCovarianceStamped messages")
    parser.add_argument("--config", required=True, metavar="EKF.yaml",
                        help="robot_localization parameter file, used unchanged (ROS 2 or ROS 1 layout)")
    parser.add_argument("--node", default=None, help="the EKF/UKF node of the parameter file when it configures "
                        "several (name or /ns/name)")
    parser.add_argument("--out", required=True, metavar="FUSED.csv", help="CSV of the estimates (t, state, variances)")
    parser.add_argument("--mcap-out", default=None, metavar="OUT.mcap",
                        help="also write nav_msgs/Odometry on /odometry/filtered")
    parser.add_argument("--strict", action="store_true", help="refuse a parameter file with unknown keys")
    parser.add_argument("--uncertainty-limit", type=positive(1e6, "m"), default=1.0, metavar="M",
                        help="report how long dead reckoning from the final estimate stays below this 1-sigma "
                             "position error (default 1.0 m)")
    prog = parser.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="show a progress bar on stderr (default: when stderr is a terminal)")
    prog.add_argument("--no-progress", dest="progress", action="store_false")


class _FirstFew:
    """Logging filter: the first `limit` lagged-measurement warnings per sensor, then one line saying the rest are
    only counted (the summary has the totals). A long recording with a slow sensor would otherwise flood stderr."""

    def __init__(self, limit: int = 5):
        self.limit = limit
        self.seen: dict[str, int] = {}

    def filter(self, record) -> bool:
        sensor = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        n = self.seen[sensor] = self.seen.get(sensor, 0) + 1
        if n == self.limit + 1:
            record.msg, record.args = "%s: further lagged-measurement warnings are only counted (see the summary)", \
                (sensor,)
            return True
        return n <= self.limit


def _log_to_stderr():
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("viperdrive fuse: warning: %(message)s"))
    handler.addFilter(_FirstFew())
    log = logging.getLogger("viperdrive.estimation")
    log.addHandler(handler)
    log.propagate = False
    return log, handler


def run(args) -> int:
    from ..errors import EXIT_ERROR, BadValue
    from ..estimation import load_config
    from ..estimation.lint import RecordingScan, lint
    from ..estimation.replay import fuse

    cfg = load_config(args.config, node=args.node)
    for cat, key, text in cfg.report:
        if cat in ("unknown", "warning", "unsupported"):
            print(f"viperdrive fuse: {cat}: {key}: {text}", file=sys.stderr)
    unknown = [key for cat, key, _ in cfg.report if cat == "unknown"]
    if args.strict and unknown:
        raise BadValue(f"{args.config}: unknown parameters (--strict): {', '.join(unknown)}")
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    scan = RecordingScan(cfg)
    log, handler = _log_to_stderr()
    try:
        # the total is known once fuse() has read the recording's summary (a damaged file has none)
        with Progress(None, "fuse", quiet=not show, unit="messages") as bar:
            summary = fuse(args.input, cfg, args.out, mcap_out=args.mcap_out,
                           progress=(lambda n, total: bar.update(n, total=total)) if show else None,
                           uncertainty_limit=args.uncertainty_limit, observer=scan)
    finally:
        log.removeHandler(handler)
        log.propagate = True
    print(summary.text())
    findings = lint(cfg, scan)
    if findings:
        print(f"config lint ({len(findings)}; `viperdrive check-config` explains the rules; nothing above was "
              f"changed by them):")
        for f in findings:
            print(f"  {f.rule}: {f}")
    if unknown:
        print(f"unknown parameters in {args.config} (ignored): {shorten(unknown)}")
    if summary.rows == 0:
        # an empty result is a failure a script must notice; nothing was written and existing files are untouched
        print("viperdrive fuse: error: no estimate was produced (see the warnings above); nothing was written",
              file=sys.stderr)
        return EXIT_ERROR
    print(f"wrote {args.out}" + (f" and {args.mcap_out}" if args.mcap_out else ""))
    return 0
