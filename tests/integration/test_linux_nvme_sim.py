"""NVMe/TCP namespaces of a Linux host against the simulator over HTTP: the namespace pages node_exporter
would serve, the join by namespace UUID with no mapping config, rates from the pages' counters, and a
lost controller.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
from test_linux_sim_integration import STEP, T0, Clock, exporter, page, rounds, value  # one harness
from tests import joining

from sanlens.config import HostTarget
from sanlens.hosts.node_exporter import NodeExporterSource
from sanlens.join.directory import LunDirectory, LunIdentity
from sanlens.model import HostDiskStats, HostView, Snapshot
from sanlens_sim.server import Simulator

Page = dict[str, list[tuple[dict[str, str], float]]]


def host_disks(snap: Snapshot) -> dict[str, HostDiskStats]:
    assert isinstance(snap.view, HostView)
    return {d.disk: d for d in snap.view.disks if isinstance(d, HostDiskStats)}


def namespace_records(sim: Simulator) -> list[dict[str, Any]]:
    fields = "name,uuid,svm.name,location.volume.name,location.node.name,status.state"
    r = requests.get(f"{sim.url}/api/storage/namespaces", params={"fields": fields}, timeout=10)
    r.raise_for_status()
    return list(r.json()["records"])


def directory(sim: Simulator) -> LunDirectory:
    """The namespaces as the ONTAP collector publishes them: no serial, kind namespace, their UUID."""
    d = LunDirectory()
    d.publish(
        sim.cluster_name,
        [
            LunIdentity(
                sim.cluster_name,
                rec["svm"]["name"],
                rec["location"]["volume"]["name"],
                rec["name"],
                "",
                rec["location"]["node"]["name"],
                rec["status"]["state"],
                kind="namespace",
                uuid=rec["uuid"],
            )
            for rec in namespace_records(sim)
        ],
    )
    return d


def test_the_page_shows_each_namespace_as_native_nvme_multipath_does() -> None:
    with Simulator("nvme-tcp", clock=Clock(T0)) as sim:
        p = page(sim, "ora01")
        uuids = {rec["uuid"] for rec in namespace_records(sim)}
    heads = {lv["device"]: lv for lv, _ in p["node_disk_info"] if lv["model"] == "NetApp ONTAP Controller"}
    assert heads and {lv["wwn"].removeprefix("uuid.") for lv in heads.values()} <= uuids
    assert all(lv["major"] == "259" and lv["wwn"].startswith("uuid.") for lv in heads.values())
    # hidden path devices are in /proc/diskstats but unknown to udev: empty identity
    hidden = [lv for lv, _ in p["node_disk_info"] if "c" in lv["device"] and lv["device"].startswith("nvme")]
    assert len(hidden) == 2 * len(heads) and all(lv["wwn"] == lv["model"] == "" for lv in hidden)
    assert {lv["state"] for lv, _ in p["node_nvme_info"]} == {"live"}
    assert "node_dmmultipath_device_info" not in p  # native NVMe multipath: no device-mapper map


def test_namespaces_join_by_uuid_with_no_mapping_and_rates_follow_the_pages() -> None:
    clock = Clock(T0)
    with Simulator("nvme-tcp", clock=clock) as sim:
        records = {rec["uuid"]: rec for rec in namespace_records(sim)}
        src = joining.joined(
            NodeExporterSource(HostTarget(name="ora01", url=f"{sim.url}/linux/ora01/metrics")), directory(sim)
        )
        src.clock = clock
        p0 = page(sim, "ora01")
        src.poll()
        clock.t += STEP
        p1 = page(sim, "ora01")
        second = src.poll()
        src.close()
    disks = host_disks(second)
    joined = 0
    for labels, _ in p1["node_disk_info"]:
        if labels["model"] != "NetApp ONTAP Controller":
            continue
        dev, rec = labels["device"], records[labels["wwn"].removeprefix("uuid.")]
        d = disks[dev]
        assert (d.cluster, d.svm, d.lun) == (sim.cluster_name, rec["svm"]["name"], rec["name"])
        assert d.volume == rec["location"]["volume"]["name"] and d.platform == "linux" and d.mapped
        reads = value(p1, "node_disk_reads_completed_total", device=dev) - value(
            p0, "node_disk_reads_completed_total", device=dev
        )
        rtime = value(p1, "node_disk_read_time_seconds_total", device=dev) - value(
            p0, "node_disk_read_time_seconds_total", device=dev
        )
        busy = value(p1, "node_disk_io_time_seconds_total", device=dev) - value(
            p0, "node_disk_io_time_seconds_total", device=dev
        )
        assert d.read_iops == pytest.approx(reads / STEP)
        assert d.read_latency_s == pytest.approx(rtime / reads)
        assert d.idle_ratio == pytest.approx(1.0 - busy / STEP)
        assert (d.observed_paths, d.configured_paths) == (2, 2)
        assert {p.state for p in d.path_stats} == {"live"}
        joined += 1
    # ora01's two namespaces; ora02's and the NVMe/FC ones belong to other hosts
    assert joined == 2 == sum(1 for r in records.values() if r["name"].startswith("/vol/ora01_data/"))
    assert not disks["sda"].mapped and disks["sda"].local


def test_the_collector_publishes_the_namespaces_and_a_lost_controller_is_a_lost_path() -> None:
    with exporter("nvme-tcp") as (sim, ex, clock):
        rounds(ex, clock, 2)
        src = next(x for x in ex.sources if x.name == "ora01")
        assert isinstance(src, NodeExporterSource)
        disks = host_disks(ex.join.apply(src.poll()))  # as the exporter's pipeline joins it
        assert disks["nvme0n1"].mapped and disks["nvme0n1"].lun.startswith("/vol/ora01_data")
        # lose the second path of the host's first namespace (nvme0n1: controllers nvme0 and nvme1)
        host = next(h for h in sim.estate.world().hosts if h.name == "ora01")
        ns_disk = next(d for d in host.disks if d.path_devices)
        sim.set_faults(failed_paths=f"ora01/{ns_disk.path_devices[1]}")
        rounds(ex, clock, 3)
        after = page(sim, "ora01")
        assert value(after, "node_nvme_info", device="nvme1", state="connecting") == 1.0
        d = host_disks(ex.join.apply(src.poll()))["nvme0n1"]
        assert (d.observed_paths, d.configured_paths) == (1, 2)
        assert {p.path: p.state for p in d.path_stats} == {"nvme0c0n1": "live", "nvme0c1n1": "connecting"}
        found = [
            f
            for f in ex.engine.findings()
            if f["id"] == "host_path_loss" and f["state"] > 0 and f["subject"].get("disk") == "nvme0n1"
        ]
        assert found and "nvme0c1n1 (connecting)" in found[0]["recommendation"]
