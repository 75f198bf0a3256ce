"""HTTP endpoints: /metrics, /diagnoses, /-/healthy, /-/ready.

With a web config (``sanlens.web_config``) every endpoint is served over TLS and/or behind
basic auth, as the Prometheus exporter-toolkit does: the health endpoints too.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from prometheus_client import CONTENT_TYPE_LATEST

from sanlens import __version__
from sanlens.exposition import Exposition
from sanlens.state import State
from sanlens.web_config import ActiveWeb, WebSecurity

log = logging.getLogger(__name__)

INDEX = """<html><head><title>sanlens</title></head><body><h1>sanlens {version}</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/diagnoses">/diagnoses</a></li>
<li><a href="/-/healthy">/-/healthy</a></li><li><a href="/-/ready">/-/ready</a></li></ul></body></html>"""


# A TLS handshake that takes longer than this is dropped, so idle sockets do not pile up.
HANDSHAKE_TIMEOUT = 10.0
# What Go's servers answer when plain HTTP reaches a TLS port: clearer than a reset.
PLAIN_HTTP_ON_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"Client sent an HTTP request to an HTTPS server.\n"
)
_TLS_HANDSHAKE_RECORD = b"\x16"


def parse_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return (host or "0.0.0.0"), int(port)


class _HTTPServer(ThreadingHTTPServer):
    """Threads per connection; with a TLS web config, each thread does its own handshake."""

    daemon_threads = True
    web: WebSecurity | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        active = self.web.current() if self.web is not None else None
        if active is None or active.context is None:
            super().finish_request(request, client_address)
            return
        conn = _handshake(request, active, client_address)
        if conn is None:
            return
        try:
            super().finish_request(conn, client_address)
        finally:
            self.shutdown_request(conn)


def _handshake(sock: socket.socket, active: ActiveWeb, peer: Any) -> ssl.SSLSocket | None:
    """The TLS side of an accepted connection, or None when it was refused (and answered, for plain HTTP)."""
    assert active.context is not None and active.config.tls is not None
    try:
        sock.settimeout(HANDSHAKE_TIMEOUT)
        first = sock.recv(1, socket.MSG_PEEK)
        if not first:
            return None
        if first != _TLS_HANDSHAKE_RECORD:
            sock.sendall(PLAIN_HTTP_ON_TLS)
            return None
        conn = active.context.wrap_socket(sock, server_side=True)
    except OSError as e:  # ssl.SSLError included: no client certificate, an old TLS version...
        log.debug("TLS handshake with %s failed: %s", peer, e)
        return None
    if not active.config.tls.allows(conn.getpeercert()):
        log.debug("client certificate of %s has none of client_allowed_sans", peer)
        conn.close()
        return None
    conn.settimeout(None)
    return conn


class _Handler(BaseHTTPRequestHandler):
    server_version = f"sanlens/{__version__}"
    state: State
    exposition: Exposition
    _extra_headers: dict[str, str] = {}

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**self._extra_headers, **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _admitted(self) -> bool:
        """Applies the web config's headers, rate limit and basic auth; False once refused and answered."""
        web = cast(_HTTPServer, self.server).web
        if web is None:
            return True
        active = web.current()
        self._extra_headers = dict(active.config.headers)
        if active.limiter is not None and not active.limiter.allow():
            self._send(429, b"Too Many Requests\n", "text/plain; charset=utf-8")
            return False
        if active.auth is not None and not active.auth.check(self.headers.get("Authorization")):
            self._send(
                401,
                b"Unauthorized\n",
                "text/plain; charset=utf-8",
                {"WWW-Authenticate": 'Basic realm="sanlens", charset="UTF-8"'},
            )
            return False
        return True

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if not self._admitted():
            return
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, self.exposition.render(), CONTENT_TYPE_LATEST)
        elif path == "/diagnoses":
            engine = self.state.engine
            findings = engine.findings() if engine is not None else []
            self._send(200, json.dumps(findings, indent=1).encode(), "application/json")
        elif path == "/-/healthy":
            self._send(200, b"OK\n", "text/plain")
        elif path == "/-/ready":
            if self.state.ready():
                self._send(200, b"ready\n", "text/plain")
            else:
                self._send(503, b"not ready: first poll pending\n", "text/plain")
        elif path == "/":
            self._send(200, INDEX.format(version=__version__).encode(), "text/html")
        else:
            self._send(404, b"not found\n", "text/plain")


class ExporterServer:
    """The exporter's HTTP server, run in a background thread; ``web`` adds TLS and basic auth."""

    def __init__(self, state: State, listen: str, web: WebSecurity | None = None) -> None:
        host, port = parse_listen(listen)
        handler = type("Handler", (_Handler,), {"state": state, "exposition": Exposition(state)})
        self.httpd = _HTTPServer((host, port), handler)
        self.httpd.web = web
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def scheme(self) -> str:
        web = self.httpd.web
        return "https" if web is not None and web.tls else "http"

    def secure(self, web: WebSecurity) -> None:
        """Serves every endpoint with the web config; only before ``start``, so no request is ever served without it."""
        if self.thread.is_alive():
            raise RuntimeError("the web config must be set before the server starts")
        self.httpd.web = web

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
