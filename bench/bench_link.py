# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Link benchmark on the virtual board (the real firmware, emulated serial byte rate), at 115200 and 921600 baud:

  link_latency  SET_VEL sent -> STATE parsed round trip, percentiles over 1000 exchanges (host Link.request)
  link_rate     the highest fixed SET_VEL rate at which every STATE reply arrived (zero loss, no growing backlog)
  vboard_loop   the virtual board's world (500 Hz periods) over the run, host time: period min/max, lateness, overruns

Line time alone at 115200 baud: SET_VEL 13 B = 1.13 ms one way, STATE 22 B = 1.91 ms the other way.
"""
from __future__ import annotations

import sys
import time

from viperdrive.board import Board
from viperdrive.errors import NoReplyError
from viperdrive.rigs.virtual import VirtualBoard
from viperdrive.shared import protocol as P

EXCHANGES = 1000
RATE_SECONDS = 1.5
RATES = {115200: (100, 200, 300, 400, 450, 500, 550, 600),
         921600: (200, 500, 1000, 2000, 3000, 4000, 6000)}


def latency(link) -> dict:
    rtts = []
    lost = 0
    for _ in range(EXCHANGES):
        t0 = time.perf_counter()
        try:
            link.request(P.pack_set_vel(0, 0), P.STATE)
        except NoReplyError:
            lost += 1
            continue
        rtts.append(time.perf_counter() - t0)
    rtts.sort()

    def pct(q):
        return rtts[min(len(rtts) - 1, int(q * (len(rtts) - 1) + 0.5))] * 1e3

    return {"n": len(rtts), "lost": lost, "p50_ms": pct(0.5), "p90_ms": pct(0.9), "p99_ms": pct(0.99),
            "max_ms": rtts[-1] * 1e3}


def run_rate(link, hz: float, seconds: float) -> tuple[int, int]:
    """SET_VEL at hz on absolute deadlines; (sent, STATE replies received by 3 periods + 50 ms after the end)."""
    period = 1.0 / hz
    frame = P.pack_set_vel(0, 0)
    sent = received = 0
    t_next = time.perf_counter()
    t_end = t_next + seconds
    while True:
        now = time.perf_counter()
        if now >= t_end:
            break
        if now >= t_next:
            link.send(frame)
            sent += 1
            t_next += period
        received += sum(1 for c, _ in link.poll() if c == P.STATE)
        time.sleep(max(0.0, min(t_next - time.perf_counter(), 0.0005)))
    drain_end = time.perf_counter() + 3 * period + 0.05
    while time.perf_counter() < drain_end:
        received += sum(1 for c, _ in link.poll() if c == P.STATE)
        time.sleep(0.0005)
    # whatever arrives later belongs to this run's backlog: wait until the line has been quiet for 0.3 s
    quiet_since = time.perf_counter()
    give_up = quiet_since + 10.0
    while time.perf_counter() - quiet_since < 0.3 and time.perf_counter() < give_up:
        if link.poll():
            quiet_since = time.perf_counter()
        time.sleep(0.01)
    return sent, received


def main() -> int:
    for baud in (115200, 921600):
        with VirtualBoard(baud=baud) as vb, Board(vb.url, baud=baud) as board:
            link = board.link
            lat = latency(link)
            print(f"link_latency baud={baud} n={lat['n']} lost={lat['lost']} p50_ms={lat['p50_ms']:.2f} "
                  f"p90_ms={lat['p90_ms']:.2f} p99_ms={lat['p99_ms']:.2f} max_ms={lat['max_ms']:.2f}", flush=True)
            best = 0
            tried = []
            for hz in RATES[baud]:
                sent, got = run_rate(link, hz, RATE_SECONDS)
                tried.append(f"{hz}:{sent - got}")
                if got < sent:
                    break
                best = hz
            print(f"link_rate baud={baud} max_zero_loss_hz={best} seconds_each={RATE_SECONDS} "
                  f"lost_per_rate={','.join(tried)}", flush=True)
            st = vb.stats()
            print(f"vboard_loop baud={baud} hz={st['hz']} periods={st['periods']} period_min_us={st['period_min_us']} "
                  f"period_max_us={st['period_max_us']} late_avg_us={st['late_avg_us']} "
                  f"late_max_us={st['late_max_us']} overruns={st['overruns']} plant_max_us={st['plant_max_us']}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
