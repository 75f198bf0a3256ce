#!/usr/bin/env python3
"""Writes docs/metrics.md, the reference of every metric family sanlens exposes.

Two sources, so the page cannot drift from the exporter:

- the ONTAP counter catalogue (``exporter/sanlens/ontap/tables/*.yaml``): every family
  fed by a counter table, with its labels and the counters behind it, their ONTAP
  type, unit, base and the factor to the exported unit;
- ``FAMILIES`` below: the families built in code (self-monitoring, ONTAP inventory,
  host disks, diagnoses). ``tests/integration/test_docs_metrics.py`` holds these declarations
  against a real /metrics page of the exporter polling the simulator
  (``tests/golden.py``): every family on the page is documented here with the same
  type and labels, and every family documented here is on the page or is declared
  ``conditional`` (and named in the exporter's code).

The output is committed; ``--check`` (run by the tests) fails when it is stale.

    .venv/bin/python docs/build.py            # rewrite docs/metrics.md
    .venv/bin/python docs/build.py --check    # exit 1 if the committed file differs
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "exporter"))

from sanlens.diagnose.registry import REGISTRY, WINDOW_KEYS  # noqa: E402
from sanlens.ontap.catalogue import TableDef, catalogue  # noqa: E402

OUT = HERE / "metrics.md"


@dataclass(frozen=True)
class Family:
    """A metric family built in code, as the docs describe it."""

    name: str
    type: str  # counter | gauge (info families are gauges with value 1)
    labels: tuple[str, ...]
    unit: str
    source: str
    meaning: str
    conditional: str = ""  # when a scrape may lack the family; empty: always there once polled


TARGET = ("target", "kind")
HOST = ("host", "disk", "lun_serial", "cluster", "svm", "volume", "lun")
SUBJECT = ("diagnosis", "subject", "cluster", "node", "svm", "volume", "lun", "aggregate", "host", "disk")
OPERATION = ("cluster", "aggregate", "svm", "volume", "raid_group", "operation")

SELF = (
    Family("sanlens_target_up", "gauge", TARGET, "—", "poller", "1 if the last poll of the target succeeded"),
    Family(
        "sanlens_poll_duration_seconds", "gauge", TARGET, "seconds", "poller", "wall time of the last poll"
    ),
    Family(
        "sanlens_last_poll_timestamp_seconds",
        "gauge",
        TARGET,
        "seconds",
        "poller",
        "Unix time of the last successful poll",
        "until the target's first successful poll",
    ),
    Family(
        "sanlens_poll_interval_seconds",
        "gauge",
        TARGET,
        "seconds",
        "config `poll_interval`",
        "configured poll interval of the target; `SanlensStaleData` compares the last poll against it",
    ),
    Family(
        "sanlens_poll_errors_total",
        "counter",
        (*TARGET, "reason"),
        "count",
        "poller",
        "failed polls by reason (`timeout`, `connection`, `tls`, `auth`, `http`, `parse`, …)",
        "no series until a poll fails",
    ),
    Family("sanlens_polls_total", "counter", TARGET, "count", "poller", "polls attempted"),
    Family(
        "sanlens_build_info",
        "gauge",
        ("version", "python_version"),
        "—",
        "the running exporter",
        "always 1",
    ),
)

ONTAP_INVENTORY = (
    Family(
        "sanlens_ontap_cluster_info",
        "gauge",
        ("cluster", "version"),
        "—",
        "`/api/cluster` version",
        "always 1",
    ),
    Family(
        "sanlens_ontap_node_info",
        "gauge",
        ("cluster", "node", "model", "serial"),
        "—",
        "`/api/cluster/nodes`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_lun_info",
        "gauge",
        ("cluster", "svm", "volume", "lun", "serial", "os_type", "node"),
        "—",
        "`/api/storage/luns`",
        "always 1; `serial` joins host disks to their LUN",
    ),
    Family(
        "sanlens_ontap_volume_info",
        "gauge",
        ("cluster", "svm", "volume", "aggregate", "node", "style"),
        "—",
        "`/api/storage/volumes`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_volume_move_percent",
        "gauge",
        ("cluster", "svm", "volume", "state"),
        "percent",
        "volume `movement.percent_complete`",
        "volume move progress",
        "only while a volume moves",
    ),
    Family(
        "sanlens_ontap_aggregate_info",
        "gauge",
        ("cluster", "aggregate", "node", "disk_type"),
        "—",
        "`/api/storage/aggregates`",
        "always 1",
    ),
    Family(
        "sanlens_ontap_aggregate_disks",
        "gauge",
        ("cluster", "aggregate"),
        "count",
        "`block_storage.primary.disk_count`",
        "disks in the aggregate",
    ),
    Family(
        "sanlens_ontap_raid_operation_percent",
        "gauge",
        ("cluster", "aggregate", "raid_group", "operation"),
        "percent",
        "aggregate plexes: RAID group `reconstruct` / `recomputing_parity`, plex resync",
        "RAID background operation progress; `operation` is `reconstruct`, `resync` or `recompute_parity`",
        "only while a RAID operation runs",
    ),
    Family(
        "sanlens_ontap_disk_info",
        "gauge",
        ("cluster", "node", "disk", "aggregate", "raid_group", "type", "rpm", "container", "state"),
        "—",
        "`/api/storage/disks` + plex RAID groups",
        "always 1",
    ),
    Family(
        "sanlens_ontap_fc_port_info",
        "gauge",
        ("cluster", "node", "port", "state"),
        "—",
        "`/api/network/fc/ports`",
        "always 1; FC target port inventory and state",
    ),
    Family(
        "sanlens_ontap_fc_port_data_rate_bytes_per_second",
        "gauge",
        ("cluster", "node", "port"),
        "bytes/s",
        "`/api/network/fc/ports` `fabric.connected_speed` (Gbit/s) x 100 MB/s",
        "the port's nominal data rate (8G ≈ 800 MB/s, 16G ≈ 1,600 MB/s, 32G ≈ 3,200 MB/s)",
        "only for ports with a negotiated speed",
    ),
    Family(
        "sanlens_ontap_counter_missing",
        "gauge",
        ("cluster", "table", "counter"),
        "—",
        "the cluster's `counter_schemas`",
        "1 for a counter the catalogue wants that this cluster's schema lacks "
        "(also logged once per table and version)",
        "only while a counter is missing",
    ),
    Family(
        "sanlens_ontap_partial_aggregation_rows",
        "gauge",
        ("cluster", "table", "policy"),
        "count",
        "counter rows with `aggregation.complete: false`",
        "rows whose aggregation was incomplete (a node unreachable) in the last poll; "
        "`policy` is the table's `keep` or `skip`",
    ),
)

HOSTS = (
    Family(
        "sanlens_host_disk_info",
        "gauge",
        (*HOST, "drives", "data_class", "mapping"),
        "—",
        "host source + LUN mapping",
        "always 1: the disk, its drive letters and how it was mapped (`serial`, `static`, `none`)",
    ),
    Family(
        "sanlens_host_disk_ops_total",
        "counter",
        (*HOST, "op"),
        "count",
        "PhysicalDisk Disk Reads/sec, Disk Writes/sec",
        "operations completed; `op` is `read` or `write`",
    ),
    Family(
        "sanlens_host_disk_latency_seconds_total",
        "counter",
        (*HOST, "op"),
        "seconds",
        "PhysicalDisk Avg. Disk sec/Read, sec/Write numerators",
        "Σ latency; `rate(latency) / rate(ops)` = Avg. Disk sec/op",
    ),
    Family(
        "sanlens_host_disk_bytes_total",
        "counter",
        (*HOST, "op"),
        "bytes",
        "PhysicalDisk Disk Read/Write Bytes/sec",
        "bytes transferred",
    ),
    Family(
        "sanlens_host_disk_idle_seconds_total",
        "counter",
        HOST,
        "seconds",
        "PhysicalDisk % Idle Time",
        "`rate()` = idle ratio 0..1 (% Idle Time / 100)",
    ),
    Family(
        "sanlens_host_disk_split_ios_total",
        "counter",
        HOST,
        "count",
        "PhysicalDisk Split IO/Sec",
        "split I/Os",
    ),
    Family(
        "sanlens_host_disk_queue_length",
        "gauge",
        HOST,
        "count",
        "PhysicalDisk Current Disk Queue Length",
        "requests outstanding at poll time",
    ),
    Family(
        "sanlens_host_disk_queue_depth",
        "gauge",
        HOST,
        "count",
        "config `queue_depth`",
        "configured per-LUN HBA queue depth",
    ),
    Family(
        "sanlens_host_disk_paths",
        "gauge",
        HOST,
        "count",
        "config `paths`, else MPIO",
        "active paths; Q_eff = queue_depth x paths",
    ),
)

DIAGNOSES = (
    Family(
        "sanlens_diagnosis_state",
        "gauge",
        SUBJECT,
        "—",
        "diagnosis engine",
        "0 ok, 1 warning, 2 critical; present for every existing subject, so `for:` clauses work",
    ),
    Family(
        "sanlens_diagnosis_score",
        "gauge",
        SUBJECT,
        "ratio",
        "diagnosis engine",
        "how strongly the signature matches, 0..1",
    ),
    Family(
        "sanlens_diagnosis_since_timestamp_seconds",
        "gauge",
        SUBJECT,
        "seconds",
        "diagnosis engine",
        "Unix time the current non-ok state began",
        "only while the state is above 0",
    ),
    Family(
        "sanlens_diagnosis_evidence",
        "gauge",
        (*SUBJECT, "evidence"),
        "in the name",
        "diagnosis engine",
        "the evidence behind a finding, one series per value; the unit is in the `evidence` name "
        "(e.g. `host_read_latency_seconds`, `host_idle_ratio`)",
    ),
    Family(
        "sanlens_diagnosis_threshold",
        "gauge",
        ("diagnosis", "threshold"),
        "in the name",
        "diagnosis registry + config `diagnose.thresholds`",
        "the configured thresholds, and `sustain_seconds` / `exit_seconds` after `sustain_scale`",
    ),
    Family(
        "sanlens_background_operation_percent_done",
        "gauge",
        OPERATION,
        "percent",
        "RAID operations and volume moves",
        "progress of an active RAID operation or volume move",
        "only while one runs",
    ),
    Family(
        "sanlens_background_operation_eta_seconds",
        "gauge",
        OPERATION,
        "seconds",
        "RAID operations and volume moves",
        "time left, from the observed progress rate",
        "only while one runs, from its second observation",
    ),
)

FAMILIES: tuple[Family, ...] = SELF + ONTAP_INVENTORY + HOSTS + DIAGNOSES

# What the catalogue's help text does not say about a counter-table family.
CATALOGUE_NOTES: dict[str, str] = {
    "sanlens_ontap_node_processors": "without `num_processors`, `controller.cpu.count` of `/api/cluster/nodes`",
    "sanlens_ontap_node_cpu_busy_seconds_total": "ONTAP counts it in µs",
    "sanlens_ontap_node_domain_busy_seconds_total": "÷ elapsed = share of ONE core; the domains of a node sum to N_cpu",
    "sanlens_ontap_node_disk_bytes_total": "the raw values count bytes, whatever the schema's `kb_per_sec` says "
    "(see [ONTAP collection](ontap.md#cooking-and-units))",
    "sanlens_ontap_wafl_cp_total": "`cp_count` is an array by trigger",
}

# The order tables appear in; tables not listed follow in catalogue order.
TABLE_ORDER = ("system:node", "lun", "volume", "disk:constituent", "fcp_lif", "fcp", "wafl")

PROLOGUE = """\
<!-- Generated by docs/build.py from the ONTAP counter catalogue and the families declared
     in docs/build.py. Do not edit: change the generator and run `.venv/bin/python docs/build.py`. -->
# Metrics reference

Every family sanlens exposes on `/metrics`. Values are in base units (seconds, bytes,
operations); counters end in `_total` and hold the raw cumulative values, so PromQL
computes the rates. An empty label value means *not applicable*. Labels added outside
the exporter (Prometheus' `job` and `instance`, the Helm chart's `shard` when
[sharding](kubernetes.md#scaling-past-one-exporter)) are not listed.

A complete page, as the exporter renders it after three polls of the simulator's
`mixed` scenario, is kept in
[`tests/data/golden/metrics.txt`](../tests/data/golden/metrics.txt).

- [Self-monitoring](#self-monitoring)
- [ONTAP inventory](#ontap-inventory)
- [ONTAP counters](#ontap-counters), with the [counters behind them](#counters-behind-the-ontap-families)
- [Host disks](#host-disks)
- [Diagnoses](#diagnoses)
- [Reading the counters](#reading-the-counters)
"""

READING = """\
## Reading the counters

- CPU domain busy as percent of one core:
  `100 * rate(sanlens_ontap_node_domain_busy_seconds_total[5m]) / ignoring(domain) group_left rate(sanlens_ontap_node_cpu_elapsed_seconds_total[5m])`.
  Serial domains (Kahuna) cap at 100.
- Average node CPU busy, 0..1:
  `rate(sanlens_ontap_node_cpu_busy_seconds_total[5m]) / rate(sanlens_ontap_node_cpu_elapsed_seconds_total[5m])`.
- Disk busy ratio:
  `rate(sanlens_ontap_disk_busy_seconds_total[5m]) / rate(sanlens_ontap_disk_elapsed_seconds_total[5m])`.
- Latency per operation (LUN, volume, FC LIF, FC port, host disk): `rate(…_latency_seconds_total[5m]) / rate(…_ops_total[5m])`.
- Host disk idle ratio: `rate(sanlens_host_disk_idle_seconds_total[5m])`; effective queue
  Q_eff = `sanlens_host_disk_queue_depth * sanlens_host_disk_paths`.
- FC port utilization, the front-end evidence of `san_oversubscription`: the busier
  direction's bytes per second over the negotiated speed at FC's nominal 100 MB/s per
  Gbit/s (8G ≈ 800 MB/s, 16G ≈ 1,600 MB/s, 32G ≈ 3,200 MB/s):
  `max(rate(sanlens_ontap_fcp_port_bytes_total[5m])) by (port) / sanlens_ontap_fc_port_data_rate_bytes_per_second`.

The recording rules of `rules/sanlens.rules.yaml` precompute most of these as 5m means
(see [Alerting](alerting.md)). How ONTAP counters are cooked for the diagnoses (types,
units, partial aggregation, arrays) is in [ONTAP collection](ontap.md).
"""


# ------------------------------------------------------------------ rendering
def _code(items: Iterable[str]) -> str:
    return ", ".join(f"`{x}`" for x in items)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def metric_unit(name: str) -> str:
    """The unit a family's name states (Prometheus naming), or `count` for what it counts."""
    base = name.removesuffix("_total")
    for suffix, unit in (
        ("_seconds", "seconds"),
        ("_bytes", "bytes"),
        ("_bits_per_second", "bits/s"),
        ("_percent", "percent"),
        ("_ratio", "ratio"),
        ("_info", "—"),
    ):
        if base.endswith(suffix):
            return unit
    return "count"


def _scale(factor: float) -> str:
    return "1" if factor == 1 else f"{factor:g}"


def family_table(families: Sequence[Family]) -> list[str]:
    out = ["| metric | type | labels | unit | source | meaning |", "|---|---|---|---|---|---|"]
    for f in families:
        meaning = f.meaning + (f" (*{f.conditional}*)" if f.conditional else "")
        out.append(
            f"| `{f.name}` | {f.type} | {_code(f.labels)} | {f.unit} | {_cell(f.source)} | {_cell(meaning)} |"
        )
    return out


def ordered_tables() -> list[TableDef]:
    tables = [t for t in catalogue().values() if t.rest and t.metrics]
    rank = {name: i for i, name in enumerate(TABLE_ORDER)}
    return sorted(tables, key=lambda t: rank.get(t.table, len(rank)))


def catalogue_labels(t: TableDef, by: str) -> tuple[str, ...]:
    names = ("cluster", *(lab.name for lab in t.export_labels))
    return (*names, by) if by else names


def catalogue_families() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Every family the counter tables export: name -> (type, labels)."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for t in ordered_tables():
        for m in t.metrics.values():
            out[m.name] = (m.type, catalogue_labels(t, m.by))
    return out


def _sources(t: TableDef, metric: str) -> str:
    parts = []
    for c in t.counters.values():
        if c.metric != metric:
            continue
        label = f" ({t.metrics[metric].by}={c.label})" if c.label and t.metrics[metric].by else ""
        parts.append(f"`{c.name}`{label}")
    return f"`{t.table}` " + ", ".join(parts)


def ontap_counter_section() -> list[str]:
    out = [
        "## ONTAP counters",
        "",
        "Families fed by ONTAP's counter tables (`/api/cluster/counter/tables/{table}/rows`, ONTAP 9.11+;",
        "before that, LUN, volume and node figures come from the `statistics` fields of the collections).",
        "Each is declared once, with its counters, in the counter catalogue",
        "`exporter/sanlens/ontap/tables/<table>.yaml`; `cluster` is the config target name.",
        "",
        "| metric | type | labels | unit | ONTAP source (REST name) | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for t in ordered_tables():
        for m in t.metrics.values():
            meaning = m.help.rstrip(".")
            note = CATALOGUE_NOTES.get(m.name)
            if note:
                meaning += f"; {note}"
            out.append(
                f"| `{m.name}` | {m.type} | {_code(catalogue_labels(t, m.by))} | {metric_unit(m.name)} "
                f"| {_cell(_sources(t, m.name))} | {_cell(meaning)} |"
            )
    out += ["", "### Counters behind the ONTAP families", ""]
    out += [
        "Per table: where each label comes from (row properties, first non-empty wins; `id` is the",
        "row id), and each exported counter with its `statistics show`/ZAPI spelling, the type, unit",
        "and base ONTAP gives it (the cluster's own `counter_schemas` wins over these), and the",
        "factor from its raw value to the exported unit. Counters listed under *also read* feed",
        "the diagnoses without being exported.",
        "",
    ]
    for t in ordered_tables():
        out.append(f"#### `{t.table}`")
        out.append("")
        policy = "kept" if t.partial_aggregation == "keep" else "skipped"
        labels = []
        for lab in t.labels:
            how = ", ".join(f"`{x}`" for x in lab.sources)
            if lab.split:
                how += f", split on `{lab.split}`, part {lab.index}"
            labels.append(f"`{lab.name}` ← {how}" + ("" if lab.export else " (not exported)"))
        out.append(f"Rows with incomplete aggregation: {policy}. Labels: {'; '.join(labels)}.")
        out.append("")
        out.append("| counter | `statistics`/ZAPI | type | unit | base | exported as | factor |")
        out.append("|---|---|---|---|---|---|---|")
        exported = [c for c in t.counters.values() if c.metric]
        for c in exported:
            by = t.metrics[c.metric].by
            target = f"`{c.metric}`" + (f" {by}={c.label}" if by and c.label else f" by `{by}`" if by else "")
            zapi = f"`{c.zapi}`" if c.zapi != c.name else "same"
            kind = c.spec.type + (" array" if c.array else "")
            base = f"`{c.spec.base}`" if c.spec.base else "—"
            out.append(
                f"| `{c.name}` | {zapi} | {kind} | {c.spec.unit} | {base} | {target} "
                f"| {_scale(c.export_factor())} |"
            )
        also = [n for n in t.wanted if n not in {c.name for c in exported}]
        if also:
            out += ["", f"Also read: {_code(also)}."]
        out.append("")
    return out


def _num(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def diagnosis_tables() -> list[str]:
    """The label values of the evidence and threshold families, from the diagnosis specs."""
    out = [
        "### Evidence",
        "",
        "The `evidence` label of `sanlens_diagnosis_evidence`, by diagnosis; the `/diagnoses` JSON",
        "uses the same names. A finding carries the values it could compute.",
        "",
        "| diagnosis | evidence | unit | meaning |",
        "|---|---|---|---|",
    ]
    for did, spec in REGISTRY.items():
        for e in spec.evidence:
            out.append(f"| `{did}` | `{e.name}` | {e.unit} | {_cell(e.help)} |")
    out += [
        "",
        "### Thresholds",
        "",
        "The `threshold` label of `sanlens_diagnosis_threshold`, by diagnosis: the configurable",
        "thresholds (config `diagnose.thresholds.<id>.<name>`, within the range shown) and the",
        f"{_code(WINDOW_KEYS)} windows, which the exposed value shows after `sustain_scale`.",
        "",
        "| diagnosis | threshold | default | unit | range | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for did, spec in REGISTRY.items():
        for t in spec.thresholds:
            out.append(
                f"| `{did}` | `{t.name}` | {_num(t.default)} | {t.unit} | {_num(t.min)} to {_num(t.max)} "
                f"| {_cell(t.help)} |"
            )
        windows = {"sustain_seconds": spec.sustain_s, "exit_seconds": spec.exit_s}
        for key in WINDOW_KEYS:
            what = "sustain window" if key == "sustain_seconds" else "exit window"
            out.append(f"| `{did}` | `{key}` | {_num(windows[key])} | seconds | | {what} |")
    return out


def render() -> str:
    lines = [PROLOGUE]
    lines += [
        "## Self-monitoring",
        "",
        "One set per configured target (`kind` is `ontap`, `windows_exporter`,",
    ]
    lines += ["`winrm` or `perfmon`).", ""]
    lines += [*family_table(SELF), ""]
    lines += [
        "## ONTAP inventory",
        "",
        "Read from ONTAP's REST collections: nodes, LUNs, aggregates and disks every five minutes;",
        "volumes (with move progress), aggregate plexes (RAID operations) and FC ports on every poll.",
        "`cluster` is the config target name.",
        "",
        *family_table(ONTAP_INVENTORY),
        "",
    ]
    lines += ontap_counter_section()
    lines += [
        "## Host disks",
        "",
        "Every series carries `host, disk, lun_serial, cluster, svm, volume, lun`: the config host",
        "name, the PhysicalDisk number, and the ONTAP LUN the disk maps to (empty when unmapped).",
        "Windows counters are unwrapped to monotonic 64-bit values before exposure (32-bit",
        "counters wrap; after a reboot a counter continues from its last exposed value). The",
        "sources are described in [Windows hosts](hosts-windows.md).",
        "",
        *family_table(HOSTS),
        "",
    ]
    lines += [
        "## Diagnoses",
        "",
        "Labels of every finding: `diagnosis` (the id), `subject` (a readable key such as",
        "`cluster1/svm1/lun0` or `sql01/disk 1`) and the subject's own labels; the others are empty.",
        "See [Diagnoses](diagnoses.md) for what each id finds.",
        "",
        *family_table(DIAGNOSES),
        "",
        *diagnosis_tables(),
        "",
    ]
    lines.append(READING)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed file differs from the build")
    ap.add_argument("-o", "--output", type=Path, default=OUT, help=f"output file (default: {OUT.name})")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        old = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if old != text:
            print(f"{args.output} is stale: run .venv/bin/python docs/build.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
