# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive dashboard` in headless Chromium (Debian's, through Playwright) against a virtual board: the figures
the page's users feel, measured in the browser, side by side in one run.

- dash_plot: telemetry records per second the page receives (against the dashboard's telemetry rate) and plot
  redraws with new data per second, over 5 s of the browser's clock.
- dash_slider: from a kp slider move (the input event) to the board's acknowledgement of the new value, as the
  page sees it, over 20 moves: median and worst.
- dash_tab_close: from closing the tab while driving to the board's outputs off, in board time (ground truth of the
  virtual board's control endpoint), 3 times.

    python bench/bench_dashboard.py
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from viperdrive.boardtime.registry import clock_for
from viperdrive.timebase import wait_until

VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")
CHROMIUM = os.environ.get("VIPERDRIVE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync", "--disable-quic"]


def line(name: str, **kv) -> None:
    print(name + " " + " ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def first_line(proc: subprocess.Popen, prefix: str) -> str:
    while True:
        text = proc.stdout.readline()
        if not text:
            raise SystemExit(f"bench_dashboard: {proc.args[1]} ended: {proc.stderr.read()}")
        if text.startswith(prefix):
            return text[len(prefix):].strip()


class Sim:
    def __init__(self):
        self.proc = subprocess.Popen([VIPERDRIVE, "sim", "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host, _, port = first_line(self.proc, "control on ").rpartition(":")
        self.control_addr = (host, int(port))
        self.url = first_line(self.proc, "listening on ")
        self.clock = clock_for(self.url)

    def truth(self) -> dict:
        with socket.create_connection(self.control_addr, timeout=10) as s:
            s.sendall(b'{"cmd": "truth"}\n')
            return json.loads(s.makefile("rb").readline())

    def close(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=10)


def main() -> int:
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
        print(f"bench_dashboard: skipped: no Chromium at {CHROMIUM} (make setup installs Debian's)", file=sys.stderr)
        line("dash_plot", skipped="no_chromium")
        return 0
    from playwright.sync_api import sync_playwright
    sim = Sim()
    dash = subprocess.Popen([VIPERDRIVE, "dashboard", "--port", sim.url, "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        url = first_line(dash, "dashboard on ")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
            page.goto(url)
            page.wait_for_function("vdStats.records > 100 && vdStats.statuses > 1", timeout=30000)
            r0, d0, t0 = page.evaluate("[vdStats.records, vdStats.draws, performance.now()]")
            page.wait_for_timeout(5000)
            r1, d1, t1 = page.evaluate("[vdStats.records, vdStats.draws, performance.now()]")
            s = (t1 - t0) / 1e3
            info = page.evaluate("S.info")
            line("dash_plot", telemetry_hz=info["telemetry_hz"], records_per_s=round((r1 - r0) / s, 1),
                 redraws_per_s=round((d1 - d0) / s, 1), records_behind=page.evaluate("vdStats.maxBehind"))
            page.click("nav button[data-view=tuning]")
            page.wait_for_function("S.params.kp !== undefined", timeout=20000)
            kp0 = page.evaluate("S.params.kp")
            took = []
            for i in range(20):
                v = round(0.03 + 0.001 * (i % 10), 4)
                page.evaluate(f"vdStats.lastSliderMs = null; const s = document.getElementById('slider-kp'); "
                              f"s.value = {v}; s.dispatchEvent(new Event('input'))")
                page.wait_for_function(f"vdStats.lastSliderMs !== null && Math.abs(S.params.kp - {v}) < 1e-6",
                                       timeout=20000)
                took.append(page.evaluate("vdStats.lastSliderMs"))
            line("dash_slider", moves=len(took), median_ms=round(statistics.median(took), 1),
                 worst_ms=round(max(took), 1))
            page.evaluate(f"const s = document.getElementById('slider-kp'); s.value = {kp0}; "
                          f"s.dispatchEvent(new Event('input'))")
            page.close()
            closes = []
            for _ in range(3):
                page = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
                page.goto(url)
                page.click("nav button[data-view=drive]")
                page.wait_for_function("S.control === true", timeout=20000)
                page.check("#arm")
                page.wait_for_function("S.armed === true", timeout=20000)
                box = page.locator("#pad").bounding_box()
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.2)
                page.mouse.down()
                wait_until(lambda: sim.truth()["w_left"] > 1.0, 20.0, sim.clock, what="driving")
                page.close()
                t0 = sim.clock.now()
                wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, poll=0.002, what="disabled")
                closes.append(sim.clock.now() - t0)
                wait_until(lambda: abs(sim.truth()["w_left"]) < 0.01, 5.0, sim.clock, what="at rest")
            line("dash_tab_close", runs=len(closes), board_ms=",".join(f"{1e3 * c:.0f}" for c in closes),
                 limit_ms=500)
            browser.close()
    finally:
        dash.send_signal(signal.SIGINT)
        try:
            dash.wait(timeout=30)
        except subprocess.TimeoutExpired:
            dash.kill()
        sim.close()
    return 0


if __name__ == "__main__":
    t = time.monotonic()
    rc = main()
    print(f"bench_dashboard: {time.monotonic() - t:.0f} s", file=sys.stderr)
    sys.exit(rc)
