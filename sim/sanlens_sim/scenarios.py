"""The scenarios: field cases as simulated estates (docs/simulator.md, "Scenarios").

Each scenario is a pure function ``(knobs, phase) -> Builder``. A scenario with
a time line (a rebuild that starts after 30 s) lists its phase start offsets;
the server integrates the counters across phases, so rates change without a
counter ever going backwards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from sanlens.model import parse_ontap_version
from sanlens_sim.builder import Builder
from sanlens_sim.world import HEALTHY_DOMAINS, Aggregate, Host, HostDisk, Lun, Node, Volume, World

CLUSTER = "sanlens-sim"
MODERN = (9, 12, 1)
LEGACY = (9, 8, 0)
ASA_R2 = (9, 16, 1)  # the first ONTAP release of the ASA r2 systems' storage-unit model

# Kahuna (serial domain) at 90 % of one core, 30 % average over 8 CPUs: Σ busy = 240.
KAHUNA_DOMAINS = {
    "kahuna": 90.0,
    "wafl_exempt": 60.0,
    "exempt": 20.0,
    "target": 20.0,
    "storage": 10.0,
    "raid": 10.0,
    "hostOS": 10.0,
    "nwk_exempt": 15.0,
    "protocol": 5.0,
}
# too-few-luns: 35 % average over 8 CPUs (Σ 280), no serial domain near saturation.
BUSY_PARALLEL_DOMAINS = {
    "kahuna": 25.0,
    "wafl_exempt": 110.0,
    "exempt": 30.0,
    "target": 50.0,
    "storage": 20.0,
    "raid": 15.0,
    "hostOS": 10.0,
    "nwk_exempt": 10.0,
    "protocol": 10.0,
}
QUIET_DOMAINS = {k: v / 3.0 for k, v in HEALTHY_DOMAINS.items()}


class KnobError(ValueError):
    """A bad scenario name or knob value (the control API answers 400 with this message)."""


@dataclass
class Knobs:
    nodes: int | None = None
    luns: int | None = None
    volumes: int | None = None
    disks: int | None = None
    hosts: int | None = None
    fa_ports: int | None = None
    ontap_version: str | None = None
    rebuild_after_s: float | None = None
    rebuild_rate_pct_s: float | None = None

    SCALE = ("nodes", "luns", "volumes", "disks", "hosts")

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Knobs:
        """Validated knobs; unknown names or bad values raise :class:`KnobError`."""
        unknown = sorted(set(raw) - set(cls.names()))
        if unknown:
            raise KnobError(f"unknown knob(s) {unknown}; known: {cls.names()}")
        out = cls()
        for name, value in raw.items():
            if value is None:
                continue
            if name == "ontap_version":
                parse_version(str(value))
                setattr(out, name, str(value))
            elif name in ("rebuild_after_s", "rebuild_rate_pct_s"):
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise KnobError(f"{name} must be a number >= 0, got {value!r}")
                if name == "rebuild_rate_pct_s" and value <= 0:
                    raise KnobError("rebuild_rate_pct_s must be > 0")
                setattr(out, name, float(value))
            else:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise KnobError(f"{name} must be an integer, got {value!r}")
                lo, hi = (1, 64) if name == "fa_ports" else (0, 1_000_000)
                if not lo <= value <= hi:
                    raise KnobError(f"{name} must be in {lo}..{hi}, got {value}")
                setattr(out, name, value)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) is not None}


def parse_version(text: str) -> tuple[int, int, int]:
    v = parse_ontap_version(text)
    if v is None or v.generation != 9:
        raise KnobError(f"ontap_version must look like 9.8.0, got {text!r}")
    return (v.generation, v.major, v.minor)


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    expected: tuple[str, ...]
    build: Callable[[Knobs, int], Builder]
    phases: Callable[[Knobs], list[float]] = lambda k: [0.0]
    version: tuple[int, int, int] = MODERN


def _builder(k: Knobs, default: tuple[int, int, int]) -> Builder:
    return Builder(CLUSTER, parse_version(k.ontap_version) if k.ontap_version else default)


def _balanced(b: Builder, node: Node, prefix: str, ops: float = 2500.0, vols: int = 4) -> Aggregate:
    """A healthy SSD aggregate: 12 disks ~25 % busy, ``vols`` equal volumes."""
    a = b.aggregate(node, [(12, 0.25)])
    for i in range(vols):
        b.volume(a, f"{prefix}_vol{i + 1}", ops, lat_ms=(0.6, 0.9))
    return a


def _healthy_host(b: Builder, name: str, vols: list[Volume]) -> Host:
    h = b.host(name)
    for v in vols:
        lun = b.luns_of(v)[0]
        b.host_disk(h, lun, (lun.io.read_lat_us / 1000 + 0.35, lun.io.write_lat_us / 1000 + 0.35), 0.85, 1.0)
    return h


def _vols(b: Builder, prefix: str) -> list[Volume]:
    return [v for v in b.volumes if v.name.startswith(prefix)]


# ------------------------------------------------------------------ healthy
def healthy(k: Knobs, phase: int) -> Builder:
    b = _builder(k, MODERN)
    for n in (b.node(), b.node()):
        tag = n.name.rsplit("-", 1)[-1]
        _balanced(b, n, f"n{tag}a")
        _balanced(b, n, f"n{tag}b")
        b.spare(n)
        b.spare(n)
    _healthy_host(b, "sql01", _vols(b, "n01a"))
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ san-oversubscription
def fa_latency_s(ports: int) -> float:
    """Host latency by front-end ports: 1.5 s at 2, 150 ms at 4, 3 ms at 6 (log-interpolated)."""
    if ports <= 4:
        return min(15.0, 1.5 * 10 ** (-(ports - 2) / 2))
    return max(0.003, 0.15 * 50 ** (-(ports - 4) / 2))


def _oversubscribed(
    b: Builder,
    aggr: Aggregate,
    k: Knobs,
    name: str = "sql01",
    *,
    protocol: str = "fcp",
    ops: float | None = None,
    read_share: float = 0.7,
    io_kb: float = 8.0,
) -> Volume:
    """A Windows host on two LUNs of ``aggr`` behind too few target ports (``fa_ports``): seconds of
    host latency, the disks 70 % idle, the LUNs at 1 ms in ONTAP."""
    ports = k.fa_ports or 2
    if protocol == "fcp":
        # the node's FC front end turns commands away while it is the bottleneck (fewer ports, more queue-full)
        b.fa_queue_full[aggr.node] = 0.0 if ports >= 6 else 120.0 / ports
    per_disk = 300.0 if ports < 6 else 1200.0
    v = b.volume(
        aggr,
        f"{name}_data",
        2 * per_disk if ops is None else ops,
        read_share=read_share,
        lat_ms=(1.0, 1.0),
        io_kb=io_kb,
        protocol=protocol,
    )
    lat_ms = 1000.0 * fa_latency_s(ports)
    h = b.host(name)
    for lun in b.luns_of(v):
        b.host_disk(h, lun, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)
    return v


def _oversubscribed_linux(b: Builder, luns: list[Lun], k: Knobs, name: str = "ora01") -> None:
    """A Linux host behind the same over-subscribed front end: dm-multipath maps on two paths each."""
    lat_ms = 1000.0 * fa_latency_s(k.fa_ports or 2)
    h = b.linux_host(name)
    for lun in luns:
        b.linux_disk(h, lun, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)


def san_oversubscription(k: Knobs, phase: int) -> Builder:
    b = _builder(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node(QUIET_DOMAINS)
    b.lifs_per_node = max(1, math.ceil((k.fa_ports or 2) / 2))
    hdd = b.aggregate(n1, [(24, 0.05), (24, 0.05)], disk_type="sas", name="aggr_sas1")
    _oversubscribed(b, hdd, k)
    apps = [b.volume(hdd, f"app{i + 1}", 200.0, lat_ms=(1.0, 1.0)) for i in range(3)]
    _oversubscribed_linux(b, b.luns_of(apps[0]), k)
    _balanced(b, n2, "n02a", ops=1500.0)
    b.spare(n1, "sas")
    b.spare(n2)
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ too-few-luns
def _hot_lun(b: Builder, aggr: Aggregate, name: str, protocol: str = "fcp") -> Lun:
    """A volume with one LUN at 30K IOPS, 35 % writes, 0.3 ms in ONTAP."""
    v = b.volume(aggr, f"{name}_db", 30000.0, read_share=0.65, lat_ms=(0.3, 0.3), luns=1, protocol=protocol)
    return b.luns_of(v)[0]


def _queue_limited(b: Builder, host: Host, lun: Lun) -> HostDisk:
    """The host's only disk on ``lun``, its queue full: 31 of depth 32 x 1 path.

    Host 1.6 ms vs ONTAP 0.3 ms so that host_queue_limited's R_host >= 2 S_array and
    R_host - S_array >= 1 ms hold by a clear margin. (Little's law would put 48 IOs in flight at
    30K x 1.6 ms: the extra wait in the host stack above the LUN queue.) On Linux: one
    dm-multipath map on one path."""
    if host.os == "linux":
        return b.linux_disk(host, lun, (1.6, 1.6), idle=0.02, queue=31.0, paths=1)
    return b.host_disk(host, lun, (1.6, 1.6), idle=0.02, queue=31.0, paths=1)


def too_few_luns(k: Knobs, phase: int) -> Builder:
    b = _builder(k, LEGACY)
    n1, n2 = b.node(BUSY_PARALLEL_DOMAINS), b.node()
    a = b.aggregate(n1, [(24, 0.30)])
    # one LUN at 30K IOPS per host; 3 other volumes keep the aggregate below 80 % on one volume
    # (each hot volume stays under 80 % of the aggregate's ops)
    sql, ora = _hot_lun(b, a, "sql01"), _hot_lun(b, a, "ora01")
    for i in range(3):
        b.volume(a, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    _balanced(b, n2, "n02a")
    _queue_limited(b, b.linux_host("ora01"), ora)
    _queue_limited(b, b.host("sql01"), sql)
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ iscsi
ISCSI_SPEED_GBPS = 10
# The over-subscribed host's large reads (backup, ETL) at 10,000 IOPS, 90 % reads of 256 KiB:
# 2.36 GB/s sent over its node's two 10 GbE iSCSI ports, each at 94 % of line rate.
ISCSI_OPS, ISCSI_READ_SHARE, ISCSI_IO_KB = 10000.0, 0.9, 256.0


def iscsi(k: Knobs, phase: int) -> Builder:
    """iSCSI on a unified cluster: sql01 over-subscribed behind two 10 GbE target ports near line
    rate (``fa_ports``: iSCSI ports per node), sql02 queue-limited on one hot LUN, sql03 healthy on FC."""
    b = _builder(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node(BUSY_PARALLEL_DOMAINS)
    b.protocol_lifs["iscsi"] = k.fa_ports or 2
    b.eth_speed_gbps = ISCSI_SPEED_GBPS
    a1 = b.aggregate(n1, [(12, 0.15)])
    _oversubscribed(
        b, a1, k, "sql01", protocol="iscsi", ops=ISCSI_OPS, read_share=ISCSI_READ_SHARE, io_kb=ISCSI_IO_KB
    )
    a2 = b.aggregate(n2, [(24, 0.30)])
    _queue_limited(b, b.host("sql02"), _hot_lun(b, a2, "sql02", protocol="iscsi"))
    for i in range(3):
        b.volume(a2, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    _balanced(b, n1, "n01a", ops=1500.0)
    _healthy_host(b, "sql03", _vols(b, "n01a"))
    b.spare(n1)
    b.spare(n2)
    return b


# ------------------------------------------------------------------ nvme-tcp
def nvme_tcp(k: Knobs, phase: int) -> Builder:
    """NVMe-oF on a unified cluster, Linux hosts under native NVMe multipath: ora01 over-subscribed
    on two NVMe/TCP namespaces behind its node's two 10 GbE ports at line rate (large reads, as the
    iSCSI case), ora02 queue-limited on one hot namespace; two NVMe/FC namespaces no polled host uses."""
    b = _builder(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node()
    b.eth_speed_gbps = ISCSI_SPEED_GBPS
    b.protocol_lifs["nvme_tcp"] = k.fa_ports or 2
    a1 = b.aggregate(n1, [(12, 0.10)])
    v = b.volume(
        a1, "ora01_data", ISCSI_OPS, read_share=ISCSI_READ_SHARE, lat_ms=(1.0, 1.0), io_kb=ISCSI_IO_KB,
        protocol="nvme_tcp",
    )  # fmt: skip
    lat_ms = 1000.0 * fa_latency_s(k.fa_ports or 2)
    ora01 = b.linux_host("ora01")
    for ns in b.luns_of(v):
        b.linux_nvme_disk(ora01, ns, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)
    a2 = b.aggregate(n2, [(24, 0.30)])
    hot = _hot_lun(b, a2, "ora02", protocol="nvme_tcp")
    b.linux_nvme_disk(b.linux_host("ora02"), hot, (1.6, 1.6), idle=0.02, queue=31.0, paths=1)
    for i in range(3):
        b.volume(a2, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    b.volume(a2, "esx_nvmefc", 6000.0, lat_ms=(0.3, 0.35), luns=2, io_kb=32.0, protocol="nvme_fc")
    b.spare(n1)
    b.spare(n2)
    return b


# ------------------------------------------------------------------ asa-r2
def asa_r2(k: Knobs, phase: int) -> Builder:
    """An ASA r2 system (ONTAP 9.16.1, two HA pairs, one availability zone each) on FC: sql01
    over-subscribed behind too few front-end ports, sql02 queue-limited on one hot LUN; two
    NVMe/TCP namespaces no polled host uses."""
    b = _builder(k, ASA_R2)
    b.personality = "asa-r2"
    n1, n2, n3, n4 = (
        b.node(QUIET_DOMAINS, model="ASA-A70"),
        b.node(model="ASA-A70"),
        b.node(BUSY_PARALLEL_DOMAINS, model="ASA-A70"),
        b.node(model="ASA-A70"),
    )
    b.lifs_per_node = max(1, math.ceil((k.fa_ports or 2) / 2))
    a1 = b.aggregate(n1, [(12, 0.10)])
    _oversubscribed(b, a1, k, "sql01")
    a3 = b.aggregate(n3, [(24, 0.30)])
    _queue_limited(b, b.host("sql02"), _hot_lun(b, a3, "sql02"))
    for i in range(3):
        b.volume(a3, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    for n in (n2, n4):
        _balanced(b, n, f"n{n.name.rsplit('-', 1)[-1]}a", ops=1500.0, vols=2)
    _healthy_host(b, "sql03", _vols(b, "n02a"))
    # NVMe/TCP namespaces of hosts sanlens does not poll (storage units of type namespace)
    b.volume(b.aggregates[-1], "esx_nvme", 2000.0, lat_ms=(0.3, 0.35), luns=2, protocol="nvme_tcp")
    return b


# ------------------------------------------------------------------ kahuna-bottleneck
def kahuna_bottleneck(k: Knobs, phase: int) -> Builder:
    b = _builder(k, MODERN)
    n1, n2 = b.node(KAHUNA_DOMAINS), b.node()
    a1 = b.aggregate(n1, [(24, 0.30)])
    hot = b.volume(a1, "oltp_hot", 38000.0, lat_ms=(2.0, 2.5), luns=4)
    b.volume(a1, "small1", 1000.0, lat_ms=(1.0, 1.2))
    b.volume(a1, "small2", 1000.0, lat_ms=(1.0, 1.2))  # oltp_hot = 95 % of aggr ops
    a2 = b.aggregate(n1, [(12, 0.20)])
    b.volume(a2, "reports", 4000.0, lat_ms=(1.0, 1.5))  # one volume per aggregate
    _balanced(b, n2, "n02a")
    h = b.host("sql01")
    for lun in b.luns_of(hot)[:2]:
        b.host_disk(h, lun, (2.5, 3.0), idle=0.30, queue=4.0)
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ aggregate-expansion
def _expanded(b: Builder, node: Node, prefix: str) -> list[Volume]:
    """HDD aggregate: 46 old disks (rg0, rg1) ~25 % busy, 24 new disks (rg2, rg3) ~75 % busy."""
    a = b.aggregate(
        node, [(23, 0.25), (23, 0.25), (12, 0.75), (12, 0.75)], disk_type="sas", name="aggr_sas_exp"
    )
    return [b.volume(a, f"{prefix}{i + 1}", 1200.0, lat_ms=(5.0, 6.0)) for i in range(4)]


def aggregate_expansion(k: Knobs, phase: int) -> Builder:
    b = _builder(k, MODERN)
    n1, n2 = b.node(), b.node()
    vols = _expanded(b, n1, "erp")
    _balanced(b, n2, "n02a")
    b.spare(n1, "sas")
    h = b.host("sql01")
    for v in vols[:2]:
        b.host_disk(h, b.luns_of(v)[0], (6.0, 7.0), idle=0.55, queue=1.0)
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ rebuild-during-oltp
def _rebuild_timeline(k: Knobs, default_rate: float) -> tuple[float, float]:
    after = 30.0 if k.rebuild_after_s is None else k.rebuild_after_s
    rate = k.rebuild_rate_pct_s or default_rate
    return after, rate


def _rebuild_phases(default_rate: float) -> Callable[[Knobs], list[float]]:
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
    b = _builder(k, MODERN)
    n1, n2 = b.node(), b.node()
    _oltp_rebuild(b, n1, k, phase, 0.5, "sql01")
    _balanced(b, n2, "n02a")
    b.spare(n2)
    _healthy_host(b, "sql02", _vols(b, "n02a"))
    return b


# ------------------------------------------------------------------ mixed (the demo)
def mixed(k: Knobs, phase: int) -> Builder:
    b = _builder(k, MODERN)
    n1, n2, n3, n4 = b.node(), b.node(KAHUNA_DOMAINS), b.node(), b.node()
    # node 1: sql01 oversubscribed in the fabric (array idle), sql02 healthy beside it
    a1 = b.aggregate(n1, [(12, 0.25)])
    _oversubscribed(b, a1, k, "sql01")
    for i in range(3):
        b.volume(a1, f"n01_vol{i + 1}", 2500.0, lat_ms=(0.6, 0.9))
    _healthy_host(b, "sql02", _vols(b, "n01_vol"))
    # quiet iSCSI LUNs and NVMe/TCP namespaces beside them (no host judged): every front end on the page
    b.volume(a1, "n01_iscsi", 600.0, lat_ms=(0.5, 0.7), protocol="iscsi")
    b.volume(a1, "n01_nvme", 600.0, lat_ms=(0.3, 0.4), protocol="nvme_tcp")
    # ora01 (Linux, node_exporter) behind the same front end, on LUNs no Windows host uses
    _oversubscribed_linux(b, [b.luns_of(v)[1] for v in _vols(b, "n01_vol")[:2]], k)
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


# ------------------------------------------------------------------ path-faults
def path_faults(k: Knobs, phase: int) -> Builder:
    """The healthy estate with one of each SAN path fault, each on its own subject."""
    b = _builder(k, MODERN)
    n1, n2 = b.node(), b.node()
    _balanced(b, n1, "n01a")
    _balanced(b, n2, "n02a")
    # sql01 disk 1 runs on 1 of its 2 paths (configure the host with paths: 2)
    h = b.host("sql01")
    for i, v in enumerate(_vols(b, "n01a")):
        lun = b.luns_of(v)[0]
        b.host_disk(h, lun, (0.9, 1.2), 0.85, 1.0, paths=1 if i == 0 else 2)
    # ora01 (Linux) has two maps on two path devices each; the first map's second path device is lost
    ora = b.linux_host("ora01")
    for i, v in enumerate(_vols(b, "n01a")[:2]):
        b.linux_disk(ora, b.luns_of(v)[1], (0.9, 1.2), 0.85, 1.0, paths=2, failed=1 if i == 0 else 0)
    # a LUN ONTAP took offline, and a thin LUN in a volume 97 % full
    b.luns_of(_vols(b, "n02a")[0])[1].state = "offline"
    b.volume(b.aggregates[0], "full_vol", 500.0).used_ratio = 0.97
    # node 2's second FC target port lost its link
    b.down_ports.add((n2.name, "0d"))
    # a failed disk, and an aggregate degraded with no spare of its type to rebuild onto
    broken = b.spare(n1)
    broken.container_type = broken.state = "broken"
    hdd = b.aggregate(n2, [(14, 0.2)], disk_type="sas", name="aggr_sas_nospare")
    hdd.raid_groups[0].degraded = True
    b.volume(hdd, "archive", 200.0, lat_ms=(4.0, 5.0))
    b.spare(n2)
    return b


# ------------------------------------------------------------------ deep-queue
# Outstanding reads per disk (Little's law N = X x R): 1,600/s x 10 ms, 3,200/s x 20 ms, 5,000/s x 40 ms.
DEEP_QUEUE_READS: tuple[tuple[float, float], ...] = ((1600.0, 10.0), (3200.0, 20.0), (5000.0, 40.0))
DEEP_QUEUE_WRITE_SHARE = 0.2
DEEP_QUEUE_WRITE_MS = 2.0


def deep_queue(k: Knobs, phase: int) -> Builder:
    """Host disks 16, 64 and 200 reads deep on ALUA LUNs (2 Active/Optimized + 2 Active/Unoptimized).

    The 32-bit Avg. Disk sec/Read numerator grows N seconds per second: it wraps every 26.8 s,
    6.7 s and 2.1 s, so only the 64-bit % Disk Read Time integral gives the latency. The array
    is as slow as the host sees it (host - ONTAP = 0.5 ms), so the latency is the array's.
    """
    b = _builder(k, MODERN)
    n1, n2 = b.node(), b.node()
    a = b.aggregate(n1, [(24, 0.45)])
    h = b.host("sql01")
    for i, (reads, read_ms) in enumerate(DEEP_QUEUE_READS):
        ops = reads / (1.0 - DEEP_QUEUE_WRITE_SHARE)
        v = b.volume(
            a,
            f"deep{i + 1}",
            ops,
            read_share=1.0 - DEEP_QUEUE_WRITE_SHARE,
            lat_ms=(read_ms - 0.5, DEEP_QUEUE_WRITE_MS - 0.5),
            luns=1,
        )
        n = reads * read_ms / 1000.0
        b.host_disk(h, b.luns_of(v)[0], (read_ms, DEEP_QUEUE_WRITE_MS), 0.0, n, paths=4, optimized_paths=2)
    _balanced(b, n2, "n02a")
    return b


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "healthy", "low latency, moderate load, balanced disks, 4 volumes per aggregate", (), healthy
        ),
        Scenario(
            "san-oversubscription",
            "host latency from too few front-end ports (fa_ports 2|4|6); array idle; a Windows and a "
            "Linux host",
            ("san_oversubscription", "latency_slo"),
            san_oversubscription,
        ),
        Scenario(
            "too-few-luns",
            "one LUN per host (Windows, Linux) at 30K IOPS, host queue full at depth 32 x 1 path (ONTAP "
            "9.8 by default)",
            ("host_queue_limited", "lun_iops_ceiling"),
            too_few_luns,
            version=LEGACY,
        ),
        Scenario(
            "kahuna-bottleneck",
            "Kahuna at 90 % of a core, CPU 30 %, one hot volume per aggregate",
            ("cpu_domain_serial_bottleneck", "volume_affinity_concentration"),
            kahuna_bottleneck,
        ),
        Scenario(
            "aggregate-expansion",
            "HDD aggregate: 46 old disks 25 % busy, 24 new disks 75 % busy",
            ("disk_busy_imbalance",),
            aggregate_expansion,
        ),
        Scenario(
            "rebuild-during-oltp",
            "OLTP at 12 ms, then a RAID reconstruct (0.5 %/s) at about 60 ms",
            ("background_operation_impact", "latency_slo"),
            rebuild_during_oltp,
            _rebuild_phases(0.5),
        ),
        Scenario(
            "mixed",
            "the demo: oversubscription, Kahuna, disk imbalance and a rebuild at once, plus healthy subjects",
            (
                "san_oversubscription",
                "cpu_domain_serial_bottleneck",
                "disk_busy_imbalance",
                "background_operation_impact",
                "latency_slo",
            ),
            mixed,
            _rebuild_phases(0.1),
        ),
        Scenario(
            "path-faults",
            "a host disk on 1 of 2 paths (Windows MPIO, and a Linux path device transport-offline), an "
            "offline LUN, a thin LUN in a full volume, an FC port down, a failed disk and an aggregate "
            "degraded without a spare",
            ("host_path_loss", "lun_not_online", "fc_port_down", "disk_failed", "aggregate_degraded"),
            path_faults,
        ),
        Scenario(
            "iscsi",
            "iSCSI: a Windows host over-subscribed behind two 10 GbE target ports near line rate "
            "(fa_ports: iSCSI ports per node), another queue-limited on one LUN",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            iscsi,
        ),
        Scenario(
            "nvme-tcp",
            "NVMe-oF: a Linux host over-subscribed on NVMe/TCP namespaces behind two 10 GbE ports near "
            "line rate, another queue-limited on one namespace; NVMe/FC namespaces beside them",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            nvme_tcp,
        ),
        Scenario(
            "asa-r2",
            "an ASA r2 system (ONTAP 9.16.1, keyperf statistics only, two availability zones) on FC: a "
            "Windows host over-subscribed, another queue-limited",
            ("san_oversubscription", "host_queue_limited", "latency_slo"),
            asa_r2,
            version=ASA_R2,
        ),
        Scenario(
            "deep-queue",
            "host disks 16, 64 and 200 reads deep (10, 20, 40 ms) on ALUA LUNs: 2 optimized + 2 "
            "non-optimized paths each",
            ("latency_slo",),
            deep_queue,
        ),
    )
}


def get(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise KnobError(f"unknown scenario {name!r}; known: {sorted(SCENARIOS)}") from None


def build_world(scenario: Scenario, knobs: Knobs, phase: int) -> World:
    b = scenario.build(knobs, phase)
    b.fill(knobs.nodes, knobs.luns, knobs.volumes, knobs.disks, knobs.hosts)
    return b.build()
