"""Hosts read back from a real Prometheus that scrapes their exporters: the same view as scraping them.

A real Prometheus scrapes the simulator's windows_exporter and node_exporter pages every second;
sanlens reads each host through the query API (``source: prometheus``) and, beside it, scrapes the
same page itself. Both must give every disk the same LUN, the same rates and latencies within 3 %
(the two read different intervals of the same steady counters), and the engine the same findings on
the same subjects.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tests.joining import joined

from harness import Harness, harness  # noqa: F401  (fixture)
from sanlens.config import DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.hosts.prometheus_source import JOIN_FAMILIES, PrometheusHostSource
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory
from sanlens.model import HostView, Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator

pytestmark = pytest.mark.e2e

FIELDS = ("read_iops", "write_iops", "read_latency_s", "write_latency_s", "read_bytes_s", "idle_ratio",
          "queue_length")  # fmt: skip


def close(a: Any, b: Any, rel: float = 0.03, abs_: float = 1e-6) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a == pytest.approx(b, rel=rel, abs=abs_))


def test_hosts_read_through_prometheus_match_the_hosts_scraped(harness: Harness) -> None:  # noqa: F811
    with Simulator(scenario="too-few-luns") as sim:
        addr = sim.url.removeprefix("http://")
        jobs = {f"win-{h}": f"/windows/{h}/metrics" for h in sim.hosts}
        jobs |= {f"linux-{h}": f"/linux/{h}/metrics" for h in sim.linux_hosts}
        assert sim.linux_hosts and sim.hosts, "the scenario must have Windows and Linux hosts"
        prom = harness.start_prometheus({job: [addr] for job in jobs}, metrics_paths=jobs)
        harness.wait_until(
            lambda: len(prom.query("count by (job) (windows_physical_disk_reads_total or node_disk_reads_completed_total)"))
            == len(jobs),
            30,
            what="Prometheus to scrape every host",
        )  # fmt: skip
        directory = LunDirectory()
        ontap = joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)
        pairs = []
        for job in jobs:
            os_, host = job.split("-", 1)
            exporter = "windows_exporter" if os_ == "win" else "node_exporter"
            direct = joined(
                make_host_source(HostTarget(name=host, source=exporter, url=sim.url + jobs[job])), directory
            )
            source = make_host_source(
                HostTarget(
                    name=host,
                    source="prometheus",
                    exporter=exporter,
                    url=prom.url,
                    selector=f'job="{job}"',
                    poll_interval=Duration(1),
                ),
            )
            assert isinstance(source, PrometheusHostSource)
            via = joined(source, directory)
            pairs.append((direct, via))
        engines = {
            "direct": Engine(DiagnoseConfig(sustain_scale=0.0)),
            "prometheus": Engine(DiagnoseConfig(sustain_scale=0.0)),
        }
        snaps: dict[str, dict[str, Snapshot]] = {"direct": {}, "prometheus": {}}
        for _ in range(3):
            o = ontap.poll()
            for e in engines.values():
                e.update(o)
            for direct, via in pairs:
                for kind, src in (("direct", direct), ("prometheus", via)):
                    snap = src.poll()
                    engines[kind].update(snap)
                    snaps[kind][src.name] = snap
            time.sleep(3.0)
        ontap.close()
        for direct, via in pairs:
            assert via.queries == 3, "one instant query per host per poll"
            print(
                f"query budget: {via.name}: {via.queries} queries, {via.answered_bytes / via.queries:,.0f} bytes each"
            )
            direct.close()
            via.close()

    for host, d_snap in snaps["direct"].items():
        p_snap = snaps["prometheus"][host]
        assert isinstance(d_snap.view, HostView) and isinstance(p_snap.view, HostView)
        assert p_snap.view.interval_s and p_snap.view.interval_s > 1.0, (
            "rates over Prometheus's scrape interval"
        )
        by_disk = {x.disk: x for x in p_snap.view.disks}
        assert set(by_disk) == {x.disk for x in d_snap.view.disks}, host
        checked = 0
        for x in d_snap.view.disks:
            y = by_disk[x.disk]
            assert (y.cluster, y.svm, y.lun, y.paths) == (x.cluster, x.svm, x.lun, x.paths), (host, x.disk)
            if x.local:
                continue  # a boot disk's few ops: its millisecond counters are too coarse to compare
            for f in FIELDS:
                # idle is 1 - busy: a 0.1 % timing difference in busy is several % of a small idle
                tol = 0.005 if f == "idle_ratio" else 1e-6
                got, want = getattr(y, f), getattr(x, f)
                assert close(got, want, abs_=tol), (host, x.disk, f, got, want)
            checked += bool(x.lun) and (x.read_iops or 0) > 0
        assert checked, f"{host}: at least one LUN with reads to compare"
        # /metrics carries the join, not the exporter's counters again
        names = {m.name for m in p_snap.metrics}
        assert "sanlens_host_disk_info" in names and names <= JOIN_FAMILIES, names

    found = {}
    for kind, e in engines.items():
        found[kind] = {
            (f["id"], json.dumps(f["subject"], sort_keys=True)): {
                k: v for k, v in f["evidence"].items() if isinstance(v, float)
            }
            for f in e.findings()
            if f["state"] > 0
        }
    assert any(k[0] == "host_queue_limited" for k in found["direct"]), found["direct"].keys()
    assert set(found["prometheus"]) == set(found["direct"])
    for key, ev in found["direct"].items():
        for k, v in ev.items():
            assert close(found["prometheus"][key].get(k), v, rel=0.05), (
                key,
                k,
                found["prometheus"][key].get(k),
                v,
            )
