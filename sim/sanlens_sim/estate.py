"""The running simulation: the current scenario's worlds (one per phase) and their counters.

Counters of every object kind live in a :class:`CounterSet`. A scenario switch
builds new sets whose rows continue from the old values at the switch instant,
so the exporter never sees a counter go backwards unless a reset is asked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sanlens_sim import qos_world, scenarios
from sanlens_sim.counters import CounterSet
from sanlens_sim.scenario_base import Knobs
from sanlens_sim.world import DOMAINS, Disk, HostDisk, IoRates, Lif, Lun, Node, World

UPTIME_S = 3 * 86400.0  # counters start as if the system had run this long
US = 1e6

# cp_phase_times labels (WAFL consistency-point phases) and each phase's share of CP time.
CP_PHASES = (
    ("SETUP", 0.05),
    ("PRE_P0", 0.02),
    ("P1_CLEAN", 0.08),
    ("P2V_INO", 0.05),
    ("P2V_FSINFO", 0.03),
    ("P2V_BM", 0.07),
    ("P2V_VOLINFO", 0.05),
    ("P2V_CONT", 0.05),
    ("P2A_BM", 0.10),
    ("P2_FLUSH", 0.40),
    ("P2_FINISH", 0.05),
    ("P3A_VOLINFO", 0.03),
    ("P4_FINISH", 0.02),
)


def lun_rates(io: IoRates) -> dict[str, float]:
    r, w, o = io.read_ops, io.write_ops, io.other_ops
    return {
        "read_ops": r,
        "write_ops": w,
        "other_ops": o,
        "total_ops": r + w + o,
        "read_data": io.read_bytes,
        "write_data": io.write_bytes,
        "average_read_latency": r * io.read_lat_us,
        "average_write_latency": w * io.write_lat_us,
        "average_other_latency": o * io.other_lat_us,
        "average_latency": r * io.read_lat_us + w * io.write_lat_us + o * io.other_lat_us,
        # LUN alignment histograms count against the ops sent to WAFL
        "read_ops_sent": r,
        "write_ops_sent": w,
        "read_align_histogram#0": 100.0 * r,
        "write_align_histogram#0": 100.0 * w,
    }


def lun_counter_rates(x: Lun) -> dict[str, float]:
    """A LUN's counters, with the ops (and bytes) that arrived through another node's LIF."""
    out = lun_rates(x.io)
    share = x.remote_share if x.remote_node else 0.0
    out["remote_ops"] = share * out["total_ops"]
    out["remote_bytes"] = share * (x.io.read_bytes + x.io.write_bytes)
    return out


def lif_rates(x: Lif) -> dict[str, float]:
    """A LIF's counters: the LUN names (fcp_lif, nvmf_lif) plus iscsi_lif's own spelling."""
    out = lun_rates(x.io)
    if x.protocol == "iscsi":
        out["iscsi_read_ops"] = out["read_ops"]
        out["iscsi_write_ops"] = out["write_ops"]
        out["iscsi_other_ops"] = out["other_ops"]
        out["cmd_transferred"] = out["total_ops"]
    return out


def fcport_rates(x: Lif) -> dict[str, float]:
    out = lun_rates(x.io)
    out["total_data"] = x.io.read_bytes + x.io.write_bytes
    out["queue_full"] = x.queue_full
    out["threshold_full"] = 0.5 * x.queue_full
    return out


# NAS clients' writes on every Ethernet port under a SAN LIF (an NFS datastore beside the LUNs): the
# port's own counters (nic_common) carry them, no SAN LIF's do
NAS_RX_BYTES_S = 20e6


def physical_port(port: str) -> str:
    """The physical port under an Ethernet port: ONTAP names a VLAN ``<base>-<tag>`` (e0e-100 on e0e)."""
    base, sep, tag = port.rpartition("-")
    return base if sep and base and tag.isdigit() else port


@dataclass(frozen=True)
class NicPort:
    """A physical Ethernet port and every SAN LIF over it, on the port itself or on its VLANs."""

    node: str
    name: str
    speed_gbps: int
    lifs: tuple[Lif, ...]

    @property
    def up(self) -> bool:
        return any(x.port_state != "down" for x in self.lifs)


def nic_ports(w: World) -> list[NicPort]:
    """The physical Ethernet ports under the world's iSCSI and NVMe/TCP LIFs, in the LIFs' order."""
    by: dict[tuple[str, str], list[Lif]] = {}
    for x in w.ip_lifs:
        by.setdefault((x.node, physical_port(x.port)), []).append(x)
    return [NicPort(node, port, xs[0].speed_gbps, tuple(xs)) for (node, port), xs in by.items()]


def nic_rates(p: NicPort) -> dict[str, float]:
    """A port's bytes: every LIF over it, of every protocol and VLAN (a target LIF sends the hosts'
    reads and receives their writes), and the NAS clients' writes while the link is up."""
    return {
        "receive_bytes": sum(x.io.write_bytes for x in p.lifs) + (NAS_RX_BYTES_S if p.up else 0.0),
        "transmit_bytes": sum(x.io.read_bytes for x in p.lifs),
    }


def volume_rates(io: IoRates) -> dict[str, float]:
    r, w, o = io.read_ops, io.write_ops, io.other_ops
    return {
        "total_read_ops": r,
        "total_write_ops": w,
        "total_other_ops": o,
        "total_ops": r + w + o,
        "bytes_read": io.read_bytes,
        "bytes_written": io.write_bytes,
        "read_latency": r * io.read_lat_us,
        "write_latency": w * io.write_lat_us,
        "other_latency": o * io.other_lat_us,
        "average_latency": r * io.read_lat_us + w * io.write_lat_us + o * io.other_lat_us,
        "fcp.read_ops": r,
        "fcp.write_ops": w,
        "fcp.read_latency": r * io.read_lat_us,
        "fcp.write_latency": w * io.write_lat_us,
        "fcp.read_data": io.read_bytes,
        "fcp.write_data": io.write_bytes,
    }


def node_rates(n: Node) -> dict[str, float]:
    busy = n.busy_pct_cores
    out = {
        # cpu_busy follows the most heavily used domain (ONTAP's counter description);
        # average_processor_busy_percent is the mean over all processors
        "cpu_busy": n.ontap_cpu_busy * US,
        "average_processor_busy_percent": n.cpu_busy * US,
        "total_processor_busy": busy / 100.0 * US,
        "total_processor_busy_time": busy / 100.0 * US,
        "cpu_elapsed_time": US,
        "cp_time": 0.05 * US,
        "idle_time": max(0.0, n.cpus * 100.0 - busy) / 100.0 * US,
        "total_ops": n.total_ops,
        "read_ops": n.read_ops,
        "write_ops": n.write_ops,
        "other_ops": max(0.0, n.total_ops - n.read_ops - n.write_ops),
        "fcp_ops": n.total_ops,
        "read_latency": n.read_ops * 500.0,
        "write_latency": n.write_ops * 300.0,
        "other_latency": max(0.0, n.total_ops - n.read_ops - n.write_ops) * 100.0,
        "total_latency": n.read_ops * 500.0 + n.write_ops * 300.0,
        "read_data": n.read_ops * 8192.0,
        "write_data": n.write_ops * 8192.0,
        "total_data": n.total_ops * 8192.0,
        # the *_data_* counters say kb_per_sec but count bytes (see ontap/catalogue.py)
        "disk_data_read": n.read_ops * 8192.0 * 0.3,
        "disk_data_written": n.write_ops * 8192.0 * 1.2,
        "fcp_data_received": n.write_ops * 8192.0,
        "fcp_data_sent": n.read_ops * 8192.0,
    }
    for d in DOMAINS:
        pct = max(0.0, n.cpus * 100.0 - busy) if d == "idle" else n.domains.get(d, 0.0)
        out[f"domain_busy#{d}"] = pct / 100.0 * US
    return out


# Share of a data disk's transfers that are reads (and busy time spent on them).
DISK_READ_SHARE = 0.6
PARITY_POSITIONS = frozenset({"parity", "dparity", "tparity"})


def disk_rates(d: Disk) -> dict[str, float]:
    """A disk's counters. A parity disk (RAID 4, RAID-DP, RAID-TEC keep parity on dedicated disks)
    is written with every stripe a data disk takes but read only to rebuild: it serves the writes
    and none of the reads, so under a read-heavy load it idles."""
    parity = d.position in PARITY_POSITIONS
    read_share = 0.0 if parity else DISK_READ_SHARE
    keep = (1.0 - DISK_READ_SHARE) if parity else 1.0  # the write part of a data disk's work
    busy = d.busy * keep
    t = d.transfers * keep
    w = (1.0 - DISK_READ_SHARE) * d.transfers  # every disk of the stripe takes the same writes
    r = read_share * t
    return {
        "disk_busy_percent": busy * US,
        "base_for_disk_busy": US,
        "io_pending": busy * 2.0 * US,
        "io_queued": busy * 0.5 * US,
        "total_transfer_count": t,
        "total_data": t * 32768.0,
        "user_read_count": r,
        "user_write_count": w,
        "user_read_block_count": r * 2,
        "user_write_block_count": w * 16,
        "user_read_latency": r * 2 * (300.0 if d.type == "ssd" else 4000.0),
        "user_write_latency": w * 16 * (50.0 if d.type == "ssd" else 900.0),
        "cp_read_count": 0.05 * t,
        "cp_read_blocks": 0.05 * t * 8,
        "cp_read_latency": 0.05 * t * 8 * (200.0 if d.type == "ssd" else 2500.0),
    }


def wafl_rates(n: Node) -> dict[str, float]:
    cp_ms = 150.0 + 0.01 * n.total_ops  # milliseconds of CP work per second
    cps = 0.1 + n.total_ops / 200000.0
    out = {"total_cp_msecs": cp_ms, "cpu_elapsed_time": US, "total_cp_util": cp_ms * 1000.0}
    out["cp_count#wafl_timer generated CP"] = 0.1
    out["cp_count#full NV-log generated CP"] = cps - 0.1
    for label, share in CP_PHASES:
        out[f"cp_phase_times#{label}"] = share * cp_ms
    reads = n.read_ops
    out["read_io_type_base"] = reads
    out["read_io_type#cache"] = 0.7 * reads
    out["read_io_type#disk"] = 0.3 * reads
    out["reads_from_cache"] = 0.7 * reads
    out["reads_from_disk"] = 0.3 * reads
    out["msg_total"] = 50.0 * n.total_ops
    out["average_msg_latency"] = 50.0 * n.total_ops * 0.02
    return out


def hostdisk_rates(d: HostDisk) -> dict[str, float]:
    r, w = d.read_iops, d.write_iops
    return {
        "reads": r,
        "writes": w,
        "read_bytes": r * d.read_io_bytes,
        "write_bytes": w * d.write_io_bytes,
        "read_latency": r * d.read_lat_s,
        "write_latency": w * d.write_lat_s,
        "read_write_latency": r * d.read_lat_s + w * d.write_lat_s,
        # PercentDiskRead/WriteTime integrate the queue length: Little's law N = X * R
        "read_seconds": r * d.read_lat_s,
        "write_seconds": w * d.write_lat_s,
        "idle": d.idle,
        "busy": 1.0 - d.idle,  # Linux io_ticks: time with an I/O in flight
        "split_ios": 0.01 * (r + w),
    }


def hostpath_rates(d: HostDisk, path: str) -> dict[str, float]:
    """A path device of a Linux map: the live (optimized, not failed) paths share the map's I/O
    (multipath's service-time selector keeps them even); a failed or standby path counts nothing."""
    live = d.live_paths
    if path not in live:
        return {}
    share = 1.0 / len(live)
    whole = hostdisk_rates(d)
    out = {k: whole[k] * share for k in ("reads", "writes", "read_bytes", "write_bytes")}
    # below the map the request spends most of its time on the path: 95 % of the map's latency
    out["read_seconds"] = whole["read_seconds"] * share * 0.95
    out["write_seconds"] = whole["write_seconds"] * share * 0.95
    out["busy"] = min(1.0, 1.0 - d.idle)
    return out


@dataclass(frozen=True)
class Kind:
    """One object kind: how to list its objects in a world, key them, and rate them."""

    objects: Callable[[World], list[Any]]
    key: Callable[[Any], str]
    rates: Callable[[Any], dict[str, float]]


KINDS: dict[str, Kind] = {
    "lun": Kind(lambda w: w.luns, lambda x: x.key, lun_counter_rates),
    "volume": Kind(lambda w: w.volumes, lambda x: f"{x.svm}:{x.name}", lambda x: volume_rates(x.io)),
    "node": Kind(lambda w: w.nodes, lambda x: x.name, node_rates),
    "disk": Kind(lambda w: [d for a in w.aggregates for d in a.disks], lambda x: x.name, disk_rates),
    "lif": Kind(lambda w: w.lifs, lambda x: f"{x.svm}:{x.name}", lif_rates),
    "fcport": Kind(lambda w: w.fc_lifs, lambda x: f"{x.node}:{x.port}", fcport_rates),
    "nic": Kind(nic_ports, lambda x: f"{x.node}:{x.name}", nic_rates),
    "wafl": Kind(lambda w: w.nodes, lambda x: x.name, wafl_rates),
    # QoS workloads (qos, qos_volume) and their centres per node (qos_detail, qos_detail_volume)
    "qos": Kind(lambda w: w.qos_workloads, lambda x: x.key, qos_world.workload_rates),
    "qos_detail": Kind(
        lambda w: [c for x in w.qos_workloads for c in x.centres], lambda x: x.key, qos_world.centre_rates
    ),
    "hostdisk": Kind(
        lambda w: [(h.name, d) for h in w.hosts for d in h.disks],
        lambda x: f"{x[0]}/{x[1].number}",
        lambda x: hostdisk_rates(x[1]),
    ),
    "hostpath": Kind(
        lambda w: [(h.name, d, p) for h in w.hosts for d in h.disks for p in d.path_devices],
        lambda x: f"{x[0]}/{x[1].number}/{x[2]}",
        lambda x: hostpath_rates(x[1], x[2]),
    ),
}


class Estate:
    """Thread-safe holder of the scenario, its phase worlds and counters."""

    def __init__(self, scenario: str, knobs: dict[str, Any], clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.counters: dict[str, CounterSet] = {}
        self.knobs: Knobs | None = None
        self.failed_paths: frozenset[str] = frozenset()  # "host/sdX" lost by the fault knob
        self.switch(scenario, knobs)

    def switch(self, name: str, raw_knobs: dict[str, Any], keep_scale: bool = False) -> None:
        """Change scenario live; scale knobs stay unless given again when ``keep_scale``."""
        scen = scenarios.get(name)
        knobs = Knobs.parse(raw_knobs)
        with self.lock:
            if keep_scale and self.knobs is not None:
                for n in Knobs.SCALE:
                    if getattr(knobs, n) is None:
                        setattr(knobs, n, getattr(self.knobs, n))
            offsets = scen.phases(knobs)
            worlds = [scenarios.build_world(scen, knobs, p) for p in range(len(offsets))]
            for w in worlds:
                _fail_paths(w, self.failed_paths)
            now = self.clock()
            counters = {
                kind: self._counter_set(kind, worlds, [now + off for off in offsets], now) for kind in KINDS
            }
            self.scenario, self.knobs, self.worlds, self.offsets = scen, knobs, worlds, offsets
            self.started = now
            self.counters = counters

    def _counter_set(self, kind: str, worlds: list[World], starts: list[float], now: float) -> CounterSet:
        """One kind's counters over the phase worlds, continuing from the current set's values at ``now``."""
        spec = KINDS[kind]
        keys = [spec.key(o) for o in spec.objects(worlds[0])]
        phase_rates = []
        for w, start in zip(worlds, starts, strict=True):
            by_key = {spec.key(o): spec.rates(o) for o in spec.objects(w)}
            phase_rates.append((start, [by_key.get(k, {}) for k in keys]))
        first = phase_rates[0][1]
        names = sorted({n for r in first for n in r} | {n for _, rs in phase_rates for r in rs for n in r})
        initial = [{n: v * UPTIME_S for n, v in r.items()} for r in first]
        return CounterSet.build(keys, names, phase_rates, initial, self.counters.get(kind), now)

    def fail_paths(self, failed: frozenset[str]) -> None:
        """Lose (or restore) Linux path devices, ``host/sdX``, now: only their counters change, the
        scenario's time line goes on."""
        with self.lock:
            self.failed_paths = failed
            for w in self.worlds:
                _fail_paths(w, failed)
            now = self.clock()
            # phases already begun continue from now; later ones keep their start
            starts = [max(self.started + off, now) for off in self.offsets]
            current = self.phase(now)
            worlds = [self.worlds[max(i, current)] for i in range(len(self.worlds))]
            self.counters["hostpath"] = self._counter_set("hostpath", worlds, starts, now)

    def phase(self, t: float) -> int:
        p = 0
        for i, off in enumerate(self.offsets):
            if t >= self.started + off:
                p = i
        return p

    def world(self, t: float | None = None) -> World:
        """The world of the phase in force at ``t`` (inventory, states, gauges)."""
        return self.worlds[self.phase(self.clock() if t is None else t)]

    def reconstruct_percent(self, rg_reconstruct: tuple[float, float], t: float) -> float:
        after, rate = rg_reconstruct
        return max(0.0, min(100.0, (t - self.started - after) * rate))

    def reset_counters(self) -> None:
        with self.lock:
            now = self.clock()
            for cs in self.counters.values():
                cs.reset(now)

    def summary(self) -> dict[str, Any]:
        w = self.world()
        return {
            "scenario": self.scenario.name,
            "summary": self.scenario.summary,
            "expected_diagnoses": list(self.scenario.expected),
            "knobs": self.knobs.as_dict() if self.knobs else {},
            "phase": self.phase(self.clock()),
            "phase_offsets_s": self.offsets,
            "started": self.started,
            "cluster_name": w.cluster,
            "ontap_version": ".".join(map(str, w.version)),
            "personality": w.personality,
            "hosts": [h.name for h in w.hosts if h.os == "windows"],
            "linux_hosts": [h.name for h in w.hosts if h.os == "linux"],
            "counts": {
                "nodes": len(w.nodes),
                "aggregates": len(w.aggregates),
                "volumes": len(w.volumes),
                "luns": len(w.plain_luns),
                "namespaces": len(w.namespaces),
                "disks": len(w.disks),
                "fcp_lifs": sum(1 for x in w.lifs if x.protocol == "fcp"),
                "iscsi_lifs": sum(1 for x in w.lifs if x.protocol == "iscsi"),
                "nvmf_lifs": sum(1 for x in w.lifs if x.protocol.startswith("nvme")),
                "hosts": sum(1 for h in w.hosts if h.os == "windows"),
                "host_disks": sum(len(h.disks) for h in w.hosts if h.os == "windows"),
                "linux_hosts": sum(1 for h in w.hosts if h.os == "linux"),
                "linux_host_disks": sum(len(h.disks) for h in w.hosts if h.os == "linux"),
            },
        }


def _fail_paths(world: World, failed: frozenset[str]) -> None:
    """Mark the Linux path devices the fault knob lost, on top of the scenario's own failures."""
    for h in world.hosts:
        for d in h.disks:
            if d.path_devices:
                d.failed = tuple(p for p in d.path_devices if p in d.lost or f"{h.name}/{p}" in failed)


def lun_of(world: World, key: str) -> Lun | None:
    for lun in world.luns:
        if lun.key == key:
            return lun
    return None
