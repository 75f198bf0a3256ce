#!/usr/bin/env python3
"""Writes rules/sanlens.rules.yaml, the one rules file Prometheus, promtool and the Helm chart load.

Why a generator: every diagnosis alert comes from the diagnosis registry
(``sanlens.diagnose.registry``), so a new diagnosis gets its warning and
critical alert, runbook link and dashboard link without anyone retyping an id.
The output is committed; ``--check`` (run by the tests) fails when it is stale.

    python3 rules/build.py                      # rewrite rules/sanlens.rules.yaml
    python3 rules/build.py --check              # exit 1 if the committed file differs
    python3 rules/build.py -o my.rules.yaml \\
        --runbook-base-url https://wiki.example.com/runbooks \\
        --dashboard-base-url https://grafana.example.com   # your own links

Conventions follow the monitoring-mixins: recording rules are named
``level:metric:operations``; alerts are ``Sanlens<CamelCase id>`` with a
``severity`` label, a static ``summary``, a templated ``description`` that quotes
the subject and the evidence, ``runbook_url`` and ``dashboard_url``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "exporter"))

from sanlens.diagnose.registry import REGISTRY, alert_name  # noqa: E402

OUT = HERE / "sanlens.rules.yaml"
RUNBOOK_BASE = "https://github.com/sanlens/sanlens/blob/main/docs/runbooks"
DASHBOARD_BASE = "http://localhost:3000"  # Grafana's default address; override per site
SEVERITY = {1: "warning", 2: "critical"}
# Alert `for:` on top of the engine's own sustain window (which already proves the
# signature lasted): enough to ride out one bad scrape, short enough to page early.
FOR = {1: "10m", 2: "5m"}
EXPORTER_RUNBOOK = "sanlens_exporter.md"
JOB = 'job=~".*sanlens.*"'  # the scrape job(s) of the exporter; --job-selector overrides


@dataclass(frozen=True)
class Ev:
    """One evidence value quoted in an alert description."""

    name: str
    text: str
    fmt: str  # duration | percent | number | iops (a key of _FMT)


# The evidence each description quotes (names as the engine exposes them); absent ones are left out.
EVIDENCE: dict[str, tuple[Ev, ...]] = {
    "latency_slo": (
        Ev("host_latency_seconds", "host latency", "duration"),
        Ev("lun_latency_seconds", "ONTAP LUN latency", "duration"),
        Ev("warning_threshold_seconds", "warning threshold", "duration"),
        Ev("critical_threshold_seconds", "critical threshold", "duration"),
    ),
    "san_oversubscription": (
        Ev("host_latency_seconds", "host latency", "duration"),
        Ev("lun_latency_seconds", "ONTAP LUN latency", "duration"),
        Ev("host_to_array_latency_ratio", "host/array latency", "number"),
        Ev("host_idle_ratio", "disk idle", "percent"),
        Ev("backend_utilization_ratio", "backend utilization", "percent"),
        Ev("host_iops", "host IOPS", "iops"),
        Ev("fc_port_queue_full_per_second", "FC port queue-full/s", "number"),
        Ev("fc_port_utilization_ratio", "busiest FC port", "percent"),
    ),
    "host_queue_limited": (
        Ev("outstanding_io", "outstanding IO", "number"),
        Ev("queue_effective_depth", "Q_eff", "number"),
        Ev("host_latency_seconds", "host latency", "duration"),
        Ev("array_latency_seconds", "array latency", "duration"),
        Ev("luns_needed", "LUNs needed", "number"),
    ),
    "lun_iops_ceiling": (
        Ev("lun_iops", "LUN IOPS", "iops"),
        Ev("lun_ceiling_iops", "ceiling", "iops"),
        Ev("lun_ceiling_fraction", "of ceiling", "percent"),
        Ev("host_iops", "host IOPS", "iops"),
        Ev("host_ceiling_iops", "host ceiling", "iops"),
    ),
    "volume_iops_ceiling": (
        Ev("volume_iops", "volume IOPS", "iops"),
        Ev("volume_ceiling_iops", "ceiling", "iops"),
        Ev("volume_ceiling_fraction", "of ceiling", "percent"),
        Ev("volume_write_share_ratio", "write share", "percent"),
    ),
    "cpu_domain_serial_bottleneck": (
        Ev("kahuna_busy_ratio", "Kahuna busy (of one core)", "percent"),
        Ev("max_serial_domain_busy_ratio", "busiest serial domain", "percent"),
        Ev("node_cpu_busy_ratio", "average CPU", "percent"),
        Ev("processors", "processors", "number"),
    ),
    "volume_affinity_concentration": (
        Ev("volumes", "volumes on the aggregate", "number"),
        Ev("top_volume_share_ratio", "top volume's ops share", "percent"),
        Ev("kahuna_busy_ratio", "Kahuna busy", "percent"),
        Ev("aggregate_iops", "aggregate IOPS", "iops"),
    ),
    "disk_busy_imbalance": (
        Ev("busy_cv_ratio", "busy CV", "number"),
        Ev("busy_max_ratio", "busiest disk", "percent"),
        Ev("busy_max_to_median_ratio", "max/median busy", "number"),
        Ev("disks", "disks", "number"),
    ),
    "background_operation_impact": (
        Ev("active_operations", "active operations", "number"),
        Ev("done_percent", "done (%)", "number"),
        Ev("eta_seconds", "ETA", "duration"),
        Ev("volume_latency_seconds", "volume latency", "duration"),
        Ev("latency_ratio", "latency vs baseline", "number"),
    ),
}

# Which dashboard shows a diagnosis, and the subject labels that become its variables.
DASHBOARD: dict[str, tuple[str, tuple[str, ...]]] = {
    "latency_slo": ("sanlens-io-path", ("cluster", "host")),
    "san_oversubscription": ("sanlens-io-path", ("cluster", "host")),
    "host_queue_limited": ("sanlens-io-path", ("cluster", "host")),
    "lun_iops_ceiling": ("sanlens-lun-volume", ("cluster", "svm", "volume")),
    "volume_iops_ceiling": ("sanlens-lun-volume", ("cluster", "svm", "volume")),
    "cpu_domain_serial_bottleneck": ("sanlens-ontap-cpu-domains", ("cluster", "node")),
    "volume_affinity_concentration": ("sanlens-ontap-cpu-domains", ("cluster", "node")),
    "disk_busy_imbalance": ("sanlens-disks", ("cluster", "aggregate")),
    "background_operation_impact": ("sanlens-disks", ("cluster", "aggregate")),
}

_FMT = {
    "duration": "{{ . | first | value | humanizeDuration }}",
    "percent": "{{ . | first | value | humanizePercentage }}",
    "number": '{{ . | first | value | printf "%.2g" }}',
    "iops": "{{ . | first | value | humanize }}",
}


def evidence_template(diagnosis: str, ev: Ev) -> str:
    """A Go-template fragment that looks the evidence up for this alert's subject (omitted when absent)."""
    q = (
        f'printf "sanlens_diagnosis_evidence{{diagnosis=%q,subject=%q,evidence=%q}}" '
        f'"{diagnosis}" $labels.subject "{ev.name}"'
    )
    return f"{{{{ with {q} | query }}}}{ev.text} {_FMT[ev.fmt]}; {{{{ end }}}}"


def dashboard_url(base: str, uid: str, labels: Sequence[str]) -> str:
    vars_ = "".join(
        f"{{{{ with $labels.{lb} }}}}&var-{lb}={{{{ . | urlquery }}}}{{{{ end }}}}" for lb in labels
    )
    return f"{base.rstrip('/')}/d/{uid}/{uid}?orgId=1{vars_}"


def diagnosis_alerts(runbook_base: str, dash_base: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for did, spec in REGISTRY.items():
        uid, dvars = DASHBOARD[did]
        evidence = "".join(evidence_template(did, ev) for ev in EVIDENCE[did])
        for state in sorted(spec.severity):
            sev = SEVERITY[state]
            # Warning fires from state >= 1 so it does not resolve and re-page when a finding
            # escalates; Alertmanager's inhibit rule mutes it while the critical fires.
            op = "==" if state == 2 else ">="
            rules.append(
                {
                    "alert": alert_name(did),
                    "expr": f'sanlens_diagnosis_state{{diagnosis="{did}"}} {op} {state}',
                    "for": FOR[state],
                    "labels": {"severity": sev},
                    "annotations": {
                        "summary": f"{spec.title}.",
                        "description": (
                            f"{sev.capitalize()} {did} on {{{{ $labels.subject }}}} "
                            f"(cluster {{{{ $labels.cluster }}}}): {spec.severity[state]}.\n"
                            f"Evidence: {evidence}\n"
                            f"Fix: {spec.fix}"
                        ),
                        "runbook_url": f"{runbook_base.rstrip('/')}/{did}.md",
                        "dashboard_url": dashboard_url(dash_base, uid, dvars),
                    },
                }
            )
    return rules


def health_alerts(runbook_base: str, dash_base: str, job: str = JOB) -> list[dict[str, Any]]:
    runbook = f"{runbook_base.rstrip('/')}/{EXPORTER_RUNBOOK}"
    overview = dashboard_url(dash_base, "sanlens-overview", ("cluster",))

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
            f"up{{{job}}} == 0",
            "5m",
            "critical",
            "Prometheus cannot scrape the sanlens exporter.",
            "{{ $labels.instance }} (job {{ $labels.job }}) has been unreachable for 5 minutes; "
            "no SAN diagnosis can fire while it is down.",
        ),
        alert(
            "SanlensTargetDown",
            "sanlens_target_up == 0",
            "5m",
            "warning",
            "sanlens cannot poll one of its targets.",
            "The {{ $labels.kind }} target {{ $labels.target }} failed its last polls "
            "(exporter {{ $labels.instance }}); its LUNs, disks and diagnoses are not being updated.",
        ),
        alert(
            "SanlensPollErrors",
            "sum without (reason) (increase(sanlens_poll_errors_total[15m])) > 3",
            "15m",
            "warning",
            "sanlens polls of a target keep failing.",
            "{{ $value | humanize }} polls of the {{ $labels.kind }} target {{ $labels.target }} failed "
            "in the last 15 minutes (exporter {{ $labels.instance }}); see the exporter log for the reason.",
        ),
        alert(
            "SanlensStaleData",
            "(time() - sanlens_last_poll_timestamp_seconds) > 5 * sanlens_poll_interval_seconds",
            "5m",
            "warning",
            "sanlens data for a target is stale.",
            "The last successful poll of the {{ $labels.kind }} target {{ $labels.target }} is "
            "{{ $value | humanizeDuration }} old, more than five poll intervals; its diagnoses are frozen.",
        ),
        alert(
            "SanlensSlowPolls",
            "sanlens_poll_duration_seconds > 0.8 * sanlens_poll_interval_seconds",
            "15m",
            "warning",
            "sanlens polls take most of their interval.",
            "Polling the {{ $labels.kind }} target {{ $labels.target }} takes {{ $value | humanizeDuration }}, "
            "over 80 % of its poll interval; raise poll_interval, poll fewer tables or shard the clusters.",
        ),
        alert(
            "SanlensBackgroundOperationRunning",
            "sanlens_background_operation_percent_done < 100",
            "",
            "info",
            "A RAID rebuild, resync or volume move is running.",
            "{{ $labels.operation }} on {{ $labels.cluster }}/{{ $labels.aggregate }}{{ with $labels.raid_group }} "
            '{{ . }}{{ end }}{{ with $labels.volume }} volume {{ . }}{{ end }} is {{ $value | printf "%.0f" }} % done'
            '{{ with printf "sanlens_background_operation_eta_seconds{cluster=%q,aggregate=%q,raid_group=%q,'
            'volume=%q,operation=%q}" $labels.cluster $labels.aggregate $labels.raid_group $labels.volume '
            "$labels.operation | query }}, about {{ . | first | value | humanizeDuration }} left{{ end }}. "
            "Informational: routed to no pager unless it hurts latency (SanlensBackgroundOperationImpact).",
            f"{runbook_base.rstrip('/')}/background_operation_impact.md",
            dashboard_url(dash_base, "sanlens-disks", ("cluster", "aggregate")),
        ),
    ]


def _rate(metric: str, sel: str = "") -> str:
    return f"rate({metric}{{{sel}}}[5m])" if sel else f"rate({metric}[5m])"


def recording_rules() -> list[dict[str, Any]]:
    """The aggregations the dashboards and ad-hoc queries share, over a fixed 5m window."""
    rw = 'op=~"read|write"'
    wr = 'op="write"'
    busy = 'domain!="idle"'
    host_by = "host, disk, cluster, svm, volume, lun"
    lun_by = "cluster, svm, volume, lun"
    vol_by = "cluster, svm, volume"
    rec: list[tuple[str, str]] = [
        # Host disk (PerfMon view): per op, then all ops.
        (
            "host_disk_op:sanlens_host_disk_latency_seconds:mean5m",
            f"{_rate('sanlens_host_disk_latency_seconds_total')} / {_rate('sanlens_host_disk_ops_total')}",
        ),
        (
            "host_disk:sanlens_host_disk_latency_seconds:mean5m",
            f"sum by ({host_by}) ({_rate('sanlens_host_disk_latency_seconds_total', rw)})\n"
            f"  / sum by ({host_by}) ({_rate('sanlens_host_disk_ops_total', rw)})",
        ),
        (
            "host_disk:sanlens_host_disk_ops:rate5m",
            f"sum by ({host_by}) ({_rate('sanlens_host_disk_ops_total', rw)})",
        ),
        (
            "host_disk:sanlens_host_disk_idle:ratio_rate5m",
            f"clamp_max({_rate('sanlens_host_disk_idle_seconds_total')}, 1)",
        ),
        # ONTAP LUN.
        (
            "lun_op:sanlens_ontap_lun_latency_seconds:mean5m",
            f"{_rate('sanlens_ontap_lun_latency_seconds_total')} / {_rate('sanlens_ontap_lun_ops_total', rw)}",
        ),
        (
            "lun:sanlens_ontap_lun_latency_seconds:mean5m",
            f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_latency_seconds_total', rw)})\n"
            f"  / sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', rw)})",
        ),
        ("lun:sanlens_ontap_lun_ops:rate5m", f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total')})"),
        (
            "lun:sanlens_ontap_lun_write:ratio_rate5m",
            f"sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', wr)})\n"
            f"  / sum by ({lun_by}) ({_rate('sanlens_ontap_lun_ops_total', rw)})",
        ),
        # ONTAP volume.
        (
            "volume:sanlens_ontap_volume_latency_seconds:mean5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_latency_seconds_total')})\n"
            f"  / sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total')})",
        ),
        (
            "volume:sanlens_ontap_volume_ops:rate5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total')})",
        ),
        (
            "volume:sanlens_ontap_volume_write:ratio_rate5m",
            f"sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total', wr)})\n"
            f"  / sum by ({vol_by}) ({_rate('sanlens_ontap_volume_ops_total', rw)})",
        ),
        # ONTAP node CPU: domain busy as a percent of ONE core (serial domains cap at 100).
        (
            "node_domain:sanlens_ontap_node_domain_busy:percent_core_rate5m",
            f"100 * {_rate('sanlens_ontap_node_domain_busy_seconds_total', busy)}\n"
            f"  / on (cluster, node) group_left () {_rate('sanlens_ontap_node_cpu_elapsed_seconds_total')}",
        ),
        (
            "node:sanlens_ontap_node_cpu_busy:ratio_rate5m",
            f"{_rate('sanlens_ontap_node_cpu_busy_seconds_total')}\n"
            f"  / {_rate('sanlens_ontap_node_cpu_elapsed_seconds_total')}",
        ),
    ]
    return [{"record": name, "expr": expr} for name, expr in rec]


def build(
    runbook_base: str = RUNBOOK_BASE, dash_base: str = DASHBOARD_BASE, job: str = JOB
) -> dict[str, Any]:
    return {
        "groups": [
            {"name": "sanlens.recording", "rules": recording_rules()},
            {"name": "sanlens.diagnoses", "rules": diagnosis_alerts(runbook_base, dash_base)},
            {"name": "sanlens.exporter", "rules": health_alerts(runbook_base, dash_base, job)},
        ]
    }


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings so the file stays readable in review."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)

HEADER = """\
# Generated by rules/build.py from sanlens.diagnose.registry - edit the generator, not this file.
# Load into Prometheus (rule_files:), promtool, or the Helm chart's PrometheusRule.
"""


def render(runbook_base: str = RUNBOOK_BASE, dash_base: str = DASHBOARD_BASE, job: str = JOB) -> str:
    body = yaml.dump(build(runbook_base, dash_base, job), Dumper=_Dumper, sort_keys=False, width=100_000)
    return HEADER + body


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed file differs from the build")
    ap.add_argument("-o", "--output", type=Path, default=OUT, help=f"output file (default: {OUT.name})")
    ap.add_argument("--runbook-base-url", default=RUNBOOK_BASE, help="where docs/runbooks/*.md are served")
    ap.add_argument("--dashboard-base-url", default=DASHBOARD_BASE, help="your Grafana's root URL")
    ap.add_argument(
        "--job-selector", default=JOB, help=f"label matchers of the exporter's scrape job (default: {JOB})"
    )
    args = ap.parse_args(argv)
    text = render(args.runbook_base_url, args.dashboard_base_url, args.job_selector)
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
