"""The windows_exporter source against the in-process simulator: disks join the simulated LUNs by serial."""

from __future__ import annotations

import time

import pytest
import requests

from sanlens.config import Duration, HostTarget
from sanlens.hosts.sources import make_host_source
from sanlens.join import LunDirectory, LunIdentity, volume_from_path


def _directory(sim_url: str, cluster: str) -> LunDirectory:
    r = requests.get(
        f"{sim_url}/api/storage/luns", params={"fields": "name,svm,location,serial_number"}, timeout=10
    )
    r.raise_for_status()
    luns = [
        LunIdentity(
            cluster,
            rec["svm"]["name"],
            ((rec.get("location") or {}).get("volume") or {}).get("name") or volume_from_path(rec["name"]),
            rec["name"],
            rec.get("serial_number", ""),
        )
        for rec in r.json()["records"]
    ]
    d = LunDirectory()
    d.publish(cluster, luns)
    return d


def test_windows_exporter_source_against_simulator() -> None:
    server = pytest.importorskip("sanlens.sim.server", reason="the simulator has not landed yet")
    sim = server.Simulator(scenario="healthy", port=0)
    sim.start()
    try:
        assert sim.hosts
        directory = _directory(sim.url, sim.cluster_name)
        assert len(directory) > 0
        host = sim.hosts[0]
        src = make_host_source(
            HostTarget(name=host, url=f"{sim.url}/windows/{host}/metrics", poll_interval=Duration(1)),
            directory,
        )
        first = src.poll()
        time.sleep(1.2)
        second = src.poll()
        assert first.view is not None and second.view is not None
        disks = second.view.disks
        assert disks
        mapped = [d for d in disks if d.mapped]
        assert mapped, "no simulated host disk joined an ONTAP LUN by serial"
        for d in mapped:
            ident = directory.by_serial(d.lun_serial)
            assert ident is not None and (d.cluster, d.svm, d.lun) == (ident.cluster, ident.svm, ident.lun)
            assert d.read_iops is not None and d.read_iops >= 0
            assert d.idle_ratio is not None and 0.0 <= d.idle_ratio <= 1.0
        names = {m.name for m in second.metrics}
        assert {
            "sanlens_host_disk_info",
            "sanlens_host_disk_ops_total",
            "sanlens_host_disk_queue_length",
        } <= names
        src.close()
    finally:
        sim.stop()
