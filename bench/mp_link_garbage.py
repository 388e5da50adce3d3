# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# MicroPython workload of bench_mcu_control.py: does a burst of garbage on the link change the control loop's
# timing? The firmware's App runs on the sim backend (its control period is a _thread with absolute deadlines,
# the plant model from sim/), with the link paced at 115200 baud. Two windows of equal length: quiet (SET_VEL
# at 50 Hz only) and flooded (the same plus the line saturated with random bytes). The control step's own
# statistics (period max, execution max, overruns) are compared, and the commands must still get through.
#
#   micropython bench/mp_link_garbage.py REPO_ROOT
import sys
import time

root = sys.argv[1]
for p in (root, root + "/sim"):
    sys.path.insert(0, p)

import firmware_package  # noqa: E402

firmware_package.mount(root)     # the firmware as the package viperdrive, as on a board (sim/firmware_package.py)

import plant as plant_mod  # noqa: E402
import world as world_mod  # noqa: E402
from viperdrive import app as app_mod  # noqa: E402
from viperdrive.hal import sim as hal_sim  # noqa: E402
from viperdrive.shared import protocol as P  # noqa: E402

WINDOW_MS = 3000


class Transport:
    """The PacedLink's far end: what the 'host' sends, and the replies it gets back."""

    generation = 0

    def __init__(self):
        self.out = bytearray()
        self.replies = bytearray()

    def recv(self):
        if not self.out:
            return None
        d = bytes(self.out)
        self.out = bytearray()
        return d

    def send(self, data):
        self.replies.extend(data)


def window(a, board, tr, link, parser, flood, rng):
    a.ctrl.reset_stats()
    sent = got = 0
    t_end = time.ticks_add(time.ticks_ms(), WINDOW_MS)
    t_next = time.ticks_ms()
    while time.ticks_diff(t_end, time.ticks_ms()) > 0:
        if time.ticks_diff(time.ticks_ms(), t_next) >= 0:
            t_next = time.ticks_add(t_next, 20)
            tr.out.extend(P.pack_set_vel(3000, -3000))
            sent += 1
            if flood:
                # 80 % of the line's bytes: 180 random bytes per 20 ms (0xAA removed, so the commands between
                # the bursts still parse: this measures cost, not resynchronisation)
                junk = bytes(rng.next32() & 0xFF for _ in range(180))
                link.inject(junk.replace(b"\xaa", b"\x55"))
        a.service()
        board.idle()
        for c, _ in parser.feed(bytes(tr.replies)):
            if c == P.STATE:
                got += 1
        tr.replies = bytearray()
    s = a.ctrl.stats()
    return s, sent, got


def main():
    desc = plant_mod.load_description(root + "/sim/robots/default.json")
    plant = plant_mod.Plant(desc, seed=3)
    tr = Transport()
    link = hal_sim.PacedLink(tr, baud=115200)
    cfg = {"backend": "sim", "name": "bench", "control_hz": 500, "counts_per_rev": plant.cpr,
           "counter_bits": plant.counter_bits, "watchdog_ms": 500}
    # the virtual board's world (sim/world.py) runs the control periods on the plant, as sim/vboard.py does
    board = hal_sim.Board(cfg, world=world_mod.World(plant, cfg["control_hz"]), link=link)
    a = app_mod.App(board, cfg, params_path="/tmp/viperdrive-bench-garbage.json")
    a.start()
    a.enable(True)
    parser = P.Parser()
    rng = plant_mod.Rng(12345)
    window(a, board, tr, link, parser, False, rng)         # settle
    quiet, sent_q, got_q = window(a, board, tr, link, parser, False, rng)
    g0 = a.link.parser.garbage_bytes
    flood, sent_f, got_f = window(a, board, tr, link, parser, True, rng)
    garbage = a.link.parser.garbage_bytes - g0
    a.stop()
    print("mcu_link_garbage quiet_period_max_us=%d flood_period_max_us=%d quiet_exec_max_us=%d flood_exec_max_us=%d "
          "quiet_overruns=%d flood_overruns=%d garbage_bytes=%d commands_answered_quiet=%d/%d "
          "commands_answered_flood=%d/%d window_ms=%d" % (
              quiet["period_max_us"], flood["period_max_us"], quiet["exec_max_us"], flood["exec_max_us"],
              quiet["overruns"], flood["overruns"], garbage, got_q, sent_q, got_f, sent_f, WINDOW_MS))


main()
