"""ONTAP captures for `sanlens analyze`, and the diagnoses over every input.

Input kinds registered with ``sanlens.analyze.cli``:
- ``ontap-statistics``: ``statistics show -raw`` text (several captures, or one
  file holding several samples);
- ``ontap-sysstat``: nodeshell ``sysstat -M`` text;
- ``ontap-counter-rows``: counter-table rows JSON (``/api/cluster/counter/tables/
  {table}/rows``), one sample per file, per list item or per line;
- ``ontap-counter-schema``: a table's ``counter_schemas``, which then types the
  rows instead of the built-in knowledge.

Reading is two streaming passes: the per-file reader only scans (samples, time
span, objects); ``finish`` then walks the samples in time order, cooks each
instance against its previous sample, folds the cooked values into bounded
per-series statistics, and feeds each cooked interval to the diagnose engine as
an ``OntapView`` (PerfMon inputs become ``HostView``s the same way).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens.config import DiagnoseConfig
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import REGISTRY
from sanlens.model import HostDiskStats, HostView, OntapVersion, Snapshot, iso_utc, parse_ontap_version
from sanlens.ontap.cli_capture import text_head
from sanlens.ontap.cooking import (
    CaptureError,
    Cooked,
    CounterRow,
    CounterSpec,
    Sample,
    cook_row,
    iter_json_samples,
    keeps_partial,
    parse_schema_doc,
)
from sanlens.ontap.statistics_text import iter_statistics_samples as iter_statistics
from sanlens.ontap.sysstat_text import iter_sysstat_samples
from sanlens.ontap.views import build_view

MAX_POINTS = 400  # chart points kept per series (decimated by 2 when full)
READERS_BY_KIND: dict[str, Callable[[Path, list[str] | None], Iterator[Sample]]] = {
    "ontap-statistics": lambda p, notes: iter_statistics(p, notes),
    "ontap-sysstat": lambda p, notes: iter_sysstat_samples(p, None, notes),
    "ontap-counter-rows": lambda p, notes: iter_json_samples(p),
}


# ------------------------------------------------------------------ detection
def detect_statistics(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(re.search(r"^Object: \S", t, re.M) and re.search(r"^Instance: ", t, re.M))


def detect_sysstat(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(re.search(r"^\s*(ANY1\+\s+.*)?AVG\s+CPU0\b", t, re.M))


def detect_counter_rows(path: Path, head: bytes) -> bool:
    t = text_head(head).lstrip()
    return t[:1] in "{[" and '"records"' in t and '"counter_schemas"' not in t


def detect_counter_schema(path: Path, head: bytes) -> bool:
    t = text_head(head).lstrip()
    return t[:1] == "{" and '"counter_schemas"' in t


# -------------------------------------------------------------------- pass 1
@dataclass
class OntapInput:
    """What the scan of one capture found; the samples are read again in ``finish``."""

    path: Path
    kind: str
    order: int
    samples: int = 0
    start: float | None = None
    end: float | None = None
    objects: set[str] = field(default_factory=set)
    instances: set[tuple[str, str]] = field(default_factory=set)
    schema: tuple[str, dict[str, CounterSpec]] | None = None
    notes: list[str] = field(default_factory=list)  # what the reader skipped, FILE:LINE: why

    def input_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "hosts": [],
            "objects": sorted(self.objects),
            "instances": len(self.instances),
            "samples": self.samples,
            "counters": None,
            "start": iso_utc(self.start, milliseconds=True),
            "end": iso_utc(self.end, milliseconds=True),
        }

    def iter_samples(self, notes: list[str] | None = None) -> Iterator[Sample]:
        return READERS_BY_KIND[self.kind](self.path, notes)


_order = 0


def scan(path: Path, kind: str) -> OntapInput:
    global _order
    _order += 1
    inp = OntapInput(path, kind, _order)
    if kind == "ontap-counter-schema":
        import json

        try:
            doc = json.loads(path.read_text("utf-8-sig"))
        except (OSError, ValueError) as e:
            raise CaptureError(f"not a counter schema JSON: {e}", path) from None
        if not isinstance(doc, dict):
            raise CaptureError("expected a JSON object with counter_schemas", path)
        inp.schema = parse_schema_doc(doc)
        inp.objects.add(inp.schema[0])
        return inp
    for s in inp.iter_samples(inp.notes):
        inp.samples += 1
        if s.timestamp is not None:
            inp.start = s.timestamp if inp.start is None else min(inp.start, s.timestamp)
            inp.end = s.timestamp if inp.end is None else max(inp.end, s.timestamp)
        for r in s.rows:
            inp.objects.add(r.table)
            if len(inp.instances) < 100_000:
                inp.instances.add((r.table, r.instance))
    if inp.samples == 0:
        raise CaptureError(f"no {kind} samples found", path)
    return inp


# -------------------------------------------------------------------- series
@dataclass
class SeriesStats:
    object: str
    instance: str
    counter: str
    label: str
    unit: str
    inputs: list[str]
    samples: int = 0
    min: float = math.inf
    max: float = -math.inf
    total: float = 0.0
    points: list[tuple[float, float]] = field(default_factory=list)
    stride: int = 1
    _seen: int = 0

    def add(self, t: float, v: float) -> None:
        if v != v or v in (math.inf, -math.inf):
            return
        self.samples += 1
        self.total += v
        self.min = min(self.min, v)
        self.max = max(self.max, v)
        if self._seen % self.stride == 0:
            self.points.append((t, v))
            if len(self.points) >= MAX_POINTS:
                self.points = self.points[::2]
                self.stride *= 2
        self._seen += 1

    @property
    def path(self) -> str:
        return f"{self.object}({self.instance})\\{self.counter}" + (f"[{self.label}]" if self.label else "")

    def as_json(self) -> dict[str, Any]:
        n = self.samples
        return {
            "path": self.path,
            "object": self.object,
            "instance": self.instance,
            "counter": self.counter,
            "label": self.label,
            "unit": self.unit,
            "samples": n,
            "min": self.min if n else None,
            "max": self.max if n else None,
            "mean": self.total / n if n else None,
            "inputs": self.inputs,
        }


# --------------------------------------------------------------------- views
def version_from_rows(rows: Iterable[CounterRow]) -> OntapVersion | None:
    for r in rows:
        text = r.properties.get("ontap_version") or r.properties.get("version") or ""
        version = parse_ontap_version(text, anywhere=True)
        if version is not None:
            return version
    return None


# ------------------------------------------------------------- ONTAP pass 2
@dataclass
class Findings:
    diagnoses: list[dict[str, Any]]
    warnings: list[str]
    series: list[SeriesStats] = field(default_factory=list)  # cooked ONTAP series, with chart points


class OntapCooker:
    """Walks the ONTAP samples in order; folds series; yields Snapshots for the engine."""

    def __init__(
        self,
        inputs: list[OntapInput],
        interval: float | None,
        cluster: str,
        version: OntapVersion | None,
    ) -> None:
        self.inputs = [i for i in inputs if i.kind != "ontap-counter-schema"]
        self.schemas: dict[str, dict[str, CounterSpec]] = {}
        for i in inputs:
            if i.schema:
                self.schemas.setdefault(i.schema[0], {}).update(i.schema[1])
        self.interval = interval
        self.cluster = cluster
        self.version = version
        self.series: dict[tuple[str, str, str, str], SeriesStats] = {}
        self.warnings: list[str] = []
        self.skipped: dict[str, int] = {}  # reason -> rows
        self.no_rate = False

    def _ordered(self) -> list[OntapInput]:
        # by capture time where every file has one; else as given on the command line
        if all(i.start is not None for i in self.inputs):
            return sorted(self.inputs, key=lambda i: (i.start, i.order))
        return sorted(self.inputs, key=lambda i: i.order)

    def snapshots(self) -> Iterator[Snapshot]:
        prev: dict[tuple[str, str], tuple[CounterRow, float | None, int]] = {}
        table_index: dict[tuple[str, str], int] = {}  # (kind, table) -> samples seen
        for inp in self._ordered():
            for sample in inp.iter_samples():
                cooked: list[tuple[CounterRow, list[Cooked]]] = []
                t_view: float | None = None
                dt_view: float | None = self.interval
                for row in sample.rows:
                    k = (inp.kind, row.table)
                    idx = table_index.get(k, 0)
                    key = (row.table, row.instance)
                    # the sample's own time, or its position times --interval
                    t = sample.timestamp
                    if t is None and self.interval:
                        t = idx * self.interval
                    p = prev.get(key)
                    if row.table == "sysstat":  # already per interval
                        values = cook_row(row, row, None, self.schemas)
                        cooked.append((row, values))
                    elif p is not None:
                        dt = None
                        if t is not None and p[1] is not None and t > p[1]:
                            dt = t - p[1]
                        elif self.interval:
                            dt = self.interval * (idx - p[2])
                        if dt is None:
                            self.no_rate = True
                        else:
                            dt_view = dt
                        values = cook_row(p[0], row, dt, self.schemas)
                        if not values:
                            reason = self._skip_reason(p[0], row)
                            if reason:
                                self.skipped[reason] = self.skipped.get(reason, 0) + 1
                        cooked.append((row, values))
                    prev[key] = (row, t, idx)
                    t_view = t if t is not None else float(idx * (self.interval or 60.0))
                for k in {(inp.kind, r.table) for r in sample.rows}:
                    table_index[k] = table_index.get(k, 0) + 1
                if self.version is None:
                    self.version = version_from_rows(sample.rows)
                if not cooked or t_view is None:
                    continue
                for _row, values in cooked:
                    for c in values:
                        sk = (c.table, c.instance, c.counter, c.label)
                        st = self.series.get(sk)
                        if st is None:
                            st = self.series[sk] = SeriesStats(
                                c.table, c.instance, c.counter, c.label, c.unit, [str(inp.path)]
                            )
                        elif str(inp.path) not in st.inputs:
                            st.inputs.append(str(inp.path))
                        st.add(t_view, c.value)
                yield Snapshot(
                    self.cluster,
                    "ontap",
                    t_view,
                    view=build_view(self.cluster, t_view, dt_view, self.version, cooked),
                )
        if self.no_rate:
            self.warnings.append(
                "some captures carry no usable time between samples (equal or missing timestamps): "
                "rate counters are left out; pass --interval SECONDS to cook them"
            )
        if self.skipped:
            self.warnings.append(
                f"{sum(self.skipped.values())} row(s) skipped: "
                + ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
            )

    @staticmethod
    def _skip_reason(prev: CounterRow, cur: CounterRow) -> str:
        """Why cook_row gave nothing for a row, or '' when it simply had no known counters."""
        if not (prev.complete and cur.complete) and not keeps_partial(cur.table):
            return "incomplete aggregation (a node was unreachable)"
        for name, cv in cur.counters.items():
            pv = prev.counters.get(name)
            if pv is None:
                continue
            pl = pv if isinstance(pv, list) else [pv]
            cl = cv if isinstance(cv, list) else [cv]
            if len(pl) == len(cl) and any(c < p for c, p in zip(cl, pl, strict=True)):
                return f"counter reset or takeover ({name} went backwards)"
        return ""


# --------------------------------------------------------------- PerfMon views
def host_snapshots(path: Path) -> Iterator[Snapshot]:
    """HostViews from one PerfMon log, one per row (PerfMon has cooked the rates already)."""
    from sanlens.hosts.perfmon import PerfmonLog, to_float
    from sanlens.hosts.perfmon_source import disk_columns

    with PerfmonLog(path) as log:
        cols, _unknown = disk_columns(log.header)
        hosts = {i: (log.header.columns[i].host or path.stem) for i in cols}
        last: float | None = None
        for _line, ts, cells in log.rows():
            per: dict[tuple[str, str], dict[str, Any]] = {}
            for i, (disk, drives, name) in cols.items():
                try:
                    value = to_float(cells[i])
                except (ValueError, IndexError):
                    continue
                if value is None:
                    continue
                d = per.setdefault((hosts[i], disk), {"drives": drives})
                d[name] = value
            by_host: dict[str, list[HostDiskStats]] = {}
            for (host, disk), vals in sorted(per.items()):
                drives = vals.pop("drives")
                if "idle_ratio" in vals:
                    vals["idle_ratio"] = min(max(vals["idle_ratio"] / 100.0, 0.0), 1.0)
                by_host.setdefault(host, []).append(
                    HostDiskStats(host=host, disk=disk, drives=drives, **vals)
                )
            dt = ts - last if last is not None and ts > last else None
            last = ts
            for host, disks in by_host.items():
                yield Snapshot(host, "host", ts, view=HostView(host, ts, dt, tuple(disks)))


# -------------------------------------------------------------------- engine
def run_engine(
    snapshots: Iterable[Snapshot], span_s: float, thresholds: dict[str, dict[str, float]] | None = None
) -> Findings:
    """Feed every snapshot, in time order, to the diagnose engine; return its findings.

    Offline, the capture is all the evidence there is: sustain windows are
    scaled so that the longest fits in half the capture (never lengthened).
    """
    warnings: list[str] = []
    longest = max(spec.sustain_s for spec in REGISTRY.values())
    scale = min(1.0, max(span_s, 0.0) / (2.0 * longest)) if longest else 1.0
    cfg = DiagnoseConfig(sustain_scale=scale, thresholds=dict(thresholds or {}))
    engine = Engine(cfg)
    for snap in snapshots:
        engine.update(snap)
    found = [dict(f) for f in engine.findings()]
    if scale < 1.0:
        warnings.append(f"sustain windows scaled by {scale:.3g} to fit the {span_s:.0f} s of data")
    return Findings(found, warnings)


def merged(*streams: Iterable[Snapshot]) -> Iterator[Snapshot]:
    return heapq.merge(*streams, key=lambda s: s.timestamp)


# -------------------------------------------------------------------- driver
def finish(
    results: list[Any], interval: float | None, cluster: str, version: OntapVersion | None
) -> Findings:
    """Cook the ONTAP inputs into series (attached to their first input) and diagnose every input."""
    ontap = [r for r in results if isinstance(r.detail, OntapInput)]
    perfmon = [r for r in results if r.input.get("kind", "").startswith("perfmon") and r.detail is not None]
    cooker = OntapCooker([r.detail for r in ontap], interval, cluster, version)
    streams: list[Iterable[Snapshot]] = [cooker.snapshots()]
    streams += [host_snapshots(Path(r.input["path"])) for r in perfmon]
    starts: list[float] = []
    ends: list[float] = []
    for r in ontap:
        d: OntapInput = r.detail
        if d.start is not None and d.end is not None:
            starts.append(d.start)
            ends.append(d.end)
        elif interval and d.samples:
            starts.append(0.0)
            ends.append((d.samples - 1) * interval)
    for r in perfmon:
        s, e = getattr(r.detail, "start", None), getattr(r.detail, "end", None)
        if s is not None and e is not None:
            starts.append(s)
            ends.append(e)
    span = (max(ends) - min(starts)) if starts else 0.0
    findings = run_engine(merged(*streams), span)
    if ontap:
        by_path = {str(r.detail.path): r for r in ontap}
        for st in cooker.series.values():  # each series under the input it was first cooked from
            by_path.get(st.inputs[0], ontap[0]).series.append(st.as_json())
        ontap[0].warnings.extend(cooker.warnings)
    findings.series = list(cooker.series.values())
    return findings


DETECTORS = (
    ("ontap-counter-schema", detect_counter_schema),
    ("ontap-counter-rows", detect_counter_rows),
    ("ontap-statistics", detect_statistics),
    ("ontap-sysstat", detect_sysstat),
)


def reader(kind: str) -> Any:
    """The ``read`` of an InputReader for one ONTAP kind: scan now, cook in ``finish``."""

    def read(path: Path) -> Any:
        from sanlens.analyze.cli import Analysis

        inp = scan(path, kind)
        return Analysis(inp.input_json(), [], _summarised(inp.notes), inp)

    return read


def _summarised(notes: list[str], keep: int = 20) -> list[str]:
    """The reader's notes, the first ``keep`` in full and a count of the rest."""
    if len(notes) <= keep:
        return list(notes)
    return [*notes[:keep], f"... and {len(notes) - keep} more skipped item(s)"]


def render_findings_text(f: Findings, out: Any) -> None:
    out.write(f"Diagnoses ({len(f.diagnoses)}):\n")
    for d in f.diagnoses:
        subj = d.get("subject") or {}
        who = "/".join(str(v) for v in subj.values() if v) if isinstance(subj, dict) else str(subj)
        out.write(f"  [{d.get('severity', d.get('state'))}] {d.get('id')}  {who}  score {d.get('score')}\n")
        ev = d.get("evidence") or {}
        if ev:
            out.write(
                "      evidence: "
                + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in ev.items())
                + "\n"
            )
        if d.get("recommendation"):
            out.write(f"      fix: {d['recommendation']}\n")
    out.write("\n")
