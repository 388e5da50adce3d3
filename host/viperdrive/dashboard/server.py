# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's web server (the standard library's, one thread per request): the page, a Server-Sent Events
stream of the board's data, and a JSON API for the page's commands.

Who may do what (docs/dashboard.md, "Security"):
- It listens on 127.0.0.1 unless told otherwise.
- Every request carries the token printed in the URL (as Jupyter does): in the query for the page and the stream,
  in the X-Viperdrive-Token header for the API. Compared in constant time.
- The Host header must name this server (a DNS-rebinding page cannot reach it under another name); a request with
  an Origin, or a Sec-Fetch-Site, from anywhere but this server's own origin is refused. API calls are POSTs with a
  JSON body: a form on another page cannot send one without a CORS preflight, which this server never answers.
- Commands that change anything come from the controlling page only (X-Viperdrive-Session: its session, given
  by /api/hello to the first page; later pages watch)."""
from __future__ import annotations

import hmac
import json
import queue
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from ..errors import BadValue, UserError
from ..stats import finite_or_none
from .core import Dashboard

KEEPALIVE_S = 0.1       # the stream writes at least this often: a closed tab is seen within about this long
MAX_BODY = 16384


def _page() -> bytes:
    """The page: index.html with its script and style inlined (one request, nothing from anywhere else)."""
    d = resources.files("viperdrive.dashboard") / "static"
    html = (d / "index.html").read_text()
    html = html.replace("/*STYLE*/", (d / "dashboard.css").read_text())
    html = html.replace("/*SCRIPT*/", (d / "dashboard.js").read_text())
    return html.encode()


class DashboardServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], dash: Dashboard, token: str):
        super().__init__(address, Handler)
        self.dash = dash
        self.token = token
        self.page = _page()
        host, port = str(self.server_address[0]), int(self.server_address[1])
        self.names = {f"{host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}
        self.origins = {f"http://{n}" for n in self.names}
        self.closing = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{str(self.server_address[0])}:{int(self.server_address[1])}/?token={self.token}"

    def shutdown(self) -> None:
        self.closing.set()
        super().shutdown()

    def handle_error(self, request, client_address) -> None:
        # a page that went away mid-reply (a closed tab, a reload) is normal; anything else is one line, not a
        # traceback on the user's terminal
        import sys
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):
            return
        print(f"viperdrive dashboard: a request from {client_address[0]} failed: {exc!r}", file=sys.stderr)


class Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):    # noqa: A002 - the base class's name
        pass                                # quiet: the CLI says what matters

    # ---- checks ----

    def _refuse(self, status: HTTPStatus, why: str) -> None:
        self._send_json(status, {"error": why})

    def _allowed(self, token: str | None) -> bool:
        s = self.server
        if self.headers.get("Host", "") not in s.names:
            self._refuse(HTTPStatus.FORBIDDEN, "this server answers only to its own address (Host header)")
            return False
        origin = self.headers.get("Origin")
        if origin is not None and origin not in s.origins:
            self._refuse(HTTPStatus.FORBIDDEN, f"requests from {origin} are refused: only this dashboard's own page "
                                               f"may talk to it")
            return False
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            self._refuse(HTTPStatus.FORBIDDEN, f"a {site} request is refused: only this dashboard's own page may "
                                               f"talk to it")
            return False
        if not token or not hmac.compare_digest(token.encode(), s.token.encode()):
            self._refuse(HTTPStatus.FORBIDDEN, "missing or wrong token: open the URL `viperdrive dashboard` printed "
                                               "(it carries the token)")
            return False
        return True

    # ---- replies ----

    def _send_json(self, status: HTTPStatus, body) -> None:
        data = json.dumps(finite_or_none(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    # ---- GET: the page, the stream ----

    def do_GET(self):  # noqa: N802 - the base class's name
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        token = q.get("token", [""])[0]
        if url.path == "/favicon.ico":
            self.send_response(HTTPStatus.NO_CONTENT)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if not self._allowed(token):
            return
        if url.path == "/":
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.server.page)))
            self.send_header("Cache-Control", "no-store")
            # nothing from anywhere else, no framing by other pages
            self.send_header("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; "
                                                        "style-src 'unsafe-inline'; img-src 'self' data:; "
                                                        "frame-ancestors 'none'")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(self.server.page)
        elif url.path == "/events":
            self._events(q.get("session", [""])[0] or None)
        else:
            self._refuse(HTTPStatus.NOT_FOUND, f"no such page: {url.path}")

    def _events(self, sid: str | None) -> None:
        dash = self.server.dash
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sub = dash.subscribe()
        why = "its stream closed"
        try:
            while not self.server.closing.is_set():
                try:
                    kind, data = sub.get(timeout=KEEPALIVE_S)
                    chunk = f"event: {kind}\ndata: {json.dumps(finite_or_none(data))}\n\n".encode()
                except queue.Empty:
                    chunk = b": keepalive\n\n"
                self.wfile.write(chunk)
                self.wfile.flush()
                if kind == "ended":
                    break
                kind = ""
        except OSError:
            why = "the tab closed or the connection dropped"
        finally:
            dash.unsubscribe(sub)
            if sid is not None:
                dash.goodbye(sid, why)

    # ---- POST: commands ----

    def do_POST(self):  # noqa: N802 - the base class's name
        url = urlsplit(self.path)
        if not self._allowed(self.headers.get("X-Viperdrive-Token")):
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._refuse(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "commands are JSON (Content-Type: application/json)")
            return
        try:
            n = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            n = -1
        if not 0 <= n <= MAX_BODY:
            self._refuse(HTTPStatus.BAD_REQUEST, "a command's body is JSON of at most 16 KiB")
            return
        try:
            body = json.loads(self.rfile.read(n) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self._refuse(HTTPStatus.BAD_REQUEST, f"the body is not a JSON object: {e}")
            return
        name = url.path.removeprefix("/api/")
        dash = self.server.dash
        sid = self.headers.get("X-Viperdrive-Session")
        try:
            if name == "hello":
                out = dash.hello()
            elif name == "params":
                out = dash.call(dash.read_params)
            else:
                fn = self._command(name, body)
                if fn is None:
                    self._refuse(HTTPStatus.NOT_FOUND, f"no such command: {name}")
                    return
                dash.require_control(sid)
                out = dash.call(*fn, timeout=60.0)
        except PermissionError as e:
            self._refuse(HTTPStatus.FORBIDDEN, str(e))
            return
        except (BadValue, KeyError, TypeError) as e:
            self._refuse(HTTPStatus.BAD_REQUEST, str(e) if not isinstance(e, KeyError) else f"missing {e}")
            return
        except UserError as e:
            self._refuse(HTTPStatus.CONFLICT, str(e))
            return
        except TimeoutError:
            self._refuse(HTTPStatus.GATEWAY_TIMEOUT, "the board did not answer in time")
            return
        self._send_json(HTTPStatus.OK, out)

    def _command(self, name: str, body: dict):
        dash = self.server.dash
        if name == "arm":
            why = str(body.get("why", "disarmed from the page"))[:200]
            return (dash.arm, bool(body["on"]), why)
        if name == "drive":
            return (dash.drive_command, body["v"], body["w"])
        if name == "param":
            return (dash.set_param, body["name"], body["value"])
        if name == "save":
            return (dash.save,)
        if name == "restore":
            return (dash.restore,)
        if name == "step":
            return (dash.step, body.get("wheel", "both"), body["size"], bool(body.get("lift_ramp", True)))
        if name == "design":
            return (dash.design, body["settle_s"], body["overshoot_pct"])
        if name == "clear_fault":
            return (dash.clear_fault,)
        return None
