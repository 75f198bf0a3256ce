"""Linux hosts through node_exporter against the simulator over HTTP: the WWID join with no mapping,
every host diagnosis on a Linux disk in its scenario, and a lost path device. The hosts are
configured as a user would (``source: node_exporter`` and the page's URL, nothing else).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from tests import joining

from sanlens.config import Config, DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.errors import SourceError
from sanlens.hosts.node_exporter import NodeExporterSource
from sanlens.join.directory import LunDirectory, LunIdentity, volume_from_path
from sanlens.model import HostDiskStats, HostView
from sanlens.runtime.exporter import Exporter
from sanlens_sim.host_builder import LinuxHost
from sanlens_sim.server import Simulator

T0 = 1_700_000_000.0
STEP = 60.0


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def page(sim: Simulator, host: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = requests.get(f"{sim.url}/linux/{host}/metrics", timeout=10).text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def value(p: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    (v,) = [v for lv, v in p[name] if all(lv.get(k) == x for k, x in labels.items())]
    return v


def lun_records(sim: Simulator) -> list[dict[str, Any]]:
    r = requests.get(
        f"{sim.url}/api/storage/luns", params={"fields": "name,svm,location,serial_number"}, timeout=10
    )
    r.raise_for_status()
    return list(r.json()["records"])


def directory(sim: Simulator) -> LunDirectory:
    d = LunDirectory()
    d.publish(
        sim.cluster_name,
        [
            LunIdentity(
                sim.cluster_name,
                rec["svm"]["name"],
                ((rec.get("location") or {}).get("volume") or {}).get("name")
                or volume_from_path(rec["name"]),
                rec["name"],
                rec["serial_number"],
            )
            for rec in lun_records(sim)
        ],
    )
    return d


def test_linux_disks_join_their_luns_by_wwid_with_no_mapping() -> None:
    clock = Clock(T0)
    with Simulator("path-faults", clock=clock) as sim:
        assert sim.linux_hosts == ["ora01"] and "ora01" not in sim.hosts
        src = joining.joined(
            NodeExporterSource(HostTarget(name="ora01", url=f"{sim.url}/linux/ora01/metrics")), directory(sim)
        )
        src.clock = clock
        p0 = page(sim, "ora01")
        first = src.poll()
        clock.t += STEP
        p1 = page(sim, "ora01")
        second = src.poll()
        src.close()
        serials = {rec["serial_number"]: rec["name"] for rec in lun_records(sim)}
    assert first.view is not None and second.view is not None
    disks = {d.disk: d for d in second.view.disks}  # type: ignore[union-attr]
    # each map's uuid is 3600a0980 + the hex of the serial of the LUN it joined, computed here
    joined = 0
    for labels, _ in p1["node_dmmultipath_device_info"]:
        wwid = labels["uuid"].removeprefix("mpath-")
        serial = bytes.fromhex(wwid.removeprefix("3600a0980")).decode()
        d = disks[labels["device"]]
        assert d.lun == serials[serial] and d.lun_serial == serial and d.cluster == sim.cluster_name
        joined += 1
        # rates from the two pages' counters of the map's dm device, as PromQL would take them
        dev = labels["sysfs_name"]
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
        assert d.platform == "linux"
    assert joined == 2
    assert not disks["sda"].mapped and disks["sda"].local  # the boot disk is no LUN
    # the page's 16-digit wwn is shared by every path of a map and says nothing about the LUN
    wwns = {lv["wwn"] for lv, _ in p1["node_disk_info"] if lv["model"] == "LUN_C-Mode"}
    assert all(len(w) == 18 for w in wwns)


@contextmanager
def exporter(scenario: str, ontap: bool = True, **knobs: Any) -> Iterator[tuple[Simulator, Exporter, Clock]]:
    """The exporter and the simulator on one hand-moved clock; polls are run by ``rounds``."""
    clock = Clock(T0)
    with (
        mock.patch("time.time", clock),
        mock.patch("time.monotonic", clock),
        Simulator(scenario=scenario, clock=clock, **knobs) as sim,
    ):
        hosts = [
            HostTarget(
                name=h,
                source="node_exporter",
                url=f"{sim.url}/linux/{h}/metrics",
                poll_interval=Duration(STEP),
            )
            for h in sim.linux_hosts
        ]
        cfg = Config(
            listen="127.0.0.1:0",
            ontap=[OntapTarget(name=sim.cluster_name, url=sim.url, poll_interval=Duration(STEP))]
            if ontap
            else [],
            hosts=hosts,
            diagnose=DiagnoseConfig(sustain_scale=0.05),
        )
        ex = Exporter(cfg)
        try:
            yield sim, ex, clock
        finally:
            for s in ex.sources:
                s.close()


def rounds(ex: Exporter, clock: Clock, n: int) -> None:
    for i in range(n):
        if i:
            clock.t += STEP
        for s in ex.sources:
            try:
                ex.pipeline.record_success(s.poll(), 0.1)
            except SourceError as e:
                raise AssertionError(f"{s.name}: {e}") from None
        ex.engine.evaluate_pending()


def fired(ex: Exporter, diagnosis: str, **subject: str) -> list[dict[str, Any]]:
    return [
        f
        for f in ex.engine.findings()
        if f["id"] == diagnosis
        and f["state"] > 0
        and all(f["subject"].get(k) == v for k, v in subject.items())
    ]


def test_oversubscription_fires_for_the_linux_host_behind_the_same_front_end() -> None:
    with exporter("san-oversubscription") as (_sim, ex, clock):
        rounds(ex, clock, 4)
        found = fired(ex, "san_oversubscription", host="ora01")
        assert {f["subject"]["disk"] for f in found} == {"mpatha", "mpathb"}
        assert all(f["state"] == 2 and f["subject"]["lun"].startswith("/vol/app1/") for f in found)
        assert all("multipath -ll" in f["recommendation"] for f in found)


def test_oversubscription_is_quiet_with_six_front_end_ports() -> None:
    with exporter("san-oversubscription", fa_ports=6) as (_sim, ex, clock):
        rounds(ex, clock, 4)
        assert not [f for f in ex.engine.findings() if f["subject"].get("host") == "ora01"]


def test_too_few_luns_queue_limits_the_linux_disk_and_its_lun_nears_the_ceiling() -> None:
    with exporter("too-few-luns") as (_sim, ex, clock):
        rounds(ex, clock, 4)
        (q,) = fired(ex, "host_queue_limited", host="ora01")
        assert q["subject"]["disk"] == "mpatha" and q["subject"]["lun"] == "/vol/ora01_db/lun0"
        # reads and writes in flight from their time sums: 30,000/s x 1.6 ms, of depth 32 (the textfile) x 1 path
        assert q["evidence"]["outstanding_io"] == pytest.approx(30000 * 0.0016, rel=0.02)
        assert q["evidence"]["queue_effective_depth"] == 32
        assert "lpfc_lun_queue_depth" in q["recommendation"]
        assert fired(ex, "lun_iops_ceiling", lun="/vol/ora01_db/lun0")


def test_path_loss_fires_for_the_map_with_a_transport_offline_path_device() -> None:
    with exporter("path-faults") as (_sim, ex, clock):
        rounds(ex, clock, 3)
        (f,) = fired(ex, "host_path_loss", host="ora01")
        assert f["subject"]["disk"] == "mpatha"
        assert f["evidence"] == {"active_paths": 1.0, "configured_paths": 2.0}
        assert "sdc (transport-offline)" in f["recommendation"]


def test_a_path_device_lost_by_the_fault_knob_stops_and_its_map_loses_a_path() -> None:
    with exporter("path-faults") as (sim, ex, clock):
        rounds(ex, clock, 3)
        assert not fired(ex, "host_path_loss", host="ora01", disk="mpathb")
        before = page(sim, "ora01")
        sim.set_faults(failed_paths="ora01/sdd")
        rounds(ex, clock, 3)
        after = page(sim, "ora01")
        (f,) = fired(ex, "host_path_loss", host="ora01", disk="mpathb")
        assert "sdd (transport-offline)" in f["recommendation"]
        assert value(after, "node_dmmultipath_path_state", device="mpathb", path="sdd") == 1.0
        assert [lv["state"] for lv, _ in after["node_dmmultipath_path_state"] if lv["path"] == "sdd"] == [
            "transport-offline"
        ]
        # sdd froze at the failure; sde carries the whole map from then on
        src = next(x for x in ex.sources if x.name == "ora01")
        clock.t += STEP
        snap = src.poll()  # type: ignore[attr-defined]
        (d,) = [x for x in snap.view.disks if x.disk == "mpathb"]
        paths = {p.path: p for p in d.path_stats}
        assert paths["sdd"].read_iops == 0.0 and paths["sdd"].state == "transport-offline"
        assert paths["sde"].read_iops == pytest.approx(d.read_iops)
        assert (d.observed_paths, d.configured_paths) == (1, 2)
        reads = [value(p, "node_disk_reads_completed_total", device="sde") for p in (before, after)]
        assert reads[1] > reads[0]


def test_demo_scenario_has_the_linux_host_oversubscribed() -> None:
    with exporter("mixed") as (sim, ex, clock):
        assert sim.linux_hosts == ["ora01"]
        rounds(ex, clock, 4)
        assert {f["subject"]["disk"] for f in fired(ex, "san_oversubscription", host="ora01")} == {
            "mpatha",
            "mpathb",
        }


def linux_host(sim: Simulator, name: str) -> list[LinuxHost]:
    """The host in every phase world of the scenario, to set its kernel and options on."""
    out = [h for w in sim.estate.worlds for h in w.hosts if h.name == name]
    assert out and all(isinstance(h, LinuxHost) for h in out)
    return out  # type: ignore[return-value]


def polled_twice(sim: Simulator, clock: Clock, host: str) -> dict[str, HostDiskStats]:
    """Two polls of ``host``'s node_exporter page one STEP apart, as a user configures the host."""
    src = NodeExporterSource(HostTarget(name=host, url=f"{sim.url}/linux/{host}/metrics"))
    src.clock = clock  # type: ignore[method-assign]
    src.poll()
    clock.t += STEP
    snap = src.poll()
    src.close()
    assert isinstance(snap.view, HostView)
    return {d.disk: d for d in snap.view.disks}


def rates(sim: Simulator, clock: Clock, host: str, device: str, *names: str) -> list[float]:
    """Per-second changes of ``device``'s counters over one STEP of the page itself."""
    p0 = page(sim, host)
    clock.t += STEP
    p1 = page(sim, host)
    return [(value(p1, n, device=device) - value(p0, n, device=device)) / STEP for n in names]


def test_the_page_names_its_kernel_and_busy_time_follows_its_rule() -> None:
    """sda, the boot disk: 15 reads/s of 0.3 ms and 40 writes/s of 0.5 ms, 0.0245 in flight. A kernel
    that charges a jiffy per I/O start (5.15, HZ=250) counts 1 - e^(-55/250) x (1 - 0.0245) busy."""
    counted = 1.0 - math.exp(-55.0 / 250.0) * (1.0 - 0.0245)
    for release, busy in (("6.12.0-55.9.1.el10_0.x86_64", 0.0245), ("5.15.0-91-generic", counted)):
        clock = Clock(T0)
        with Simulator("path-faults", clock=clock) as sim:
            for h in linux_host(sim, "ora01"):
                h.kernel = release
            (uname,) = page(sim, "ora01")["node_uname_info"]
            assert uname[0] | {"version": ""} == {"domainname": "(none)", "machine": "x86_64", "nodename": "ora01",
                                                  "release": release, "sysname": "Linux", "version": ""}  # fmt: skip
            io, rt, wt = rates(sim, clock, "ora01", "sda", "node_disk_io_time_seconds_total",
                               "node_disk_read_time_seconds_total", "node_disk_write_time_seconds_total")  # fmt: skip
            assert rt + wt == pytest.approx(0.0245, rel=0.01)
            assert io == pytest.approx(busy, rel=0.01)
            d = polled_twice(sim, clock, "ora01")["sda"]
            assert d.idle_ratio == pytest.approx(1.0 - 0.0245, rel=0.01)  # 97.5 % idle on either kernel
            assert d.reported_busy_ratio == pytest.approx(busy, rel=0.01)


def test_a_discard_storm_leaves_the_reads_and_writes_in_flight_as_they_were() -> None:
    """An fstrim on mpatha's thin LUN, 2,000 discards/s of 40 ms: field 11 grows 80 s/s more."""
    clock = Clock(T0)
    with Simulator("path-faults", clock=clock) as sim:
        quiet = polled_twice(sim, clock, "ora01")["mpatha"]
        for h in linux_host(sim, "ora01"):
            h.discard_storm = {"mpatha": (2000.0, 0.040)}
        rt, wt, w11, dc = rates(sim, clock, "ora01", "dm-2", "node_disk_read_time_seconds_total",
                                "node_disk_write_time_seconds_total", "node_disk_io_time_weighted_seconds_total",
                                "node_disk_discards_completed_total")  # fmt: skip
        assert w11 == pytest.approx(rt + wt + 80.0, rel=0.01) and dc == pytest.approx(2000.0)
        d = polled_twice(sim, clock, "ora01")["mpatha"]
    assert quiet.outstanding_io is not None
    assert d.outstanding_io == pytest.approx(quiet.outstanding_io, rel=0.01)
    assert d.outstanding_io == pytest.approx(rt + wt, rel=0.01)
    assert d.discard_iops == pytest.approx(2000.0) and d.discard_latency_s == pytest.approx(0.040)


def test_a_32_bit_hosts_write_count_wraps_at_2_32_and_is_no_restart() -> None:
    clock = Clock(T0)
    with Simulator("path-faults", clock=clock) as sim:
        for h in linux_host(sim, "ora01"):
            h.machine, h.kernel, h.writes_wrap_after_s = "armv7l", "5.10.0-28-armmp", STEP / 2
        p0 = page(sim, "ora01")
        clock.t += STEP
        p1 = page(sim, "ora01")
        clock.t -= STEP
        w0, w1 = (value(p, "node_disk_writes_completed_total", device="dm-2") for p in (p0, p1))
        assert w1 < w0 < 2**32  # the page shows the wrap
        writes = (w1 - w0) % 2**32 / STEP
        d = polled_twice(sim, clock, "ora01")["mpatha"]
    assert d.write_iops == pytest.approx(writes) and writes > 0
    assert d.read_iops is not None and d.read_iops > 0  # no restart: every counter kept its rate
