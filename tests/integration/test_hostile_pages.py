"""`sanlens serve` against hostile upstreams on loopback: a query API with a password in its URL that
refuses every query, a host page with a megabyte label value, a host page with a series twice.

The log never shows the password, /metrics has no line past the label bound and names what it left
out, and the page with a series twice is a target down, not a healthy one. Bounded: ~10 s.
"""

from __future__ import annotations

import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness import LOOPBACK, Harness, _py_env, free_port, harness, http_get

__all__ = ["harness"]  # the fixture

PASSWORD = "Hunter2"
HUGE = "7" * 1_000_000  # a windows_exporter disk number a megabyte long

PAGES: dict[str, tuple[str, bytes]] = {
    "/api/v1/query": ("application/json", b'{"status":"error"}'),
    "/huge/metrics": (
        "text/plain; version=0.0.4",
        (
            'windows_physical_disk_reads_total{disk="0 C:"} 5\n'
            f'windows_physical_disk_reads_total{{disk="{HUGE}"}} 7\n'
        ).encode(),
    ),
    "/twice/metrics": (
        "text/plain; version=0.0.4",
        (
            b'windows_physical_disk_reads_total{disk="0 C:"} 5\n'
            b'windows_physical_disk_reads_total{disk="0 C:"} 900\n'
        ),
    ),
}


def _upstream(h: Harness) -> int:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            kind, body = PAGES.get(self.path.split("?", 1)[0], ("text/plain", b""))
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a: Any) -> None:
            return

    server = ThreadingHTTPServer((LOOPBACK, 0), Page)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    h.add_cleanup("upstream", server.shutdown)
    return int(server.server_address[1])


def test_serve_keeps_hostile_upstreams_out_of_its_log_and_page(harness: Harness) -> None:
    up = f"{LOOPBACK}:{_upstream(harness)}"
    port = free_port()
    cfg = {
        "listen": f"{LOOPBACK}:{port}",
        "log_level": "info",
        "ontap": [
            {
                "name": "hv",
                "source": "prometheus",
                "url": f"http://admin:{PASSWORD}@{up}",
                "poll_interval": "1s",
            }
        ],
        "hosts": [
            {
                "name": "huge",
                "source": "windows_exporter",
                "url": f"http://{up}/huge/metrics",
                "poll_interval": "1s",
            },
            {
                "name": "twice",
                "source": "windows_exporter",
                "url": f"http://{up}/twice/metrics",
                "poll_interval": "1s",
            },
        ],
    }
    path = harness.write("sanlens.yaml", cfg)
    proc = harness.spawn(
        "exporter", [sys.executable, "-m", "sanlens", "serve", "--config", str(path)], env=_py_env()
    )
    url = f"http://{LOOPBACK}:{port}"

    def page() -> str | None:
        status, body = http_get(url + "/metrics", timeout=5)
        if status != 200:
            return None
        text = body.decode()
        polls = {
            m.group(1): float(m.group(2))
            for m in re.finditer(r'sanlens_polls_total\{kind="[^"]+",target="([^"]+)"\} (\S+)', text)
        }
        return text if all(polls.get(t, 0) >= 2 for t in ("hv", "huge", "twice")) else None

    text = harness.wait_until(page, 30, 0.3, "two polls of every target")
    log = proc.tail(200_000)
    assert "poll hv failed (api)" in log
    assert PASSWORD not in log and PASSWORD not in text
    assert max(len(line) for line in text.splitlines()) < 4096
    assert re.search(r'sanlens_series_dropped\{reason="label_value_too_long",target="huge"\} [1-9]', text), (
        text
    )
    target_up = {
        m[1]: m[2] for m in re.finditer(r'sanlens_target_up\{kind="[^"]+",target="([^"]+)"\} (\S+)', text)
    }
    assert target_up == {"hv": "0.0", "huge": "1.0", "twice": "0.0"}
    assert log.count("left out of /metrics") == 1, "logged once, not every poll"
