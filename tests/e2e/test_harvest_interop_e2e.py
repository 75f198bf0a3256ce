"""Diagnose from the series NetApp Harvest already exports: a real Prometheus, a real Harvest page.

``tests/data/harvest/san-oversubscription.prom`` is what a real Harvest poller (built from its
source, collectors Rest, RestPerf and KeyPerf) exported for the simulator's
``san-oversubscription`` scenario, whose rates are steady. A real Prometheus scrapes that page;
sanlens reads it back through the query API (``source: prometheus``) and must see what its own
REST collector sees on the same simulated cluster: the same LUNs, volumes, nodes and FC ports,
rates and latencies within 1 %, and the same findings on the same subjects.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from harness import Harness, harness  # noqa: F401  (fixture)
from harvest_views import close, diagnose, rest_view
from sanlens.config import Duration, OntapTarget
from sanlens.model import OntapView
from sanlens.ontap.harvest_series import queries
from sanlens.ontap.harvest_source import HarvestSource

pytestmark = pytest.mark.e2e

PAGE = ROOT / "tests" / "data" / "harvest" / "san-oversubscription.prom"
SIDECAR = Path(str(PAGE) + ".json")


def test_harvests_series_through_prometheus_give_the_rest_collectors_view(harness: Harness) -> None:  # noqa: F811
    meta = json.loads(SIDECAR.read_text())
    addr = harness.serve_page(PAGE.read_bytes())
    prom = harness.start_prometheus({"harvest": [addr]})
    harness.wait_until(lambda: prom.query("lun_read_ops"), 30, what="Prometheus to scrape the Harvest page")
    scenario, knobs = meta["simulator_scenario"], meta["simulator_knobs"]
    rest, cluster = rest_view(scenario, knobs)
    assert cluster == meta["simulator_state"]["cluster_name"]
    data = Duration(float(meta["schedules"]["RestPerf"]["data"].rstrip("s")))
    target = OntapTarget(
        name=cluster,
        url=prom.url,
        source="prometheus",
        poll_interval=Duration(60),
        harvest_data_interval=data,
    )
    src = HarvestSource(target)
    harvest = src.poll().view
    src.close()
    assert isinstance(harvest, OntapView)
    assert src.queries == len(queries()), "one instant query per object kind, batched by cluster"

    luns = {(x.svm, x.lun): x for x in harvest.luns}
    assert set(luns) == {(x.svm, x.lun) for x in rest.luns}
    for x in rest.luns:
        h = luns[(x.svm, x.lun)]
        assert h.serial == x.serial, "serial_hex decodes to the LUN's serial"
        for f in (
            "read_iops",
            "write_iops",
            "read_latency_s",
            "write_latency_s",
            "read_bytes_s",
            "write_bytes_s",
        ):
            assert close(getattr(h, f), getattr(x, f)), (x.lun, f, getattr(h, f), getattr(x, f))
    vols = {(v.svm, v.volume): v for v in harvest.volumes}
    for v in rest.volumes:
        h = vols[(v.svm, v.volume)]
        for f in ("read_iops", "write_iops", "total_iops", "read_latency_s", "write_latency_s"):
            assert close(getattr(h, f), getattr(v, f)), (v.volume, f, getattr(h, f), getattr(v, f))
    nodes = {n.node: n for n in harvest.nodes}
    for n in rest.nodes:
        h = nodes[n.node]
        assert close(h.average_processor_busy_ratio, n.average_processor_busy_ratio), n.node
        assert close(h.cpu_busy_ratio, n.cpu_busy_ratio), n.node
    ports = {(p.node, p.port): p for p in harvest.fc_ports}
    for p in rest.fc_ports:
        if p.read_bytes_s:
            h = ports[(p.node, p.port)]
            assert close(h.read_bytes_s, p.read_bytes_s) and close(h.utilization, p.utilization), p.port
    busy = {d.disk: d for d in harvest.disks if d.busy_ratio is not None}
    assert {d.disk for d in rest.disks if d.busy_ratio is not None} == set(busy)
    # every disk the REST view holds, in the same container and state (disk_labels); Harvest lists
    # the spares too, which have no counter row
    every = {d.disk: d for d in harvest.disks}
    assert {d.disk for d in rest.disks} <= set(every)
    assert {every[k].container for k in set(every) - {d.disk for d in rest.disks}} <= {"spare"}
    for d in rest.disks:
        h = every[d.disk]
        assert (h.container, h.state == "broken") == (d.container, d.state == "broken"), d.disk
    for d in rest.disks:
        if d.busy_ratio is not None:
            h = busy[d.disk]
            assert (h.aggregate, h.raid_group) == (d.aggregate, d.raid_group)
            assert close(h.busy_ratio, d.busy_ratio), (d.disk, h.busy_ratio, d.busy_ratio)
    assert harvest.version is not None and (harvest.version.major, harvest.version.minor) == (
        rest.version.major,
        rest.version.minor,
    )

    # the same findings on the same subjects, from either view beside the same host views
    found = {}
    for name, view in (("rest", rest), ("harvest", harvest)):
        found[name] = diagnose(scenario, knobs, view)
    assert found["rest"], "the scenario must find something to compare"
    assert set(found["harvest"]) == set(found["rest"])
    for key, ev in found["rest"].items():
        for k, v in ev.items():
            assert close(found["harvest"][key].get(k), v), (key, k)
