# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Host drive stack benchmarks (`make bench`). Prints:

host_cycle backend=virtual_board ...  read + odometry + controller update + write per cycle at 100 Hz (us), with
                                      loop lateness, overruns and misses, against the real firmware on the
                                      MicroPython unix port (falls back to the test responder if it cannot start)
host_math ...                         pure DriveController.update + Odometry.update pairs per second, and
                                      kinematics twist_to_wheels calls per second
host_reader mode=poll|thread ...      getting one STATE per cycle over a pty (a real tty): non-blocking poll in
                                      the control thread vs a reader thread feeding a queue. main_us is what the
                                      control thread pays per cycle, cpu_us the whole process's CPU per cycle.
"""
from __future__ import annotations

import math
import os
import queue
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from viperdrive.board import Board  # noqa: E402
from viperdrive.board.link import Link  # noqa: E402
from viperdrive.motion import kinematics  # noqa: E402
from viperdrive.motion.drive import DriveController  # noqa: E402
from viperdrive.motion.loop import DriveLoop  # noqa: E402
from viperdrive.motion.odometry import Odometry  # noqa: E402
from viperdrive.robot.config import RobotConfig  # noqa: E402
from viperdrive.shared import protocol as P  # noqa: E402

CYCLES = 300


def bench_cycle():
    cfg = RobotConfig(update_rate=100.0)
    vb = None
    try:
        from viperdrive.rigs.virtual import VirtualBoard
        vb = VirtualBoard(baud=115200).start()
        url, backend = vb.url, "virtual_board"
    except Exception as e:  # the sim needs the MicroPython executable; say so and use the responder
        from board_responder import Responder
        print(f"# virtual board unavailable ({e}); using the test responder", file=sys.stderr)
        vb = Responder()
        url, backend = vb.url, "test_responder"
    try:
        with Board(url, config=cfg) as board:
            board.activate()
            ctl = DriveController(cfg)
            odom = Odometry(cfg, counts_per_rev=board.counts_per_rev)
            loop = DriveLoop(board, ctl, odom)
            t_cpu = time.process_time()
            st = loop.run(cycles=CYCLES, on_cycle=lambda s, k: ctl.command(0.2, 0.5 if k % 100 < 50 else -0.5))
            cpu = (time.process_time() - t_cpu) / CYCLES * 1e6
            ls = board.link.stats()
            print(f"host_cycle backend={backend} rate_hz=100 cycles={st['cycles']} "
                  f"cost_mean_us={st['exec_mean_us']:.0f} cost_p99_us={st['exec_p99_us']:.0f} "
                  f"cost_max_us={st['exec_max_us']:.0f} margin_pct={st['margin_pct']:.1f} "
                  f"late_p99_us={st['late_p99_us']:.0f} overruns={st['overruns']} "
                  f"misses={board.total_misses} cpu_us_per_cycle={cpu:.0f} "
                  f"request_rtt_p50_ms={ls['rtt_p50_ms']} request_rtt_max_ms={ls['rtt_max_ms']}")
    finally:
        vb.close()


def bench_math():
    cfg = RobotConfig(update_rate=100.0, counts_per_rev=4096)
    ctl = DriveController(cfg)
    odom = Odometry(cfg)
    n = 20000
    ctl.command(0.3, 1.0, now=0.0)
    t0 = time.perf_counter()
    cl = cr = 0
    rad = 2.0 * math.pi / cfg.counts_per_rev     # what Board.read() does to the counts
    for i in range(n):
        now = i * 0.01
        if i % 10 == 0:
            ctl.command(0.3, 1.0 if i % 2000 < 1000 else -1.0, now=now)
        left, right = ctl.update(now)
        cl += int(left * 6.5)
        cr += int(right * 6.5)
        odom.update(cl * rad, cr * rad, left, right, now)
    dt = time.perf_counter() - t0
    m = 200000
    t1 = time.perf_counter()
    for i in range(m):
        kinematics.twist_to_wheels(0.3, i * 1e-5, wheel_separation=0.152, wheel_radius=0.0325, max_rim_speed=0.55)
    dk = time.perf_counter() - t1
    print(f"host_math drive_plus_odometry_per_s={n / dt:.0f} us_per_pair={dt / n * 1e6:.1f} "
          f"twist_to_wheels_per_s={m / dk:.0f}")


def _pty_board(master: int, stop: threading.Event):
    parser = P.Parser()
    reply = P.pack_state(1, 2, 3, 4, P.ST_ENABLED)
    while not stop.is_set():
        try:
            data = os.read(master, 256)
        except OSError:
            return
        for cmd, _ in parser.feed(data):
            if cmd == P.SET_VEL:
                os.write(master, reply)


def bench_reader(mode: str, n: int = 300):
    import tty
    master, slave = os.openpty()
    tty.setraw(master)
    tty.setraw(slave)
    path = os.ttyname(slave)
    stop = threading.Event()
    board_thread = threading.Thread(target=_pty_board, args=(master, stop), daemon=True)
    board_thread.start()
    link = Link(path).open()
    frame = P.pack_set_vel(100, 100)
    got = 0
    main_cost = 0.0
    q: queue.Queue = queue.Queue()
    reader = None
    if mode == "thread":
        ser = link._ser
        ser.timeout = 0.05

        def read_loop():
            parser = P.Parser()
            while not stop.is_set():
                try:
                    data = ser.read(max(1, ser.in_waiting))
                except Exception:
                    return
                for f in parser.feed(data):
                    q.put(f)
        reader = threading.Thread(target=read_loop, daemon=True)
        reader.start()
    t_cpu = time.process_time()
    for _ in range(n):
        link.send(frame)
        time.sleep(0.003)           # the rest of the cycle; the reply arrives meanwhile
        t0 = time.perf_counter()
        if mode == "poll":
            frames = link.poll()
        else:
            frames = []
            while True:
                try:
                    frames.append(q.get_nowait())
                except queue.Empty:
                    break
        main_cost += time.perf_counter() - t0
        got += sum(1 for c, _ in frames if c == P.STATE)
    cpu = (time.process_time() - t_cpu) / n * 1e6
    stop.set()
    link.close()
    os.close(master)
    os.close(slave)
    print(f"host_reader mode={mode} cycles={n} states={got} main_us={main_cost / n * 1e6:.1f} "
          f"cpu_us_per_cycle={cpu:.0f}")


def main():
    bench_math()
    bench_reader("poll")
    bench_reader("thread")
    bench_cycle()
    return 0


if __name__ == "__main__":
    sys.exit(main())
