"""sanlens / evidence from Harvest: the evidence panels for sites whose clusters sanlens reads through
NetApp Harvest's series (``source: prometheus``), where sanlens exports no ONTAP counters of its own.

ONTAP panels chart Harvest's cooked gauges as Harvest names them (rates per second, latencies in
microseconds per op, busy in percent); host panels chart the values the diagnosis engine computed
(``sanlens_diagnosis_evidence``), since the host exporters' series carry no LUN identity. Ships
beside the overview in place of the counter dashboards (Helm: ``dashboards.series: harvest``).
"""

from __future__ import annotations

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, dashboard, query_var, topn_var
from ..lib.panels import DASHED, against_thresholds, instant, panel, series, target
from ..lib.promql import (
    HARVEST_US,
    LUN_LATENCY_PAIRS,
    evidence,
    harvest_latency,
    harvest_sum,
    times_configured,
    top,
    version_ceiling,
)
from ..lib.thresholds import bands, data_latency, pct

NAME = "harvest-evidence"
C = 'cluster=~"$cluster"'
SERIAL = "cpu_domain_serial_bottleneck"
IMBALANCE = "disk_busy_imbalance"
LUN = "cluster, svm, volume, lun"
VOLUME = "cluster, svm, volume"


def findings(cfg: MixinConfig, lay: Layout) -> None:
    lay.row("Findings and the host side (engine evidence)")
    scope = f'{C[:-1]}|"'  # host findings without a LUN carry no cluster
    lay.add(
        panel(
            "bargauge",
            "Subjects in a non-ok state",
            "Each diagnosis's subjects at warning (1) or critical (2) now; the overview dashboard lists them "
            "with their evidence and fix.",
            instant(
                f"max by (diagnosis, cluster, host, disk, lun) (sanlens_diagnosis_state{{{scope}}}) > 0",
                "{{diagnosis}} {{host}}{{disk}} {{lun}}",
            ),
            unit="none",
            min_=0,
            max_=2,
            decimals=0,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Host vs array latency (engine evidence)",
            "What the host waits (host_latency_seconds) against what ONTAP serves the LUN in "
            "(lun_latency_seconds, array_latency_seconds), for the disks a host-side diagnosis judges now. "
            "A host far above its LUN is queueing in the host or the fabric.",
            target(
                evidence("host, disk", "", "host_latency_seconds", scope),
                "host {{host}} {{disk}}",
            ),
            target(
                evidence("host, disk", "", "lun_latency_seconds|array_latency_seconds", scope),
                "array {{host}} {{disk}}",
            ),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
            overrides=[series("^array.*", DASHED)],
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Host outstanding IO vs Q_eff (engine evidence)",
            "I/Os in flight on the host disk against its effective queue (queue depth x the paths that carry "
            "I/O) where host_queue_limited judges a disk: at the queue's limit the host, not ONTAP, sets the "
            "latency.",
            target(
                evidence("host, disk", "", "outstanding_io", scope),
                "in flight {{host}} {{disk}}",
            ),
            target(
                evidence("host, disk", "", "queue_effective_depth", scope),
                "Q_eff {{host}} {{disk}}",
            ),
            unit="none",
            min_=0,
            overrides=[series("^Q_eff.*", DASHED)],
        ),
        8,
        8,
    )


def luns(cfg: MixinConfig, lay: Layout) -> None:
    lay.row("LUNs (Harvest lun_*)")
    warn = pct(cfg.threshold("lun_iops_ceiling", "warning_fraction"))
    ceiling = version_ceiling("lun_iops_ceiling", C)
    lay.add(
        panel(
            "timeseries",
            "LUN IOPS vs version ceiling",
            f"The $topn busiest LUNs (lun_read_ops + lun_write_ops) against {warn} of the ONTAP-version ceiling "
            "lun_iops_ceiling uses (the exporter's live threshold).",
            target(top(harvest_sum(LUN, C, "lun_read_ops", "lun_write_ops")), "{{lun}}"),
            target(
                times_configured(f"({ceiling})", "lun_iops_ceiling", "warning_fraction"),
                f"{warn} of ceiling {{{{cluster}}}}",
            ),
            unit="iops",
            min_=0,
            overrides=[series(f"^{warn} of ceiling.*", DASHED)],
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "LUN latency",
            "Latency per op inside ONTAP for the $topn slowest LUNs: lun_avg_read_latency and "
            "lun_avg_write_latency (microseconds) weighted by their ops, only where at least "
            f"{cfg.latency_min_iops:g} ops/s ran.",
            target(
                top(harvest_latency(LUN, C, LUN_LATENCY_PAIRS, min_iops=cfg.latency_min_iops)),
                "{{lun}}",
            ),
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
            "LUN throughput",
            "Bytes per second read and written, the $topn busiest LUNs (lun_read_data + lun_write_data).",
            target(top(harvest_sum(LUN, C, "lun_read_data", "lun_write_data")), "{{lun}}"),
            unit="Bps",
            min_=0,
        ),
        8,
        8,
    )


def front_end_and_cpu(cfg: MixinConfig, lay: Layout) -> None:
    lay.row("Front end and CPU domains (Harvest fcp_*, node_*)")
    lay.add(
        panel(
            "timeseries",
            "FC port throughput",
            "Bytes per second through each FC target port (fcp_read_data + fcp_write_data); NVMe/FC traffic "
            "counts here too. An over-subscribed front end shows few ports near their line rate.",
            target(
                top(harvest_sum("cluster, node, port", C, "fcp_read_data", "fcp_write_data")),
                "{{node}} {{port}}",
            ),
            unit="Bps",
            min_=0,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "FC queue full per Harvest poll",
            "QUEUE FULL answers each FC port sent in Harvest's last poll (fcp_queue_full counts one poll, "
            "not a rate): hosts sending more than the port's queue holds.",
            target(top(f"sum by (cluster, node, port) (fcp_queue_full{{{C}}})"), "{{node}} {{port}}"),
            unit="none",
            min_=0,
        ),
        8,
        8,
    )
    names = ("kahuna_warning_ratio", "serial_critical_ratio")
    lay.add(
        against_thresholds(
            cfg,
            "CPU domain busy (ratio of one core)",
            "node_cpu_domain_busy per node and domain (percent of one core, here as a ratio), the busiest "
            f"$topn; dashed: the live thresholds of {SERIAL}. Kahuna, the serial domain, tops out at 100 %.",
            target(top(f'node_cpu_domain_busy{{{C}, metric!="idle"}} / 100'), "{{node}} {{metric}}"),
            diagnosis=SERIAL,
            names=names,
            unit="percentunit",
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Average CPU busy vs cpu_busy",
            "node_avg_processor_busy (all processors) and, dashed, node_cpu_busy, which follows the busiest "
            "domain: a serial bottleneck shows a hot cpu_busy over a low average.",
            target(f"max by (cluster, node) (node_avg_processor_busy{{{C}}}) / 100", "{{node}}"),
            target(f"max by (cluster, node) (node_cpu_busy{{{C}}}) / 100", "cpu_busy {{node}}"),
            unit="percentunit",
            min_=0,
            max_=1,
            overrides=[series("^cpu_busy.*", DASHED)],
        ),
        12,
        8,
    )


def volumes_and_disks(cfg: MixinConfig, lay: Layout) -> None:
    lay.row("Volumes and disks (Harvest volume_*, raid_disk_busy)")
    lay.add(
        panel(
            "timeseries",
            "Volume latency",
            "volume_avg_latency (microseconds per op) of the $topn slowest volumes, where at least "
            f"{cfg.latency_min_iops:g} ops/s ran.",
            target(
                top(
                    f"max by ({VOLUME}) (volume_avg_latency{{{C}}}) * {HARVEST_US:g} and on ({VOLUME}) "
                    f"(max by ({VOLUME}) (volume_total_ops{{{C}}}) >= {cfg.latency_min_iops:g})"
                ),
                "{{volume}}",
            ),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        8,
        8,
    )
    busy = f"raid_disk_busy{{{C}}} / 100"
    lay.add(
        panel(
            "timeseries",
            "Disk busy per aggregate",
            "Mean and busiest disk of each aggregate (Harvest's raid_disk_busy, per disk in its RAID group).",
            target(f"avg by (cluster, aggr) ({busy})", "mean {{aggr}}"),
            target(f"max by (cluster, aggr) ({busy})", "max {{aggr}}"),
            unit="percentunit",
            thresholds=bands(cfg, IMBALANCE, "min_max_busy_ratio"),
            min_=0,
            max_=1,
            overrides=[series("^max.*", DASHED)],
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Disk busy imbalance (coefficient of variation)",
            "stddev / mean of disk busy within each aggregate; above the line, disk_busy_imbalance looks "
            "for new RAID groups busier than the old ones (an expansion without a reallocate).",
            target(f"stddev by (cluster, aggr) ({busy}) / avg by (cluster, aggr) ({busy})", "{{aggr}}"),
            unit="none",
            thresholds=bands(cfg, IMBALANCE, "cv"),
            min_=0,
        ),
        8,
        8,
    )


def build(cfg: MixinConfig) -> Json:
    lay = Layout()
    findings(cfg, lay)
    luns(cfg, lay)
    front_end_and_cpu(cfg, lay)
    volumes_and_disks(cfg, lay)
    cluster = query_var(
        "cluster", "Cluster", 'label_values(sanlens_ontap_cluster_info{collection="harvest"}, cluster)'
    )
    return dashboard(
        cfg,
        NAME,
        "sanlens / evidence from Harvest",
        "The evidence behind sanlens's diagnoses where it reads ONTAP through NetApp Harvest's series: "
        "LUNs, front end, CPU domains, volumes and disks as Harvest exports them, the host side as the "
        "engine computed it.",
        [cluster, topn_var(cfg.top_n)],
        lay,
    )
