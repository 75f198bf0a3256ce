"""sanlens / I/O path per LUN: where the time goes between a Windows host disk and its ONTAP LUN."""

from __future__ import annotations

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, Var, chained, dashboard
from ..lib.panels import DASHED, Column, fixed, instant, panel, series, table, target
from ..lib.promql import RW, evidence, per_op, rate, sel, srate, times_configured
from ..lib.thresholds import bands, data_latency, kilo, ms, pct

NAME = "io-path"
HOST_DISK = "sanlens_host_disk"
LUN = "sanlens_ontap_lun"


def build(cfg: MixinConfig) -> Json:
    th = cfg.threshold
    hs = sel("cluster", "host", "lun")
    os_ = sel("cluster", "lun")
    gap = f"({per_op('cluster, lun, op', HOST_DISK, hs)}) - on (cluster, lun, op) ({per_op('cluster, lun, op', LUN, os_, RW)})"
    q_eff = f"max by (host, disk) ({HOST_DISK}_queue_depth{{{hs}}} * {HOST_DISK}_paths{{{hs}}})"
    disk = "{{host}} disk {{disk}}"
    lay = Layout()
    lay.row("Mapped LUNs")
    lay.add(
        table(
            "Host disks mapped to ONTAP LUNs",
            "Each host disk joined to its LUN (by serial or static mapping), with its drives and data class.",
            Column(f"{HOST_DISK}_info{{{hs}}}"),
            hide=("Time", "Value", "__name__", "job", "instance"),
        ),
        24,
        6,
    )
    lay.row("LUN $lun", repeat="lun")
    lay.add(
        panel(
            "timeseries",
            "Latency: host vs ONTAP LUN",
            "Average latency per op as the host sees it (PerfMon Avg. Disk sec/op) and as ONTAP serves it. "
            "Dashed lines: the data-class thresholds of latency_slo "
            f"({ms(th('latency_slo', 'data_warning_seconds'))} warning, "
            f"{ms(th('latency_slo', 'data_critical_seconds'))} critical).",
            target(per_op("host, disk, op", HOST_DISK, hs), f"host {disk} {{{{op}}}}"),
            target(per_op("cluster, op", LUN, os_, RW), "ONTAP {{op}}"),
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
    lay.add(
        panel(
            "stat",
            "Backend utilization E",
            "Spindle-equivalent utilization from san_oversubscription: backend IOPS / (disks x per-disk IOPS). "
            f"Below {pct(th('san_oversubscription', 'max_backend_utilization'))} the array could serve far more "
            "than the host gets.",
            instant(evidence("host, disk", "san_oversubscription", "backend_utilization_ratio", hs), disk),
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
            "Current Disk Queue Length, Little's law N = IOPS x R, and Q_eff = queue depth x active paths. "
            f"At {pct(th('host_queue_limited', 'queue_fill_ratio'))} of Q_eff (queue_fill_ratio) the host queue "
            "limits throughput (host_queue_limited).",
            target(f"sum by (host, disk) ({HOST_DISK}_queue_length{{{hs}}})", f"queue length {disk}"),
            target(srate("host, disk", f"{HOST_DISK}_latency_seconds_total", hs), f"N = IOPS x R {disk}"),
            target(q_eff, f"Q_eff {disk}"),
            target(times_configured(q_eff, "host_queue_limited", "queue_fill_ratio"), f"fill limit {disk}"),
            unit="short",
            min_=0,
            overrides=[series("^(Q_eff|fill limit).*", DASHED)],
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "% idle",
            f"Host disk % idle time. Above {pct(th('san_oversubscription', 'min_idle_ratio'))} (dashed) while "
            "latency is high, the disk is waiting on the path, not busy: the san_oversubscription signature.",
            target(rate(f"{HOST_DISK}_idle_seconds_total", hs), disk),
            unit="percentunit",
            thresholds=bands(cfg, "san_oversubscription", "min_idle_ratio"),
            min_=0,
            max_=1,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "IOPS vs what the backend could serve",
            "Host IOPS and ONTAP LUN IOPS against the LUN's ONTAP-version ceiling "
            f"({kilo(th('lun_iops_ceiling', 'ceiling_pre_9_9_1_iops'))} before 9.9.1, "
            f"{kilo(th('lun_iops_ceiling', 'ceiling_iops'))} from it), as the lun_iops_ceiling diagnosis computes it.",
            target(srate("host, disk", f"{HOST_DISK}_ops_total", hs), f"host {disk}"),
            target(srate("cluster, lun", f"{LUN}_ops_total", os_), "ONTAP LUN"),
            target(
                evidence("cluster, lun", "lun_iops_ceiling", "lun_ceiling_iops", os_), "LUN ceiling (version)"
            ),
            unit="iops",
            min_=0,
            overrides=[series("^LUN ceiling.*", DASHED, fixed("red"))],
        ),
        8,
        8,
    )
    return dashboard(
        cfg,
        NAME,
        "sanlens / I/O path per LUN",
        "Where the time goes between a Windows host disk and its ONTAP LUN: host vs array latency, queues, idle "
        "time and IOPS headroom, one row per mapped LUN.",
        chained(
            Var("host", "Host", f"{HOST_DISK}_info", 'lun!=""'),
            Var("lun", "LUN", f"{HOST_DISK}_info", 'lun!=""'),
        ),
        lay,
    )
