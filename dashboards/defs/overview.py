"""sanlens / Overview: which diagnoses are active, on which subject, and how each cluster and host is doing."""

from __future__ import annotations

from mixin.config import MixinConfig

from sanlens.diagnose.registry import REGISTRY

from ..lib import Json
from ..lib.dashboard import Layout, chained, dashboard, runbook_var, topn_var
from ..lib.panels import UP, Column, drill, gauge_cell, mapped, panel, rename, table, target
from ..lib.promql import LUN_LATENCY_PAIRS, evidence, harvest_latency, harvest_sum, mbps, rate, sel, top
from ..lib.thresholds import GREEN, data_latency, steps

NAME = "overview"
DIAG_KEYS = "diagnosis, subject, cluster, node, svm, volume, lun, aggregate, host, disk"
SEVERITY = mapped("color-background", ("1", "warning", "orange"), ("2", "critical", "red"))
RUNBOOK_LINK = {
    "id": "links",
    "value": [
        {"title": "Runbook: ${__value.raw}", "url": "${runbook_base}/${__value.raw}.md", "targetBlank": True}
    ],
}


# A finding's subject labels as dashboard variables: every overview row links to its subject's dashboard.
SUBJECT_VARS = ("cluster", "host", "svm", "volume", "lun", "node", "aggregate")
HELPERS = tuple(f"var_{v}" for v in SUBJECT_VARS)


def with_dashboard(cfg: MixinConfig, expr: str) -> str:
    """``expr`` with a ``dashboard`` label (the uid of the finding's diagnosis dashboard, from its spec)
    and a ``drill`` label (its subject as ``var-x=y&...``), built server-side so the link needs no logic."""
    by_uid: dict[str, list[str]] = {}
    for did, spec in REGISTRY.items():
        by_uid.setdefault(spec.dashboard.uid, []).append(did)
    for uid, ids in sorted(by_uid.items()):
        uid = cfg.dashboard_uid_prefix + uid.removeprefix("sanlens-")
        expr = f'label_replace({expr}, "dashboard", "{uid}", "diagnosis", "{"|".join(sorted(ids))}")'
    for v, helper in zip(SUBJECT_VARS, HELPERS, strict=True):
        expr = f'label_replace({expr}, "{helper}", "var-{v}=$1", "{v}", "(.+)")'
    return f'label_join({expr}, "drill", "&", {", ".join(f"{chr(34)}{h}{chr(34)}" for h in HELPERS)})'


def diagnoses(cfg: MixinConfig, lay: Layout) -> None:
    d = sel("cluster", or_blank=True)
    state = f"sanlens_diagnosis_state{{{d}}}"
    red, orange = (steps(GREEN, (color, 1)) for color in ("red", "orange"))
    lay.add_each(
        "stat",
        6,
        4,
        (
            (
                "Critical",
                "Subjects with a critical (state 2) diagnosis now.",
                f"count({state} == 2) or vector(0)",
                "critical",
                {"thresholds": red},
            ),
            (
                "Warning",
                "Subjects with a warning (state 1) diagnosis now.",
                f"count({state} == 1) or vector(0)",
                "warning",
                {"thresholds": orange},
            ),
            (
                "Subjects watched",
                "The most subjects one diagnosis judged at its last run (sanlens_diagnosis_subjects): host disks "
                "and LUNs for latency_slo, the largest set.",
                f"max(sum by (diagnosis) (sanlens_diagnosis_subjects{{{d}}}))",
                "subjects",
                {"thresholds": steps(("blue", None))},
            ),
            (
                "Targets down",
                "ONTAP clusters and hosts whose last poll failed (sanlens_target_up == 0).",
                "count(sanlens_target_up == 0) or vector(0)",
                "down",
                {"thresholds": red},
            ),
        ),
        unit="none",
    )
    worst = f"topk($topn, max by ({DIAG_KEYS}) ({state}) > 0)"
    lay.add(
        drill(
            table(
                "Active diagnoses (worst $topn)",
                "The worst diagnoses not ok now: severity, subject, how long it has been active "
                "(from sanlens_diagnosis_since_timestamp_seconds), its score and the incident (root cause) it "
                "belongs to, and where a LUN or volume subject is now (node, aggregate). The diagnosis id links "
                "to its runbook (docs/runbooks/<diagnosis>.md under the hidden "
                "runbook_base variable); every other cell to the subject's dashboard with its variables set.",
                Column(with_dashboard(cfg, worst), "Severity", "none", SEVERITY),
                Column(
                    f"time() - max by ({DIAG_KEYS}) (sanlens_diagnosis_since_timestamp_seconds{{{d}}}) "
                    f"and on ({DIAG_KEYS}) {worst}",
                    "Active for",
                    "s",
                ),
                Column(
                    f"max by ({DIAG_KEYS}) (sanlens_diagnosis_score{{{d}}}) and on ({DIAG_KEYS}) {worst}",
                    "Score",
                    "percentunit",
                    gauge_cell(1),
                ),
                Column(
                    "max by (diagnosis, subject, incident, role) (sanlens_diagnosis_incident) "
                    f"and on (diagnosis, subject) {worst}",
                ),
                # a LUN's or volume's node and aggregate are not part of its finding's identity (a volume
                # move would restart the alert): they come from the location series, renamed so the merge
                # joins on diagnosis and subject only
                Column(
                    "max by (diagnosis, subject, now_node, now_aggregate) ("
                    'label_replace(label_replace(sanlens_diagnosis_location_info, "now_node", "$1", "node", "(.*)"), '
                    '"now_aggregate", "$1", "aggregate", "(.*)")) '
                    f"and on (diagnosis, subject) {worst}",
                ),
                hide=("Time", "Value #D", "Value #E", "role", *HELPERS),
                overrides=[
                    # kept in the frame (the row's link reads them), not shown
                    *(
                        {
                            "matcher": {"id": "byName", "options": f},
                            "properties": [{"id": "custom.hidden", "value": True}],
                        }
                        for f in ("dashboard", "drill")
                    ),
                    rename("diagnosis", "Diagnosis", None, [RUNBOOK_LINK]),
                    rename("subject", "Subject"),
                    rename("incident", "Incident"),
                    rename("now_node", "Now on node"),
                    rename("now_aggregate", "Now on aggregate"),
                ],
                options={"sortBy": [{"displayName": "Severity", "desc": True}]},
            ),
            "Open ${__data.fields.subject} on its dashboard",
            "/d/${__data.fields.dashboard}/?orgId=1&${__data.fields.drill}&${__url_time_range}",
        ),
        24,
        10,
    )
    lay.add(
        panel(
            "timeseries",
            "Active diagnoses over time",
            "Number of subjects in warning or critical state, per diagnosis.",
            target(f"count by (diagnosis) ({state} > 0)", "{{diagnosis}}"),
            unit="none",
            decimals=0,
        ),
        24,
        7,
    )


def up(kind: str, label: str) -> Column:
    """Poll status per cluster or host: sanlens_target_up with its target renamed to the subject label."""
    expr = (
        f'max by ({label}) (label_replace(sanlens_target_up{{kind{kind}, target=~"${label}"}}, '
        f'"{label}", "$1", "target", "(.*)"))'
    )
    return Column(expr, "Up", "none", UP)


def active(label: str) -> Column:
    return Column(
        f"count by ({label}) (sanlens_diagnosis_state{{{sel(label)}}} > 0)", "Active diagnoses", "none"
    )


def lun_latency_of(c: str, min_iops: float) -> str:
    """Per LUN: the recording rule over sanlens's counters, or Harvest's gauges where sanlens reads
    the cluster through them (source: prometheus)."""
    keys = "cluster, svm, volume, lun"
    harvest = harvest_latency(keys, c, LUN_LATENCY_PAIRS, min_iops=min_iops)
    return f"lun:sanlens_ontap_lun_latency_seconds:mean5m{{{c}}} or {harvest}"


def host_latency_of(h: str) -> str:
    """Per host: the recording rule over sanlens's host counters, or, for hosts read through Prometheus
    (which export none), the latency the engine judged."""
    return (
        f"max by (host) (host_disk:sanlens_host_disk_latency_seconds:mean5m{{{h}}}) or "
        f"{evidence('host', '', 'host_latency_seconds', h)}"
    )


def uid(cfg: MixinConfig, name: str) -> str:
    return cfg.dashboard_uid_prefix + name


def estate(cfg: MixinConfig, lay: Layout) -> None:
    c, h = sel("cluster"), sel("cluster", or_blank=True)
    m = cfg.latency_min_iops
    # each column falls back to NetApp Harvest's gauges for clusters read through them (source: prometheus)
    cpu = (
        f"avg by (cluster) ({rate('sanlens_ontap_node_average_processor_busy_seconds_total', c)} / "
        f"{rate('sanlens_ontap_node_cpu_elapsed_seconds_total', c)}) "
        f"or avg by (cluster) (node_avg_processor_busy{{{c}}}) / 100"
    )
    lun_latency = f"max by (cluster) ({lun_latency_of(c, m)})"
    lun_iops = (
        f"sum by (cluster) ({rate('sanlens_ontap_lun_ops_total', c)}) "
        f"or {harvest_sum('cluster', c, 'lun_read_ops', 'lun_write_ops')}"
    )
    lun_bytes = (
        f"sum by (cluster) ({mbps('cluster', 'sanlens_ontap_lun', c)}) "
        f"or {harvest_sum('cluster', c, 'lun_read_data', 'lun_write_data')}"
    )
    cluster_table = drill(
        table(
            "Clusters",
            "Per ONTAP cluster: poll status, LUN IOPS, average node CPU, worst LUN latency and active diagnoses.",
            up('="ontap"', "cluster"),
            Column(lun_iops, "LUN IOPS", "iops"),
            Column(lun_bytes, "LUN throughput", "Bps"),
            Column(cpu, "Avg CPU busy", "percentunit"),
            Column(lun_latency, "Worst LUN latency", "s"),
            active("cluster"),
        ),
        "CPU domains of ${__data.fields.cluster}",
        f"/d/{uid(cfg, 'ontap-cpu-domains')}/?orgId=1&var-cluster=${{__data.fields.cluster}}&${{__url_time_range}}",
    )
    lay.add(cluster_table, 24, 6)
    # hosts read through Prometheus (source: prometheus) export no counters: the engine's evidence instead
    worst_host = f"topk($topn, {host_latency_of(h)})"
    lay.add(
        drill(
            table(
                "Hosts (worst $topn by disk latency)",
                "Per host: worst disk latency (5m mean, min-ops guarded), disk IOPS and throughput, lowest % idle, "
                "deepest queue and active diagnoses. A row opens the host's I/O path.",
                Column(worst_host, "Worst disk latency", "s"),
                Column(
                    f"sum by (host) (host_disk:sanlens_host_disk_ops:rate5m{{{h}}}) and on (host) {worst_host}",
                    "Disk IOPS",
                    "iops",
                ),
                Column(
                    f"sum by (host) (host_disk:sanlens_host_disk_bytes:rate5m{{{h}}}) and on (host) {worst_host}",
                    "Throughput",
                    "Bps",
                ),
                Column(
                    f"min by (host) (host_disk:sanlens_host_disk_idle:ratio_rate5m{{{h}}}) and on (host) {worst_host}",
                    "Lowest % idle",
                    "percentunit",
                ),
                Column(
                    f"max by (host) (host_disk:sanlens_host_disk_queue_length:max5m{{{h}}}) "
                    f"and on (host) {worst_host}",
                    "Max queue length",
                    "short",
                ),
                options={"sortBy": [{"displayName": "Worst disk latency", "desc": True}]},
            ),
            "I/O path of ${__data.fields.host}",
            f"/d/{uid(cfg, 'io-path')}/?orgId=1&var-host=${{__data.fields.host}}&${{__url_time_range}}",
        ),
        24,
        7,
    )
    lun_keys = "cluster, svm, volume, lun"
    worst_lun = f"topk($topn, {lun_latency_of(c, m)})"
    harvest_ops = harvest_sum(lun_keys, c, "lun_read_ops", "lun_write_ops")
    harvest_bytes = harvest_sum(lun_keys, c, "lun_read_data", "lun_write_data")
    lay.add(
        drill(
            table(
                "LUNs (worst $topn by latency)",
                f"The slowest LUNs (read and write, 5m mean, only where at least {m:g} ops/s ran) with their IOPS "
                "and throughput. A row opens the LUN and its volume on the LUNs and volumes dashboard.",
                Column(worst_lun, "Latency", "s"),
                Column(
                    f"(lun:sanlens_ontap_lun_ops:rate5m{{{c}}} or {harvest_ops}) and on ({lun_keys}) {worst_lun}",
                    "IOPS",
                    "iops",
                ),
                Column(
                    f"(lun:sanlens_ontap_lun_bytes:rate5m{{{c}}} or {harvest_bytes}) and on ({lun_keys}) {worst_lun}",
                    "Throughput",
                    "Bps",
                ),
                options={"sortBy": [{"displayName": "Latency", "desc": True}]},
            ),
            "LUN ${__data.fields.lun}",
            f"/d/{uid(cfg, 'lun-volume')}/?orgId=1&var-cluster=${{__data.fields.cluster}}"
            "&var-svm=${__data.fields.svm}&var-volume=${__data.fields.volume}&var-lun=${__data.fields.lun}"
            "&${__url_time_range}",
        ),
        24,
        7,
    )

    # Recording rules (rules/sanlens.rules.yaml): fixed 5m means, cheap over long ranges.
    lay.add_each(
        "timeseries",
        12,
        7,
        (
            (
                "Worst LUN latency per cluster (5m mean)",
                "The slowest LUN of each cluster, read and write together, from the recording rule "
                "lun:sanlens_ontap_lun_latency_seconds:mean5m; dashed lines are the data-file latency "
                "thresholds of latency_slo.",
                f"max by (cluster) ({lun_latency_of(c, cfg.latency_min_iops)})",
                "{{cluster}}",
                {},
            ),
            (
                "Worst host disk latency per host (5m mean, worst $topn hosts)",
                "The slowest disk of each host as PerfMon sees it, from the recording rule "
                "host_disk:sanlens_host_disk_latency_seconds:mean5m; compare with the LUN panel beside "
                "it: a host far above its array is a fabric or queue problem.",
                top(host_latency_of(h)),
                "{{host}}",
                {},
            ),
        ),
        unit="s",
        thresholds=data_latency(cfg),
        min_=0,
    )


def itself(lay: Layout) -> None:
    errors = (
        f"sum by (target, kind, reason) ({rate('sanlens_poll_errors_total', '')}) or "
        f"sum by (target, kind) ({rate('sanlens_polls_total', '')}) * 0"
    )
    lay.add_each(
        "timeseries",
        8,
        7,
        (
            (
                "Poll duration",
                "How long each source's last poll took (ONTAP REST or host scrape).",
                "sanlens_poll_duration_seconds",
                "{{kind}} {{target}}",
                {"unit": "s"},
            ),
            (
                "Poll errors",
                "Failed polls per second by reason; a flat zero line per target when there are none.",
                errors,
                "{{target}} {{reason}}",
                {"unit": "reqps"},
            ),
            (
                "Time since last poll",
                "Seconds since each source last polled successfully; it should stay near the poll interval.",
                "time() - sanlens_last_poll_timestamp_seconds",
                "{{kind}} {{target}}",
                {"unit": "s"},
            ),
        ),
    )


def build(cfg: MixinConfig) -> Json:
    lay = Layout()
    lay.row("Diagnoses")
    diagnoses(cfg, lay)
    lay.row("Per cluster and per host")
    estate(cfg, lay)
    lay.row("sanlens itself")
    itself(lay)
    return dashboard(
        cfg,
        NAME,
        "sanlens / Overview",
        "Which SAN diagnoses are active now, on which subject, since when, and how each cluster and host is doing.",
        [*chained(), topn_var(cfg.top_n), runbook_var(cfg)],
        lay,
    )
