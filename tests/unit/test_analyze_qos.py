"""`sanlens analyze` on QoS latency breakdowns: every real capture, the report section, the engine's views.

The real outputs are tests/data/ontap/qos/*.txt (see its README); the other inputs are built here,
in ONTAP's layouts, and are not captures from a real system.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.unit.test_workload_detail_text import capture, detail, workload

from sanlens.analyze.qos_breakdown import components
from sanlens.analyze.qos_views import with_qos
from sanlens.cli import main
from sanlens.diagnose.registry import REGISTRY
from sanlens.model import OntapView, Snapshot
from sanlens.qos import QosWorkload

DATA = Path(__file__).parents[1] / "data" / "ontap" / "qos"
SAMPLES = sorted(DATA.glob("*.txt"))
_SCALE = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc = main(["analyze", "-q", *argv, "--format", "json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    return json.loads(cap.out)


def cell(text: str) -> tuple[float, float]:
    """A printed cell as (seconds, half its last digit), read apart from the product's parser."""
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(us|ms|s)", text)
    assert m, text
    value = float(text[: -len(m[3])]) * _SCALE[m[3]]
    return value, (0.0 if value == 0 else 0.5 * 10 ** -len(m[2] or "") * _SCALE[m[3]])


def printed(path: Path) -> dict[str, tuple[tuple[float, float], dict[str, tuple[float, float]]]]:
    """Each row: its Latency cell and its component cells by header, split on the ruler's dash runs."""
    lines = path.read_text().splitlines()
    r = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[r])]
    heads, start = [], 0
    for _s, end in spans:
        heads.append(lines[r - 1][start:end].strip())
        start = end
    out = {}
    for line in lines[r + 1 :]:
        cells = dict(zip(heads, line.split(), strict=True))
        name = cells.pop("Workload", None) or cells.pop("Policy Group")
        cells.pop("ID", None)
        lat = cell(cells.pop("Latency"))
        out[name] = (lat, {h: cell(v) for h, v in cells.items()})
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_real_capture_adds_up_and_names_its_dominant_column(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    doc = report(capsys, str(path))
    section = doc["qos_breakdown"]
    assert section["title"] == "Where the time goes inside ONTAP"
    rows = printed(path)
    shown = {w["workload"]: w for w in section["workloads"]} | {t["workload"]: t for t in section["totals"]}
    assert set(shown) == set(rows)
    for name, ((lat, lat_slack), cols) in rows.items():
        w = shown[name]
        (iv,) = w["intervals"]
        assert iv["latency"] == pytest.approx(lat, abs=1e-12)
        named = sum(v for k, v in iv["parts"].items() if k != "other")
        assert named == pytest.approx(sum(v for v, _ in cols.values()), abs=1e-12)
        slack = lat_slack + sum(s for _, s in cols.values())
        if "other" in iv["parts"]:  # outside the cells' rounding: the residual closes the gap
            assert abs(lat - named) > slack
            assert sum(iv["parts"].values()) == pytest.approx(lat, abs=1e-12)
        else:  # within the rounding of every printed cell
            assert abs(lat - named) <= slack + 1e-12
        biggest = max(cols, key=lambda h: cols[h][0])
        d = w["dominant"]
        assert d["label"] == biggest
        assert d["value"] == pytest.approx(cols[biggest][0], abs=1e-12)
        assert d["share"] == pytest.approx(cols[biggest][0] / lat)


def test_policy_group_at_its_limit_is_dominated_by_the_qos_column(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report(capsys, str(DATA / "policy-group-latency-at-limit.txt"))
    (w,) = [w for w in doc["qos_breakdown"]["workloads"] if w["workload"] == "svm1-sql"]
    assert w["policy_group"] == "svm1-sql" and w["volume"] == ""
    # 3.65 ms of 4.28 ms = 85.3 %
    assert w["dominant"]["text"] == "QoS: 3.65 ms of 4.28 ms (85 %)"
    # the older single QoS column is judged as "other": ceiling or floor, the reference does not say
    assert {c["key"]: c["judged_as"] for c in w["columns"]}["qos"] == "other"
    assert components({"qos": 3.65e-3, "disk": 1e-4}) == {"other": 3.65e-3, "disk": 1e-4}


def test_qos_min_dominates_the_aqos_volumes(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report(capsys, str(DATA / "volume-latency-qos-min-aqos.txt"))
    by = {w["workload"]: w for w in doc["qos_breakdown"]["workloads"]}
    assert by["vol1-wid21368"]["volume"] == "vol1" and by["vol1-wid21368"]["wid"] == "21368"
    # 877.99 / 879.73 = 99.80 %: one decimal, not a rounded 100 %
    assert by["vol1-wid21368"]["dominant"]["text"] == "QoS Min: 877.99 ms of 879.73 ms (99.8 %)"
    assert by["vol2-wid19287"]["dominant"]["component"] == "qos_min"
    assert [w["workload"] for w in doc["qos_breakdown"]["workloads"]] == ["vol1-wid21368", "vol2-wid19287"]


def test_total_row_is_summarised_with_what_no_column_holds(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report(capsys, str(DATA / "workload-latency-qos-max-total.txt"))
    assert doc["qos_breakdown"]["workloads"] == []
    (t,) = doc["qos_breakdown"]["totals"]
    assert t["svm"] == "svm1"  # the echoed command's -vserver
    # 48.38 - 3.04 - 0.048 - 0.717 - 0.125 - 17.09 - 0.002 = 27.358 ms in no column (56.5 %)
    assert (
        t["dominant"]["text"]
        == "QoS Max: 17.09 ms of 48.38 ms (35 %); 27.36 ms (57 %) is in no column ONTAP prints"
    )


ITERATIONS = """cluster1::> qos statistics volume latency show -vserver svm1 -iterations 3
Workload            ID    Latency    Network    Cluster       Data       Disk    QoS Max    QoS Min      NVRAM
--------------- ------ ---------- ---------- ---------- ---------- ---------- ---------- ---------- ----------
-total-              -    10.00ms     1.00ms        0ms     1.00ms     1.00ms     7.00ms        0ms        0ms
sql_data-wid101    101    {lat}    1.00ms        0ms     1.00ms     1.00ms    {qmax}        0ms        0ms
"""


def iterations(tmp_path: Path) -> Path:
    blocks = [("20.00ms", "17.00ms"), ("30.00ms", "27.00ms"), ("40.00ms", "37.00ms")]
    p = tmp_path / "iterations.txt"
    text = ITERATIONS.format(lat=blocks[0][0], qmax=blocks[0][1])
    for lat, qmax in blocks[1:]:
        text += "".join(ITERATIONS.format(lat=lat, qmax=qmax).splitlines(keepends=True)[1:])
    p.write_text(text)
    return p


def test_intervals_over_time_reach_the_engine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = report(capsys, str(iterations(tmp_path)), "--interval", "5")
    (w,) = doc["qos_breakdown"]["workloads"]
    assert w["svm"] == "svm1" and w["volume"] == "sql_data"
    assert [iv["latency"] for iv in w["intervals"]] == pytest.approx([0.020, 0.030, 0.040])
    times = [iv["time"] for iv in w["intervals"]]
    assert len(set(times)) == 3 and all(iv["placed"] for iv in w["intervals"])
    # mean QoS Max (17 + 27 + 37) / 3 = 27 ms of mean latency 30 ms: 90 %
    assert w["dominant"]["text"] == "QoS Max: 27.00 ms of 30.00 ms (90 %)"
    if "qos_throttle" in REGISTRY:  # the engine judges whatever the registry holds
        (status,) = [i["status"] for i in doc["inputs"]]
        assert "qos_throttle" in status["evaluated"]
        fired = [d for d in doc["diagnoses"] if d["id"] == "qos_throttle"]
        assert fired


def test_text_and_html_reports_carry_the_section(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = str(iterations(tmp_path))
    assert main(["analyze", "-q", src, "--interval", "5"]) == 0
    text = capsys.readouterr().out
    assert "Where the time goes inside ONTAP" in text
    assert "dominant: QoS Max: 27.00 ms of 30.00 ms (90 %)" in text
    assert re.search(r"iterations\.txt #2\s+40\.00 ms\s+1\.00 ms\s+1\.00 ms\s+1\.00 ms\s+37\.00 ms", text)
    out = tmp_path / "r.html"
    assert main(["analyze", "-q", src, "--interval", "5", "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    section = page[page.index('<h2 id="qos">') :]
    assert '<a href="#qos">' in page
    assert section.count("<title>") >= 3 * 4  # four components stacked in each of three bars
    assert "QoS Max: 27.00 ms of 30.00 ms (90 %)" in section
    assert not re.search(r"\d[eE][-+]\d", re.sub(r"<svg.*?</svg>", "", section, flags=re.S))


T = ("3/2/2025 10:00:00", "3/2/2025 10:01:00", "3/2/2025 10:02:00")


def detail_capture(when: str, k: int, with_latency: bool) -> str:
    """Interval k adds 10 000 us of Network, 30 000 us of Data and 60 000 * k us of QoS Max."""
    blocks = [
        detail("n1:vol1-wid7.CPU_nblade", when, 100 * k, 10_000 * k, 0),
        detail("n1:vol1-wid7.CPU_dblade", when, 100 * k, 30_000 * k, 0),
        detail("n1:vol1-wid7.DELAY_CENTER_QOS_LIMIT", when, 100 * k, 0, 60_000 * k * k),
    ]
    if with_latency:  # 600 ops per interval; latency 100 us per op in the first, 200 us in the second
        blocks.append(workload("vol1-wid7", when, 600 * k, [0, 60_000, 180_000][k]))
    return capture(*blocks)


@pytest.mark.parametrize("with_latency", [True, False])
def test_workload_detail_captures(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, with_latency: bool
) -> None:
    files = []
    for k, when in enumerate(T):
        files.append(tmp_path / f"wd-{k}.txt")
        files[-1].write_text(detail_capture(when, k, with_latency))
    doc = report(capsys, *map(str, files))
    (w,) = doc["qos_breakdown"]["workloads"]
    first, second = w["intervals"]
    # interval 1: 10 000 + 30 000 + 60 000 us; interval 2: 10 000 + 30 000 + 180 000 us
    shares1 = {"network": 0.1, "data": 0.3, "qos_max": 0.6}
    shares2 = {"network": 10 / 220, "data": 30 / 220, "qos_max": 180 / 220}
    if with_latency:
        assert w["unit"] == "seconds" and w["volume"] == "vol1"
        assert first["latency"] == pytest.approx(100e-6) and second["latency"] == pytest.approx(200e-6)
        assert first["iops"] == pytest.approx(600 / 60)
        assert first["parts"] == pytest.approx({k: v * 100e-6 for k, v in shares1.items()})
        assert second["parts"] == pytest.approx({k: v * 200e-6 for k, v in shares2.items()})
        qmax = (0.6 * 100e-6 + 180 / 220 * 200e-6) / 2
        assert w["dominant"]["component"] == "qos_max"
        assert w["dominant"]["value"] == pytest.approx(qmax)
        assert w["dominant"]["share"] == pytest.approx(qmax / 150e-6)
    else:
        assert w["unit"] == "share" and first["latency"] is None
        assert first["parts"] == pytest.approx(shares1) and second["parts"] == pytest.approx(shares2)
        notes = " ".join(i["status"].get("note", "") for i in doc["inputs"])
        assert "shares of the time in ONTAP, not seconds" in notes
        assert w["dominant"]["text"] == f"QoS Max: {(0.6 + 180 / 220) / 2 * 100:.0f} % of the time in ONTAP"


def test_qos_rides_on_the_next_counter_view_while_counters_are_live() -> None:
    def counter(t: float) -> Snapshot:
        return Snapshot("c1", "ontap", t, view=OntapView("c1", t, 60.0))

    w = QosWorkload("c1", "svm1", "v-wid1", latency_s=0.01, components={"qos_max": 0.009, "disk": 0.001})
    out = list(with_qos([counter(0.0), counter(60.0)], [(30.0, 5.0, (w,)), (1000.0, 5.0, (w,))], "c1", None))
    assert [s.timestamp for s in out] == [0.0, 60.0, 1000.0]
    assert [isinstance(s.view, OntapView) and s.view.qos_workloads for s in out] == [(), (w,), (w,)]
    # the counter views are 940 s old at 1000 s (stale after 300 s): the QoS interval stands alone
    assert isinstance(out[2].view, OntapView) and out[2].view.interval_s == 5.0


def test_each_finding_shows_where_its_time_went(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The throttled workload's finding carries its waterfall: ONTAP's parts in path order adding up to
    its latency, QoS Max named as the dominant one in JSON, text and HTML."""
    src = str(iterations(tmp_path))
    doc = report(capsys, src, "--interval", "5")
    (fired,) = [d for d in doc["diagnoses"] if d["id"] == "qos_throttle"]
    wf = fired["waterfall"]
    assert wf["dominant"] == "qos_max"
    assert sum(wf["parts"].values()) == pytest.approx(wf["latency_seconds"])
    assert list(wf["parts"]) == ["network", "data", "disk", "qos_max"]  # the path's order
    lat, qmax = wf["latency_seconds"], wf["parts"]["qos_max"]
    assert main(["analyze", "-q", src, "--interval", "5"]) == 0
    text = capsys.readouterr().out
    assert f"most of it ONTAP QoS Max {qmax * 1000:.2f} ms of {lat * 1000:.2f} ms" in text
    out = tmp_path / "r.html"
    assert main(["analyze", "-q", src, "--interval", "5", "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    assert (
        page.count('class="wf-part"') == 4 and "<b>Where the time goes:</b> most of it ONTAP QoS Max" in page
    )
