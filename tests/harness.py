"""Reusable end-to-end harness: simulator, exporter, Prometheus, Alertmanager.

Every process a test starts through :class:`Harness` is stopped when the
harness exits, also when the test fails, and each process's log file is kept in
the test's tmp folder and printed on failure.

Usage in a test module (``tests/`` is on ``sys.path`` under pytest)::

    from harness import Harness, harness  # noqa: F401  (``harness`` is a fixture)

    def test_something(harness: Harness) -> None:
        sim = harness.start_simulator("kahuna-bottleneck")
        exp = harness.start_exporter(sim)
        prom = harness.start_prometheus({"sanlens": [exp.address]}, rule_files=[...])
        harness.wait_until(lambda: prom.query("sanlens_diagnosis_state == 2"), timeout=90)

Everything listens on 127.0.0.1 only; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from conftest import ROOT, TOOLS_BIN, free_port, require_tool, skip_or_fail
from sanlens_sim.server import Simulator

T = TypeVar("T")

LOOPBACK = "127.0.0.1"


# ------------------------------------------------------------------ small helpers
def find_alertmanager() -> str:
    """The Alertmanager binary: ``alertmanager`` upstream, ``prometheus-alertmanager`` on Debian."""
    for name in ("alertmanager", "prometheus-alertmanager"):
        found = shutil.which(name) or shutil.which(name, path=str(TOOLS_BIN))
        if found:
            return found
    skip_or_fail("alertmanager not installed (run `make tools`)")
    raise AssertionError("unreachable")


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """GET a loopback URL; (status, body). Connection errors raise OSError."""
    req = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


def get_ok(url: str, what: str, timeout: float = 5.0) -> bytes:
    """The body of a GET that must answer 200; anything else fails with ``what`` and the start of the body."""
    status, body = http_get(url, timeout=timeout)
    if status != 200:
        raise AssertionError(f"{what}: HTTP {status} {body[:300]!r}")
    return body


def get_json_list(url: str, what: str) -> list[Any]:
    result = json.loads(get_ok(url, what))
    assert isinstance(result, list), f"{what}: expected a JSON list"
    return result


def http_post_json(url: str, payload: Any, timeout: float = 5.0) -> tuple[int, bytes]:
    data = json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


class _ProcessDied(Exception):
    def __init__(self, proc: ManagedProcess) -> None:
        super().__init__(proc.name)
        self.proc = proc


def wait_until(
    check: Callable[[], T | None],
    timeout: float,
    interval: float = 0.5,
    what: str = "condition",
    on_timeout: Callable[[], str] | None = None,
) -> T:
    """Poll ``check`` until it returns something truthy (returned); fail after ``timeout`` seconds.

    Exceptions raised by ``check`` count as "not yet" (the last one is reported).
    """
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
        except _ProcessDied:
            raise
        except Exception as e:
            last_exc = e
        if time.monotonic() >= deadline:
            extra = f"; last error: {last_exc!r}" if last_exc else ""
            detail = f"\n{on_timeout()}" if on_timeout else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{extra}{detail}")
        time.sleep(interval)


def wait_http_ok(url: str, timeout: float, what: str | None = None) -> None:
    def ok() -> bool:
        status, _ = http_get(url, timeout=2)
        return status == 200

    wait_until(ok, timeout, interval=0.2, what=what or f"{url} to answer 200")


# ------------------------------------------------------------------ processes
class ManagedProcess:
    """A subprocess with its stdout+stderr in a log file; stopped by the harness."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            self.argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            start_new_session=True,  # its own process group: stop() ends its children too
        )

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def assert_alive(self) -> None:
        if not self.alive():
            raise AssertionError(
                f"{self.name} exited with code {self.proc.returncode}\n--- {self.name} log ---\n{self.tail()}"
            )

    def stop(self, timeout: float = 5.0) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout)
        if not self._log.closed:
            self._log.close()

    def tail(self, max_chars: int = 8000) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return text if len(text) <= max_chars else "...\n" + text[-max_chars:]


# ------------------------------------------------------------------ handles
@dataclass
class SimHandle:
    """A running simulator, in-process (``obj`` set) or as a subprocess (``proc`` set)."""

    url: str
    port: int
    cluster_name: str
    hosts: list[str]
    linux_hosts: list[str] = field(default_factory=list)
    obj: Any = None
    proc: ManagedProcess | None = None

    def set_scenario(self, scenario: str, **knobs: Any) -> None:
        """Switch scenario through the control endpoint (works for both modes)."""
        status, body = http_post_json(f"{self.url}/-/sim/scenario", {"scenario": scenario, **knobs})
        if status >= 300:
            raise AssertionError(f"POST /-/sim/scenario {scenario}: HTTP {status} {body[:300]!r}")

    def state(self) -> Any:
        return json.loads(get_ok(f"{self.url}/-/sim/state", "GET /-/sim/state"))


@dataclass
class ExporterHandle:
    port: int
    config_path: Path
    proc: ManagedProcess | None = None
    server: Any = None  # in-process fake exporter

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def metrics_text(self) -> str:
        return get_ok(f"{self.url}/metrics", "/metrics").decode()

    def diagnoses(self) -> list[dict[str, Any]]:
        return get_json_list(f"{self.url}/diagnoses", "/diagnoses")


@dataclass
class PrometheusHandle:
    port: int
    config_path: Path
    proc: ManagedProcess

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        status, body = http_get(f"{self.url}/api/v1/{path}{query}", timeout=10)
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise AssertionError(f"Prometheus /api/v1/{path}{query}: HTTP {status} {body[:500]!r}")
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the result vector (list of {metric, value})."""
        data = self.api("query", query=expr)
        result = data["result"]
        assert isinstance(result, list)
        return result

    def alerts(self, state: str | None = None) -> list[dict[str, Any]]:
        """Alerts Prometheus holds (pending and firing), optionally filtered by state."""
        alerts = self.api("alerts")["alerts"]
        return [a for a in alerts if state is None or a.get("state") == state]

    def rule_groups(self) -> list[dict[str, Any]]:
        groups = self.api("rules")["groups"]
        assert isinstance(groups, list)
        return groups

    def targets_up(self, job: str) -> bool:
        active = self.api("targets", state="active")["activeTargets"]
        mine = [t for t in active if t.get("labels", {}).get("job") == job]
        return bool(mine) and all(t.get("health") == "up" for t in mine)


@dataclass
class AlertmanagerHandle:
    port: int
    config_path: Path
    proc: ManagedProcess

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        """Alerts held by Alertmanager (API v2)."""
        params = [("active", "true")] + [("filter", f'{k}="{v}"') for k, v in filters.items()]
        url = f"{self.url}/api/v2/alerts?{urllib.parse.urlencode(params)}"
        return get_json_list(url, "Alertmanager /api/v2/alerts")


# ------------------------------------------------------------------ fake PagerDuty
@dataclass
class PagerDutyEvent:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)


class FakePagerDuty:
    """A loopback HTTP server speaking the PagerDuty Events API v2 enqueue endpoint.

    ``POST /v2/enqueue`` with a JSON event returns 202
    ``{"status": "success", "message": "Event processed", "dedup_key": ...}`` and records the event.
    Bodies that are not JSON objects get 400 and are recorded in ``rejected``.
    """

    def __init__(self) -> None:
        self.events: list[PagerDutyEvent] = []
        self.rejected: list[str] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, code: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?", 1)[0] != "/v2/enqueue":
                    self._reply(404, {"status": "invalid path"})
                    return
                try:
                    doc = json.loads(raw)
                    if not isinstance(doc, dict):
                        raise ValueError("not an object")
                except ValueError:
                    with outer._lock:
                        outer.rejected.append(raw.decode(errors="replace"))
                    self._reply(400, {"status": "invalid event", "message": "Event object is invalid"})
                    return
                with outer._lock:
                    outer.events.append(PagerDutyEvent(self.path, dict(self.headers.items()), doc))
                dedup = doc.get("dedup_key") or f"generated-{len(outer.events)}"
                self._reply(202, {"status": "success", "message": "Event processed", "dedup_key": dedup})

        self.httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-pagerduty", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def enqueue_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v2/enqueue"

    def start(self) -> FakePagerDuty:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e.body for e in self.events]


# ------------------------------------------------------------------ fake exporter
class StaticExporter:
    """A tiny exporter serving whatever text ``text()`` returns on /metrics (for harness self-tests)."""

    def __init__(self, text: Callable[[], str]) -> None:
        get_text = text

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = get_text().encode() if self.path.startswith("/metrics") else b"ok\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-exporter", daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> StaticExporter:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------------ the harness
def exporter_config(
    sim: SimHandle,
    listen: str,
    ontap_interval: float = 2.0,
    host_interval: float = 1.0,
    sustain_scale: float = 0.05,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The exporter config for a simulator: every cluster and host, short polls and windows."""
    cfg: dict[str, Any] = {
        "listen": listen,
        "log_level": "info",
        "ontap": [{"name": sim.cluster_name, "url": sim.url, "poll_interval": f"{ontap_interval}s"}],
        "hosts": [
            {
                "name": h,
                "source": "windows_exporter",
                "url": f"{sim.url}/windows/{h}/metrics",
                "poll_interval": f"{host_interval}s",
            }
            for h in sim.hosts
        ]
        + [
            {
                "name": h,
                "source": "node_exporter",
                "url": f"{sim.url}/linux/{h}/metrics",
                "poll_interval": f"{host_interval}s",
            }
            for h in sim.linux_hosts
        ],
        "diagnose": {"sustain_scale": sustain_scale},
    }
    if extra:
        cfg.update(extra)
    return cfg


class Harness:
    """Starts processes and servers for one test and always stops them all.

    Use as a context manager (``with Harness(tmp_path) as h:``) or through the ``harness`` fixture.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.processes: list[ManagedProcess] = []
        self._cleanups: list[tuple[str, Callable[[], None]]] = []
        self._taken: set[str] = set()

    # -- lifecycle
    def __enter__(self) -> Harness:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None and exc_type is not pytest.skip.Exception:
            print(self.logs(), file=sys.stderr)
        self.close()

    def add_cleanup(self, name: str, fn: Callable[[], None]) -> None:
        self._cleanups.append((name, fn))

    def close(self) -> None:
        """Stop everything, newest first; never raises (errors are printed)."""
        while self._cleanups:
            name, fn = self._cleanups.pop()
            try:
                fn()
            except Exception as e:
                print(f"harness: stopping {name} failed: {e!r}", file=sys.stderr)

    def logs(self) -> str:
        parts = []
        for p in self.processes:
            state = "running" if p.alive() else f"exited {p.proc.returncode}"
            parts.append(f"--- {p.name} ({state}) log {p.log_path} ---\n{p.tail()}")
        return "\n".join(parts) if parts else "(no processes)"

    def spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> ManagedProcess:
        proc = ManagedProcess(name, argv, self.fresh(f"{name}.log"), env=env)
        self.processes.append(proc)
        self.add_cleanup(name, proc.stop)
        return proc

    def fresh(self, name: str) -> Path:
        """A path in the work dir that no earlier start took: ``prometheus-data``, then ``prometheus-data-2``.

        A second Prometheus (or Alertmanager) in one test must not share the first's data dir,
        config or log: the Debian build takes no lock on its TSDB, two writers of one WAL and head
        chunks crash each other, and a reused log name truncates the first process's log."""
        stem, dot, ext = name.partition(".")
        n = 1
        candidate = name
        while candidate in self._taken:
            n += 1
            candidate = f"{stem}-{n}{dot}{ext}"
        self._taken.add(candidate)
        return self.path(candidate)

    def path(self, name: str) -> Path:
        p = self.workdir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write(self, name: str, content: str | Mapping[str, Any]) -> Path:
        """Write a file in the work dir; a mapping is dumped as YAML."""
        p = self.path(name)
        text = content if isinstance(content, str) else yaml.safe_dump(dict(content), sort_keys=False)
        p.write_text(text, encoding="utf-8")
        return p

    def wait_until(
        self, check: Callable[[], T | None], timeout: float, interval: float = 0.5, what: str = "condition"
    ) -> T:
        """Like :func:`wait_until`, but fails at once (with its log) if a managed process died."""

        def guarded() -> T | None:
            for p in self.processes:
                if not p.alive():
                    raise _ProcessDied(p)
            return check()

        try:
            return wait_until(guarded, timeout, interval, what, on_timeout=self.logs)
        except _ProcessDied as e:
            e.proc.assert_alive()
            raise

    # -- simulator
    def start_simulator(self, scenario: str = "mixed", in_process: bool = True, **knobs: Any) -> SimHandle:
        """The ONTAP, windows_exporter and node_exporter simulator (``sanlens_sim.server.Simulator``)."""
        if in_process:
            sim = Simulator(scenario=scenario, host=LOOPBACK, port=0, **knobs)
            sim.start()
            self.add_cleanup("simulator", sim.stop)
            return SimHandle(
                url=str(sim.url),
                port=int(sim.port),
                cluster_name=str(sim.cluster_name),
                hosts=list(sim.hosts),
                linux_hosts=list(sim.linux_hosts),
                obj=sim,
            )
        port = free_port()
        argv = [sys.executable, "-m", "sanlens", "simulate", "--scenario", scenario, "--port", str(port)]
        for k, v in knobs.items():
            argv += [f"--{k.replace('_', '-')}", str(v)]
        proc = self.spawn("simulator", argv, env=_py_env())
        url = f"http://{LOOPBACK}:{port}"
        self.wait_until(lambda: http_get(f"{url}/-/sim/state")[0] == 200, 30, 0.2, "simulator to start")
        state = json.loads(http_get(f"{url}/-/sim/state")[1])
        return SimHandle(
            url=url,
            port=port,
            cluster_name=str(state.get("cluster_name") or state.get("cluster")),
            hosts=list(state.get("hosts") or []),
            linux_hosts=list(state.get("linux_hosts") or []),
            proc=proc,
        )

    # -- exporter
    def start_exporter(
        self,
        sim: SimHandle,
        ontap_interval: float = 2.0,
        host_interval: float = 1.0,
        sustain_scale: float = 0.05,
        extra: Mapping[str, Any] | None = None,
        wait_ready: bool = True,
        timeout: float = 60.0,
        port: int | None = None,
    ) -> ExporterHandle:
        """`python -m sanlens serve --config <tmp yaml>` against the simulator (on ``port``, chosen when
        a Prometheus that the exporter itself reads must know it first)."""
        port = port or free_port()
        cfg = exporter_config(sim, f"{LOOPBACK}:{port}", ontap_interval, host_interval, sustain_scale, extra)
        path = self.write(self.fresh("sanlens.yaml").name, cfg)
        proc = self.spawn(
            "exporter", [sys.executable, "-m", "sanlens", "serve", "--config", str(path)], env=_py_env()
        )
        handle = ExporterHandle(port=port, config_path=path, proc=proc)
        endpoint = "/-/ready" if wait_ready else "/-/healthy"
        self.wait_until(
            lambda: http_get(handle.url + endpoint, timeout=2)[0] == 200, timeout, 0.3, f"exporter {endpoint}"
        )
        return handle

    def serve_page(self, body: bytes) -> str:
        """``body`` at /metrics (a captured exporter page, e.g. NetApp Harvest's); its host:port."""

        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_a: Any) -> None:
                return

        server = ThreadingHTTPServer((LOOPBACK, 0), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.add_cleanup("page", server.shutdown)
        return f"{LOOPBACK}:{server.server_address[1]}"

    def start_static_exporter(self, text: Callable[[], str]) -> ExporterHandle:
        """An in-process fake exporter serving ``text()`` (develop the rule→alert leg without the real one)."""
        srv = StaticExporter(text).start()
        self.add_cleanup("static-exporter", srv.stop)
        return ExporterHandle(port=srv.port, config_path=Path(os.devnull), server=srv)

    # -- PagerDuty stand-in
    def start_fake_pagerduty(self) -> FakePagerDuty:
        pd = FakePagerDuty().start()
        self.add_cleanup("fake-pagerduty", pd.stop)
        return pd

    # -- Alertmanager
    def start_alertmanager(
        self, config: str | Mapping[str, Any], timeout: float = 30.0
    ) -> AlertmanagerHandle:
        binary = find_alertmanager()
        port = free_port()
        path = self.write(self.fresh("alertmanager.yml").name, config)
        data = self.fresh("alertmanager-data")
        data.mkdir(exist_ok=True)
        proc = self.spawn(
            "alertmanager",
            [
                binary,
                f"--config.file={path}",
                f"--storage.path={data}",
                f"--web.listen-address={LOOPBACK}:{port}",
                "--cluster.listen-address=",  # no gossip
                "--log.level=debug",
            ],
        )
        handle = AlertmanagerHandle(port=port, config_path=path, proc=proc)
        self.wait_until(
            lambda: http_get(f"{handle.url}/-/ready", timeout=2)[0] == 200, timeout, 0.2, "alertmanager ready"
        )
        return handle

    # -- Prometheus
    def start_prometheus(
        self,
        scrape: Mapping[str, Sequence[str]],
        rule_files: Sequence[Path] = (),
        alertmanager: AlertmanagerHandle | None = None,
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        external_labels: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        metrics_paths: Mapping[str, str] | None = None,
    ) -> PrometheusHandle:
        """Debian's Prometheus scraping ``{job: [host:port, ...]}`` (at ``metrics_paths[job]``, default
        /metrics) with the given rule files."""
        binary = require_tool("prometheus")
        port = free_port()
        cfg: dict[str, Any] = {
            "global": {
                "scrape_interval": scrape_interval,
                "scrape_timeout": scrape_interval,
                "evaluation_interval": evaluation_interval,
            },
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {
                    "job_name": job,
                    "metrics_path": (metrics_paths or {}).get(job, "/metrics"),
                    "static_configs": [{"targets": list(targets)}],
                }
                for job, targets in scrape.items()
            ],
        }
        if external_labels:
            cfg["global"]["external_labels"] = dict(external_labels)
        if alertmanager is not None:
            cfg["alerting"] = {
                "alertmanagers": [
                    {"api_version": "v2", "static_configs": [{"targets": [alertmanager.address]}]}
                ]
            }
        path = self.write(self.fresh("prometheus.yml").name, cfg)
        data = self.fresh("prometheus-data")
        data.mkdir(exist_ok=True)
        proc = self.spawn(
            "prometheus",
            [
                binary,
                f"--config.file={path}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address={LOOPBACK}:{port}",
                "--rules.alert.resend-delay=1s",
                "--log.level=info",
            ],
        )
        handle = PrometheusHandle(port=port, config_path=path, proc=proc)
        self.wait_until(
            lambda: http_get(f"{handle.url}/-/ready", timeout=2)[0] == 200, timeout, 0.2, "prometheus ready"
        )
        return handle


def _py_env() -> dict[str, str]:
    """Environment for `python -m sanlens`: the package importable even without an editable install."""
    src = str(ROOT / "exporter")
    old = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": src + (os.pathsep + old if old else ""), "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def harness(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A :class:`Harness` in the test's tmp folder; prints every process log if the test failed."""
    failed_before = request.session.testsfailed
    h = Harness(tmp_path / "harness")
    try:
        yield h
    finally:
        if request.session.testsfailed > failed_before:
            print(h.logs())
        h.close()
