"""sanlens / Overview: which diagnoses are active, on which subject, and how each cluster and host is doing."""

from __future__ import annotations

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, Var, chained, dashboard, runbook_var
from ..lib.panels import UP, Column, gauge_cell, mapped, panel, rename, table, target
from ..lib.promql import RW, per_op, rate, sel
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


def diagnoses(lay: Layout) -> None:
    d = sel("cluster", "host", or_blank=True)
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
                "Distinct subjects (host disks, LUNs, volumes, nodes, aggregates) the engine evaluates.",
                f"count(count by (subject) ({state}))",
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
    lay.add(
        table(
            "Active diagnoses",
            "Every diagnosis not ok now: severity, subject, how long it has been active "
            "(from sanlens_diagnosis_since_timestamp_seconds) and its score. The diagnosis id links to its runbook "
            "(docs/runbooks/<diagnosis>.md under the hidden runbook_base variable).",
            Column(f"max by ({DIAG_KEYS}) ({state}) > 0", "Severity", "none", SEVERITY),
            Column(
                f"time() - max by ({DIAG_KEYS}) (sanlens_diagnosis_since_timestamp_seconds{{{d}}})",
                "Active for",
                "s",
            ),
            Column(
                f"max by ({DIAG_KEYS}) (sanlens_diagnosis_score{{{d}}}) and on ({DIAG_KEYS}) ({state} > 0)",
                "Score",
                "percentunit",
                gauge_cell(1),
            ),
            overrides=[rename("diagnosis", "Diagnosis", None, [RUNBOOK_LINK]), rename("subject", "Subject")],
            options={"sortBy": [{"displayName": "Severity", "desc": True}]},
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


def estate(cfg: MixinConfig, lay: Layout) -> None:
    c, h = sel("cluster"), sel("host")
    cpu = (
        f"avg by (cluster) ({rate('sanlens_ontap_node_cpu_busy_seconds_total', c)} / "
        f"{rate('sanlens_ontap_node_cpu_elapsed_seconds_total', c)})"
    )
    lun_latency = f"max by (cluster) ({per_op('cluster, svm, volume, lun', 'sanlens_ontap_lun', c, RW)})"
    lay.add(
        table(
            "Clusters",
            "Per ONTAP cluster: poll status, LUN IOPS, average node CPU, worst LUN latency and active diagnoses.",
            up('="ontap"', "cluster"),
            Column(f"sum by (cluster) ({rate('sanlens_ontap_lun_ops_total', c)})", "LUN IOPS", "iops"),
            Column(cpu, "Avg CPU busy", "percentunit"),
            Column(lun_latency, "Worst LUN latency", "s"),
            active("cluster"),
        ),
        24,
        6,
    )
    lay.add(
        table(
            "Hosts",
            "Per host: poll status, disk IOPS, worst disk latency, lowest % idle, deepest queue and active diagnoses.",
            up('!="ontap"', "host"),
            Column(f"sum by (host) ({rate('sanlens_host_disk_ops_total', h)})", "Disk IOPS", "iops"),
            Column(
                f"max by (host) ({per_op('host, disk', 'sanlens_host_disk', h)})", "Worst disk latency", "s"
            ),
            Column(
                f"min by (host) ({rate('sanlens_host_disk_idle_seconds_total', h)})",
                "Lowest % idle",
                "percentunit",
            ),
            Column(f"max by (host) (sanlens_host_disk_queue_length{{{h}}})", "Max queue length", "short"),
            active("host"),
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
                f"max by (cluster) (lun:sanlens_ontap_lun_latency_seconds:mean5m{{{c}}})",
                "{{cluster}}",
                {},
            ),
            (
                "Worst host disk latency per host (5m mean)",
                "The slowest disk of each host as PerfMon sees it, from the recording rule "
                "host_disk:sanlens_host_disk_latency_seconds:mean5m; compare with the LUN panel beside "
                "it: a host far above its array is a fabric or queue problem.",
                f"max by (host) (host_disk:sanlens_host_disk_latency_seconds:mean5m{{{h}}})",
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
    diagnoses(lay)
    lay.row("Per cluster and per host")
    estate(cfg, lay)
    lay.row("sanlens itself")
    itself(lay)
    return dashboard(
        cfg,
        NAME,
        "sanlens / Overview",
        "Which SAN diagnoses are active now, on which subject, since when, and how each cluster and host is doing.",
        [*chained(Var("host", "Host", "sanlens_host_disk_info")), runbook_var(cfg)],
        lay,
    )
