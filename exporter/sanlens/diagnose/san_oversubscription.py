"""san_oversubscription: the host waits, yet neither its disk nor the array is busy.

Signature (the Microsoft SQL Server SAN case): host latency at or
above its class threshold (latency_slo's data/log/tempdb values), host disk
idle >= 50 % (Linux: from busy time bounded by the requests in flight, since kernels
from 5.0 until 2024 count a jiffy per I/O start and short I/Os look busy), and
headroom behind it. The time is lost between the host and the
array: fabric, front-end ports, fan-in, zoning, HBA queue.

- Host-only: headroom is E = host IOPS / ``diagnose.backend_iops_capacity`` < 0.5.
  Without a configured capacity there is no utilization evidence and the
  finding stops at warning.
- Joined (the disk maps to a polled LUN): host latency must be >= 5x the ONTAP
  LUN latency, and the LUN's aggregate disks must be < 50 % busy on average
  (or E < 0.5 when no disk data is there).
- ONTAP-only: no subject (the signature is the host's view).
- A local disk (``Context.san_disk``: a reported serial no polled LUN carries) is
  no subject: its latency is not the fabric's.
"""

from __future__ import annotations

import statistics

from sanlens.diagnose.base import Context, Observation, Thresholds, disk_key, disk_labels, ms, pct
from sanlens.diagnose.front_end import FrontEnd, front_end
from sanlens.diagnose.host_advice import busy_note, fabric_checks
from sanlens.diagnose.latency_slo import HOST_LATENCY, class_level
from sanlens.diagnose.numeric import clamp01, num, total, weighted_latency, worst_latency
from sanlens.diagnose.spec import Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.diagnose.waterfall import of_host_disk
from sanlens.model import HostDiskStats

SRC_MS_OVERSUB = (
    "Microsoft SQL Server SAN over-subscription case: seconds of host latency with disks "
    "> 50 % idle, cured by 2 -> 4 -> 6 front-end adapters"
)

SPEC = DiagnosisSpec(
    id="san_oversubscription",
    title="SAN over-subscription (fabric / front-end bottleneck)",
    summary=(
        "Host latency above its class threshold while the host disk is mostly idle and the array "
        "has headroom; with array data, host latency >= 5x the LUN latency."
    ),
    subject="host disk",
    thresholds=(
        Threshold(
            "min_idle_ratio", 0.5, "ratio", SRC_MS_OVERSUB, 0.0, 1.0, "above", "host disk % idle / 100"
        ),
        Threshold(
            "max_backend_utilization",
            0.5,
            "ratio",
            "SQL Server SAN case: spindle-equivalent utilization E = backend IOPS / capacity < 0.5",
            0.0,
            1.0,
            "below",
            "host IOPS / backend_iops_capacity, or mean busy of the LUN's aggregate disks",
        ),
        Threshold(
            "min_host_to_array_latency_ratio",
            5.0,
            "ratio",
            SRC_MS_OVERSUB,
            1.0,
            1000.0,
            "above",
            "host latency / ONTAP LUN latency (joined data only)",
        ),
    ),
    sustain_s=600.0,
    exit_s=600.0,
    severity={
        1: "latency >= class warning (or critical without any utilization evidence)",
        2: "latency >= class critical, idle, headroom (and >= 5x the LUN latency when joined)",
    },
    fix=(
        "Add front-end target ports or paths (FC ports, or iSCSI / NVMe/TCP LIFs on more or faster Ethernet "
        "ports); check fan-in (7:1 to 12:1), zoning or the network, and HBA queue depth."
    ),
    evidence=(
        HOST_LATENCY,
        Evidence(
            "lun_latency_seconds",
            "seconds",
            "IOPS-weighted latency of the LUN behind the disk",
            "ONTAP LUN latency",
            "duration",
        ),
        Evidence(
            "host_to_array_latency_ratio",
            "ratio",
            "IOPS-weighted host latency / LUN latency",
            "host/array latency",
            "multiple",
        ),
        Evidence(
            "outside_array_seconds",
            "seconds",
            "host latency not spent inside ONTAP: host queue, transport, and ONTAP's Network component on "
            "writes (waiting for the host's data)",
            "outside the array",
            "duration",
        ),
        Evidence("host_idle_ratio", "ratio", "% Idle Time / 100 of the host disk", "disk idle", "percent"),
        Evidence(
            "backend_utilization_ratio",
            "ratio",
            "mean busy of the LUN's aggregate disks, or host IOPS / backend_iops_capacity",
            "backend utilization",
            "percent",
        ),
        Evidence("host_iops", "ops/s", "reads + writes of the host disk", "host IOPS", "iops"),
        Evidence(
            "fc_port_queue_full_per_second",
            "1/s",
            "queue-full responses of the LUN node's FC target ports",
            "FC port queue-full/s",
        ),
        Evidence(
            "fc_port_utilization_ratio",
            "ratio",
            "busiest of those ports, share of its link speed",
            "busiest FC port",
            "percent",
        ),
        Evidence(
            "ethernet_port_utilization_ratio",
            "ratio",
            "busiest Ethernet port under the node's iSCSI or NVMe/TCP LIFs, share of its link speed",
            "busiest Ethernet port",
            "percent",
        ),
        Evidence(
            "lif_latency_seconds",
            "seconds",
            "IOPS-weighted latency at the node's iSCSI or NVMe LIFs (the array's view of the front end)",
            "LIF latency",
            "duration",
        ),
        Evidence("host_read_latency_seconds", "seconds", "host read latency"),
        Evidence("host_write_latency_seconds", "seconds", "host write latency"),
        Evidence(
            "critical_threshold_seconds",
            "seconds",
            "latency_slo's critical threshold for the disk's data class",
        ),
    ),
    dashboard=Dashboard("sanlens-io-path", ("cluster", "host")),
    pages=True,
    # the disks of one host share its HBAs, fabric and front-end ports: one root cause
    incident_by=("cluster", "host"),
    reads=Reads(
        tables=("lun", "namespace", "disk:constituent", "fcp", "iscsi_lif", "nvmf_lif", "nic_common"),
        endpoints=("/api/network/fc/ports", "/api/network/ip/interfaces", "/api/network/ethernet/ports"),
        offline=("host",),
    ),
)
ID = SPEC.id


def aggregate_busy(ctx: Context, cluster: str, aggregate: str) -> float | None:
    """Mean busy ratio of an aggregate's disks in the latest poll."""
    view = ctx.ontap.get(cluster)
    if view is None or not aggregate:
        return None
    vals = [b for d in view.disks if d.aggregate == aggregate and (b := num(d.busy_ratio)) is not None]
    return statistics.fmean(vals) if vals else None


def _one(ctx: Context, d: HostDiskStats, th: Thresholds) -> Observation:
    t = th[ID]
    lat, op = worst_latency(
        d.read_iops, d.write_iops, d.read_latency_s, d.write_latency_s, th["latency_slo"]["min_iops"]
    )
    lat_level, _warn, crit = class_level(lat, d.data_class, th)
    idle = num(d.idle_ratio)
    iops = total(d.read_iops, d.write_iops)
    lun = ctx.lun_of(d)
    host_avg = weighted_latency(d.read_iops, d.write_iops, d.read_latency_s, d.write_latency_s)
    lun_lat = busy = None
    fe = FrontEnd()
    if lun is not None:
        # array-side evidence of a front-end bottleneck: too few target ports turn commands away (queue
        # full) or run at line rate long before the disks or the CPU are busy
        fe = front_end(ctx, lun)
        lun_lat = weighted_latency(lun.read_iops, lun.write_iops, lun.read_latency_s, lun.write_latency_s)
        vol = ctx.volume(lun.cluster, lun.svm, lun.volume)
        busy = aggregate_busy(ctx, lun.cluster, vol.aggregate if vol else "")
    cap = ctx.backend_iops_capacity
    util = busy if busy is not None else (iops / cap if cap and iops is not None else None)
    outside = _outside_array(ctx, d, host_avg) if lun_lat is not None else None
    # with ONTAP's breakdown, the array's own time excludes the write data it waited for from the host
    array_s = host_avg - outside if outside is not None and host_avg is not None else lun_lat
    ratio = host_avg / array_s if host_avg is not None and array_s else None
    ev: dict[str, float | None] = {
        "host_latency_seconds": lat,
        "host_read_latency_seconds": d.read_latency_s,
        "host_write_latency_seconds": d.write_latency_s,
        "host_idle_ratio": idle,
        "host_iops": iops,
        "backend_utilization_ratio": util,
        "lun_latency_seconds": lun_lat,
        "host_to_array_latency_ratio": ratio,
        "outside_array_seconds": outside,
        "fc_port_utilization_ratio": fe.port_utilization if fe.protocol in ("fcp", "nvme_fc") else None,
        "fc_port_queue_full_per_second": fe.queue_full_per_second,
        "ethernet_port_utilization_ratio": fe.port_utilization
        if fe.protocol in ("iscsi", "nvme_tcp")
        else None,
        "lif_latency_seconds": fe.lif_latency_s,
        "critical_threshold_seconds": crit,
    }
    if lat_level is None:
        level = None if d.read_iops is None else 0
    else:
        checks = [idle is not None and idle >= t["min_idle_ratio"]]
        if util is not None:
            checks.append(util < t["max_backend_utilization"])
        if ratio is not None:
            checks.append(ratio >= t["min_host_to_array_latency_ratio"])
        level = lat_level if all(checks) else 0
        if level and util is None and ratio is None:
            level = min(level, 1)  # no utilization evidence: warn, do not page
    held = bool(level) and lat_level == 2 and level == 1  # critical latency, capped for want of evidence
    score = clamp01((lat or 0.0) / crit) if level else 0.5 * clamp01((lat or 0.0) / crit)
    advice = ""
    if level:
        where = f"Host {d.host} disk {d.disk}" + (f" (LUN {d.lun} on {d.cluster})" if d.mapped else "")
        array = f", while the array answers in {ms(lun_lat)}" if lun_lat is not None else ""
        if fe.lif_latency_s is not None:
            array += f"; its {fe.name} LIFs answer in {ms(fe.lif_latency_s)}"
        if fe.queue_full_per_second:
            array += f"; its FC target ports answer {fe.queue_full_per_second:.0f} queue-full responses/s"
        if fe.port_utilization is not None:
            array += f" ({fe.port_evidence})"
        advice = (
            f"{where}: {op} latency {ms(lat)} with the disk {pct(idle)} idle at {iops or 0:.0f} IOPS{array}. "
            + (held_note(d.data_class, crit, lun is not None) if held else "")
            + f"The I/O waits in the fabric or front-end, not in the disks: {front_end_fix(fe)}, "
            f"{fabric_checks(d)}. "
            "In the field case 2 -> 4 -> 6 front-end adapters cut latency by orders of magnitude."
            f"{busy_note(d)}"
        )
    return Observation(ID, disk_key(d), disk_labels(d), level, score, ev, advice)


READS = frozenset({"ontap", "hosts"})


def _outside_array(ctx: Context, d: HostDiskStats, host_avg: float | None) -> float | None:
    """Seconds of the host's latency spent outside ONTAP, from the disk's waterfall; None without
    ONTAP's breakdown. ONTAP's Network component of a write is mostly the wait for the host to send
    its data (the transfer-ready round trip over the fabric), so the writes' share of it counts too."""
    wf = of_host_disk(ctx, d)
    if wf is None or not wf.workload or host_avg is None:
        return None
    ops = total(d.read_iops, d.write_iops) or 0.0
    writes = (num(d.write_iops) or 0.0) / ops if ops > 0 else 0.0
    p = wf.parts
    return p.get("host_queue", 0.0) + p.get("transport", 0.0) + writes * p.get("network", 0.0)


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [_one(ctx, d, th) for d in ctx.host_disks() if ctx.san_disk(d)]


def front_end_fix(fe: FrontEnd) -> str:
    """What to add, in the front end's own terms."""
    if fe.protocol in ("iscsi", "nvme_tcp"):
        return (
            f"add {fe.name} LIFs on more (or faster) Ethernet ports and the host sessions or paths to use them, "
            "and check the network between (MTU, flow control, a shared or oversubscribed switch uplink)"
        )
    return "add FC target ports or paths"


def held_note(cls: str, crit: float, joined: bool) -> str:
    """Why a finding whose latency is past the critical objective stays a warning, and what lifts it."""
    missing = (
        "the LUN joined to it carries no usable latency and its aggregate no disk busy"
        if joined
        else "no ONTAP data is joined to this disk"
    )
    return (
        f"Held at warning although the latency is past the {cls} critical objective ({ms(crit)}): {missing} "
        "and diagnose.backend_iops_capacity is not set, so nothing shows the array has headroom. "
        "Add an ONTAP target (or, for sanlens analyze, an ONTAP capture) for the cluster behind it, "
        "or set diagnose.backend_iops_capacity to the IOPS the backend can serve, and it can page. "
    )
