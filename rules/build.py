#!/usr/bin/env python3
"""Writes rules/sanlens.rules.yaml, the one rules file Prometheus, promtool and the Helm chart load.

Why a generator: every diagnosis alert comes from the diagnosis's own spec
(``SPEC`` in ``sanlens.diagnose.<id>``: title, severity policy, fix, the evidence
it quotes and how, its dashboard), so a new diagnosis gets its warning and
critical alert, runbook link and dashboard link without anyone retyping an id or
an evidence name. Selectors and links come from mixin/config.py, shared with the
dashboards; the flags override it. The output is committed; ``--check`` (run by
the tests) fails when it is stale.

    python3 rules/build.py                      # rewrite rules/sanlens.rules.yaml
    python3 rules/build.py --check              # exit 1 if the committed file differs
    python3 rules/build.py -o my.rules.yaml \\
        --runbook-base-url https://wiki.example.com/runbooks \\
        --dashboard-base-url https://grafana.example.com \\
        --job-selector 'job="storage-exporter"'    # your own links and scrape job

Conventions follow the monitoring-mixins: recording rules are named
``level:metric:operations``; alerts are ``Sanlens<CamelCase id>`` with a
``severity`` label, a static ``summary``, a templated ``description`` that quotes
the subject, the evidence and where the subject's latency goes (its dominant
waterfall component), ``runbook_url`` and ``dashboard_url``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mixin.config  # noqa: E402  (puts exporter/ on sys.path)
from mixin.config import MixinConfig  # noqa: E402

from sanlens.diagnose.registry import REGISTRY  # noqa: E402
from sanlens.diagnose.spec import DiagnosisSpec, Evidence  # noqa: E402
from sanlens.diagnose.waterfall import NAMES as PART_NAMES  # noqa: E402

OUT = HERE / "sanlens.rules.yaml"
DEFAULT = mixin.config.DEFAULT
# Alert `for:` on top of the engine's own sustain window (which already proves the
# signature lasted): enough to ride out one bad scrape, short enough to page early.
FOR = {1: "10m", 2: "5m"}
EXPORTER_RUNBOOK = "sanlens_exporter.md"
OVERVIEW_UID = "sanlens-overview"

_FMT = {
    "duration": "{{ . | first | value | humanizeDuration }}",
    "percent": "{{ . | first | value | humanizePercentage }}",
    "number": '{{ . | first | value | printf "%.2g" }}',
    "iops": "{{ . | first | value | humanize }}",
    "multiple": '{{ . | first | value | printf "%.4g\u00d7" }}',  # the multiplication sign
}


def _selector(cfg: MixinConfig, *matchers: str) -> str:
    return ",".join(m for m in (cfg.job_selector, *matchers) if m)


def metric(cfg: MixinConfig, name: str, *matchers: str) -> str:
    """``name{<job selector>,<matchers>}``: every alert reads the series of the exporter's own job."""
    sel = _selector(cfg, *matchers)
    return f"{name}{{{sel}}}" if sel else name


def query(cfg: MixinConfig, name: str, matchers: str, args: str, wrap: str = "{}") -> str:
    """A Go template pipeline ``printf "<name{job, matchers}>" args | query`` (``matchers`` holds the verbs);
    ``wrap`` puts the selector inside a PromQL expression, e.g. ``count({})``."""
    sel = ",".join(m for m in (cfg.job_selector.replace("%", "%%"), matchers) if m)  # printf-safe
    expr = wrap.format(f"{name}{{{sel}}}")
    return f"printf {json.dumps(expr, ensure_ascii=False)} {args} | query"


def evidence_template(cfg: MixinConfig, diagnosis: str, ev: Evidence) -> str:
    """A Go-template fragment that looks the evidence up for this alert's subject (omitted when absent)."""
    q = query(
        cfg,
        "sanlens_diagnosis_evidence",
        "diagnosis=%q,subject=%q,evidence=%q",
        f'"{diagnosis}" $labels.subject "{ev.name}"',
    )
    return f"{{{{ with {q} }}}}{ev.quote} {_FMT[ev.fmt]}; {{{{ end }}}}"


def dashboard_url(cfg: MixinConfig, uid: str, labels: Sequence[str]) -> str:
    """A link to a dashboard with the alert's subject labels as its variables; the uid takes the site's prefix."""
    uid = cfg.dashboard_uid_prefix + uid.removeprefix(DEFAULT.dashboard_uid_prefix)
    vars_ = "".join(
        f"{{{{ with $labels.{lb} }}}}&var-{lb}={{{{ . | urlquery }}}}{{{{ end }}}}" for lb in labels
    )
    return f"{cfg.dashboard_base_url.rstrip('/')}/d/{uid}/{uid}?orgId=1{vars_}"


def runbook_url(cfg: MixinConfig, page: str) -> str:
    return f"{cfg.runbook_base_url.rstrip('/')}/{page}"


def diagnosis_alerts(cfg: MixinConfig) -> list[dict[str, Any]]:
    """Each diagnosis's alerts as its spec's severity policy lists them (critical only where it pages)."""
    return [
        _diagnosis_alert(cfg, spec, state, sev)
        for spec in REGISTRY.values()
        for state, sev in spec.alert_severities.items()
    ]


# The most subjects an alert names; the count says how many there are in all.
AFFECTED_SHOWN = 20


def affected_template(cfg: MixinConfig) -> str:
    """Every finding of the alert's incident (its causes and the symptoms they explain), named."""
    count = query(cfg, "sanlens_diagnosis_incident", "incident=%q", "$labels.incident", "count({})")
    top = query(
        cfg, "sanlens_diagnosis_incident", "incident=%q", "$labels.incident", f"topk({AFFECTED_SHOWN}, {{}})"
    )
    return (
        f"{{{{ with {count} }}}}{{{{ . | first | value }}}}{{{{ end }}}}: "
        f'{{{{ range {top} | sortByLabel "subject" }}}}{{{{ .Labels.subject }}}} '
        f"({{{{ .Labels.diagnosis }}}}); {{{{ end }}}}"
    )


def causes_template(cfg: MixinConfig, diagnosis: str) -> str:
    """The cause findings on a symptom's I/O path, from ``sanlens_diagnosis_cause``."""
    q = query(cfg, "sanlens_diagnosis_cause", "diagnosis=%q,subject=%q", f'"{diagnosis}" $labels.subject')
    return (
        f'{{{{ range {q} | sortByLabel "cause_subject" }}}}'
        "{{ .Labels.cause_diagnosis }} on {{ .Labels.cause_subject }}; "
        "{{ else }}none known, this finding is its own incident; {{ end }}"
    )


def component_name_template() -> str:
    """The waterfall part in the dot's ``component`` label as the report names it (an unknown one as is)."""
    chain = "".join(
        f'{{{{ {"if" if i == 0 else "else if"} eq .Labels.component "{part}" }}}}{name}'
        for i, (part, name) in enumerate(PART_NAMES.items())
    )
    return f"{chain}{{{{ else }}}}{{{{ .Labels.component }}}}{{{{ end }}}}"


def dominant_template(cfg: MixinConfig) -> str:
    """A line naming the subject's largest latency component and the whole it is part of (from the
    alerting exporter's ``sanlens_latency_component_seconds``), omitted when it has no waterfall for the
    subject: the alert says where the time goes before anyone opens a dashboard."""
    name, matchers, args = (
        "sanlens_latency_component_seconds",
        "instance=%q,subject=%q",
        "$labels.instance $labels.subject",
    )
    top = query(cfg, name, matchers, args, "topk(1, {})")
    whole = query(cfg, name, matchers, args, "sum({})")
    return (
        f"{{{{ with {top} }}}}{{{{ with first . }}}}Most of its latency is {component_name_template()}: "
        f"{{{{ .Value | humanizeDuration }}}}{{{{ end }}}}"
        f"{{{{ with {whole} }}}} of {{{{ . | first | value | humanizeDuration }}}}{{{{ end }}}}.\n{{{{ end }}}}"
    )


def _diagnosis_alert(cfg: MixinConfig, spec: DiagnosisSpec, state: int, sev: str) -> dict[str, Any]:
    did = spec.id
    evidence = "".join(evidence_template(cfg, did, ev) for ev in spec.quoted())
    # Warnings fire from state >= 1 so they do not resolve and re-open when a finding
    # escalates; Alertmanager's inhibit rule mutes them while the incident pages. The join
    # adds the finding's incident (its root cause) and role (cause or explained symptom),
    # which Alertmanager groups and inhibits by.
    op = "==" if sev == "critical" else ">="
    did_sel = f"diagnosis={json.dumps(did)}"
    state_expr = f"{metric(cfg, 'sanlens_diagnosis_state', did_sel)} {op} {state}"
    expr = (
        f"({state_expr})\n"
        f"  * on (job, instance, diagnosis, subject) group_left (incident, role)\n"
        f"  {metric(cfg, 'sanlens_diagnosis_incident', did_sel)}"
    )
    when = spec.severity[state]
    causes = f"Causes on its I/O path: {causes_template(cfg, did)}\n" if spec.symptom else ""
    affected = affected_template(cfg)
    dominant = dominant_template(cfg)
    return {
        "alert": spec.alert,
        "expr": expr,
        "for": FOR[2 if sev == "critical" else 1],
        "labels": {"severity": sev},
        "annotations": {
            "summary": f"{spec.title}.",
            "description": (
                f"{sev.capitalize()} {did} on {{{{ $labels.subject }}}} "
                f"(cluster {{{{ $labels.cluster }}}}): {when}.\n"
                f"Evidence: {evidence}\n"
                f"{dominant}"
                f"{causes}"
                f"Fix: {spec.fix}\n"
                f"Incident {{{{ $labels.incident }}}}, findings {affected}"
            ),
            "affected": affected,
            "runbook_url": runbook_url(cfg, spec.runbook.rsplit("/", 1)[-1]),
            "dashboard_url": dashboard_url(cfg, spec.dashboard.uid, spec.dashboard.variables),
        },
    }


def health_alerts(cfg: MixinConfig) -> list[dict[str, Any]]:
    """The exporter's own health: scrapes, target polls, staleness, and running background operations."""
    runbook = runbook_url(cfg, EXPORTER_RUNBOOK)
    overview = dashboard_url(cfg, OVERVIEW_UID, ("cluster",))
    interval = metric(cfg, "sanlens_poll_interval_seconds")
    background = REGISTRY["background_operation_impact"]
    eta = query(
        cfg,
        "sanlens_background_operation_eta_seconds",
        "cluster=%q,aggregate=%q,raid_group=%q,volume=%q,operation=%q",
        "$labels.cluster $labels.aggregate $labels.raid_group $labels.volume $labels.operation",
    )

    def alert(
        name: str,
        expr: str,
        for_: str,
        sev: str,
        summary: str,
        desc: str,
        runbook_url: str = runbook,
        dash_url: str = overview,
    ) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": name, "expr": expr}
        if for_:
            rule["for"] = for_
        rule["labels"] = {"severity": sev}
        rule["annotations"] = {
            "summary": summary,
            "description": desc,
            "runbook_url": runbook_url,
            "dashboard_url": dash_url,
        }
        return rule

    return [
        alert(
            "SanlensExporterDown",
            f"{metric(cfg, 'up')} == 0",
            "5m",
            "critical",
            "Prometheus cannot scrape the sanlens exporter.",
            "{{ $labels.instance }} (job {{ $labels.job }}) has been unreachable for 5 minutes; "
            "no SAN diagnosis can fire while it is down.",
        ),
        alert(
            "SanlensTargetDown",
            f"{metric(cfg, 'sanlens_target_up')} == 0",
            "5m",
            "warning",
            "sanlens cannot poll one of its targets.",
            "The {{ $labels.kind }} target {{ $labels.target }} failed its last polls "
            "(exporter {{ $labels.instance }}); its LUNs, disks and diagnoses are not being updated.",
        ),
        alert(
            "SanlensPollErrors",
            f"sum without (reason) (increase({metric(cfg, 'sanlens_poll_errors_total')}[15m])) > 3",
            "15m",
            "warning",
            "sanlens polls of a target keep failing.",
            "{{ $value | humanize }} polls of the {{ $labels.kind }} target {{ $labels.target }} failed "
            "in the last 15 minutes (exporter {{ $labels.instance }}); see the exporter log for the reason.",
        ),
        alert(
            "SanlensStaleData",
            f"(time() - {metric(cfg, 'sanlens_last_poll_timestamp_seconds')}) > 5 * {interval}",
            "5m",
            "warning",
            "sanlens data for a target is stale.",
            "The last successful poll of the {{ $labels.kind }} target {{ $labels.target }} is "
            "{{ $value | humanizeDuration }} old, more than five poll intervals; its diagnoses are frozen.",
        ),
        alert(
            "SanlensSlowPolls",
            f"{metric(cfg, 'sanlens_poll_duration_seconds')} > 0.8 * {interval}",
            "15m",
            "warning",
            "sanlens polls take most of their interval.",
            "Polling the {{ $labels.kind }} target {{ $labels.target }} takes {{ $value | humanizeDuration }}, "
            "over 80 % of its poll interval; raise poll_interval, poll fewer tables or shard the clusters.",
        ),
        alert(
            "SanlensBackgroundOperationRunning",
            f"{metric(cfg, 'sanlens_background_operation_done_ratio')} < 1",
            "",
            "info",
            "A RAID rebuild, resync or volume move is running.",
            "{{ $labels.operation }} on {{ $labels.cluster }}/{{ $labels.aggregate }}{{ with $labels.raid_group }} "
            "{{ . }}{{ end }}{{ with $labels.volume }} volume {{ . }}{{ end }} is {{ $value | humanizePercentage }} done"
            f"{{{{ with {eta} }}}}, about {{{{ . | first | value | humanizeDuration }}}} left{{{{ end }}}}. "
            f"Informational: routed to no pager unless it hurts latency ({background.alert}).",
            runbook_url(cfg, background.runbook.rsplit("/", 1)[-1]),
            dashboard_url(cfg, background.dashboard.uid, background.dashboard.variables),
        ),
    ]


def _rate(metric: str, sel: str = "") -> str:
    return f"rate({metric}{{{sel}}}[5m])" if sel else f"rate({metric}[5m])"


HOST_LUN = "cluster, svm, volume, lun"


def _with_lun(expr: str) -> str:
    """A host-disk expression with the LUN labels joined from sanlens_host_disk_info: the counters carry
    ``host, disk[, op]`` only (a mapping change never breaks their rate()); the recorded series carry the
    LUN so dashboards and alerts can select by cluster and LUN."""
    return (
        f"group by (host, disk, {HOST_LUN}) (sanlens_host_disk_info)\n"
        f"  * on (host, disk) group_right ({HOST_LUN})\n  {expr}"
    )


def _guarded_lun(num: str, den: str, min_iops: float) -> str:
    """``_guarded`` for a host-disk latency, the LUN labels joined onto the numerator (the divisor
    matches it ignoring them)."""
    return f"(\n  {_with_lun(num)}\n)\n  / ignoring ({HOST_LUN}) group_left () ({den} >= {min_iops:g})"


def _guarded(num: str, den: str, min_iops: float) -> str:
    """``num / (den >= min_iops)``: a latency only where enough ops ran to mean something, so an
    idle LUN's one slow op does not draw a spike (the series is absent instead)."""
    return f"{num}\n  / ({den} >= {min_iops:g})"


def recording_rules(cfg: MixinConfig = DEFAULT) -> list[dict[str, Any]]:
    """The aggregations the dashboards and ad-hoc queries share, over a fixed 5m window."""
    rw = 'op=~"read|write"'
    wr = 'op="write"'
    busy = 'domain!="idle"'
    host_by = "host, disk"
    lun_by = "cluster, svm, volume, lun"
    vol_by = "cluster, svm, volume"
    lif_by = "cluster, node, svm, lif, port"
    port_by = "cluster, node, port"
    m = cfg.latency_min_iops
    rec: list[tuple[str, str]] = [
        # Host disk (PerfMon view): per op, then all ops.
        (
            "host_disk_op:sanlens_host_disk_latency_seconds:mean5m",
            _guarded_lun(
                _rate("sanlens_host_disk_latency_seconds_total"), _rate("sanlens_host_disk_ops_total"), m
            ),
        ),
        (
            "host_disk:sanlens_host_disk_latency_seconds:mean5m",
            _guarded_lun(
                f"sum by ({host_by}) ({_rate('sanlens_host_disk_latency_seconds_total', rw)})",
                f"sum by ({host_by}) ({_rate('sanlens_host_disk_ops_total', rw)})",
                m,
            ),
        ),
        (
            "host_disk:sanlens_host_disk_ops:rate5m",
            _with_lun(f"sum by ({host_by}) ({_rate('sanlens_host_disk_ops_total', rw)})"),
        ),
        (
            "host_disk:sanlens_host_disk_bytes:rate5m",
            _with_lun(f"sum by ({host_by}) ({_rate('sanlens_host_disk_bytes_total')})"),
        ),
        (
            # Windows counts idle time, Linux busy time (io_ticks): one idle ratio for both
            "host_disk:sanlens_host_disk_idle:ratio_rate5m",
            _with_lun(
                f"(\n    clamp_max({_rate('sanlens_host_disk_idle_seconds_total')}, 1)\n"
                f"  or\n    clamp_min(1 - {_rate('sanlens_host_disk_busy_seconds_total')}, 0)\n  )"
            ),
        ),
        (
            # the queue-length integral over time: mean I/Os in flight (iostat aqu-sz), Little's N
            "host_disk:sanlens_host_disk_queue_seconds:rate5m",
            _with_lun(_rate("sanlens_host_disk_queue_seconds_total")),
        ),
        (
            "host_disk:sanlens_host_disk_queue_length:max5m",
            _with_lun("max_over_time(sanlens_host_disk_queue_length[5m])"),
        ),
        # ONTAP LUN.
        (
            "lun_op:sanlens_ontap_lun_latency_seconds:mean5m",
            _guarded(
                _rate("sanlens_ontap_lun_latency_seconds_total"), _rate("sanlens_ontap_lun_ops_total", rw), m
            ),
        ),
        (
            "lun:sanlens_ontap_lun_latency_seconds:mean5m",
            _guarded(
                f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_latency_seconds_total', rw)})",
                f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', rw)})",
                m,
            ),
        ),
        ("lun:sanlens_ontap_lun_ops:rate5m", f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total')})"),
        (
            "lun:sanlens_ontap_lun_bytes:rate5m",
            f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_bytes_total')})",
        ),
        (
            "lun:sanlens_ontap_lun_write:ratio_rate5m",
            f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', wr)})\n"
            f"  / sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', rw)})",
        ),
        # ONTAP volume.
        (
            "volume:sanlens_ontap_volume_latency_seconds:mean5m",
            _guarded(
                f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_latency_seconds_total')})",
                f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total')})",
                m,
            ),
        ),
        (
            "volume:sanlens_ontap_volume_ops:rate5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total')})",
        ),
        (
            "volume:sanlens_ontap_volume_bytes:rate5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_bytes_total')})",
        ),
        (
            "volume:sanlens_ontap_volume_write:ratio_rate5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total', wr)})\n"
            f"  / sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total', rw)})",
        ),
        # FC front end: LIF latency (the array's view of the fabric side) and port utilization.
        (
            "fcp_lif:sanlens_ontap_fcp_lif_latency_seconds:mean5m",
            _guarded(
                f"sum by ({lif_by}) ({_rate('sanlens_ontap_fcp_lif_latency_seconds_total', rw)})",
                f"sum by ({lif_by}) ({_rate('sanlens_ontap_fcp_lif_ops_total', rw)})",
                m,
            ),
        ),
        (
            "fcp_lif:sanlens_ontap_fcp_lif_ops:rate5m",
            f"sum by ({lif_by}) ({_rate('sanlens_ontap_fcp_lif_ops_total')})",
        ),
        (
            "fcp_port:sanlens_ontap_fcp_port_latency_seconds:mean5m",
            _guarded(
                f"sum by ({port_by}) ({_rate('sanlens_ontap_fcp_port_latency_seconds_total', rw)})",
                f"sum by ({port_by}) ({_rate('sanlens_ontap_fcp_port_ops_total', rw)})",
                m,
            ),
        ),
        (
            # the busier direction over the negotiated link's data rate (FC: 100 MB/s per Gbit/s)
            "fcp_port:sanlens_ontap_fcp_port_utilization:ratio_rate5m",
            f"max by ({port_by}) ({_rate('sanlens_ontap_fcp_port_bytes_total')})\n"
            f"  / on ({port_by}) sanlens_ontap_fc_port_data_rate_bytes_per_second",
        ),
        (
            "fcp_port:sanlens_ontap_fcp_port_queue_full:rate5m",
            f"sum by ({port_by}) ({_rate('sanlens_ontap_fcp_port_queue_full_total')})",
        ),
        # ONTAP disks: busy ratio, what the disks dashboard ranks its aggregates by.
        (
            "disk:sanlens_ontap_disk_busy:ratio_rate5m",
            f"{_rate('sanlens_ontap_disk_busy_seconds_total')}\n"
            f"  / {_rate('sanlens_ontap_disk_elapsed_seconds_total')}",
        ),
        # ONTAP node CPU: domain busy as a ratio of ONE core (serial domains cap at 1).
        (
            "node_domain:sanlens_ontap_node_domain_busy:core_ratio_rate5m",
            f"{_rate('sanlens_ontap_node_domain_busy_seconds_total', busy)}\n"
            f"  / on (cluster, node) group_left () {_rate('sanlens_ontap_node_cpu_elapsed_seconds_total')}",
        ),
        # ONTAP cpu_busy: the busiest domain (against its limit) or the average, whichever is higher
        (
            "node:sanlens_ontap_node_cpu_busy:ratio_rate5m",
            f"{_rate('sanlens_ontap_node_cpu_busy_seconds_total')}\n"
            f"  / {_rate('sanlens_ontap_node_cpu_elapsed_seconds_total')}",
        ),
        # the average over all processors ("average CPU")
        (
            "node:sanlens_ontap_node_average_processor_busy:ratio_rate5m",
            f"{_rate('sanlens_ontap_node_average_processor_busy_seconds_total')}\n"
            f"  / {_rate('sanlens_ontap_node_cpu_elapsed_seconds_total')}",
        ),
    ]
    return [{"record": name, "expr": expr} for name, expr in rec]


def build(cfg: MixinConfig = DEFAULT) -> dict[str, Any]:
    return {
        "groups": [
            {"name": "sanlens.recording", "rules": recording_rules(cfg)},
            {"name": "sanlens.diagnoses", "rules": diagnosis_alerts(cfg)},
            {"name": "sanlens.exporter", "rules": health_alerts(cfg)},
        ]
    }


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings so the file stays readable in review."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)

HEADER = """\
# Generated by rules/build.py from the diagnosis specs (sanlens.diagnose) and mixin/config.py - edit those, not this file.
# Load into Prometheus (rule_files:), promtool, or the Helm chart's PrometheusRule.
"""


def render(cfg: MixinConfig = DEFAULT) -> str:
    body = yaml.dump(build(cfg), Dumper=_Dumper, sort_keys=False, width=100_000)
    return HEADER + body


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed file differs from the build")
    ap.add_argument("-o", "--output", type=Path, default=OUT, help=f"output file (default: {OUT.name})")
    mixin.config.add_arguments(ap)  # --job-selector, --runbook-base-url, --dashboard-base-url, ...
    args = ap.parse_args(argv)
    text = render(mixin.config.from_args(args))
    if args.check:
        if not args.output.exists() or args.output.read_text(encoding="utf-8") != text:
            print(f"{args.output} is stale: run python3 rules/build.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    n = sum(len(g["rules"]) for g in yaml.safe_load(text)["groups"])
    print(f"wrote {args.output} ({n} rules)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
