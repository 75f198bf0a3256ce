"""Hostile upstreams against the real pollers: every answer a broken or malicious server can give
ends the poll with its own reason, in one log line, and the target recovers at the next poll.

An in-process simulator (the ``healthy`` world) sits behind a small proxy whose ``mode`` turns
its answers hostile: huge or endless bodies, bodies shorter than their Content-Length, redirect
loops, redirects to ``file://`` or to another server, records and links of the wrong type,
``503`` with an absurd ``Retry-After``, plain ``500``s whose backoff would outlast the deadline,
exporter pages with too many series. One ONTAP and one windows_exporter target are polled every
second by ``sanlens.store.Poller``s (deadline: the 2 s floor) for the whole module.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from faults_harness import wait_for
from sanlens.config import AuthConfig, Duration, HostTarget, OntapTarget
from sanlens.hosts.windows_exporter import WindowsExporterSource
from sanlens.join.directory import LunDirectory
from sanlens.join.stage import JoinStage
from sanlens.ontap.collector import OntapSource
from sanlens.runtime.pipeline import Pipeline
from sanlens.runtime.poller import Poller
from sanlens.source import Source
from sanlens.store import State
from sanlens_sim.server import Simulator

POLL_S = 1.0
FAIL_WITHIN_S = 8.0  # a hostile answer fails the next poll: within an interval, plus its deadline
RECOVER_WITHIN_S = 2 * POLL_S + 2.0  # the first poll after the fault clears succeeds within this
MIB = 1024 * 1024
BOUND = 1 * MIB  # max_response_bytes of both targets: the simulator's pages are far below it
MAX_SERIES = 2_000  # the host page has a few hundred
USERNAME, PASSWORD = "monitor", "Hostile-Upstream-Secret-93ab"
HOST = "sql01"


# ------------------------------------------------------------------ the hostile proxy
class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.mode = "pass"
        self.requests: list[tuple[str, str]] = []  # (path, Authorization) of every request
        self.other = ""  # base URL of another server, for cross-origin redirects

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the exporter hangs up on purpose (cut answers, refused redirects)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append((self.path, self.headers.get("Authorization", "")))
        getattr(self, f"_{self.server.mode}")()

    # -- helpers
    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _upstream(self) -> tuple[int, bytes, str]:
        req = urllib.request.Request(self.server.upstream + self.path, headers={"Accept": "*/*"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            return e.code, e.read(), e.headers.get("Content-Type", "")

    def _relay(self, edit: Callable[[Any], Any] | None = None) -> None:
        status, body, ctype = self._upstream()
        if edit is not None and "json" in ctype:
            body = json.dumps(edit(json.loads(body))).encode()
        self._send(status, body, {"Content-Type": ctype})

    def _collection(self, edit: Callable[[dict[str, Any]], None]) -> None:
        def change(doc: Any) -> Any:
            if isinstance(doc, dict) and "records" in doc:
                edit(doc)
            return doc

        self._relay(change)

    # -- modes
    def _pass(self) -> None:
        self._relay()

    def _endless(self) -> None:
        """Chunked, no Content-Length: a JSON document that never ends (until the client hangs up)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b'{"records": [' + b'{"name": "x"},' * 4000
        try:
            for _ in range(4000):  # 200 MB at most
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass
        self.close_connection = True

    def _declared_huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(400 * MIB))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(b'{"records": [' + b" " * 65536)
        self.close_connection = True

    def _short_body(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "5000")
        self.end_headers()
        self.wfile.write(b'{"records": [')
        self.close_connection = True

    def _redirect_loop(self) -> None:
        self._send(302, b"", {"Location": self.path})

    def _redirect_file(self) -> None:
        self._send(302, b"", {"Location": "file:///etc/passwd"})

    def _redirect_other(self) -> None:
        self._send(307, b"", {"Location": self.server.other + self.path})

    def _retry_after(self) -> None:
        self._send(503, b'{"error": {"message": "busy"}}', {"Retry-After": "99999"})

    def _plain_500(self) -> None:
        self._send(500, b"Internal Server Error", {"Content-Type": "text/plain"})

    def _null_records(self) -> None:
        def edit(doc: dict[str, Any]) -> None:
            doc["records"] = [None, 5, "x"]

        self._collection(edit)

    def _links_string(self) -> None:
        def edit(doc: dict[str, Any]) -> None:
            doc["_links"] = "x"

        self._collection(edit)

    def _counters_wrong_type(self) -> None:
        def edit(doc: dict[str, Any]) -> None:
            for rec in doc["records"]:
                if isinstance(rec, dict) and "counters" in rec:
                    rec["counters"] = [{"name": c.get("name"), "value": {"x": [1]}} for c in rec["counters"]]

        self._collection(edit)

    def _many_series(self) -> None:
        lines = [f'windows_physical_disk_reads_total{{disk="{i} X:"}} {i}' for i in range(MAX_SERIES + 500)]
        self._send(200, ("\n".join(lines) + "\n").encode(), {"Content-Type": "text/plain; version=0.0.4"})


def _serve(server: _Server) -> _Server:
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


# ------------------------------------------------------------------ the pollers
@dataclass
class Env:
    state: State
    ontap: _Server
    host: _Server
    other: _Server
    cluster: str
    caplog: pytest.LogCaptureFixture

    def status(self, name: str) -> Any:
        return self.state.view()[1][name]


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Simulator, _Server, _Server, _Server]]:
    sim = Simulator(scenario="healthy", port=0).start()
    ontap, host, other = (_serve(_Server(sim.url)) for _ in range(3))
    ontap.other = host.other = other.url
    other.mode = "pass"
    try:
        yield sim, ontap, host, other
    finally:
        for s in (ontap, host, other):
            s.shutdown()
            s.server_close()
        sim.stop()


@pytest.fixture(scope="module")
def pollers(world: tuple[Simulator, _Server, _Server, _Server]) -> Iterator[tuple[State, list[Poller]]]:
    sim, ontap, host, _ = world
    auth = AuthConfig(username=USERNAME, password=PASSWORD)
    cluster = OntapTarget(
        name=sim.cluster_name, url=ontap.url, auth=auth, poll_interval=Duration(POLL_S),
        connect_timeout=Duration(2), read_timeout=Duration(5), max_response_bytes=BOUND,
    )  # fmt: skip
    windows = HostTarget(
        name=HOST, url=f"{host.url}/windows/{HOST}/metrics", auth=auth, poll_interval=Duration(POLL_S),
        timeout=Duration(5), max_response_bytes=BOUND, max_series=MAX_SERIES,
    )  # fmt: skip
    state = State()
    pipeline = Pipeline(state, JoinStage(LunDirectory()))  # as the runtime wires its pollers
    ontap_source = OntapSource(cluster)
    ontap_source.client.backoff = 2.0  # three retries' backoff would outlast the 2 s deadline
    sources: list[Source] = [ontap_source, WindowsExporterSource(windows)]
    running = [Poller(s, pipeline) for s in sources]
    for p in running:
        p.start()
    try:
        yield state, running
    finally:
        for p in running:
            p.halt()
        for p in running:
            p.join(5)


@pytest.fixture
def env(
    world: tuple[Simulator, _Server, _Server, _Server],
    pollers: tuple[State, list[Poller]],
    caplog: pytest.LogCaptureFixture,
) -> Iterator[Env]:
    sim, ontap, host, other = world
    state, _ = pollers
    caplog.set_level(logging.INFO)
    e = Env(state, ontap, host, other, sim.cluster_name, caplog)
    ontap.mode = host.mode = "pass"
    wait_for(lambda: e.status(e.cluster).up and e.status(HOST).up, 60.0, "both targets up")
    caplog.clear()
    yield e
    ontap.mode = host.mode = "pass"


def _errors(env: Env, name: str) -> dict[str, int]:
    return dict(env.status(name).errors)


def fail_then_recover(env: Env, name: str, server: _Server, mode: str, reasons: set[str]) -> str:
    """Turn ``mode`` on until ``name`` fails, check the reason and the log, then recover; the error."""
    before = _errors(env, name)

    def failed() -> dict[str, int]:
        now = _errors(env, name)
        return {r: n - before.get(r, 0) for r, n in now.items() if n > before.get(r, 0)}

    server.mode = mode
    try:
        grown = wait_for(failed, FAIL_WITHIN_S, f"{name} to fail under {mode}")
        message = env.status(name).last_error
    finally:
        server.mode = "pass"
    cleared = time.monotonic()
    assert set(grown) <= reasons, f"{mode}: reasons {grown}, want {reasons} ({message})"
    wait_for(lambda: env.status(name).up, RECOVER_WITHIN_S, f"{name} up again after {mode}")
    recovered = time.monotonic() - cleared
    assert recovered <= RECOVER_WITHIN_S
    traced = [r for r in env.caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not traced, f"{mode}: a traceback or error was logged: {[r.getMessage() for r in traced][:3]}"
    assert PASSWORD not in env.caplog.text
    return message


# ------------------------------------------------------------------ ONTAP
ONTAP_CASES = {
    "endless": {"too_large"},
    "declared_huge": {"too_large"},
    "short_body": {"connection"},
    "redirect_loop": {"malformed"},
    "redirect_file": {"malformed"},
    "null_records": {"malformed"},
    "links_string": {"malformed"},
    "counters_wrong_type": {"malformed"},
    "plain_500": {"api"},
}


@pytest.mark.parametrize("mode", sorted(ONTAP_CASES))
def test_hostile_ontap_answer_fails_the_poll_with_its_reason(env: Env, mode: str) -> None:
    message = fail_then_recover(env, env.cluster, env.ontap, mode, ONTAP_CASES[mode])
    if ONTAP_CASES[mode] == {"too_large"}:
        assert "max_response_bytes" in message, message
    if mode == "plain_500":
        assert "HTTP 500" in message, message


def test_retry_after_beyond_the_deadline_is_api_at_once_and_recovers_next_poll(env: Env) -> None:
    started = time.monotonic()
    message = fail_then_recover(env, env.cluster, env.ontap, "retry_after", {"api"})
    assert "HTTP 503" in message, message
    assert time.monotonic() - started < FAIL_WITHIN_S + RECOVER_WITHIN_S
    assert "busy" not in _errors(env, env.cluster), "a poll was still sleeping on Retry-After"


def test_redirect_to_another_origin_is_refused_and_gets_no_credentials(env: Env) -> None:
    seen = len(env.other.requests)
    message = fail_then_recover(env, env.cluster, env.ontap, "redirect_other", {"redirect"})
    assert env.other.url.removeprefix("http://") in message, message
    assert len(env.other.requests) == seen, "the other server was asked"
    seen = len(env.other.requests)
    fail_then_recover(env, HOST, env.host, "redirect_other", {"redirect"})
    assert len(env.other.requests) == seen, "the other server was asked"


# ------------------------------------------------------------------ host exporter
HOST_CASES = {
    "endless": {"too_large"},
    "declared_huge": {"too_large"},
    "short_body": {"connection"},
    "redirect_loop": {"malformed"},
    "redirect_file": {"malformed"},
    "many_series": {"too_large"},
}


@pytest.mark.parametrize("mode", sorted(HOST_CASES))
def test_hostile_exporter_page_fails_the_poll_with_its_reason(env: Env, mode: str) -> None:
    message = fail_then_recover(env, HOST, env.host, mode, HOST_CASES[mode])
    if mode == "many_series":
        assert "max_series" in message, message
