# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive dashboard` as a process for the tests: started as a user starts it, its URL and token from what it
prints, its JSON API (post), its event stream read as a page reads it (Events), and a page that drives (Driver:
a session, arm, a drive command every DRIVE_EVERY_S of board time from a thread)."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from cli_helpers import VIPERDRIVE

from viperdrive.timebase import WaitTimeout, wait_until

DRIVE_EVERY_S = 0.1     # the page's pad sends this often


class Dash:
    """`viperdrive dashboard --port URL --listen 127.0.0.1:0` as a user runs it: its URL from what it prints."""

    def __init__(self, port_url: str, listen: str = "127.0.0.1:0", env: dict | None = None):
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([VIPERDRIVE, "dashboard", "--port", port_url, "--listen", listen],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL, env=e)
        line = self.proc.stdout.readline()
        if not line.startswith("dashboard on "):
            self.proc.kill()
            raise AssertionError(f"viperdrive dashboard printed {line!r}: {self.proc.stderr.read()}")
        self.log: list[str] = []        # what it says on stderr (armed, disarmed and why), read as it comes
        self._reader = threading.Thread(target=lambda: self.log.extend(iter(self.proc.stderr.readline, "")),
                                        daemon=True)
        self._reader.start()
        self.url = line[len("dashboard on "):].strip()
        parts = urlsplit(self.url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.netloc = parts.netloc
        self.token = parts.query.split("token=", 1)[1]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGINT) -> tuple[int, str]:
        """Stop it with `sig` (Ctrl-C by default) -> its exit code and everything it said on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=10)
        said = "".join(self.log)
        print(f"the dashboard ended with exit {self.proc.returncode}; it said:\n{said}")   # shown when a test fails
        return self.proc.returncode, said

    def driving(self, sim) -> None:
        """Wait until the page's pad drives the robot (outputs on, the left wheel above 1 rad/s), in board time;
        what the dashboard said when it does not."""
        def moving():
            t = sim.truth()
            return t["energized"] and t["w_left"] > 1.0
        try:
            wait_until(moving, 20.0, sim.clock, what="the robot driving from the page")
        except WaitTimeout as e:
            raise AssertionError(f"{e}; the dashboard said: {''.join(self.log)}") from None

    def post(self, path: str, body, session: str | None = None, headers: dict | None = None, timeout=30):
        h = {"X-Viperdrive-Session": session} if session else {}
        h.update(headers or {})
        return post(self.base, path, body, self.token, h, timeout=timeout)

    def hello(self) -> tuple[str, str]:
        status, out = self.post("/api/hello", {})
        assert status == 200, out
        return out["session"], out["role"]


def post(base, path, body, token=None, headers=None, timeout=30, raw: bytes | None = None):
    """POST a JSON body (or raw bytes) -> (status, the JSON answer)."""
    h = {"Content-Type": "application/json"}
    if token is not None:
        h["X-Viperdrive-Token"] = token
    h.update(headers or {})
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


class Events:
    """The dashboard's event stream, read from a thread as a page reads it: every event (kind, data) in order.
    session: the page's session (its stream closing is that page going away: close())."""

    def __init__(self, dash: Dash, session: str | None = None):
        self.events: list[tuple[str, object]] = []
        self.lock = threading.Lock()
        host, _, port = dash.netloc.rpartition(":")
        self.conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)
        path = f"/events?token={dash.token}" + (f"&session={session}" if session else "")
        self.conn.request("GET", path, headers={"Host": dash.netloc})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        kind = None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind is not None:
                    with self.lock:
                        self.events.append((kind, json.loads(line[6:])))
                    kind = None
        except (OSError, ValueError, http.client.HTTPException):
            pass

    def of(self, kind: str) -> list:
        with self.lock:
            return [d for k, d in self.events if k == kind]

    def close(self) -> None:
        try:
            self.resp.close()
            self.conn.sock and self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()


class Driver:
    """A page that controls and drives: its session, arm, and a thread that sends (v, w) every DRIVE_EVERY_S of
    board time until stop_sending(). answers: the status of every drive command."""

    def __init__(self, dash: Dash, sim):
        self.dash = dash
        self.sim = sim
        self.session, role = dash.hello()
        assert role == "control", role
        self.v = 0.0
        self.w = 0.0
        self.answers: list[int] = []
        self.refusals: list[tuple[float, int, str]] = []     # (board time, status, why) of every answer not 200
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def arm(self, on: bool = True) -> dict:
        status, out = self.dash.post("/api/arm", {"on": on}, self.session)
        assert status == 200, out
        return out

    def drive(self, v: float, w: float = 0.0) -> None:
        """Arm and keep sending (v, w)."""
        self.v, self.w = v, w
        self.arm(True)
        self.send_again()

    def send_again(self) -> None:
        """Go on sending (v, w) after stop_sending(), without arming."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._send, daemon=True)
        self._thread.start()

    def _send(self) -> None:
        clock = self.sim.clock
        while not self._stop.is_set():
            try:
                status, out = self.dash.post("/api/drive", {"v": self.v, "w": self.w}, self.session, timeout=10)
                why = str(out.get("error", "")) if isinstance(out, dict) else repr(out)
            except OSError as e:
                status, why = -1, f"{type(e).__name__}: {e}"
            self.answers.append(status)
            if status != 200:
                self.refusals.append((clock.now(), status, why))
            clock.sleep(DRIVE_EVERY_S)

    def stop_sending(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
