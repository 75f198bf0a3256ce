"""`sanlens analyze --format html`: one self-contained, printable file.

Inline CSS and inline SVG only: no script, no external stylesheet, font or image,
so the report opens offline and can be mailed as is. Order is what a reader needs:
what is wrong (each finding with its evidence, time range, fix and charts), what
could not be judged and why (every input's status), then the host disks (latency
with the mapped LUN's latency on the same chart, idle, queue against Q_eff, IOPS)
and the ONTAP series, grouped by host, node and object in a contents list.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import Any

from sanlens import __version__
from sanlens.analyze.analysis import Analysis
from sanlens.analyze.charts import Line, fmt, fmt_unit, svg_chart, utc_text
from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.host_intervals import DiskColumn
from sanlens.analyze.ontap_series import SeriesStats
from sanlens.analyze.qos_report import TITLE as QOS_TITLE
from sanlens.analyze.qos_report import html_section as qos_section
from sanlens.analyze.waterfall_report import html_block as waterfall_html
from sanlens.diagnose.base import SERIAL_DOMAINS
from sanlens.diagnose.registry import REGISTRY
from sanlens.hosts.mapping import DiskMapping

MAX_CHARTS = 60  # ONTAP charts: findings' subjects first, then banded series; all are in the table
MAX_DISKS = 128  # host disks charted (4 charts each); all are in the table

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #dde}
h3{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .6em;border-bottom:1px solid #eef;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#667}
.diag{border-left:4px solid #888;padding:.4em .8em;margin:.8em 0;background:#f7f8fb;break-inside:avoid}
.sev-critical{border-color:#c62828}.sev-warning{border-color:#ef8f00}.sev-ok{border-color:#2e7d32}
.banner{padding:.6em .9em;margin:1em 0;background:#fff4e5;border-left:4px solid #ef8f00}
.banner.ok{background:#edf7ee;border-color:#2e7d32}.banner.bad{background:#fdecea;border-color:#c62828}
.st-error{color:#c62828;font-weight:600}.st-nothing{color:#b35c00;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:1em}.chart{width:420px;break-inside:avoid}
.chart h4{font-size:.85em;margin:.2em 0;word-break:break-all;font-weight:600}
nav ul{margin:.2em 0;padding-left:1.2em}nav li{margin:.1em 0}
svg text{font-size:10px;fill:#556}
@media print{body{margin:0;font-size:11px}nav{break-after:page}.charts{display:block}
.chart{display:inline-block;vertical-align:top;margin:0 .5em .5em 0}a{color:inherit;text-decoration:none}
h2{break-after:avoid}}
"""


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _id(*parts: str) -> str:
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


def _ontap_order(s: SeriesStats) -> tuple[int, int, float, str]:
    """Banded series first, those over their warning first of all; CPU idle always last."""
    b = band_for(s)
    idle = 1 if is_domain(s) and s.label.lower() == "idle" else 0
    over = 2 if b and s.max >= b[0] else (1 if b else 0)
    spread = (s.max - s.min) / (abs(s.max) + 1e-12) if s.samples else 0.0
    return (idle, -over, -spread, s.path)


def _series_chart(s: SeriesStats) -> str:
    mean = s.total / s.samples if s.samples else None
    return (
        f"<div class=chart><h4>{_e(s.path)}</h4>{svg_chart([Line('', s.points)], s.unit, band_for(s))}"
        f"<div class=muted>min {_e(fmt_unit(s.min, s.unit))} · mean {_e(fmt_unit(mean, s.unit))} · "
        f"max {_e(fmt_unit(s.max, s.unit))}</div></div>"
    )


# ------------------------------------------------------------------ host disks
HostDisk = tuple[str, str]


def _host_disks(f: Findings) -> dict[HostDisk, dict[str, list[tuple[float, float]]]]:
    out: dict[HostDisk, dict[str, list[tuple[float, float]]]] = {}
    col: DiskColumn
    for col, pts in f.host_points.items():
        host, disk, _drives, field = col
        out.setdefault((host, disk), {})[field] = pts
    return out


def _lun_lines(f: Findings, m: DiskMapping | None) -> list[Line]:
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


def disk_charts(f: Findings, key: HostDisk, fields: dict[str, list[tuple[float, float]]]) -> list[str]:
    """Latency (with the LUN's), idle, queue (Windows) or mean I/Os in flight (Linux) against Q_eff, and IOPS
    of one host disk."""
    m = f.mappings.get(key)
    data_class = m.data_class if m else "data"
    charts = []
    lat = [
        Line(n, fields[k])
        for k, n in (("read_latency_s", "read"), ("write_latency_s", "write"))
        if k in fields
    ]
    lun = _lun_lines(f, m)
    if lat or lun:
        title = "latency" + (f" vs LUN {m.lun}" if lun and m else "")
        charts.append(_chart(title, svg_chart(lat + lun, "seconds", _latency_band(data_class))))
    if "idle_ratio" in fields:
        charts.append(_chart("% idle time", svg_chart([Line("", fields["idle_ratio"])], "percent")))
    ref = ("Q_eff", float(m.queue_depth * max(m.paths, 1))) if m else None
    for name, title in (("queue_length", "current queue length"), ("outstanding_io", "mean I/Os in flight")):
        if name in fields:
            charts.append(_chart(title, svg_chart([Line("", fields[name])], "count", None, ref)))
    iops = [Line(n, fields[k]) for k, n in (("read_iops", "reads"), ("write_iops", "writes")) if k in fields]
    if iops:
        charts.append(_chart("IOPS", svg_chart(iops, "iops")))
    return charts


def _chart(title: str, svg: str) -> str:
    return f"<div class=chart><h4>{_e(title)}</h4>{svg}</div>"


# ------------------------------------------------------------------ findings
def _evidence(name: str, v: Any) -> str:
    if not isinstance(v, int | float):
        return str(v)
    if name.endswith("_seconds"):
        return fmt_unit(float(v), "seconds")
    if name.endswith("_ratio"):
        return fmt_unit(float(v), "ratio")
    if name.endswith("_bytes_per_second"):
        return fmt_unit(float(v), "bytes_per_second")
    return fmt(float(v))


def _finding_charts(
    d: dict[str, Any], f: Findings, disks: dict[HostDisk, Any], ontap: Sequence[SeriesStats]
) -> list[str]:
    subj = d.get("subject") or {}
    host, disk = subj.get("host"), subj.get("disk")
    if host and disk and (host, disk) in disks:
        return disk_charts(f, (host, disk), disks[(host, disk)])
    node, lun, volume = subj.get("node"), subj.get("lun"), subj.get("volume")
    picked: list[SeriesStats] = []
    for s in ontap:
        if not band_for(s):
            continue
        if lun:
            hit = s.object == "lun" and s.instance.endswith(lun)
        elif volume:
            hit = s.object == "volume" and volume in s.instance
        else:
            hit = bool(node) and is_domain(s) and s.instance == node
        if hit:
            picked.append(s)
    return [_series_chart(s) for s in picked[:4]]


def _findings(f: Findings, disks: dict[HostDisk, Any], ontap: Sequence[SeriesStats]) -> list[str]:
    out = [f'<h2 id="diagnoses">Diagnoses ({len(f.diagnoses)})</h2>']
    if not f.diagnoses:
        if f.evaluated_any:
            out.append(
                "<p>No diagnosis fired on the subjects that could be judged (see the inputs below).</p>"
            )
        else:
            out.append(
                '<p class="st-nothing">Nothing could be evaluated: no input had the counters any diagnosis needs.</p>'
            )
    for d in f.diagnoses:
        sev = str(d.get("severity") or "ok")
        subj = d.get("subject") or {}
        who = ", ".join(f"{k}={v}" for k, v in subj.items() if v) if isinstance(subj, dict) else str(subj)
        out.append(f'<div class="diag sev-{_e(sev)}" data-diagnosis="{_e(d.get("id"))}">')
        out.append(
            f"<b>{_e(d.get('title') or d.get('id'))}</b> <code>{_e(d.get('id'))}</code> — {_e(sev)} · {_e(who)}"
        )
        if d.get("score") is not None:
            out.append(f" · score {_e(fmt(float(d['score'])))}")
        until = d.get("until") or "-"
        still = " (still active at the end of the data)" if d.get("active_at_end") else ""
        out.append(f"<p>From {_e(d.get('since') or '-')} to {_e(until)}{_e(still)}.</p>")
        ev = d.get("evidence") or {}
        if ev:
            out.append("<table>")
            for k, v in ev.items():
                out.append(f"<tr><td>{_e(k)}</td><td class=n>{_e(_evidence(k, v))}</td></tr>")
            out.append("</table>")
        out.append(waterfall_html(d.get("waterfall")))
        if d.get("recommendation"):
            out.append(f"<p><b>What to do:</b> {_e(d['recommendation'])}</p>")
        if d.get("runbook"):
            out.append(f'<p class="muted">runbook: {_e(d["runbook"])}</p>')
        charts = _finding_charts(d, f, disks, ontap)
        if charts:
            out.append("<div class=charts>" + "".join(charts) + "</div>")
        out.append("</div>")
    return out


# ------------------------------------------------------------------ inputs
def _inputs(results: Sequence[Analysis]) -> list[str]:
    out = [
        '<h2 id="inputs">Inputs and what could be judged</h2>',
        "<table><tr><th>file</th><th>kind</th><th>samples</th><th>time (UTC)</th><th>status</th><th>details</th></tr>",
    ]
    for r in results:
        i = r.input
        st = i.get("status") or {}
        state = st.get("state", "")
        cls = {"error": "st-error", "nothing judged": "st-nothing"}.get(state, "")
        details: list[str] = []
        details += [f'<div class="st-error">error: {_e(e)}</div>' for e in st.get("errors") or []]
        if st.get("evaluated"):
            details.append(f"<div>evaluated: {_e(', '.join(st['evaluated']))}</div>")
        if st.get("analysis_intervals"):
            width = st.get("analysis_interval_seconds")
            each = f" of {fmt(width)} s (averaged rows)" if width else " (one per row)"
            details.append(
                f"<div class=muted>judged over {st['analysis_intervals']} intervals{_e(each)}, reader {_e(st.get('reader'))}</div>"
            )
        for did, why in (st.get("not_evaluated") or {}).items():
            details.append(f"<div class=muted>not evaluated: {_e(did)} — {_e(why)}</div>")
        for w in st.get("skipped") or []:
            details.append(f"<div class=muted>skipped: {_e(w)}</div>")
        if st.get("note"):
            details.append(f"<div class=muted>{_e(st['note'])}</div>")
        span = f"{i.get('start') or '-'} .. {i.get('end') or '-'}"
        out.append(
            f"<tr><td>{_e(i.get('path'))}</td><td>{_e(i.get('kind'))}</td><td class=n>{_e(i.get('samples'))}</td>"
            f"<td>{_e(span)}</td><td class='{cls}'>{_e(state)}</td><td>{''.join(details)}</td></tr>"
        )
    out.append("</table>")
    return out


def _banner(results: Sequence[Analysis], f: Findings) -> str:
    crit = sum(1 for d in f.diagnoses if d.get("state") == 2)
    warn = sum(1 for d in f.diagnoses if d.get("state") == 1)
    errors = [r for r in results if (r.input.get("status") or {}).get("state") == "error"]
    nothing = [r for r in results if (r.input.get("status") or {}).get("state") == "nothing judged"]
    judged = sum(len(v) for v in f.judged.values())
    if not f.evaluated_any:
        text, cls = (
            "Nothing could be evaluated: no diagnosis had the counters it needs in these inputs.",
            "bad",
        )
    elif f.diagnoses:
        text, cls = (
            f"{crit} critical and {warn} warning finding(s) over {judged} judged subject(s).",
            "bad" if crit else "",
        )
    else:
        text, cls = f"No diagnosis fired on the {judged} subject(s) that could be judged.", "ok"
    extra = []
    if errors:
        extra.append(f"{len(errors)} input(s) could not be read")
    if nothing:
        extra.append(f"{len(nothing)} input(s) let nothing be judged")
    more = (" " + "; ".join(extra) + " (see Inputs).") if extra else ""
    return f'<div class="banner {cls}" id="summary">{_e(text)}{_e(more)}</div>'


# ------------------------------------------------------------------ page
def render_html(results: Sequence[Analysis], findings: Findings) -> str:
    disks = _host_disks(findings)
    disk_keys = sorted(disks)
    ontap = sorted((s for s in findings.series if s.samples), key=_ontap_order)
    wanted = {id(s) for d in findings.diagnoses for s in ontap if s in _subject_series(d, ontap)}
    charted = [s for s in ontap if id(s) in wanted] + [s for s in ontap if id(s) not in wanted]
    charted = charted[:MAX_CHARTS]
    groups = _ontap_groups(charted)
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>sanlens analyze report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>sanlens analyze</h1>",
        f'<p class="muted">sanlens {_e(__version__)} · generated {_e(utc_text(time.time()))} UTC · '
        f"{len(results)} input(s)</p>",
        _banner(results, findings),
        _contents(disk_keys, groups, findings),
    ]
    out += _findings(findings, disks, ontap)
    out += _inputs(results)
    out += qos_section(findings.qos)
    if disk_keys:
        shown = disk_keys[:MAX_DISKS]
        out.append(f'<h2 id="hosts">Host disks ({len(disk_keys)}, {len(shown)} charted)</h2>')
        for host in sorted({h for h, _ in shown}):
            out.append(f'<h3 id="{_id("host", host)}">{_e(host)}</h3>')
            for h, disk in shown:
                if h != host:
                    continue
                m = findings.mappings.get((h, disk))
                where = (
                    f" → LUN {m.cluster}:{m.svm}:{m.lun} ({m.mapping})"
                    if m and m.lun
                    else " (not mapped to a LUN)"
                )
                q = f" · Q_eff {m.queue_depth} x {m.paths} paths" if m else ""
                out.append(f'<h4 id="{_id("disk", h, disk)}">disk {_e(disk)}{_e(where)}{_e(q)}</h4>')
                out.append(
                    "<div class=charts>"
                    + "".join(disk_charts(findings, (h, disk), disks[(h, disk)]))
                    + "</div>"
                )
    if ontap:
        out.append(
            f'<h2 id="ontap">ONTAP series ({len(ontap)} cooked, {len(charted)} charted; all are in the table)</h2>'
        )
        for title, anchor, series in groups:
            out.append(f'<h3 id="{anchor}">{_e(title)}</h3><div class=charts>')
            out += [_series_chart(s) for s in series]
            out.append("</div>")
    out += _table(results)
    out.append("</body></html>\n")
    return "\n".join(out)


def _subject_series(d: dict[str, Any], ontap: Sequence[SeriesStats]) -> list[SeriesStats]:
    subj = d.get("subject") or {}
    node, lun = subj.get("node"), subj.get("lun")
    return [
        s
        for s in ontap
        if (lun and s.object == "lun" and s.instance.endswith(lun))
        or (node and is_domain(s) and s.instance == node)
    ]


def _ontap_groups(series: Sequence[SeriesStats]) -> list[tuple[str, str, list[SeriesStats]]]:
    """Charts grouped by node (CPU domains, node counters), aggregate (disks), then by object."""
    groups: dict[tuple[int, str], list[SeriesStats]] = {}
    for s in series:
        if s.object in ("system:node", "sysstat"):
            key = (0, f"node {s.instance}")
        elif s.object.startswith("disk") or s.object in ("aggregate", "raid"):
            key = (1, f"aggregate / disks: {s.object}")
        else:
            key = (2, f"{s.object}")
        groups.setdefault(key, []).append(s)
    return [(title, _id("ontap", title), groups[(rank, title)]) for rank, title in sorted(groups)]


def _contents(
    disk_keys: Sequence[HostDisk], groups: Sequence[tuple[str, str, list[SeriesStats]]], f: Findings
) -> str:
    out = [
        '<nav id="contents"><b>Contents</b><ul>',
        f'<li><a href="#diagnoses">Diagnoses ({len(f.diagnoses)})</a></li>',
    ]
    out.append('<li><a href="#inputs">Inputs and what could be judged</a></li>')
    if f.qos.workloads or f.qos.totals:
        out.append(f'<li><a href="#qos">{_e(QOS_TITLE)}</a></li>')
    if disk_keys:
        out.append('<li><a href="#hosts">Hosts</a><ul>')
        for host in sorted({h for h, _ in disk_keys}):
            links = ", ".join(
                f'<a href="#{_id("disk", h, d)}">{_e(d)}</a>' for h, d in disk_keys[:MAX_DISKS] if h == host
            )
            out.append(f'<li><a href="#{_id("host", host)}">{_e(host)}</a>: disks {links}</li>')
        out.append("</ul></li>")
    if groups:
        out.append('<li><a href="#ontap">ONTAP</a><ul>')
        out += [f'<li><a href="#{anchor}">{_e(title)}</a></li>' for title, anchor, _s in groups]
        out.append("</ul></li>")
    out.append('<li><a href="#series">All series</a></li></ul></nav>')
    return "".join(out)


def _table(results: Sequence[Analysis]) -> list[str]:
    rows = [(r.input.get("path"), sj) for r in results for sj in r.series]
    if not rows:
        return []
    out = [
        f'<h2 id="series">All series ({len(rows)})</h2>',
        "<table><tr><th>series</th><th>file</th><th>samples</th><th>min</th><th>mean</th><th>p95</th><th>p99</th><th>max</th></tr>",
    ]
    for path, sj in rows:
        unit = sj.get("unit", "")
        cells = [_e(fmt_unit(sj.get(k), unit)) for k in ("min", "mean", "p95", "p99", "max")]
        out.append(
            f"<tr><td>{_e(sj.get('path'))}</td><td class=muted>{_e(path)}</td><td class=n>{_e(sj.get('samples'))}</td>"
            + "".join(f"<td class=n>{c}</td>" for c in cells)
            + "</tr>"
        )
    out.append("</table>")
    return out
