"""The simulated estate: one ONTAP cluster and its Windows hosts, with per-object rates.

These are the objects and their deterministic ids; :mod:`sanlens_sim.builder`
assembles a consistent :class:`World` from them.
"""

from __future__ import annotations

import functools
import hashlib
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

# ONTAP's domain_busy labels in the order ONTAP 9.x lists them (readers must not rely on it).
DOMAINS = (
    "idle",
    "kahuna",
    "storage",
    "exempt",
    "none",
    "raid",
    "raid_exempt",
    "xor_ex",
    "target",
    "dnscache",
    "cifs",
    "wafl_exempt",
    "wafl_xcleaner",
    "sm_exempt",
    "cluster",
    "protocol",
    "nwk_exclusive",
    "nwk_exempt",
    "nwk_legacy",
    "hostOS",
    "ssan_exempt",
)

# Domains whose work runs on one core at a time: their limit is one core, not the node
# (Kahuna/Waffinity serial work and the classic single-threaded domains).
SERIAL_DOMAINS = frozenset({"kahuna", "kahuna_legacy", "storage", "raid", "target", "cifs", "nwk_legacy"})

# Busy percent of one core per domain (idle is derived: cpus*100 - sum).
HEALTHY_DOMAINS = {
    "kahuna": 12.0,
    "storage": 10.0,
    "exempt": 18.0,
    "raid": 8.0,
    "raid_exempt": 6.0,
    "target": 14.0,
    "wafl_exempt": 55.0,
    "wafl_xcleaner": 4.0,
    "cluster": 3.0,
    "protocol": 5.0,
    "nwk_exempt": 8.0,
    "hostOS": 7.0,
}  # sum 150 -> 18.75 % average on 8 CPUs

# IOPS a disk serves at 100 % busy (small random IO), by ONTAP disk type.
DISK_IOPS = {"ssd": 20000.0, "sas": 180.0, "fsas": 90.0}
DISK_RPM = {"ssd": 0, "sas": 10000, "fsas": 7200}


FC_PORT_NAMES = ("0c", "0d", "0e", "0f", "1a", "1b", "1c", "1d")
ETHERNET_PORT_NAMES = ("e0e", "e0f", "e0g", "e0h", "e1a", "e1b", "e1c", "e1d")
SAN_PROTOCOLS = ("fcp", "iscsi", "nvme_tcp", "nvme_fc")
ETHERNET_PROTOCOLS = frozenset({"iscsi", "nvme_tcp"})


@functools.lru_cache(maxsize=65536)
def stable_uuid(*parts: str) -> str:
    return str(_uuid.uuid5(_uuid.NAMESPACE_URL, "sanlens-sim/" + "/".join(parts)))


def unit_hash(*parts: str) -> float:
    """A deterministic number in [0, 1) for per-object spread."""
    h = hashlib.blake2b("/".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


def lun_serial(*parts: str) -> str:
    """A 12-character ONTAP-style LUN serial, deterministic."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    h = hashlib.blake2b("/".join(parts).encode(), digest_size=12).digest()
    return "".join(alphabet[b % len(alphabet)] for b in h)


@dataclass
class Node:
    name: str
    uuid: str
    serial: str
    model: str
    cpus: int
    domains: dict[str, float]
    total_ops: float = 0.0
    read_ops: float = 0.0
    write_ops: float = 0.0

    @property
    def busy_pct_cores(self) -> float:
        """Σ busy domains, percent of one core."""
        return sum(v for k, v in self.domains.items() if k != "idle")

    @property
    def cpu_busy(self) -> float:
        """Average CPU busy, 0..1."""
        return min(1.0, self.busy_pct_cores / (100.0 * self.cpus))

    @property
    def busiest_serial_domain(self) -> float:
        """The busiest single-threaded domain, 0..1 of the one core it can use."""
        return max((v for k, v in self.domains.items() if k in SERIAL_DOMAINS), default=0.0) / 100.0

    @property
    def ontap_cpu_busy(self) -> float:
        """ONTAP's ``cpu_busy``, 0..1: the node is as busy as its most heavily used domain or its
        average, whichever is higher (a serial domain maxes out on one core, the rest on all of them)."""
        return min(1.0, max(self.cpu_busy, self.busiest_serial_domain))


@dataclass
class Disk:
    name: str
    uid: str
    node: str
    type: str
    aggregate: str = ""
    raid_group: str = ""
    position: str = "data"
    busy: float = 0.0  # 0..1
    state: str = "present"
    container_type: str = "aggregate"

    @property
    def rpm(self) -> int:
        return DISK_RPM.get(self.type, 0)

    @property
    def transfers(self) -> float:
        return self.busy * DISK_IOPS.get(self.type, 1000.0)


@dataclass
class RaidGroup:
    name: str
    disks: list[Disk]
    reconstruct: tuple[float, float] | None = None  # (start offset s, percent per s)
    degraded: bool = False  # a member failed and no spare rebuilds it


@dataclass
class Aggregate:
    name: str
    uuid: str
    node: str
    disk_type: str
    raid_type: str
    raid_groups: list[RaidGroup]
    state: str = "online"

    @property
    def disks(self) -> list[Disk]:
        return [d for rg in self.raid_groups for d in rg.disks]


@dataclass
class IoRates:
    """Per-second rates of a LUN, volume or LIF; latencies in microseconds per op."""

    read_ops: float = 0.0
    write_ops: float = 0.0
    other_ops: float = 0.0
    read_lat_us: float = 0.0
    write_lat_us: float = 0.0
    other_lat_us: float = 0.0
    read_bytes: float = 0.0
    write_bytes: float = 0.0

    @property
    def total_ops(self) -> float:
        return self.read_ops + self.write_ops + self.other_ops

    def add(self, o: IoRates) -> None:
        """Ops-weighted merge (latencies stay per op)."""
        for op in ("read", "write", "other"):
            a, b = getattr(self, f"{op}_ops"), getattr(o, f"{op}_ops")
            if a + b > 0:
                lat = (a * getattr(self, f"{op}_lat_us") + b * getattr(o, f"{op}_lat_us")) / (a + b)
                setattr(self, f"{op}_lat_us", lat)
            setattr(self, f"{op}_ops", a + b)
        self.read_bytes += o.read_bytes
        self.write_bytes += o.write_bytes


@dataclass
class Volume:
    name: str
    uuid: str
    svm: str
    aggregate: str
    node: str
    io: IoRates = field(default_factory=IoRates)
    moving: tuple[str, float] | None = None  # (destination aggregate, percent)
    size_bytes: float = 2.0**40
    used_ratio: float = 0.45
    qos_policy: str = ""  # the QoS policy group set on the volume ('' : its autovolume workload)


@dataclass
class Lun:
    path: str
    uuid: str
    serial: str
    svm: str
    volume: str
    node: str
    io: IoRates = field(default_factory=IoRates)
    os_type: str = "windows_2008"
    state: str = "online"  # status.state
    thin: bool = True  # no space guarantee, as most SAN LUNs on AFF are
    protocol: str = "fcp"  # fcp | iscsi | nvme_tcp | nvme_fc: how its hosts reach it
    qos_policy: str = ""  # a policy group set on the LUN itself: it is then a workload of its own
    # Time the SCSI layer counts in the LUN's latency and WAFL (the volume) does not, per op: the
    # QoS ceiling's delay, and the share of ops that arrive through another node's LIF
    # (``remote_node``) times the cluster interconnect's time per such op.
    qos_max_us: float = 0.0
    qos_min_us: float = 0.0  # other workloads' QoS floors taking this one's turn
    remote_node: str = ""
    remote_share: float = 0.0
    interconnect_us: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.svm}:{self.path}"

    @property
    def front_us(self) -> float:
        """Per op, the time in the LUN's latency that the volume's (WAFL's) latency does not hold."""
        return self.qos_max_us + self.qos_min_us + self.remote_share * self.interconnect_us

    @property
    def is_namespace(self) -> bool:
        """An NVMe namespace (served as a namespace, never as a LUN)."""
        return self.protocol.startswith("nvme")

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass
class Lif:
    """A SAN data LIF and the target port it sits on (one LIF per port here).

    FC and NVMe/FC LIFs sit on FC ports ("0c"); iSCSI and NVMe/TCP LIFs on Ethernet
    ports ("e0e"). ``speed_gbps`` is the port's speed in Gbit/s either way."""

    name: str
    node: str
    svm: str
    io: IoRates = field(default_factory=IoRates)
    port: str = "0c"
    speed_gbps: int = 16
    queue_full: float = 0.0  # queue-full responses per second at the port
    port_state: str = "online"  # /api/network/fc/ports state
    protocol: str = "fcp"  # fcp | iscsi | nvme_tcp | nvme_fc

    @property
    def ethernet(self) -> bool:
        return self.protocol in ETHERNET_PROTOCOLS


@dataclass
class HostDisk:
    number: str
    drive: str
    serial: str
    friendly_name: str
    read_iops: float
    write_iops: float
    read_lat_s: float
    write_lat_s: float
    idle: float
    queue: float
    paths: int = 2
    # ALUA: paths in the Active/Optimized state (the rest Active/Unoptimized); None: the host
    # reports only a path count, as MPIO_DISK_INFO.NumberPaths does
    optimized_paths: int | None = None
    read_io_bytes: float = 65536.0
    write_io_bytes: float = 65536.0
    size_bytes: float = 500 * 2**30
    lun_key: str = ""
    # Linux: the map's kernel name (dm-N), its path devices (sdX), those the scenario loses and
    # those failed now (the scenario's plus the fault knob's)
    dm: str = ""
    path_devices: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    queue_depth: int = 32  # /sys/block/<sdX>/device/queue_depth of each path

    @property
    def live_paths(self) -> tuple[str, ...]:
        """Path devices that carry I/O: the ALUA Active/Optimized ones (the first ``optimized_paths``)
        that have not failed; the others only once every optimized one has."""
        n = len(self.path_devices) if self.optimized_paths is None else self.optimized_paths
        live = [p for p in self.path_devices[:n] if p not in self.failed]
        return tuple(live or (p for p in self.path_devices if p not in self.failed))


@dataclass
class Host:
    name: str
    disks: list[HostDisk] = field(default_factory=list)
    os: str = "windows"  # windows: windows_exporter and WinRM pages; linux: a node_exporter page
    dmmultipath: bool = True  # Linux: node_exporter 1.12+ with its dmmultipath collector


@dataclass
class QosPolicy:
    """A QoS policy group: a fixed ceiling and floor (IOPS, MB/s; per workload, or ``shared`` by
    all of them), or an adaptive one in IOPS per TB of each workload's allocated or used space."""

    name: str
    svm: str = "svm1"
    kind: str = "fixed"  # fixed | adaptive
    shared: bool = False
    max_iops: float = 0.0  # 0: none
    max_mbps: float = 0.0
    min_iops: float = 0.0
    min_mbps: float = 0.0
    expected_iops_tb: float = 0.0
    peak_iops_tb: float = 0.0
    absolute_min_iops: float = 0.0
    expected_allocation: str = "allocated_space"
    peak_allocation: str = "used_space"
    block_size: str = "any"


@dataclass
class World:
    cluster: str
    version: tuple[int, int, int]
    nodes: list[Node]
    aggregates: list[Aggregate]
    volumes: list[Volume]
    luns: list[Lun]
    lifs: list[Lif]
    spares: list[Disk]
    hosts: list[Host]
    personality: str = "unified"  # unified | asa-r2 (ASA r2: disaggregated, SAN-optimized)
    qos_policies: list[QosPolicy] = field(default_factory=list)
    # QoS workloads and their centres (sanlens_sim.qos_world.Workload), set by qos_world.attach
    qos_workloads: list[Any] = field(default_factory=list)

    @property
    def asa_r2(self) -> bool:
        return self.personality == "asa-r2"

    @property
    def plain_luns(self) -> list[Lun]:
        """LUNs (FC and iSCSI), not namespaces."""
        return [x for x in self.luns if not x.is_namespace]

    @property
    def namespaces(self) -> list[Lun]:
        return [x for x in self.luns if x.is_namespace]

    @property
    def fc_lifs(self) -> list[Lif]:
        """LIFs on FC ports: FC and NVMe/FC."""
        return [x for x in self.lifs if not x.ethernet]

    @property
    def ip_lifs(self) -> list[Lif]:
        """LIFs on Ethernet ports: iSCSI and NVMe/TCP."""
        return [x for x in self.lifs if x.ethernet]

    @property
    def uuid(self) -> str:
        return stable_uuid("cluster", self.cluster)

    @property
    def disks(self) -> list[Disk]:
        return [d for a in self.aggregates for d in a.disks] + self.spares

    @property
    def svms(self) -> list[str]:
        return sorted({v.svm for v in self.volumes} | {lif.svm for lif in self.lifs})
