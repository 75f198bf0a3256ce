"""QoS from the series NetApp Harvest already exports: a real Prometheus, a real Harvest page.

``tests/data/harvest/qos-throttle.prom`` is what a real Harvest poller (RestPerf Workload and
WorkloadVolume, Rest QosPolicyFixed, QosPolicyAdaptive and QosWorkload beside its usual objects)
exported for the simulator's ``qos-throttle`` scenario. A real Prometheus scrapes it; sanlens reads
it back (``source: prometheus``) and must see the workloads and policies its own REST collection
sees on the same simulated cluster, and the same ``qos_throttle`` finding: the same subject and
policy, judged by the ceiling. Harvest carries no latency breakdown, so where the REST view finds
QoS Max dominating (critical) the Harvest view finds the ops at the ceiling (warning); with the
breakdown taken out of the REST view both agree to the word.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from harness import Harness, harness  # noqa: F401  (fixture)
from harvest_views import T0, close, rest_view
from sanlens.config import DiagnoseConfig, Duration, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.model import OntapView, Snapshot
from sanlens.ontap.harvest_series import queries
from sanlens.ontap.harvest_source import HarvestSource

pytestmark = pytest.mark.e2e

PAGE = ROOT / "tests" / "data" / "harvest" / "qos-throttle.prom"
SIDECAR = Path(str(PAGE) + ".json")
RATES = ("iops", "read_iops", "write_iops", "latency_s", "read_latency_s", "write_latency_s")
POLICY = (
    "kind",
    "shared",
    "max_iops",
    "max_bytes_s",
    "min_iops",
    "peak_iops_per_tb",
    "expected_iops_per_tb",
    "absolute_min_iops",
    "peak_allocation",
    "workloads",
)


def throttles(view: OntapView) -> dict[str, dict[str, Any]]:
    """The ``qos_throttle`` findings of an engine fed ``view`` four times a minute apart, by subject."""
    engine = Engine(DiagnoseConfig(sustain_scale=0.0))
    for i in range(4):
        t = T0 + 60.0 * i
        engine.update(Snapshot(view.cluster, "ontap", t, (), replace(view, timestamp=t)))
    return {
        json.dumps(f["subject"], sort_keys=True): f
        for f in engine.findings()
        if f["id"] == "qos_throttle" and f["state"] > 0
    }


def test_harvests_qos_series_give_the_rest_collections_workloads_policies_and_finding(
    harness: Harness,  # noqa: F811
) -> None:
    meta = json.loads(SIDECAR.read_text())
    assert meta["simulator_scenario"] == "qos-throttle"
    assert min(meta["perf_data_polls"][t] for t in ("qos", "qos_volume")) >= 3
    addr = harness.serve_page(PAGE.read_bytes())
    prom = harness.start_prometheus({"harvest": [addr]})
    harness.wait_until(lambda: prom.query("qos_ops"), 30, what="Prometheus to scrape the Harvest page")
    rest, cluster = rest_view(meta["simulator_scenario"], meta["simulator_knobs"], qos=True)
    src = HarvestSource(
        OntapTarget(
            name=cluster,
            url=prom.url,
            source="prometheus",
            poll_interval=Duration(60),
            harvest_data_interval=Duration(float(meta["schedules"]["RestPerf"]["data"].rstrip("s"))),
        )
    )
    harvest = src.poll().view
    src.close()
    assert isinstance(harvest, OntapView)
    assert src.queries == len(queries()), "one instant query per object kind: QoS is one more"

    workloads = {(w.svm, w.workload): w for w in harvest.qos_workloads}
    assert rest.qos_workloads and set(workloads) == {(w.svm, w.workload) for w in rest.qos_workloads}
    for w in rest.qos_workloads:
        h = workloads[(w.svm, w.workload)]
        assert (h.volume, h.lun, h.file, h.qtree, h.policy, h.wid) == (
            w.volume,
            w.lun,
            w.file,
            w.qtree,
            w.policy,
            w.wid,
        ), w.workload
        for f in (*RATES, "size_bytes", "used_bytes"):
            assert close(getattr(h, f), getattr(w, f)), (w.workload, f, getattr(h, f), getattr(w, f))
        assert not h.components, "Harvest's series carry no latency breakdown"
    assert any(w.components for w in rest.qos_workloads), "the REST collection reads the breakdown"

    policies = {(p.svm, p.name): p for p in harvest.qos_policies}
    assert rest.qos_policies and set(policies) == {(p.svm, p.name) for p in rest.qos_policies}
    for p in rest.qos_policies:
        hp = policies[(p.svm, p.name)]
        for f in POLICY:
            assert getattr(hp, f) == getattr(p, f), (p.name, f, getattr(hp, f), getattr(p, f))

    found = throttles(harvest)
    full = throttles(rest)
    bare = throttles(
        replace(rest, qos_workloads=tuple(replace(w, components={}) for w in rest.qos_workloads))
    )
    assert set(found) == set(full) == set(bare) and len(found) == 1, (found.keys(), full.keys())
    (subject,) = found
    assert json.loads(subject)["volume"] == "sql_data"
    fh, r, b = found[subject], full[subject], bare[subject]
    assert "QoS policy sql-cap" in fh["recommendation"] and "QoS policy sql-cap" in r["recommendation"]
    assert (r["state"], fh["state"]) == (2, 1), "without QoS Max the ceiling's signature alone: a warning"
    assert fh["state"] == b["state"] and fh["recommendation"] == b["recommendation"]
    for k, v in b["evidence"].items():
        if isinstance(v, float):
            assert close(fh["evidence"].get(k), v), (k, fh["evidence"].get(k), v)
