"""The captured NetApp Harvest /metrics page (tests/data/harvest): names, labels and units it holds.

The page is the real output of a Harvest poller (Rest, RestPerf and KeyPerf collectors) run
against ``sanlens simulate --scenario san-oversubscription`` (``fa_ports`` 2, ONTAP 9.12.1); see
tests/data/harvest/README.md. Each value checked here is compared with arithmetic from the
scenario's documented rates, not with anything read back from the page.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).parents[1] / "data" / "harvest"
PAGE = HERE / "san-oversubscription.prom"
SIDECAR = HERE / "san-oversubscription.prom.json"

Sample = tuple[dict[str, str], float]

LUN_PERF = {"datacenter", "cluster", "svm", "volume", "lun"}
VOLUME_PERF = {"datacenter", "cluster", "svm", "volume", "aggr", "node", "style"}
NODE = {"datacenter", "cluster", "node"}
FCP = {"datacenter", "cluster", "node", "port", "speed"}
FCP_LIF = {"datacenter", "cluster", "node", "svm", "lif", "port"}

# family -> its exact label set on the page
LABELS = {
    **{
        f: LUN_PERF
        for f in (
            "lun_read_ops",
            "lun_write_ops",
            "lun_read_data",
            "lun_write_data",
            "lun_avg_read_latency",
            "lun_avg_write_latency",
        )
    },
    "lun_labels": LUN_PERF | {"node", "qtree", "serial_hex", "state"},
    **{
        f: VOLUME_PERF
        for f in (
            "volume_read_ops",
            "volume_write_ops",
            "volume_other_ops",
            "volume_total_ops",
            "volume_read_latency",
            "volume_write_latency",
            "volume_avg_latency",
            "volume_read_data",
            "volume_write_data",
        )
    },
    "node_cpu_busy": NODE,
    "node_avg_processor_busy": NODE,
    "node_cpu_domain_busy": NODE | {"metric"},
    **{f: FCP for f in ("fcp_read_data", "fcp_write_data", "fcp_util_percent", "fcp_queue_full")},
    **{f: FCP_LIF for f in ("fcp_lif_read_data", "fcp_lif_write_data", "fcp_lif_avg_read_latency")},
    "cluster_new_status": {"datacenter", "cluster", "addr", "poller"},
}

# sql01_data (scenario san-oversubscription, fa_ports 2): 2 LUNs x 300 IOPS, 70 % reads of 8 KiB, 1 ms in ONTAP
LUN_OPS, READ_SHARE, IO_BYTES, ONTAP_LAT_US = 300.0, 0.7, 8192.0, 1000.0


@pytest.fixture(scope="module")
def page() -> dict[str, list[Sample]]:
    """Family name -> samples. Harvest interleaves families and writes no # TYPE, so merge by name."""
    fams: dict[str, list[Sample]] = defaultdict(list)
    for fam in text_string_to_metric_families(PAGE.read_text()):
        for s in fam.samples:
            fams[s.name].append((dict(s.labels), float(s.value)))
    return dict(fams)


def one(page: dict[str, list[Sample]], family: str, **match: str) -> float:
    hits = [v for labels, v in page[family] if all(labels.get(k) == w for k, w in match.items())]
    assert len(hits) == 1, (family, match, hits)
    return hits[0]


def near(got: float, want: float, rel: float = 0.01) -> bool:
    return abs(got - want) <= rel * abs(want)


def test_page_size_and_sidecar() -> None:
    assert PAGE.stat().st_size < 1_600_000
    side = json.loads(SIDECAR.read_text())
    assert side["simulator_scenario"] == "san-oversubscription"
    assert side["ontap_version"] == "9.12.1"
    assert len(side["harvest_commit"]) == 40
    assert all(n >= 3 for n in side["perf_data_polls"].values())
    assert side["simulator_state"]["scenario"] == "san-oversubscription"


@pytest.mark.parametrize("family", sorted(LABELS))
def test_family_present_with_exact_labels(page: dict[str, list[Sample]], family: str) -> None:
    assert page.get(family), f"{family} not on the page"
    for labels, _ in page[family]:
        assert set(labels) == LABELS[family], (family, sorted(labels))


def test_families_harvest_did_not_export(page: dict[str, list[Sample]]) -> None:
    # no cluster_labels (Rest Status gives cluster_new_status only), no info families for FC ports or LIFs
    for family in ("cluster_labels", "fcp_labels", "fcp_lif_labels"):
        assert family not in page


def test_counts(page: dict[str, list[Sample]]) -> None:
    assert len(page["lun_labels"]) == 16
    assert len(page["lun_read_ops"]) == 16
    assert len(page["volume_labels"]) == 8
    assert len(page["node_labels"]) == 2
    assert len(page["fcp_read_data"]) == 2


def test_lun_units(page: dict[str, list[Sample]]) -> None:
    """Per second, bytes per second and microseconds."""
    for lun in ("lun0", "lun1"):
        key = {"svm": "svm1", "volume": "sql01_data", "lun": lun}
        read_ops = one(page, "lun_read_ops", **key)
        assert near(read_ops, LUN_OPS * READ_SHARE)  # 210 reads/s
        assert near(one(page, "lun_write_ops", **key), LUN_OPS * (1 - READ_SHARE))  # 90 writes/s
        assert near(one(page, "lun_read_data", **key), LUN_OPS * READ_SHARE * IO_BYTES)  # 1,720,320 B/s
        assert near(one(page, "lun_write_data", **key), LUN_OPS * (1 - READ_SHARE) * IO_BYTES)
        assert near(one(page, "lun_avg_read_latency", **key), ONTAP_LAT_US)  # 1 ms = 1000 us
        assert near(one(page, "lun_avg_write_latency", **key), ONTAP_LAT_US)


def test_lun_serial_hex_decodes_to_a_12_character_serial(page: dict[str, list[Sample]]) -> None:
    serials = set()
    for labels, value in page["lun_labels"]:
        assert value == 1.0
        serial = bytes.fromhex(labels["serial_hex"]).decode("ascii")
        assert len(serial) == 12 and serial.isprintable(), serial
        serials.add(serial)
    assert len(serials) == 16
    # the lun label is the LUN's name, not its path: the path is /vol/<volume>/<lun> (qtree empty)
    assert {labels["lun"] for labels, _ in page["lun_labels"]} == {"lun0", "lun1"}
    assert all(labels["qtree"] == "" for labels, _ in page["lun_labels"])
    sql01 = [labels for labels, _ in page["lun_labels"] if labels["volume"] == "sql01_data"]
    assert {x["node"] for x in sql01} == {"sanlens-sim-01"}


def test_volume_units(page: dict[str, list[Sample]]) -> None:
    """KeyPerf: per second, bytes per second, microseconds; total = read + write + other."""
    key = {"svm": "svm1", "volume": "sql01_data"}
    read_ops = one(page, "volume_read_ops", **key)
    write_ops = one(page, "volume_write_ops", **key)
    other_ops = one(page, "volume_other_ops", **key)
    assert near(read_ops, 2 * LUN_OPS * READ_SHARE)  # 420/s
    assert near(write_ops, 2 * LUN_OPS * (1 - READ_SHARE))  # 180/s
    assert near(one(page, "volume_total_ops", **key), read_ops + write_ops + other_ops)
    assert near(one(page, "volume_read_data", **key), 2 * LUN_OPS * READ_SHARE * IO_BYTES)
    assert near(one(page, "volume_write_data", **key), 2 * LUN_OPS * (1 - READ_SHARE) * IO_BYTES)
    assert near(one(page, "volume_read_latency", **key), ONTAP_LAT_US)
    assert near(one(page, "volume_write_latency", **key), ONTAP_LAT_US)
    assert 0 < one(page, "volume_avg_latency", **key) <= ONTAP_LAT_US * 1.01
    labels = next(x for x, _ in page["volume_labels"] if x["volume"] == "sql01_data")
    assert (
        labels["aggr"] == "aggr_sas1" and labels["node"] == "sanlens-sim-01" and labels["state"] == "online"
    )


def test_node_cpu_percent(page: dict[str, list[Sample]]) -> None:
    """node_cpu_busy and node_avg_processor_busy in percent; domain busy in percent of one processor."""
    for node in ("sanlens-sim-01", "sanlens-sim-02"):
        busy = one(page, "node_cpu_busy", node=node)
        assert 0 < busy < 100
        assert near(one(page, "node_avg_processor_busy", node=node), busy)
        domains = {x["metric"]: v for x, v in page["node_cpu_domain_busy"] if x["node"] == node}
        assert {"idle", "kahuna", "protocol", "raid", "storage", "target", "wafl_exempt"} <= set(domains)
        # summed over the processors: idle is ~ (100 - busy) x processors, here 8
        assert near(domains["idle"], (100 - busy) * 8)


def test_fcp_port_units(page: dict[str, list[Sample]]) -> None:
    key = {"node": "sanlens-sim-01", "port": "0c"}
    read_data = one(page, "fcp_read_data", **key)
    write_data = one(page, "fcp_write_data", **key)
    # node 01's single FC LIF carries sql01_data (2 x 210 reads of 8 KiB) and app1..3 (3 x 200 ops, 2 LUNs each)
    assert near(read_data, (2 * LUN_OPS + 3 * 200.0) * READ_SHARE * IO_BYTES)
    # fcp_queue_full is ONTAP's delta counter: a count per poll, not per second. The scenario turns
    # away 120 / fa_ports = 60 commands/s on node 01; RestPerf polls every 20 s -> 1200 per poll.
    assert near(one(page, "fcp_queue_full", **key), 60.0 * 20)
    assert one(page, "fcp_queue_full", node="sanlens-sim-02", port="0c") == 0
    # fcp_util_percent is Harvest's max(read_data, write_data) / speed label, the speed label taken
    # as is (here "16"): on this page it is not a 0..1 fraction
    speed = float(next(x["speed"] for x, _ in page["fcp_read_data"] if x["node"] == "sanlens-sim-01"))
    assert near(one(page, "fcp_util_percent", **key), max(read_data, write_data) / speed, 1e-9)


def test_fcp_lif_units(page: dict[str, list[Sample]]) -> None:
    key = {"node": "sanlens-sim-01", "lif": "sanlens-sim-01_fc_1"}
    assert one(page, "fcp_lif_read_data", **key) == pytest.approx(
        one(page, "fcp_read_data", node="sanlens-sim-01", port="0c"), rel=0.01
    )
    assert near(one(page, "fcp_lif_avg_read_latency", **key), ONTAP_LAT_US)
    ports = {x["port"] for x, _ in page["fcp_lif_read_data"]}
    assert ports == {"sanlens-sim-01:0c", "sanlens-sim-02:0c"}  # node:port, unlike fcp_* port="0c"


def test_ontap_version_is_in_node_labels(page: dict[str, list[Sample]]) -> None:
    versions = {x["version"] for x, _ in page["node_labels"]}
    assert versions == {"NetApp Release 9.12.1: Tue Jan 10 14:31:20 UTC 2023"}
    # the version label of metadata_* is Harvest's own, not ONTAP's
    assert {x["version"] for x, _ in page["metadata_target_status"]} == {"2.0.2"}
