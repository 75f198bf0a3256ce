"""`sanlens analyze` on ONTAP captures: counter-table rows JSON, statistics text, sysstat -M."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.conftest import fixture_path

from sanlens.analyze import diagnoses
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data" / "ontap"


def analyze_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict, str]:
    rc = main(["analyze", *argv, "--format", "json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return json.loads(cap.out), cap.err


def counters(path: Path, row_id_part: str) -> dict[str, float]:
    doc = json.loads(path.read_text())
    rec = next(r for r in doc["records"] if row_id_part in r["id"])
    return {c["name"]: c["value"] for c in rec["counters"] if "value" in c}


def series(out: dict, obj: str, instance_part: str, counter: str, label: str = "") -> dict:
    found = [
        s
        for s in out["series"]
        if s.get("object") == obj
        and instance_part in s["instance"]
        and s["counter"] == counter
        and s["label"] == label
    ]
    assert len(found) == 1, (obj, instance_part, counter, label)
    return found[0]


def test_volume_rows_real_captures(capsys: pytest.CaptureFixture[str]) -> None:
    a = fixture_path("ontap/restperf/volume-rows-1.json")
    b = fixture_path("ontap/restperf/volume-rows-2.json")
    out, _err = analyze_json(capsys, str(a), str(b), "--interval", "60")
    ca, cb = counters(a, ":harvest:"), counters(b, ":harvest:")
    # read latency per op: Δread_latency (µs) / Δtotal_read_ops, in seconds
    lat = (cb["read_latency"] - ca["read_latency"]) / (cb["total_read_ops"] - ca["total_read_ops"]) / 1e6
    s = series(out, "volume", ":harvest:", "read_latency")
    assert s["unit"] == "seconds" and s["samples"] == 1
    assert s["mean"] == pytest.approx(lat) and s["min"] == s["max"] == s["mean"]
    ops = series(out, "volume", ":harvest:", "total_ops")
    assert ops["mean"] == pytest.approx((cb["total_ops"] - ca["total_ops"]) / 60)
    assert ops["unit"] == "per_second"
    kinds = [i["kind"] for i in out["inputs"]]
    assert kinds == ["ontap-counter-rows", "ontap-counter-rows"]
    assert out["inputs"][0]["objects"] == ["volume"]
    assert "diagnoses" in out and isinstance(out["diagnoses"], list)


def test_without_interval_rates_are_left_out_but_averages_stay(capsys: pytest.CaptureFixture[str]) -> None:
    a = fixture_path("ontap/restperf/volume-rows-1.json")
    b = fixture_path("ontap/restperf/volume-rows-2.json")
    out, err = analyze_json(capsys, str(a), str(b))
    assert not [s for s in out["series"] if s["counter"] == "total_ops"]
    assert [s for s in out["series"] if s["counter"] == "read_latency"]
    assert "--interval" in err


def test_system_node_rows_keep_incomplete_aggregation(capsys: pytest.CaptureFixture[str]) -> None:
    a = fixture_path("ontap/restperf/system-node-rows-vsim-1.json")
    b = fixture_path("ontap/restperf/system-node-rows-vsim-2.json")
    out, err = analyze_json(capsys, str(a), str(b), "--interval", "60")
    # every node that appears in both polls has aggregation.complete false; system:node keeps them
    ra = {r["id"]: r for r in json.loads(a.read_text())["records"]}
    both = [r for r in json.loads(b.read_text())["records"] if r["id"] in ra]
    assert both and all(r["aggregation"]["complete"] is False for r in both)
    got = {
        s["instance"]
        for s in out["series"]
        if s["object"] == "system:node" and s["counter"] == "cpu_elapsed_time"
    }
    assert got == {r["id"] for r in both}
    for r in both:
        ca = {c["name"]: c["value"] for c in ra[r["id"]]["counters"]}
        cb = {c["name"]: c["value"] for c in r["counters"]}
        el = series(out, "system:node", r["id"], "cpu_elapsed_time")
        assert el["unit"] == "seconds" and el["mean"] == pytest.approx(
            (cb["cpu_elapsed_time"] - ca["cpu_elapsed_time"]) * 1e-6
        )
    assert "incomplete aggregation" not in err


def test_schema_file_types_the_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # a schema that says total_ops is a delta overrides the built-in rate
    schema = {"name": "volume", "counter_schemas": [{"name": "total_ops", "type": "delta", "unit": "none"}]}
    sf = tmp_path / "volume-schema.json"
    sf.write_text(json.dumps(schema))
    a = fixture_path("ontap/restperf/volume-rows-1.json")
    b = fixture_path("ontap/restperf/volume-rows-2.json")
    out, _ = analyze_json(capsys, str(sf), str(a), str(b), "--interval", "60")
    ca, cb = counters(a, ":harvest:"), counters(b, ":harvest:")
    assert series(out, "volume", ":harvest:", "total_ops")["mean"] == cb["total_ops"] - ca["total_ops"]
    assert out["inputs"][0]["kind"] == "ontap-counter-schema"


def test_statistics_text_captures_with_interval(capsys: pytest.CaptureFixture[str]) -> None:
    a = fixture_path("ontap/statperf/lun-statistics-show-raw-1.txt")
    b = fixture_path("ontap/statperf/lun-statistics-show-raw-2.txt")
    # equal capture timestamps: command-line order is the sample order
    out, _ = analyze_json(capsys, str(a), str(b), "--interval", "30")
    d_sent = 4428447 - 4318447  # read_ops_sent in the two texts
    d_h0 = 4152382 - 4052382  # read_align_histo[0] in the two texts
    assert series(out, "lun", "osc_iscsi_vol01", "read_ops_sent")["mean"] == d_sent
    h = series(out, "lun", "osc_iscsi_vol01", "read_align_histogram", "0")
    assert h["unit"] == "percent" and h["mean"] == pytest.approx(100 * d_h0 / d_sent)
    assert series(out, "lun", "osc_iscsi_vol01", "read_ops")["mean"] == 0.0  # no read ops moved


def test_sysstat_domain_busy_series(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = analyze_json(capsys, str(DATA / "sysstat-M.txt"))
    k = series(out, "sysstat", "cluster1-01", "domain_busy", "kahuna")
    assert k["unit"] == "percent" and k["samples"] == 4
    assert k["mean"] == pytest.approx((88 + 90 + 91 + 89) / 4) and k["max"] == 91
    assert out["inputs"][0]["kind"] == "ontap-sysstat"


def test_statistics_samples_in_one_file(capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = analyze_json(capsys, str(DATA / "lun-statistics-show-raw-samples.txt"))
    lat = series(out, "lun", "/vol/sqldata/lun0", "average_read_latency")
    assert lat["min"] == pytest.approx(900e6 / 1.8e6 * 1e-6)  # 0.5 ms
    assert lat["max"] == pytest.approx(1440e6 / 1.8e6 * 1e-6)  # 0.8 ms
    assert series(out, "lun", "/vol/sqldata/lun0", "read_ops")["mean"] == pytest.approx(1.8e6 / 60)
    assert out["inputs"][0]["start"] == "2025-03-02T10:00:00Z" and out["inputs"][0]["samples"] == 3


def test_bad_interval_and_unknown_file_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["analyze", str(DATA / "sysstat-M.txt"), "--interval", "0"]) == 2
    f = tmp_path / "x.txt"
    f.write_text("hello\n")
    assert main(["analyze", str(f)]) == 2
    assert "unrecognised input" in capsys.readouterr().err


def test_engine_gets_views_and_findings_reach_json(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in engine checks the wiring: views in, findings out."""
    seen: list = []
    cfgs: list = []

    class FakeEngine:
        def __init__(self, cfg) -> None:
            cfgs.append(cfg)

        def update(self, snap) -> None:
            seen.append(snap)

        def findings(self) -> list[dict]:
            return [{"id": "cpu_domain_serial_bottleneck", "subject": {"node": "cluster1-01"}, "state": 2}]

        def judged(self) -> dict[str, dict[str, int]]:
            return {"cpu_domain_serial_bottleneck": {"cluster1/cluster1-01": 2}}

    monkeypatch.setattr(diagnoses, "Engine", FakeEngine)
    out, _ = analyze_json(capsys, str(DATA / "sysstat-M.txt"), "--interval", "1")
    assert out["diagnoses"][0]["id"] == "cpu_domain_serial_bottleneck"
    assert len(seen) == 4 and all(s.kind == "ontap" for s in seen)
    node = seen[1].view.nodes[0]
    assert node.domain_busy["kahuna"] == pytest.approx(
        0.90
    ) and node.average_processor_busy_ratio == pytest.approx(0.31)
    assert node.processors == 4
    # 4 samples 1 s apart: the CPU-domain windows shrink to half of the 3 s span (never below 1 s)
    th = cfgs[0].thresholds["cpu_domain_serial_bottleneck"]
    assert th["sustain_seconds"] == th["exit_seconds"] == pytest.approx((4 - 1) * 1 / 2)
    assert out["inputs"][0]["status"]["evaluated"] == ["cpu_domain_serial_bottleneck"]


# ------------------------------------------------------- real multi-node statistics captures
REAL = Path(__file__).parents[1] / "data" / "ontap" / "real"


def _raw_counter(text: str, instance: str, counter: str, label: str = "") -> float:
    """One raw value of one instance, read from the capture text with a regex (no parser involved)."""
    block = text.split(f"Instance: {instance}\n", 1)[1].split("\nObject:", 1)[0]
    if label:
        arr = block.split(f"    {counter} ", 1)[1]
        m = re.search(rf"^\s+{re.escape(label)}\s+(\d+)\s*$", arr, re.M)
    else:
        m = re.search(rf"^ {{4}}{re.escape(counter)}\s+(\d+)%?\s*$", block, re.M)
    assert m, (instance, counter, label)
    return float(m[1])


def test_real_partial_aggregation_captures_with_warning_preamble_cook(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ONTAP's own output when one node is unreachable: RPC warning, partial_aggregation on every node."""
    a, b = REAL / "system-node-partial-1.txt", REAL / "system-node-partial-2.txt"
    ta, tb = a.read_text(), b.read_text()
    assert ta.lstrip().startswith("Warning: Unable to list entries on node")
    assert "(partial_aggregation)" in ta
    out, _err = analyze_json(capsys, str(a), str(b))
    nodes = sorted(set(re.findall(r"^Instance: (\S+)$", ta, re.M)))
    assert len(nodes) == 3
    for node in nodes:
        d_el = _raw_counter(tb, node, "cpu_elapsed_time") - _raw_counter(ta, node, "cpu_elapsed_time")
        el = series(out, "system:node", node, "cpu_elapsed_time")
        assert el["unit"] == "seconds" and el["mean"] == pytest.approx(d_el * 1e-6)  # µs delta -> s
        assert 85 < el["mean"] < 95  # the captures are 89 s apart (Start-time 08:04:11 -> 08:05:40)
        for dom in ("kahuna", "idle", "wafl_exempt"):
            d = _raw_counter(tb, node, "domain_busy", dom) - _raw_counter(ta, node, "domain_busy", dom)
            s = series(out, "system:node", node, "domain_busy", dom)
            assert s["unit"] == "percent" and s["mean"] == pytest.approx(100.0 * d / d_el)  # of ONE core
        busy = _raw_counter(tb, node, "avg_processor_busy") - _raw_counter(ta, node, "avg_processor_busy")
        s = series(out, "system:node", node, "average_processor_busy_percent")
        assert s["mean"] == pytest.approx(100.0 * busy / d_el)


def test_a_bad_byte_in_one_json_capture_keeps_the_other_reports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good_a = fixture_path("ontap/restperf/volume-rows-1.json")
    good_b = fixture_path("ontap/restperf/volume-rows-2.json")
    raw = good_b.read_bytes()
    cut = raw.index(b'"name"', len(raw) // 2)
    bad = tmp_path / "bad-rows.json"
    bad.write_bytes(raw[:cut] + b"\xff" + raw[cut:])
    line = raw[:cut].count(b"\n") + 1
    rc = main(["analyze", str(good_a), str(bad), str(good_b), "--interval", "60", "--format", "json"])
    cap = capsys.readouterr()
    assert rc == 2
    assert f"{bad}:{line}: not UTF-8 text" in cap.err and "Traceback" not in cap.err
    out = json.loads(cap.out)
    assert any(s["object"] == "volume" for s in out["series"])  # the good files still cooked


def test_utf16_capture_and_skipped_warnings_are_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    a = REAL / "system-node-partial-1.txt"
    b16 = tmp_path / "second-utf16.txt"
    b16.write_text((REAL / "system-node-partial-2.txt").read_text(encoding="utf-8"), encoding="utf-16")
    out, err = analyze_json(capsys, str(a), str(b16))
    assert [i["kind"] for i in out["inputs"]] == ["ontap-statistics", "ontap-statistics"]
    line = (
        a.read_text()
        .splitlines()
        .index(next(x for x in a.read_text().splitlines() if x.startswith("Warning:")))
        + 1
    )
    assert f"warning: {a}:{line}: skipped ONTAP warning: Unable to list entries on node" in err
    assert f"{b16}:{line}: skipped ONTAP warning" in err
    assert series(out, "system:node", "sti78-vsim-ucs188j", "cpu_elapsed_time")["samples"] == 1
