# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive dashboard` in a real browser: headless Chromium (Debian's package) driven by Playwright, against a
virtual board shared by this module (`viperdrive sim` with its control endpoint: ground truth). The page loads and
plots, a step from the page gives the shared definition's metrics, kp moves on the board and survives Save and a
reset, Restore brings the saved value back, closing the tab while driving disables the board, and requests without
the token or from another origin are refused with the board not moving. Each view's screenshot is written under
the test's output (the pictures of docs/dashboard.md)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli
from dashboard_helpers import Dash, post

from viperdrive.shared import params as PARAMS
from viperdrive.timebase import wait_until
from viperdrive.tuning.steptest import step_metrics

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("VIPERDRIVE_CHROMIUM", "/usr/bin/chromium")
# as root in a container: no sandbox; and none of Chromium's own network traffic (this machine's network is closed)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync", "--disable-quic"]
SHOTS = Path(os.environ.get("VIPERDRIVE_SCREENSHOTS", "")) if os.environ.get("VIPERDRIVE_SCREENSHOTS") else None


def _need_chromium():
    if shutil.which(CHROMIUM) or Path(CHROMIUM).is_file():
        return
    why = (f"no Chromium at {CHROMIUM}: `make setup` installs Debian's chromium (or set VIPERDRIVE_CHROMIUM to "
           f"a Chromium executable)")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI=true and " + why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    _need_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Where the screenshots go: VIPERDRIVE_SCREENSHOTS if set (docs/images when the docs' pictures are made
    again), else this run's temporary folder (printed)."""
    d = SHOTS or tmp_path_factory.mktemp("dashboard-screenshots")
    d.mkdir(parents=True, exist_ok=True)
    print(f"dashboard screenshots in {d}")
    return d


def _open(browser, url, width=1400, height=900):
    # bypass_csp: the test's own probes (wait_for_function evaluates a string); the page's policy is checked in
    # the security test
    page = browser.new_page(viewport={"width": width, "height": height}, bypass_csp=True)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.errors = errors
    return page


def _set_gain(page, name, value):
    """On the Tuning view: type a gain into its field, as a user does, and wait for the board's acknowledgement."""
    page.click("nav button[data-view=tuning]")
    page.wait_for_function(f"S.params.{name} !== undefined && S.control === true", timeout=20000)
    page.fill(f"#field-{name}", str(value))
    page.dispatch_event(f"#field-{name}", "change")
    # acknowledged, or refused with the reason on the banner (shown when it fails)
    page.wait_for_function(f"Math.abs(S.params.{name} - {value}) < 1e-6 || "
                           "document.getElementById('banner').classList.contains('bad')", timeout=20000)
    assert abs(page.evaluate(f"S.params.{name}") - value) < 1e-6, \
        (page.inner_text("#banner"), page.input_value(f"#field-{name}"), page.inner_text(f"#ack-{name}"))


def _param(sim, name):
    r = run_cli("params", "get", name, "--port", sim.url, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["params"][name]


# ---- the page, the plot, the status ----

def test_page_loads_plots_every_record_and_shows_the_board(sim, dash, browser):
    page = _open(browser, dash.url)
    page.wait_for_function("vdStats.records > 200 && vdStats.draws > 10 && vdStats.statuses > 2", timeout=30000)
    # every record the dashboard received reaches the page (the drawing is decimated, the data never), and the
    # plot keeps redrawing while they come; the rates are bench/bench_dashboard.py's figures
    r1, d1, s1 = page.evaluate("[vdStats.records, vdStats.draws, vdStats.statuses]")
    page.wait_for_function(f"vdStats.records > {r1 + 300} && vdStats.draws > {d1 + 10} && "
                           f"vdStats.statuses > {s1 + 4}", timeout=30000)
    assert page.evaluate("vdStats.maxBehind") == 0
    assert json.loads(page.evaluate("JSON.stringify(S.info)"))["telemetry_hz"] > 0
    status = page.inner_text("#status")
    assert "DEADMAN" in status or "disabled" in status
    assert "none" in page.inner_text("#status tr:nth-child(2)")      # fault: none
    assert "viperdrive-sim" in page.inner_text("#board")
    # the tabs stay where they are whatever the board's line says (a click aimed as it arrives lands on its tab)
    boxes = "[...document.querySelectorAll('nav button')].map(b => JSON.stringify(b.getBoundingClientRect()))"
    before = page.evaluate(boxes)
    page.evaluate("document.getElementById('board').textContent = 'connecting...'; "
                  "document.getElementById('role').textContent = ''")
    assert page.evaluate(boxes) == before
    # every plot says what its axes show, with units (declared on the canvas; the drawing writes and records them)
    declared = page.evaluate("Object.fromEntries([...document.querySelectorAll('canvas')].map("
                             "c => [c.id, [c.dataset.xLabel, c.dataset.yLabel]]))")
    assert len(declared) == 7 and all(re.search(r"\(.+\)", t) for xy in declared.values() for t in xy), declared
    drawn = page.evaluate("vdStats.axes")
    assert {k: drawn[k] for k in ("plot-speed-left", "plot-speed-right", "plot-duty-left", "plot-duty-right")} == \
        {k: declared[k] for k in ("plot-speed-left", "plot-speed-right", "plot-duty-left", "plot-duty-right")}
    # pause: the plot stops redrawing while the records keep coming
    page.click("#pause")
    d_p, r_p = page.evaluate("[vdStats.draws, vdStats.records]")
    page.wait_for_function(f"vdStats.records > {r_p + 100}", timeout=10000)
    assert page.evaluate("vdStats.draws") <= d_p + 1
    page.click("#pause")
    assert not page.errors
    page.close()


# ---- tuning: a step from the page, kp live, Save, reset, Restore ----

def test_a_step_from_the_page_gives_the_shared_definitions_metrics_and_tunes(sim, browser, shots, tmp_path):
    d = Dash(sim.url)
    try:
        page = _open(browser, d.url)
        page.click("nav button[data-view=tuning]")
        page.fill("#step-size", "10")
        page.select_option("#step-wheel", "both")
        page.click("#step-run")
        page.wait_for_function("S.lastStep !== null", timeout=60000)
        step = page.evaluate("S.lastStep")
        shown = page.inner_text("#step-metrics")
        page.screenshot(path=str(shots / "dashboard-tuning.png"), full_page=True)
        assert not page.errors
        page.close()
    finally:
        rc, err = d.stop()
    assert rc in (0, 130), err
    t = np.array(step["t"])
    for w in ("left", "right"):
        m = step_metrics(t, np.array(step[f"measured_{w}"]), step["t_step"], step["t_end"], 10.0)
        got = step["metrics"][w]
        # the page's figures are the shared definition's on the record the page received
        assert got["rise_s"] == pytest.approx(m.rise_time_s, rel=1e-9)
        assert got["overshoot_pct"] == pytest.approx(m.overshoot, rel=1e-9)
        assert got["settling_s"] == pytest.approx(m.settling_time_s, rel=1e-9)
        assert f"{m.overshoot:.2f}" in shown
    # and `viperdrive tune` on the same board measures the same loop (another run: within the run-to-run spread)
    r = run_cli("tune", "--port", sim.url, "--step", "10", "--json", "-q", timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tune = json.loads(r.stdout)["wheels"]
    print(f"page: {step['metrics']}; tune: {tune}")
    for w in ("left", "right"):
        assert step["metrics"][w]["rise_s"] == pytest.approx(tune[w]["rise_time_s"], abs=0.004)
        assert step["metrics"][w]["overshoot_pct"] == pytest.approx(tune[w]["overshoot"], abs=1.5)


def test_kp_from_the_page_save_reset_keeps_it_restore_brings_the_saved_one_back(sim, browser, shots):
    default = PARAMS.by_name("kp")[PARAMS.DEFAULT]
    new = 0.05
    d = Dash(sim.url)
    try:
        page = _open(browser, d.url)
        _set_gain(page, "kp", new)
        latency = page.evaluate("vdStats.lastParamMs")
        # the slider: a move applies too
        page.evaluate("const s = document.getElementById('slider-kp'); s.value = 0.045; "
                      "s.dispatchEvent(new Event('input'))")
        page.wait_for_function("Math.abs(S.params.kp - 0.045) < 1e-6 && vdStats.lastSliderMs !== null",
                               timeout=20000)
        slider_ms = page.evaluate("vdStats.lastSliderMs")
        print(f"kp on the board {latency:.0f} ms after the field's change, {slider_ms:.0f} ms after the slider "
              f"move (to the board's PARAM_ACK, as the page saw it)")
        _set_gain(page, "kp", new)
        page.click("#save")
        page.wait_for_function("document.getElementById('save-msg').textContent.startsWith('saved')",
                               timeout=20000)
        page.close()
    finally:
        rc, err = d.stop()
    assert rc in (0, 130), err
    assert _param(sim, "kp") == pytest.approx(new, rel=1e-6)
    sim.control({"cmd": "reset"})                   # a power cycle: the board loads what it saved
    wait_until(lambda: run_cli("info", "--port", sim.url).returncode == 0, 20.0, sim.clock, poll=0.2,
               what="the board back after the reset")
    assert _param(sim, "kp") == pytest.approx(new, rel=1e-6)
    d = Dash(sim.url)
    try:
        page = _open(browser, d.url)
        page.click("nav button[data-view=params]")
        page.wait_for_selector("input.pval[data-name=kp]")
        page.fill("input.pval[data-name=kp]", "0.03")
        page.dispatch_event("input.pval[data-name=kp]", "change")
        page.wait_for_function("Math.abs(S.params.kp - 0.03) < 1e-6", timeout=20000)
        # out of range: refused in the page, nothing sent
        page.fill("input.pval[data-name=kp]", "99")
        page.dispatch_event("input.pval[data-name=kp]", "change")
        assert "refused" in page.inner_text("#banner") and page.evaluate("S.params.kp") == pytest.approx(0.03)
        page.screenshot(path=str(shots / "dashboard-params.png"), full_page=True)
        page.click("nav button[data-view=tuning]")
        page.click("#restore")
        page.wait_for_function(f"Math.abs(S.params.kp - {new}) < 1e-6", timeout=20000)
        page.close()
    finally:
        rc, err = d.stop()
    assert rc in (0, 130), err
    assert _param(sim, "kp") == pytest.approx(new, rel=1e-6)
    # and the board refuses it too (the server's range check, the board's own behind it)
    d = Dash(sim.url)
    try:
        page = _open(browser, d.url)
        page.wait_for_function("S.session !== null && S.control === true", timeout=20000)
        sid = page.evaluate("S.session")
        status, out = post(d.base, "/api/param", {"name": "kp", "value": 99}, d.token,
                            {"X-Viperdrive-Session": sid, "Origin": d.base})
        assert status == 400 and "kp=99.0 outside [0.0, 10.0]" in out["error"], out
        status, out = post(d.base, "/api/param", {"name": "kp", "value": float("nan")}, d.token,
                            {"X-Viperdrive-Session": sid, "Origin": d.base})
        assert status == 400, out
        page.close()
    finally:
        d.stop()
    r = run_cli("params", "set", f"kp={default}", "--save", "--port", sim.url)
    assert r.returncode == 0, r.stderr


def test_unsaved_changes_are_put_back_when_the_dashboard_ends(sim, browser):
    before = _param(sim, "ki")
    d = Dash(sim.url)
    try:
        page = _open(browser, d.url)
        _set_gain(page, "ki", 0.5)
    finally:
        rc, err = d.stop()          # SIGINT, as Ctrl-C
    assert rc in (0, 130), err
    assert _param(sim, "ki") == pytest.approx(before, rel=1e-6)


# ---- driving: arm, pad, the page's deadman ----

def _drive(page):
    page.click("nav button[data-view=drive]")
    page.check("#arm")
    page.wait_for_function("S.armed === true", timeout=20000)
    box = page.locator("#pad").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.2)
    page.mouse.down()


def test_the_pictures_of_driving(sim, dash, browser, shots):
    """The Live view while the pad drives (switched by script: the pointer stays on the pad), then the Drive view,
    each once a second of records came in (docs/dashboard.md's pictures). A screenshot holds the page's timers
    while Chromium renders it: on a busy machine longer than the page's deadman, which then stops the robot, as it
    should; so the safety tests take no pictures."""
    page = _open(browser, dash.url)
    _drive(page)
    dash.driving(sim)
    n = page.evaluate("vdStats.records")
    page.evaluate("document.querySelector('nav button[data-view=live]').click()")
    page.wait_for_function(f"vdStats.records > {n + 160}", timeout=20000)
    page.screenshot(path=str(shots / "dashboard-live-driving.png"))
    page.evaluate("document.querySelector('nav button[data-view=drive]').click()")
    page.wait_for_function(f"vdStats.records > {n + 320}", timeout=20000)
    page.screenshot(path=str(shots / "dashboard-drive.png"))
    assert not page.errors
    page.close()
    wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, what="the board disabled")


def test_closing_the_tab_while_armed_and_driving_disables_the_board_within_half_a_second(sim, dash, browser):
    page = _open(browser, dash.url)
    _drive(page)
    dash.driving(sim)
    assert sim.truth()["energized"]
    speed = sim.truth()["w_left"]
    page.close()
    t0 = sim.clock.now()
    wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, poll=0.005, what="the board disabled")
    took = sim.clock.now() - t0
    print(f"tab closed while driving at {speed:.2f} rad/s: board disabled {took * 1e3:.0f} ms "
          f"later (board time)")
    assert took < 0.5


def test_a_page_sent_to_the_background_stops_the_robot(sim, dash, browser):
    page = _open(browser, dash.url)
    _drive(page)
    dash.driving(sim)
    page.evaluate("Object.defineProperty(document, 'hidden', {value: true, configurable: true}); "
                  "document.dispatchEvent(new Event('visibilitychange'))")
    wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, what="the board disabled")
    assert "background" in page.inner_text("#drive-msg")
    page.close()


def test_the_controls_wait_for_the_pages_role(dash, browser):
    """Until the dashboard has said whether this page controls the board, nothing can be pressed: an Arm clicked
    then was refused ("only watches") and the page never drove (the page's hello is held back here)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900}, bypass_csp=True)
    held: list = []
    page.route("**/api/hello", lambda route: held.append(route))
    page.goto(dash.url)
    page.wait_for_function("document.readyState === 'complete'")
    wait_until(lambda: held or page.evaluate("0"), 20.0, what="the page's hello")
    assert page.evaluate("S.session") is None
    enabled = page.evaluate("[...document.querySelectorAll('.ctl')].filter(e => !e.disabled).map(e => e.id)")
    assert enabled == [], enabled
    held[0].continue_()
    page.wait_for_function("S.control === true", timeout=20000)
    assert not page.is_disabled("#arm")
    page.close()


def test_a_second_page_only_watches(sim, dash, browser):
    first = _open(browser, dash.url)
    first.wait_for_function("S.session !== null && S.control === true", timeout=20000)
    second = _open(browser, dash.url)
    second.wait_for_function("S.session !== null", timeout=20000)
    assert second.evaluate("S.control") is False and "Read-only" in second.inner_text("#banner")
    assert second.is_disabled("#arm")
    status, out = post(dash.base, "/api/arm", {"on": True}, dash.token,
                        {"X-Viperdrive-Session": second.evaluate("S.session"), "Origin": dash.base})
    assert status == 403 and "only watches" in out["error"]
    assert not sim.truth()["energized"]
    first.close()
    second.close()


# ---- security: the token, the origin, the host ----

class _EvilPage(BaseHTTPRequestHandler):
    """A page on another origin (another port of the same machine) that tries to drive the robot: with no token,
    with a guessed one, by a form, and through fetch."""
    target = ""

    def log_message(self, *a):
        pass

    def do_GET(self):  # noqa: N802
        t = self.target
        html = f"""<html><body><form id=f method=POST action="{t}/api/arm" enctype="text/plain">
<input name='{{"on": true, "x": "' value='"}}'></form><script>
window.results = [];
async function tryit(path, headers, body) {{
  try {{
    const r = await fetch("{t}" + path, {{method: "POST", headers, body}});
    window.results.push([path, r.status]);
  }}
  catch (e) {{ window.results.push([path, "blocked: " + e]); }}
}}
(async () => {{
  await tryit("/api/hello", {{"Content-Type": "application/json"}}, "{{}}");
  await tryit("/api/arm", {{"Content-Type": "application/json", "X-Viperdrive-Token": "guess"}}, '{{"on": true}}');
  await tryit("/api/arm", {{"Content-Type": "text/plain"}}, '{{"on": true}}');
  window.done = true;
}})();
</script></body></html>"""
        data = html.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_requests_without_the_token_or_from_another_origin_are_refused_and_the_board_does_not_move(sim, dash,
                                                                                                   browser):
    base, token = dash.base, dash.token
    # the page: nothing from anywhere else, no framing by another page
    with urllib.request.urlopen(dash.url, timeout=10) as r:
        csp = r.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    # no token, a wrong token: the page, the stream, the API
    for url in (base + "/", base + "/?token=wrong", base + "/events"):
        try:
            urllib.request.urlopen(url, timeout=10)
            raise AssertionError(f"{url} answered")
        except urllib.error.HTTPError as e:
            assert e.code == 403 and "token" in json.loads(e.read())["error"]
    assert post(base, "/api/arm", {"on": True})[0] == 403
    assert post(base, "/api/arm", {"on": True}, "wrong")[0] == 403
    # the right token from another origin, or under another host name (DNS rebinding): refused
    status, out = post(base, "/api/hello", {}, token, {"Origin": "http://evil.example"})
    assert status == 403 and "evil.example" in out["error"]
    status, out = post(base, "/api/hello", {}, token, {"Host": "evil.example:80"})
    assert status == 403 and "Host" in out["error"]
    status, out = post(base, "/api/hello", {}, token, {"Sec-Fetch-Site": "cross-site"})
    assert status == 403
    # not JSON: refused before anything runs (a cross-origin form can only send text/plain)
    req = urllib.request.Request(base + "/api/arm", data=b"on=1", method="POST",
                                 headers={"X-Viperdrive-Token": token, "Content-Type": "text/plain"})
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("a text/plain command was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 415
    # another page in the same browser, from another origin: its form post and its fetches get nowhere
    _EvilPage.target = base
    evil = ThreadingHTTPServer(("127.0.0.1", 0), _EvilPage)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        page = _open(browser, f"http://127.0.0.1:{evil.server_address[1]}/")
        page.wait_for_function("window.done === true", timeout=20000)
        results = page.evaluate("window.results")
        page.evaluate("document.getElementById('f').submit()")
        page.wait_for_load_state()
        body = page.inner_text("body")
        page.close()
    finally:
        evil.shutdown()
    print(f"the other origin's fetches: {results}; its form post answered: {body[:120]!r}")
    for path, status in results:
        assert status == 403 or str(status).startswith("blocked"), (path, status)
    assert "forbidden" in body.lower() or "refused" in body.lower() or "token" in body.lower()
    # every request was answered with a refusal before anything reached the board thread
    t = sim.truth()
    assert not t["energized"] and abs(t["w_left"]) < 0.01 and abs(t["w_right"]) < 0.01


# ---- however it ends ----

def test_sigterm_while_driving_leaves_the_board_disabled_and_the_parameters_as_they_were(sim, browser):
    before = _param(sim, "kp")
    d = Dash(sim.url)
    page = _open(browser, d.url)
    _set_gain(page, "kp", 0.06)
    _drive(page)
    d.driving(sim)
    rc, err = d.stop(signal.SIGTERM)
    page.wait_for_function("document.getElementById('banner').textContent.includes('stopped')", timeout=10000)
    page.close()
    assert rc == 130, err
    assert "Traceback" not in err
    assert not sim.truth()["energized"]
    assert _param(sim, "kp") == pytest.approx(before, rel=1e-6)


def test_a_lost_link_ends_the_dashboard_with_the_reason_and_the_board_stops(sim, browser):
    d = Dash(sim.url)
    page = _open(browser, d.url)
    _drive(page)
    d.driving(sim)
    sim.control({"cmd": "fault", "kind": "cut_link", "on": True})
    try:
        d.proc.wait(timeout=30)
        # the board's own deadman: zero at once, outputs off after deadman_disable_ms
        wait_until(lambda: not sim.truth()["energized"], 5.0, sim.clock, what="the board's deadman disabling it")
    finally:
        sim.control({"cmd": "fault", "kind": "cut_link", "on": False})
    page.close()
    rc, err = d.stop()
    print(f"link cut while driving: {err.strip().splitlines()[-1]}")
    assert rc == 4 and "the dashboard ended" in err and "Traceback" not in err, err
