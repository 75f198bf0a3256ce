"""A diagnosis is one module: its SPEC is the only list of its evidence, and everything that quotes
evidence (evaluate, the alert rules, their promtool tests, the dashboards) is held against it.

Scenarios run every diagnosis through the engine with ``evaluate`` wrapped, so an evidence key a
module returns without declaring it, or declares without ever producing it, fails here.
"""

from __future__ import annotations

import json
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.builders import (
    V98,
    disk,
    disks,
    engine,
    feed,
    hostview,
    lun,
    mapped,
    node,
    ontap,
    op,
    policy,
    snap,
    vol,
    workload,
)

import sanlens.diagnose
from sanlens.diagnose import engine as engine_mod
from sanlens.diagnose.base import Observation
from sanlens.diagnose.registry import IDS, MODULES, REGISTRY
from sanlens.diagnose.spec import DiagnosisSpec
from sanlens.model import AggregateInfo, DiskStats, FcPortStats, HostView, LifStats, OntapView

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "rules" / "sanlens.rules.yaml"
# evidence names carry their unit (or are counts named for what they count)
UNIT_SUFFIXES = ("_seconds", "_ratio", "_iops", "_fraction", "_io", "_depth", "_per_second", "_bytes")
COUNTS = (
    "processors",
    "disks",
    "volumes",
    "_operations",
    "luns_needed",
    "_paths",
    "_groups",
    "_luns",
    "_ports",
    "_aggregates",
)
Produced = dict[str, dict[str, set[str]]]  # diagnosis -> {"keys": returned, "values": returned with a value}


# ------------------------------------------------------------------ one module, one list
def test_one_list_of_modules_builds_the_registry_and_drives_the_engine() -> None:
    assert engine_mod.MODULES is MODULES
    assert [m.SPEC.id for m in MODULES] == list(REGISTRY) == list(IDS)
    for m in MODULES:
        assert m.__name__ == f"sanlens.diagnose.{m.SPEC.id}", "a diagnosis lives in diagnose/<id>.py"
        assert REGISTRY[m.SPEC.id] is m.SPEC and callable(m.evaluate)


def test_every_module_with_a_spec_is_listed() -> None:
    """A new diagnose/<id>.py with a SPEC and an evaluate that nobody listed would never run."""
    listed = {m.__name__ for m in MODULES}
    for info in pkgutil.iter_modules(sanlens.diagnose.__path__, "sanlens.diagnose."):
        mod = __import__(info.name, fromlist=["_"])
        if isinstance(getattr(mod, "SPEC", None), DiagnosisSpec):
            assert info.name in listed, f"{info.name} has a SPEC but is not in registry.MODULES"


@pytest.mark.parametrize("did", IDS)
def test_spec_declarations(did: str) -> None:
    spec = REGISTRY[did]
    assert spec.severity and spec.fix and spec.title and spec.summary and spec.subject
    assert spec.dashboard.uid.startswith("sanlens-") and spec.dashboard.variables
    assert spec.quoted(), f"{did}: an alert must quote some evidence"
    for t in spec.thresholds:
        assert t.min <= t.default <= t.max, (did, t.name)
    for lo, hi in spec.ordered:
        assert spec.threshold(lo).default <= spec.threshold(hi).default, (did, lo, hi)
    for ev in spec.evidence:
        assert ev.unit, (did, ev.name)
        assert ev.name.endswith(UNIT_SUFFIXES + COUNTS), f"{did}.{ev.name}: the unit belongs in the name"
        # an unquoted value's format serves only the report, which reads a multiple apart from a share
        assert bool(ev.quote) or ev.fmt in ("number", "multiple"), f"{did}.{ev.name}: a format but no quote"


def test_a_spec_refuses_duplicates_and_unknown_ordered_thresholds() -> None:
    from dataclasses import replace

    spec = REGISTRY["latency_slo"]
    with pytest.raises(ValueError, match="duplicate evidence"):
        replace(spec, evidence=spec.evidence + spec.evidence[:1])
    with pytest.raises(ValueError, match="unknown threshold"):
        replace(spec, ordered=(("data_warning_seconds", "nope"),))


def test_lun_and_volume_ceilings_share_their_thresholds() -> None:
    lun_t, vol_t = REGISTRY["lun_iops_ceiling"], REGISTRY["volume_iops_ceiling"]
    shared = [t.name for t in lun_t.thresholds]
    assert shared == [t.name for t in vol_t.thresholds][: len(shared)]
    assert lun_t.ordered == vol_t.ordered
    for name in ("warning_fraction", "critical_fraction"):
        assert lun_t.threshold(name) == vol_t.threshold(name)


# ------------------------------------------------------------------ evidence produced by evaluate
def fc_port(queue_full: float) -> FcPortStats:
    return FcPortStats("c1", "n1", "0a", speed_gbps=32.0, read_bytes_s=8e8, queue_full=queue_full)


def _oversubscribed(t: float) -> list[OntapView | HostView]:
    slow = mapped(read_iops=300.0, write_iops=0.0, read_latency_s=1.5, idle_ratio=0.7)
    return [ontap(t, fc_ports=(fc_port(120.0),), disks=disks("aggr1", [0.2] * 6)), hostview(t, slow)]


def _queue_limited(t: float) -> list[OntapView | HostView]:
    full = mapped(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0014, idle_ratio=0.0, queue_length=31.0)
    luns = (lun(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0003),)
    return [ontap(t, version=V98, luns=luns), hostview(t, full)]


def ip_lif(protocol: str, **kw: Any) -> LifStats:
    """A 10 GbE iSCSI or NVMe/TCP LIF on n1 port e0e: 1.2 GB/s read is 96 % of the link."""
    base = dict(speed_gbps=10.0, state="up", read_iops=300.0, read_latency_s=0.0004, read_bytes_s=1.2e9)
    return LifStats("c1", "n1", "s1", f"{protocol}_lif1", protocol, "e0e", **{**base, **kw})


def _oversubscribed_iscsi(t: float) -> list[OntapView | HostView]:
    slow = mapped(read_iops=300.0, write_iops=0.0, read_latency_s=1.5, idle_ratio=0.7)
    return [ontap(t, lifs=(ip_lif("iscsi"),), disks=disks("aggr1", [0.2] * 6)), hostview(t, slow)]


def _queue_limited_nvme(t: float) -> list[OntapView | HostView]:
    full = mapped(read_iops=30000.0, write_iops=0.0, read_latency_s=0.0014, idle_ratio=0.0, queue_length=31.0)
    ns = (lun(kind="namespace", read_iops=30000.0, write_iops=0.0, read_latency_s=0.0003),)
    lifs = (ip_lif("nvme_tcp", read_iops=30000.0, read_latency_s=0.0003, read_bytes_s=2.4e8),)
    return [ontap(t, version=V98, luns=ns, lifs=lifs), hostview(t, full)]


def _ceilings(t: float) -> list[OntapView | HostView]:
    hot = vol(read_iops=64400.0, write_iops=27601.0, total_iops=92001.0)
    luns = (lun(read_iops=30000.0, write_iops=0.0),)
    unmapped = disk(disk="9", read_iops=85000.0, write_iops=0.0)
    return [ontap(t, version=V98, luns=luns, volumes=(hot,)), hostview(t, unmapped)]


def _serial_node(t: float) -> list[OntapView | HostView]:
    hot = node(domain_busy={"kahuna": 0.92, "wafl_exempt": 3.6, "idle": 2.0})
    vols = (vol("v1", total_iops=9500.0), vol("v2", total_iops=500.0))
    return [ontap(t, nodes=(hot,), volumes=vols, qos_workloads=(workload(),))]


def _expansion(t: float) -> list[OntapView | HostView]:
    ds = disks("aggr1", [0.25] * 12, "rg0") + disks("aggr1", [0.75] * 6, "rg1", start=12)
    return [ontap(t, disks=ds, qos_workloads=(workload(),))]


def _rebuild(t: float) -> list[OntapView | HostView]:
    if t < 360:
        return [ontap(t, volumes=(vol(avg_latency_s=0.012),))]
    ops = (op(percent=10 + 0.05 * (t - 360)),)
    return [ontap(t, volumes=(vol(avg_latency_s=0.060),), background_ops=ops, qos_workloads=(workload(),))]


def _path_faults(t: float) -> list[OntapView | HostView]:
    """A disk on 1 of 2 paths, an offline LUN beside a thin one in a full volume, a port down,
    a broken disk and an aggregate degraded with no spare to rebuild onto."""
    one_path = mapped(observed_paths=1, configured_paths=2)
    luns = (lun(state="offline", thin=True), lun(lun="/vol/v1/lun1", state="online", thin=True))
    full = vol(size_bytes=100e9, available_bytes=2e9)
    down = FcPortStats("c1", "n1", "0d", speed_gbps=32.0, state="link_disconnected")
    broken = DiskStats("c1", "1.0.9", node="n1", container="broken", state="broken")
    aggr = AggregateInfo("c1", "aggr1", node="n1", state="online", degraded_raid_groups=1)
    return [
        ontap(t, luns=luns, volumes=(full,), fc_ports=(down,), disks=(broken,), aggregates=(aggr,)),
        hostview(t, one_path),
    ]


def _qos_and_indirect(t: float) -> list[OntapView | HostView]:
    """A volume held at its QoS ceiling (QoS Max and QoS Min time), and a LUN reached through the partner."""
    held = workload(
        iops=1990.0,
        latency_s=0.040,
        components={
            "network": 0.0005,
            "cluster": 0.0003,
            "data": 0.0007,
            "qos_max": 0.035,
            "qos_min": 0.0035,
        },
    )
    remote = lun(remote_iops=240.0)
    disk_ = mapped(optimized_paths=2, paths=4)
    return [ontap(t, luns=(remote,), qos_workloads=(held,), qos_policies=(policy(),)), hostview(t, disk_)]


SCENARIOS: dict[str, Callable[[float], Iterable[OntapView | HostView]]] = {
    "QoS ceiling and indirect I/O": _qos_and_indirect,
    "SAN path faults": _path_faults,
    "san oversubscription with FC queue-full": _oversubscribed,
    "host queue limited": _queue_limited,
    "san oversubscription on iSCSI": _oversubscribed_iscsi,
    "host queue limited on an NVMe/TCP namespace": _queue_limited_nvme,
    "LUN and volume ceilings, an unmapped disk": _ceilings,
    "serial CPU domain and one hot volume": _serial_node,
    "aggregate expansion": _expansion,
    "rebuild during OLTP": _rebuild,
}


def record(monkeypatch: pytest.MonkeyPatch) -> Produced:
    """Wrap every module's evaluate to note the evidence keys it returns (and which carried a value)."""
    produced: Produced = {did: {"keys": set(), "values": set()} for did in IDS}

    def wrap(did: str, fn: Callable[..., list[Observation]]) -> Callable[..., list[Observation]]:
        def evaluate(*args: Any) -> list[Observation]:
            out = fn(*args)
            for o in out:
                produced[did]["keys"].update(o.evidence)
                produced[did]["values"].update(k for k, v in o.evidence.items() if v is not None)
            return out

        return evaluate

    for m in MODULES:
        monkeypatch.setattr(m, "evaluate", wrap(m.SPEC.id, m.evaluate))
        parts = getattr(m, "PARTS", None)  # the engine judges such a module part by part
        if parts:
            monkeypatch.setattr(m, "PARTS", tuple((wrap(m.SPEC.id, fn), reads) for fn, reads in parts))
    return produced


def evidence_gaps(produced: Produced) -> list[str]:
    """Keys returned but not declared, and declared keys no scenario produced with a value."""
    gaps = []
    for did, seen in produced.items():
        declared = REGISTRY[did].evidence_names()
        gaps += [f"{did} returns undeclared evidence {k}" for k in sorted(seen["keys"] - declared)]
        gaps += [f"{did} never produces declared evidence {k}" for k in sorted(declared - seen["values"])]
    return gaps


@pytest.fixture(scope="module")
def produced() -> Iterator[Produced]:
    with pytest.MonkeyPatch.context() as mp:
        seen = record(mp)
        for views in SCENARIOS.values():
            e = engine(sustain_scale=0.0, backend_iops_capacity=10000.0)
            feed(e, 0, 480, 60, views)
        yield seen


def test_evaluate_returns_exactly_the_declared_evidence(produced: Produced) -> None:
    assert evidence_gaps(produced) == []


def test_evidence_check_notices_an_undeclared_and_an_unproduced_key(monkeypatch: pytest.MonkeyPatch) -> None:
    m = next(m for m in MODULES if m.SPEC.id == "volume_affinity_concentration")
    inner = m.evaluate

    def renamed(*args: Any) -> list[Observation]:
        out = inner(*args)
        return [
            Observation(o.id, o.key, o.labels, o.level, o.score, {"busiest_volume_ratio": 1.0}) for o in out
        ]

    monkeypatch.setattr(m, "evaluate", renamed)  # a key renamed in evaluate but not in its SPEC
    seen = record(monkeypatch)
    e = engine(sustain_scale=0.0)
    e.update(snap(ontap(0)))
    gaps = [g for g in evidence_gaps(seen) if g.startswith("volume_affinity_concentration")]
    assert "volume_affinity_concentration returns undeclared evidence busiest_volume_ratio" in gaps
    assert "volume_affinity_concentration never produces declared evidence volumes" in gaps


# ------------------------------------------------------------------ evidence quoted elsewhere
QUOTED = re.compile(r'"([a-z_]+)" \$labels\.subject "([a-z_0-9]+)" \| query')
SERIES_EVIDENCE = re.compile(r'diagnosis="([a-z_]+)".*evidence="([a-z_0-9]+)"')
PANEL_SELECTOR = re.compile(r"sanlens_diagnosis_evidence\{([^}]*)\}")
MATCHER = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def test_rules_quote_what_the_spec_quotes() -> None:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    seen: dict[str, set[tuple[str, ...]]] = {}
    for rule in (r for g in doc["groups"] for r in g["rules"] if "alert" in r):
        pairs = QUOTED.findall(rule["annotations"]["description"])
        for did, name in pairs:
            assert did in REGISTRY and name in REGISTRY[did].evidence_names(), (rule["alert"], did, name)
        if pairs:
            seen.setdefault(pairs[0][0], set()).add(tuple(name for _, name in pairs))
    assert seen == {did: {tuple(e.name for e in s.quoted())} for did, s in REGISTRY.items()}


def test_promtool_fixtures_feed_declared_evidence() -> None:
    """An evidence key renamed in a spec must be renamed in the promtool tests' input series too."""
    text = (ROOT / "rules" / "tests" / "diagnoses.test.yaml").read_text(encoding="utf-8")
    pairs = set(SERIES_EVIDENCE.findall(text))
    assert pairs
    for did, name in pairs:
        if did in REGISTRY:
            assert name in REGISTRY[did].evidence_names(), (did, name)


def test_dashboards_read_declared_evidence_and_their_variables() -> None:
    for did, spec in REGISTRY.items():
        board = ROOT / "dashboards" / f"{spec.dashboard.uid}.json"
        assert board.is_file(), f"{did}: no dashboard {spec.dashboard.uid}"
        doc = json.loads(board.read_text(encoding="utf-8"))
        names = {v["name"] for v in doc["templating"]["list"]}
        assert set(spec.dashboard.variables) <= names, (did, spec.dashboard.variables, names)
    pairs = set()
    for board in (ROOT / "dashboards").glob("*.json"):
        for sel in PANEL_SELECTOR.findall(json.dumps(json.loads(board.read_text(encoding="utf-8")))):
            m = dict(MATCHER.findall(sel.replace('\\"', '"')))
            if "diagnosis" in m and "evidence" in m:
                pairs.add((m["diagnosis"], m["evidence"]))
    assert pairs
    for did, name in pairs:
        assert name in REGISTRY[did].evidence_names(), (did, name)


@pytest.mark.parametrize("did", IDS)
def test_runbook_lists_the_declared_evidence(did: str) -> None:
    spec = REGISTRY[did]
    text = (ROOT / spec.runbook).read_text(encoding="utf-8")
    assert "\n## Evidence\n" in text, f"{spec.runbook} has no Evidence section"
    section = text.split("\n## Evidence\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_0-9]+)` \| ([^|]+) \|[^|]*\| ([^|]+) \|$", section, re.M)
    assert [r[0] for r in rows] == [e.name for e in spec.evidence]
    for (_, unit, quote), ev in zip(rows, spec.evidence, strict=True):
        assert (unit, quote) == (ev.unit, ev.quote or "\N{EN DASH}"), (did, ev.name)


def test_the_front_end_evidence_speaks_the_lun_protocol() -> None:
    """iSCSI: the LIFs' latency and their Ethernet port's load; NVMe/TCP: the NVMe queues, not the HBA."""
    findings: dict[str, dict[str, Any]] = {}
    for scenario in (_oversubscribed_iscsi, _queue_limited_nvme):
        e = engine(sustain_scale=0.0, backend_iops_capacity=10000.0)
        feed(e, 0, 480, 60, scenario)
        findings |= {f["id"]: f for f in e.findings() if f["state"] > 0}
    over = findings["san_oversubscription"]
    assert over["evidence"]["ethernet_port_utilization_ratio"] == pytest.approx(1.2e9 / (10 * 1.25e8))
    assert over["evidence"]["lif_latency_seconds"] == pytest.approx(0.0004)
    assert "fc_port_utilization_ratio" not in over["evidence"]
    assert (
        "iSCSI LIFs answer in 0.4 ms" in over["recommendation"] and "Ethernet ports" in over["recommendation"]
    )
    queue = findings["host_queue_limited"]
    assert queue["evidence"]["lif_latency_seconds"] == pytest.approx(0.0003)
    assert "nvme connect" in queue["recommendation"] and "FC target port" not in queue["recommendation"]
