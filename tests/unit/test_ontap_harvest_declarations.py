"""The catalogue's Harvest declarations against real Harvest pages, and what is derived from them.

Each counter table names, per counter that feeds a view field, the family NetApp Harvest exports it
as; the Harvest reader's queries, rows and starvation lists all come from those declarations and
the diagnoses' ``Reads``. The names and labels are checked against the pages a real Harvest poller
exported (tests/data/harvest, see its README), not against our own expectations.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens import model
from sanlens.ontap import inputs
from sanlens.ontap.catalogue import catalogue, parse_table
from sanlens.ontap.harvest_series import queries
from sanlens.ontap.harvest_views import harvest_rows

ROOT = Path(__file__).parents[2]
PAGES = sorted((ROOT / "tests" / "data" / "harvest").glob("*.prom"))
VIEW_ROWS = {
    "luns": model.LunStats,
    "volumes": model.VolumeStats,
    "nodes": model.NodeStats,
    "disks": model.DiskStats,
    "fc_ports": model.FcPortStats,
    "lifs": model.LifStats,
    "qos_workloads": model.QosWorkload,
    "eth_ports": model.EthPortStats,
}


def _page_labels() -> dict[str, set[str]]:
    """family -> the labels its series carry, over every captured page."""
    out: dict[str, set[str]] = {}
    for page in PAGES:
        for fam in text_string_to_metric_families(page.read_text(encoding="utf-8")):
            for s in fam.samples:
                out.setdefault(s.name, set()).update(s.labels)
    return out


def test_every_view_field_a_table_feeds_is_a_field_of_its_rows() -> None:
    for name, t in catalogue().items():
        fed = {c.view for c in t.counters.values() if c.view}
        if not fed:
            continue
        assert t.view in VIEW_ROWS, (name, t.view)
        held = {f.name for f in dataclasses.fields(VIEW_ROWS[t.view])}
        assert fed <= held, (name, fed - held)


def test_each_harvest_family_and_label_read_is_on_a_real_harvest_page() -> None:
    assert len(PAGES) == 5
    page = _page_labels()
    for q in queries():
        for t in q.tables:
            h = t.harvest
            assert h is not None
            for c in t.harvest_counters:
                assert c.harvest in page, (t.table, c.name, c.harvest)
                assert set(h.key) <= page[c.harvest], (c.harvest, set(h.key) - page[c.harvest])
            for i in h.info:
                assert i.name in page, i.name
                assert set(i.by) <= page[i.name], (i.name, set(i.by) - page[i.name])
        for f in q.gauges:
            assert page[f] & set(q.by), f


def test_harvest_units_scale_as_the_view_wants() -> None:
    """Harvest keeps ONTAP's units: averages in microseconds per op, busy in percent, rates per second."""
    cat = catalogue()
    factors = {c.harvest: c.harvest_factor for t in cat.values() for c in t.harvest_counters}
    assert factors["lun_avg_read_latency"] == pytest.approx(1e-6)
    assert factors["volume_avg_latency"] == pytest.approx(1e-6)
    assert factors["iscsi_lif_avg_write_latency"] == pytest.approx(1e-6)
    assert factors["node_cpu_busy"] == pytest.approx(0.01)
    assert factors["node_cpu_domain_busy"] == pytest.approx(0.01)
    assert factors["raid_disk_busy"] == pytest.approx(0.01)
    assert factors["lun_read_ops"] == 1.0 and factors["fcp_read_data"] == 1.0


def test_one_generic_builder_reads_a_table_from_its_declarations() -> None:
    """Sums, array elements, deltas per Harvest poll and averages over no operations."""
    t = catalogue()["system:node"]
    node = {"node": "n1"}
    s = {
        "node_cpu_busy": [(node, 50.0)],
        "node_cpu_domain_busy": [({**node, "metric": "kahuna"}, 90.0), ({**node, "metric": "idle"}, 5.0)],
        "node_labels": [({**node, "model": "FAS", "version": "9.12.1"}, 1.0)],
    }
    (r,) = harvest_rows(t, s)
    assert r.fields == {"cpu_busy_ratio": 0.5, "domain_busy": {"kahuna": 0.9, "idle": 0.05}}
    assert r.info is not None and r.info["model"] == "FAS"
    fcp = {"node": "n1", "port": "0c", "speed": "16"}
    (p,) = harvest_rows(
        catalogue()["fcp"], {"fcp_read_data": [(fcp, 8e8)], "fcp_queue_full": [(fcp, 10.0)]}, 3.0
    )
    assert p.fields == {"read_bytes_s": 8e8, "queue_full": 30.0} and p.series["speed"] == "16"
    lun = {"svm": "s1", "volume": "v1", "lun": "l1"}
    (x,) = harvest_rows(
        catalogue()["lun"],
        {
            "lun_read_ops": [(lun, 0.0)],
            "lun_avg_read_latency": [(lun, 0.0)],
            "lun_avg_write_latency": [(lun, 9.0)],
        },
    )
    assert x.fields["read_latency_s"] is None, "an average over no reads is no latency, not 0"
    assert x.fields["write_latency_s"] == pytest.approx(9e-6), "no write_ops series: kept"
    assert x.info is None


def test_the_front_end_queries_are_one_and_a_table_with_a_family_needs_a_harvest_block() -> None:
    names = [q.name for q in queries()]
    assert len(names) == 9 and len(set(names)) == 9
    lif = next(q for q in queries() if q.name == "lif")
    assert [t.table for t in lif.tables] == ["iscsi_lif", "nvmf_lif"]
    assert [i.name for i in lif.info] == ["lif_labels", "net_port_status"]
    doc = {"table": "x", "counters": {"a": {"type": "rate", "view": "read_iops", "harvest": "x_a"}}}
    with pytest.raises(Exception, match="harvest block"):
        parse_table(doc, "x.yaml")
    doc["harvest"] = {"by": ["svm"], "rows": ["x_b"]}
    with pytest.raises(Exception, match="not families"):
        parse_table(doc, "x.yaml")


def test_the_harvest_starvation_lists_come_from_the_specs_reads() -> None:
    """The front end starves the diagnosis that reads all of it; a LUN label the host join needs
    starves the diagnoses that join host disks to LUNs. Pinned: /diagnoses/inputs holds them."""
    assert inputs.GROUP_FEEDS == {"front_end": ("san_oversubscription",)}
    assert set(inputs.LABEL_FEEDS) == {("lun_labels", "serial_hex")}
    assert set(inputs.LABEL_FEEDS["lun_labels", "serial_hex"]) == {
        "latency_slo",
        "san_oversubscription",
        "host_queue_limited",
        "lun_iops_ceiling",
    }
    assert set(inputs.GROUP_ABSENT) == set(inputs.GROUP_FEEDS)
    assert set(inputs.LABEL_ABSENT) == set(inputs.LABEL_FEEDS)
    doc = inputs.harvest_status({"lun_labels": ["serial_hex"]}, ["front_end"])
    assert doc["starved"]["san_oversubscription"] == sorted(
        [inputs.LABEL_ABSENT["lun_labels", "serial_hex"], inputs.NO_FRONT_END]
    )
    assert set(doc["starved"]) == {*inputs.HARVEST_LACK, *inputs.LABEL_FEEDS["lun_labels", "serial_hex"]}
    assert inputs.harvest_status()["starved"] == {
        did: [why] for did, why in sorted(inputs.HARVEST_LACK.items())
    }


# the view rows whose leading fields name the object; everything after them goes by keyword
IDENTITY = {
    "LunStats": 0,
    "VolumeStats": 0,
    "NodeStats": 0,
    "DiskStats": 0,
    "FcPortStats": 0,
    "LifStats": 0,
    "OntapView": 0,
    "AggregateInfo": 0,
    "BackgroundOp": 3,
    "TableDef": 0,
    "LabelDef": 0,
}


@pytest.mark.parametrize(
    "module", ["views.py", "harvest_views.py", "harvest_source.py", "harvest_series.py", "catalogue.py"]
)
def test_view_rows_are_built_by_keyword(module: str) -> None:
    tree = ast.parse((ROOT / "exporter" / "sanlens" / "ontap" / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IDENTITY:
            assert len(node.args) <= IDENTITY[node.func.id], (module, node.func.id, node.lineno)
