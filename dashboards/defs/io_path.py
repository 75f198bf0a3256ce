"""sanlens / I/O path per LUN: where the time goes between a host disk (Windows PhysicalDisk or a Linux
dm-multipath map) and its ONTAP LUN, and whether the paths to it (host multipath paths and path devices,
FC LIFs and target ports, LUN state) are all there."""

from __future__ import annotations

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, TopVar, chained, dashboard
from ..lib.panels import DASHED, Column, fixed, instant, mapped, panel, series, table, target
from ..lib.promql import (
    RW,
    evidence,
    host_lun,
    host_per_op,
    host_q_eff,
    host_srate,
    mbps,
    per_op,
    rate,
    sel,
    srate,
    times_configured,
    top,
    version_ceiling,
)
from ..lib.thresholds import bands, data_latency, kilo, ms, pct, steps

NAME = "io-path"
HOST_DISK = "sanlens_host_disk"
LUN = "sanlens_ontap_lun"
NAMESPACE = "sanlens_ontap_namespace"  # NVMe namespaces: the LUN panels draw them the same way
PATH_DIAGNOSES = ("host_path_loss", "lun_not_online", "fc_port_down")
FINDING = "diagnosis, subject, cluster, host, lun, node, port"
SEVERITY = mapped("color-background", ("1", "warning", "orange"), ("2", "critical", "red"))


def lun_row(cfg: MixinConfig, lay: Layout) -> None:
    th = cfg.threshold
    m = cfg.latency_min_iops
    hs = sel("cluster", "host", "lun")  # on sanlens_host_disk_info: the LUN identity lives there
    hc = sel("host")  # on the host-disk counters and gauges: host, disk[, op] only
    os_ = sel("cluster", "lun")
    ns_ = 'cluster=~"$cluster", namespace=~"$lun"'  # an NVMe namespace's row: the same path variable
    gap = (
        f"({host_per_op('cluster, lun, op', hc, hs, min_iops=m)}) - on (cluster, lun, op) "
        f"({per_op('cluster, lun, op', LUN, os_, RW, min_iops=m)})"
    )
    q_eff = f"max by (host, disk) ({host_lun(f'({host_q_eff(hc)})', hs)})"
    disk = "{{host}} disk {{disk}}"
    # Windows: Current Disk Queue Length at the poll; Linux: mean I/Os in flight (the queue-time integral)
    queued = f"({rate(f'{HOST_DISK}_queue_seconds_total', hc)} or {HOST_DISK}_queue_length{{{hc}}})"
    idle = (
        f"clamp_max({rate(f'{HOST_DISK}_idle_seconds_total', hc)}, 1) "
        f"or clamp_min(1 - {rate(f'{HOST_DISK}_busy_seconds_total', hc)}, 0)"
    )
    lay.row("LUN $lun", repeat="lun")
    lay.add(
        panel(
            "timeseries",
            "Latency: host vs ONTAP LUN",
            "Average latency per op as the host sees it (Windows Avg. Disk sec/op, Linux iostat r_await/w_await) "
            "and as ONTAP serves it, "
            f"only where at least {m:g} ops/s ran. Dashed lines: the data-class thresholds of latency_slo "
            f"({ms(th('latency_slo', 'data_warning_seconds'))} warning, "
            f"{ms(th('latency_slo', 'data_critical_seconds'))} critical).",
            target(host_per_op("host, disk, op", hc, hs, min_iops=m), f"host {disk} {{{{op}}}}"),
            target(
                f"{per_op('cluster, op', LUN, os_, RW, min_iops=m)} or "
                f"{per_op('cluster, op', NAMESPACE, ns_, RW, min_iops=m)}",
                "ONTAP {{op}}",
            ),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        9,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Fabric + queue time (host - ONTAP)",
            "Host latency minus ONTAP LUN latency: time spent in the host queue, HBA, fabric and front-end ports. "
            f"Dashed line: the {ms(th('host_queue_limited', 'min_latency_gap_seconds'))} gap of host_queue_limited. "
            "A large gap with an idle array points to san_oversubscription or host_queue_limited.",
            target(gap, "{{op}}"),
            unit="s",
            thresholds=bands(cfg, "host_queue_limited", "min_latency_gap_seconds"),
        ),
        9,
        8,
    )
    c = sel("cluster")
    lun_aggregate = (
        f"max by (cluster, aggregate) (sanlens_ontap_volume_info{{{c}}} * on (cluster, svm, volume) group_left () "
        f"max by (cluster, svm, volume) (sanlens_ontap_lun_info{{{os_}}}))"
    )
    lay.add(
        panel(
            "stat",
            "Backend utilization E",
            "Mean busy of the disks of the LUN's aggregate: the utilization evidence san_oversubscription uses "
            "with array data (spindle-equivalent E). Below "
            f"{pct(th('san_oversubscription', 'max_backend_utilization'))} the array could serve far more than "
            "the host gets.",
            instant(
                f"avg by (cluster, aggregate) (disk:sanlens_ontap_disk_busy:ratio_rate5m{{{c}}}) "
                f"* on (cluster, aggregate) group_left () {lun_aggregate}",
                "{{aggregate}}",
            ),
            unit="percentunit",
            thresholds=bands(
                cfg, "san_oversubscription", "max_backend_utilization", colors=("green",), base=("blue", None)
            ),
            min_=0,
            max_=1,
        ),
        6,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Host outstanding IO vs Q_eff",
            "Host queue: Current Disk Queue Length (Windows) or mean I/Os in flight from the queue-time "
            "integral (Linux, iostat aqu-sz); Little's law N = IOPS x R; and Q_eff = queue depth x the paths that "
            "carry I/O (ALUA Active/Optimized where the host reports path states, else the active paths). "
            f"At {pct(th('host_queue_limited', 'queue_fill_ratio'))} of Q_eff (queue_fill_ratio) the host queue "
            "limits throughput (host_queue_limited).",
            target(f"sum by (host, disk) ({host_lun(queued, hs)})", f"queue {disk}"),
            target(
                host_srate("host, disk", f"{HOST_DISK}_latency_seconds_total", hc, hs), f"N = IOPS x R {disk}"
            ),
            target(q_eff, f"Q_eff {disk}"),
            target(times_configured(q_eff, "host_queue_limited", "queue_fill_ratio"), f"fill limit {disk}"),
            unit="short",
            min_=0,
            overrides=[series("^(Q_eff|fill limit).*", DASHED)],
        ),
        6,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "% idle",
            "Host disk % idle time (Windows % Idle Time; Linux 1 - the busy share of io_ticks). Above "
            f"{pct(th('san_oversubscription', 'min_idle_ratio'))} (dashed) while "
            "latency is high, the disk is waiting on the path, not busy: the san_oversubscription signature.",
            target(host_lun(f"({idle})", hs), disk),
            unit="percentunit",
            thresholds=bands(cfg, "san_oversubscription", "min_idle_ratio"),
            min_=0,
            max_=1,
        ),
        6,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "IOPS vs what the backend could serve",
            "Host IOPS and ONTAP LUN IOPS against the LUN's ONTAP-version ceiling "
            f"({kilo(th('lun_iops_ceiling', 'ceiling_pre_9_9_1_iops'))} before 9.9.1, "
            f"{kilo(th('lun_iops_ceiling', 'ceiling_iops'))} from it), as the lun_iops_ceiling diagnosis computes it.",
            target(host_srate("host, disk", f"{HOST_DISK}_ops_total", hc, hs), f"host {disk}"),
            target(
                f"{srate('cluster', f'{LUN}_ops_total', os_)} or {srate('cluster', f'{NAMESPACE}_ops_total', ns_)}",
                "ONTAP LUN",
            ),
            target(version_ceiling("lun_iops_ceiling", sel("cluster")), "LUN ceiling (version)"),
            unit="iops",
            min_=0,
            overrides=[series("^LUN ceiling.*", DASHED, fixed("red"))],
        ),
        6,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Throughput: host vs ONTAP LUN",
            "Bytes per second, reads and writes together, as the host moves them and as ONTAP serves the LUN.",
            target(host_srate("host, disk", f"{HOST_DISK}_bytes_total", hc, hs), f"host {disk}"),
            target(f"{mbps('cluster', LUN, os_)} or {mbps('cluster', NAMESPACE, ns_)}", "ONTAP LUN"),
            unit="Bps",
            min_=0,
        ),
        6,
        8,
    )


def paths_row(cfg: MixinConfig, lay: Layout) -> None:
    """Are all the paths there: host MPIO paths against the config, LUN state, FC target ports."""
    hs = sel("cluster", "host", or_blank=True)
    c = sel("cluster")
    findings = "|".join(PATH_DIAGNOSES)
    state = f'sanlens_diagnosis_state{{diagnosis=~"{findings}", {hs}}}'
    worst = top(f"max by ({FINDING}) ({state})")
    lay.row("SAN paths")
    lay.add(
        table(
            "Path findings",
            "host_path_loss (a host disk on fewer paths than configured), lun_not_online (a LUN not online, or a "
            "thin LUN in a nearly full volume) and fc_port_down (an enabled target port that lost its link), worst "
            "first. Empty is good.",
            Column(worst, "Severity", "none", SEVERITY),
            *(
                Column(f"{evidence(FINDING, did, name, hs)} and on ({FINDING}) {worst}", title, "none")
                for did, name, title in (
                    ("host_path_loss", "active_paths", "Active paths"),
                    ("host_path_loss", "configured_paths", "Configured paths"),
                )
            ),
            hide=("Time", "__name__", "job", "instance"),
            options={"sortBy": [{"displayName": "Severity", "desc": True}]},
        ),
        12,
        7,
    )
    hc = sel("host", or_blank=True)
    ratio = (
        f"min by (host, disk) ({host_lun(f'{HOST_DISK}_paths{{{hc}}}', hs, 'cluster')}) / "
        f"max by (host, disk) ({HOST_DISK}_configured_paths{{{hc}}})"
    )
    lay.add(
        panel(
            "bargauge",
            "Active / configured paths (worst disks)",
            "Multipath paths (Windows MPIO, Linux dm-multipath) each host disk runs on over the paths the config says it has; below 100 % is "
            "host_path_loss. The worst $topn disks.",
            instant(f"bottomk($topn, {ratio})", "{{host}} disk {{disk}}"),
            unit="percentunit",
            thresholds=steps(("red", None), ("green", 1)),
            min_=0,
            max_=1,
        ),
        12,
        7,
    )
    path_devices(cfg, lay)
    lay.row("Front end: FC LIFs and target ports")
    lay.add(
        panel(
            "timeseries",
            "FC LIF latency (worst)",
            "ONTAP's latency per op at each FC LIF (5m mean, only where at least "
            f"{cfg.latency_min_iops:g} ops/s ran): the array's view of the front end. The worst $topn LIFs.",
            target(top(f"fcp_lif:sanlens_ontap_fcp_lif_latency_seconds:mean5m{{{c}}}"), "{{node}} {{lif}}"),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "FC port utilization vs link speed (busiest)",
            "The busier direction of each FC target port over its negotiated link's data rate (100 MB/s per "
            "Gbit/s of fabric.connected_speed). Near 100 % the port is the bottleneck. The busiest $topn ports.",
            target(
                top(f"fcp_port:sanlens_ontap_fcp_port_utilization:ratio_rate5m{{{c}}}"), "{{node}} {{port}}"
            ),
            unit="percentunit",
            thresholds=steps(("green", None), ("orange", 0.7), ("red", 0.9)),
            min_=0,
            max_=1,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "FC port queue-full responses",
            "Commands the port turned away because its queue was full (per second): the array-side sign of an "
            "over-subscribed front end (san_oversubscription quotes it). The $topn worst ports.",
            target(top(f"fcp_port:sanlens_ontap_fcp_port_queue_full:rate5m{{{c}}} > 0"), "{{node}} {{port}}"),
            unit="reqps",
            min_=0,
        ),
        8,
        8,
    )
    lif_by = "cluster, node, svm, lif"
    lay.row("Front end: iSCSI and NVMe-oF LIFs and their Ethernet ports")
    lay.add(
        panel(
            "timeseries",
            "iSCSI and NVMe LIF latency (worst)",
            "ONTAP's latency per op at each iSCSI LIF (iscsi_lif) and NVMe/TCP or NVMe/FC LIF (nvmf_lif), only "
            f"where at least {cfg.latency_min_iops:g} ops/s ran: low here while hosts wait seconds means the "
            "time goes in the network or the host, not the array. The worst $topn LIFs.",
            target(
                top(per_op(lif_by, "sanlens_ontap_iscsi_lif", c, RW, min_iops=cfg.latency_min_iops)),
                "iSCSI {{node}} {{lif}}",
            ),
            target(
                top(per_op(lif_by, "sanlens_ontap_nvmf_lif", c, RW, min_iops=cfg.latency_min_iops)),
                "NVMe {{node}} {{lif}}",
            ),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        12,
        8,
    )
    lif_bytes = (
        f"(sum by ({lif_by}, op) ({rate('sanlens_ontap_iscsi_lif_bytes_total', c)}) "
        f"or sum by ({lif_by}, op) ({rate('sanlens_ontap_nvmf_lif_bytes_total', c)}))"
    )
    on_port = (
        f"sum by (cluster, node, port, op) ({lif_bytes} * on ({lif_by}) group_left (port) "
        f"max by ({lif_by}, port) (sanlens_ontap_ip_lif_info{{{c}}}))"
    )
    lay.add(
        panel(
            "timeseries",
            "Ethernet port utilization under SAN LIFs (busiest)",
            "The busier direction of the iSCSI and NVMe/TCP bytes on each Ethernet port (every LIF on it added "
            "up) over the port's data rate (125 MB/s per Gbit/s of /api/network/ethernet/ports speed). Near "
            "100 % the port is the bottleneck: the iSCSI or NVMe/TCP form of san_oversubscription. The "
            "busiest $topn ports.",
            target(
                top(
                    f"max by (cluster, node, port) ({on_port}) / on (cluster, node, port) "
                    f"sanlens_ontap_ethernet_port_data_rate_bytes_per_second{{{c}}}"
                ),
                "{{node}} {{port}}",
            ),
            unit="percentunit",
            thresholds=steps(("green", None), ("orange", 0.7), ("red", 0.9)),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    lay.add(
        table(
            "FC target ports not online",
            "Ports whose /api/network/fc/ports state is not online (fc_port_down pages for an enabled port that "
            "lost its link; link_not_connected is a port never cabled). Empty is good.",
            Column(top(f'sanlens_ontap_fc_port_info{{{c}, state!="online"}}')),
            hide=("Time", "Value", "__name__", "job", "instance"),
        ),
        24,
        5,
    )


def path_devices(cfg: MixinConfig, lay: Layout) -> None:
    """Each path device under a Linux dm-multipath map: its state and what it carries."""
    hc = sel("host", or_blank=True)
    labels = "state, access_state, device, wwid"
    base = (
        f"{HOST_DISK}_path_info{{{hc}}} * on (host, disk) group_left (device, wwid) "
        f"{HOST_DISK}_multipath_info{{{hc}}}"
    )
    by = "host, disk, path"

    def per_path(expr: str) -> str:
        return f"({expr}) * on ({by}) group_left ({labels}) ({base})"

    ops = f"sum by ({by}) ({rate(f'{HOST_DISK}_path_ops_total', hc)})"
    lat = f"sum by ({by}) ({rate(f'{HOST_DISK}_path_latency_seconds_total', hc)})"
    lay.add(
        table(
            "Path devices (Linux dm-multipath)",
            "Every path device (sdX) under each multipath map (dm-N, WWID): its device state (running, "
            "transport-offline, ...) and ALUA access state, the I/O it carries and its latency per op. A path "
            "not running, or one path carrying everything while its siblings idle, is where to look "
            "(`multipath -ll`). Windows MPIO paths are counted in the gauge above.",
            Column(base),
            Column(per_path(ops), "IOPS", "iops"),
            Column(per_path(f"{lat} / ({ops} >= {cfg.latency_min_iops:g})"), "Latency per op", "s"),
            Column(per_path(rate(f"{HOST_DISK}_path_busy_seconds_total", hc)), "Busy", "percentunit"),
            hide=("Time", "Value #A", "__name__", "job", "instance"),
            options={"sortBy": [{"displayName": "state", "desc": True}]},
        ),
        24,
        7,
    )


def build(cfg: MixinConfig) -> Json:
    worst_disk = "max by ({name}) (host_disk:sanlens_host_disk_latency_seconds:mean5m{{{sel}}})"
    lay = Layout()
    lay.row("Mapped LUNs")
    hs = sel("cluster", "host", "lun")
    lay.add(
        table(
            "Host disks mapped to ONTAP LUNs",
            "Each host disk joined to its LUN (by serial or static mapping), with its drives and data class: "
            "the disks of the selected (worst $topn) LUNs.",
            Column(f"{HOST_DISK}_info{{{hs}}}"),
            hide=("Time", "Value", "__name__", "job", "instance"),
        ),
        24,
        6,
    )
    lun_row(cfg, lay)
    paths_row(cfg, lay)
    return dashboard(
        cfg,
        NAME,
        "sanlens / I/O path per LUN",
        "Where the time goes between a host disk (Windows or Linux dm-multipath) and its ONTAP LUN (host vs array latency, queues, idle "
        "time, IOPS headroom, throughput), one row per LUN of the worst $topn, and whether every path is there "
        "(multipath paths and path devices, LUN state, FC LIFs and target ports).",
        chained(
            TopVar("host", "Host (worst latency)", worst_disk.format(name="host", sel="{sel}")),
            TopVar(
                "lun",
                "LUN (worst host latency)",
                worst_disk.format(name="lun", sel='{sel}, lun!=""'),
            ),
            top_n=cfg.top_n,
        ),
        lay,
    )
