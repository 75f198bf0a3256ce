"""The parts of the HTML report that draw: a host disk's charts (latency with its LUN's on a log
scale, idle, queue against Q_eff, IOPS), an ONTAP series' chart with its band, and the Page every
part reads (the findings, the disks' drive letters, the local zone)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from sanlens.analyze.charts import Line, Points, fmt_unit, svg_chart
from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.evidence_format import Zone, parse_time, span_text, subject_text
from sanlens.analyze.host_intervals import DiskColumn
from sanlens.analyze.ontap_series import SeriesStats
from sanlens.diagnose.base import SERIAL_DOMAINS
from sanlens.diagnose.registry import REGISTRY
from sanlens.hosts.mapping import DiskMapping


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def anchor_id(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts)


# ------------------------------------------------------------------ bands
def _latency_band(data_class: str = "data") -> tuple[float, float]:
    lat = REGISTRY["latency_slo"].defaults()
    return lat[f"{data_class}_warning_seconds"], lat[f"{data_class}_critical_seconds"]


def _domain_band() -> tuple[float, float]:
    cpu = REGISTRY["cpu_domain_serial_bottleneck"].defaults()
    return 100.0 * cpu["kahuna_warning_ratio"], 100.0 * cpu["serial_critical_ratio"]


def _busy_band() -> tuple[float, float]:
    disk = REGISTRY["disk_busy_imbalance"].defaults()
    return 100.0 * disk["min_max_busy_ratio"], 100.0 * disk["critical_max_busy_ratio"]


def is_domain(s: SeriesStats) -> bool:
    return s.object in ("system:node", "sysstat") and s.counter.startswith("domain_busy")


def band_for(s: SeriesStats) -> tuple[float, float] | None:
    """The diagnosis thresholds a series is judged against, in its own unit; None when it has none.

    CPU domains: only the serial ones (Kahuna, ...) have a per-core limit; ``idle`` and the
    parallel domains are never drawn against one."""
    if is_domain(s):
        return _domain_band() if s.label.lower() in SERIAL_DOMAINS else None
    if s.object == "disk:constituent" and s.counter.startswith("disk_busy_percent"):
        return _busy_band()
    if s.object in ("lun", "volume") and "latency" in s.counter and s.unit == "seconds":
        return _latency_band()
    return None


def ontap_order(s: SeriesStats) -> tuple[int, int, float, str]:
    """Banded series first, those over their warning first of all; CPU idle always last."""
    b = band_for(s)
    idle = 1 if is_domain(s) and s.label.lower() == "idle" else 0
    over = 2 if b and s.max >= b[0] else (1 if b else 0)
    spread = (s.max - s.min) / (abs(s.max) + 1e-12) if s.samples else 0.0
    return (idle, -over, -spread, s.path)


def series_chart(s: SeriesStats) -> str:
    mean = s.total / s.samples if s.samples else None
    return (
        f"<div class=chart><h4>{esc(s.path)}</h4>{svg_chart([Line('', s.points)], s.unit, band_for(s))}"
        f"<div class=muted>min {esc(fmt_unit(s.min, s.unit))} · mean {esc(fmt_unit(mean, s.unit))} · "
        f"max {esc(fmt_unit(s.max, s.unit))}</div></div>"
    )


# ------------------------------------------------------------------ host disks
HostDisk = tuple[str, str]


def host_disks(f: Findings) -> dict[HostDisk, dict[str, Points]]:
    out: dict[HostDisk, dict[str, Points]] = {}
    col: DiskColumn
    for col, pts in f.host_points.items():
        host, disk, _drives, field = col
        out.setdefault((host, disk), {})[field] = pts
    return out


def lun_lines(f: Findings, m: DiskMapping | None) -> list[Line]:
    """The mapped LUN's read/write latency series, to draw beside the host's."""
    if m is None or not m.lun:
        return []
    out = []
    for s in f.series:
        if s.object != "lun" or s.unit != "seconds" or not s.instance.endswith(m.lun):
            continue
        if m.svm and ":" in s.instance and not s.instance.startswith(m.svm + ":"):
            continue
        if "read" in s.counter and "latency" in s.counter:
            out.append(Line("LUN read", s.points))
        elif "write" in s.counter and "latency" in s.counter:
            out.append(Line("LUN write", s.points))
    return out


def disk_charts(f: Findings, key: HostDisk, fields: dict[str, Points]) -> list[str]:
    """Latency (with the LUN's), idle, queue (Windows) or mean I/Os in flight (Linux) against Q_eff, and IOPS
    of one host disk."""
    m = f.mappings.get(key)
    data_class = m.data_class if m else "data"
    charts = []
    lun = lun_lines(f, m)
    lat = [
        Line(n, fields[k])
        for k, n in (("read_latency_s", "read"), ("write_latency_s", "write"))
        if k in fields
    ]
    if lat or lun:
        # host and LUN latency differ by orders of magnitude exactly when the finding matters:
        # a log axis (labelled so on the chart) keeps the LUN's dashed line off the floor
        title = f"latency vs LUN {m.lun}" if lun and m else "latency"
        band = _latency_band(data_class)
        note = "<div class=muted>host (solid) and LUN (dashed) on one log-scale axis</div>" if lun else ""
        charts.append(chart_block(title, svg_chart(lat + lun, "seconds", band, log=bool(lun)) + note))
    if "idle_ratio" in fields:
        charts.append(chart_block("% idle time", svg_chart([Line("", fields["idle_ratio"])], "percent")))
    ref = ("Q_eff", float(m.queue_depth * max(m.paths, 1))) if m else None
    for name, title in (("queue_length", "current queue length"), ("outstanding_io", "mean I/Os in flight")):
        if name in fields:
            charts.append(chart_block(title, svg_chart([Line("", fields[name])], "count", None, ref)))
    iops = [Line(n, fields[k]) for k, n in (("read_iops", "reads"), ("write_iops", "writes")) if k in fields]
    if iops:
        charts.append(chart_block("IOPS", svg_chart(iops, "iops")))
    return charts


def chart_block(title: str, svg: str) -> str:
    return f"<div class=chart><h4>{esc(title)}</h4>{svg}</div>"


# ------------------------------------------------------------------ the page
class Page:
    """What every part of the page reads: the findings, drive letters of the disks, the local zone."""

    def __init__(
        self, f: Findings, disks: dict[HostDisk, Any], ontap: Sequence[SeriesStats], zone: Zone | None
    ):
        self.f, self.disks, self.ontap, self.zone = f, disks, ontap, zone
        self.drives: dict[HostDisk, tuple[str, ...]] = {}
        for host, disk, drives, _field in f.host_points:
            if drives:
                self.drives[(host, disk)] = tuple(drives)
        self.charted: dict[HostDisk, str] = {}  # disks charted with a finding -> that incident's anchor

    def subject(self, d: Mapping[str, Any]) -> str:
        subj = d.get("subject") or {}
        if not isinstance(subj, dict):
            return str(subj)
        return subject_text(subj, self.drives.get((subj.get("host", ""), subj.get("disk", "")), ()))

    def span(self, d: Mapping[str, Any]) -> str:
        text = span_text(parse_time(d.get("since")), parse_time(d.get("until")), self.zone)
        return text + (" (still active at the end of the data)" if d.get("active_at_end") else "")


def subject_series(d: dict[str, Any], ontap: Sequence[SeriesStats]) -> list[SeriesStats]:
    subj = d.get("subject") or {}
    node, lun = subj.get("node"), subj.get("lun")
    return [
        s
        for s in ontap
        if (lun and s.object == "lun" and s.instance.endswith(lun))
        or (node and is_domain(s) and s.instance == node)
    ]
