"""`sanlens analyze --format html`: one self-contained file.

Inline CSS and inline SVG only: no script, no external stylesheet, font or
image, so the report opens offline and can be mailed as is. Charts are drawn
from the bounded point lists the cooker keeps; series with a known threshold
(latency, CPU domains, disk busy) get warning/critical bands.
"""

from __future__ import annotations

import datetime as dt
import html
import time
from collections.abc import Sequence
from typing import Any

from sanlens import __version__
from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.ontap_series import SeriesStats
from sanlens.diagnose.registry import REGISTRY

MAX_CHARTS = 60  # most interesting series first; the rest are in the table


def _bands() -> list[tuple[str, str, tuple[float, float]]]:
    """(object, counter prefix) -> (warning, critical) in the series' unit, from the diagnoses' defaults.

    Latencies come in seconds; domain and disk busy in percent (of one core, of the disk).
    """
    lat = REGISTRY["latency_slo"].defaults()
    cpu = REGISTRY["cpu_domain_serial_bottleneck"].defaults()
    disk = REGISTRY["disk_busy_imbalance"].defaults()
    latency = (lat["data_warning_seconds"], lat["data_critical_seconds"])
    domain = (100.0 * cpu["kahuna_warning_ratio"], 100.0 * cpu["serial_critical_ratio"])
    busy = (100.0 * disk["min_max_busy_ratio"], 100.0 * disk["critical_max_busy_ratio"])
    return [
        ("lun", "average_", latency),
        ("volume", "read_latency", latency),
        ("volume", "write_latency", latency),
        ("volume", "average_latency", latency),
        ("system:node", "domain_busy", domain),
        ("sysstat", "domain_busy", domain),
        ("disk:constituent", "disk_busy_percent", busy),
    ]


BANDS = _bands()

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #dde}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .6em;border-bottom:1px solid #eef;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#667}
.diag{border-left:4px solid #888;padding:.4em .8em;margin:.8em 0;background:#f7f8fb}
.sev-critical{border-color:#c62828}.sev-warning{border-color:#ef8f00}.sev-ok{border-color:#2e7d32}
.charts{display:flex;flex-wrap:wrap;gap:1em}.chart{width:420px}.chart h3{font-size:.9em;margin:.2em 0;word-break:break-all}
svg text{font-size:10px;fill:#556}
"""


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    return f"{v:.3g}" if a < 1000 else f"{v:,.0f}"


def _utc_text(t: float) -> str:
    """A time as the report prints it: ``2025-03-02 10:00:00`` (UTC)."""
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def band_for(s: SeriesStats) -> tuple[float, float] | None:
    for obj, prefix, band in BANDS:
        if s.object == obj and s.counter.startswith(prefix):
            if prefix.startswith("avg") or "latency" in s.counter:
                return band if s.unit == "seconds" else None
            return band
    return None


def svg_chart(points: Sequence[tuple[float, float]], band: tuple[float, float] | None, unit: str) -> str:
    """A line chart with optional warning/critical bands, as inline SVG."""
    w, h, left, bottom, top = 420, 150, 48, 18, 8
    pw, ph = w - left - 6, h - bottom - top
    if not points:
        return f'<svg width="{w}" height="{h}" role="img"><text x="{left}" y="{h / 2}">no data</text></svg>'
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y_hi = max(max(ys), band[1] * 1.1 if band else 0.0, 1e-12)
    y_lo = min(0.0, min(ys))
    sx = (lambda x: left + (x - x0) / (x1 - x0) * pw) if x1 > x0 else (lambda x: left + pw / 2)
    sy = lambda y: top + ph - (y - y_lo) / (y_hi - y_lo) * ph  # noqa: E731
    parts = [f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">']
    if band:
        warn, crit = band
        parts.append(
            f'<rect x="{left}" y="{sy(y_hi):.1f}" width="{pw}" height="{max(sy(crit) - sy(y_hi), 0):.1f}" '
            'fill="#c62828" fill-opacity="0.12"><title>critical</title></rect>'
        )
        parts.append(
            f'<rect x="{left}" y="{sy(crit):.1f}" width="{pw}" height="{max(sy(warn) - sy(crit), 0):.1f}" '
            'fill="#ef8f00" fill-opacity="0.12"><title>warning</title></rect>'
        )
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#99a"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#99a"/>')
    for y in (y_lo, (y_lo + y_hi) / 2, y_hi):
        parts.append(f'<text x="{left - 4}" y="{sy(y) + 3:.1f}" text-anchor="end">{_e(_fmt(y))}</text>')
    if x1 > x0 and x0 > 1e8:  # real epoch times
        parts.append(f'<text x="{left}" y="{h - 4}">{_e(_utc_text(x0))}</text>')
        parts.append(f'<text x="{left + pw}" y="{h - 4}" text-anchor="end">{_e(_utc_text(x1))} UTC</text>')
    pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    if len(points) == 1:
        x, y = points[0]
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="#1f5fbf"/>')
    else:
        parts.append(f'<polyline points="{pts}" fill="none" stroke="#1f5fbf" stroke-width="1.5"/>')
    parts.append(f'<text x="{left + pw}" y="{top + 8}" text-anchor="end">{_e(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _interest(s: SeriesStats) -> tuple[int, float]:
    """Charts worth a look first: banded series, then by how much they vary."""
    b = band_for(s)
    over = 2 if b and s.max >= b[0] else (1 if b else 0)
    return (-over, -(s.max - s.min) / (abs(s.max) + 1e-12) if s.samples else 0.0)


def render_html(results: Sequence[Any], findings: Findings) -> str:
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>sanlens analyze report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>sanlens analyze</h1>",
        f'<p class="muted">sanlens {_e(__version__)} · generated {_e(_utc_text(time.time()))} UTC</p>',
        "<h2>Inputs</h2><table><tr><th>file</th><th>kind</th><th>samples</th><th>start</th><th>end</th></tr>",
    ]
    for r in results:
        i = r.input
        out.append(
            f"<tr><td>{_e(i.get('path'))}</td><td>{_e(i.get('kind'))}</td><td class=n>{_e(i.get('samples'))}</td>"
            f"<td>{_e(i.get('start') or '-')}</td><td>{_e(i.get('end') or '-')}</td></tr>"
        )
    out.append("</table>")
    warnings = [f"{r.input.get('path')}: {w}" for r in results for w in r.warnings] + findings.warnings
    if warnings:
        out.append("<ul>" + "".join(f'<li class="muted">{_e(w)}</li>' for w in warnings) + "</ul>")

    out.append(f"<h2>Diagnoses ({len(findings.diagnoses)})</h2>")
    if not findings.diagnoses:
        out.append("<p>No diagnosis fired on these inputs.</p>")
    for d in findings.diagnoses:
        sev = str(d.get("severity") or {0: "ok", 1: "warning", 2: "critical"}.get(d.get("state", 0), "ok"))
        subj = d.get("subject") or {}
        who = ", ".join(f"{k}={v}" for k, v in subj.items() if v) if isinstance(subj, dict) else str(subj)
        out.append(f'<div class="diag sev-{_e(sev)}"><b>{_e(d.get("id"))}</b> — {_e(sev)} · {_e(who)}')
        if d.get("score") is not None:
            out.append(f" · score {_e(_fmt(float(d['score'])))}")
        ev = d.get("evidence") or {}
        if ev:
            out.append("<table>")
            for k, v in ev.items():
                out.append(
                    f"<tr><td>{_e(k)}</td><td class=n>{_e(_fmt(v) if isinstance(v, float) else v)}</td></tr>"
                )
            out.append("</table>")
        if d.get("recommendation"):
            out.append(f"<p>{_e(d['recommendation'])}</p>")
        if d.get("runbook"):
            out.append(f'<p class="muted">runbook: {_e(d["runbook"])}</p>')
        out.append("</div>")

    series = sorted((s for s in findings.series if s.samples), key=_interest)
    if series:
        out.append(f"<h2>ONTAP series ({len(series)})</h2><div class=charts>")
        for s in series[:MAX_CHARTS]:
            out.append(
                f"<div class=chart><h3>{_e(s.path)}</h3>{svg_chart(s.points, band_for(s), s.unit)}"
                f"<div class=muted>min {_e(_fmt(s.min))} · mean {_e(_fmt(s.total / s.samples))} · "
                f"max {_e(_fmt(s.max))} {_e(s.unit)}</div></div>"
            )
        out.append("</div>")
    table_rows = [sj for r in results for sj in r.series]
    if table_rows:
        out.append("<h2>All series</h2><table><tr><th>series</th><th>unit</th><th>samples</th>")
        out.append("<th>min</th><th>mean</th><th>max</th></tr>")
        for sj in table_rows:
            out.append(
                f"<tr><td>{_e(sj.get('path'))}</td><td>{_e(sj.get('unit', ''))}</td>"
                f"<td class=n>{_e(sj.get('samples'))}</td><td class=n>{_e(_fmt(sj.get('min')))}</td>"
                f"<td class=n>{_e(_fmt(sj.get('mean')))}</td><td class=n>{_e(_fmt(sj.get('max')))}</td></tr>"
            )
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)
