"""sanlens / Latency breakdown: where each subject's latency goes, from the host's queue through the
transport to ONTAP's components, and the two diagnoses ONTAP's components name (qos_throttle, indirect_io).

Reads the waterfall series the engine exposes (``sanlens_latency_component_seconds``, for every
non-ok subject and the slowest QoS workloads) and the two diagnoses' evidence: a subject whose
latency is mostly QoS Max or the cluster interconnect is slow on purpose or by path, not because
the array is busy.
"""

from __future__ import annotations

from mixin.config import MixinConfig

from sanlens.diagnose.waterfall import NAMES, PARTS

from ..lib import Json
from ..lib.dashboard import Layout, TopVar, Var, chained, dashboard
from ..lib.panels import DASHED, Column, fixed, instant, panel, rename, series, table, target
from ..lib.promql import configured, evidence, sel, top
from ..lib.thresholds import bands, data_latency, ms, pct

NAME = "latency-breakdown"
COMPONENT = "sanlens_latency_component_seconds"
SUBJECT = "subject, cluster, svm, volume, lun, host, disk"
# One colour per part, in path order: the host's parts cool, ONTAP's warm, the throttles red.
COLORS = {
    "host_queue": "blue",
    "transport": "purple",
    "network": "light-green",
    "cluster": "orange",
    "data": "green",
    "disk": "yellow",
    "qos_max": "red",
    "qos_min": "dark-red",
    "nvram": "light-blue",
    "cloud": "super-light-blue",
    "flexcache": "light-purple",
    "sm_sync": "dark-purple",
    "va": "dark-yellow",
    "avscan": "dark-orange",
    "other": "text",
    "array": "semi-dark-green",
}


def named_parts() -> list[Json]:
    """Each part's series shown by the report's name for it, in its fixed colour (legend ``{{component}}``)."""
    return [
        rename(part, NAMES.get(part, part), None, [fixed(COLORS.get(part, "text"))])
        for part in PARTS  # the waterfall's own order: host queue first, the no-breakdown part last
    ]


def slowest(cfg: MixinConfig, lay: Layout) -> None:
    v = sel("cluster", "svm", "volume")
    total = f"sum by ({SUBJECT}) ({COMPONENT}{{{v}}})"
    worst = f"topk($topn, {total})"
    dominant = f"max by ({SUBJECT}, component) (topk by (subject) (1, {COMPONENT}{{{v}}}))"
    lay.add(
        panel(
            "bargauge",
            "Slowest subjects now (worst $topn)",
            "Each subject's latency per operation now, the sum of its waterfall: a host disk's host queue, "
            "transport and ONTAP components, or a LUN's or volume's ONTAP components alone. Orange and red "
            "from the data-class thresholds of latency_slo.",
            instant(top(f"sum by (subject) ({COMPONENT}{{{v}}})"), "{{subject}}"),
            unit="s",
            thresholds=data_latency(cfg),
            min_=0,
        ),
        10,
        9,
    )
    lay.add(
        table(
            "Slowest subjects and their dominant component (worst $topn)",
            "Per subject: its latency (the waterfall's sum), the component that takes the largest part "
            "and that part's share. QoS Max means a ceiling delays the operations on purpose "
            "(qos_throttle), ONTAP Cluster that they cross the interconnect (indirect_io), transport the "
            "fabric and front end, host queue the host's own queues.",
            Column(worst, "Latency", "s"),
            Column(f"{dominant} and on (subject) {worst}", "Dominant part", "s"),
            Column(
                f"{dominant} / on (subject) group_left () {total} and on (subject) {worst}",
                "Dominant share",
                "percentunit",
            ),
            hide=("Time",),
            overrides=[rename("component", "Dominant component"), rename("subject", "Subject")],
            options={"sortBy": [{"displayName": "Latency", "desc": True}]},
        ),
        14,
        9,
    )


def waterfall(cfg: MixinConfig, lay: Layout) -> None:
    s = sel("cluster", "svm", "volume", "subject")
    parts = f"sum by (component) ({COMPONENT}{{{s}}})"
    lay.row("Waterfall of $subject", repeat="subject")
    lay.add(
        panel(
            "timeseries",
            "Latency components (stacked)",
            "Where an operation's time goes, stacked in path order: host queue (waiting above what the "
            "host's queues can have in flight, Little's law), transport (host latency less ONTAP's), then "
            "ONTAP's components from the workload's QoS breakdown (Network, Cluster, Data, Disk, QoS Max, "
            "QoS Min, NVRAM, ...), or one ONTAP part where it has no breakdown. The stack's top is the "
            "subject's latency.",
            target(parts, "{{component}}"),
            unit="s",
            min_=0,
            overrides=named_parts(),
            options={"tooltip": {"mode": "multi", "sort": "none"}},
        ),
        16,
        8,
    )
    p = lay.panels[-1]
    p["fieldConfig"]["defaults"]["custom"].update(
        {"fillOpacity": 60, "stacking": {"mode": "normal", "group": "A"}}
    )
    lay.add(
        panel(
            "bargauge",
            "Share of its latency now",
            "Each component's share of the subject's latency now. A share of "
            f"{pct(cfg.threshold('qos_throttle', 'qos_max_share'))} or more for QoS Max is qos_throttle's "
            f"critical signature; {pct(cfg.threshold('indirect_io', 'cluster_share'))} or more for ONTAP "
            "Cluster is indirect_io's where ONTAP reports no remote operations.",
            instant(f"{parts} / on () group_left () sum({COMPONENT}{{{s}}})", "{{component}}"),
            unit="percentunit",
            min_=0,
            max_=1,
            overrides=named_parts(),
        ),
        8,
        8,
    )


def qos(cfg: MixinConfig, lay: Layout) -> None:
    th = cfg.threshold
    v = sel("cluster", "svm", "volume")
    by = "subject"
    used = pct(th("qos_throttle", "ceiling_used_ratio"))
    lay.row("qos_throttle: QoS ceilings")
    lay.add(
        panel(
            "timeseries",
            "Workload ops vs its QoS ceiling",
            "The throttled workload's operations (a shared policy's: all its workloads together) against "
            f"the policy's effective IOPS ceiling (fixed, or adaptive per TB); dashed: {used} of the "
            "ceiling, where qos_throttle warns (the configured ceiling_used_ratio).",
            target(evidence(by, "qos_throttle", "workload_iops", v), "{{subject}} ops"),
            target(evidence(by, "qos_throttle", "ceiling_iops", v), "{{subject}} ceiling"),
            target(
                f"{evidence(by, 'qos_throttle', 'ceiling_iops', v)} * on () group_left () "
                f"{configured('qos_throttle', 'ceiling_used_ratio')}",
                f"{{{{subject}}}} {used} of ceiling",
            ),
            unit="iops",
            min_=0,
            overrides=[series(f".* {used} of ceiling$", DASHED, fixed("orange"))],
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Ops / ceiling",
            f"The workload's ops as a share of its ceiling; orange from {used} (ceiling_used_ratio, Active IQ "
            "Unified Manager's rule): it runs at its ceiling and any more demand is delayed.",
            target(evidence(by, "qos_throttle", "ceiling_used_ratio", v), "{{subject}}"),
            unit="percentunit",
            thresholds=bands(cfg, "qos_throttle", "ceiling_used_ratio"),
            min_=0,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "QoS Max share of the workload's latency",
            "ONTAP's QoS Max component / the workload's latency; red from "
            f"{pct(th('qos_throttle', 'qos_max_share'))} (qos_max_share): the ceiling is what the host waits "
            "for.",
            target(evidence(by, "qos_throttle", "qos_max_share_ratio", v), "{{subject}}"),
            unit="percentunit",
            thresholds=bands(cfg, "qos_throttle", "qos_max_share", colors=("red",)),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "QoS Max, QoS Min and the workload's latency",
            "Per operation: the time the ceiling adds (QoS Max), the time other workloads' floors take "
            "(QoS Min), and the workload's whole latency inside ONTAP.",
            target(evidence(by, "qos_throttle", "qos_max_seconds", v), "{{subject}} QoS Max"),
            target(evidence(by, "qos_throttle", "qos_min_seconds", v), "{{subject}} QoS Min"),
            target(evidence(by, "qos_throttle", "workload_latency_seconds", v), "{{subject}} latency"),
            unit="s",
            min_=0,
        ),
        12,
        8,
    )


def indirect(cfg: MixinConfig, lay: Layout) -> None:
    th = cfg.threshold
    v = sel("cluster", "svm", "volume")
    by = "subject"
    lay.row("indirect_io: indirect paths")
    lay.add(
        panel(
            "timeseries",
            "Indirect share of the LUN's ops",
            "Remote operations (they arrived at a LIF on another node and crossed the cluster interconnect) "
            f"/ the LUN's operations; orange from {pct(th('indirect_io', 'remote_share'))} (remote_share).",
            target(evidence(by, "indirect_io", "remote_share_ratio", v), "{{subject}}"),
            unit="percentunit",
            thresholds=bands(cfg, "indirect_io", "remote_share"),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Indirect and all ops",
            "The LUN's operations and the part of them that arrived through another node (ONTAP remote_ops).",
            target(evidence(by, "indirect_io", "lun_iops", v), "{{subject}} all"),
            target(evidence(by, "indirect_io", "remote_iops", v), "{{subject}} indirect"),
            unit="iops",
            min_=0,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Interconnect time per op",
            "ONTAP's Cluster component of the LUN's workload: what crossing the interconnect adds to each "
            f"operation. Dashed: {ms(th('latency_slo', 'data_warning_seconds'))} and "
            f"{ms(th('latency_slo', 'data_critical_seconds'))}, the data-class thresholds of latency_slo.",
            target(evidence(by, "indirect_io", "cluster_seconds", v), "{{subject}}"),
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
            "Cluster component share of the latency",
            "ONTAP's Cluster component / the workload's latency; orange from "
            f"{pct(th('indirect_io', 'cluster_share'))} (cluster_share), what indirect_io judges by where "
            "ONTAP reports no remote operations.",
            target(evidence(by, "indirect_io", "cluster_share_ratio", v), "{{subject}}"),
            unit="percentunit",
            thresholds=bands(cfg, "indirect_io", "cluster_share"),
            min_=0,
            max_=1,
        ),
        8,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Host paths: ALUA optimized of active",
            "The active paths the host reports for the LUN's disk and how many of them ALUA reports "
            "optimized: indirect I/O on a host with optimized paths is a multipath policy that ignores ALUA.",
            target(evidence(by, "indirect_io", "host_paths", v), "{{subject}} active"),
            target(evidence(by, "indirect_io", "host_optimized_paths", v), "{{subject}} optimized"),
            unit="none",
            min_=0,
            decimals=0,
        ),
        8,
        8,
    )


# The slowest first: a volume's slowest waterfall, or where none is exposed its latency, or its ops.
VOLUME_RANK = (
    f"max by (volume) (sum by (subject, volume) ({COMPONENT}{{{{sel}}}})) "
    "or max by (volume) (volume:sanlens_ontap_volume_latency_seconds:mean5m{{sel}}) "
    "or max by (volume) (volume:sanlens_ontap_volume_ops:rate5m{{sel}}) * 0"
)
SUBJECT_RANK = f"sum by (subject) ({COMPONENT}{{{{sel}}}})"


def build(cfg: MixinConfig) -> Json:
    lay = Layout()
    lay.row("Slowest subjects")
    slowest(cfg, lay)
    waterfall(cfg, lay)
    qos(cfg, lay)
    indirect(cfg, lay)
    return dashboard(
        cfg,
        NAME,
        "sanlens / Latency breakdown",
        "Where each subject's latency goes, from the host's queue and the transport to ONTAP's components "
        "(Network, Cluster, Data, Disk, QoS Max, QoS Min, ...), for every subject not ok and the slowest QoS "
        "workloads; with the evidence of qos_throttle (a QoS ceiling) and indirect_io (the interconnect).",
        chained(
            Var("svm", "SVM", "sanlens_ontap_volume_info"),
            TopVar("volume", "Volume (slowest)", VOLUME_RANK),
            TopVar("subject", "Subject (slowest)", SUBJECT_RANK),
            top_n=cfg.top_n,
        ),
        lay,
    )
