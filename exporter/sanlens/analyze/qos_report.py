"""The report's "Where the time goes inside ONTAP" section, in text, JSON and HTML.

Per workload: its breakdown per interval (a table; stacked bars in HTML) and the component that
adds the most to an operation over the capture, named with its share of the latency. The
``-total-`` row of each ``qos statistics ... latency show`` capture is summarised on its own.
Times print in human units (``3.65 ms``, ``284.00 us``), never in scientific notation.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sanlens.analyze.charts import Segment, svg_stacked, utc_text
from sanlens.analyze.qos_breakdown import FROM_TEXT, OTHER, Breakdown, QosBreakdowns, components
from sanlens.model import iso_utc
from sanlens.qos import QOS_COMPONENTS

TITLE = "Where the time goes inside ONTAP"
LABELS = {
    "network": "Network",
    "cluster": "Cluster",
    "data": "Data",
    "disk": "Disk",
    "qos_max": "QoS Max",
    "qos_min": "QoS Min",
    "nvram": "NVRAM",
    "cloud": "Cloud",
    "flexcache": "FlexCache",
    "sm_sync": "SM Sync",
    "va": "VA",
    "avscan": "AVSCAN",
    "qos": "QoS",
}
COLORS = {
    "network": "#1f5fbf",
    "cluster": "#7048e8",
    "data": "#2b8a3e",
    "disk": "#8d6e63",
    "qos_max": "#c62828",
    "qos_min": "#ef8f00",
    "nvram": "#0b7285",
    "cloud": "#5c7cfa",
    "flexcache": "#a61e4d",
    "sm_sync": "#495057",
    "va": "#74b816",
    "avscan": "#f06595",
    "qos": "#d9480f",
    OTHER: "#adb5bd",
}
EXTRA_COLORS = ("#364fc7", "#087f5b", "#e67700", "#862e9c")
MAX_ROWS = 24  # intervals printed per workload in text and HTML; JSON has every one kept
MAX_WORKLOADS = 50  # workloads charted in HTML and listed in text; JSON has all


def seconds_text(v: float) -> str:
    """``0.00365`` -> ``3.65 ms``: two decimals, as ONTAP prints its cells."""
    a = abs(v)
    if a == 0:
        return "0 ms"
    if a >= 1:
        return f"{v:.2f} s"
    if a >= 1e-3:
        return f"{v * 1e3:.2f} ms"
    return f"{v * 1e6:.2f} us"


def pct(v: float) -> str:
    """A share in whole percent; one decimal near 0 and 100, where whole ones would round away."""
    p = v * 100
    return f"{p:.1f} %" if 0 < abs(p) < 1 or 99.5 <= abs(p) < 100 else f"{p:.0f} %"


def label(key: str, b: Breakdown) -> str:
    if key == OTHER:
        return "in no column" if b.source == FROM_TEXT else "other centres"
    return LABELS.get(key, key.replace("_", " "))


def columns(b: Breakdown) -> list[str]:
    """The parts any interval shows, in ONTAP's column order, unknown columns after, ``other`` last."""
    seen = {k for iv in b.intervals for k, v in iv.parts.items() if v}
    known = [k for k in (*QOS_COMPONENTS[:-1], "qos") if k in seen]
    return known + sorted(seen - set(known) - {OTHER}) + ([OTHER] if OTHER in seen else [])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class Dominant:
    key: str
    label: str
    value: float  # mean seconds per operation, or mean share
    of: float | None  # mean latency; None for shares
    share: float
    text: str


def dominant(b: Breakdown) -> Dominant | None:
    """The named component with the largest mean over the intervals; a larger unnamed remainder
    (``other``) is said beside it, since it names no place to look."""
    if not b.intervals:
        return None
    means = {k: _mean([iv.parts.get(k, 0.0) for iv in b.intervals]) for k in columns(b)}
    named = {k: v for k, v in means.items() if k != OTHER and v > 0}
    if not named:
        return None
    key = max(named, key=lambda k: named[k])
    value, name = named[key], label(key, b)
    if b.shares_only:
        of, share = None, value
        text = f"{name}: {pct(share)} of the time in ONTAP"
    else:
        of = _mean([iv.latency_s or 0.0 for iv in b.intervals])
        share = value / of if of > 0 else 0.0
        text = f"{name}: {seconds_text(value)} of {seconds_text(of)} ({pct(share)})"
    rest = means.get(OTHER, 0.0)
    if rest > value:
        where = "in no column ONTAP prints" if b.source == FROM_TEXT else "in centres no column names"
        amount = pct(rest) if of is None else f"{seconds_text(rest)} ({pct(rest / of if of else 0.0)})"
        text += f"; {amount} is {where}"
    return Dominant(key, name, value, of, share, text)


def _ordered(q: QosBreakdowns) -> list[Breakdown]:
    """Slowest first: mean latency (shares-only workloads last)."""

    def key(b: Breakdown) -> tuple[int, float, str]:
        lat = _mean([iv.latency_s for iv in b.intervals if iv.latency_s is not None])
        return (1 if b.shares_only else 0, -lat, b.workload)

    return sorted(q.workloads.values(), key=key)


def _rows(b: Breakdown, limit: int = MAX_ROWS) -> list[int]:
    n = len(b.intervals)
    if n <= limit:
        return list(range(n))
    return sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})


def _value(v: float, b: Breakdown) -> str:
    return pct(v) if b.shares_only else seconds_text(v)


def _when(b: Breakdown, i: int) -> str:
    iv = b.intervals[i]
    return f"{Path(iv.input).name} #{iv.iteration}" if iv.placed else f"{utc_text(iv.t)} UTC"


# --------------------------------------------------------------------- JSON
def breakdown_json(b: Breakdown) -> dict[str, Any]:
    d = dominant(b)
    cols = columns(b)
    return {
        "workload": b.workload,
        "svm": b.svm,
        "volume": b.volume,
        "wid": b.wid,
        "policy_group": b.policy,
        "source": b.source,
        "inputs": list(b.inputs),
        "unit": "share" if b.shares_only else "seconds",
        "columns": [
            {"key": k, "label": label(k, b), "judged_as": next(iter(components({k: 0.0})))} for k in cols
        ],
        "intervals_read": b.seen,
        "intervals": [
            {
                "time": iso_utc(iv.t, milliseconds=True),
                "placed": iv.placed,
                "iteration": iv.iteration,
                "latency": iv.latency_s,
                "iops": iv.iops,
                "parts": dict(iv.parts),
            }
            for iv in b.intervals
        ],
        "dominant": None
        if d is None
        else {
            "component": d.key,
            "label": d.label,
            "value": d.value,
            "latency": d.of,
            "share": d.share,
            "text": d.text,
        },
    }


def as_json(q: QosBreakdowns) -> dict[str, Any]:
    return {
        "title": TITLE,
        "workloads": [breakdown_json(b) for b in _ordered(q)],
        "totals": [{"input": path, **breakdown_json(b)} for path, b in sorted(q.totals.items())],
    }


# --------------------------------------------------------------------- text
def _table(b: Breakdown) -> list[list[str]]:
    cols = columns(b)
    head = ["interval", "latency", *[label(k, b) for k in cols]]
    if b.shares_only:
        head[1] = "IOPS"
    rows = [head]
    for i in _rows(b):
        iv = b.intervals[i]
        first = (
            (f"{iv.iops:.0f}" if iv.iops is not None else "-")
            if b.shares_only
            else seconds_text(iv.latency_s or 0.0)
        )
        rows.append([_when(b, i), first, *[_value(iv.parts.get(k, 0.0), b) for k in cols]])
    return rows


def _title(b: Breakdown) -> str:
    what = "policy group" if b.policy else "workload"
    where = f" of SVM {b.svm}" if b.svm else ""
    vol = f", volume {b.volume}" if b.volume else ""
    n = f"{b.seen} interval(s)" + (f", {len(b.intervals)} kept" if len(b.intervals) < b.seen else "")
    return f"{what} {b.workload}{where}{vol}  ({b.source}; {n})"


def render_text(q: QosBreakdowns, out: TextIO) -> None:
    if not q.workloads and not q.totals:
        return
    out.write(f"{TITLE}\n")
    shown = _ordered(q)
    for b in shown[:MAX_WORKLOADS]:
        out.write(f"  {_title(b)}\n")
        d = dominant(b)
        out.write(f"    dominant: {d.text if d else 'no time in any component'}\n")
        rows = _table(b)
        widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
        for n, r in enumerate(rows):
            out.write(
                "    "
                + "  ".join(
                    c.rjust(w) if k else c.ljust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True))
                ).rstrip()
                + "\n"
            )
            if n == 0:
                out.write("    " + "  ".join("-" * w for w in widths) + "\n")
        if len(rows) - 1 < len(b.intervals):
            out.write(
                f"    ({len(rows) - 1} of {len(b.intervals)} intervals shown; all are in --format json)\n"
            )
    if len(shown) > MAX_WORKLOADS:
        out.write(f"  ... and {len(shown) - MAX_WORKLOADS} more workload(s) in --format json\n")
    for path, b in sorted(q.totals.items()):
        out.write(f"  {total_text(path, b)}\n")
    out.write("\n")


def total_text(path: str, b: Breakdown) -> str:
    d = dominant(b)
    lat = _mean([iv.latency_s or 0.0 for iv in b.intervals])
    return (
        f"-total- of {path} (all workloads): mean latency {seconds_text(lat)} over {b.seen} interval(s); "
        f"dominant: {d.text if d else 'no time in any component'}"
    )


# --------------------------------------------------------------------- HTML
def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def segments(b: Breakdown, cols: Sequence[str]) -> list[Segment]:
    extra = iter(EXTRA_COLORS * 4)
    return [Segment(label(k, b), COLORS.get(k) or next(extra, "#868e96")) for k in cols]


def html_section(q: QosBreakdowns, anchor: str = "qos") -> list[str]:
    if not q.workloads and not q.totals:
        return []
    shown = _ordered(q)
    out = [f'<h2 id="{anchor}">{_e(TITLE)} ({len(shown)} workload(s))</h2>']
    for n, b in enumerate(shown[:MAX_WORKLOADS]):
        cols = columns(b)
        d = dominant(b)
        out.append(f'<h3 id="{anchor}-{n}">{_e(_title(b))}</h3>')
        out.append(f"<p><b>{_e(d.text if d else 'no time in any component')}</b></p>")
        bars = [(iv.t, [iv.parts.get(k, 0.0) for k in cols]) for iv in b.intervals]
        unit = "ratio" if b.shares_only else "seconds"
        out.append(
            f"<div class=charts><div class=chart>{svg_stacked(bars, segments(b, cols), unit)}</div></div>"
        )
        rows = _table(b)
        out.append("<table><tr>" + "".join(f"<th>{_e(c)}</th>" for c in rows[0]) + "</tr>")
        for r in rows[1:]:
            out.append(
                "<tr>"
                + "".join(f"<td{' class=n' if k else ''}>{_e(c)}</td>" for k, c in enumerate(r))
                + "</tr>"
            )
        out.append("</table>")
    if len(shown) > MAX_WORKLOADS:
        out.append(f"<p class=muted>{len(shown) - MAX_WORKLOADS} more workload(s) are in --format json.</p>")
    if q.totals:
        out.append("<h3>All workloads (-total-)</h3><ul>")
        out += [f"<li>{_e(total_text(path, b))}</li>" for path, b in sorted(q.totals.items())]
        out.append("</ul>")
    return out
