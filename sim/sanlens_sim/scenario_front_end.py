"""The scenarios where hosts wait on the SAN rather than the array: too few front-end ports (FC,
iSCSI, NVMe/TCP, ASA r2), a host queue full on one LUN, lost paths and offline objects, deep queues.
"""

from __future__ import annotations

import math

from sanlens_sim.builder import Builder
from sanlens_sim.scenario_base import (
    ASA_R2,
    BUSY_PARALLEL_DOMAINS,
    CLUSTER,
    LEGACY,
    MODERN,
    QUIET_DOMAINS,
    Knobs,
    balanced,
    builder_for,
    healthy_host,
    parse_version,
    volumes_named,
)
from sanlens_sim.world import Aggregate, Host, HostDisk, Lun, Volume, World


# ------------------------------------------------------------------ san-oversubscription
def fa_latency_s(ports: int) -> float:
    """Host latency by front-end ports: 1.5 s at 2, 150 ms at 4, 3 ms at 6 (log-interpolated)."""
    if ports <= 4:
        return min(15.0, 1.5 * 10 ** (-(ports - 2) / 2))
    return max(0.003, 0.15 * 50 ** (-(ports - 4) / 2))


def oversubscribed(
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


def oversubscribed_linux(b: Builder, luns: list[Lun], k: Knobs, name: str = "ora01") -> None:
    """A Linux host behind the same over-subscribed front end: dm-multipath maps on two paths each."""
    lat_ms = 1000.0 * fa_latency_s(k.fa_ports or 2)
    h = b.linux_host(name)
    for lun in luns:
        b.linux_disk(h, lun, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)


def san_oversubscription(k: Knobs, phase: int) -> Builder:
    b = builder_for(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node(QUIET_DOMAINS)
    b.lifs_per_node = max(1, math.ceil((k.fa_ports or 2) / 2))
    hdd = b.aggregate(n1, [(24, 0.05), (24, 0.05)], disk_type="sas", name="aggr_sas1")
    oversubscribed(b, hdd, k)
    apps = [b.volume(hdd, f"app{i + 1}", 200.0, lat_ms=(1.0, 1.0)) for i in range(3)]
    oversubscribed_linux(b, b.luns_of(apps[0]), k)
    balanced(b, n2, "n02a", ops=1500.0)
    b.spare(n1, "sas")
    b.spare(n2)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
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
    b = builder_for(k, LEGACY)
    n1, n2 = b.node(BUSY_PARALLEL_DOMAINS), b.node()
    a = b.aggregate(n1, [(24, 0.30)])
    # one LUN at 30K IOPS per host; 3 other volumes keep the aggregate below 80 % on one volume
    # (each hot volume stays under 80 % of the aggregate's ops)
    sql, ora = _hot_lun(b, a, "sql01"), _hot_lun(b, a, "ora01")
    for i in range(3):
        b.volume(a, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    balanced(b, n2, "n02a")
    _queue_limited(b, b.linux_host("ora01"), ora)
    _queue_limited(b, b.host("sql01"), sql)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    return b


# ------------------------------------------------------------------ iscsi
ISCSI_SPEED_GBPS = 10
# The over-subscribed host's large reads (backup, ETL) at 10,000 IOPS, 90 % reads of 256 KiB:
# 2.36 GB/s sent over its node's two 10 GbE iSCSI ports, each at 94 % of line rate.
ISCSI_OPS, ISCSI_READ_SHARE, ISCSI_IO_KB = 10000.0, 0.9, 256.0


def iscsi(k: Knobs, phase: int) -> Builder:
    """iSCSI on a unified cluster: sql01 over-subscribed behind two 10 GbE target ports near line
    rate (``fa_ports``: iSCSI ports per node), sql02 queue-limited on one hot LUN, sql03 healthy on FC."""
    b = builder_for(k, MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node(BUSY_PARALLEL_DOMAINS)
    b.protocol_lifs["iscsi"] = k.fa_ports or 2
    b.eth_speed_gbps = ISCSI_SPEED_GBPS
    a1 = b.aggregate(n1, [(12, 0.15)])
    oversubscribed(
        b, a1, k, "sql01", protocol="iscsi", ops=ISCSI_OPS, read_share=ISCSI_READ_SHARE, io_kb=ISCSI_IO_KB
    )
    a2 = b.aggregate(n2, [(24, 0.30)])
    _queue_limited(b, b.host("sql02"), _hot_lun(b, a2, "sql02", protocol="iscsi"))
    for i in range(3):
        b.volume(a2, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    balanced(b, n1, "n01a", ops=1500.0)
    healthy_host(b, "sql03", volumes_named(b, "n01a"))
    b.spare(n1)
    b.spare(n2)
    return b


# ------------------------------------------------------------------ nvme-tcp
def nvme_tcp(k: Knobs, phase: int) -> Builder:
    """NVMe-oF on a unified cluster, Linux hosts under native NVMe multipath: ora01 over-subscribed
    on two NVMe/TCP namespaces behind its node's two 10 GbE ports at line rate (large reads, as the
    iSCSI case), ora02 queue-limited on one hot namespace; two NVMe/FC namespaces no polled host uses."""
    b = builder_for(k, MODERN)
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


# ------------------------------------------------------------------ shared-port
SHARED_PORT = "e0e"
SHARED_VLAN = f"{SHARED_PORT}-100"
# large reads (256,000 bytes each): 700 MB/s through the iSCSI LIF, 600 MB/s through the NVMe/TCP LIF,
# together 1.04 of the 10 GbE port's 1,250 MB/s, while each LIF alone is at 0.56 and 0.48 of it
SHARED_IO_KB = 250.0
SHARED_ISCSI_OPS = 700e6 / (SHARED_IO_KB * 1024)
SHARED_NVME_OPS = 600e6 / (SHARED_IO_KB * 1024)


class SharedPortBuilder(Builder):
    """A cluster whose nodes carry iSCSI and NVMe/TCP over one physical port each, as sites do with VLANs:
    the iSCSI LIF on the VLAN ``e0e-100``, the NVMe/TCP LIF on ``e0e`` itself."""

    def build(self) -> World:
        w = super().build()
        for x in w.ip_lifs:
            x.port = SHARED_VLAN if x.protocol == "iscsi" else SHARED_PORT
        return w


def shared_port(k: Knobs, phase: int) -> Builder:
    """iSCSI and NVMe/TCP on one 10 GbE port of node 1 (one LIF each): sql01 reads 700 MB/s of iSCSI
    LUNs, ora01 600 MB/s of NVMe/TCP namespaces, both hosts waiting on the port, not on the array."""
    b = SharedPortBuilder(CLUSTER, parse_version(k.ontap_version) if k.ontap_version else MODERN)
    n1, n2 = b.node(QUIET_DOMAINS), b.node()
    b.eth_speed_gbps = ISCSI_SPEED_GBPS
    b.protocol_lifs.update(iscsi=1, nvme_tcp=1)
    a1 = b.aggregate(n1, [(12, 0.10)])
    lat_ms = 1000.0 * fa_latency_s(2)
    sql = b.volume(
        a1, "sql01_data", SHARED_ISCSI_OPS, read_share=1.0, lat_ms=(1.0, 1.0), io_kb=SHARED_IO_KB,
        protocol="iscsi",
    )  # fmt: skip
    sql01 = b.host("sql01")
    for lun in b.luns_of(sql):
        b.host_disk(sql01, lun, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)
    ora = b.volume(
        a1, "ora01_data", SHARED_NVME_OPS, read_share=1.0, lat_ms=(1.0, 1.0), io_kb=SHARED_IO_KB,
        protocol="nvme_tcp",
    )  # fmt: skip
    ora01 = b.linux_host("ora01")
    for ns in b.luns_of(ora):
        b.linux_nvme_disk(ora01, ns, (lat_ms, lat_ms), idle=0.70, queue=2.0, paths=2)
    balanced(b, n2, "n02a", ops=1500.0)
    healthy_host(b, "sql02", volumes_named(b, "n02a"))
    b.spare(n1)
    b.spare(n2)
    return b


# ------------------------------------------------------------------ asa-r2
def asa_r2(k: Knobs, phase: int) -> Builder:
    """An ASA r2 system (ONTAP 9.16.1, two HA pairs, one availability zone each) on FC: sql01
    over-subscribed behind too few front-end ports, sql02 queue-limited on one hot LUN; two
    NVMe/TCP namespaces no polled host uses."""
    b = builder_for(k, ASA_R2)
    b.personality = "asa-r2"
    n1, n2, n3, n4 = (
        b.node(QUIET_DOMAINS, model="ASA-A70"),
        b.node(model="ASA-A70"),
        b.node(BUSY_PARALLEL_DOMAINS, model="ASA-A70"),
        b.node(model="ASA-A70"),
    )
    b.lifs_per_node = max(1, math.ceil((k.fa_ports or 2) / 2))
    a1 = b.aggregate(n1, [(12, 0.10)])
    oversubscribed(b, a1, k, "sql01")
    a3 = b.aggregate(n3, [(24, 0.30)])
    _queue_limited(b, b.host("sql02"), _hot_lun(b, a3, "sql02"))
    for i in range(3):
        b.volume(a3, f"app{i + 1}", 3000.0, lat_ms=(0.4, 0.5))
    for n in (n2, n4):
        balanced(b, n, f"n{n.name.rsplit('-', 1)[-1]}a", ops=1500.0, vols=2)
    healthy_host(b, "sql03", volumes_named(b, "n02a"))
    # NVMe/TCP namespaces of hosts sanlens does not poll (storage units of type namespace)
    b.volume(b.aggregates[-1], "esx_nvme", 2000.0, lat_ms=(0.3, 0.35), luns=2, protocol="nvme_tcp")
    return b


# ------------------------------------------------------------------ path-faults
def path_faults(k: Knobs, phase: int) -> Builder:
    """The healthy estate with one of each SAN path fault, each on its own subject."""
    b = builder_for(k, MODERN)
    n1, n2 = b.node(), b.node()
    balanced(b, n1, "n01a")
    balanced(b, n2, "n02a")
    # sql01 disk 1 runs on 1 of its 2 paths (configure the host with paths: 2)
    h = b.host("sql01")
    for i, v in enumerate(volumes_named(b, "n01a")):
        lun = b.luns_of(v)[0]
        b.host_disk(h, lun, (0.9, 1.2), 0.85, 1.0, paths=1 if i == 0 else 2)
    # ora01 (Linux) has two maps on two path devices each; the first map's second path device is lost
    ora = b.linux_host("ora01")
    for i, v in enumerate(volumes_named(b, "n01a")[:2]):
        b.linux_disk(ora, b.luns_of(v)[1], (0.9, 1.2), 0.85, 1.0, paths=2, failed=1 if i == 0 else 0)
    # a LUN ONTAP took offline, and a thin LUN in a volume 97 % full
    b.luns_of(volumes_named(b, "n02a")[0])[1].state = "offline"
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
    b = builder_for(k, MODERN)
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
    balanced(b, n2, "n02a")
    return b
