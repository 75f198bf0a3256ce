"""HTTP endpoints: /metrics, /diagnoses, /-/healthy, /-/ready."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from sanlens import __version__
from sanlens.exposition import Exposition
from sanlens.state import State

log = logging.getLogger(__name__)

INDEX = """<html><head><title>sanlens</title></head><body><h1>sanlens {version}</h1>
<ul><li><a href="/metrics">/metrics</a></li><li><a href="/diagnoses">/diagnoses</a></li>
<li><a href="/-/healthy">/-/healthy</a></li><li><a href="/-/ready">/-/ready</a></li></ul></body></html>"""


def parse_listen(listen: str) -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    return (host or "0.0.0.0"), int(port)


class _Handler(BaseHTTPRequestHandler):
    server_version = f"sanlens/{__version__}"
    state: State
    exposition: Exposition

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
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
    """The exporter's HTTP server, run in a background thread."""

    def __init__(self, state: State, listen: str) -> None:
        host, port = parse_listen(listen)
        handler = type("Handler", (_Handler,), {"state": state, "exposition": Exposition(state)})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
