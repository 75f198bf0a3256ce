"""Helpers for the fault tests: simulator processes, a fault proxy, a scrape watcher, resource counts.

- :class:`SimProcess` runs ``sanlens simulate`` in its own process, so it can be killed
  (SIGKILL: every connection dies with it) and started again on the same port, and so
  the test process holds only the exporter's threads and sockets.
- :class:`FaultProxy` stands between the exporter and a simulator on loopback: it passes
  requests through, answers one byte per second (``trickle``), or asks for a password.
- :class:`Watcher` scrapes the exporter's ``/metrics`` and ``/diagnoses`` every 100 ms,
  times every answer, keeps the self-monitoring families it reads, and records whatever
  must never happen: a slow or failed answer, a secret in a page, a finding, a rate in a
  snapshot's view that is negative or absurd.

Everything listens on 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import math
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

LOOPBACK = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


# ------------------------------------------------------------------ small helpers
def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def resource_counts() -> tuple[int, int]:
    """(threads, open file descriptors) of this process."""
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def thread_names() -> list[str]:
    return sorted(t.name for t in threading.enumerate())


def basic_token(username: str, password: str) -> str:
    """The credential as an ``Authorization: Basic`` header carries it (must not leak either)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode()


def http_get(url: str, timeout: float = 5.0, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, method="GET", headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


def http_post_json(url: str, payload: Any, timeout: float = 5.0) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(payload).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.05) -> T:
    """``check()`` until it returns something truthy; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except Exception as e:
            last = e
        if time.monotonic() >= deadline:
            extra = f" (last error: {last!r})" if last else ""
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}{extra}")
        time.sleep(interval)


# ------------------------------------------------------------------ the simulator in its own process
FAULTS_OFF: dict[str, Any] = {
    "latency_ms": 0,
    "error_rate_5xx": 0.0,
    "status_401": False,
    "reset_rate": 0.0,
    "malformed_json_rate": 0.0,
    "partial_aggregation": False,
    "pagination_loop": False,
    "missing_table": "",
}


class SimProcess:
    """``python -m sanlens simulate`` on a fixed loopback port, killable and restartable there."""

    def __init__(self, log_dir: Path, scenario: str = "healthy", name: str = "sim", args: Iterable[str] = ()):
        self.scenario, self.name, self.args = scenario, name, list(args)
        self.log_dir = Path(log_dir)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.cluster_name = ""
        self.hosts: list[str] = []

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 30.0) -> SimProcess:
        self.starts += 1
        log = open(self.log_dir / f"{self.name}-{self.starts}.log", "wb")  # noqa: SIM115 - the child holds it
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "exporter") + os.pathsep + env.get("PYTHONPATH", "")
        argv = [sys.executable, "-m", "sanlens", "simulate", "--scenario", self.scenario]
        argv += ["--port", str(self.port), *self.args]
        with log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status, body = http_get(f"{self.url}/-/sim/state", timeout=1.0)
                if status == 200:
                    state = json.loads(body)
                    self.cluster_name = str(state["cluster_name"])
                    self.hosts = [str(h) for h in state["hosts"]]
                    return self
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise AssertionError(f"{self.name} did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def restart(self) -> None:
        """Start again on the same port (after :meth:`kill`)."""
        self.start()

    def kill(self) -> None:
        """SIGKILL: the listening socket and every open connection die at once."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()

    def set_faults(self, **knobs: Any) -> None:
        status, body = http_post_json(f"{self.url}/-/sim/faults", knobs)
        if status != 200:
            raise AssertionError(f"{self.name}: POST /-/sim/faults {knobs}: HTTP {status} {body[:300]!r}")

    def clear_faults(self) -> None:
        self.set_faults(**FAULTS_OFF)

    def log_tail(self, chars: int = 4000) -> str:
        p = self.log_dir / f"{self.name}-{self.starts}.log"
        try:
            return p.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return "(no log)"


# ------------------------------------------------------------------ the fault proxy
class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: FaultProxy

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), name="fault-proxy-conn"
        )
        t.daemon = True
        t.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-answer is what the trickle expects


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        proxy = self.server.proxy
        proxy.requests += 1
        expected = proxy.expected_authorization()
        if expected is not None and self.headers.get("Authorization") != expected:
            proxy.rejected += 1
            body = b'{"error":{"message":"not authorized for that command","code":"6"}}'
            self._answer(401, body, "application/hal+json", {"WWW-Authenticate": 'Basic realm="proxy"'})
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("accept", "user-agent")}
        status, body, ctype = proxy.upstream_get(self.path, headers)
        self._answer(status, body, ctype)

    def _answer(self, status: int, body: bytes, ctype: str, extra: Mapping[str, str] | None = None) -> None:
        proxy = self.server.proxy
        head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}"]
        head += [f"Content-Type: {ctype}", f"Content-Length: {len(body)}", "Connection: close"]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        self.close_connection = True
        if proxy.mode != "trickle":
            with contextlib.suppress(OSError):
                self.wfile.write(raw)
            return
        proxy.count_trickle(+1)
        try:
            # one byte per second, until the client hangs up or the proxy stops; a proxy back in
            # ``pass`` mode sends the rest at once, as a server that recovers finishes its answers
            for i in range(len(raw)):
                if proxy.mode != "trickle" and proxy.finish_trickles:
                    self.connection.sendall(raw[i:])
                    return
                self.connection.sendall(raw[i : i + 1])
                if self._hung_up_within(1.0):
                    return
        except OSError:
            return
        finally:
            proxy.count_trickle(-1)

    def _hung_up_within(self, seconds: float) -> bool:
        """Wait ``seconds``; True once the client has closed (EOF, reset) or the proxy stops.

        Noticed on the socket itself, so a connection the client gave up on is counted as
        closed at once, not after the next two sends fail.
        """
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.server.proxy.stopping.is_set():
                return True
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                try:
                    if not self.connection.recv(4096, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                # bytes from a client that is waiting for this answer: read and ignore them
                with contextlib.suppress(OSError):
                    self.connection.recv(4096)
        return self.server.proxy.stopping.is_set()


class FaultProxy:
    """A loopback HTTP proxy in front of one upstream URL.

    ``mode``: ``pass`` (answer as the upstream does) or ``trickle`` (the whole answer,
    status line and headers included, one byte per second; back in ``pass``, answers being
    trickled are sent in full at once, unless ``finish_trickles`` is false: then they trickle on,
    as from a server stuck on those connections). ``require(username, password)``
    answers 401 to any request without that Basic credential.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.mode = "pass"
        self.finish_trickles = True
        self.requests = 0
        self.rejected = 0
        self.trickling = 0
        self._count_lock = threading.Lock()
        self.stopping = threading.Event()
        self._auth: str | None = None
        self.httpd = _ProxyServer((LOOPBACK, 0), _ProxyHandler)
        self.httpd.proxy = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{int(self.httpd.server_address[1])}"

    def count_trickle(self, step: int) -> None:
        with self._count_lock:
            self.trickling += step

    def start(self) -> FaultProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def require(self, username: str, password: str) -> None:
        self._auth = "Basic " + basic_token(username, password)

    def expected_authorization(self) -> str | None:
        return self._auth

    def upstream_get(self, path: str, headers: Mapping[str, str]) -> tuple[int, bytes, str]:
        req = urllib.request.Request(self.upstream + path, headers=dict(headers))
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(resp.status), resp.read(), resp.headers.get("Content-Type", "text/plain")
        except urllib.error.HTTPError as e:
            return int(e.code), e.read(), e.headers.get("Content-Type", "text/plain")
        except OSError as e:
            msg = json.dumps({"error": {"message": f"proxy: upstream unreachable: {e}", "code": "2"}})
            return 502, msg.encode(), "application/json"


# ------------------------------------------------------------------ views: no negative or absurd rate
# Caps far above anything the simulated estate serves: a value past them is a cooking bug.
_CAPS: tuple[tuple[str, float], ...] = (
    ("_iops", 1e6),
    ("_bytes_s", 1e11),
    ("_latency_s", 10.0),
    ("_ratio", 1.0 + 1e-9),
    ("queue_length", 1e4),
    ("domain_busy", 256.0),  # ratio of one core; a node has fewer cores than this
    ("queue_full", 1e6),
    ("threshold_full", 1e6),
    ("link_errors", 1e6),
)
_UNCAPPED = ("timestamp", "interval_s", "speed_gbps", "percent", "move_percent", "processors", "disk_count")
_CAPACITY = "_bytes"  # sizes and space (a volume's size, its free space): capacities, not rates


def view_anomalies(view: Any, where: str = "") -> list[str]:
    """Every float of a snapshot's view that is NaN, infinite, negative or past its field's cap."""
    out: list[str] = []

    def check(name: str, path: str, v: float) -> None:
        if not math.isfinite(v) or v < 0:
            out.append(f"{path} = {v!r}")
            return
        if name in _UNCAPPED or name.endswith(_CAPACITY):
            return
        for suffix, cap in _CAPS:
            if name.endswith(suffix) or name == suffix.lstrip("_"):
                if v > cap:
                    out.append(f"{path} = {v!r} (absurd: > {cap:g})")
                return
        if v > 1e12:
            out.append(f"{path} = {v!r} (absurd)")

    def walk(obj: Any, name: str, path: str) -> None:
        if isinstance(obj, bool) or obj is None or isinstance(obj, str):
            return
        if isinstance(obj, int | float):
            check(name, path, float(obj))
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                walk(getattr(obj, f.name), f.name, f"{path}.{f.name}")
        elif isinstance(obj, Mapping):
            for k, v in obj.items():
                walk(v, name, f"{path}[{k!r}]")
        elif isinstance(obj, tuple | list):
            for i, v in enumerate(obj):
                walk(v, name, f"{path}[{i}]")

    walk(view, "", where or type(view).__name__)
    return out


# ------------------------------------------------------------------ the watcher
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_WATCHED = (
    "sanlens_target_up",
    "sanlens_last_poll_timestamp_seconds",
    "sanlens_polls_total",
    "sanlens_poll_errors_total",
    "sanlens_poll_duration_seconds",
    "sanlens_ontap_partial_aggregation_rows",
    "sanlens_ontap_counter_table_missing",
    "sanlens_diagnosis_state",
)


@dataclass
class Page:
    """What one scrape of /metrics said about the targets."""

    at: float  # time.monotonic() when the answer arrived
    seq: int
    up: dict[str, float] = field(default_factory=dict)
    polls: dict[str, float] = field(default_factory=dict)
    duration: dict[str, float] = field(default_factory=dict)
    last_success: dict[str, float] = field(default_factory=dict)  # unix time
    errors: dict[tuple[str, str], float] = field(default_factory=dict)  # (target, reason) -> count
    partial_rows: float = 0.0
    tables_missing: set[str] = field(default_factory=set)  # counter tables the cluster answers 404 for
    diagnosis_states: list[str] = field(default_factory=list)  # samples with state > 0

    def errors_of(self, target: str) -> dict[str, float]:
        return {r: v for (t, r), v in self.errors.items() if t == target}


def parse_page(text: str, at: float, seq: int) -> Page:
    page = Page(at, seq)
    for line in text.splitlines():
        if not line.startswith(_WATCHED):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, labels, value = m[1], dict(_LABEL.findall(m[2] or "")), float(m[3])
        target = labels.get("target", "")
        if name == "sanlens_target_up":
            page.up[target] = value
        elif name == "sanlens_polls_total":
            page.polls[target] = value
        elif name == "sanlens_poll_duration_seconds":
            page.duration[target] = value
        elif name == "sanlens_last_poll_timestamp_seconds":
            page.last_success[target] = value
        elif name == "sanlens_poll_errors_total":
            page.errors[(target, labels.get("reason", ""))] = value
        elif name == "sanlens_ontap_partial_aggregation_rows":
            page.partial_rows += value
        elif name == "sanlens_ontap_counter_table_missing" and value > 0:
            page.tables_missing.add(labels.get("table", ""))
        elif name == "sanlens_diagnosis_state" and value > 0:
            page.diagnosis_states.append(line)
    return page


class Watcher(threading.Thread):
    """Scrapes an exporter every ``period`` seconds and records everything that must not happen."""

    def __init__(
        self,
        base_url: str,
        secrets: Iterable[str],
        snapshots: Callable[[], Mapping[str, Any]] | None = None,
        period: float = 0.1,
        slow_s: float = 1.0,
    ) -> None:
        super().__init__(name="fault-watcher", daemon=True)
        self.base_url = base_url.rstrip("/")
        self.secrets = [s for s in secrets if s]
        self.snapshots = snapshots
        self.period, self.slow_s = period, slow_s
        self.stop_event = threading.Event()
        self.cond = threading.Condition()
        self.page: Page | None = None
        self.seq = 0
        self.scrapes = 0
        self.max_latency = 0.0
        self.slow: list[str] = []
        self.failures: list[str] = []
        self.leaks: list[str] = []
        self.findings: list[str] = []
        self.anomalies: list[str] = []
        self._seen_snapshots: dict[str, int] = {}

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.scrape_once()
            self.stop_event.wait(self.period)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)

    def _get(self, path: str) -> bytes | None:
        t0 = time.monotonic()
        try:
            status, body = http_get(self.base_url + path, timeout=5.0)
        except OSError as e:
            self.failures.append(f"GET {path}: {e!r} after {time.monotonic() - t0:.2f} s")
            return None
        took = time.monotonic() - t0
        self.max_latency = max(self.max_latency, took)
        if took > self.slow_s:
            self.slow.append(f"GET {path} took {took:.2f} s")
        if status != 200:
            self.failures.append(f"GET {path}: HTTP {status}")
            return None
        text = body.decode("utf-8", "replace")
        for s in self.secrets:
            if s in text:
                self.leaks.append(f"a secret appears in {path}")
        return body

    def scrape_once(self) -> None:
        metrics = self._get("/metrics")
        diagnoses = self._get("/diagnoses")
        self.scrapes += 1
        if diagnoses is not None:
            found = json.loads(diagnoses)
            if found:
                self.findings.append(json.dumps(found)[:2000])
        if self.snapshots is not None:
            for name, snap in dict(self.snapshots()).items():
                if self._seen_snapshots.get(name) == id(snap):
                    continue
                self._seen_snapshots[name] = id(snap)
                self.anomalies += view_anomalies(snap.view, f"{name}@{snap.timestamp:.1f}")
        if metrics is None:
            return
        page = parse_page(metrics.decode("utf-8", "replace"), time.monotonic(), self.seq + 1)
        if page.diagnosis_states:
            self.findings += page.diagnosis_states
        with self.cond:
            self.seq += 1
            self.page = page
            self.cond.notify_all()

    def next_page(self, timeout: float = 5.0) -> Page:
        """The first page scraped after this call."""
        with self.cond:
            seq = self.seq
            if not self.cond.wait_for(lambda: self.seq > seq, timeout):
                raise AssertionError(f"no /metrics page in {timeout} s; failures: {self.failures[-3:]}")
            assert self.page is not None
            return self.page

    def problems(self) -> list[str]:
        """Everything recorded so far that a fault must never cause."""
        out = [f"slow answer: {s}" for s in self.slow]
        out += [f"failed answer: {s}" for s in self.failures]
        out += [f"secret leaked: {s}" for s in self.leaks]
        out += [f"finding: {s}" for s in self.findings[:5]]
        out += [f"view anomaly: {s}" for s in self.anomalies[:10]]
        return out
