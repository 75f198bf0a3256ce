"""Normalized data shared by every source, the diagnoses and the exposition.

Units are SI throughout: seconds, bytes, operations, ratios 0..1. The one
exception that keeps its domain meaning is CPU-domain busy, which is a ratio of
*one core* and may exceed 1 (Σ domains ≈ N_cpu).
"""

from __future__ import annotations

import datetime as dt
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sanlens.errors import SanlensError
from sanlens.qos import QosPolicy, QosWorkload

MetricType = Literal["counter", "gauge", "info"]


def iso_utc(epoch: float | None, *, milliseconds: bool = False) -> str | None:
    """ISO-8601 UTC with a ``Z`` suffix, as ONTAP and the JSON outputs write times; None stays None.

    ``milliseconds`` keeps a fraction of a second when there is one (PerfMon rows carry them).
    """
    if epoch is None:
        return None
    try:
        t = dt.datetime.fromtimestamp(epoch, dt.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"time {epoch!r} is outside the years 1..9999") from None
    return t.isoformat(timespec="milliseconds" if milliseconds and t.microsecond else "seconds") + "Z"


@dataclass(frozen=True, slots=True)
class Metric:
    """One exposed metric family as two columns: each sample's label values (in ``label_names``
    order) and its value, side by side. At 10,000 LUNs a poll has ~150,000 samples: columns cost
    no object per sample beyond its label tuple, and the values are 8 bytes each in an array.

    Counters are named with their ``_total`` suffix, as exposed.
    """

    name: str
    type: MetricType
    help: str
    label_names: tuple[str, ...]
    keys: Sequence[tuple[str, ...]] = ()
    values: Sequence[float] = ()
    # the last label says which of a row's counters a sample is (op="read"): it takes a handful of
    # values, so a sample's label text is its row's text and that label's, joined as it is written
    split: bool = False

    @property
    def samples(self) -> tuple[tuple[tuple[str, ...], float], ...]:
        """(label values, value) pairs, for readers that want them paired."""
        return tuple(zip(self.keys, self.values, strict=True))

    def with_keys(self, keys: Sequence[tuple[str, ...]]) -> Metric:
        """The same family and values under other label values (one per sample)."""
        return Metric(self.name, self.type, self.help, self.label_names, tuple(keys), self.values, self.split)


class MetricBuilder:
    """Accumulates samples for several families while a poll is cooked."""

    def __init__(self) -> None:
        self._families: dict[str, tuple[MetricType, str, tuple[str, ...], bool]] = {}
        self._keys: dict[str, list[tuple[str, ...]]] = {}
        self._values: dict[str, array[float]] = {}

    def column(
        self, name: str, type_: MetricType, help_: str, label_names: tuple[str, ...], split: bool = False
    ) -> tuple[list[tuple[str, ...]], array[float]]:
        """The family's two columns, to append to in hot loops (label values in ``label_names`` order;
        ``split``: see :class:`Metric`)."""
        if name not in self._families:
            self._families[name] = (type_, help_, label_names, split)
            self._keys[name] = []
            self._values[name] = array("d")
        return self._keys[name], self._values[name]

    def add(self, name: str, type_: MetricType, help_: str, labels: Mapping[str, str], value: float) -> None:
        spec = self._families.get(name)
        names = spec[2] if spec is not None else tuple(labels)
        keys, values = self.column(name, type_, help_, names)
        keys.append(tuple(str(labels.get(k, "")) for k in names))
        values.append(float(value))

    def add_tuple(
        self,
        name: str,
        type_: MetricType,
        help_: str,
        label_names: tuple[str, ...],
        values: tuple[str, ...],
        value: float,
    ) -> None:
        """Like add() with the label values already in ``label_names`` order."""
        keys, vals = self.column(name, type_, help_, label_names)
        keys.append(values)
        vals.append(float(value))

    def build(self) -> tuple[Metric, ...]:
        return tuple(
            Metric(name, t, h, names, tuple(self._keys[name]), self._values[name], split)
            for name, (t, h, names, split) in self._families.items()
            if self._values[name]  # a column asked for but never filled is no family
        )


# ---------------------------------------------------------------- ONTAP view
@dataclass(frozen=True, slots=True)
class OntapVersion:
    generation: int
    major: int
    minor: int
    full: str = ""

    def at_least(self, generation: int, major: int, minor: int = 0) -> bool:
        return (self.generation, self.major, self.minor) >= (generation, major, minor)

    def __str__(self) -> str:
        return f"{self.generation}.{self.major}.{self.minor}"


_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_VERSION_ALONE = re.compile(_VERSION.pattern + r"\S*")  # 9.8P3, 9.12.1RC1


def parse_ontap_version(text: str, *, anywhere: bool = False) -> OntapVersion | None:
    """``9.8``, ``9.12.1``, ``9.8P3`` -> OntapVersion; None when the text is not a version.

    ``anywhere`` takes the first version inside a longer text, as ONTAP prints it
    in node properties (``NetApp Release 9.8P3: ...``).
    """
    s = (text or "").strip()
    m = _VERSION.search(s) if anywhere else _VERSION_ALONE.fullmatch(s)
    if not m:
        return None
    return OntapVersion(int(m[1]), int(m[2]), int(m[3] or 0), s)


def ontap_version_option(text: str) -> OntapVersion:
    """The value of an ``--ontap-version`` option; a bad one is an error that names the option."""
    version = parse_ontap_version(text)
    if version is None:
        raise SanlensError(f"--ontap-version: expected e.g. 9.8 or 9.12.1, got {text!r}")
    return version


@dataclass(frozen=True, slots=True)
class LunStats:
    cluster: str
    svm: str
    volume: str
    lun: str  # LUN path, e.g. /vol/vol1/lun1
    serial: str = ""
    node: str = ""
    read_iops: float | None = None
    write_iops: float | None = None
    other_iops: float | None = None
    read_latency_s: float | None = None  # None when below the min-ops floor
    write_latency_s: float | None = None
    read_bytes_s: float | None = None
    write_bytes_s: float | None = None
    state: str = ""  # ONTAP status.state (online, offline, nvfail, space-error, ...); '' when unknown
    thin: bool | None = None  # no space guarantee: the LUN goes offline when its volume runs out
    kind: str = "lun"  # lun (SCSI: FC, iSCSI) or namespace (NVMe/FC, NVMe/TCP)
    zone: str = ""  # ASA r2: the storage availability zone that holds it (no aggregates there)
    # operations that reached the LUN through another node's LIF (ONTAP remote_ops): indirect I/O
    remote_iops: float | None = None


@dataclass(frozen=True, slots=True)
class VolumeStats:
    cluster: str
    svm: str
    volume: str
    aggregate: str = ""
    node: str = ""
    style: str = ""
    read_iops: float | None = None
    write_iops: float | None = None
    other_iops: float | None = None
    total_iops: float | None = None
    read_latency_s: float | None = None
    write_latency_s: float | None = None
    avg_latency_s: float | None = None
    move_state: str = ""  # '' when no move; else ONTAP movement.state
    move_percent: float | None = None
    size_bytes: float | None = None  # space.size
    available_bytes: float | None = None  # space.available: what thin LUNs can still grow into


@dataclass(frozen=True, slots=True)
class NodeStats:
    cluster: str
    node: str
    model: str = ""
    processors: int | None = None
    # ONTAP cpu_busy, 0..1: the most heavily used domain (against its own limit) or the average,
    # whichever is higher; a hot serial domain drives it while the average stays low
    cpu_busy_ratio: float | None = None
    domain_busy: Mapping[str, float] = field(default_factory=dict)  # ratio of ONE core, may exceed 1
    # average_processor_busy_percent: the mean busy over all processors, 0..1 ("average CPU")
    average_processor_busy_ratio: float | None = None


@dataclass(frozen=True, slots=True)
class DiskStats:
    cluster: str
    disk: str
    aggregate: str = ""
    node: str = ""
    raid_group: str = ""
    disk_type: str = ""
    container: str = ""  # aggregate|spare|shared|...
    busy_ratio: float | None = None  # 0..1
    read_iops: float | None = None
    write_iops: float | None = None
    state: str = ""  # ONTAP disk state (present, spare, broken, reconstructing, ...)
    # position in its RAID group (plexes' raid_groups.disks.position): data, parity, dparity, tparity, ...
    raid_position: str = ""


@dataclass(frozen=True, slots=True)
class FcPortStats:
    """One FC target port (adapter): the array side of the front end."""

    cluster: str
    node: str
    port: str
    speed_gbps: float | None = None  # negotiated link speed (fabric.connected_speed)
    state: str = ""
    read_iops: float | None = None
    write_iops: float | None = None
    read_bytes_s: float | None = None
    write_bytes_s: float | None = None
    queue_full: float | None = None  # queue-full responses in the interval
    threshold_full: float | None = None
    link_errors: float | None = None  # link failures, loss of signal/sync, CRC, ... in the interval
    enabled: bool = True  # an administratively disabled port is not down

    @property
    def utilization(self) -> float | None:
        """Busier direction over the link's data rate (FC's nominal 100 MB/s per Gbit/s)."""
        if not self.speed_gbps or (self.read_bytes_s is None and self.write_bytes_s is None):
            return None
        return max(self.read_bytes_s or 0.0, self.write_bytes_s or 0.0) / (self.speed_gbps * 1e8)


@dataclass(frozen=True, slots=True)
class LifStats:
    """One iSCSI or NVMe-oF LIF: the array's view of an Ethernet (or NVMe/FC) front end."""

    cluster: str
    node: str
    svm: str
    lif: str
    protocol: str  # iscsi, nvme_tcp or nvme_fc (nvme when the inventory does not say)
    port: str = ""
    speed_gbps: float | None = None  # the port's link speed
    state: str = ""
    read_iops: float | None = None
    write_iops: float | None = None
    read_latency_s: float | None = None
    write_latency_s: float | None = None
    read_bytes_s: float | None = None
    write_bytes_s: float | None = None
    protocol_errors: float | None = None  # iSCSI protocol errors in the interval

    @property
    def bytes_per_second_capacity(self) -> float | None:
        """The link's data rate: 125 MB/s per Gbit/s on Ethernet, FC's nominal 100 MB/s per Gbit/s."""
        if not self.speed_gbps:
            return None
        return self.speed_gbps * (1e8 if self.protocol == "nvme_fc" else 1.25e8)


def physical_port(port: str) -> str:
    """The physical port under an Ethernet port: a VLAN's base (ONTAP names a VLAN ``<base>-<tag>``:
    e0c-100 on e0c, a0a-200 on the ifgrp a0a), the port itself otherwise."""
    base, sep, tag = port.rpartition("-")
    return base if sep and base and tag.isdigit() else port


@dataclass(frozen=True, slots=True)
class EthPortStats:
    """One Ethernet port's own traffic (ONTAP's nic_common): every LIF, VLAN and protocol on the link."""

    cluster: str
    node: str
    port: str
    speed_gbps: float | None = None  # link speed
    rx_bytes_s: float | None = None  # received
    tx_bytes_s: float | None = None  # sent

    @property
    def utilization(self) -> float | None:
        """Busier direction over the link's data rate (full duplex; 125 MB/s per Gbit/s)."""
        if not self.speed_gbps or (self.rx_bytes_s is None and self.tx_bytes_s is None):
            return None
        return max(self.rx_bytes_s or 0.0, self.tx_bytes_s or 0.0) / (self.speed_gbps * 1.25e8)


@dataclass(frozen=True, slots=True)
class BackgroundOp:
    cluster: str
    operation: Literal["reconstruct", "resync", "recompute_parity", "volume_move"]
    aggregate: str = ""
    volume: str = ""  # for volume moves
    svm: str = ""
    raid_group: str = ""  # e.g. /aggr1/plex0/rg0
    percent: float | None = None  # 0..100 as ONTAP reports it


@dataclass(frozen=True, slots=True)
class AggregateInfo:
    cluster: str
    aggregate: str
    node: str = ""
    disk_type: str = ""
    disk_count: int | None = None
    state: str = ""  # ONTAP aggregate state (online, offline, restricted, failed, ...)
    degraded_raid_groups: int = 0  # RAID groups running without full redundancy
    reconstructing: bool = False  # a reconstruct is restoring it


@dataclass(frozen=True, slots=True)
class OntapView:
    """Cooked values of one ONTAP poll: rates over the interval since the previous poll."""

    cluster: str
    timestamp: float
    interval_s: float | None
    version: OntapVersion | None = None
    luns: tuple[LunStats, ...] = ()
    volumes: tuple[VolumeStats, ...] = ()
    nodes: tuple[NodeStats, ...] = ()
    disks: tuple[DiskStats, ...] = ()
    aggregates: tuple[AggregateInfo, ...] = ()
    background_ops: tuple[BackgroundOp, ...] = ()
    fc_ports: tuple[FcPortStats, ...] = ()
    lifs: tuple[LifStats, ...] = ()  # iSCSI and NVMe-oF LIFs
    eth_ports: tuple[EthPortStats, ...] = ()  # Ethernet ports' own counters (nic_common)
    personality: str = "unified"  # unified (FAS, AFF, ASA) or asa-r2 (SAN-only, no aggregates)
    qos_workloads: tuple[QosWorkload, ...] = ()
    qos_policies: tuple[QosPolicy, ...] = ()


# ----------------------------------------------------------------- host view
DataClass = Literal["data", "log", "tempdb"]
Platform = Literal["windows", "linux"]


@dataclass(frozen=True, slots=True)
class HostPathStats:
    """One path of a multipathed host disk: a Linux SCSI device (``sdc``) under its dm-multipath map."""

    path: str
    state: str = ""  # /sys/block/<path>/device/state: running (SCSI) or live (NVMe) when usable
    access_state: str = ""  # ALUA, /sys/block/<path>/device/access_state, when the host exports it
    read_iops: float | None = None
    write_iops: float | None = None
    read_latency_s: float | None = None
    write_latency_s: float | None = None
    read_bytes_s: float | None = None
    write_bytes_s: float | None = None
    busy_ratio: float | None = None  # 0..1
    outstanding_io: float | None = None  # mean I/Os in flight over the interval

    @property
    def active(self) -> bool:
        """Usable for I/O, as node_exporter's dmmultipath collector counts it (SCSI running, NVMe live)."""
        return self.state in ("running", "live") or not self.state


@dataclass(frozen=True, slots=True)
class HostDiskStats:
    host: str
    disk: str  # physical disk instance, e.g. "1" or "1 E:"
    drives: tuple[str, ...] = ()  # drive letters on the disk
    lun_serial: str = ""
    # ONTAP identity when mapped (automatically by serial, or statically in config)
    cluster: str = ""
    svm: str = ""
    volume: str = ""
    lun: str = ""
    data_class: DataClass = "data"
    queue_depth: int = 32  # per-LUN queue depth at the HBA
    paths: int = 1  # active paths
    observed_paths: int | None = None  # MPIO paths the host reports now, when it reports them
    configured_paths: int | None = None  # the paths the config says the disk should have
    read_iops: float | None = None
    write_iops: float | None = None
    read_latency_s: float | None = None
    write_latency_s: float | None = None
    idle_ratio: float | None = None  # 0..1
    queue_length: float | None = None  # current outstanding requests
    read_bytes_s: float | None = None
    write_bytes_s: float | None = None
    split_iops: float | None = None
    # ALUA Active/Optimized paths the host reports (MPIO TargetPortGroup_State); non-optimized paths
    # carry no I/O, so Q_eff counts these when known. None: the host reports no path states.
    optimized_paths: int | None = None
    platform: Platform = "windows"  # whose terms the advice speaks (mpclaim or multipath -ll, ...)
    # the source knows the disk is no SAN LUN (a Linux disk with no NetApp WWID and no multipath map)
    local: bool = False
    outstanding_io: float | None = None  # mean reads and writes in flight over the interval (Little's law)
    # discards and flushes, kept apart from reads and writes (Linux diskstats fields 12-17, sysstat d/s, f/s)
    discard_iops: float | None = None
    discard_latency_s: float | None = None
    flush_iops: float | None = None
    flush_latency_s: float | None = None
    reported_busy_ratio: float | None = None  # Linux busy time (%util) as counted, before its bound
    kernel: str = ""  # the host's kernel release where its source names it (Linux node_uname_info)
    path_stats: tuple[HostPathStats, ...] = ()  # each path device, where the host reports them

    @property
    def mapped(self) -> bool:
        return bool(self.lun)

    @property
    def io_paths(self) -> int:
        """Paths that carry I/O: the optimized ones when the host reports them, else the active ones."""
        return max(self.optimized_paths or self.paths, 1)

    @property
    def q_eff(self) -> int:
        return self.queue_depth * self.io_paths


@dataclass(frozen=True, slots=True)
class HostView:
    host: str
    timestamp: float
    interval_s: float | None
    disks: tuple[HostDiskStats, ...] = ()


# ------------------------------------------------------------------ join keys
@dataclass(frozen=True, slots=True)
class LunIdentity:
    """What identifies one ONTAP LUN or NVMe namespace to the hosts (sanlens.join.directory)."""

    cluster: str
    svm: str
    volume: str
    lun: str  # path, e.g. /vol/sql_data/lun0
    serial: str = ""
    node: str = ""
    state: str = ""  # ONTAP status.state from the inventory; '' when unknown
    kind: str = "lun"  # lun | namespace (an NVMe namespace: no serial, joined by its UUID)
    uuid: str = ""  # the namespace UUID a host reports (Linux wwid ``uuid.<uuid>``)


@dataclass(frozen=True, slots=True)
class DiskIdentity:
    """The keys a host disk carries to its ONTAP LUN, as the host and its config give them, unresolved.

    ``svm`` and ``lun`` set: a static ``disks:`` entry names the LUN (``cluster`` may be empty);
    else ``cluster``, when set, is the copy a ``disks:`` entry names for a serial two clusters present.
    """

    disk: str
    serial: str = ""  # stripped, as the host reports it
    wwid: str = ""  # SCSI WWID or NVMe namespace identifier (Linux)
    cluster: str = ""
    svm: str = ""
    lun: str = ""

    @property
    def static(self) -> bool:
        return bool(self.svm and self.lun)


# ------------------------------------------------------------------ snapshot
@dataclass(frozen=True, slots=True)
class Snapshot:
    """One immutable, normalized result of one poll of one source."""

    target: str  # config name of the cluster or host
    kind: Literal["ontap", "host"]
    timestamp: float
    metrics: tuple[Metric, ...] = ()
    view: OntapView | HostView | None = None
    # the exporter's receive clock when the poll arrived (sanlens.freshness); None offline
    received: float | None = None
    # what the source could not read and which diagnoses that starves (sanlens.ontap.inputs)
    inputs: dict[str, Any] | None = None
    # an ONTAP poll: the cluster's LUNs and namespaces as the hosts see them; None: not known here
    lun_identities: tuple[LunIdentity, ...] | None = None
    # a host poll: each disk's join keys; the join stage (sanlens.join.stage) resolves them
    disk_identities: tuple[DiskIdentity, ...] = ()
