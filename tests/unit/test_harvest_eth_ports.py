"""Ethernet ports' own counters read from NetApp Harvest's series (RestPerf NicCommon).

``tests/data/harvest/shared-port.prom`` is what a real Harvest poller exported for the simulator's
``shared-port`` scenario: on node 1, an iSCSI LIF at 700 MB/s on the VLAN ``e0e-100`` and an
NVMe/TCP LIF at 600 MB/s on ``e0e`` itself, one 10 GbE port, so ``e0e`` sends 1,300 MB/s, 1.04 of
its 1,250 MB/s. The page is answered here as Prometheus would answer sanlens's queries (each
family aggregated to the labels read), without a Prometheus; the e2e test reads it through one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.diagnose.base import Context
from sanlens.diagnose.front_end import LIF_SUM, PORT_COUNTERS, front_end
from sanlens.diagnose.history import History
from sanlens.model import OntapView
from sanlens.ontap.harvest_series import Samples, queries
from sanlens.ontap.harvest_views import harvest_view

PAGE = Path(__file__).parents[1] / "data" / "harvest" / "shared-port.prom"
LINK = 10 * 1.25e8  # 10 GbE: 1,250 MB/s
SENT = 700e6 + 600e6  # the iSCSI and NVMe/TCP LIFs' reads, both out of e0e


def answers(text: str) -> dict[str, Samples]:
    """Each query's answer to ``text``: its gauges by the query's labels, each info family by its own
    (``max by``: the cluster, datacenter and the labels not read fall away)."""
    page: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            page.setdefault(s.name, []).append((dict(s.labels), float(s.value)))

    def by(family: str, labels: tuple[str, ...]) -> list[tuple[dict[str, str], float]]:
        out: dict[tuple[tuple[str, str], ...], float] = {}
        for lv, v in page.get(family, ()):
            k = tuple((n, lv[n]) for n in labels if n in lv)
            out[k] = max(out.get(k, v), v)
        return [(dict(k), v) for k, v in out.items()]

    got: dict[str, Samples] = {}
    for q in queries():
        s: Samples = {f: by(f, q.by) for f in q.gauges if f in page}
        s.update({i.name: by(i.name, i.by) for i in q.info if i.name in page})
        got[q.name] = s
    return got


@pytest.fixture(scope="module")
def view() -> OntapView:
    meta = json.loads(Path(f"{PAGE}.json").read_text())
    assert meta["simulator_scenario"] == "shared-port"
    v, _rows = harvest_view("sanlens-sim", 0.0, 60.0, answers(PAGE.read_text()), 3.0)
    return v


def test_the_ports_own_bytes_and_link_speed_come_from_nic_families(view: OntapView) -> None:
    ports = {(p.node, p.port): p for p in view.eth_ports}
    assert set(ports) == {("sanlens-sim-01", "e0e"), ("sanlens-sim-02", "e0e")}, "physical ports only"
    e0e = ports["sanlens-sim-01", "e0e"]
    assert e0e.speed_gbps == 10.0, "nic_labels' speed is bit/s"
    assert e0e.tx_bytes_s == pytest.approx(SENT, rel=0.01)
    assert e0e.rx_bytes_s == pytest.approx(20e6, rel=0.01), "the NAS writes the LIFs do not carry"
    assert e0e.utilization == pytest.approx(SENT / LINK, rel=0.01)  # 1.04
    assert ports["sanlens-sim-02", "e0e"].tx_bytes_s == 0.0


def test_the_front_end_judges_the_shared_port_by_its_own_counters(view: OntapView) -> None:
    """Each LIF alone is at 0.56 and 0.48 of the link; the port's counters say 1.04, for both protocols."""
    ctx = Context(0.0, {view.cluster: view}, {}, History())
    seen = set()
    for lun in view.luns:
        if lun.node != "sanlens-sim-01" or not lun.read_iops:
            continue
        fe = front_end(ctx, lun)
        seen.add((lun.kind, fe.protocol))
        assert (fe.port, fe.port_basis) == ("e0e", PORT_COUNTERS), lun.lun
        assert fe.port_utilization == pytest.approx(SENT / LINK, rel=0.01), lun.lun
    assert seen == {("lun", "iscsi"), ("namespace", "nvme_tcp")}


def test_without_nic_families_the_front_end_falls_back_to_the_lif_sum() -> None:
    """A Harvest without NicCommon: no Ethernet port rows, the sum of the SAN LIFs over the port instead."""
    text = "".join(x for x in PAGE.read_text().splitlines(keepends=True) if not x.startswith("nic_"))
    v, _rows = harvest_view("sanlens-sim", 0.0, 60.0, answers(text), 3.0)
    assert v.eth_ports == ()
    ctx = Context(0.0, {v.cluster: v}, {}, History())
    got = {
        fe.protocol: (fe.port_basis, fe.port_utilization)
        for lun in v.luns
        if lun.node == "sanlens-sim-01" and lun.read_iops
        for fe in [front_end(ctx, lun)]
    }
    assert got["iscsi"][0] == got["nvme_tcp"][0] == LIF_SUM
    assert got["iscsi"][1] == got["nvme_tcp"][1] == pytest.approx(SENT / LINK, rel=0.01), (
        "both protocols' LIFs over e0e, the VLAN's included"
    )
