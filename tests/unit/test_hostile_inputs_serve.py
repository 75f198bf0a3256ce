"""What `sanlens serve` makes of hostile upstreams and configs: no credential in a message or a log line,
no label value that makes a Prometheus refuse the whole scrape, no garbage taken for a healthy target.

Each table row is one hostile page or record; every case runs in milliseconds (mocked or loopback HTTP).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from sanlens.config import HostTarget, OntapTarget
from sanlens.errors import SourceError
from sanlens.hosts.registry import make_host_source
from sanlens.model import MetricBuilder, OntapView, Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.harvest_series import queries
from sanlens.ontap.harvest_source import HarvestSource
from sanlens.serve.exposition import Exposition
from sanlens.store import State

PASSWORD = "Hunter2"
BASE = "https://c1.example"
PROM = "https://prom.example"
HOST = "http://h1.example:9182"


# ------------------------------------------------------------------ URLs: one safe form everywhere
@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://admin:Hunter2@127.0.0.1:18083", "http://127.0.0.1:18083"),
        ("https://u:Hunter2@h:9182/metrics?token=Hunter2#x", "https://h:9182/metrics"),
        ("https://u:Hunter2@[::1]:8443/api", "https://[::1]:8443/api"),
        ("https://u:Hunter2@h:99999/api", "https://h:99999/api"),  # a port urlsplit refuses
    ],
)
def test_a_url_is_shown_without_user_info_query_or_fragment(url: str, shown: str) -> None:
    from sanlens.urls import safe_url

    assert safe_url(url) == shown


def test_text_from_elsewhere_loses_the_user_info_of_every_url_in_it() -> None:
    from sanlens.urls import redact

    text = "Invalid URL 'http://admin:Hunter2@h:1/x' (and https://u:p@w@other/y)"
    assert PASSWORD not in redact(text) and "p@w" not in redact(text)
    assert "http://h:1/x" in redact(text) and "https://other/y" in redact(text)
    plain = "no url here"
    assert redact(plain) is plain


class _Answer(BaseHTTPRequestHandler):
    body = b'{"status":"error"}'

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def query_api() -> Iterator[int]:
    """A loopback query API that answers every query ``{"status":"error"}``; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_query_names_the_api_without_the_password_in_its_url(query_api: int) -> None:
    target = OntapTarget(name="hv", source="prometheus", url=f"http://admin:{PASSWORD}@127.0.0.1:{query_api}")
    src = HarvestSource(target)
    try:
        with pytest.raises(SourceError) as e:
            src.poll()
    finally:
        src.close()
    assert e.value.reason == "api"
    assert PASSWORD not in str(e.value) and "admin" not in str(e.value)
    assert f"http://127.0.0.1:{query_api}" in str(e.value)


@responses.activate
def test_a_megabyte_error_body_is_clipped_in_the_message() -> None:
    responses.get(f"{PROM}/api/v1/query", json={"status": "error", "error": "x" * 1_000_000})
    src = HarvestSource(OntapTarget(name="hv", url=PROM, source="prometheus"))
    with pytest.raises(SourceError) as e:
        src.poll()
    assert len(str(e.value)) < 2000


def test_no_log_line_shows_a_urls_user_info(capsys: pytest.CaptureFixture[str]) -> None:
    """requests' own exceptions quote the URL they were given, user info and all."""
    from sanlens.cli import setup_logging

    root = logging.getLogger()
    before = list(root.handlers)
    for h in before:
        root.removeHandler(h)
    try:
        setup_logging("info")
        log = logging.getLogger("sanlens.test")
        try:
            raise requests.exceptions.InvalidURL(f"Invalid URL 'http://admin:{PASSWORD}@h:1/api': bad")
        except requests.RequestException:
            log.exception("poll %s crashed", "hv")
        log.warning("poll %s failed: %s", "hv", f"https://u:{PASSWORD}@h/x")
        for h in root.handlers:
            h.flush()
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in before:
            root.addHandler(h)
    err = capsys.readouterr().err
    assert "poll hv crashed" in err and "InvalidURL" in err and "https://h/x" in err
    assert PASSWORD not in err


@pytest.mark.parametrize(
    "target",
    [
        {"name": "c1", "url": f"https://admin:{PASSWORD}@c1.example"},
        {"name": "h1", "url": f"http://admin:{PASSWORD}@h1.example:9182", "source": "windows_exporter"},
    ],
)
def test_check_config_warns_of_a_password_in_a_url_without_echoing_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, target: dict[str, str]
) -> None:
    from sanlens.config.load import check_config

    section = "ontap" if "source" not in target else "hosts"
    path = tmp_path / "sanlens.yaml"
    path.write_text(json.dumps({section: [target]}))  # JSON is YAML
    with caplog.at_level(logging.WARNING):
        check_config(path, files=False)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(f"{section}[0].url" in m and "password in the url" in m for m in said), said
    assert not any(PASSWORD in m for m in said)


# ------------------------------------------------------------------ labels: bounded on /metrics
def _render(*snaps: Snapshot) -> tuple[str, State, Exposition]:
    state = State()
    for s in snaps:
        state.register(s.target, s.kind, 60.0)
        state.record_success(s, 0.0)
    exp = Exposition(state)
    return exp.render().decode(), state, exp


def test_a_megabyte_label_value_leaves_its_series_out_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    huge = "d" * 1_000_000
    b = MetricBuilder()
    b.add("sanlens_host_disk_reads_total", "counter", "r", {"host": "h1", "disk": "0"}, 5)
    b.add("sanlens_host_disk_reads_total", "counter", "r", {"host": "h1", "disk": huge}, 7)
    b.add("sanlens_host_disk_info", "gauge", "i", {"host": "h1", "disk": huge, "serial": "s"}, 1)
    with caplog.at_level(logging.WARNING, logger="sanlens.serve.exposition"):
        text, state, exp = _render(Snapshot("h1", "host", 0.0, b.build()))
        state.record_success(Snapshot("h1", "host", 1.0, b.build()), 0.0)  # a second poll, the same
        text = exp.text().decode()
    assert max(len(line) for line in text.splitlines()) < 4096
    assert 'sanlens_host_disk_reads_total{host="h1",disk="0"} 5.0' in text
    assert 'sanlens_series_dropped{reason="label_value_too_long",target="h1"} 2.0' in text
    warned = [r.getMessage() for r in caplog.records if "left out of /metrics" in r.getMessage()]
    assert len(warned) == 1 and huge not in warned[0]


def test_a_label_at_the_bound_is_kept_and_no_drop_family_appears() -> None:
    from sanlens.serve.exposition import MAX_LABEL_VALUE_BYTES

    b = MetricBuilder()
    b.add("sanlens_x", "gauge", "x", {"disk": "é" * (MAX_LABEL_VALUE_BYTES // 2)}, 1)  # 2 bytes each
    text, _, _ = _render(Snapshot("h1", "host", 0.0, b.build()))
    assert "sanlens_x{" in text and "sanlens_series_dropped" not in text


# ------------------------------------------------------------------ ONTAP counter-table records
VOLUME_SCHEMA = {
    "name": "volume",
    "counter_schemas": [
        {"name": "total_ops", "type": "rate", "unit": "per_sec"},
        {"name": "total_read_ops", "type": "rate", "unit": "per_sec"},
    ],
}


def _record(rid: Any, name: str = "vol1", ops: Any = 100) -> dict[str, Any]:
    return {
        "id": rid,
        "properties": [{"name": "svm.name", "value": "vs1"}, {"name": "name", "value": name}],
        "counters": [{"name": "total_ops", "value": 10}, {"name": "total_read_ops", "value": ops}],
    }


GOOD = _record("c1:vs1:vol1")
ONTAP_CASES: dict[str, tuple[list[Any], str]] = {
    # records -> "malformed" (the poll fails so) or "up"
    "ids and counters stripped": ([{}, {}, {}], "malformed"),
    "all null": ([{"id": None, "properties": None, "counters": None}] * 2, "malformed"),
    "counters but no id": ([{k: v for k, v in GOOD.items() if k != "id"}], "malformed"),
    "an id but no counters": ([{**GOOD, "counters": []}], "malformed"),
    "values a string": (
        [
            {
                **GOOD,
                "counters": [{"name": "total_ops", "values": "12345", "labels": ["a", "b", "c", "d", "e"]}],
            }
        ],
        "malformed",
    ),
    "labels a string": (
        [{**GOOD, "counters": [{"name": "total_ops", "values": [1, 2, 3], "labels": "abc"}]}],
        "malformed",
    ),
    "a counter true": ([_record("c1:vs1:vol1", ops=True)], "malformed"),
    "a counter an object": ([_record("c1:vs1:vol1", ops={"v": 1})], "malformed"),
    "a record a string": (["c1:vs1:vol1"], "malformed"),
    "one good, one stripped": ([GOOD, {}], "up"),
    "the same id twice": ([_record("c1:vs1:vol1", ops=100), _record("c1:vs1:vol1", "volX", ops=999)], "up"),
}


def _ontap_poll(records: list[Any]) -> Snapshot:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(
            f"{BASE}/api/cluster", json={"name": "c1", "version": {"generation": 9, "major": 12, "minor": 1}}
        )
        for path in ("cluster/nodes", "storage/luns", "storage/namespaces", "storage/aggregates",
                     "storage/disks", "network/ip/interfaces", "storage/volumes", "network/fc/ports",
                     "network/ethernet/ports", "network/fc/interfaces"):  # fmt: skip
            rsps.get(f"{BASE}/api/{path}", json={"records": [], "num_records": 0})
        rsps.get(f"{BASE}/api/cluster/counter/tables/volume", json=VOLUME_SCHEMA)
        rsps.get(f"{BASE}/api/cluster/counter/tables/volume/rows", json={"records": records})
        src = OntapSource(OntapTarget(name="c1", url=BASE, tables=["volume"]))
        try:
            return src.poll()
        finally:
            src.close()


def _series(snap: Snapshot, family: str) -> list[dict[str, Any]]:
    fam = {m.name: m for m in snap.metrics}.get(family)
    return (
        []
        if fam is None
        else [{**dict(zip(fam.label_names, lv, strict=True)), "": v} for lv, v in fam.samples]
    )


@pytest.mark.parametrize("case", list(ONTAP_CASES))
def test_ontap_records_that_are_garbage_are_named_malformed(case: str) -> None:
    records, expected = ONTAP_CASES[case]
    if expected == "malformed":
        with pytest.raises(SourceError) as e:
            _ontap_poll(records)
        assert e.value.reason == "malformed"
        return
    snap = _ontap_poll(records)
    ops = _series(snap, "sanlens_ontap_volume_ops_total")
    keys = [tuple(sorted((k, v) for k, v in s.items() if k != "")) for s in ops]
    assert len(keys) == len(set(keys)), "no series twice on /metrics"
    assert [(s["volume"], s[""]) for s in ops] == [("vol1", 100.0)], "the first record of an id wins"
    skipped = _series(snap, "sanlens_ontap_malformed_records")
    assert sum(s[""] for s in skipped) == 1 and skipped[0]["table"] == "volume"


# ------------------------------------------------------------------ Harvest query answers
def _vector(*result: Any) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": list(result)}}


LUN = {"cluster": "c1", "svm": "s1", "volume": "v1", "lun": "lun0"}
HARVEST_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "every sample empty": (_vector({}, {}, {}), "malformed"),
    "every sample null": (_vector(None, None), "malformed"),
    "value a string": (
        _vector({"metric": {**LUN, "__name__": "lun_read_ops"}, "value": "12345"}),
        "malformed",
    ),
    "value a bare number": (
        _vector({"metric": {**LUN, "__name__": "lun_read_ops"}, "value": 5}),
        "malformed",
    ),
    "no name": (_vector({"metric": LUN, "value": [1.7e9, "5"]}), "malformed"),
    "result a string": ({"status": "success", "data": {"result": "abc"}}, "malformed"),
    "the same series twice": (
        _vector(
            {"metric": {**LUN, "__name__": "lun_read_ops"}, "value": [1.7e9, "210"]},
            {"metric": {**LUN, "__name__": "lun_read_ops"}, "value": [1.7e9, "999"]},
        ),
        "up",
    ),
}


@pytest.mark.parametrize("case", list(HARVEST_CASES))
@responses.activate
def test_harvest_answers_that_are_garbage_are_named_malformed(case: str) -> None:
    answer, expected = HARVEST_CASES[case]
    responses.get(f"{PROM}/api/v1/query", json=answer)
    src = HarvestSource(OntapTarget(name="c1", url=PROM, source="prometheus"))
    if expected == "malformed":
        with pytest.raises(SourceError) as e:
            src.poll()
        assert e.value.reason == "malformed"
        return
    snap = src.poll()
    assert isinstance(snap.view, OntapView)
    # every kind's query got the same answer: a LUN, read twice; the first wins
    assert [x.read_iops for x in snap.view.luns] == [210.0]
    skipped = _series(snap, "sanlens_ontap_malformed_records")
    assert [(s["problem"], s[""]) for s in skipped] == [("duplicate", float(len(queries())))]


# ------------------------------------------------------------------ host exporter pages
WINDOWS = (
    'windows_physical_disk_reads_total{disk="0 C:"} 5\n'
    'windows_physical_disk_writes_total{disk="0 C:"} 6\n'
    'windows_physical_disk_reads_total{disk="1"} 7\n'
)
NODE = (
    'node_disk_reads_completed_total{device="sda"} 5\n'
    'node_disk_writes_completed_total{device="sda"} 6\n'
    'node_disk_reads_completed_total{device="sdb"} 7\n'
)
HOST_CASES: dict[str, tuple[Any, str, str]] = {
    # (source, page, expected): "refused" or "up"
    "windows: a clean page": ("windows_exporter", WINDOWS, "up"),
    "windows: a series twice, two values": (
        "windows_exporter",
        WINDOWS + 'windows_physical_disk_reads_total{disk="0 C:"} 900\n',
        "refused",
    ),
    "windows: the page twice": ("windows_exporter", WINDOWS + WINDOWS, "refused"),
    "node: a clean page": ("node_exporter", NODE, "up"),
    "node: a series twice, two values": (
        "node_exporter",
        NODE + 'node_disk_reads_completed_total{device="sda"} 900\n',
        "refused",
    ),
    "node: a megabyte garbage line": ("node_exporter", NODE + "x{" * 500_000 + "\n", "refused"),
}


@pytest.mark.parametrize("case", list(HOST_CASES))
@responses.activate
def test_host_pages_with_a_series_twice_are_refused(case: str) -> None:
    source, page, expected = HOST_CASES[case]
    responses.get(HOST + "/metrics", body=page)
    src = make_host_source(HostTarget(name="h1", url=HOST, source=source))
    try:
        if expected == "refused":
            with pytest.raises(SourceError) as e:
                src.poll()
            assert len(str(e.value)) < 1000, "the page's own text is clipped in the message"
            return
        assert src.poll().view is not None
    finally:
        src.close()
