# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The host's CPU on a robot's computer: `viperdrive ros2` at 100 Hz against a virtual board in its own process,
seen as a real board is (VIPERDRIVE_LOCKSTEP=0: no lockstep grant), in steady state; DDS discovery on this machine only
(ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, for the bridge and the subscriber alike).

Four bridge runs, side by side with the floor (a bare SET_VEL/STATE loop at 100 Hz through Board, what the link
alone costs): without and with a subscriber on every topic the bridge publishes (a second process: odom,
joint_states, /tf, imu/data_raw, battery_state, /diagnostics, odometry/filtered), without and with --ekf
(docs/examples/ekf.yaml). Steady state: the process's CPU time (/proc/PID/stat, user + system) between WARMUP_S
after the bridge says "board active" and WINDOW_S later; start-up is excluded.

    python bench/bench_ros2_cpu.py [RUN ...] [--socket]     # e.g. bridge bridge_ekf; default: every run

A real board is a tty (/dev/ttyACM0), so the bridge runs on one: a pseudo-terminal relayed to the virtual board's
socket by a process of its own (standing for the kernel's USB serial driver). --socket runs it on the virtual
board's socket:// port instead (TCP on the loopback: more CPU in the host process). The floor runs on both.

Prints, one line per run:
  ros2_cpu_floor transport=tty|socket cpu_pct_of_core=... cpu_us_per_cycle=... window_s=...
  ros2_cpu run=... cpu_pct_of_core=... cpu_us_per_cycle=... transport=... ratio_to_floor=... window_s=...
A Raspberry Pi 4 runs Python several times slower per core than a desktop x86: the share there is a multiple of
these figures (docs/ros2.md, "CPU")."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WARMUP_S = 3.0
WINDOW_S = 10.0
RATE_HZ = 100
TICK = os.sysconf("SC_CLK_TCK")

SUBSCRIBER = r'''
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
from viperdrive.ros2 import msgs, qos
from viperdrive.ros2.node import RosNode, take_valid
node = RosNode("/", domain_id=int(sys.argv[1]), env={"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})
readers = [node.subscription("odom", msgs.Odometry, qos.default_qos(100)),
           node.subscription("joint_states", msgs.JointState, qos.default_qos(100)),
           node.subscription("/tf", msgs.TFMessage, qos.tf_qos()),
           node.subscription("imu/data_raw", msgs.Imu, qos.sensor_qos()),
           node.subscription("battery_state", msgs.BatteryState, qos.sensor_qos()),
           node.subscription("/diagnostics", msgs.DiagnosticArray, qos.default_qos(100)),
           node.subscription("odometry/filtered", msgs.Odometry, qos.default_qos(100))]
n = 0
end = time.monotonic() + float(sys.argv[2])
try:
    while time.monotonic() < end:
        for r in readers:
            n += len(take_valid(r, 100))
        time.sleep(0.01)
finally:
    print("taken", n, flush=True)
'''

FLOOR = r'''
import sys, time
from viperdrive.board import Board
warm, window = float(sys.argv[2]), float(sys.argv[3])
with Board(sys.argv[1]) as b:
    b.configure()
    b.activate()
    t0 = time.monotonic()
    marks = []
    next_t = t0
    cycles = 0
    while True:
        now = time.monotonic()
        if not marks and now - t0 >= warm:
            marks.append((now, time.process_time(), cycles))
        if marks and now - marks[0][0] >= window:
            marks.append((now, time.process_time(), cycles))
            break
        b.write(1.0, 1.0)
        b.read()
        cycles += 1
        next_t += 0.01
        time.sleep(max(0.0, next_t - time.monotonic()))
    b.deactivate()
(t0, c0, n0), (t1, c1, n1) = marks
print("floor", c1 - c0, t1 - t0, n1 - n0, flush=True)
'''


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK      # utime, stime (fields 14 and 15 of the line)


def start_sim(env: dict) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([str(BIN / "viperdrive"), "sim", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("bench_ros2_cpu: viperdrive sim did not start")
        if "socket://" in line:
            return p, line[line.index("socket://"):].split()[0]


def bridge_run(name: str, url: str, env: dict, domain: int, ekf: bool, subscribe: bool) -> dict:
    argv = [str(BIN / "viperdrive"), "ros2", "--port", url, "--domain-id", str(domain),
            "--duration", str(WARMUP_S + WINDOW_S + 5)]
    if ekf:
        argv += ["--ekf", str(ROOT / "docs" / "examples" / "ekf.yaml")]
    sub = None
    if subscribe:
        sub = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, str(domain), str(WARMUP_S + WINDOW_S + 10)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in p.stderr:
            if "board active" in line:
                break
        else:
            raise SystemExit(f"bench_ros2_cpu: {name}: the bridge never said 'board active'")
        time.sleep(WARMUP_S)
        t0, c0 = time.monotonic(), cpu_s(p.pid)
        time.sleep(WINDOW_S)
        t1, c1 = time.monotonic(), cpu_s(p.pid)
    finally:
        p.terminate()
        p.wait(timeout=30)
        taken = None
        if sub is not None:
            sub.terminate()
            out = sub.communicate(timeout=30)[0]
            taken = out.split()[-1] if out.strip() else "0"
    cpu, wall = c1 - c0, t1 - t0
    return {"run": name, "cpu_pct_of_core": round(100 * cpu / wall, 1),
            "cpu_us_per_cycle": round(cpu / (wall * RATE_HZ) * 1e6), "window_s": round(wall, 1),
            **({"messages_taken": taken} if taken is not None else {})}


# a pseudo-terminal in front of the virtual board's socket, in a process of its own (it stands for the kernel's USB
# serial driver: its CPU is not the host program's)
RELAY = r'''
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
from viperdrive.rigs.pico import PtyRelay
relay = PtyRelay(sys.argv[1])
print(relay.path, flush=True)
while True:
    time.sleep(3600)
'''


def start_relay(url: str, env: dict) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-c", RELAY, url], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, env=env)
    path = p.stdout.readline().strip()
    if not path.startswith("/dev/"):
        raise SystemExit("bench_ros2_cpu: the pty relay did not start")
    return p, path


def floor_run(port: str, env: dict) -> tuple[float, str]:
    r = subprocess.run([sys.executable, "-c", FLOOR, port, str(WARMUP_S), str(WINDOW_S)], capture_output=True,
                       text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"bench_ros2_cpu: the floor loop failed: {r.stderr[-2000:]}")
    _, cpu, wall, cycles = r.stdout.split()
    floor_us = float(cpu) / int(cycles) * 1e6
    return floor_us, (f"cpu_pct_of_core={100 * float(cpu) / float(wall):.1f} cpu_us_per_cycle={floor_us:.0f} "
                      f"cycles={cycles} window_s={float(wall):.1f}")


def main(argv: list[str]) -> int:
    """argv: the names of the runs to make (all when none); --socket: the bridge runs on the virtual board's
    socket:// port instead of a tty. The floor runs on both."""
    socket_port = "--socket" in argv
    only = [a for a in argv if a != "--socket"]
    env = dict(os.environ, VIPERDRIVE_LOCKSTEP="0", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env.pop("VIPERDRIVE_PORT", None)
    procs = []
    try:
        # one virtual board per port: a virtual board serves one link client, and the relay is one
        sim, url = start_sim(env)
        procs.append(sim)
        sim_tty, url_tty = start_sim(env)
        procs.append(sim_tty)
        relay, tty = start_relay(url_tty, env)
        procs.insert(0, relay)
        # a real board is a tty (/dev/ttyACM0): the figures that stand for a robot's computer are on one; the
        # virtual board's socket costs the host more (TCP on the loopback), shown beside it
        floors = {}
        for transport, port in (("tty", tty), ("socket", url)):
            floors[transport], text = floor_run(port, env)
            print(f"ros2_cpu_floor transport={transport} {text}", flush=True)
        transport = "socket" if socket_port else "tty"
        port = url if socket_port else tty
        domain = random.SystemRandom().randint(100, 200)
        runs = (("bridge", False, False), ("bridge_subscribed", False, True), ("bridge_ekf", True, False),
                ("bridge_ekf_subscribed", True, True))
        for name, ekf, subscribe in (r for r in runs if not only or r[0] in only):
            d = bridge_run(name, port, env, domain, ekf, subscribe)
            d["transport"] = transport
            d["ratio_to_floor"] = round(d["cpu_us_per_cycle"] / floors[transport], 1)
            print("ros2_cpu " + " ".join(f"{k}={v}" for k, v in d.items()), flush=True)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
