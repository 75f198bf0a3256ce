"""The engine's mechanics (sustain, hysteresis, subjects, staleness, threads), the /diagnoses shape and
the metric families; the registry and threshold validation are in test_diagnose_config.py."""

from __future__ import annotations

import json
import math
import threading
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.builders import (
    AGGR_KEY,
    DISK_KEY,
    LUN_KEY,
    LUN_PATH,
    T0,
    disk,
    engine,
    feed,
    finding,
    hostview,
    lun,
    mapped,
    node,
    ontap,
    snap,
    state,
    subjects,
    vol,
)

from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import REGISTRY
from sanlens.model import AggregateInfo, HostDiskStats, OntapView, Snapshot
from sanlens.serve.server import ExporterServer
from sanlens.store import State

ROOT = Path(__file__).resolve().parents[2]
# evidence names carry their unit (or are counts named for what they count)
UNIT_SUFFIXES = (
    "_seconds",
    "_ratio",
    "_iops",
    "_fraction",
    "_io",
    "_depth",
    "processors",
    "disks",
    "volumes",
)
UNIT_SUFFIXES += ("_operations", "luns_needed", "_percent", "_per_second")


def slo_disk(lat: float | None) -> HostDiskStats:
    # 300 IOPS at ~10 ms keep ~3 I/Os outstanding: the disk is rarely idle (else san_oversubscription)
    return disk(read_latency_s=lat, write_latency_s=None, idle_ratio=0.1)


# ------------------------------------------------------------------ sustain / hysteresis
def test_just_under_warning_never_fires() -> None:
    e = engine()
    feed(e, 0, 3600, 15, lambda t: [hostview(t, slo_disk(0.0099))])
    assert state(e, "latency_slo", DISK_KEY) == 0
    assert e.findings() == []


def test_warning_enters_only_after_the_sustain_window() -> None:
    e = engine()
    sustain = REGISTRY["latency_slo"].sustain_s  # 300 s
    feed(e, 0, sustain - 15, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 0
    feed(e, sustain, sustain, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    f = finding(e, "latency_slo")
    assert f is not None and f["severity"] == "warning"
    # since = when the condition began (the first poll over the threshold), not when it entered
    assert datetime.fromisoformat(f["since"].replace("Z", "+00:00")).timestamp() == T0


def test_interrupted_condition_restarts_the_sustain_window() -> None:
    e = engine()
    feed(e, 0, 270, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    feed(e, 285, 285, 15, lambda t: [hostview(t, slo_disk(0.005))])  # one good poll
    feed(e, 300, 570, 15, lambda t: [hostview(t, slo_disk(0.0101))])  # 270 s again: not enough
    assert state(e, "latency_slo", DISK_KEY) == 0
    feed(e, 585, 600, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1


def test_hysteresis_holds_above_0_9_and_exits_after_the_exit_window() -> None:
    e = engine()
    feed(e, 0, 600, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    # 9.5 ms is under the 10 ms threshold but above 0.9 x 10 = 9 ms: stays for good
    feed(e, 615, 3600, 15, lambda t: [hostview(t, slo_disk(0.0095))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    exit_s = REGISTRY["latency_slo"].exit_s
    # 8.5 ms is below 9 ms: leaves once that has lasted the exit window
    feed(e, 3615, 3615 + exit_s - 15, 15, lambda t: [hostview(t, slo_disk(0.0085))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    feed(e, 3615 + exit_s, 3615 + exit_s, 15, lambda t: [hostview(t, slo_disk(0.0085))])
    assert state(e, "latency_slo", DISK_KEY) == 0
    assert e.findings() == []


def test_critical_steps_down_to_warning_not_to_ok() -> None:
    e = engine()
    feed(e, 0, 600, 15, lambda t: [hostview(t, slo_disk(0.0205))])
    assert state(e, "latency_slo", DISK_KEY) == 2
    since = finding(e, "latency_slo")["since"]  # type: ignore[index]
    feed(e, 615, 2000, 15, lambda t: [hostview(t, slo_disk(0.019))])  # above 0.9 x 20 = 18 ms
    assert state(e, "latency_slo", DISK_KEY) == 2
    feed(e, 2015, 2015 + 300, 15, lambda t: [hostview(t, slo_disk(0.017))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    assert finding(e, "latency_slo")["since"] == since  # type: ignore[index]


def test_sustain_scale_shortens_windows() -> None:
    e = engine(sustain_scale=0.05)  # 300 s -> 15 s
    feed(e, 0, 0, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 0
    feed(e, 15, 15, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1


def test_window_overrides_in_thresholds() -> None:
    e = engine(thresholds={"latency_slo": {"sustain_seconds": 60, "exit_seconds": 0}})
    feed(e, 0, 60, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1
    feed(e, 75, 75, 15, lambda t: [hostview(t, slo_disk(0.0085))])
    assert state(e, "latency_slo", DISK_KEY) == 0


def test_missing_latency_keeps_the_state_and_the_run() -> None:
    e = engine()
    feed(e, 0, 150, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    feed(
        e,
        165,
        165,
        15,
        lambda t: [
            hostview(t, disk(read_iops=None, write_iops=None, read_latency_s=None, write_latency_s=None))
        ],
    )
    feed(e, 180, 300, 15, lambda t: [hostview(t, slo_disk(0.0101))])
    assert state(e, "latency_slo", DISK_KEY) == 1


def test_time_never_runs_backwards_between_sources() -> None:
    e = engine(sustain_scale=0.0)
    e.update(snap(hostview(100, slo_disk(0.0205))))
    assert state(e, "latency_slo", DISK_KEY) == 2
    e.update(snap(ontap(40)))  # an older ONTAP poll arrives late: no crash, state unchanged
    assert state(e, "latency_slo", DISK_KEY) == 2


# ------------------------------------------------------------------ subjects
def test_every_existing_subject_is_judged_ok_and_disappears_with_its_object() -> None:
    e = engine()
    e.update(snap(ontap(0)))
    e.update(snap(hostview(0, disk(), disk(disk="2"))))
    assert state(e, "lun_iops_ceiling", LUN_KEY) == 0
    assert state(e, "cpu_domain_serial_bottleneck", "c1/n1") == 0
    assert state(e, "disk_busy_imbalance", AGGR_KEY) == 0
    assert subjects(e, "latency_slo") == {DISK_KEY, "sql01/disk 2", LUN_KEY}
    e.update(snap(hostview(15, disk())))  # disk 2 is gone
    assert subjects(e, "latency_slo") == {DISK_KEY, LUN_KEY}
    e.update(snap(ontap(60, luns=())))
    assert state(e, "lun_iops_ceiling", LUN_KEY) is None


def test_a_silent_source_goes_stale() -> None:
    e = engine()
    e.update(snap(hostview(0, disk(), host="old")))
    feed(e, 0, 600, 60, lambda t: [ontap(t)])
    assert "old/disk 1" not in subjects(e, "latency_slo")
    assert LUN_KEY in subjects(e, "latency_slo")


# ------------------------------------------------------------------ missing data
def test_missing_and_degenerate_data_never_crash() -> None:
    nan = math.nan
    e = engine(sustain_scale=0.0, backend_iops_capacity=1000.0)
    bad_disk = HostDiskStats("h", "0", read_iops=nan, read_latency_s=nan, idle_ratio=None, queue_length=nan)
    zero_disk = disk(
        host="h", disk="1", read_iops=0.0, write_iops=0.0, read_latency_s=None, write_latency_s=None
    )
    unmapped = disk(host="h", disk="2", cluster="", lun="")
    ghost = disk(
        host="h", disk="3", cluster="nowhere", svm="s1", lun="/vol/v1/lun0"
    )  # mapped to a cluster nobody polls
    views = [
        OntapView("c1", T0, None),  # first poll: no interval, nothing cooked
        ontap(
            60,
            version=None,
            luns=(
                lun(read_iops=nan, write_iops=None, read_latency_s=nan),
                lun(lun="/vol/v1/z", read_iops=0.0),
            ),
            volumes=(vol(total_iops=nan, avg_latency_s=None, read_iops=None), vol("v2", aggregate="")),
            nodes=(node(domain_busy={}, processors=None, cpu_busy_ratio=nan), node(node="n2", processors=1)),
            aggregates=(AggregateInfo("c1", "empty"), AggregateInfo("c1", "aggr1")),
            disks=(),
        ),
        hostview(0, interval=None),
        hostview(15, bad_disk, zero_disk, unmapped, ghost, host="h"),
        hostview(15, HostDiskStats("x", "9", queue_depth=0, paths=0), host="x"),
    ]
    for v in views:
        e.update(snap(v))
    e.update(Snapshot("none", "host", T0))  # no view at all
    assert all(f["state"] > 0 for f in e.findings())  # none fire on garbage
    assert e.findings() == []
    json.dumps(e.findings())
    for m in e.metrics():
        assert all(math.isfinite(v) for _lv, v in m.samples), m.name


def test_concurrent_updates_from_two_threads() -> None:
    e = engine(sustain_scale=0.0)
    errors: list[BaseException] = []

    def run(kind: str) -> None:
        try:
            for i in range(200):
                v = ontap(i) if kind == "ontap" else hostview(i, mapped(read_latency_s=0.03))
                e.update(snap(v))
                e.findings()
                e.metrics()
        except BaseException as ex:  # pragma: no cover - the assertion reports it
            errors.append(ex)

    threads = [threading.Thread(target=run, args=(k,)) for k in ("ontap", "host")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert state(e, "latency_slo", DISK_KEY) == 2


# ------------------------------------------------------------------ exposure
def _firing_engine() -> Engine:
    e = engine(sustain_scale=0.0)
    bad = mapped(read_latency_s=1.5, write_latency_s=1.2, idle_ratio=0.7)
    feed(e, 0, 60, 15, lambda t: [ontap(t), hostview(t, bad)])
    return e


def test_findings_have_the_diagnoses_json_shape() -> None:
    findings = _firing_engine().findings()
    assert {f["id"] for f in findings} == {"san_oversubscription", "latency_slo"}
    for f in findings:
        assert {
            "id",
            "subject",
            "state",
            "severity",
            "score",
            "since",
            "evidence",
            "recommendation",
            "runbook",
        } <= set(f)
        assert f["state"] in (1, 2) and f["severity"] == {1: "warning", 2: "critical"}[f["state"]]
        assert 0.0 <= f["score"] <= 1.0
        datetime.fromisoformat(f["since"].replace("Z", "+00:00"))
        assert all(isinstance(v, float | int) and math.isfinite(v) for v in f["evidence"].values())
        assert all(k.endswith(UNIT_SUFFIXES) for k in f["evidence"]), f["evidence"]
        assert f["runbook"] == f"docs/runbooks/{f['id']}.md" and (ROOT / f["runbook"]).exists()
        assert len(f["recommendation"]) > 40
    over = next(f for f in findings if f["id"] == "san_oversubscription")
    assert over["subject"] == {
        "host": "sql01",
        "disk": "1",
        "cluster": "c1",
        "svm": "s1",
        "volume": "v1",
        "lun": "/vol/v1/lun0",
    }
    assert over["evidence"]["host_read_latency_seconds"] == 1.5
    # host 1.5 s read / 1.2 s write weighted by 200/100 IOPS = 1.4 s against 0.5 ms at the array
    assert over["evidence"]["host_to_array_latency_ratio"] == pytest.approx(1.4 / 0.0005)
    json.dumps(findings)


def test_metric_families_and_labels() -> None:
    fams = {m.name: m for m in _firing_engine().metrics()}
    diag_labels = (
        "diagnosis",
        "subject",
        "cluster",
        "node",
        "svm",
        "volume",
        "lun",
        "aggregate",
        "host",
        "disk",
        "port",
    )
    for name in (
        "sanlens_diagnosis_state",
        "sanlens_diagnosis_score",
        "sanlens_diagnosis_since_timestamp_seconds",
    ):
        assert fams[name].label_names == diag_labels and fams[name].type == "gauge"
    assert fams["sanlens_diagnosis_evidence"].label_names == (*diag_labels, "evidence")
    assert fams["sanlens_diagnosis_threshold"].label_names == ("diagnosis", "threshold")
    states = {
        (dict(zip(diag_labels, lv, strict=True))["diagnosis"], lv[1]): v
        for lv, v in fams["sanlens_diagnosis_state"].samples
    }
    assert states[("san_oversubscription", DISK_KEY)] == 2
    assert ("lun_iops_ceiling", LUN_KEY) not in states  # ok subjects cost no series...
    counts = {lv: v for lv, v in fams["sanlens_diagnosis_subjects"].samples}
    assert counts[("lun_iops_ceiling", "ok")] >= 1  # ... but are counted
    assert counts[("san_oversubscription", "critical")] == 1
    assert not {k for k, _ in states} - {"san_oversubscription", "latency_slo", "host_queue_limited"}
    since = {lv[:2]: v for lv, v in fams["sanlens_diagnosis_since_timestamp_seconds"].samples}
    assert since[("san_oversubscription", DISK_KEY)] == T0
    assert ("lun_iops_ceiling", LUN_KEY) not in since  # only while non-ok


def test_diagnoses_and_metrics_over_http() -> None:
    st = State()
    srv = ExporterServer(st, "127.0.0.1:0", engine=_firing_engine())
    srv.start()
    try:
        base = f"http://127.0.0.1:{srv.port}"
        with urllib.request.urlopen(base + "/diagnoses", timeout=5) as r:
            body = json.loads(r.read())
        assert {f["id"] for f in body} == {"san_oversubscription", "latency_slo"}
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            text = r.read().decode()
        samples = {
            (fam.name, tuple(sorted(smp.labels.items()))): smp.value
            for fam in text_string_to_metric_families(text)
            for smp in fam.samples
        }
        key = {"diagnosis": "san_oversubscription", "subject": DISK_KEY, "host": "sql01", "disk": "1"}
        key |= {
            "cluster": "c1",
            "svm": "s1",
            "volume": "v1",
            "lun": LUN_PATH,
            "node": "",
            "aggregate": "",
            "port": "",
        }
        assert samples[("sanlens_diagnosis_state", tuple(sorted(key.items())))] == 2
        thr = {"diagnosis": "latency_slo", "threshold": "data_critical_seconds"}
        assert samples[("sanlens_diagnosis_threshold", tuple(sorted(thr.items())))] == 0.02
    finally:
        srv.stop()


def test_over_subscription_quotes_the_front_end_ports_of_the_luns_node() -> None:
    """Array-side evidence: the LUN's node's FC target ports turn commands away (queue full)."""
    from sanlens.model import FcPortStats

    ports = (
        FcPortStats(
            "c1", "n1", "0c", 16.0, "online", read_bytes_s=400e6, write_bytes_s=100e6, queue_full=600.0
        ),
        FcPortStats(
            "c1", "n1", "0d", 16.0, "online", read_bytes_s=100e6, write_bytes_s=50e6, queue_full=300.0
        ),
        FcPortStats("c1", "n9", "0c", 32.0, "online", read_bytes_s=3000e6, queue_full=6000.0),  # another node
    )
    e = engine(sustain_scale=0.0)
    bad = mapped(read_latency_s=1.5, write_latency_s=1.2, idle_ratio=0.7)
    feed(e, 0, 60, 15, lambda t: [ontap(t, fc_ports=ports), hostview(t, bad)])
    over = next(f for f in e.findings() if f["id"] == "san_oversubscription")
    # (600 + 300) queue-full responses in the 60 s interval; busiest port 400 MB/s of 16 Gbit/s (1,600 MB/s)
    assert over["evidence"]["fc_port_queue_full_per_second"] == pytest.approx(900 / 60)
    assert over["evidence"]["fc_port_utilization_ratio"] == pytest.approx(400e6 / 16e8)
    assert "15 queue-full responses/s" in over["recommendation"]


def test_fix_texts_write_absurd_numbers_short_and_keep_real_ones() -> None:
    from sanlens.diagnose.base import compact_numbers

    assert compact_numbers(f"runs {1e300:.0f} IOPS") == "runs 1e+300 IOPS"
    assert compact_numbers("runs 950000 IOPS on lun-12345678901234 at 0.75 ms") == (
        "runs 950000 IOPS on lun-12345678901234 at 0.75 ms"
    )
