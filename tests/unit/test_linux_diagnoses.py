"""The host diagnoses judge Linux disks as Windows ones, and advise in Linux terms."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from tests.builders import engine, finding, hostview, lun, mapped, now_state, ontap, snap, state

from sanlens.hosts.catalogue import NODE_EXPORTER
from sanlens.hosts.cooking import DiskReading, HostCooker
from sanlens.hosts.mapping import DiskMapping
from sanlens.model import HostDiskStats, HostPathStats, HostView

KEY = "ora01/disk mpatha"
PATHS = (HostPathStats("sdb", "running", "active/optimized"), HostPathStats("sdc", "transport-offline"))


def linux(**kw: Any) -> HostDiskStats:
    kw.setdefault("platform", "linux")
    return mapped(host="ora01", disk="mpatha", **kw)


def judged(diagnosis: str, d: HostDiskStats, *ontap_views: Any) -> tuple[int | None, dict[str, Any] | None]:
    e = engine(sustain_scale=0.0)
    for v in ontap_views:
        e.update(snap(v))
    e.update(snap(hostview(0, d, host=d.host)))
    return state(e, diagnosis, f"{d.host}/disk {d.disk}"), finding(e, diagnosis, {"disk": d.disk})


def test_path_loss_names_the_failed_path_devices_and_multipath() -> None:
    level, f = judged("host_path_loss", linux(observed_paths=1, configured_paths=2, path_stats=PATHS))
    assert level == 2 and f is not None
    fix = f["recommendation"]
    assert "multipath -ll mpatha" in fix and "sdc (transport-offline)" in fix and "mpclaim" not in fix
    assert "sdb" not in fix.split("not running:")[1].split(")")[0]
    _, win = judged("host_path_loss", mapped(observed_paths=1, configured_paths=2))
    assert win is not None and "mpclaim -s -d" in win["recommendation"]


def test_queue_limited_reads_the_mean_in_flight_and_advises_the_hba_and_nr_requests() -> None:
    # the interval's mean in flight (40 of 32 x 1) judges the queue, not X x R of the latencies shown
    busy = {"idle_ratio": 0.02, "read_iops": 700.0, "write_iops": 300.0}
    slow = {"read_latency_s": 0.0016, "write_latency_s": 0.0016, "paths": 1, **busy}
    level, f = judged(
        "host_queue_limited",
        linux(outstanding_io=40.0, **slow),
        ontap(0, luns=(lun(read_latency_s=0.0003, write_latency_s=0.0003),)),
    )
    assert level == 2 and f is not None
    assert f["evidence"]["outstanding_io"] == 40.0
    fix = f["recommendation"]
    for term in (
        "lpfc_lun_queue_depth",
        "ql2xmaxqdepth",
        "nr_requests",
        "/sys/block/<sdX>/device/queue_depth",
    ):
        assert term in fix, term
    level, _ = judged(
        "host_queue_limited",
        linux(outstanding_io=None, **slow),
        ontap(0, luns=(lun(read_latency_s=0.0003, write_latency_s=0.0003),)),
    )
    assert level == 0  # without the mean in flight, X x R = 1.6 of 32: not full


def test_oversubscription_advice_checks_multipath_paths() -> None:
    d = linux(read_latency_s=0.5, write_latency_s=0.5, idle_ratio=0.7)
    level, f = judged("san_oversubscription", d, ontap(0))
    assert level == 2 and f is not None
    assert "`multipath -ll` shows every path active" in f["recommendation"]


def test_a_host_only_linux_disk_near_the_lun_ceiling_is_told_to_stripe() -> None:
    d = HostDiskStats(
        "ora01", "mpatha", lun_serial="81CYr]Qlis4q", read_iops=70000.0, write_iops=15000.0, platform="linux"
    )
    level, f = judged("lun_iops_ceiling", d)
    assert level and f is not None and "lvcreate -i" in f["recommendation"]


def test_a_disk_the_source_knows_is_local_is_left_to_latency_slo() -> None:
    d = HostDiskStats(
        "ora01",
        "nvme0n1",
        read_iops=50000.0,
        write_iops=35000.0,
        read_latency_s=0.03,
        write_latency_s=0.03,
        idle_ratio=0.7,
        platform="linux",
        local=True,
    )
    view = hostview(0, d, host="ora01")
    key = "ora01/disk nvme0n1"
    assert now_state("latency_slo", key, view) == 2
    for did in ("san_oversubscription", "host_queue_limited", "lun_iops_ceiling"):
        assert now_state(did, key, view) is None, did
    # the same disk without the local mark (nothing known of it, no cluster) is judged host-only
    assert (
        now_state(
            "lun_iops_ceiling",
            key,
            hostview(
                0, HostDiskStats("ora01", "nvme0n1", read_iops=50000.0, write_iops=35000.0), host="ora01"
            ),
        )
        == 1
    )


def cooked(rates: dict[str, float], dt: float = 15.0) -> HostDiskStats:
    """mpatha cooked from two diskstats readings ``dt`` apart that grow at ``rates`` per second."""
    cooker = HostCooker("ora01", NODE_EXPORTER.moduli())
    start = {k: 1000.0 for k in rates}
    snaps = [
        cooker.cook(t, [DiskReading("mpatha", platform="linux", **{k: start[k] + v * t for k, v in rates.items()})],
                    {"mpatha": DiskMapping("")})
        for t in (0.0, dt)
    ]  # fmt: skip
    view = snaps[-1].view
    assert isinstance(view, HostView)
    (d,) = view.disks
    return d


def as_linux(c: HostDiskStats, **kw: Any) -> HostDiskStats:
    """The cooked rates on a disk mapped to the builders' LUN."""
    fields = ("read_iops", "write_iops", "read_latency_s", "write_latency_s", "idle_ratio", "outstanding_io",
              "reported_busy_ratio", "discard_iops", "discard_latency_s")  # fmt: skip
    return linux(**{f: getattr(c, f) for f in fields}, **kw)


def test_oversubscription_sees_an_idle_disk_that_a_jiffy_per_io_start_reads_busy() -> None:
    """500 cache-hit reads/s of 0.3 ms and 10 writes/s of 25 ms: 0.4 in flight, 60 % idle. A 5.15 kernel
    at HZ=250 charges the jiffies in which an I/O starts, 1 - e^(-510/250) x 0.6 = 92 % busy."""
    counted = 1.0 - (2.718281828459045 ** (-510 / 250)) * 0.6
    c = cooked({"reads": 500.0, "writes": 10.0, "read_time_s": 500 * 0.0003, "write_time_s": 10 * 0.025,
                "busy_s": counted, "queue_time_s": 0.4})  # fmt: skip
    assert c.idle_ratio == pytest.approx(0.6)
    array = ontap(0, luns=(lun(read_latency_s=0.0001, write_latency_s=0.0001),))  # host 7.8x the LUN's
    level, f = judged("san_oversubscription", replace(as_linux(c), kernel="5.15.0-91-generic"), array)
    assert level == 2 and f is not None
    assert f["evidence"]["host_idle_ratio"] == pytest.approx(0.6)
    assert "Busy time as counted 92 %, bounded by the requests in flight to 40 %" in f["recommendation"]
    assert "(kernel 5.15.0-91-generic: kernels from 5.0" in f["recommendation"]


def test_queue_limited_is_not_fooled_by_discards_in_field_11() -> None:
    """An fstrim on a thin LUN, 2,000 discards/s of 40 ms: field 11 grows 80 s/s more than the 1.6 reads
    and writes in flight of 1,000 IOPS at 1.6 ms; the queue of 32 x 1 is not full."""
    c = cooked({"reads": 700.0, "writes": 300.0, "read_time_s": 700 * 0.0016, "write_time_s": 300 * 0.0016,
                "discards": 2000.0, "discard_time_s": 80.0, "busy_s": 0.98, "queue_time_s": 81.6})  # fmt: skip
    assert c.outstanding_io == pytest.approx(1.6)
    assert c.discard_iops == pytest.approx(2000.0) and c.discard_latency_s == pytest.approx(0.04)
    level, f = judged(
        "host_queue_limited",
        as_linux(c, paths=1),
        ontap(0, luns=(lun(read_latency_s=0.0003, write_latency_s=0.0003),)),
    )
    assert level == 0 and f is None
