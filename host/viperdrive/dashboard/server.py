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
import ipaddress
import json
import queue
import select
import socket
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, urlsplit

from ..errors import BadValue, UserError
from ..stats import finite_or_none
from . import api
from .core import Dashboard

KEEPALIVE_S = 0.1       # the stream writes at least this often (a proxy or a browser that drops idle streams)
EVENT_POLL_S = 0.02     # and looks this often whether the page closed its end: a closed tab is seen within this
MAX_BODY = 16384


def _page() -> bytes:
    """The page: index.html with its script and style inlined (one request, nothing from anywhere else)."""
    d = resources.files("viperdrive.dashboard") / "static"
    html = (d / "index.html").read_text()
    html = html.replace("/*STYLE*/", (d / "dashboard.css").read_text())
    html = html.replace("/*SCRIPT*/", (d / "dashboard.js").read_text())
    return html.encode()


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and "localhost": only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, str]:
    """A Host header or HOST:PORT -> (host, port text); "[::1]:8770" -> ("::1", "8770")."""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = value.rpartition(":")
    return (host, port) if host else (value, "")


class DashboardServer(ThreadingHTTPServer):
    """The HTTP server on (host, port); host may be an IPv6 address ("::1"). The Host header must name it: on a
    loopback address, localhost or a loopback address; on a wildcard (0.0.0.0, ::) or another address, also any IP
    address of this machine as a literal (a DNS-rebinding page always names a host *name*, so a literal address is
    the browser talking to this server) and this machine's host name."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64         # pages connecting at once (the default 5 drops the rest's first attempt)

    def __init__(self, address: tuple[str, int], dash: Dashboard, token: str):
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__(address, Handler)
        self.dash = dash
        self.token = token
        self.page = _page()
        self.host = str(self.server_address[0])
        self.port = int(self.server_address[1])
        self.loopback_only = is_loopback(self.host)
        self.hostnames = {"localhost"}
        if not self.loopback_only:
            self.hostnames.add(socket.gethostname().lower())
        self.closing = threading.Event()

    def host_allowed(self, header: str) -> bool:
        """Does a request's Host header name this server (its port, and a name or address it answers to)?"""
        host, port = split_host(header.strip().lower())
        if port != str(self.port):
            return False
        if host in self.hostnames:
            return True
        if not _is_ip(host):
            return False
        if self.loopback_only:
            return is_loopback(host)
        return True

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host == "0.0.0.0" else "::1" if self.host == "::" else self.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}/?token={self.token}"

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
        host = self.headers.get("Host", "")
        if not s.host_allowed(host):
            self._refuse(HTTPStatus.FORBIDDEN, "this server answers only to its own address (Host header)")
            return False
        origin = self.headers.get("Origin")
        if origin is not None and origin.lower() != f"http://{host.strip().lower()}":
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
                if self._peer_gone():
                    why = "the tab closed or the connection dropped"
                    break
                try:
                    kind, data = sub.get(timeout=EVENT_POLL_S)
                    chunk = f"event: {kind}\ndata: {json.dumps(finite_or_none(data))}\n\n".encode()
                except queue.Empty:
                    kind = ""
                    if time.monotonic() - self._last_write < KEEPALIVE_S:
                        continue
                    chunk = b": keepalive\n\n"
                self.wfile.write(chunk)
                self.wfile.flush()
                self._last_write = time.monotonic()
                if kind == "ended":
                    break
        except OSError:
            why = "the tab closed or the connection dropped"
        finally:
            dash.unsubscribe(sub)
            if sid is not None:
                dash.goodbye(sid, why)

    _last_write = 0.0

    def _peer_gone(self) -> bool:
        """The page closed its end (a closed tab, a dropped connection): the socket reads as at its end. A page
        never sends anything on its stream, so anything readable is that end (or a reset)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    # ---- POST: commands ----

    def do_POST(self):  # noqa: N802 - the base class's name
        dash = self.server.dash
        arrived = dash.clock.now()          # a drive command's age counts from here (board time)
        url = urlsplit(self.path)
        if not self._allowed(self.headers.get("X-Viperdrive-Token")):
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._refuse(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "commands are JSON (Content-Type: application/json)")
            return
        length = self.headers.get("Content-Length", "0").strip()
        n = int(length) if length.isdigit() and len(length) <= 6 else -1
        if not 0 <= n <= MAX_BODY:
            self._refuse(HTTPStatus.BAD_REQUEST, "a command's body is JSON of at most 16 KiB")
            return
        name = url.path.removeprefix("/api/")
        if name not in api.COMMANDS:
            self._refuse(HTTPStatus.NOT_FOUND, f"no such command: {name[:80]}")
            return
        sid = self.headers.get("X-Viperdrive-Session")
        try:
            args = api.check(name, api.parse_body(self.rfile.read(n)))
            out = self._run(dash, name, args, sid, arrived)
        except PermissionError as e:
            self._refuse(HTTPStatus.FORBIDDEN, str(e))
            return
        except BadValue as e:
            self._refuse(HTTPStatus.BAD_REQUEST, str(e))
            return
        except UserError as e:
            self._refuse(HTTPStatus.CONFLICT, str(e))
            return
        except (TimeoutError, FutureTimeout):
            self._refuse(HTTPStatus.GATEWAY_TIMEOUT, "the board did not answer in time")
            return
        self._send_json(HTTPStatus.OK, out)

    @staticmethod
    def _run(dash: Dashboard, name: str, args: list, sid: str | None, arrived: float):
        """One checked command. A watcher may only say hello and read the table; everything else is the
        controlling page's."""
        if name == "hello":
            return dash.hello()
        if name == "params":
            return dash.read_params()
        dash.require_control(sid)
        if name == "drive":
            v, w = args
            return dash.drive_command(v, w, arrived)
        if name == "design":
            return dash.design(*args)
        if name == "save":
            return dash.save()
        if name == "restore":
            return dash.restore()
        if name == "arm":
            on, why = args
            if not on:
                dash.cancel(why)        # a step test running now stops at its next period, not after its end
            return dash.call(dash.arm, on, why)
        if name == "step":
            return dash.call(dash.step, *args, dash.cancel_generation, timeout_s=60.0)
        if name == "param":
            return dash.call(dash.set_param, *args)
        if name == "clear_fault":
            return dash.call(dash.clear_fault)
        raise AssertionError(f"api.COMMANDS has {name} and the server does not")
