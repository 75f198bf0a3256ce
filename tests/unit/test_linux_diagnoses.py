"""The host diagnoses judge Linux disks as Windows ones, and advise in Linux terms."""

from __future__ import annotations

from typing import Any

from tests.builders import engine, finding, hostview, lun, mapped, now_state, ontap, snap, state

from sanlens.model import HostDiskStats, HostPathStats

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


def test_queue_limited_reads_the_queue_integral_and_advises_the_hba_and_nr_requests() -> None:
    # 1,000 IOPS at 1.6 ms is 1.6 in flight by Little's law, yet the queue integral says 40 of 32 x 1:
    # requests wait in the dm queue above the paths, and only the integral sees them
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
    assert level == 0  # without the integral, X x R = 1.6 of 32: not full


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
