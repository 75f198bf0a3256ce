"""The cached /metrics page parses back, with the client library, to exactly the snapshot it renders."""

from __future__ import annotations

import gzip
import math
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import OntapTarget
from sanlens.freshness import stale_after
from sanlens.model import Metric, MetricBuilder, Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens.serve.exposition import MAX_LABEL_VALUE_BYTES, Exposition
from sanlens.serve.server import ExporterServer
from sanlens.store import State
from sanlens_sim.server import Simulator

# sanlens' own families, rendered by the client library after the snapshots
HEALTH = {
    "sanlens_build_info",
    "sanlens_target_up",
    "sanlens_poll_duration_seconds",
    "sanlens_last_poll_timestamp_seconds",
    "sanlens_polls_total",
    "sanlens_poll_interval_seconds",
}


PROCESS = {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"}


def _value(v: float) -> float | str:
    return "NaN" if math.isnan(v) else v


def _parse(text: str) -> set[tuple[str, str, tuple, float | str]]:
    out = set()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.add((fam.type, s.name, tuple(sorted(s.labels.items())), _value(s.value)))
    return out


def _expected(metrics: tuple[Metric, ...]) -> set[tuple[str, str, tuple, float | str]]:
    out = set()
    for m in metrics:
        kind = "gauge" if m.type == "info" else m.type
        for values, v in m.samples:
            out.add((kind, m.name, tuple(sorted(zip(m.label_names, values, strict=True))), _value(v)))
    return out


def test_page_parses_back_to_the_simulator_snapshot() -> None:
    sim = Simulator(scenario="mixed", port=0)
    sim.start()
    try:
        src = OntapSource(OntapTarget(name="c1", url=sim.url))
        state = State()
        state.register("c1", "ontap", 60.0)
        snap = src.poll()
        state.record_success(snap, 0.1)
        exp = Exposition(state)
        page = exp.render().decode()
        assert exp.body().plain().decode() in page  # the cached body, then the process_* tail
        assert gzip.decompress(exp.gzip()).decode().startswith(exp.body().plain().decode())
    finally:
        sim.stop()
    samples = _parse(page)
    assert {s[1] for s in samples if s[1].startswith("process_")} >= PROCESS
    samples = {s for s in samples if not s[1].startswith("process_")}
    health = {s for s in samples if s[1] in HEALTH}
    want = _expected(snap.metrics)
    assert len(want) > 1000
    assert samples - health == want
    assert {s[1] for s in health} == HEALTH


def test_label_values_are_escaped_and_special_floats_rendered() -> None:
    b = MetricBuilder()
    b.add("sanlens_test_total", "counter", 'help with \\ and "quotes"', {"x": 'a"b\\c\nd'}, float("inf"))
    b.add("sanlens_test_gauge", "gauge", "g", {"x": ""}, float("nan"))
    state = State()
    state.register("t", "host", 5.0)
    state.record_success(Snapshot("t", "host", 0.0, b.build()), 0.0)
    text = Exposition(state).render().decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    s = fams["sanlens_test"].samples[0]
    assert s.labels["x"] == 'a"b\\c\nd'
    assert s.value == float("inf")
    g = fams["sanlens_test_gauge"].samples[0]
    assert g.value != g.value  # NaN


def test_a_new_poll_renders_only_its_new_label_sets_and_forgets_gone_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each poll brings new but equal label tuples: their text comes from the last render, so only
    label sets that are new are joined again, and a set no longer polled is not kept."""
    from sanlens.serve import exposition

    joined: list[str] = []
    real = exposition.escape_label_value

    def escape(v: str) -> str:
        joined.append(v)
        return real(v)

    monkeypatch.setattr(exposition, "escape_label_value", escape)

    def poll(luns: list[str], value: float) -> Snapshot:
        b = MetricBuilder()
        for lun in luns:
            for fam in ("sanlens_test_ops_total", "sanlens_test_bytes_total"):
                b.add(fam, "counter", "h", {"cluster": "c1", "lun": "".join(["/vol/v/", lun])}, value)
        return Snapshot("t", "ontap", value, b.build())

    state = State()
    state.register("t", "ontap", 60.0)
    exp = Exposition(state)
    state.record_success(poll(["a", "b", "c"], 1.0), 0.0)
    exp.refresh()
    first = exp.render().decode()
    assert len(joined) == 6  # three label sets of two values, joined once for both families
    joined.clear()
    state.record_success(poll(["a", "b", "d"], 2.0), 0.0)
    exp.refresh()
    second = exp.render().decode()
    assert joined == ["c1", "/vol/v/d"], "only the new LUN's label set is joined"
    assert 'lun="/vol/v/a"} 2.0' in second and 'lun="/vol/v/c"' not in second and 'lun="/vol/v/c"' in first
    kept = exp._families["t"]
    assert {k for f in kept.values() for k in f.keys} == {("c1", f"/vol/v/{x}") for x in "abd"}
    assert all(f.texts == [f'cluster="c1",lun="/vol/v/{x}"' for x in "abd"] for f in kept.values())
    joined.clear()
    state.record_success(poll(["a", "b", "d"], float("inf")), 0.0)  # the same sets, in the same order
    exp.refresh()
    third = exp.render().decode()
    assert joined == [], "a family polled again with equal label sets takes its texts whole"
    assert (
        sum(line.startswith("sanlens_test_") and line.endswith("} +Inf") for line in third.splitlines()) == 6
    )
    state.record_success(poll(["a", "b", "d", "e"], 4.0), 0.0)
    exp.refresh()
    fourth = exp.render().decode()
    assert joined == ["c1", "/vol/v/e"], "after a render that took texts whole, still only the new set"
    assert 'sanlens_test_ops_total{cluster="c1",lun="/vol/v/a"} 4.0' in fourth

    def ours(page: str) -> list[str]:
        return [line for line in page.splitlines() if line.startswith("sanlens_test_")]

    fresh = Exposition(state)
    fresh.refresh()
    assert ours(fourth) == ours(fresh.render().decode()), "as a first render of the same poll"


def test_a_split_family_writes_its_rows_texts_and_its_last_labels_and_keeps_no_text_per_sample() -> None:
    """A family split by ``op`` is written as a family keyed by its full label tuples would be, poll
    after poll as LUNs come and go; between polls it keeps its rows' texts (the very strings of the
    table's unsplit family) and one text per ``op`` value, not a text per LUN and op."""

    def poll(luns: list[str], value: float, odd: str = "") -> Snapshot:
        b = MetricBuilder()
        names = ("cluster", "lun")
        info, _ = b.column("sanlens_test_lun_info", "gauge", "h", names)
        keys, values = b.column("sanlens_test_lun_ops_total", "counter", "h", (*names, "op"), True)
        for op in ("read", "write", odd or "other"):
            for n, lun in enumerate(luns):
                keys.append(("c1", f"/vol/v/{lun}", op))
                values.append(value * n if op != "write" else float("nan"))
        for lun in luns:
            info.append(("c1", f"/vol/v/{lun}"))
        b.column("sanlens_test_lun_info", "gauge", "h", names)[1].extend([1.0] * len(luns))
        return Snapshot("t", "ontap", value, b.build())

    def ours(page: str) -> list[str]:
        return [line for line in page.splitlines() if line.startswith("sanlens_test_")]

    state = State()
    state.register("t", "ontap", 60.0)
    exp = Exposition(state)
    for luns, value, odd in (
        (["a", 'b"q', "c"], 1.0, ""),
        (["a", 'b"q', "c"], 2.0, ""),  # equal sets: texts taken whole
        (["a", "c", "d"], 3.0, ""),  # one gone, one new
        (["a", "c", "d"], 4.0, "x" * (MAX_LABEL_VALUE_BYTES + 1)),  # an op value too long: left out
        (["a", "c", "d"], 5.0, ""),
    ):
        snap = poll(luns, value, odd)
        state.record_success(snap, 0.0)
        exp.refresh()
        page = exp.render().decode()
        fresh = Exposition(state)
        fresh.refresh()
        assert ours(page) == ours(fresh.render().decode()), "as a first render of the same poll"
        assert {x for x in _parse(page) if x[1].startswith("sanlens_test_")} == {
            s for s in _expected(snap.metrics) if not odd or ("op", odd) not in s[2]
        }
        if odd:
            assert exp.dropped["t"] == len(luns), "the long op's samples are counted as left out"
            continue
        assert "t" not in exp.dropped
        kept = exp._families["t"]
        split, info = kept["sanlens_test_lun_ops_total"], kept["sanlens_test_lun_info"]
        assert split.tails is not None and len(set(split.tails)) == 3
        assert len({id(t) for t in split.texts}) == len(luns), "one text per row, for every op"
        if value < 4:  # (after a poll that left its sets out, the family's texts are made afresh)
            assert {id(t) for t in split.texts} == {id(t) for t in info.texts}, "the unsplit family's strings"


def test_a_label_set_left_out_stays_left_out_and_counted_poll_after_poll() -> None:
    """A family with an oversized label value is rendered sample by sample on every poll, so its
    series stay out of the page and counted, while the family's other series render."""
    from sanlens.serve.exposition import MAX_LABEL_VALUE_BYTES

    big = "x" * (MAX_LABEL_VALUE_BYTES + 1)

    def poll(value: float) -> Snapshot:
        b = MetricBuilder()
        for lun in ("a", big, "b"):
            b.add("sanlens_test_ops_total", "counter", "h", {"cluster": "c1", "lun": lun}, value)
        return Snapshot("t", "ontap", value, b.build())

    state = State()
    state.register("t", "ontap", 60.0)
    exp = Exposition(state)
    for value in (1.0, 2.0, float("nan")):
        state.record_success(poll(value), 0.0)
        exp.refresh()
        page = exp.render().decode()
        assert big not in page and exp.dropped == {"t": 1}
        shown = "NaN" if value != value else repr(value)
        assert f'sanlens_test_ops_total{{cluster="c1",lun="b"}} {shown}' in page


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_a_target_that_keeps_failing_loses_its_data_series_and_keeps_its_health_over_http() -> None:
    """After the staleness bound (the engine's too) a failing target shows no data, only its health:
    a dashboard shows a gap, not the last traffic held flat for hours."""
    now = [1_700_000_000.0]
    state = State(clock=lambda: now[0])
    state.register("c1", "ontap", 60.0)
    b = MetricBuilder()
    b.add("sanlens_ontap_lun_ops_total", "counter", "Ops.", {"cluster": "c1", "op": "read"}, 5.0)
    state.record_success(Snapshot("c1", "ontap", now[0], b.build()), 0.1)
    polled_at = now[0]
    data = ("sanlens_ontap_lun_ops_total", (("cluster", "c1"), ("op", "read")))
    srv = ExporterServer(state, "127.0.0.1:0")
    srv.start()
    try:
        assert _scrape(srv.port)[data] == 5.0
        bound = stale_after(60.0)
        now[0] += bound - 1.0
        state.record_failure("c1", "ontap", "connection", "refused", 0.1)
        time.sleep(1.2)  # two passes of the renderer: nothing is old enough yet
        assert _scrape(srv.port)[data] == 5.0
        now[0] += 2.0  # past the bound, with no other change: the renderer's own pass withdraws it
        deadline = time.monotonic() + 5.0
        while data in (page := _scrape(srv.port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert data not in page
        t = (("kind", "ontap"), ("target", "c1"))
        assert page[("sanlens_target_up", t)] == 0.0
        assert page[("sanlens_poll_errors_total", (*t[:1], ("reason", "connection"), t[1]))] == 1.0
        assert page[("sanlens_last_poll_timestamp_seconds", t)] == polled_at
        # the next success brings the data back
        state.record_success(Snapshot("c1", "ontap", now[0], b.build()), 0.1)
        deadline = time.monotonic() + 5.0
        while data not in (page := _scrape(srv.port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert page[data] == 5.0
    finally:
        srv.stop()
