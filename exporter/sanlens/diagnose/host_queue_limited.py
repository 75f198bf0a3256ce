"""host_queue_limited: too few LUNs, so the host's queue, not the array, sets the pace.

Joined data (the disk maps to a polled LUN): R_host >= 2 S_array and
R_host - S_array >= 1 ms; outstanding N, the interval's mean by Little's law
N = IOPS x R_host (Current Disk Queue Length, an instantaneous sample, only
without rates) >= 0.9 Q_eff (queue depth x the paths that carry I/O: the ALUA
active/optimized ones when the host reports them, else the active ones); the array is
not saturated (its node below ``max_node_cpu_ratio``, no serial domain at
``max_serial_domain_ratio``); the disk is busy (idle below san_oversubscription's
``min_idle_ratio``: a full queue leaves no idle time, and a mostly idle disk that
waits is that diagnosis's signature; Linux busy time is bounded by the requests in
flight, since kernels from 5.0 until 2024 count a jiffy per I/O start). Critical once
R_host >= 5 S_array.

Host-only: a full queue while the host latency is still under its class
warning threshold means the queue caps throughput; warning at most, because
the array's share of the latency is unknown.

ONTAP-only: no subject (the queue is the host's). A local disk (see
``Context.san_disk``) is no subject either.

The recommendation sizes the LUN count with N_luns = max(ceil(X S_array /
(0.75 Q_eff)), ceil(X / X_lun)), X_lun the single-LUN ceiling of the ONTAP
version, for the observed X and for the demand the current concurrency would
carry (N / S_array), and recalls the 2048 outstanding commands per target port.
"""

from __future__ import annotations

import math

from sanlens.diagnose import iops_ceiling
from sanlens.diagnose.base import Context, Observation, Thresholds, disk_key, disk_labels, ms, serial_domains
from sanlens.diagnose.front_end import FrontEnd, front_end
from sanlens.diagnose.host_advice import busy_note, queue_depth_fix, spread_how
from sanlens.diagnose.latency_slo import class_level
from sanlens.diagnose.numeric import clamp01, num, total, weighted_latency
from sanlens.diagnose.spec import (
    SRC_LUN_STUDY,
    SRC_WAFFINITY,
    Dashboard,
    DiagnosisSpec,
    Evidence,
    Reads,
    Threshold,
)
from sanlens.model import HostDiskStats

SPEC = DiagnosisSpec(
    id="host_queue_limited",
    title="Host queue limited (too few LUNs)",
    summary=(
        "The host queue is full (N >= 0.9 Q_eff) and host latency is well above the array's "
        "(R_host >= 2 S_array and R_host - S_array >= 1 ms) while the array is not saturated."
    ),
    subject="host disk",
    thresholds=(
        Threshold("min_latency_ratio", 2.0, "ratio", SRC_LUN_STUDY, 1.0, 1000.0, "above", "R_host / S_array"),
        Threshold(
            "min_latency_gap_seconds",
            0.001,
            "seconds",
            "Little's law queueing: R_host - S_array >= 1 ms of wait outside the array",
            0.0,
            10.0,
            "above",
            "R_host - S_array",
        ),
        Threshold(
            "queue_fill_ratio",
            0.9,
            "ratio",
            "Little's law: outstanding IO N = X R >= 0.9 Q_eff (queue depth x paths)",
            0.1,
            1.0,
            "above",
            "outstanding IO / (queue depth x paths)",
        ),
        Threshold(
            "max_node_cpu_ratio",
            0.8,
            "ratio",
            "sanlens default: an array node above 80 % CPU is itself the limit",
            0.1,
            1.0,
            "below",
            "average CPU of the LUN's node",
        ),
        Threshold(
            "max_serial_domain_ratio",
            0.9,
            "ratio of one core",
            SRC_WAFFINITY,
            0.1,
            1.0,
            "below",
            "busiest serial CPU domain of the LUN's node",
        ),
        Threshold(
            "critical_latency_ratio",
            5.0,
            "ratio",
            "sanlens default: the host queue adds 4x the array's own service time",
            1.0,
            1000.0,
            "above",
            "R_host / S_array at which the finding is critical",
        ),
        Threshold(
            "target_queue_fill",
            0.75,
            "ratio",
            "LUN sizing by Little's law: N_luns = ceil(X S_array / (0.75 Q_eff))",
            0.1,
            1.0,
            "none",
            "queue fill aimed at when sizing LUNs (recommendation only)",
        ),
    ),
    sustain_s=600.0,
    exit_s=600.0,
    severity={1: "all conditions hold", 2: "and R_host >= critical_latency_ratio x S_array"},
    fix="More LUNs: N = max(ceil(X S_array / (0.75 Q_eff)), ceil(X / X_lun)); <= 2048 commands per port.",
    evidence=(
        Evidence("outstanding_io", "commands", "N: mean outstanding IO, IOPS x R_host", "outstanding IO"),
        Evidence("queue_effective_depth", "commands", "Q_eff: queue depth x paths carrying I/O", "Q_eff"),
        Evidence(
            "host_latency_seconds",
            "seconds",
            "R_host: IOPS-weighted host latency",
            "host latency",
            "duration",
        ),
        Evidence(
            "array_latency_seconds",
            "seconds",
            "S_array: IOPS-weighted LUN latency",
            "array latency",
            "duration",
        ),
        Evidence(
            "luns_needed",
            "LUNs",
            "LUN count that carries the demand this concurrency would drive",
            "LUNs needed",
        ),
        Evidence("latency_ratio", "ratio", "R_host / S_array", fmt="multiple"),
        Evidence("latency_gap_seconds", "seconds", "R_host - S_array"),
        Evidence("queue_fill_ratio", "ratio", "N / Q_eff"),
        Evidence("host_iops", "ops/s", "X: reads + writes of the host disk"),
        Evidence("node_cpu_busy_ratio", "ratio", "average CPU of the LUN's node"),
        Evidence(
            "node_serial_domain_busy_ratio", "ratio of one core", "busiest serial domain of the LUN's node"
        ),
        Evidence("demand_estimate_iops", "ops/s", "N / S_array"),
        Evidence(
            "lif_latency_seconds",
            "seconds",
            "IOPS-weighted latency at the node's iSCSI or NVMe LIFs: low while the host queue is full",
            "LIF latency",
            "duration",
        ),
    ),
    dashboard=Dashboard("sanlens-io-path", ("cluster", "host")),
    ordered=(("min_latency_ratio", "critical_latency_ratio"),),
    pages=True,
    # the fix (queue depth, paths, more LUNs) is made per host
    incident_by=("cluster", "host"),
    reads=Reads(
        tables=("lun", "namespace", "system:node", "iscsi_lif", "nvmf_lif"),
        endpoints=("/api/network/ip/interfaces",),
        offline=("host",),
    ),
)
ID = SPEC.id
PORT_LIMIT = 2048  # outstanding commands per FC target port


def luns_needed(x: float, s_array: float, q_eff: int, x_lun: float, fill: float = 0.75) -> int:
    """N_luns = max(ceil(X S / (fill Q_eff)), ceil(X / X_lun)), at least 1."""
    by_queue = math.ceil(x * s_array / (fill * q_eff)) if q_eff > 0 else 1
    by_ceiling = math.ceil(x / x_lun) if x_lun > 0 else 1
    return max(by_queue, by_ceiling, 1)


def _one(ctx: Context, d: HostDiskStats, th: Thresholds) -> Observation:
    t = th[ID]
    iops = total(d.read_iops, d.write_iops)
    r_host = weighted_latency(d.read_iops, d.write_iops, d.read_latency_s, d.write_latency_s)
    # the mean outstanding reads and writes over the interval: their time sums' rates where the host keeps
    # them (Linux; never field 11, which counts discards and flushes too), else Little's law; one
    # instantaneous queue sample that dips would restart the sustain window, so it only stands in
    # without rates
    n = num(d.outstanding_io)
    if n is None:
        n = iops * r_host if iops is not None and r_host is not None else num(d.queue_length)
    q_eff = d.q_eff
    fill = n / q_eff if n is not None and q_eff > 0 else None
    lun = ctx.lun_of(d)
    s_array = cpu = serial = None
    fe = FrontEnd()
    if lun is not None:
        fe = front_end(ctx, lun)
        s_array = weighted_latency(lun.read_iops, lun.write_iops, lun.read_latency_s, lun.write_latency_s)
        node = ctx.node_of_lun(lun)
        if node is not None:
            cpu = num(node.average_processor_busy_ratio)  # all processors; serial domains: next line
            serial = max(serial_domains(node).values(), default=None)
    ratio = r_host / s_array if r_host is not None and s_array else None
    gap = r_host - s_array if r_host is not None and s_array is not None else None
    ev: dict[str, float | None] = {
        "host_latency_seconds": r_host,
        "array_latency_seconds": s_array,
        "latency_ratio": ratio,
        "latency_gap_seconds": gap,
        "outstanding_io": n,
        "queue_effective_depth": float(q_eff),
        "queue_fill_ratio": fill,
        "host_iops": iops,
        "node_cpu_busy_ratio": cpu,
        "node_serial_domain_busy_ratio": serial,
        "lif_latency_seconds": fe.lif_latency_s,
    }
    # a full host queue keeps the disk busy: a disk idle as often as san_oversubscription's
    # signature wants waits outside its queue (fabric, front end), and that diagnosis judges it
    idle = num(d.idle_ratio)
    busy = idle is None or idle < th["san_oversubscription"]["min_idle_ratio"]
    level: int | None
    if fill is None or r_host is None:
        level = None if d.read_iops is None else 0
    elif s_array is not None:
        ok = (
            busy
            and ratio is not None
            and ratio >= t["min_latency_ratio"]
            and gap is not None
            and gap >= t["min_latency_gap_seconds"]
            and fill >= t["queue_fill_ratio"]
            and (cpu is None or cpu < t["max_node_cpu_ratio"])
            and (serial is None or serial < t["max_serial_domain_ratio"])
        )
        level = (2 if ratio is not None and ratio >= t["critical_latency_ratio"] else 1) if ok else 0
    else:
        lat_level, _w, _c = class_level(r_host, d.data_class, th)
        level = 1 if busy and fill >= t["queue_fill_ratio"] and lat_level == 0 else 0
    score = clamp01(fill or 0.0) * (clamp01((ratio or 1.0) / t["critical_latency_ratio"]) if level else 0.5)
    advice = ""
    if level and iops and r_host is not None:
        cluster = d.cluster or next(iter(ctx.ontap), "")
        version = ctx.version(cluster) if cluster else None
        x_lun = iops_ceiling.ceiling(version, th["lun_iops_ceiling"])
        s = s_array if s_array else r_host / max(ratio or 1.0, 1.0)
        need_now = luns_needed(iops, s, q_eff, x_lun, t["target_queue_fill"])
        demand = (n or 0.0) / s if s else iops
        need_demand = luns_needed(demand, s, q_eff, x_lun, t["target_queue_fill"])
        ev["demand_estimate_iops"] = demand
        ev["luns_needed"] = float(need_demand)
        array = f" while the array answers in {ms(s_array)}" if s_array is not None else ""
        advice = (
            f"Host {d.host} disk {d.disk}: {n or 0:.1f} of {q_eff} queue slots busy (queue depth "
            f"{d.queue_depth} x {d.io_paths} path(s) carrying I/O), latency {ms(r_host)}{array}. The host queue limits "
            f"throughput. N_luns = max(ceil(X*S/(0.75*Q_eff)), ceil(X/X_lun)) with X_lun = {x_lun:.0f}: "
            f"{need_now} LUN(s) for the observed {iops:.0f} IOPS, {need_demand} to carry the ~{demand:.0f} "
            f"IOPS this concurrency would drive. Spread the data over that many LUNs{spread_how(d)} (or "
            f"{deeper_queue(d, fe)}), {port_budget(fe)}{busy_note(d)}"
        )
    return Observation(ID, disk_key(d), disk_labels(d), level, score, ev, advice)


READS = frozenset({"ontap", "hosts", "history"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [_one(ctx, d, th) for d in ctx.host_disks() if ctx.san_disk(d)]


def deeper_queue(d: HostDiskStats, fe: FrontEnd) -> str:
    """How to deepen the host queue, in the transport's terms (the HBA's for FC)."""
    if fe.protocol == "iscsi":
        if d.platform == "linux":
            return "raise the iSCSI session's queue depth: node.session.queue_depth in iscsid.conf, then log in again"
        return "raise the iSCSI initiator's queue depth and add sessions (MPIO paths)"
    if fe.protocol in ("nvme_tcp", "nvme_fc", "nvme"):
        return (
            "give the NVMe controllers more or deeper I/O queues (nvme connect --nr-io-queues / --queue-size) "
            "and connect every path"
        )
    return queue_depth_fix(d)


def port_budget(fe: FrontEnd) -> str:
    """The limit the extra LUNs must respect on the array's front end."""
    if fe.protocol in ("", "fcp"):
        return (
            f"keeping LUNs x queue depth x hosts within {PORT_LIMIT} outstanding commands per FC target port."
        )
    return f"keeping the {fe.name} LIFs' latency low as the outstanding I/O grows."
