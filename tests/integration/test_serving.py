"""/metrics as `sanlens serve` answers it: one cached body per update, gzip, keep-alive, and
clients that are slow, idle or rude never hold up a scrape; /diagnoses laid out by incident."""

from __future__ import annotations

import gzip
import http.client
import json
import logging
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from unittest import mock

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.joining import joined

from golden import Clock, settle
from sanlens.config import DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory
from sanlens.model import MetricBuilder, Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens.runtime.pipeline import Pipeline
from sanlens.serve import server as server_mod
from sanlens.serve.server import ExporterServer
from sanlens.store import State
from sanlens_sim.server import Simulator

PROCESS_LINE = re.compile(rb"^(# (HELP|TYPE) )?process_\w+.*\n", re.M)


def snapshot(target: str, n: int, value: float = 1.0, ts: float = 1000.0) -> Snapshot:
    b = MetricBuilder()
    for i in range(n):
        b.add(
            "sanlens_test_ops_total",
            "counter",
            "Test ops.",
            {"target": target, "lun": f"/vol/v/lun{i}"},
            value,
        )
        b.add(
            "sanlens_test_latency_seconds",
            "gauge",
            "Test latency.",
            {"target": target, "lun": f"/vol/v/lun{i}"},
            i / 1e3,
        )
    return Snapshot(target, "host", ts, b.build())


def get(port: int, path: str = "/metrics", gzip_ok: bool = True) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def without_process(text: bytes) -> bytes:
    return PROCESS_LINE.sub(b"", text)


@pytest.fixture
def served() -> Iterator[tuple[State, ExporterServer]]:
    state = State()
    state.register("h1", "host", 5.0)
    state.record_success(snapshot("h1", 2000), 0.1)
    srv = ExporterServer(state, "127.0.0.1:0")
    srv.start()
    try:
        yield state, srv
    finally:
        srv.stop()


def wait_rendered(state: State, srv: ExporterServer, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while srv.exposition.body().generation != state.generation:
        assert time.monotonic() < deadline, "the renderer did not pick up the change"
        time.sleep(0.01)


def test_concurrent_scrapes_share_one_body_rendered_once_per_update(
    served: tuple[State, ExporterServer],
) -> None:
    state, srv = served
    wait_rendered(state, srv)
    renders = srv.exposition.renders
    bodies: list[bytes] = []
    lock = threading.Lock()

    def scrape() -> None:
        status, headers, body = get(srv.port)
        assert status == 200 and headers["content-encoding"] == "gzip"
        with lock:
            bodies.append(without_process(gzip.decompress(body)))

    threads = [threading.Thread(target=scrape) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bodies) == 20 and len(set(bodies)) == 1
    assert srv.exposition.renders == renders, "a scrape rendered the page again"
    assert b'sanlens_test_ops_total{target="h1",lun="/vol/v/lun1999"} 1.0' in bodies[0]

    state.record_success(snapshot("h1", 2000, value=2.0, ts=1005.0), 0.1)  # a new poll: one new render
    wait_rendered(state, srv)
    assert srv.exposition.renders > renders
    after = without_process(gzip.decompress(get(srv.port)[2]))
    assert b'sanlens_test_ops_total{target="h1",lun="/vol/v/lun1999"} 2.0' in after
    # the rendered snapshot keeps its view but no longer its per-series objects
    assert state.view()[0]["h1"].metrics == ()


def test_gzip_body_is_the_plain_page_compressed_and_process_metrics_are_live(
    served: tuple[State, ExporterServer],
) -> None:
    state, srv = served
    wait_rendered(state, srv)
    status, headers, gz = get(srv.port)
    _, plain_headers, plain = get(srv.port, gzip_ok=False)
    assert (
        status == 200
        and headers["content-encoding"] == "gzip"
        and "accept-encoding" in headers["vary"].lower()
    )
    assert "content-encoding" not in plain_headers
    unzipped = gzip.decompress(gz)
    assert int(headers["content-length"]) == len(gz)
    assert without_process(unzipped) == without_process(plain)
    # the gzip trailer's CRC and size are those of the whole text (pieces joined, not recompressed)
    crc, size = struct.unpack("<II", gz[-8:])
    assert size == len(unzipped) and crc == (__import__("zlib").crc32(unzipped) & 0xFFFFFFFF)
    assert len(gz) <= 0.15 * len(plain), f"gzip {len(gz)} of {len(plain)} bytes"
    fams = {f.name for f in text_string_to_metric_families(unzipped.decode())}
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "sanlens_target_up"} <= fams


def test_keep_alive_serves_many_requests_on_one_connection(served: tuple[State, ExporterServer]) -> None:
    _, srv = served
    before = srv.connections
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        for path in ("/metrics", "/-/healthy", "/diagnoses", "/metrics", "/nope"):
            conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == (404 if path == "/nope" else 200)
            assert resp.getheader("Connection") != "close"
    finally:
        conn.close()
    assert srv.connections - before == 1, "the client's connection was not kept alive"
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:  # HTTP/1.0: one request, closed
        s.sendall(b"GET /-/healthy HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"OK\n")


def test_slow_and_idle_clients_never_hold_up_a_scrape(
    served: tuple[State, ExporterServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, srv = served
    monkeypatch.setattr(server_mod, "REQUEST_TIMEOUT", 1.0)
    wait_rendered(state, srv)
    rude: list[socket.socket] = []
    try:
        for _ in range(200):  # slowloris: a request head that never ends
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            rude.append(s)
        for _ in range(20):  # idle keep-alive connections
            rude.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
        reader = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 5)  # asks for pages, never reads them
        rude.append(reader)
        t0 = time.monotonic()
        status, _, body = get(srv.port)
        took = time.monotonic() - t0
        assert status == 200 and b"sanlens_test_ops_total" in gzip.decompress(body)
        assert took < 0.5, f"a scrape behind {len(rude)} slow clients took {took:.2f} s"
        # one address holds at most MAX_PER_PEER connections: the oldest trickling heads were either
        # answered 408 already or closed to make room; the newest run out of time and are answered 408
        answers = []
        for slow in (rude[0], rude[199]):
            slow.settimeout(5)
            answers.append(slow.recv(4096))
        assert answers[0] == b"" or answers[0].startswith(b"HTTP/1.1 408")
        assert answers[1].startswith(b"HTTP/1.1 408")
    finally:
        for s in rude:
            s.close()


def test_a_client_that_vanishes_mid_request_leaves_no_traceback(
    served: tuple[State, ExporterServer], caplog: pytest.LogCaptureFixture
) -> None:
    state, srv = served
    wait_rendered(state, srv)
    caplog.set_level(logging.DEBUG)
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = reset
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
        s.close()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    s.sendall(b"\x00garbage\r\n\r\n")  # not HTTP
    assert s.recv(4096).startswith(b"HTTP/1.1 400")
    s.close()
    assert get(srv.port)[0] == 200
    time.sleep(0.2)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info
    ]


def test_tables_are_polled_side_by_side() -> None:
    """With every answer delayed, a poll takes about its slowest request chain, not the sum."""
    delay = 0.3
    with Simulator(scenario="healthy", port=0) as sim:
        src = OntapSource(OntapTarget(name="c1", url=sim.url))
        try:
            src.poll()  # inventory, schemas: the first poll's extra requests
            sim.set_faults(latency_ms=delay * 1000)
            calls: list[str] = []
            body = src.client.body  # every request, paged or not, reads its answer here

            def counted(path: str, *args: object, **kwargs: object) -> object:
                calls.append(path)
                return body(path, *args, **kwargs)  # type: ignore[arg-type]

            src.client.body = counted  # type: ignore[method-assign]
            t0 = time.monotonic()
            src.poll()
            took = time.monotonic() - t0
            requests = len(calls)
        finally:
            src.close()
    assert requests >= 10
    assert took < 0.6 * requests * delay, f"{requests} requests took {took:.2f} s: not concurrent"


def test_a_healthy_estate_costs_next_to_no_diagnosis_series() -> None:
    """Diagnosis series follow problems, not the estate: healthy subjects are counted, not listed."""
    with Simulator(scenario="healthy", port=0, luns=1500, volumes=600, disks=200) as sim:
        directory = LunDirectory()
        sources = [joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)]
        sources += [
            joined(
                make_host_source(
                    HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics", poll_interval=Duration(15.0)),
                ),
                directory,
            )
            for h in sim.hosts
        ]
        state = State()
        engine = Engine(DiagnoseConfig(sustain_scale=0.01))
        pipeline = Pipeline(state, engine=engine)
        try:
            for i in range(3):
                if i:
                    time.sleep(1.0)
                for src in sources:
                    pipeline.record_success(src.poll(), 0.1)
        finally:
            for src in sources:
                src.close()
    from sanlens.serve.exposition import Exposition

    page = Exposition(state, engine=engine).text().decode()
    series = [line for line in page.splitlines() if line and not line.startswith("#")]
    diagnosis = [line for line in series if line.startswith("sanlens_diagnosis_")]
    estate = [line for line in series if line.startswith(("sanlens_ontap_", "sanlens_host_"))]
    assert len(estate) > 20000
    assert engine.findings() == []
    assert len(diagnosis) <= 0.10 * len(estate), f"{len(diagnosis)} diagnosis series for {len(estate)}"
    assert not [line for line in diagnosis if line.startswith("sanlens_diagnosis_state")]
    ok = re.compile(r'^sanlens_diagnosis_subjects\{diagnosis="(\w+)",state="ok"\} (\S+)$')
    judged = {m[1]: float(m[2]) for line in diagnosis if (m := ok.match(line))}
    assert judged["lun_iops_ceiling"] == len(engine.subject_states("lun_iops_ceiling")) >= 1500
    assert judged["latency_slo"] >= 1500


def mixed_engine() -> Engine:
    """The demo's scenario (``mixed``) polled eight times on a hand-moved clock, its windows shortened
    as the demo shortens them: several incidents, each cause with the latency_slo symptoms it explains."""
    clock = Clock(1_700_000_000.0)
    with (
        mock.patch("time.time", clock),
        mock.patch("time.monotonic", clock),
        Simulator(scenario="mixed", clock=clock) as sim,
    ):
        directory = LunDirectory()
        sources = [joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)]
        sources += [
            joined(make_host_source(HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics")), directory)
            for h in sim.hosts
        ]
        sources += [
            joined(
                make_host_source(
                    HostTarget(name=h, source="node_exporter", url=f"{sim.url}/linux/{h}/metrics")
                ),
                directory,
            )
            for h in sim.linux_hosts
        ]
        engine = Engine(DiagnoseConfig(sustain_scale=0.05))
        try:
            for i in range(8):
                clock.t = 1_700_000_000.0 + 60.0 * i
                for src in sources:
                    engine.update(src.poll())
                    settle(src)
        finally:
            for src in sources:
                src.close()
    return engine


def test_diagnoses_list_each_incident_cause_first_and_group_on_request() -> None:
    engine = mixed_engine()
    srv = ExporterServer(State(), "127.0.0.1:0", engine=engine)
    srv.start()
    try:
        status, headers, body = get(srv.port, "/diagnoses", gzip_ok=False)
        assert status == 200 and headers["content-type"] == "application/json"
        flat = json.loads(body)
        status, _, body = get(srv.port, "/diagnoses?group=incident", gzip_ok=False)
        assert status == 200
        groups = json.loads(body)
        status, _, body = get(srv.port, "/diagnoses?group=host", gzip_ok=False)
        assert status == 400 and b"group=incident" in body
    finally:
        srv.stop()
    findings = engine.findings()  # worst first: a host's slow disks ahead of their over-subscription
    host_incident = [f["role"] for f in findings if f["incident"].endswith("/sql01")]
    assert host_incident[0] == "symptom" and "cause" in host_incident
    # still a list of every finding, unchanged...
    assert sorted(map(json.dumps, flat)) == sorted(map(json.dumps, findings))
    # ...laid out incident by incident, never a symptom before its incident's causes
    incidents = [f["incident"] for f in flat]
    assert incidents == sorted(incidents, key=incidents.index), "an incident's findings are split"
    for name in set(incidents):
        mine = [f["role"] for f in flat if f["incident"] == name]
        assert mine == sorted(mine), f"{name}: {mine}"  # "cause" < "symptom"
    assert flat[0]["role"] == "cause" and flat[0]["state"] == max(f["state"] for f in flat)
    # grouped: one object per incident, the worst first, the same findings in the same order
    assert [g["incident"] for g in groups] == list(dict.fromkeys(incidents))
    assert [f for g in groups for f in (*g["causes"], *g["symptoms"])] == flat
    assert [g["state"] for g in groups] == sorted((g["state"] for g in groups), reverse=True)
    for g in groups:
        assert all(f["role"] == "cause" for f in g["causes"])
        assert all(f["role"] == "symptom" for f in g["symptoms"])
        assert g["state"] == max(f["state"] for f in (*g["causes"], *g["symptoms"]))
        assert g["severity"] == {1: "warning", 2: "critical"}[g["state"]]
    host = next(g for g in groups if g["incident"].endswith("/sql01"))  # one incident for the host's disks
    assert [f["id"] for f in host["causes"]] == ["san_oversubscription"] * 2
    assert [f["id"] for f in host["symptoms"]] == ["latency_slo"] * 2
