"""iSCSI and NVMe-oF sites through Harvest's series: LIFs, their ports and namespaces, read back.

``tests/data/harvest/{iscsi,nvme-tcp,shared-port}.prom`` are what a real Harvest poller (built from
its source; Rest LIF, NetPort and Namespace, RestPerf ISCSI, NVMfLif and Namespace beside the FC
site's objects, and RestPerf NicCommon for ``shared-port``) exported for the simulator's scenarios
of those names. A real Prometheus scrapes each page; sanlens reads it back and must see the REST
collector's LIFs (protocol, port, speed, rates, latencies), namespaces and, where the page has
NicCommon's families, Ethernet ports' own bytes and speeds within 1 %, and the same findings. The
LIFs' port speeds come from ``net_port_status``: Harvest's NetPort template puts every label on its
metrics, and exports no ``net_port_labels``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT
from harness import Harness, harness  # noqa: F401  (fixture)
from harvest_views import close, diagnose, rest_view
from sanlens.config import Duration, OntapTarget
from sanlens.diagnose.base import Context
from sanlens.diagnose.front_end import ETHERNET, PORT_COUNTERS, front_end
from sanlens.diagnose.history import History
from sanlens.model import OntapView
from sanlens.ontap.harvest_source import HarvestSource

pytestmark = pytest.mark.e2e
PAGES = ROOT / "tests" / "data" / "harvest"
PROTOCOLS = {"iscsi": ("iscsi",), "nvme-tcp": ("nvme_tcp",), "shared-port": ("iscsi", "nvme_tcp")}


@pytest.mark.parametrize("scenario", list(PROTOCOLS))
def test_lifs_ports_and_namespaces_from_harvests_series(harness: Harness, scenario: str) -> None:  # noqa: F811
    page = PAGES / f"{scenario}.prom"
    meta = json.loads(Path(f"{page}.json").read_text())
    assert meta["simulator_scenario"] == scenario
    rest, cluster, namespaces = rest_view(scenario, meta["simulator_knobs"], with_inventory=True)
    for wanted in PROTOCOLS[scenario]:
        assert any(x.protocol == wanted for x in rest.lifs), f"{scenario} has {wanted} LIFs"
    if "nvme_tcp" in PROTOCOLS[scenario]:
        assert namespaces and any(x.kind == "namespace" for x in rest.luns)
    addr = harness.serve_page(page.read_bytes())
    prom = harness.start_prometheus({"harvest": [addr]})
    harness.wait_until(lambda: prom.query("node_labels"), 30, what="Prometheus to scrape the page")
    data = Duration(float(meta["schedules"]["RestPerf"]["data"].rstrip("s")))
    target = OntapTarget(name=cluster, url=prom.url, source="prometheus", poll_interval=Duration(60),
                         harvest_data_interval=data)  # fmt: skip
    src = HarvestSource(target)
    harvest = src.poll().view
    src.close()
    assert isinstance(harvest, OntapView)

    lifs = {(x.svm, x.lif): x for x in harvest.lifs}
    assert set(lifs) == {(x.svm, x.lif) for x in rest.lifs}
    for x in rest.lifs:
        h = lifs[(x.svm, x.lif)]
        assert (h.protocol, h.port, h.node) == (x.protocol, x.port, x.node), x.lif
        for f in ("speed_gbps", "read_iops", "write_iops", "read_latency_s", "write_latency_s", "read_bytes_s",
                  "write_bytes_s"):  # fmt: skip
            assert close(getattr(h, f), getattr(x, f)), (x.lif, f, getattr(h, f), getattr(x, f))
    spaces = {(x.svm, x.lun): x for x in harvest.luns if x.kind == "namespace"}
    assert set(spaces) == {(x.svm, x.lun) for x in rest.luns if x.kind == "namespace"}
    for x in rest.luns:
        if x.kind == "namespace":
            h = spaces[(x.svm, x.lun)]
            for f in ("read_iops", "write_iops", "read_latency_s", "write_latency_s", "read_bytes_s"):
                assert close(getattr(h, f), getattr(x, f)), (x.lun, f, getattr(h, f), getattr(x, f))
    if "NicCommon" in meta["collectors"]["RestPerf"]:  # the ports' own counters
        assert rest.eth_ports, f"{scenario} serves nic_common"
        ports = {(p.node, p.port): p for p in harvest.eth_ports}
        assert set(ports) == {(p.node, p.port) for p in rest.eth_ports}
        for p in rest.eth_ports:
            h = ports[(p.node, p.port)]
            for f in ("speed_gbps", "rx_bytes_s", "tx_bytes_s"):
                assert close(getattr(h, f), getattr(p, f)), (p.port, f, getattr(h, f), getattr(p, f))
        ctx = Context(0.0, {harvest.cluster: harvest}, {}, History())
        judged = [fe for x in harvest.luns if x.read_iops and (fe := front_end(ctx, x)).protocol in ETHERNET]
        assert judged, "busy LUNs behind iSCSI or NVMe/TCP"
        for fe in judged:  # by the Ethernet port's own counters, not the LIF sum
            assert fe.port_basis == PORT_COUNTERS and fe.port_utilization is not None, fe
    else:
        assert harvest.eth_ports == (), "no NicCommon on the page: no port counters"

    found = {
        name: diagnose(scenario, meta["simulator_knobs"], view)
        for name, view in (("rest", rest), ("harvest", harvest))
    }
    assert found["rest"], "the scenario must find something to compare"
    assert set(found["harvest"]) == set(found["rest"])
    for key, ev in found["rest"].items():
        for k, v in ev.items():
            assert close(found["harvest"][key].get(k), v), (key, k, found["harvest"][key].get(k), v)
