"""The diagnoses of `sanlens analyze`: every input's views, in time order, through the diagnose engine.

ONTAP captures become ``OntapView``s (:mod:`sanlens.analyze.ontap_series`),
PerfMon logs ``HostView``s; both streams merge by time into one engine run.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens.analyze.ontap_inputs import OntapInput
from sanlens.analyze.ontap_series import OntapCooker, SeriesStats
from sanlens.config import DiagnoseConfig
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import REGISTRY
from sanlens.hosts.perfmon import PerfmonLog, to_float
from sanlens.hosts.perfmon_source import disk_columns
from sanlens.model import HostDiskStats, HostView, OntapVersion, Snapshot


@dataclass
class Findings:
    diagnoses: list[dict[str, Any]]
    warnings: list[str]
    series: list[SeriesStats] = field(default_factory=list)  # cooked ONTAP series, with chart points


# --------------------------------------------------------------- PerfMon views
def host_snapshots(path: Path) -> Iterator[Snapshot]:
    """HostViews from one PerfMon log, one per row (PerfMon has cooked the rates already)."""
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
