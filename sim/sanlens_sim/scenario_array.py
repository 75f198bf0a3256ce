"""The scenarios inside the array: the healthy estate, a Kahuna-bound node, an expanded aggregate
with hot new disks, a rebuild under OLTP, and the demo's mix of them with front-end oversubscription.
"""

from __future__ import annotations

from collections.abc import Callable

from sanlens_sim.builder import Builder
from sanlens_sim.scenario_base import (
    KAHUNA_DOMAINS,
    MODERN,
    Knobs,
    balanced,
    builder_for,
    healthy_host,
    volumes_named,
)
from sanlens_sim.scenario_front_end import oversubscribed, oversubscribed_linux
from sanlens_sim.world import Node, QosPolicy, Volume


# ------------------------------------------------------------------ healthy
def healthy(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    for n in (b.node(), b.node()):
        tag = n.name.rsplit("-", 1)[-1]
        balanced(b, n, f"n{tag}a")
        balanced(b, n, f"n{tag}b")
        b.spare(n)
        b.spare(n)
    healthy_host(b, "sql01", volumes_named(b, "n01a"))
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    return b


# ------------------------------------------------------------------ kahuna-bottleneck
def kahuna_bottleneck(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    n1, n2 = b.node(KAHUNA_DOMAINS), b.node()
    a1 = b.aggregate(n1, [(24, 0.30)])
    hot = b.volume(a1, "oltp_hot", 38000.0, lat_ms=(2.0, 2.5), luns=4)
    b.volume(a1, "small1", 1000.0, lat_ms=(1.0, 1.2))
    b.volume(a1, "small2", 1000.0, lat_ms=(1.0, 1.2))  # oltp_hot = 95 % of aggr ops
    a2 = b.aggregate(n1, [(12, 0.20)])
    b.volume(a2, "reports", 4000.0, lat_ms=(1.0, 1.5))  # one volume per aggregate
    balanced(b, n2, "n02a")
    h = b.host("sql01")
    for lun in b.luns_of(hot)[:2]:
        b.host_disk(h, lun, (2.5, 3.0), idle=0.30, queue=4.0)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    return b


# ------------------------------------------------------------------ aggregate-expansion
def _expanded(b: Builder, node: Node, prefix: str) -> list[Volume]:
    """HDD aggregate: 46 old disks (rg0, rg1) ~25 % busy, 24 new disks (rg2, rg3) ~75 % busy."""
    a = b.aggregate(
        node, [(23, 0.25), (23, 0.25), (12, 0.75), (12, 0.75)], disk_type="sas", name="aggr_sas_exp"
    )
    return [b.volume(a, f"{prefix}{i + 1}", 1200.0, lat_ms=(5.0, 6.0)) for i in range(4)]


def aggregate_expansion(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    n1, n2 = b.node(), b.node()
    vols = _expanded(b, n1, "erp")
    balanced(b, n2, "n02a")
    b.spare(n1, "sas")
    h = b.host("sql01")
    for v in vols[:2]:
        b.host_disk(h, b.luns_of(v)[0], (6.0, 7.0), idle=0.55, queue=1.0)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    return b


# ------------------------------------------------------------------ rebuild-during-oltp
def _rebuild_timeline(k: Knobs, default_rate: float) -> tuple[float, float]:
    after = 30.0 if k.rebuild_after_s is None else k.rebuild_after_s
    rate = k.rebuild_rate_pct_s or default_rate
    return after, rate


def rebuild_phases(default_rate: float) -> Callable[[Knobs], list[float]]:
    def phases(k: Knobs) -> list[float]:
        after, rate = _rebuild_timeline(k, default_rate)
        return [0.0, after, after + 100.0 / rate]

    return phases


def _oltp_rebuild(b: Builder, node: Node, k: Knobs, phase: int, default_rate: float, host: str) -> None:
    """OLTP on an HDD aggregate: 12 ms, then a reconstruct (phase 1) at ~60 ms, then 12 ms again."""
    rebuilding = phase == 1
    busy = 0.70 if rebuilding else 0.45
    a = b.aggregate(node, [(20, busy), (20, busy)], disk_type="sas", name="aggr_oltp")
    lat = 60.0 if rebuilding else 12.0
    target = a.raid_groups[1].disks[5]
    if rebuilding:
        after, rate = _rebuild_timeline(k, default_rate)
        a.raid_groups[1].reconstruct = (after, rate)
        target.state = "reconstructing"
        target.busy = min(1.0, busy * 1.15)
    oltp = b.volume(a, "oltp_db", 4000.0, read_share=0.6, lat_ms=(lat, lat), luns=4)
    for i in range(3):
        b.volume(a, f"oltp_aux{i + 1}", 500.0, lat_ms=(lat, lat))
    h = b.host(host)
    for lun in b.luns_of(oltp)[:2]:
        b.host_disk(
            h,
            lun,
            (lat + 0.5, lat + 0.5),
            idle=0.10 if rebuilding else 0.40,
            queue=8.0 if rebuilding else 2.0,
        )


def rebuild_during_oltp(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    n1, n2 = b.node(), b.node()
    _oltp_rebuild(b, n1, k, phase, 0.5, "sql01")
    balanced(b, n2, "n02a")
    b.spare(n2)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    return b


# ------------------------------------------------------------------ mixed (the demo)
def mixed(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    n1, n2, n3, n4 = b.node(), b.node(KAHUNA_DOMAINS), b.node(), b.node()
    # node 1: sql01 oversubscribed in the fabric (array idle), sql02 healthy beside it
    a1 = b.aggregate(n1, [(12, 0.25)])
    oversubscribed(b, a1, k, "sql01")
    for i in range(3):
        b.volume(a1, f"n01_vol{i + 1}", 2500.0, lat_ms=(0.6, 0.9))
    # a policy group far from its ceiling, as most sites have: a workload in the workload table, not held
    b.qos_policy(QosPolicy("n01-standard", max_iops=10000.0), volumes_named(b, "n01_vol")[2])
    healthy_host(b, "sql02", volumes_named(b, "n01_vol"))
    # quiet iSCSI LUNs and NVMe/TCP namespaces beside them (no host judged): every front end on the page
    b.volume(a1, "n01_iscsi", 600.0, lat_ms=(0.5, 0.7), protocol="iscsi")
    b.volume(a1, "n01_nvme", 600.0, lat_ms=(0.3, 0.4), protocol="nvme_tcp")
    # ora01 (Linux, node_exporter) behind the same front end, on LUNs no Windows host uses
    oversubscribed_linux(b, [b.luns_of(v)[1] for v in volumes_named(b, "n01_vol")[:2]], k)
    # node 2: Kahuna-bound, load spread over 4 volumes (no affinity finding)
    a2 = b.aggregate(n2, [(24, 0.30)])
    for i in range(4):
        b.volume(a2, f"n02_vol{i + 1}", 9000.0, lat_ms=(1.5, 2.0))
    # node 3: an expanded HDD aggregate with hot new disks
    _expanded(b, n3, "erp")
    # node 4: OLTP through a slow reconstruct (0.1 %/s so it lasts the demo)
    _oltp_rebuild(b, n4, k, phase, 0.1, "sql03")
    for n in (n1, n2, n3, n4):
        b.spare(n, "sas" if n in (n3, n4) else "ssd")
    return b
