"""iSCSI and NVMe-oF sites through Harvest's series: LIFs, their ports and namespaces, read back.

The captured Harvest page (tests/data/harvest) is an FC site. For the simulator's ``iscsi`` and
``nvme-tcp`` scenarios a page is written here in the names, labels and units of Harvest's own
templates (RestPerf ``iscsi_lif.yaml``: object ``iscsi_lif``, ``iscsi_read_ops``, ``read_data``,
``avg_read_latency`` in µs; ``nvmf_lif.yaml``: object ``nvme_lif`` with ``port``;
``namespace.yaml``: ``path`` split into ``volume``; Rest ``lif.yaml``: ``lif_labels`` with
``port`` and ``status``; ``netport.yaml``: ``net_port_labels`` with ``op_speed`` in Mbit/s; Rest
``namespace.yaml``: ``namespace_labels`` with ``uuid``) from the REST collector's view of the same
cluster. A real Prometheus scrapes it; sanlens reads it back and must see the REST collector's
LIFs (protocol, port, speed, rates, latencies) and namespaces within 1 %, and the same findings.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import Harness, harness  # noqa: F401  (fixture)
from harvest_views import close, diagnose, rest_view
from sanlens.config import Duration, OntapTarget
from sanlens.join import LunDirectory
from sanlens.model import OntapView
from sanlens.ontap.harvest_source import HarvestSource

pytestmark = pytest.mark.e2e
DATA_S = 60.0  # the Harvest schedule the page stands for: one of its polls per sanlens interval


def _line(name: str, labels: dict[str, str], value: float | None) -> str:
    if value is None:
        return ""
    lv = ",".join(f'{k}="{v}"' for k, v in {"datacenter": "dc1", **labels}.items())
    return f"{name}{{{lv}}} {value!r}\n"


def harvest_page(view: OntapView, namespaces: list[dict[str, Any]]) -> bytes:
    """The cluster in Harvest's names and units (rates per second, µs per op, percent, Mbit/s)."""
    c = {"cluster": view.cluster}
    out: list[str] = []
    us = 1e6
    for x in view.luns:
        if x.kind == "namespace":
            k = {**c, "svm": x.svm, "volume": x.volume, "path": x.lun, "namespace": x.lun.rsplit("/", 1)[-1]}
            for fam, v in (("read_ops", x.read_iops), ("write_ops", x.write_iops), ("other_ops", x.other_iops),
                           ("read_data", x.read_bytes_s), ("write_data", x.write_bytes_s)):  # fmt: skip
                out.append(_line(f"namespace_{fam}", k, v))
            for fam, v in (("avg_read_latency", x.read_latency_s), ("avg_write_latency", x.write_latency_s)):
                out.append(_line(f"namespace_{fam}", k, None if v is None else v * us))
            continue
        parts = x.lun.split("/")  # /vol/<volume>[/<qtree>]/<lun>
        k = {**c, "svm": x.svm, "volume": x.volume, "lun": parts[-1]}
        if len(parts) == 5:
            k["qtree"] = parts[3]
        for fam, v in (("read_ops", x.read_iops), ("write_ops", x.write_iops), ("read_data", x.read_bytes_s),
                       ("write_data", x.write_bytes_s)):  # fmt: skip
            out.append(_line(f"lun_{fam}", k, v))
        for fam, v in (("avg_read_latency", x.read_latency_s), ("avg_write_latency", x.write_latency_s)):
            out.append(_line(f"lun_{fam}", k, None if v is None else v * us))
        serial_hex = x.serial.encode().hex()
        out.append(
            _line("lun_labels", {**k, "node": x.node, "serial_hex": serial_hex, "state": x.state}, 1.0)
        )
    for ns in namespaces:
        out.append(_line("namespace_labels", {**c, "svm": ns["svm"], "volume": ns["volume"], "path": ns["lun"],
                                              "uuid": ns["uuid"], "node": ns["node"], "state": ns["state"]}, 1.0))  # fmt: skip
    for v in view.volumes:
        k = {
            **c,
            "svm": v.svm,
            "volume": v.volume,
            "aggr": v.aggregate,
            "node": v.node,
            "style": v.style or "flexvol",
        }
        for fam, val in (("read_ops", v.read_iops), ("write_ops", v.write_iops), ("other_ops", v.other_iops),
                         ("total_ops", v.total_iops)):  # fmt: skip
            out.append(_line(f"volume_{fam}", k, val))
        for fam, val in (("read_latency", v.read_latency_s), ("write_latency", v.write_latency_s),
                         ("avg_latency", v.avg_latency_s)):  # fmt: skip
            out.append(_line(f"volume_{fam}", k, None if val is None else val * us))
    for n in view.nodes:
        k = {**c, "node": n.node}
        for fam, val in (
            ("cpu_busy", n.cpu_busy_ratio),
            ("avg_processor_busy", n.average_processor_busy_ratio),
        ):
            out.append(_line(f"node_{fam}", k, None if val is None else val * 100))
        for domain, val in n.domain_busy.items():
            out.append(_line("node_cpu_domain_busy", {**k, "metric": domain}, val * 100))
        version = f"NetApp Release {view.version}: Mon Jan 01 00:00:00 UTC 2024" if view.version else ""
        out.append(_line("node_labels", {**k, "model": n.model, "version": version}, 1.0))
    for p in view.fc_ports:
        k = {**c, "node": p.node, "port": p.port, "speed": f"{p.speed_gbps or 0:g}"}
        out.append(_line("fcp_read_data", k, p.read_bytes_s or 0.0))
        out.append(_line("fcp_write_data", k, p.write_bytes_s or 0.0))
        out.append(_line("fcp_queue_full", k, p.queue_full))
    for d in view.disks:
        if d.busy_ratio is not None and d.raid_group.count("/") == 3:
            _, aggr, plex, rg = d.raid_group.split("/")
            k = {**c, "node": d.node, "aggr": aggr, "plex": plex, "raid": rg, "disk": d.disk}
            out.append(_line("raid_disk_busy", k, d.busy_ratio * 100))
    ports: set[tuple[str, str, float]] = set()
    for x in view.lifs:
        ip = x.protocol in ("iscsi", "nvme_tcp")
        if x.protocol == "iscsi":
            k = {**c, "svm": x.svm, "lif": x.lif, "node": x.node}
            ops, data = "iscsi_lif_iscsi_", "iscsi_lif_"
        else:
            k = {**c, "svm": x.svm, "lif": x.lif, "node": x.node, "port": x.port}
            ops = data = "nvme_lif_"
        out.append(_line(f"{ops}read_ops", k, x.read_iops))
        out.append(_line(f"{ops}write_ops", k, x.write_iops))
        out.append(_line(f"{data}read_data", k, x.read_bytes_s))
        out.append(_line(f"{data}write_data", k, x.write_bytes_s))
        out.append(
            _line(f"{data}avg_read_latency", k, None if x.read_latency_s is None else x.read_latency_s * us)
        )
        out.append(
            _line(
                f"{data}avg_write_latency", k, None if x.write_latency_s is None else x.write_latency_s * us
            )
        )
        if ip:
            out.append(_line("lif_labels", {**c, "svm": x.svm, "lif": x.lif, "node": x.node, "port": x.port,
                                            "status": x.state, "address": "192.0.2.1"}, 1.0))  # fmt: skip
            if x.speed_gbps:
                ports.add((x.node, x.port, x.speed_gbps))
    for node, port, speed in sorted(ports):
        out.append(
            _line("net_port_labels", {**c, "node": node, "port": port, "op_speed": f"{speed * 1000:g}"}, 1.0)
        )
    return "".join(out).encode()


@pytest.mark.parametrize("scenario", ["iscsi", "nvme-tcp"])
def test_lifs_ports_and_namespaces_from_harvests_series(harness: Harness, scenario: str) -> None:  # noqa: F811
    rest, cluster, namespaces = rest_view(scenario, {}, with_inventory=True)
    wanted = "iscsi" if scenario == "iscsi" else "nvme_tcp"
    assert any(x.protocol == wanted for x in rest.lifs), f"{scenario} has {wanted} LIFs"
    if scenario == "nvme-tcp":
        assert namespaces and any(x.kind == "namespace" for x in rest.luns)
    addr = harness.serve_page(harvest_page(rest, namespaces))
    prom = harness.start_prometheus({"harvest": [addr]})
    harness.wait_until(lambda: prom.query("node_labels"), 30, what="Prometheus to scrape the page")
    target = OntapTarget(name=cluster, url=prom.url, source="prometheus", poll_interval=Duration(60),
                         harvest_data_interval=Duration(DATA_S))  # fmt: skip
    src = HarvestSource(target, LunDirectory())
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

    found = {name: diagnose(scenario, {}, view) for name, view in (("rest", rest), ("harvest", harvest))}
    assert found["rest"], "the scenario must find something to compare"
    assert set(found["harvest"]) == set(found["rest"])
    for key, ev in found["rest"].items():
        for k, v in ev.items():
            assert close(found["harvest"][key].get(k), v), (key, k, found["harvest"][key].get(k), v)
