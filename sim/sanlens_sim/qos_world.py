"""The simulated estate's QoS workloads and where each one's latency goes, centre by centre.

ONTAP classifies every operation into one workload: a LUN's own when a policy group is set on
the LUN, else its volume's (``autovolume`` without a policy, ``user_defined`` with one). Each
workload reports the service and delay centres its operations visit (``qos_detail*`` tables):
visits per second and, per visit, service and wait time. The in-path centres add up to the
latency the SCSI layer measures for the workload's LUNs (the ``lun`` table): the QoS ceiling's
delay, the wait for a write's data and the cluster interconnect included.

Rows per node follow the operation: the front-end centres (N-blade, network, interconnect) on
the node whose LIF received it, the back-end ones on the volume's node.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sanlens_sim.world import IoRates, Lun, QosPolicy, Volume, World, stable_uuid, unit_hash

US = 1e6
# Shares of a LUN's latency left once the QoS delays and the interconnect are taken out, by centre;
# they sum to 1 so the in-path centres add up to the LUN's latency.
BASE_SHARES = (
    ("CPU_nblade", 0.10),
    ("DELAY_CENTER_NETWORK", 0.05),
    ("CPU_dblade", 0.25),
    ("DELAY_CENTER_DISK_IO", 0.28),
    ("DISK", 0.20),  # DISK_SSD_<aggr> or DISK_HDD_<aggr>
    ("DELAY_CENTER_NVLOG_TRANSFER", 0.08),
    ("DELAY_CENTER_COP", 0.04),  # a centre sanlens's mapping does not name: "other"
)
FRONT_END = frozenset({"CPU_nblade", "DELAY_CENTER_NETWORK", "DELAY_CENTER_CLUSTER_INTERCONNECT"})
# Share of a centre's time spent queued (wait_time) rather than served (service_time).
WAIT_SHARE = {
    "CPU_nblade": 0.2,
    "CPU_dblade": 0.25,
    "CPU_dblade_background": 0.1,
    "DISK": 0.2,
    "DELAY_CENTER_QOS_LIMIT": 1.0,
    "DELAY_CENTER_QOS_MIN_THROUGHPUT": 1.0,
}
BACKGROUND = "CPU_dblade_background"  # not in the latency path (in_latency_path 0)
BACKGROUND_VISITS, BACKGROUND_US = 0.2, 40.0  # per op, and per visit


@dataclass(frozen=True)
class Centre:
    """One ``qos_detail`` row: a workload's centre on one node; rates per second, µs per visit."""

    svm: str
    workload: str
    node: str
    name: str
    visits: float
    service_us: float
    wait_us: float
    in_path: bool = True

    @property
    def row_id(self) -> str:
        return f"{self.node}:{self.workload}.{self.name}"

    @property
    def key(self) -> str:
        return f"{self.svm}:{self.row_id}"


@dataclass
class Workload:
    """One QoS workload: a volume's or a LUN's, its policy, its I/O and its centres."""

    name: str
    uuid: str
    wid: int
    klass: str  # autovolume | user_defined
    svm: str
    volume: str
    node: str
    lun: str = ""  # LUN path when the workload is the LUN's
    policy: str = ""
    io: IoRates = field(default_factory=IoRates)
    centres: list[Centre] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.svm}:{self.name}"

    @property
    def row_id(self) -> str:
        return f"{self.name}:{self.uuid}"

    @property
    def latency_us(self) -> float:
        """Σ ops x latency per second (the ``latency`` counter's numerator rate)."""
        io = self.io
        return io.read_ops * io.read_lat_us + io.write_ops * io.write_lat_us + io.other_ops * io.other_lat_us


def wid_of(cluster: str, svm: str, obj: str) -> int:
    """A deterministic workload id, as ONTAP numbers workloads (the ``-wid<N>`` of their names)."""
    return 1000 + int(unit_hash(cluster, "wid", svm, obj) * 60000)


def attach(w: World) -> None:
    """Compute the world's workloads (one per volume, one per LUN with a policy) and their centres."""
    aggr_disk = {a.name: ("SSD" if a.disk_type == "ssd" else "HDD") for a in w.aggregates}
    by_vol: dict[tuple[str, str], list[Lun]] = defaultdict(list)
    for lun in w.luns:
        by_vol[(lun.svm, lun.volume)].append(lun)
    out: list[Workload] = []
    for v in w.volumes:
        luns = by_vol.get((v.svm, v.name), [])
        disk = f"DISK_{aggr_disk.get(v.aggregate, 'SSD')}_{v.aggregate}"
        wid = wid_of(w.cluster, v.svm, v.name)
        out.append(_workload(w, v, f"{v.name}-wid{wid}", wid, [x for x in luns if not x.qos_policy], disk))
        for lun in luns:
            if lun.qos_policy:
                wid = wid_of(w.cluster, lun.svm, lun.path)
                name = f"{v.name}_{lun.name}-wid{wid}"
                out.append(_workload(w, v, name, wid, [lun], disk, lun))
    w.qos_workloads = out


def _workload(
    w: World, v: Volume, name: str, wid: int, luns: list[Lun], disk: str, lun: Lun | None = None
) -> Workload:
    policy = lun.qos_policy if lun is not None else v.qos_policy
    wl = Workload(
        name,
        stable_uuid(w.cluster, "qos-workload", v.svm, name),
        wid,
        "user_defined" if policy else "autovolume",
        v.svm,
        v.name,
        v.node,
        lun.path if lun is not None else "",
        policy,
    )
    times: dict[tuple[str, str], float] = defaultdict(float)  # (node, centre) -> µs per second
    visits: dict[tuple[str, str], float] = defaultdict(float)
    for x in luns:
        wl.io.add(x.io)
        for node, centre, t, n in _lun_centres(x, disk):
            times[(node, centre)] += t
            visits[(node, centre)] += n
    wl.centres = [
        Centre(
            v.svm,
            name,
            node,
            centre,
            visits[(node, centre)],
            t * (1.0 - WAIT_SHARE.get(_kind(centre), 0.0)) / visits[(node, centre)],
            t * WAIT_SHARE.get(_kind(centre), 0.0) / visits[(node, centre)],
            centre != BACKGROUND,
        )
        for (node, centre), t in sorted(times.items())
        if visits[(node, centre)] > 0
    ]
    return wl


def _kind(centre: str) -> str:
    return "DISK" if centre.startswith("DISK_") else centre


def _lun_centres(x: Lun, disk: str) -> list[tuple[str, str, float, float]]:
    """(node, centre, µs per second, visits per second) of one LUN's operations."""
    io = x.io
    ops = io.total_ops
    if ops <= 0:
        return []
    total = io.read_ops * io.read_lat_us + io.write_ops * io.write_lat_us + io.other_ops * io.other_lat_us
    share = x.remote_share if x.remote_node else 0.0
    qmax, qmin, ic = x.qos_max_us * ops, x.qos_min_us * ops, share * x.interconnect_us * ops
    base = total - qmax - qmin - ic
    assert base >= 0.0, f"{x.path}: QoS and interconnect time exceed the LUN's latency"
    per_visit = {
        "CPU_nblade": ops,
        "DELAY_CENTER_NETWORK": io.write_ops or ops,  # a write waits for its data from the host
        "CPU_dblade": 1.5 * ops,
        "DELAY_CENTER_DISK_IO": 0.3 * io.read_ops + 0.05 * io.write_ops or ops,
        "DISK": 0.3 * io.read_ops + 0.05 * io.write_ops or ops,
        "DELAY_CENTER_NVLOG_TRANSFER": io.write_ops or ops,
        "DELAY_CENTER_COP": 0.4 * ops,
    }
    out: list[tuple[str, str, float, float]] = []
    for centre, part in BASE_SHARES:
        t, n = base * part, per_visit[centre]
        name = disk if centre == "DISK" else centre
        if centre in FRONT_END and share > 0:
            out.append((x.remote_node, name, t * share, n * share))
            out.append((x.node, name, t * (1.0 - share), n * (1.0 - share)))
        else:
            out.append((x.node, name, t, n))
    if ic > 0:
        out.append((x.remote_node, "DELAY_CENTER_CLUSTER_INTERCONNECT", ic, share * ops))
    if qmax > 0:
        out.append((x.node, "DELAY_CENTER_QOS_LIMIT", qmax, ops))
    if qmin > 0:
        out.append((x.node, "DELAY_CENTER_QOS_MIN_THROUGHPUT", qmin, ops))
    out.append((x.node, BACKGROUND, BACKGROUND_VISITS * ops * BACKGROUND_US, BACKGROUND_VISITS * ops))
    return out


# ------------------------------------------------------------------ counter rates (sanlens_sim.estate)
def workload_rates(wl: Workload) -> dict[str, float]:
    """A ``qos``/``qos_volume`` row's counters per second (averages as their numerators)."""
    io = wl.io
    r, wr, o = io.read_ops, io.write_ops, io.other_ops
    lat = wl.latency_us
    return {
        "ops": r + wr + o,
        "read_ops": r,
        "write_ops": wr,
        "other_ops": o,
        "latency": lat,
        "read_latency": r * io.read_lat_us,
        "write_latency": wr * io.write_lat_us,
        "read_data": io.read_bytes,
        "write_data": io.write_bytes,
        "total_data": io.read_bytes + io.write_bytes,
        "concurrency": lat / US,  # Little's law: ops x seconds per op
        "sequential_reads_base": r,
        "sequential_reads_percent": 0.2 * r,
        "sequential_writes_base": wr,
        "sequential_writes_percent": 0.6 * wr,
        "read_io_type_base": r,
        "read_io_type_percent#cache": 0.7 * r,
        "read_io_type_percent#disk": 0.3 * r,
    }


def centre_rates(c: Centre) -> dict[str, float]:
    """A ``qos_detail`` row's counters per second: visits, and µs of service and of wait."""
    return {"visits": c.visits, "service_time": c.visits * c.service_us, "wait_time": c.visits * c.wait_us}


# ------------------------------------------------------------------ policies
def policy_of(w: World, svm: str, name: str) -> QosPolicy | None:
    return next((p for p in w.qos_policies if p.svm == svm and p.name == name), None)


def workloads_of(w: World, p: QosPolicy) -> list[Workload]:
    return [x for x in w.qos_workloads if x.svm == p.svm and x.policy == p.name]


def pgid_of(w: World, p: QosPolicy) -> int:
    return 100 + int(unit_hash(w.cluster, "pgid", p.svm, p.name) * 9000)


# ------------------------------------------------------------------ counter-table rows
def table_objects(w: World, detail: bool, volume_only: bool) -> list[Workload] | list[Centre]:
    """The rows of a QoS table: workloads or their centres (``qos_detail``, ``qos_detail_volume``).

    ONTAP's workload table (``qos``, ZAPI ``workload``) holds the policy groups' workloads, a LUN's or
    a volume's with a policy set (NetApp Harvest reads its instances as classes user_defined and
    system_defined); the volume table (``qos_volume``, ``workload_volume``) every volume's, shown per
    volume and never per LUN or file (NetApp's counter reference for qos_volume). A volume with a
    policy is in both."""
    if volume_only:
        wls = [x for x in w.qos_workloads if not x.lun]
    else:
        wls = [x for x in w.qos_workloads if x.klass != "autovolume"]
    if detail:
        return [c for x in wls for c in x.centres]
    return wls


def row_properties(obj: Workload | Centre, centre_prop: str = "resource.name") -> dict[str, str]:
    """A row's properties in ONTAP's order; a workload's row sums its nodes: ``(multiple-values)``."""
    if isinstance(obj, Centre):
        return {"node.name": obj.node, centre_prop: obj.name}
    return {"node.name": "(multiple-values)", "name": obj.name, "uuid": obj.uuid}
