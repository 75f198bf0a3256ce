#!/usr/bin/env python3
"""Writes the sanlens Grafana dashboards (dashboards/*.json) from one description.

Why a generator: five dashboards share one datasource variable, the same chained
label variables, the same panel defaults and the same PromQL fragments; writing
them once keeps every panel consistent. It needs only the standard library (no
import of the exporter), so the JSON can be rebuilt anywhere:

    python3 dashboards/build.py          # rewrite dashboards/*.json
    python3 dashboards/build.py --check  # exit 1 if a committed file differs

Thresholds equal the diagnosis defaults of ``sanlens.diagnose.registry``
(tests/test_dashboards_lint.py checks that). Metric names follow
docs/architecture.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA_VERSION = 39
DS = {"type": "prometheus", "uid": "${datasource}"}
RI = "$__rate_interval"
CLUSTER = 'cluster=~"$cluster"'
RW = ', op=~"read|write"'
WRITES = ', op="write"'
NOT_IDLE = ', domain!="idle"'
RUNBOOK_BASE = "https://github.com/sanlens/sanlens/blob/main/docs/runbooks"

# Diagnosis defaults (registry.py); the lint test proves they still agree.
DATA_WARN_S, DATA_CRIT_S = 0.010, 0.020
LATENCY_GAP_S = 0.001
IDLE_RATIO = 0.5
BACKEND_UTIL = 0.5
KAHUNA_WARN_PCT, SERIAL_CRIT_PCT = 50.0, 90.0
VOLUME_SHARE = 0.8
CEILING_WARN, CEILING_CRIT = 0.8, 1.0
WRITE_SHARE = 0.3
DISK_CV = 0.3
MAX_TO_MEDIAN = 1.5
DISK_BUSY_MIN, DISK_BUSY_CRIT = 0.5, 0.9

Json = dict[str, Any]


# ------------------------------------------------------------------ building blocks
def rate(metric: str, sel: str) -> str:
    return f"rate({metric}{{{sel}}}[{RI}])"


def srate(by: str, metric: str, sel: str) -> str:
    """sum by (...) (rate(...)): per-subject rates with the op or other labels folded away."""
    return f"sum by ({by}) ({rate(metric, sel)})"


def steps(*pairs: tuple[str, float | None]) -> Json:
    return {"mode": "absolute", "steps": [{"color": c, "value": v} for c, v in pairs]}


GREEN = ("green", None)


def target(expr: str, legend: str = "", instant: bool = False, table: bool = False) -> Json:
    t: Json = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "range": not instant}
    if instant:
        t["instant"] = True
    if table:
        t["format"] = "table"
    return t


class Layout:
    """Places panels left to right on Grafana's 24-column grid, wrapping to a new line."""

    def __init__(self) -> None:
        self.panels: list[Json] = []
        self.x = self.y = self.line_h = 0

    def row(self, title: str, repeat: str | None = None) -> None:
        self.newline()
        p: Json = {"type": "row", "title": title, "collapsed": False, "panels": []}
        if repeat:
            p["repeat"] = repeat
        p["gridPos"] = {"h": 1, "w": 24, "x": 0, "y": self.y}
        self.panels.append(p)
        self.y += 1

    def newline(self) -> None:
        self.y += self.line_h
        self.x = self.line_h = 0

    def add(self, p: Json, w: int, h: int) -> None:
        if self.x + w > 24:
            self.newline()
        p["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.line_h = max(self.line_h, h)
        self.panels.append(p)

    def numbered(self) -> list[Json]:
        for i, p in enumerate(self.panels, start=1):
            p["id"] = i
        return self.panels


def panel(
    kind: str,
    title: str,
    description: str,
    targets: Sequence[Json],
    unit: str,
    thresholds: Json | None = None,
    lines: bool = False,
    min_: float | None = None,
    max_: float | None = None,
    overrides: Sequence[Json] = (),
    options: Json | None = None,
    transformations: Sequence[Json] = (),
    decimals: int | None = None,
) -> Json:
    defaults: Json = {"unit": unit, "thresholds": thresholds or steps(GREEN)}
    if min_ is not None:
        defaults["min"] = min_
    if max_ is not None:
        defaults["max"] = max_
    if decimals is not None:
        defaults["decimals"] = decimals
    if kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 0,
            "showPoints": "never",
            "spanNulls": False,
            "thresholdsStyle": {"mode": "dashed" if lines else "off"},
        }
        defaults["color"] = {"mode": "palette-classic"}
    elif kind == "table":
        defaults["custom"] = {"align": "auto", "cellOptions": {"type": "auto"}}
    else:
        defaults["color"] = {"mode": "thresholds"}
    opts: Json = {}
    if kind == "timeseries":
        opts = {
            "legend": {
                "displayMode": "table",
                "placement": "bottom",
                "showLegend": True,
                "calcs": ["lastNotNull", "max"],
            },
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    elif kind == "stat":
        opts = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "none",
            "textMode": "value",
        }
    elif kind == "bargauge":
        opts = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "displayMode": "gradient",
            "orientation": "horizontal",
            "showUnfilled": True,
        }
    elif kind == "table":
        opts = {"showHeader": True, "cellHeight": "sm"}
    elif kind == "heatmap":
        opts = {
            "calculate": True,
            "calculation": {"yBuckets": {"mode": "count", "value": "10"}},
            "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
            "yAxis": {"unit": unit, "axisPlacement": "left"},
            "cellGap": 1,
            "tooltip": {"mode": "single", "yHistogram": True},
            "legend": {"show": True},
        }
    opts.update(options or {})
    refs = iter("ABCDEFGHIJKL")
    p: Json = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": [{**t, "refId": next(refs)} for t in targets],
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": opts,
    }
    if transformations:
        p["transformations"] = list(transformations)
    return p


def rename(field: str, name: str, unit: str | None = None, extra: Iterable[Json] = ()) -> Json:
    props: list[Json] = [{"id": "displayName", "value": name}]
    if unit:
        props.append({"id": "unit", "value": unit})
    props.extend(extra)
    return {"matcher": {"id": "byName", "options": field}, "properties": props}


def up_column() -> Json:
    """Column A of the per-cluster and per-host tables: the poll status, shown as up/down."""
    mapping = {
        "type": "value",
        "options": {
            "0": {"text": "down", "color": "red", "index": 0},
            "1": {"text": "up", "color": "green", "index": 1},
        },
    }
    return rename(
        "Value #A",
        "Up",
        "none",
        [
            {"id": "mappings", "value": [mapping]},
            {"id": "custom.cellOptions", "value": {"type": "color-text"}},
        ],
    )


def series(name: str, *props: Json) -> Json:
    """Override for the series whose display name matches a regex (threshold or config lines)."""
    return {"matcher": {"id": "byRegexp", "options": name}, "properties": list(props)}


DASHED = {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}


def fixed(color: str) -> Json:
    return {"id": "color", "value": {"mode": "fixed", "fixedColor": color}}


def merge_table(hide: Sequence[str] = ("Time",)) -> list[Json]:
    return [
        {"id": "merge", "options": {}},
        {"id": "organize", "options": {"excludeByName": dict.fromkeys(hide, True)}},
    ]


# ------------------------------------------------------------------ variables
def ds_var() -> Json:
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "Data source",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "options": [],
    }


def query_var(name: str, label: str, query: str, multi: bool = True) -> Json:
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-variable"},
        "definition": query,
        "refresh": 2,  # on time range change
        "multi": multi,
        "includeAll": multi,
        "current": {},
        "options": [],
        "regex": "",
        "sort": 1,
        "hide": 0,
    }


def cluster_var() -> Json:
    return query_var("cluster", "Cluster", "label_values(sanlens_ontap_cluster_info, cluster)")


def runbook_var() -> Json:
    return {
        "type": "textbox",
        "name": "runbook_base",
        "label": "Runbook base URL",
        "description": "Where docs/runbooks/<diagnosis>.md is published (the Helm value alerting.runbookBaseURL).",
        "query": RUNBOOK_BASE,
        "current": {"text": RUNBOOK_BASE, "value": RUNBOOK_BASE},
        "hide": 2,
    }


def dashboard(uid: str, title: str, description: str, variables: list[Json], layout: Layout) -> Json:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["sanlens", "san", "ontap"],
        "editable": False,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "refresh": "1m",
        "timezone": "browser",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": []},
        "links": [
            {
                "type": "dashboards",
                "tags": ["sanlens"],
                "asDropdown": True,
                "title": "sanlens",
                "includeVars": True,
                "keepTime": True,
            }
        ],
        "templating": {"list": [ds_var(), *variables]},
        "panels": layout.numbered(),
    }


# ------------------------------------------------------------------ sanlens-overview
DIAG_KEYS = "diagnosis, subject, cluster, node, svm, volume, lun, aggregate, host, disk"


def overview() -> Json:
    d = 'cluster=~"${cluster}|", host=~"${host}|"'
    state = f"sanlens_diagnosis_state{{{d}}}"
    lay = Layout()
    lay.row("Diagnoses")
    lay.add(
        panel(
            "stat",
            "Critical",
            "Subjects with a critical (state 2) diagnosis now.",
            [target(f"count({state} == 2) or vector(0)", "critical", instant=True)],
            "none",
            steps(GREEN, ("red", 1)),
        ),
        6,
        4,
    )
    lay.add(
        panel(
            "stat",
            "Warning",
            "Subjects with a warning (state 1) diagnosis now.",
            [target(f"count({state} == 1) or vector(0)", "warning", instant=True)],
            "none",
            steps(GREEN, ("orange", 1)),
        ),
        6,
        4,
    )
    lay.add(
        panel(
            "stat",
            "Subjects watched",
            "Distinct subjects (host disks, LUNs, volumes, nodes, aggregates) the engine evaluates.",
            [target(f"count(count by (subject) ({state}))", "subjects", instant=True)],
            "none",
            steps(("blue", None)),
        ),
        6,
        4,
    )
    lay.add(
        panel(
            "stat",
            "Targets down",
            "ONTAP clusters and hosts whose last poll failed (sanlens_target_up == 0).",
            [target("count(sanlens_target_up == 0) or vector(0)", "down", instant=True)],
            "none",
            steps(GREEN, ("red", 1)),
        ),
        6,
        4,
    )
    severity_map = [
        {
            "type": "value",
            "options": {
                "1": {"text": "warning", "color": "orange", "index": 0},
                "2": {"text": "critical", "color": "red", "index": 1},
            },
        }
    ]
    lay.add(
        panel(
            "table",
            "Active diagnoses",
            "Every diagnosis not ok now: severity, subject, how long it has been active "
            "(from sanlens_diagnosis_since_timestamp_seconds) and its score. The diagnosis id links to its runbook "
            "(docs/runbooks/<diagnosis>.md under the hidden runbook_base variable).",
            [
                target(f"max by ({DIAG_KEYS}) ({state}) > 0", instant=True, table=True),
                target(
                    f"time() - max by ({DIAG_KEYS}) (sanlens_diagnosis_since_timestamp_seconds{{{d}}})",
                    instant=True,
                    table=True,
                ),
                target(
                    f"max by ({DIAG_KEYS}) (sanlens_diagnosis_score{{{d}}}) and on ({DIAG_KEYS}) ({state} > 0)",
                    instant=True,
                    table=True,
                ),
            ],
            "none",
            overrides=[
                rename(
                    "Value #A",
                    "Severity",
                    "none",
                    [
                        {"id": "mappings", "value": severity_map},
                        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                    ],
                ),
                rename("Value #B", "Active for", "s"),
                rename(
                    "Value #C",
                    "Score",
                    "percentunit",
                    [
                        {"id": "custom.cellOptions", "value": {"type": "gauge", "mode": "basic"}},
                        {"id": "min", "value": 0},
                        {"id": "max", "value": 1},
                    ],
                ),
                rename(
                    "diagnosis",
                    "Diagnosis",
                    None,
                    [
                        {
                            "id": "links",
                            "value": [
                                {
                                    "title": "Runbook: ${__value.raw}",
                                    "url": "${runbook_base}/${__value.raw}.md",
                                    "targetBlank": True,
                                }
                            ],
                        },
                    ],
                ),
                rename("subject", "Subject"),
            ],
            options={"sortBy": [{"displayName": "Severity", "desc": True}]},
            transformations=merge_table(),
        ),
        24,
        10,
    )
    lay.add(
        panel(
            "timeseries",
            "Active diagnoses over time",
            "Number of subjects in warning or critical state, per diagnosis.",
            [target(f"count by (diagnosis) ({state} > 0)", "{{diagnosis}}")],
            "none",
            options={},
            decimals=0,
        ),
        24,
        7,
    )

    lay.row("Per cluster and per host")
    c = 'cluster=~"$cluster"'
    lay.add(
        panel(
            "table",
            "Clusters",
            "Per ONTAP cluster: poll status, LUN IOPS, average node CPU, worst LUN latency and active diagnoses.",
            [
                target(
                    'max by (cluster) (label_replace(sanlens_target_up{kind="ontap", target=~"$cluster"}, '
                    '"cluster", "$1", "target", "(.*)"))',
                    instant=True,
                    table=True,
                ),
                target(
                    f"sum by (cluster) ({rate('sanlens_ontap_lun_ops_total', c)})", instant=True, table=True
                ),
                target(
                    f"avg by (cluster) ({rate('sanlens_ontap_node_cpu_busy_seconds_total', c)} / "
                    f"{rate('sanlens_ontap_node_cpu_elapsed_seconds_total', c)})",
                    instant=True,
                    table=True,
                ),
                target(
                    f"max by (cluster) ({srate('cluster, svm, volume, lun', 'sanlens_ontap_lun_latency_seconds_total', c)} / "
                    f"{srate('cluster, svm, volume, lun', 'sanlens_ontap_lun_ops_total', c + RW)})",
                    instant=True,
                    table=True,
                ),
                target(f"count by (cluster) (sanlens_diagnosis_state{{{c}}} > 0)", instant=True, table=True),
            ],
            "none",
            overrides=[
                up_column(),
                rename("Value #B", "LUN IOPS", "iops"),
                rename("Value #C", "Avg CPU busy", "percentunit"),
                rename("Value #D", "Worst LUN latency", "s"),
                rename("Value #E", "Active diagnoses", "none"),
            ],
            transformations=merge_table(),
        ),
        24,
        6,
    )
    h = 'host=~"$host"'
    lay.add(
        panel(
            "table",
            "Hosts",
            "Per host: poll status, disk IOPS, worst disk latency, lowest % idle, deepest queue and active diagnoses.",
            [
                target(
                    'max by (host) (label_replace(sanlens_target_up{kind!="ontap", target=~"$host"}, '
                    '"host", "$1", "target", "(.*)"))',
                    instant=True,
                    table=True,
                ),
                target(f"sum by (host) ({rate('sanlens_host_disk_ops_total', h)})", instant=True, table=True),
                target(
                    f"max by (host) ({srate('host, disk', 'sanlens_host_disk_latency_seconds_total', h)} / "
                    f"{srate('host, disk', 'sanlens_host_disk_ops_total', h)})",
                    instant=True,
                    table=True,
                ),
                target(
                    f"min by (host) ({rate('sanlens_host_disk_idle_seconds_total', h)})",
                    instant=True,
                    table=True,
                ),
                target(f"max by (host) (sanlens_host_disk_queue_length{{{h}}})", instant=True, table=True),
                target(f"count by (host) (sanlens_diagnosis_state{{{h}}} > 0)", instant=True, table=True),
            ],
            "none",
            overrides=[
                up_column(),
                rename("Value #B", "Disk IOPS", "iops"),
                rename("Value #C", "Worst disk latency", "s"),
                rename("Value #D", "Lowest % idle", "percentunit"),
                rename("Value #E", "Max queue length", "short"),
                rename("Value #F", "Active diagnoses", "none"),
            ],
            transformations=merge_table(),
        ),
        24,
        7,
    )

    # Recording rules (rules/sanlens.rules.yaml): fixed 5m means, cheap over long ranges.
    for title, description, expr, legend in (
        (
            "Worst LUN latency per cluster (5m mean)",
            "The slowest LUN of each cluster, read and write together, from the recording rule "
            "lun:sanlens_ontap_lun_latency_seconds:mean5m; dashed lines are the data-file latency "
            "thresholds of latency_slo.",
            f"max by (cluster) (lun:sanlens_ontap_lun_latency_seconds:mean5m{{{CLUSTER}}})",
            "{{cluster}}",
        ),
        (
            "Worst host disk latency per host (5m mean)",
            "The slowest disk of each host as PerfMon sees it, from the recording rule "
            "host_disk:sanlens_host_disk_latency_seconds:mean5m; compare with the LUN panel beside "
            "it: a host far above its array is a fabric or queue problem.",
            'max by (host) (host_disk:sanlens_host_disk_latency_seconds:mean5m{host=~"$host"})',
            "{{host}}",
        ),
    ):
        lay.add(
            panel(
                "timeseries",
                title,
                description,
                [target(expr, legend)],
                "s",
                thresholds=steps(GREEN, ("orange", DATA_WARN_S), ("red", DATA_CRIT_S)),
                lines=True,
                min_=0,
            ),
            12,
            7,
        )

    lay.row("sanlens itself")
    lay.add(
        panel(
            "timeseries",
            "Poll duration",
            "How long each source's last poll took (ONTAP REST or host scrape).",
            [target("sanlens_poll_duration_seconds", "{{kind}} {{target}}")],
            "s",
        ),
        8,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Poll errors",
            "Failed polls per second by reason; a flat zero line per target when there are none.",
            [
                target(
                    f"sum by (target, kind, reason) ({rate('sanlens_poll_errors_total', '')}) or "
                    f"sum by (target, kind) ({rate('sanlens_polls_total', '')}) * 0",
                    "{{target}} {{reason}}",
                )
            ],
            "reqps",
        ),
        8,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Time since last poll",
            "Seconds since each source last polled successfully; it should stay near the poll interval.",
            [target("time() - sanlens_last_poll_timestamp_seconds", "{{kind}} {{target}}")],
            "s",
        ),
        8,
        7,
    )
    return dashboard(
        "sanlens-overview",
        "sanlens / Overview",
        "Which SAN diagnoses are active now, on which subject, since when, and how each cluster and host is doing.",
        [
            cluster_var(),
            query_var("host", "Host", 'label_values(sanlens_host_disk_info{cluster=~"$cluster"}, host)'),
            runbook_var(),
        ],
        lay,
    )


# ------------------------------------------------------------------ sanlens-io-path
def io_path() -> Json:
    hs = 'cluster=~"$cluster", host=~"$host", lun=~"$lun"'
    os_ = 'cluster=~"$cluster", lun=~"$lun"'
    rw = ', op=~"read|write"'
    host_lat = (
        f"{srate('cluster, lun, op', 'sanlens_host_disk_latency_seconds_total', hs)} / "
        f"{srate('cluster, lun, op', 'sanlens_host_disk_ops_total', hs)}"
    )
    lun_lat = (
        f"{srate('cluster, lun, op', 'sanlens_ontap_lun_latency_seconds_total', os_)} / "
        f"{srate('cluster, lun, op', 'sanlens_ontap_lun_ops_total', os_ + rw)}"
    )
    lay = Layout()
    lay.row("Mapped LUNs")
    lay.add(
        panel(
            "table",
            "Host disks mapped to ONTAP LUNs",
            "Each host disk joined to its LUN (by serial or static mapping), with its drives and data class.",
            [target(f"sanlens_host_disk_info{{{hs}}}", instant=True, table=True)],
            "none",
            transformations=merge_table(("Time", "Value", "__name__", "job", "instance")),
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
            "Dashed lines: the data-class thresholds of latency_slo (10 ms warning, 20 ms critical).",
            [
                target(
                    f"{srate('host, disk, op', 'sanlens_host_disk_latency_seconds_total', hs)} / "
                    f"{srate('host, disk, op', 'sanlens_host_disk_ops_total', hs)}",
                    "host {{host}} disk {{disk}} {{op}}",
                ),
                target(
                    f"{srate('cluster, op', 'sanlens_ontap_lun_latency_seconds_total', os_)} / "
                    f"{srate('cluster, op', 'sanlens_ontap_lun_ops_total', os_ + rw)}",
                    "ONTAP {{op}}",
                ),
            ],
            "s",
            steps(GREEN, ("orange", DATA_WARN_S), ("red", DATA_CRIT_S)),
            lines=True,
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
            "Dashed line: the 1 ms gap of host_queue_limited. A large gap with an idle array points to "
            "san_oversubscription or host_queue_limited.",
            [target(f"({host_lat}) - on (cluster, lun, op) ({lun_lat})", "{{op}}")],
            "s",
            steps(GREEN, ("orange", LATENCY_GAP_S)),
            lines=True,
        ),
        9,
        8,
    )
    lay.add(
        panel(
            "stat",
            "Backend utilization E",
            "Spindle-equivalent utilization from san_oversubscription: backend IOPS / (disks x per-disk IOPS). "
            "Below 50 % the array could serve far more than the host gets.",
            [
                target(
                    f'max by (host, disk) (sanlens_diagnosis_evidence{{diagnosis="san_oversubscription", '
                    f'evidence="backend_utilization_ratio", {hs}}})',
                    "{{host}} disk {{disk}}",
                    instant=True,
                )
            ],
            "percentunit",
            steps(("blue", None), ("green", BACKEND_UTIL)),
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
            "At 90 % of Q_eff (queue_fill_ratio) the host queue limits throughput (host_queue_limited).",
            [
                target(
                    f"sum by (host, disk) (sanlens_host_disk_queue_length{{{hs}}})",
                    "queue length {{host}} disk {{disk}}",
                ),
                target(
                    srate("host, disk", "sanlens_host_disk_latency_seconds_total", hs),
                    "N = IOPS x R {{host}} disk {{disk}}",
                ),
                target(
                    f"max by (host, disk) (sanlens_host_disk_queue_depth{{{hs}}} * sanlens_host_disk_paths{{{hs}}})",
                    "Q_eff {{host}} disk {{disk}}",
                ),
                target(
                    f"max by (host, disk) (sanlens_host_disk_queue_depth{{{hs}}} * sanlens_host_disk_paths{{{hs}}}) "
                    '* on () group_left () max(sanlens_diagnosis_threshold{diagnosis="host_queue_limited", '
                    'threshold="queue_fill_ratio"})',
                    "fill limit {{host}} disk {{disk}}",
                ),
            ],
            "short",
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
            "Host disk % idle time. Above 50 % (dashed) while latency is high, the disk is waiting on the path, "
            "not busy: the san_oversubscription signature.",
            [target(rate("sanlens_host_disk_idle_seconds_total", hs), "{{host}} disk {{disk}}")],
            "percentunit",
            steps(GREEN, ("orange", IDLE_RATIO)),
            lines=True,
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
            "Host IOPS and ONTAP LUN IOPS against the LUN's ONTAP-version ceiling (35K before 9.9.1, 100K from it), "
            "as the lun_iops_ceiling diagnosis computes it.",
            [
                target(srate("host, disk", "sanlens_host_disk_ops_total", hs), "host {{host}} disk {{disk}}"),
                target(srate("cluster, lun", "sanlens_ontap_lun_ops_total", os_), "ONTAP LUN"),
                target(
                    f'max by (cluster, lun) (sanlens_diagnosis_evidence{{diagnosis="lun_iops_ceiling", '
                    f'evidence="lun_ceiling_iops", {os_}}})',
                    "LUN ceiling (version)",
                ),
            ],
            "iops",
            min_=0,
            overrides=[series("^LUN ceiling.*", DASHED, fixed("red"))],
        ),
        8,
        8,
    )
    return dashboard(
        "sanlens-io-path",
        "sanlens / I/O path per LUN",
        "Where the time goes between a Windows host disk and its ONTAP LUN: host vs array latency, queues, idle "
        "time and IOPS headroom, one row per mapped LUN.",
        [
            cluster_var(),
            query_var(
                "host", "Host", 'label_values(sanlens_host_disk_info{cluster=~"$cluster", lun!=""}, host)'
            ),
            query_var(
                "lun",
                "LUN",
                'label_values(sanlens_host_disk_info{cluster=~"$cluster", host=~"$host", lun!=""}, lun)',
            ),
        ],
        lay,
    )


# ------------------------------------------------------------------ sanlens-ontap-cpu-domains
def cpu_domains() -> Json:
    n = 'cluster=~"$cluster", node=~"$node"'
    elapsed = srate("cluster, node", "sanlens_ontap_node_cpu_elapsed_seconds_total", n)
    lay = Layout()
    lay.row("CPU domains")
    lay.add(
        panel(
            "timeseries",
            "Domain busy (% of one core)",
            "ONTAP CPU domain busy time as a percent of one core (can exceed 100 for parallel domains; "
            "Σ domains ≈ processors x 100). Serial domains (kahuna) top out at 100.",
            [
                target(
                    f"100 * {srate('cluster, node, domain', 'sanlens_ontap_node_domain_busy_seconds_total', n + NOT_IDLE)} "
                    f"/ on (cluster, node) group_left () {elapsed}",
                    "{{node}} {{domain}}",
                )
            ],
            "percent",
            min_=0,
        ),
        24,
        9,
    )
    kahuna = srate("cluster, node", "sanlens_ontap_node_domain_busy_seconds_total", n + ', domain="kahuna"')
    wafl_ex = srate(
        "cluster, node", "sanlens_ontap_node_domain_busy_seconds_total", n + ', domain="wafl_exempt"'
    )
    cpus = f"max by (cluster, node) (sanlens_ontap_node_processors{{{n}}})"
    lay.add(
        panel(
            "timeseries",
            "Kahuna vs its thresholds",
            "Kahuna (the serial domain) as % of one core, and the lower bound of serial occupancy "
            "U_K + U_W/(N_cpu - 1). Dashed: 50 % warning and 90 % critical of cpu_domain_serial_bottleneck; "
            "the 'configured' lines are the exporter's live thresholds.",
            [
                target(f"100 * {kahuna} / {elapsed}", "kahuna {{node}}"),
                target(
                    f"100 * ({kahuna} + {wafl_ex} / ({cpus} - 1)) / {elapsed}", "serial occupancy {{node}}"
                ),
                target(
                    '100 * max(sanlens_diagnosis_threshold{diagnosis="cpu_domain_serial_bottleneck", '
                    'threshold="kahuna_warning_ratio"})',
                    "warning (configured)",
                ),
                target(
                    '100 * max(sanlens_diagnosis_threshold{diagnosis="cpu_domain_serial_bottleneck", '
                    'threshold="serial_critical_ratio"})',
                    "critical (configured)",
                ),
            ],
            "percent",
            steps(GREEN, ("orange", KAHUNA_WARN_PCT), ("red", SERIAL_CRIT_PCT)),
            lines=True,
            min_=0,
            overrides=[series(".*configured.*", DASHED)],
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Average CPU busy",
            "Average busy of all processors per node. A serial bottleneck shows a hot Kahuna while this stays low.",
            [
                target(
                    f"{srate('cluster, node', 'sanlens_ontap_node_cpu_busy_seconds_total', n)} / {elapsed}",
                    "{{node}}",
                )
            ],
            "percentunit",
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    lay.row("Volumes and aggregates")
    vol_ops = (
        f"sum by (cluster, aggregate, svm, volume) ({rate('sanlens_ontap_volume_ops_total', CLUSTER)} "
        f"* on (cluster, svm, volume) group_left (aggregate) max by (cluster, svm, volume, aggregate) "
        f"(sanlens_ontap_volume_info{{{n}}}))"
    )
    lay.add(
        panel(
            "bargauge",
            "Volumes per aggregate",
            "FlexVols per aggregate. Waffinity spreads work by volume: fewer than 2 (red) or 4 (orange) volumes "
            "per aggregate invite serial bottlenecks.",
            [
                target(
                    f"count by (cluster, aggregate) (sanlens_ontap_volume_info{{{n}}})",
                    "{{aggregate}}",
                    instant=True,
                )
            ],
            "none",
            steps(("red", None), ("orange", 2), ("green", 4)),
            min_=0,
            decimals=0,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "bargauge",
            "Ops share per volume in its aggregate",
            "Each volume's share of its aggregate's ops; at 80 % (volume_affinity_concentration) one volume "
            "carries the aggregate.",
            [
                target(
                    f"{vol_ops} / on (cluster, aggregate) group_left () sum by (cluster, aggregate) ({vol_ops})",
                    "{{aggregate}} / {{volume}}",
                    instant=True,
                )
            ],
            "percentunit",
            steps(GREEN, ("red", VOLUME_SHARE)),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )
    return dashboard(
        "sanlens-ontap-cpu-domains",
        "sanlens / ONTAP CPU domains",
        "Is an ONTAP node limited by a serial CPU domain (Kahuna) although its average CPU is low, and is the "
        "load spread over enough volumes per aggregate?",
        [
            cluster_var(),
            query_var("node", "Node", 'label_values(sanlens_ontap_node_info{cluster=~"$cluster"}, node)'),
        ],
        lay,
    )


# ------------------------------------------------------------------ sanlens-lun-volume
def lun_volume() -> Json:
    v = 'cluster=~"$cluster", svm=~"$svm", volume=~"$volume"'
    lsel = v + ', lun=~"$lun"'
    lay = Layout()
    for kind, sel, keys, diag, ev, pre, post, lat_ops in (
        (
            "LUN",
            lsel,
            "cluster, svm, volume, lun",
            "lun_iops_ceiling",
            "lun_ceiling_iops",
            "35K",
            "100K",
            ', op=~"read|write"',
        ),
        (
            "Volume",
            v,
            "cluster, svm, volume",
            "volume_iops_ceiling",
            "volume_ceiling_iops",
            "115K",
            "240K",
            "",
        ),
    ):
        low = kind.lower()
        metric = f"sanlens_ontap_{low}"
        legend = "{{lun}}" if kind == "LUN" else "{{volume}}"
        iops = srate(keys, f"{metric}_ops_total", sel)
        ceiling = (
            f'max by ({keys}) (sanlens_diagnosis_evidence{{diagnosis="{diag}", evidence="{ev}", {sel}}})'
        )
        lay.row(f"{kind}s")
        lay.add(
            panel(
                "timeseries",
                f"{kind} IOPS vs version ceiling",
                f"{kind} IOPS against 80 % of the ONTAP-version ceiling ({pre} before 9.9.1, {post} from 9.9.1) that "
                f"{diag} uses; the configured warning fraction scales the dashed line.",
                [
                    target(iops, legend),
                    target(
                        f"max by (cluster) ({ceiling}) * on () group_left () "
                        f'max(sanlens_diagnosis_threshold{{diagnosis="{diag}", threshold="warning_fraction"}})',
                        "80 % of ceiling {{cluster}}",
                    ),
                ],
                "iops",
                min_=0,
                overrides=[series("^80 % of ceiling.*", DASHED, fixed("orange"))],
            ),
            12,
            8,
        )
        lay.add(
            panel(
                "bargauge",
                f"{kind} IOPS as a share of its ceiling",
                f"Now: {low} IOPS / version ceiling. Orange from 80 % (warning), red from 100 % (critical) of {diag}.",
                [target(f"{iops} / {ceiling}", legend, instant=True)],
                "percentunit",
                steps(GREEN, ("orange", CEILING_WARN), ("red", CEILING_CRIT)),
                min_=0,
                max_=1,
            ),
            12,
            8,
        )
        lay.add(
            panel(
                "timeseries",
                f"{kind} latency",
                f"ONTAP {low} latency per op (Σ latency / Σ ops). Dashed: 10 ms warning and 20 ms critical (data class).",
                [
                    target(
                        f"{srate(keys + ', op', f'{metric}_latency_seconds_total', sel)} / "
                        f"{srate(keys + ', op', f'{metric}_ops_total', sel + lat_ops)}",
                        legend + " {{op}}",
                    )
                ],
                "s",
                steps(GREEN, ("orange", DATA_WARN_S), ("red", DATA_CRIT_S)),
                lines=True,
                min_=0,
            ),
            12,
            8,
        )
        lay.add(
            panel(
                "timeseries",
                f"{kind} write share",
                f"Writes / all ops per {low}. From 30 % write share, volume_iops_ceiling recommends a second volume "
                "for the workload.",
                [target(f"{srate(keys, f'{metric}_ops_total', sel + WRITES)} / {iops}", legend)],
                "percentunit",
                steps(GREEN, ("orange", WRITE_SHARE)),
                lines=True,
                min_=0,
                max_=1,
            ),
            12,
            8,
        )
    return dashboard(
        "sanlens-lun-volume",
        "sanlens / LUNs and volumes",
        "How close each LUN and volume is to the per-object IOPS ceiling of its ONTAP version, with its latency "
        "and write share.",
        [
            cluster_var(),
            query_var("svm", "SVM", 'label_values(sanlens_ontap_volume_info{cluster=~"$cluster"}, svm)'),
            query_var(
                "volume",
                "Volume",
                'label_values(sanlens_ontap_volume_info{cluster=~"$cluster", svm=~"$svm"}, volume)',
            ),
            query_var(
                "lun",
                "LUN",
                'label_values(sanlens_ontap_lun_info{cluster=~"$cluster", svm=~"$svm", volume=~"$volume"}, lun)',
            ),
        ],
        lay,
    )


# ------------------------------------------------------------------ sanlens-disks
def disks() -> Json:
    a = 'cluster=~"$cluster", aggregate=~"$aggregate"'
    keys = "cluster, aggregate, disk"
    busy = (
        f"({srate(keys, 'sanlens_ontap_disk_busy_seconds_total', a)} / "
        f"{srate(keys, 'sanlens_ontap_disk_elapsed_seconds_total', a)})"
    )
    by = "by (cluster, aggregate)"
    lay = Layout()
    lay.row("Aggregate $aggregate", repeat="aggregate")
    lay.add(
        panel(
            "heatmap",
            "Disk busy distribution",
            "How many disks of the aggregate sit at each busy level over time; a second band of hot disks after "
            "an expansion is what disk_busy_imbalance looks for.",
            [target(busy, "{{disk}}")],
            "percentunit",
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "bargauge",
            "Busy per disk now",
            "Each disk's busy ratio now. Orange from 50 % (the minimum max-busy of disk_busy_imbalance), red from 90 %.",
            [target(busy, "{{disk}}", instant=True)],
            "percentunit",
            steps(GREEN, ("orange", DISK_BUSY_MIN), ("red", DISK_BUSY_CRIT)),
            min_=0,
            max_=1,
            options={"displayMode": "basic", "valueMode": "text", "minVizHeight": 8, "maxVizHeight": 12},
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Imbalance: coefficient of variation",
            "Standard deviation / mean of disk busy across the aggregate; above 0.3 (dashed) with a disk over 50 % "
            "busy the aggregate wants a reallocate.",
            [target(f"stddev {by} ({busy}) / avg {by} ({busy})", "CV {{aggregate}}")],
            "none",
            steps(GREEN, ("orange", DISK_CV)),
            lines=True,
            min_=0,
            decimals=2,
        ),
        8,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Imbalance: max / median",
            "Busiest disk over the median disk; above 1.5 (dashed) is imbalanced.",
            [target(f"max {by} ({busy}) / quantile {by} (0.5, {busy})", "max/median {{aggregate}}")],
            "none",
            steps(GREEN, ("orange", MAX_TO_MEDIAN)),
            lines=True,
            min_=0,
            decimals=2,
        ),
        8,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Busy per RAID group",
            "Average disk busy per RAID group: after an expansion the newest groups run hotter "
            "(newest / older > 1.5 is one of the imbalance signals).",
            [
                target(
                    f"avg by (cluster, aggregate, raid_group) ({busy} * on ({keys}) group_left (raid_group) "
                    f"max by ({keys}, raid_group) (sanlens_ontap_disk_info{{{a}}}))",
                    "{{raid_group}}",
                )
            ],
            "percentunit",
            steps(GREEN, ("orange", DISK_BUSY_MIN)),
            lines=True,
            min_=0,
            max_=1,
        ),
        8,
        7,
    )
    lay.row("Background operations")
    bg = 'cluster=~"$cluster", aggregate=~"${aggregate}|"'
    lay.add(
        panel(
            "table",
            "Active background operations",
            "RAID reconstructs, resyncs, parity recomputes and volume moves now, with progress and the ETA sanlens "
            "derives from the observed progress rate (background_operation_impact).",
            [
                target(f"sanlens_background_operation_percent_done{{{bg}}}", instant=True, table=True),
                target(f"sanlens_background_operation_eta_seconds{{{bg}}}", instant=True, table=True),
            ],
            "none",
            overrides=[
                rename(
                    "Value #A",
                    "Done",
                    "percent",
                    [
                        {"id": "custom.cellOptions", "value": {"type": "gauge", "mode": "basic"}},
                        {"id": "min", "value": 0},
                        {"id": "max", "value": 100},
                    ],
                ),
                rename("Value #B", "ETA", "s"),
            ],
            transformations=merge_table(("Time", "__name__", "job", "instance")),
        ),
        24,
        6,
    )
    lay.add(
        panel(
            "timeseries",
            "Background operation progress",
            "Progress of RAID operations per RAID group and of volume moves, as ONTAP reports it.",
            [
                target(
                    f"sanlens_ontap_raid_operation_percent{{{a}}}",
                    "{{aggregate}} {{raid_group}} {{operation}}",
                ),
                target(
                    'sanlens_ontap_volume_move_percent{cluster=~"$cluster"}',
                    "move {{svm}}/{{volume}} {{state}}",
                ),
            ],
            "percent",
            min_=0,
            max_=100,
        ),
        12,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Background operation ETA",
            "Time left for each active operation at its observed progress rate.",
            [
                target(
                    f"sanlens_background_operation_eta_seconds{{{bg}}}",
                    "{{aggregate}}{{volume}} {{operation}}",
                )
            ],
            "s",
            min_=0,
        ),
        12,
        7,
    )
    return dashboard(
        "sanlens-disks",
        "sanlens / Disks and background operations",
        "Is an aggregate's load spread evenly over its disks, and is a rebuild or volume move slowing it down "
        "(and when will it finish)?",
        [
            cluster_var(),
            query_var(
                "aggregate",
                "Aggregate",
                'label_values(sanlens_ontap_aggregate_info{cluster=~"$cluster"}, aggregate)',
            ),
        ],
        lay,
    )


# ------------------------------------------------------------------ output
BUILDERS = {
    "sanlens-overview": overview,
    "sanlens-io-path": io_path,
    "sanlens-ontap-cpu-domains": cpu_domains,
    "sanlens-lun-volume": lun_volume,
    "sanlens-disks": disks,
}


def render(d: Json) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def build_all() -> dict[str, str]:
    """File name -> JSON text for every dashboard."""
    return {f"{uid}.json": render(fn()) for uid, fn in BUILDERS.items()}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="fail if a committed dashboard differs from the build"
    )
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    args = ap.parse_args(argv)
    stale = []
    for name, text in build_all().items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale dashboards (run python3 dashboards/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
