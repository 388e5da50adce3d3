# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A recording as PNG plots (`viperdrive log plot`): the path, the wheel speeds and the PID terms."""
from __future__ import annotations

from pathlib import Path

from .. import extras
from ..errors import BadValue, UserError
from .mcap import read_mcap


def plot_mcap(path, out_dir=None, data=None) -> list[Path]:
    """PNGs of a recording: <stem>_path.png (odometry x/y), <stem>_wheels.png (wheel speeds: commanded setpoint and
    measured), <stem>_pid.png (controller output and its integrator part per wheel). Returns the files written;
    a plot whose topic is empty is left out. data: what read_mcap/read_mcap_partial returned (default: read_mcap)."""
    p = Path(path)
    out_dir = Path(out_dir) if out_dir is not None else p.parent
    if out_dir.exists() and not out_dir.is_dir():
        raise BadValue(f"--out-dir {out_dir} is a file, not a folder: name a folder (it is created if missing)")
    if data is None:
        data = read_mcap(p)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create the folder {out_dir}: {e.strerror or e}") from None
    extras.require("plot", "plotting a recording")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []

    odom = data.get("/odom", [])
    if odom:
        xs = [m.pose.pose.position.x for _, m in odom]
        ys = [m.pose.pose.position.y for _, m in odom]
        fig, ax = plt.subplots(figsize=(6, 6))
        ax.plot(xs, ys, label="odometry")
        ax.plot(xs[:1], ys[:1], "go", label="start")
        ax.plot(xs[-1:], ys[-1:], "rs", label="end")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xlabel("x (m, odom frame)")
        ax.set_ylabel("y (m)")
        ax.set_title(f"{p.name}: path")
        ax.grid(True)
        ax.legend()
        written.append(_save(fig, out_dir / f"{p.stem}_path.png", plt))

    joints = data.get("/joint_states", [])
    tele = data.get("/viperdrive/telemetry", [])
    if joints or tele:
        fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        for i, side in enumerate(("left", "right")):
            ax = axes[i]
            if tele:
                t = [s for s, _ in tele]
                ax.plot(t, [getattr(m, f"setpoint_{side}") for _, m in tele], label="setpoint (board)")
                ax.plot(t, [getattr(m, f"measured_{side}") for _, m in tele], label="measured (board)")
            if joints:
                ax.plot([s for s, _ in joints], [m.velocity[i] for _, m in joints], ".", ms=2,
                        label="STATE velocity (host)")
            ax.set_ylabel(f"{side} wheel (rad/s)")
            ax.grid(True)
            ax.legend(loc="upper right", fontsize=8)
        axes[-1].set_xlabel("time (s)")
        axes[0].set_title(f"{p.name}: wheel speeds")
        written.append(_save(fig, out_dir / f"{p.stem}_wheels.png", plt))

    if tele:
        fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        t = [s for s, _ in tele]
        for i, side in enumerate(("left", "right")):
            ax = axes[i]
            out = [getattr(m, f"output_{side}") for _, m in tele]
            integ = [getattr(m, f"integrator_{side}") for _, m in tele]
            ax.plot(t, out, label="output (duty)")
            ax.plot(t, integ, label="integrator term")
            ax.plot(t, [o - i_ for o, i_ in zip(out, integ, strict=True)], label="feedforward + P + D")
            ax.set_ylabel(f"{side} (duty)")
            ax.grid(True)
            ax.legend(loc="upper right", fontsize=8)
        axes[-1].set_xlabel("time (s)")
        axes[0].set_title(f"{p.name}: PID terms")
        written.append(_save(fig, out_dir / f"{p.stem}_pid.png", plt))
    return written


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return path


__all__ = ["plot_mcap"]
