"""The probe's upstream category: `sanlens serve` polling through a proxy that turns answers hostile."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hostile.common import (
    AUTH_PASSWORD,
    MIB,
    PASSWORD_ENV,
    URL_PASSWORD,
    Case,
    Category,
    Tree,
    crashed,
    proc_kb,
)
from soak import free_port, stop_processes


# ------------------------------------------------------------------ upstream: a hostile proxy
class Upstream(ThreadingHTTPServer):
    """Relays the simulator, or answers as ``mode`` says; ``kind`` is what a huge body is made of."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: str, kind: str, huge_bytes: int) -> None:
        super().__init__(("127.0.0.1", 0), UpstreamHandler)
        self.upstream, self.kind, self.huge_bytes = upstream, kind, huge_bytes
        self.mode = "pass"
        self.other = ""  # another server's base URL, for cross-origin redirects
        self.requests = 0
        if kind == "ontap":
            rec = b'{"name": "lun0", "counters": [{"name": "read_ops", "value": 12345}]},'
            self.parts = (b'{"records": [', rec * (MIB // len(rec)), b'{"name": "end"}]}')
        else:
            lines = b"".join(
                b'windows_physical_disk_reads_total{disk="%d X:"} %d\n' % (i, i) for i in range(20_000)
            )
            self.parts = (b"", lines, b"")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the exporter hangs up on purpose (refused redirects, bounded bodies)

    def start(self) -> Upstream:
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self


class UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Upstream

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests += 1
        getattr(self, f"_{self.server.mode}")()

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
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

    def _relay(self, edit: Callable[[bytes], bytes] | None = None) -> None:
        status, body, ctype = self._upstream()
        self._send(status, edit(body) if edit and status == 200 else body, {"Content-Type": ctype})

    def _records(self, change: Callable[[dict[str, Any]], None]) -> None:
        def edit(body: bytes) -> bytes:
            try:
                doc = json.loads(body)
            except ValueError:
                return body
            if isinstance(doc, dict) and "records" in doc:
                change(doc)
            return json.dumps(doc).encode()

        self._relay(edit)

    # -- modes
    def _pass(self) -> None:
        self._relay()

    def _query_error(self) -> None:  # a Prometheus query API that refuses every query
        self._send(
            200,
            b'{"status": "error", "errorType": "bad_data", "error": "refused"}',
            {"Content-Type": "application/json"},
        )

    def _plain_500(self) -> None:
        self._send(500, b"Internal Server Error", {"Content-Type": "text/plain"})

    def _retry_after(self) -> None:
        self._send(
            503,
            b'{"error": {"message": "busy"}}',
            {"Retry-After": "99999", "Content-Type": "application/json"},
        )

    def _short_body(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if self.server.kind == "ontap" else "text/plain")
        self.send_header("Content-Length", "5000")
        self.end_headers()
        self.wfile.write(self.server.parts[0] or b"windows_")
        self.close_connection = True

    def _redirect_loop(self) -> None:
        self._send(302, b"", {"Location": self.path})

    def _redirect_file(self) -> None:
        self._send(302, b"", {"Location": "file:///etc/passwd"})

    def _redirect_other(self) -> None:
        self._send(307, b"", {"Location": self.server.other + self.path})

    def _null_records(self) -> None:
        self._records(lambda doc: doc.__setitem__("records", [None, 5, "x"]))

    def _links_string(self) -> None:
        self._records(lambda doc: doc.__setitem__("_links", "x"))

    def _counters_wrong_type(self) -> None:
        def change(doc: dict[str, Any]) -> None:
            for rec in doc["records"]:
                if isinstance(rec, dict) and isinstance(rec.get("counters"), list):
                    rec["counters"] = [{"name": "x", "value": {"x": [1]}} for _ in rec["counters"]]

        self._records(change)

    def _series_twice(self) -> None:
        def edit(body: bytes) -> bytes:
            first = next((ln for ln in body.splitlines() if ln.startswith(b"windows_")), b"")
            return body + first.rsplit(b" ", 1)[0] + b" 900\n" if first else body

        self._relay(edit)

    def _huge_label(self) -> None:
        line = b'windows_physical_disk_reads_total{disk="' + b"7" * MIB + b'"} 7\n'
        self._relay(lambda body: body + line)

    def _many_series(self) -> None:
        n = 250_000  # above the 200,000 series a host page may have
        body = b"".join(b'windows_physical_disk_reads_total{disk="%d X:"} %d\n' % (i, i) for i in range(n))
        self._send(200, body, {"Content-Type": "text/plain; version=0.0.4"})

    def _huge_length(self) -> None:
        self._huge(chunked=False)

    def _huge_chunked(self) -> None:
        self._huge(chunked=True)

    def _huge(self, chunked: bool) -> None:
        head, block, tail = self.server.parts
        n = self.server.huge_bytes // len(block)
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if self.server.kind == "ontap" else "text/plain")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(head) + n * len(block) + len(tail)))
        self.end_headers()
        self.close_connection = True

        def write(b: bytes) -> None:
            if b:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b) if chunked else b)

        with contextlib.suppress(OSError):
            write(head)
            for _ in range(n):
                write(block)
            write(tail)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")


# ------------------------------------------------------------------ a `sanlens serve` process
def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


class Exporter:
    """`python -m sanlens serve` of the tree, its log in a file, its RSS watched against the cap."""

    def __init__(self, tree: Tree, config: dict[str, Any], work: Path, name: str, rss_cap_mb: float) -> None:
        self.port = int(config["listen"].rsplit(":", 1)[1])
        self.base = f"http://127.0.0.1:{self.port}"
        cfg = work / f"{name}.json"  # JSON is YAML
        cfg.write_text(json.dumps(config, indent=1))
        self.log_path = work / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed by stop()
        self.proc = subprocess.Popen(
            tree.command("serve", "--config", str(cfg)),
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=tree.env(), cwd=work,
            start_new_session=True,
        )  # fmt: skip
        self.rss_cap_mb = rss_cap_mb
        self.peak_rss_mb = 0.0
        self.killed = ""
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._stop.wait(0.1) and self.proc.poll() is None:
            self.peak_rss_mb = max(self.peak_rss_mb, proc_kb(self.proc.pid, "VmHWM") / 1024)
            if proc_kb(self.proc.pid, "VmRSS") / 1024 > self.rss_cap_mb:
                self.killed = f"the exporter was killed: RSS over {self.rss_cap_mb:g} MB"
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)

    def wait_ready(self, check: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                if check():
                    return True
            time.sleep(0.2)
        return False

    def page(self) -> str:
        try:
            status, body = http_get(self.base + "/metrics", timeout=5)
        except OSError:
            return ""
        return body.decode("utf-8", "replace") if status == 200 else ""

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        self.peak_rss_mb = max(self.peak_rss_mb, proc_kb(self.proc.pid, "VmHWM") / 1024)
        self._stop.set()
        stop_processes(self.proc)
        self._log.close()


def samples(page: str, family: str) -> Iterator[tuple[dict[str, str], float]]:
    for m in re.finditer(rf"^{family}\{{(.*)\}} (\S+)$", page, re.M):
        yield dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[1])), float(m[2])


@dataclass
class TargetView:
    up: bool = False
    polls: float = 0.0
    errors: dict[str, float] = field(default_factory=dict)


def target_view(page: str, target: str) -> TargetView:
    v = TargetView()
    for labels, value in samples(page, "sanlens_target_up"):
        if labels.get("target") == target:
            v.up = value == 1.0
    for labels, value in samples(page, "sanlens_polls_total"):
        if labels.get("target") == target:
            v.polls = value
    for labels, value in samples(page, "sanlens_poll_errors_total"):
        if labels.get("target") == target:
            v.errors[labels.get("reason", "")] = value
    return v


# ------------------------------------------------------------------ upstream: the cases
STUCK = {"deadline", "busy"}  # a poll abandoned at its deadline, or one skipped behind it


@dataclass(frozen=True)
class UpstreamCase:
    mode: str
    expect: frozenset[str]  # reasons promised; empty: the target stays up
    quick: bool = False


ONTAP_CASES = [  # mild first, as a case that leaves its target stuck ends the target's list
    UpstreamCase("plain_500", frozenset({"api"}), quick=True),
    UpstreamCase("short_body", frozenset({"connection"})),
    UpstreamCase("redirect_loop", frozenset({"malformed"})),
    UpstreamCase("redirect_file", frozenset({"malformed"})),
    UpstreamCase("redirect_other", frozenset({"redirect"}), quick=True),
    UpstreamCase("null_records", frozenset({"malformed"}), quick=True),
    UpstreamCase("links_string", frozenset({"malformed"})),
    UpstreamCase("counters_wrong_type", frozenset({"malformed"})),
    UpstreamCase("huge_length", frozenset({"too_large"})),
    UpstreamCase("huge_chunked", frozenset({"too_large"}), quick=True),
    UpstreamCase("retry_after", frozenset({"api"}), quick=True),  # a poll that sleeps it out never ends
]
HOST_CASES = [
    UpstreamCase("short_body", frozenset({"connection"}), quick=True),
    UpstreamCase("redirect_loop", frozenset({"malformed"})),
    UpstreamCase("redirect_file", frozenset({"malformed"})),
    UpstreamCase("redirect_other", frozenset({"redirect"}), quick=True),
    UpstreamCase("series_twice", frozenset({"parse"})),
    UpstreamCase("huge_label", frozenset(), quick=True),
    UpstreamCase("many_series", frozenset({"too_large"}), quick=True),
    UpstreamCase("huge_length", frozenset({"too_large"})),
    UpstreamCase("huge_chunked", frozenset({"too_large"})),
]


class UpstreamRun:
    """One target's cases in turn: the fault on until the next poll fails, then off until it is up."""

    def __init__(
        self, exporter: Exporter, target: str, server: Upstream, other: Upstream, interval: float, ends: float
    ) -> None:
        self.exporter, self.target, self.server, self.other = exporter, target, server, other
        self.ends = ends  # monotonic time after which no case is started (the category's budget)
        deadline = max(0.8 * interval, 2.0)
        self.fail_within = interval + deadline + 5.0
        self.recover_within = 2 * interval + deadline + 5.0

    def view(self) -> TargetView:
        return target_view(self.exporter.page(), self.target)

    def watch(self, until: Callable[[TargetView], bool], within: float) -> tuple[bool, TargetView]:
        deadline = time.monotonic() + within
        v = self.view()
        while not until(v):
            if time.monotonic() > deadline or self.exporter.proc.poll() is not None:
                return False, v
            time.sleep(0.25)
            v = self.view()
        return True, v

    def case(self, case: UpstreamCase) -> Case:
        name = f"{self.server.kind}:{case.mode}"
        t0 = time.monotonic()
        if t0 > self.ends:
            return Case("upstream", name, "skipped", "the category's time budget was spent")
        ready, start = self.watch(lambda v: v.up, self.recover_within)
        if not ready:
            return Case("upstream", name, "skipped", "the target was not up before the case")
        asked = self.other.requests
        self.server.mode = case.mode
        try:
            if case.expect:
                outcome, detail, v = self.fails(case, start)
            else:
                outcome, detail, v = self.stays_up(start)
        finally:
            self.server.mode = "pass"
        if case.mode == "redirect_other" and self.other.requests > asked:
            outcome, detail = "wrong", (detail + "; " if detail else "") + "the other server was asked"
        cleared = time.monotonic()
        up, after = self.watch(lambda v: v.up, self.recover_within)
        if not up:
            late = {r for r, n in after.errors.items() if n > v.errors.get(r, 0)}
            stuck = after.polls <= v.polls or bool(late & STUCK)
            if outcome != "hang":
                outcome = "hang" if stuck else "wrong"
            detail += (
                f"{'; ' if detail else ''}not up {self.recover_within:.0f} s after the fault cleared "
                f"({'/'.join(sorted(late)) or 'no poll ended'})"
            )
        elif detail and time.monotonic() - cleared >= 0.5:
            detail += f"; up again {time.monotonic() - cleared:.1f} s after the fault cleared"
        return Case("upstream", name, outcome, detail, seconds=time.monotonic() - t0)

    def fails(self, case: UpstreamCase, start: TargetView) -> tuple[str, str, TargetView]:
        """The next poll must fail with the promised reason."""

        def failed(v: TargetView) -> bool:
            return any(n > start.errors.get(r, 0) for r, n in v.errors.items())

        seen, v = self.watch(failed, self.fail_within)
        grown = {r for r, n in v.errors.items() if n > start.errors.get(r, 0)}
        if not seen and v.polls > start.polls:
            return "wrong", "accepted: the polls went on succeeding", v
        if not seen:
            return "hang", f"no poll ended within {self.fail_within:.0f} s", v
        if grown <= STUCK:
            return "hang", f"reason {'/'.join(sorted(grown))}: the poll ran past its deadline", v
        if not grown <= case.expect:
            return "wrong", f"reason {'/'.join(sorted(grown))}, promised {'/'.join(sorted(case.expect))}", v
        return "ok", "", v

    def stays_up(self, start: TargetView) -> tuple[str, str, TargetView]:
        """The target must stay up through two polls, and no /metrics line may carry the huge label."""
        _, v = self.watch(lambda v: v.polls >= start.polls + 2, self.fail_within)
        longest = max((len(line) for line in self.exporter.page().splitlines()), default=0)
        grown = {r for r, n in v.errors.items() if n > start.errors.get(r, 0)}
        if v.polls < start.polls + 2:
            return "hang", f"two polls did not end within {self.fail_within:.0f} s", v
        if grown:
            return "wrong", f"reason {'/'.join(sorted(grown))}, promised: stays up", v
        if longest >= 4096:
            return "wrong", f"a /metrics line of {longest} bytes (label values over 1 KiB are left out)", v
        return "ok", "", v

    def run(self, cases: list[UpstreamCase]) -> list[Case]:
        return [self.case(c) for c in cases]


def probe_upstream(tree: Tree, args: argparse.Namespace, work: Path) -> Category:
    cat = Category("upstream")
    env = tree.env()
    sim_port, exp_port = free_port(), free_port()
    sim_url = f"http://127.0.0.1:{sim_port}"
    sim_log = open(work / "simulator.log", "wb")  # noqa: SIM115 - closed below
    sim = subprocess.Popen(
        tree.command("simulate", "--scenario", "healthy", "--port", str(sim_port)),
        stdout=sim_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=work,
        start_new_session=True,
    )  # fmt: skip
    servers: list[Upstream] = []
    exporter: Exporter | None = None
    interval = 4.0  # a 3.2 s poll deadline
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                if http_get(f"{sim_url}/-/sim/state")[0] == 200:
                    break
            if time.monotonic() > deadline or sim.poll() is not None:
                raise SystemExit("hostile_probe: the simulator did not start")
            time.sleep(0.2)
        state = json.loads(http_get(f"{sim_url}/-/sim/state")[1])
        cluster, host = state["cluster_name"], state["hosts"][0]
        ontap = Upstream(sim_url, "ontap", 400 * MIB).start()
        hostp = Upstream(sim_url, "host", 128 * MIB).start()
        other = Upstream(sim_url, "ontap", MIB).start()
        query = Upstream(sim_url, "ontap", MIB).start()
        query.mode = "query_error"
        servers = [ontap, hostp, other, query]
        ontap.other = hostp.other = other.url
        auth = {"username": "probe", "password_env": PASSWORD_ENV}
        every = f"{interval:g}s"
        config = {
            "listen": f"127.0.0.1:{exp_port}",
            "log_level": "info",
            "ontap": [
                {"name": cluster, "url": ontap.url, "poll_interval": every, "connect_timeout": "2s",
                 "read_timeout": "5s", "auth": auth},
                {"name": "hv", "source": "prometheus", "poll_interval": every,
                 "url": f"http://admin:{URL_PASSWORD}@127.0.0.1:{query.server_address[1]}"},
            ],
            "hosts": [
                {"name": host, "url": f"{hostp.url}/windows/{host}/metrics", "poll_interval": every,
                 "timeout": "5s", "auth": auth},
            ],
        }  # fmt: skip
        exporter = Exporter(tree, config, work, "serve-upstream", args.rss_cap_mb)

        def both_up() -> bool:
            page = exporter.page() if exporter else ""
            return target_view(page, cluster).up and target_view(page, host).up

        if not exporter.wait_ready(both_up, 90):
            cat.note = f"targets never up (exporter exit {exporter.proc.poll()}); see {exporter.log_path}"
            return cat
        ends = time.monotonic() + (60.0 if args.quick else 120.0)
        runs = [
            (UpstreamRun(exporter, cluster, ontap, other, interval, ends), ONTAP_CASES),
            (UpstreamRun(exporter, host, hostp, other, interval, ends), HOST_CASES),
        ]
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(r.run, [c for c in cs if c.quick or not args.quick]) for r, cs in runs]
            for fut in futures:
                cat.cases += fut.result()
        # the passwords: one in a URL (its API refuses every query), one in the auth of the others
        polled, _ = UpstreamRun(exporter, "hv", query, other, interval, ends).watch(
            lambda v: v.polls >= 2, 10
        )
        page, log = exporter.page(), exporter.log()
        for name, secret in (("password in a target URL", URL_PASSWORD), ("auth password", AUTH_PASSWORD)):
            where = [w for w, text in (("log", log), ("/metrics", page)) if secret in text]
            if name.startswith("password in") and not polled:
                cat.cases.append(
                    Case("upstream", f"{name} never shown", "hang", "the target was not polled twice")
                )
            elif where:
                cat.cases.append(
                    Case("upstream", f"{name} never shown", "wrong", f"shown in the {' and '.join(where)}")
                )
            else:
                cat.cases.append(Case("upstream", f"{name} never shown", "ok"))
        if exporter.killed:
            cat.note = exporter.killed
    finally:
        if exporter is not None:
            exporter.stop()
            cat.peak_rss_mb = exporter.peak_rss_mb
            cat.tracebacks = crashed(exporter.log())
        stop_processes(sim)
        sim_log.close()
        for s in servers:
            s.shutdown()
            s.server_close()
    return cat
