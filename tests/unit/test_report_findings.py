"""How `sanlens analyze` shows its findings: readable evidence in human units, incidents, subjects, time.

The report is handed to a customer: evidence under readable names (never the snake_case keys the
rules use) in the units people read (a multiple as 296x, a share in %, counts whole), findings
grouped by incident with the cause first, subjects counted and sorted as people count them, the
title naming hosts, clusters and time range, local time beside UTC where a capture knows it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from perfmon_logs import disk_columns, write_log
from sanlens.analyze.charts import Line, svg_chart
from sanlens.analyze.evidence_format import (
    RUNBOOK_BASE_URL,
    Zone,
    disk_name,
    label,
    natural_key,
    rows,
    runbook_url,
    span_text,
    subject_text,
    value,
)
from sanlens.analyze.incidents import incidents
from sanlens.analyze.series_units import perfmon_unit
from sanlens.cli import main
from sanlens.diagnose.registry import REGISTRY

DATA = Path(__file__).parents[1] / "data"
LUN = DATA / "ontap" / "lun-statistics-show-raw-samples.txt"
T0 = 1_740_909_600.0  # 2025-03-02 10:00:00 UTC, the LUN capture's first sample


# ------------------------------------------------------------------ evidence values and names
def test_a_multiple_reads_as_times_and_a_share_as_percent() -> None:
    assert value("san_oversubscription", "host_to_array_latency_ratio", 296.43) == "296\u00d7"
    assert value("disk_busy_imbalance", "busy_max_to_median_ratio", 2.5) == "2.5\u00d7"
    assert value("host_queue_limited", "latency_ratio", 12.0) == "12\u00d7"
    assert value("san_oversubscription", "host_idle_ratio", 0.9) == "90 %"
    assert value("cpu_domain_serial_bottleneck", "kahuna_busy_ratio", 0.91) == "91 % of one core"
    assert value("lun_iops_ceiling", "lun_ceiling_fraction", 0.5) == "50 %"


def test_every_ratio_of_like_quantities_is_declared_a_multiple() -> None:
    """A ratio whose name says it divides one thing by a like one (``_to_``, or a latency against its
    baseline) is declared ``fmt="multiple"`` in its spec, which the report and the alerts read."""
    multiples = {e.name for spec in REGISTRY.values() for e in spec.evidence if e.fmt == "multiple"}
    assert {
        "host_to_array_latency_ratio",
        "busy_max_to_median_ratio",
        "latency_ratio",
        "newest_raid_group_ratio",
    } <= multiples
    for spec in REGISTRY.values():
        for e in spec.evidence:
            if "_to_" in e.name and e.name.endswith("_ratio"):
                assert e.fmt == "multiple", (spec.id, e.name)


def test_ratios_that_are_no_multiple_read_as_percent() -> None:
    for spec in REGISTRY.values():
        for e in spec.evidence:
            if e.unit.startswith("ratio") and e.fmt != "multiple":
                assert value(spec.id, e.name, 0.25).startswith("25 %"), (spec.id, e.name)


def test_counts_are_whole_and_times_human() -> None:
    assert value("cpu_domain_serial_bottleneck", "processors", 8.0) == "8 cores"
    assert value("disk_busy_imbalance", "disks", 24.0) == "24 disks"
    assert value("san_oversubscription", "lun_latency_seconds", 0.000753) == "0.753 ms"
    assert value("san_oversubscription", "host_latency_seconds", 1.5) == "1.5 s"
    assert value("san_oversubscription", "host_iops", 12622.4) == "12,622"
    assert value("lun_not_online", "volume_available_bytes", 12_622_121.0) == "12.6 MB"
    assert value("san_oversubscription", "lun_latency_seconds", None) == "-"
    assert value("san_oversubscription", "lun_latency_seconds", float("inf")) == "overflow"


def test_labels_are_words_with_the_specs_description() -> None:
    assert label("host_to_array_latency_ratio") == "host / array latency"
    assert label("host_latency_seconds") == "host latency"
    assert label("host_iops") == "host IOPS"
    assert label("lun_latency_seconds") == "LUN latency"
    got = rows("san_oversubscription", {"host_to_array_latency_ratio": 296.0, "host_latency_seconds": 0.15})
    assert [r.key for r in got] == ["host_latency_seconds", "host_to_array_latency_ratio"]  # spec order
    ratio = got[1]
    assert (ratio.label, ratio.value) == ("host / array latency", "296\u00d7")
    assert ratio.help == "IOPS-weighted host latency / LUN latency"


# ------------------------------------------------------------------ subjects, runbooks, time
def test_disks_sort_by_number_and_keep_their_drive_letters() -> None:
    disks = [str(n) for n in (0, 1, 10, 11, 2, 20, 3)]
    assert sorted(disks, key=natural_key) == ["0", "1", "2", "3", "10", "11", "20"]
    assert disk_name("1", ("F:",)) == "disk 1 (F:)"
    subj = {"cluster": "c1", "svm": "svm1", "lun": "/vol/v/lun0", "host": "SQL01", "disk": "1"}
    assert subject_text(subj, ("E:",)) == "SQL01 disk 1 (E:) \u2192 LUN svm1:/vol/v/lun0"
    assert subject_text({"cluster": "c1", "node": "c1-01"}) == "cluster c1, node c1-01"


def test_runbooks_link_to_their_published_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANLENS_RUNBOOK_BASE_URL", raising=False)
    assert runbook_url("docs/runbooks/latency_slo.md") == f"{RUNBOOK_BASE_URL}/latency_slo.md"
    monkeypatch.setenv("SANLENS_RUNBOOK_BASE_URL", "https://wiki.example.com/rb/")
    assert runbook_url("docs/runbooks/latency_slo.md") == "https://wiki.example.com/rb/latency_slo.md"


def test_spans_show_local_time_where_known() -> None:
    pst = Zone.offset("Pacific Standard Time", -480)
    text = span_text(T0, T0 + 240, pst)
    assert text.startswith("2025-03-02 10:00:00 \u2013 10:04:00 UTC")
    assert "(2025-03-02 02:00:00 \u2013 02:04:00 Pacific Standard Time, UTC\u221208:00)" in text
    assert span_text(T0, T0 + 240, Zone.offset("Coordinated Universal Time", 0)).endswith("UTC")
    assert span_text(None, None) == "-"


# ------------------------------------------------------------------ charts
def _ys(svg: str) -> list[list[float]]:
    return [
        [float(p.split(",")[1]) for p in pts.split()]
        for pts in re.findall(r'<polyline points="([^"]+)"', svg)
    ]


def test_an_idle_chart_has_a_plain_axis() -> None:
    svg = svg_chart([Line("", [(T0, 0.0), (T0 + 60, 0.0)])], "percent")
    assert "1e-12" not in svg and ">1<" in svg and ">0<" in svg


def test_host_and_lun_latency_share_a_log_axis_that_shows_both() -> None:
    host = Line("host read", [(T0 + 15 * i, 0.150) for i in range(5)])
    lun = Line("LUN read", [(T0 + 15 * i, 0.0005) for i in range(5)])
    linear = _ys(svg_chart([host, lun], "seconds", (0.01, 0.02)))
    log_svg = svg_chart([host, lun], "seconds", (0.01, 0.02), log=True)
    logged = _ys(log_svg)
    bottom = 8 + (160 - 30 - 8)  # the plot's floor
    assert bottom - linear[1][0] < 1  # on a linear axis the LUN's 0.5 ms lies on the floor
    assert bottom - logged[1][0] > 20  # on the log axis it stands clear of it
    assert logged[0][0] < logged[1][0] - 40  # and well below the host's 150 ms
    assert "ms, log scale" in log_svg
    for tick in ("0.1", "1", "10", "100", "1,000"):
        assert f">{tick}</text>" in log_svg


# ------------------------------------------------------------------ incidents
def _finding(did: str, disk: str, state: int, role: str, incident: str) -> dict[str, object]:
    return {
        "id": did,
        "title": REGISTRY[did].title,
        "subject": {"host": "SQL01", "disk": disk},
        "state": state,
        "severity": {1: "warning", 2: "critical"}[state],
        "score": 1.0,
        "incident": incident,
        "role": role,
        "evidence": {},
    }


def test_incidents_put_the_cause_first_and_its_symptoms_under_it() -> None:
    inc = "san_oversubscription:c1/SQL01"
    found = [
        _finding("latency_slo", "10", 2, "symptom", inc),
        _finding("latency_slo", "2", 2, "symptom", inc),
        _finding("san_oversubscription", "10", 1, "cause", inc),
        _finding("san_oversubscription", "2", 2, "cause", inc),
        _finding("lun_iops_ceiling", "3", 1, "cause", "lun_iops_ceiling:c1/x"),
    ]
    got = incidents(found)
    assert [i.key for i in got] == [inc, "lun_iops_ceiling:c1/x"]  # the critical incident first
    first = got[0]
    assert [g.id for g in first.groups] == ["san_oversubscription", "latency_slo"]
    assert first.lead.id == "san_oversubscription"
    assert [d["subject"]["disk"] for d in first.causes[0].findings] == ["2", "10"]  # worst, then by number
    assert [d["subject"]["disk"] for d in first.symptoms[0].findings] == ["2", "10"]


# ------------------------------------------------------------------ the reports
def _disks_log(tmp_path: Path, n: int = 64) -> Path:
    """A host with ``n`` disks, every fourth at 150 ms, some with drive letters."""
    names = [f"{i} {chr(ord('D') + i % 20)}:" if i % 3 else str(i) for i in range(n)]
    cols: list[str] = []
    for name in names:
        cols += disk_columns("SQL02", name)
    data = []
    for t in range(9):
        row: list[float] = []
        for i in range(n):
            row += [500.0 + i, 100.0, 0.15 if i % 4 == 0 else 0.002, 0.01, 90.0, 2.0]
        data.append((T0 + 15.0 * t, row))
    return write_log(tmp_path / "sql02.csv", cols, data)


@pytest.fixture(scope="module")
def many_disks(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("disks")
    out = tmp / "report.html"
    argv = [
        "analyze",
        str(_disks_log(tmp)),
        str(LUN),
        "--interval",
        "1",
        "--format",
        "html",
        "-o",
        str(out),
        "-q",
    ]
    assert main(argv) == 0
    return out.read_text(encoding="utf-8")


def test_report_counts_subjects_not_pairs(many_disks: str) -> None:
    summary = many_disks.split('id="summary"', 1)[1].split("</div>", 1)[0]
    assert "65 subjects (64 host disk(s), 1 ONTAP object(s))" in summary
    assert "256" not in summary and "258" not in summary


def test_report_title_names_hosts_and_the_time_range(many_disks: str) -> None:
    assert "<h1>SQL02 \u00b7 ONTAP</h1>" in many_disks
    assert "2025-03-02 10:00:00 \u2013 10:02:00 UTC" in many_disks.split("<h1>", 1)[1].split("</p>", 1)[0]
    assert "<title>SQL02" in many_disks


def test_report_groups_many_subjects_into_one_incident(many_disks: str) -> None:
    body = many_disks.split('id="diagnoses"', 1)[1].split('id="inputs"', 1)[0]
    assert body.count("<section class=") == 1  # one over-subscribed host: one incident
    cause = body.index('data-diagnosis="san_oversubscription" data-role="cause"')
    symptom = body.index('data-diagnosis="latency_slo" data-role="symptom"')
    assert cause < symptom  # the cause above its symptoms
    assert body.count("<svg") <= 3 * 4  # charts of the worst few subjects, not one set per finding
    table = body[cause:symptom]
    order = re.findall(r"<tr><td>SQL02 disk (\d+)", table)
    assert len(order) == 64 and order[:3] == ["0", "4", "8"]  # worst first (150 ms), then by number
    assert order[16:20] == ["1", "2", "3", "5"]
    assert "SQL02 disk 1 (E:)" in table


def test_report_host_disks_in_natural_order_with_drive_letters(many_disks: str) -> None:
    hosts = many_disks.split('id="hosts"', 1)[1].split('id="ontap"', 1)[0]
    order = re.findall(r"<tr><td>disk (\d+)", hosts)
    assert order == [str(n) for n in range(64)]
    assert "<td>disk 1 (E:)</td>" in hosts and "<td>disk 0</td>" in hosts


def test_report_shows_evidence_by_name_without_score(many_disks: str) -> None:
    body = many_disks.split('id="diagnoses"', 1)[1].split('id="inputs"', 1)[0]
    labels = re.findall(r"<th[^>]*>([^<]*)</th>", body)
    assert labels and not [x for x in labels if re.search(r"[a-z]_[a-z]", x)], labels
    assert "host latency" in labels
    assert "score" not in re.sub(r"<[^>]+>", " ", body)
    assert f'href="{RUNBOOK_BASE_URL}/san_oversubscription.md"' in body


def test_all_series_table_in_human_units(many_disks: str) -> None:
    table = many_disks.split('id="series"', 1)[1]
    row = table.split("\\\\SQL02\\PhysicalDisk(0)\\Avg. Disk sec/Read", 1)[1].split("</tr>", 1)[0]
    assert "150 ms" in row
    row = table.split("\\\\SQL02\\PhysicalDisk(0)\\Disk Reads/sec", 1)[1].split("</tr>", 1)[0]
    assert "500 IOPS" in row
    assert perfmon_unit("Disk Read Bytes/sec") == "bytes_per_second"
    assert perfmon_unit("% Idle Time") == "percent"
    assert perfmon_unit("Current Disk Queue Length") == "count"


def test_report_shows_the_logs_local_time(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert (
        main(["analyze", str(DATA / "perfmon" / "relog_sql01.csv"), "--format", "html", "-o", str(out), "-q"])
        == 0
    )
    head = out.read_text(encoding="utf-8").split('class="range"', 1)[1].split("</p>", 1)[0]
    assert "17:00:00" in head and "UTC" in head
    assert "09:00:00" in head and "Pacific Standard Time, UTC\u221208:00" in head


def test_text_findings_in_human_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _disks_log(tmp_path, 4)
    assert main(["analyze", str(log), str(LUN), "--interval", "1", "-q"]) == 0
    text = capsys.readouterr().out.split("Diagnoses:", 1)[1]
    assert "incident(s)" in text
    assert not re.search(r"\d\.\d+e[-+]\d", text)  # no scientific notation
    assert "score" not in text and "_seconds" not in text.split("fix:")[0]
    assert "host latency" in text and "150 ms" in text
    assert text.index("cause:") < text.index("symptom:")


def test_zone_offsets_follow_daylight_saving() -> None:
    from zoneinfo import ZoneInfo

    z = Zone("Europe/Berlin", ZoneInfo("Europe/Berlin"))
    summer = dt.datetime(2025, 7, 1, 12, tzinfo=dt.UTC).timestamp()
    assert z.utc_offset(summer) == "UTC+02:00" and z.utc_offset(T0) == "UTC+01:00"
