"""Inline SVG line charts for the HTML report, in human units.

No script and no external asset: each chart is a few hundred bytes of SVG per
line. Values arrive in the series' own unit (seconds, bytes/s, percent ...) and
are drawn in the unit people read (ms, MB/s, %). A chart may carry a
warning/critical band (a diagnosis threshold) and a reference line (Q_eff).

A chart whose lines differ by orders of magnitude (a host's 150 ms against its LUN's 0.5 ms)
is drawn on a logarithmic axis (``log=True``), ticked at powers of ten and labelled so:
on a linear axis the smaller line would lie flat on zero.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# series unit -> (factor, label) of what the report shows
UNITS: dict[str, tuple[float, str]] = {
    "seconds": (1000.0, "ms"),
    "bytes_per_second": (1e-6, "MB/s"),
    "percent": (1.0, "%"),
    "per_second": (1.0, "/s"),
    "iops": (1.0, "IOPS"),
    "count": (1.0, "count"),
    "milliseconds": (1.0, "ms"),  # sysstat's columns, as printed
    "kilobytes_per_second": (1.0, "kB/s"),
    "megabytes_per_second": (1.0, "MB/s"),
    "sectors_per_second": (1.0, "sectors/s"),
    "kilobytes": (1.0, "kB"),
    "sectors": (1.0, "sectors"),
    "ratio": (100.0, "%"),
    "none": (1.0, ""),
    "": (1.0, ""),
}
COLORS = ("#1f5fbf", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c")
# a line's (epoch seconds, value) points: pairs, or an (n, 2) array as the host intervals give them
Points = Sequence[tuple[float, float]] | np.ndarray


def human(unit: str) -> tuple[float, str]:
    return UNITS.get(unit, (1.0, unit))


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    return f"{v:.3g}" if a < 1000 else f"{v:,.0f}"


def fmt_unit(v: float | None, unit: str) -> str:
    """A value of a series unit as the report prints it: 0.012 seconds -> ``12 ms``."""
    if v is None:
        return "-"
    factor, label = human(unit)
    return f"{fmt(v * factor)} {label}".rstrip()


def utc_text(t: float) -> str:
    """A time as the report prints it: ``2025-03-02 10:00:00`` (UTC)."""
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


@dataclass(frozen=True)
class Line:
    label: str
    points: Points  # (epoch seconds, value in the chart's unit)


def _log_floor(values: Sequence[float], marks: Sequence[float]) -> float:
    """The bottom of a log axis: a power of ten below the smallest positive value, with room under
    it (a value within 5x of the floor gets one more decade, so it is not drawn on the axis)."""
    positive = [v for v in (*values, *marks) if v > 0 and math.isfinite(v)]
    lo = min(positive) if positive else 1.0
    floor = 10.0 ** math.floor(math.log10(lo))
    return floor / 10.0 if lo < 5.0 * floor else floor


def svg_chart(
    lines: Sequence[Line],
    unit: str,
    band: tuple[float, float] | None = None,
    reference: tuple[str, float] | None = None,
    width: int = 420,
    log: bool = False,
) -> str:
    """A line chart; ``band`` (warning, critical) and ``reference`` are in ``unit`` too.

    ``log``: a logarithmic value axis, ticked at powers of ten (zero and negative values sit on
    its floor)."""
    factor, label = human(unit)
    w, h, left, bottom, top = width, 160, 52, 30, 8
    pw, ph = w - left - 8, h - bottom - top
    # a log's chart has thousands of points: each line's as an (n, 2) array, reduced and scaled whole
    arrays = [np.asarray(ln.points, dtype=float).reshape(-1, 2) for ln in lines]
    if not any(len(a) for a in arrays):
        return f'<svg width="{w}" height="{h}" role="img"><text x="{left}" y="{h / 2}">no data</text></svg>'
    pts = np.concatenate(arrays)
    finite = pts[np.isfinite(pts[:, 1]), 1] * factor
    ys = finite if len(finite) else np.zeros(1)
    x0, x1 = float(pts[:, 0].min()), float(pts[:, 0].max())
    hi_marks = [float(ys.max())]
    if band:
        hi_marks.append(band[1] * factor * 1.1)
    if reference:
        hi_marks.append(reference[1] * factor * 1.05)
    y_hi, y_lo = max(hi_marks), min(0.0, float(ys.min()))
    if y_hi <= y_lo:  # an idle series: a 0 .. 1 axis, not one of 1e-12
        y_hi = y_lo + 1.0
    ticks = [y_lo, (y_lo + y_hi) / 2, y_hi]
    if log:
        marks = [band[0] * factor] if band else []
        y_lo = _log_floor(ys.tolist(), marks)
        y_hi = 10.0 ** math.ceil(math.log10(max(y_hi, y_lo * 10)))
        ticks = [10.0**k for k in range(round(math.log10(y_lo)), round(math.log10(y_hi)) + 1)]

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw if x1 > x0 else left + pw / 2

    def sy(y: float) -> float:
        if log:
            f = (math.log10(max(y, y_lo)) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))
            return top + ph - min(f, 1.0) * ph
        return top + ph - (y - y_lo) / (y_hi - y_lo) * ph

    parts = [f'<svg class="chart-svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">']
    if band:
        warn, crit = band[0] * factor, band[1] * factor
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
    for y in ticks:
        parts.append(f'<text x="{left - 4}" y="{sy(y) + 3:.1f}" text-anchor="end">{_e(fmt(y))}</text>')
        if log:
            parts.append(
                f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" stroke="#e3e6ee"/>'
            )
    if x1 > x0 and x0 > 1e8:  # real epoch times
        parts.append(f'<text x="{left}" y="{h - 16}">{_e(utc_text(x0))}</text>')
        parts.append(f'<text x="{left + pw}" y="{h - 16}" text-anchor="end">{_e(utc_text(x1))} UTC</text>')
    if reference:
        name, value = reference
        y = sy(value * factor)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#c62828" '
            f'stroke-dasharray="4 3"><title>{_e(name)}</title></line>'
        )
        parts.append(f'<text x="{left + 4}" y="{y - 3:.1f}">{_e(name)} {_e(fmt(value * factor))}</text>')
    legend_x = left
    for n, (ln, arr) in enumerate(zip(lines, arrays, strict=True)):
        color = COLORS[n % len(COLORS)]
        dash = ' stroke-dasharray="5 2"' if ln.label.startswith("LUN") else ""
        shown = arr[np.isfinite(arr[:, 1])]
        if len(shown) == 1:
            x, y = shown[0].tolist()
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y * factor):.1f}" r="3" fill="{color}"/>')
        elif len(shown):
            if log or x1 <= x0:
                path = " ".join(f"{sx(x):.1f},{sy(y * factor):.1f}" for x, y in shown.tolist())
            else:  # sx and sy over the whole line at once
                span_x, span_y, base = x1 - x0, y_hi - y_lo, top + ph
                xy = np.empty_like(shown)
                xy[:, 0] = left + (shown[:, 0] - x0) / span_x * pw
                xy[:, 1] = base - (shown[:, 1] * factor - y_lo) / span_y * ph
                # one %-format over every coordinate: a call per point was most of drawing a chart
                path = ("%.1f,%.1f " * len(xy) % tuple(xy.ravel().tolist()))[:-1]
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        if len(lines) > 1 or ln.label:
            parts.append(
                f'<text x="{legend_x}" y="{h - 3}" fill="{color}" style="fill:{color}">{_e(ln.label)}</text>'
            )
            legend_x += 7 * len(ln.label) + 14
    axis = f"{label}, log scale" if log else label
    parts.append(f'<text x="{left + pw}" y="{top + 8}" text-anchor="end">{_e(axis)}</text>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Segment:
    label: str
    color: str


def svg_stacked(
    bars: Sequence[tuple[float, Sequence[float]]], segments: Sequence[Segment], unit: str, width: int = 420
) -> str:
    """Stacked bars, one per interval (``(time, values)``, a value per segment in ``unit``), in
    interval order rather than to a time scale, so one short interval stays readable. Negative
    values are not drawn (a residual where ONTAP's printed columns exceed its total)."""
    factor, label = human(unit)
    rows = (len(segments) + 3) // 4
    w, h, left, top = width, 150 + 13 * rows, 52, 8
    bottom = 30 + 13 * rows
    pw, ph = w - left - 8, h - bottom - top
    if not bars:
        return f'<svg width="{w}" height="{h}" role="img"><text x="{left}" y="{h / 2}">no data</text></svg>'
    y_hi = max(sum(max(v, 0.0) for v in vals) * factor for _t, vals in bars)
    if y_hi <= 0:  # nothing to stack: a 0 .. 1 axis
        y_hi = 1.0
    slot = pw / len(bars)
    bar_w = max(slot * 0.8, 1.0)

    def sy(y: float) -> float:
        return top + ph - y / y_hi * ph

    parts = [f'<svg class="chart-svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">']
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#99a"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#99a"/>')
    for y in (0.0, y_hi / 2, y_hi):
        parts.append(f'<text x="{left - 4}" y="{sy(y) + 3:.1f}" text-anchor="end">{_e(fmt(y))}</text>')
    for n, (t, vals) in enumerate(bars):
        x, base = left + n * slot + (slot - bar_w) / 2, 0.0
        for seg, v in zip(segments, vals, strict=True):
            if v <= 0:
                continue
            top_y, base_y = sy(base + v * factor), sy(base)
            when = utc_text(t) if t > 1e8 else f"{t:g}"
            parts.append(
                f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{bar_w:.1f}" height="{max(base_y - top_y, 0.0):.1f}" '
                f'fill="{seg.color}"><title>{_e(when)}: {_e(seg.label)} {_e(fmt(v * factor))} {_e(label)}</title></rect>'
            )
            base += v * factor
    t0, t1 = bars[0][0], bars[-1][0]
    if t0 > 1e8:
        parts.append(f'<text x="{left}" y="{top + ph + 14}">{_e(utc_text(t0))}</text>')
        if len(bars) > 1:
            parts.append(
                f'<text x="{left + pw}" y="{top + ph + 14}" text-anchor="end">{_e(utc_text(t1))} UTC</text>'
            )
    for n, seg in enumerate(segments):
        lx, ly = left + (n % 4) * (pw / 4), top + ph + 28 + 13 * (n // 4)
        parts.append(f'<rect x="{lx:.1f}" y="{ly - 8:.1f}" width="8" height="8" fill="{seg.color}"/>')
        parts.append(f'<text x="{lx + 11:.1f}" y="{ly:.1f}">{_e(seg.label)}</text>')
    parts.append(f'<text x="{left + pw}" y="{top + 8}" text-anchor="end">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
