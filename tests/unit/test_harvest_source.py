"""HarvestSource against a mocked Prometheus query API (responses): paths, serials, queue-full, failures."""

from __future__ import annotations

from typing import Any

import pytest
import responses
from tests.joining import joined

from sanlens.config import DiagnoseConfig, Duration, OntapTarget
from sanlens.diagnose import disk_failed
from sanlens.diagnose.base import Context
from sanlens.diagnose.history import History
from sanlens.diagnose.registry import resolve
from sanlens.errors import SourceError
from sanlens.join.directory import LunDirectory
from sanlens.model import OntapView
from sanlens.ontap import inputs
from sanlens.ontap.harvest_source import HarvestSource
from sanlens.ontap.harvest_views import lun_path, serial_of

PROM = "https://prom.example"


def vector(*series: tuple[dict[str, str], float]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [1.7e9, str(v)]} for m, v in series],
        },
    }


def test_paths_and_serials_come_back_from_harvests_labels() -> None:
    assert lun_path({"volume": "v1", "lun": "lun0"}) == "/vol/v1/lun0"
    assert lun_path({"volume": "v1", "qtree": "q1", "lun": "lun0"}) == "/vol/v1/q1/lun0"
    assert serial_of("35385046684b6a6955373363") == "58PFhKjiU73c"
    assert serial_of("zz") == ""


@responses.activate
def test_one_query_per_object_kind_and_harvests_units_turned_into_the_view() -> None:
    lun = {"cluster": "c1", "svm": "s1", "volume": "v1", "lun": "lun0"}
    answers = {
        "lun": vector(
            ({**lun, "__name__": "lun_read_ops"}, 210.0),
            ({**lun, "__name__": "lun_avg_read_latency"}, 1000.0),
            ({**lun, "__name__": "lun_labels", "serial_hex": "35385046684b6a6955373363", "node": "n1"}, 1.0),
        ),
        "volume": vector(
            ({"__name__": "volume_total_ops", "svm": "s1", "volume": "v1", "aggr": "a1"}, 612.0)
        ),
        "node": vector(
            ({"__name__": "node_avg_processor_busy", "node": "n1"}, 6.25),
            ({"__name__": "node_cpu_domain_busy", "node": "n1", "metric": "kahuna"}, 90.0),
            ({"__name__": "node_labels", "node": "n1", "version": "NetApp Release 9.12.1: Tue Jan 10"}, 1.0),
        ),
        "fcp": vector(
            ({"__name__": "fcp_read_data", "node": "n1", "port": "0c", "speed": "16"}, 8e8),
            ({"__name__": "fcp_queue_full", "node": "n1", "port": "0c", "speed": "16"}, 1200.0),
        ),
        "raid": vector(
            (
                {"__name__": "raid_disk_busy", "disk": "1.0.1", "aggr": "a1", "plex": "plex0", "raid": "rg0"},
                25.0,
            )
        ),
        "front": vector(
            ({"__name__": "iscsi_lif_iscsi_read_ops", "svm": "s1", "lif": "iscsi1", "node": "n1"}, 5000.0),
            ({"__name__": "iscsi_lif_avg_read_latency", "svm": "s1", "lif": "iscsi1", "node": "n1"}, 800.0),
            ({"__name__": "iscsi_lif_read_data", "svm": "s1", "lif": "iscsi1", "node": "n1"}, 6.25e8),
            (
                {"__name__": "nvme_lif_read_ops", "svm": "s1", "lif": "nvme1", "node": "n1", "port": "e0e"},
                100.0,
            ),
            (
                {"__name__": "nvme_lif_read_ops", "svm": "s1", "lif": "nvmefc1", "node": "n1", "port": "0c"},
                50.0,
            ),
            (
                {
                    "__name__": "lif_labels",
                    "svm": "s1",
                    "lif": "iscsi1",
                    "node": "n1",
                    "port": "e0d",
                    "status": "up",
                },
                1.0,
            ),
            (
                {
                    "__name__": "lif_labels",
                    "svm": "s1",
                    "lif": "nvme1",
                    "node": "n1",
                    "port": "e0e",
                    "status": "up",
                },
                1.0,
            ),
            ({"__name__": "net_port_status", "node": "n1", "port": "e0d", "op_speed": "10000"}, 1.0),
            ({"__name__": "net_port_status", "node": "n1", "port": "e0c", "op_speed": "40000"}, 1.0),
        ),
        "ns": vector(
            ({"__name__": "namespace_read_ops", "svm": "s1", "volume": "v2", "path": "/vol/v2/ns1"}, 300.0),
            (
                {
                    "__name__": "namespace_avg_read_latency",
                    "svm": "s1",
                    "volume": "v2",
                    "path": "/vol/v2/ns1",
                },
                250.0,
            ),
            (
                {
                    "__name__": "namespace_labels",
                    "svm": "s1",
                    "volume": "v2",
                    "path": "/vol/v2/ns1",
                    "uuid": "0d7e5d6c-1a2b-4c3d-9e8f-001122334455",
                    "node": "n1",
                    "state": "online",
                },
                1.0,
            ),
        ),
    }

    answers["nic"] = vector(
        ({"__name__": "nic_tx_bytes", "node": "n1", "nic": "e0d"}, 1.0e9),
        ({"__name__": "nic_rx_bytes", "node": "n1", "nic": "e0d"}, 2.0e7),
        ({"__name__": "nic_labels", "node": "n1", "nic": "e0d", "speed": "25000000000"}, 1.0),
        ({"__name__": "nic_rx_bytes", "node": "n1", "nic": "e0c"}, 5.0e8),
    )
    answers["qos"] = vector(
        (
            {
                "__name__": "qos_ops",
                "svm": "s1",
                "workload": "v1-wid7",
                "volume": "v1",
                "policy_group": "cap",
                "wid": "7",
            },
            1000.0,
        ),
        (
            {
                "__name__": "qos_latency",
                "svm": "s1",
                "workload": "v1-wid7",
                "volume": "v1",
                "policy_group": "cap",
            },
            2500.0,
        ),
        (
            {
                "__name__": "qos_policy_fixed_labels",
                "svm": "s1",
                "name": "cap",
                "max_throughput_iops": "1000",
            },
            1.0,
        ),
    )

    def answer(req: Any) -> tuple[int, dict[str, str], str]:
        import json
        import urllib.parse

        q = urllib.parse.parse_qs(urllib.parse.urlparse(req.url).query)["query"][0]
        assert 'cluster="c1"' in q and 'datacenter="dc1"' in q
        marker = {"lun": "lun_read_ops", "volume": "volume_read_ops", "node": "node_cpu_busy",
                  "fcp": "fcp_read_data", "raid": "raid_disk_busy", "front": "iscsi_lif_", "ns": "namespace_read_ops",
                  "qos": "qos_ops", "nic": "nic_rx_bytes"}  # fmt: skip
        kind = next(k for k, m in marker.items() if f'"{m}' in q or f"|{m}" in q)
        return 200, {}, json.dumps(answers[kind])

    responses.add_callback(responses.GET, f"{PROM}/api/v1/query", callback=answer)
    target = OntapTarget(
        name="c1",
        url=PROM,
        source="prometheus",
        selector='datacenter="dc1"',
        harvest_data_interval=Duration(20),
    )
    directory = LunDirectory()
    src = joined(HarvestSource(target), directory)
    snap = src.poll()
    view = snap.view
    assert src.queries == 9 and len(responses.calls) == 9  # eight object kinds and QoS
    x, nsp = view.luns
    assert (nsp.kind, nsp.lun, nsp.volume, nsp.node) == ("namespace", "/vol/v2/ns1", "v2", "n1")
    assert nsp.read_iops == 300.0 and nsp.read_latency_s == pytest.approx(250e-6)
    found = directory.by_wwid("uuid.0d7e5d6c-1a2b-4c3d-9e8f-001122334455")
    assert found is not None and found.kind == "namespace", "the namespace joins host namespaces by its UUID"
    lifs = {lif.lif: lif for lif in view.lifs}
    assert (lifs["iscsi1"].protocol, lifs["iscsi1"].port, lifs["iscsi1"].speed_gbps) == ("iscsi", "e0d", 10.0)
    assert lifs["iscsi1"].read_latency_s == pytest.approx(800e-6) and lifs["iscsi1"].read_bytes_s == 6.25e8
    assert lifs["nvme1"].protocol == "nvme_tcp" and lifs["nvmefc1"].protocol == "nvme_fc"
    assert lifs["nvmefc1"].speed_gbps == 16.0, "an NVMe/FC LIF's speed is its FC port's"
    assert (x.lun, x.serial, x.node) == ("/vol/v1/lun0", "58PFhKjiU73c", "n1")
    assert x.read_iops == 210.0 and x.read_latency_s == pytest.approx(1e-3)  # microseconds per op
    assert view.version is not None and (view.version.major, view.version.minor) == (12, 1)
    (w,) = view.qos_workloads
    assert (w.workload, w.volume, w.policy, w.iops) == ("v1-wid7", "v1", "cap", 1000.0)
    assert w.latency_s == pytest.approx(2.5e-3), "qos_latency is microseconds per op"
    assert [(q.name, q.max_iops) for q in view.qos_policies] == [("cap", 1000.0)]
    (n,) = view.nodes
    assert n.average_processor_busy_ratio == pytest.approx(0.0625) and n.domain_busy == {
        "kahuna": pytest.approx(0.9)
    }
    (p,) = view.fc_ports
    # a count of one 20 s Harvest poll, three of them in our 60 s interval: 60 per second either way
    assert (
        p.queue_full == pytest.approx(3600.0) and p.speed_gbps == 16.0 and p.utilization == pytest.approx(0.5)
    )
    e0c, e0d = view.eth_ports
    assert (e0d.port, e0d.speed_gbps, e0d.tx_bytes_s, e0d.rx_bytes_s) == ("e0d", 25.0, 1.0e9, 2.0e7), (
        "nic_labels' speed is bit/s, and wins over net_port_status's"
    )
    assert (e0c.port, e0c.speed_gbps, e0c.tx_bytes_s) == ("e0c", 40.0, None), (
        "no nic_labels: the speed net_port_status gives"
    )
    assert e0d.utilization == pytest.approx(1.0e9 / (25 * 1.25e8))
    (d,) = view.disks
    assert (d.aggregate, d.raid_group, d.busy_ratio) == ("a1", "/a1/plex0/rg0", pytest.approx(0.25))
    assert directory.by_serial("58PFhKjiU73c") is not None, "the LUN joins host disks by its serial"
    # /metrics: the cluster's identity only; the series themselves are already in Prometheus
    assert [m.name for m in snap.metrics] == ["sanlens_ontap_cluster_info"]
    assert snap.metrics[0].samples[0][0][snap.metrics[0].label_names.index("collection")] == "harvest"
    assert snap.inputs and "fc_port_down" in snap.inputs["starved"]
    assert inputs.NO_FRONT_END not in snap.inputs["starved"].get("san_oversubscription", []), (
        "FC ports are there"
    )


@responses.activate
def test_a_query_the_api_refuses_fails_the_poll_with_its_message() -> None:
    responses.get(f"{PROM}/api/v1/query", json={"status": "error", "error": "parse error at char 3"})
    src = HarvestSource(OntapTarget(name="c1", url=PROM, source="prometheus"))
    with pytest.raises(SourceError, match="parse error"):
        src.poll()


def test_each_kind_is_one_query_aggregated_to_the_labels_read() -> None:
    """The API answers only the labels sanlens reads: Harvest's info families carry up to 29."""
    from sanlens.ontap.harvest_series import queries

    lun = next(x for x in queries() if x.name == "lun")
    q = lun.text('cluster="c1"')
    assert q.startswith('max by (__name__, svm, volume, lun) ({__name__=~"lun_read_ops|')
    assert "lun_labels|" not in q and '|lun_labels"' not in q, (
        "the info family is read apart, by its own labels"
    )
    assert (
        'label_replace(max by (svm, volume, lun, qtree, node, serial_hex, state) (lun_labels{cluster="c1"})'
        in q
    )
    assert q.count('cluster="c1"') == 2 and [i.name for i in lun.info] == ["lun_labels"]


@responses.activate
def test_an_older_harvest_without_serial_hex_is_named_not_silently_unjoined() -> None:
    lun = {"svm": "s1", "volume": "v1", "lun": "l1"}
    with_serial = vector(
        ({"__name__": "lun_read_ops", **lun}, 10.0),
        (
            {
                "__name__": "lun_labels",
                **lun,
                "node": "n1",
                "state": "online",
                "serial_hex": "35385046684b6a6955373363",
            },
            1.0,
        ),
    )
    without = vector(
        ({"__name__": "lun_read_ops", **lun}, 10.0),
        ({"__name__": "lun_labels", **lun, "node": "n1", "state": "online"}, 1.0),
    )
    for page, named in ((with_serial, False), (without, True)):
        responses.reset()

        def answer(req: Any, page: dict[str, Any] = page) -> tuple[int, dict[str, str], str]:
            import json

            return 200, {}, json.dumps(page if "lun_read_ops" in req.url else vector())

        responses.add_callback(responses.GET, f"{PROM}/api/v1/query", callback=answer)
        directory = LunDirectory()
        src = joined(HarvestSource(OntapTarget(name="c1", url=PROM, source="prometheus")), directory)
        status = src.poll().inputs
        src.close()
        assert status is not None
        assert ("serial_hex" in status["labels_missing"].get("lun_labels", [])) is named
        why = status["starved"].get("san_oversubscription", [])
        assert any("serial_hex" in w for w in why) is named
        assert (directory.by_serial("58PFhKjiU73c") is not None) is not named
        # a page with no FC port or LIF performance (Harvest on ASA r2: KeyPerf alone) names that too
        assert inputs.NO_FRONT_END in why


@responses.activate
def test_a_disk_harvest_marks_failed_is_a_broken_disk_and_disk_failed_judges_it() -> None:
    """disk_labels as a real Harvest exported them for the simulator's path-faults scenario: the
    broken disk carries container_type "broken" and failed "true" (and no raid_disk_busy)."""

    labels = {"node": "sanlens-sim-01", "pool": "pool0", "shared": "false", "type": "SSD"}
    page = vector(
        ({"__name__": "raid_disk_busy", "node": "sanlens-sim-01", "aggr": "a1", "plex": "plex0",
          "raid": "rg0", "disk": "1.0.11"}, 25.0),
        ({"__name__": "disk_labels", **labels, "disk": "1.0.11", "container_type": "aggregate",
          "failed": "false"}, 1.0),
        ({"__name__": "disk_labels", **labels, "disk": "1.0.12", "container_type": "broken",
          "failed": "true", "outage": "Disk failed."}, 1.0),
        ({"__name__": "disk_labels", **labels, "disk": "1.0.13", "container_type": "spare",
          "failed": "false"}, 1.0),
    )  # fmt: skip

    def answer(req: Any) -> tuple[int, dict[str, str], str]:
        import json

        return 200, {}, json.dumps(page if "raid_disk_busy" in req.url else vector())

    responses.add_callback(responses.GET, f"{PROM}/api/v1/query", callback=answer)
    src = HarvestSource(OntapTarget(name="c1", url=PROM, source="prometheus"))
    view = src.poll().view
    src.close()
    assert isinstance(view, OntapView)
    disks = {d.disk: d for d in view.disks}
    assert set(disks) == {"1.0.11", "1.0.12", "1.0.13"}
    assert (disks["1.0.11"].raid_group, disks["1.0.11"].busy_ratio) == ("/a1/plex0/rg0", pytest.approx(0.25))
    assert (disks["1.0.12"].state, disks["1.0.12"].container, disks["1.0.12"].busy_ratio) == (
        "broken",
        "broken",
        None,
    )
    assert disks["1.0.13"].container == "spare" and disks["1.0.13"].aggregate == ""
    ctx = Context(0.0, {"c1": view}, {}, History(DiagnoseConfig().history))
    levels = {o.key: o.level for o in disk_failed.evaluate(ctx, resolve(DiagnoseConfig()))}
    assert levels == {"c1/1.0.11": 0, "c1/1.0.12": 1, "c1/1.0.13": 0}
