"""`sanlens analyze --format html`: one self-contained, printable file.

Inline CSS and inline SVG only: no script, no external stylesheet, font or image,
so the report opens offline and can be mailed as is (its only outside links are the
runbooks'). The title names the hosts, the ONTAP side and the time range. Order is what a
reader needs: what is wrong, grouped by incident as ``serve`` groups it (the cause first
with its evidence, time range, fix and the charts of its worst few subjects, then the
symptoms it explains, each as a table of subjects), what could not be judged and why
(every input's status), then the host disks (a table of all; charts of those not charted
with a finding: latency with the mapped LUN's on a log scale, idle, queue against Q_eff,
IOPS) and the ONTAP series, grouped by host, node and object in a contents list.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sanlens import __version__
from sanlens.analyze.analysis import Analysis
from sanlens.analyze.charts import fmt, fmt_unit, utc_text
from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.evidence_format import (
    TIMES,
    Zone,
    common_zone,
    disk_name,
    natural_key,
    parse_time,
    span_text,
)
from sanlens.analyze.html_charts import (
    HostDisk,
    Page,
    anchor_id,
    disk_charts,
    esc,
    host_disks,
    ontap_order,
    series_chart,
    subject_series,
)
from sanlens.analyze.html_findings import findings_section
from sanlens.analyze.incidents import Incident, incidents
from sanlens.analyze.ontap_series import SeriesStats
from sanlens.analyze.perfmon_summary import LogSummary
from sanlens.analyze.qos_report import TITLE as QOS_TITLE
from sanlens.analyze.qos_report import html_section as qos_section
from sanlens.analyze.series_units import series_unit
from sanlens.analyze.time_zones import parse_zone
from sanlens.errors import SanlensError
from sanlens.hosts.perfmon import PerfmonLog, PerfmonParseError

MAX_CHARTS = 60  # ONTAP charts: findings' subjects first, then banded series; all are in the table
MAX_DISKS = 128  # host disks charted (4 charts each); all are in the table

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#1d2330;background:#fff}
h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #dde}
h3{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .6em;border-bottom:1px solid #eef;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#667}
.incident{border-left:5px solid #888;padding:.3em .9em .6em;margin:1em 0;background:#fbfbfd}
.incident>h3{margin-top:.3em}.role{font-size:.8em;text-transform:uppercase;letter-spacing:.05em;color:#556;font-weight:600}
.diag{border-left:4px solid #888;padding:.4em .8em;margin:.8em 0;background:#f7f8fb;break-inside:avoid}
.diag.symptom{margin-left:1.5em;background:#fff}
table.ev th{font-weight:500;white-space:nowrap}table.ev td.help{color:#667;font-size:.9em}
table.subjects th{font-size:.9em}
.sev-critical{border-color:#c62828}.badge{font-weight:600}.badge.sev-critical{color:#c62828}.badge.sev-warning{color:#b35c00}.sev-warning{border-color:#ef8f00}.sev-ok{border-color:#2e7d32}
.banner{padding:.6em .9em;margin:1em 0;background:#fff4e5;border-left:4px solid #ef8f00}
.banner.ok{background:#edf7ee;border-color:#2e7d32}.banner.bad{background:#fdecea;border-color:#c62828}
.st-error{color:#c62828;font-weight:600}.st-nothing{color:#b35c00;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:1em}.chart{width:420px;break-inside:avoid}
.chart h4{font-size:.85em;margin:.2em 0;word-break:break-all;font-weight:600}.chart .muted{font-size:.8em}
nav ul{margin:.2em 0;padding-left:1.2em}nav li{margin:.1em 0}
svg text{font-size:10px;fill:#556}
@media print{body{margin:0;font-size:11px}nav{break-after:page}.charts{display:block}
.chart{display:inline-block;vertical-align:top;margin:0 .5em .5em 0}a{color:inherit;text-decoration:none}
h2{break-after:avoid}}
"""


# ------------------------------------------------------------------ inputs
def perfmon_zone(path: str) -> Zone | None:
    """A PerfMon log's local time zone, from its header (``(PDH-CSV 4.0) (<zone>)(<bias>)``).

    Read again from the file (one line); None for a stream that cannot be reopened."""
    try:
        if not Path(path).is_file():
            return None
        with PerfmonLog(path) as log:
            h = log.header
    except (OSError, PerfmonParseError):
        return None
    return Zone.offset(h.timezone or "local time", -h.bias_minutes)  # UTC = local + bias


def zones(results: Sequence[Analysis]) -> dict[int, Zone]:
    """The local zone of each input that knows one (a PerfMon header, or the zone it was read in), by index."""
    out: dict[int, Zone] = {}
    for n, r in enumerate(results):
        z: Zone | None = None
        if isinstance(r.detail, LogSummary):
            z = perfmon_zone(r.detail.path)
        elif r.input.get("zone"):
            name = str(r.input["zone"])
            try:
                z = Zone(name, parse_zone(name))
            except SanlensError:
                z = None
        if z is not None:
            out[n] = z
    return out


def _inputs(results: Sequence[Analysis], zone_of: Mapping[int, Zone]) -> list[str]:
    out = [
        '<h2 id="inputs">Inputs and what could be judged</h2>',
        "<table><tr><th>file</th><th>kind</th><th>samples</th><th>time</th><th>status</th><th>details</th></tr>",
    ]
    for n, r in enumerate(results):
        i = r.input
        st = i.get("status") or {}
        state = st.get("state", "")
        cls = {"error": "st-error", "nothing judged": "st-nothing"}.get(state, "")
        details: list[str] = []
        details += [f'<div class="st-error">error: {esc(e)}</div>' for e in st.get("errors") or []]
        if st.get("evaluated"):
            details.append(f"<div>evaluated: {esc(', '.join(st['evaluated']))}</div>")
        if st.get("analysis_intervals"):
            width = st.get("analysis_interval_seconds")
            each = f" of {fmt(width)} s (averaged rows)" if width else " (one per row)"
            details.append(
                f"<div class=muted>judged over {st['analysis_intervals']} intervals{esc(each)}, reader {esc(st.get('reader'))}</div>"
            )
        for did, why in (st.get("not_evaluated") or {}).items():
            details.append(f"<div class=muted>not evaluated: {esc(did)} — {esc(why)}</div>")
        for w in st.get("skipped") or []:
            details.append(f"<div class=muted>skipped: {esc(w)}</div>")
        for w in st.get("warnings") or []:
            details.append(f'<div class="st-error">warning: {esc(w)}</div>')
        if st.get("note"):
            details.append(f"<div class=muted>{esc(st['note'])}</div>")
        span = span_text(parse_time(i.get("start")), parse_time(i.get("end")), zone_of.get(n))
        out.append(
            f"<tr><td>{esc(i.get('path'))}</td><td>{esc(i.get('kind'))}</td><td class=n>{esc(i.get('samples'))}</td>"
            f"<td>{esc(span)}</td><td class='{cls}'>{esc(state)}</td><td>{''.join(details)}</td></tr>"
        )
    out.append("</table>")
    return out


def judged_subjects(f: Findings) -> tuple[int, int]:
    """Distinct subjects judged by any diagnosis: (all, host disks among them)."""
    keys: set[str] = set().union(*f.judged.values()) if f.judged else set()
    return len(keys), sum(1 for k in keys if "/disk " in k)


def _banner(results: Sequence[Analysis], f: Findings, incs: Sequence[Incident]) -> str:
    crit = sum(1 for i in incs if i.state == 2)
    warn = sum(1 for i in incs if i.state == 1)
    errors = [r for r in results if (r.input.get("status") or {}).get("state") == "error"]
    nothing = [r for r in results if (r.input.get("status") or {}).get("state") == "nothing judged"]
    total, disks = judged_subjects(f)
    judged = f"{total} subject(s)"
    if disks and total > disks:
        judged = f"{total} subjects ({disks} host disk(s), {total - disks} ONTAP object(s))"
    elif disks:
        judged = f"{disks} host disk(s)"
    if not f.evaluated_any:
        text, cls = (
            "Nothing could be evaluated: no diagnosis had the counters it needs in these inputs.",
            "bad",
        )
    elif f.diagnoses:
        text, cls = (
            f"{crit} critical and {warn} warning incident(s) ({len(f.diagnoses)} finding(s)) over {judged} judged.",
            "bad" if crit else "",
        )
    else:
        text, cls = f"No diagnosis fired on the {judged} that could be judged.", "ok"
    extra = []
    if errors:
        extra.append(f"{len(errors)} input(s) could not be read")
    if nothing:
        extra.append(f"{len(nothing)} input(s) let nothing be judged")
    more = (" " + "; ".join(extra) + " (see Inputs).") if extra else ""
    out = f'<div class="banner {cls}" id="summary">{esc(text)}{esc(more)}'
    if incs:
        out += "<ol class=top>"
        for k, inc in enumerate(incs[:5], 1):
            lead = inc.lead
            n = len({str(d.get("subject")) for d in lead.findings})
            also = (
                f"; explains {sum(len(g.findings) for g in inc.symptoms)} symptom finding(s)"
                if inc.causes and inc.symptoms
                else ""
            )
            out += (
                f'<li><a href="#incident-{k}">{esc(lead.title)}</a> — {esc(inc.severity)}, '
                f"{n} subject(s){esc(also)}</li>"
            )
        out += "</ol>"
    return out + "</div>"


# ------------------------------------------------------------------ title
def _hosts(results: Sequence[Analysis], f: Findings) -> list[str]:
    seen: dict[str, str] = {}
    for r in results:
        for h in r.input.get("hosts") or ([r.input["host"]] if r.input.get("host") else []):
            seen.setdefault(str(h).upper(), str(h))
    for h, _d in f.mappings:
        seen.setdefault(h.upper(), h)
    return sorted(seen.values(), key=natural_key)


def _ontap_names(f: Findings, results: Sequence[Analysis] = ()) -> list[str]:
    """The clusters the captures name; without one (offline captures), the nodes."""
    clusters = {str((d.get("subject") or {}).get("cluster") or "") for d in f.diagnoses}
    clusters |= {m.cluster for m in f.mappings.values() if m.lun}
    clusters |= {f.cluster}
    named = sorted(c for c in clusters if c and c != "offline")
    if named:
        return [f"cluster {c}" for c in named]
    nodes = sorted({s.instance for s in f.series if s.object in ("system:node", "sysstat")}, key=natural_key)
    if nodes:
        return [f"node {n}" for n in nodes]
    ontap = f.series or any(str(r.input.get("kind") or "").startswith("ontap") for r in results)
    return ["ONTAP"] if ontap else []


def time_range(results: Sequence[Analysis], f: Findings) -> tuple[float | None, float | None]:
    ts = [t for r in results for t in (parse_time(r.input.get("start")), parse_time(r.input.get("end"))) if t]
    for s in f.series:
        if s.points:
            ts += [s.points[0][0], s.points[-1][0]]
    ts += list(f.qos.intervals)  # QoS breakdowns: the time of each interval
    ts = [t for t in ts if t > 1e8 and math.isfinite(t)]
    return (min(ts), max(ts)) if ts else (None, None)


def title(results: Sequence[Analysis], f: Findings, zone: Zone | None) -> tuple[str, str]:
    """The page's heading and its time range: ``SQL01 · node sysstat-M`` and ``2025-03-02 10:00:00 - 10:04:00 UTC``."""
    names = _hosts(results, f) + _ontap_names(f, results)
    if len(names) > 6:
        names = [*names[:5], f"{len(names) - 5} more"]
    start, end = time_range(results, f)
    return " · ".join(names) or "sanlens analyze", span_text(start, end, zone)


# ------------------------------------------------------------------ page
def render_html(results: Sequence[Analysis], findings: Findings) -> str:
    disks = host_disks(findings)
    disk_keys = sorted(disks, key=lambda k: (natural_key(k[0]), natural_key(k[1])))
    ontap = sorted((s for s in findings.series if s.samples), key=ontap_order)
    wanted = {id(s) for d in findings.diagnoses for s in ontap if s in subject_series(d, ontap)}
    charted = [s for s in ontap if id(s) in wanted] + [s for s in ontap if id(s) not in wanted]
    charted = charted[:MAX_CHARTS]
    groups = _ontap_groups(charted)
    zone_of = zones(results)
    zone = common_zone(zone_of.values())
    page = Page(findings, disks, ontap, zone)
    incs = incidents(findings.diagnoses)
    heading, span = title(results, findings, zone)
    body = findings_section(findings, page, incs)  # first: it notes which disks its charts show
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(heading)}{esc(' · ' + span if span != '-' else '')} · sanlens</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{esc(heading)}</h1>",
        f'<p class="range"><b>{esc(span if span != "-" else "no time in the inputs")}</b></p>',
        f'<p class="muted">sanlens {esc(__version__)} analyze · generated {esc(utc_text(time.time()))} UTC · '
        f"{len(results)} input(s)</p>",
        _banner(results, findings, incs),
        _contents(disk_keys, groups, findings, incs, page),
    ]
    out += body
    out += _inputs(results, zone_of)
    out += qos_section(findings.qos)
    if disk_keys:
        out += _host_section(disk_keys, disks, page)
    if ontap:
        out.append(
            f'<h2 id="ontap">ONTAP series ({len(ontap)} cooked, {len(charted)} charted; all are in the table)</h2>'
        )
        for gtitle, anchor, series in groups:
            out.append(f'<h3 id="{anchor}">{esc(gtitle)}</h3><div class=charts>')
            out += [series_chart(s) for s in series]
            out.append("</div>")
    out += _table(results)
    out.append("</body></html>\n")
    return "\n".join(out)


def _host_section(disk_keys: Sequence[HostDisk], disks: dict[HostDisk, Any], p: Page) -> list[str]:
    """Every disk in a table (its LUN, Q_eff, worst finding); charts of the disks not charted with a finding."""
    f = p.f
    worst: dict[HostDisk, tuple[int, str]] = {}
    for d in f.diagnoses:
        subj = d.get("subject") or {}
        key = (subj.get("host", ""), subj.get("disk", ""))
        state = int(d.get("state") or 0)
        if key in disks and state > worst.get(key, (0, ""))[0]:
            worst[key] = (state, str(d.get("title") or d.get("id")))
    shown = [k for k in disk_keys if k not in p.charted][:MAX_DISKS]
    out = [
        f'<h2 id="hosts">Host disks ({len(disk_keys)}; {len(p.charted)} charted with their findings, '
        f"{len(shown)} below)</h2>"
    ]
    for host in sorted({h for h, _ in disk_keys}, key=natural_key):
        out.append(f'<h3 id="{anchor_id("host", host)}">{esc(host)}</h3>')
        out.append(
            "<table class=subjects><tr><th>disk</th><th>LUN</th><th>Q_eff</th><th>worst finding</th><th>charts</th></tr>"
        )
        for h, disk in disk_keys:
            if h != host:
                continue
            m = f.mappings.get((h, disk))
            lun = f"{m.cluster}:{m.svm}:{m.lun} ({m.mapping})" if m and m.lun else "not mapped to a LUN"
            q = f"{m.queue_depth} {TIMES} {m.paths} path(s)" if m else "-"
            state, what = worst.get((h, disk), (0, ""))
            sev = {2: "critical", 1: "warning"}.get(state, "")
            anchor = p.charted.get((h, disk))
            link = (
                f'<a href="#{anchor}">with its finding</a>'
                if anchor
                else (f'<a href="#{anchor_id("disk", h, disk)}">below</a>' if (h, disk) in shown else "-")
            )
            out.append(
                f"<tr><td>{esc(disk_name(disk, p.drives.get((h, disk), ())))}</td><td>{esc(lun)}</td><td>{esc(q)}</td>"
                f'<td class="badge sev-{sev}">{esc(f"{sev}: {what}" if sev else "none")}</td><td>{link}</td></tr>'
            )
        out.append("</table>")
        for h, disk in shown:
            if h != host:
                continue
            m = f.mappings.get((h, disk))
            where = f" → LUN {m.svm}:{m.lun}" if m and m.lun else ""
            name = disk_name(disk, p.drives.get((h, disk), ()))
            out.append(f'<h4 id="{anchor_id("disk", h, disk)}">{esc(name)}{esc(where)}</h4>')
            out.append("<div class=charts>" + "".join(disk_charts(f, (h, disk), disks[(h, disk)])) + "</div>")
    return out


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
    return [(title, anchor_id("ontap", title), groups[(rank, title)]) for rank, title in sorted(groups)]


def _contents(
    disk_keys: Sequence[HostDisk],
    groups: Sequence[tuple[str, str, list[SeriesStats]]],
    f: Findings,
    incs: Sequence[Incident],
    p: Page,
) -> str:
    out = [
        '<nav id="contents"><b>Contents</b><ul>',
        f'<li><a href="#diagnoses">Findings ({len(incs)} incident(s))</a></li>',
    ]
    out.append('<li><a href="#inputs">Inputs and what could be judged</a></li>')
    if f.qos.workloads or f.qos.totals:
        out.append(f'<li><a href="#qos">{esc(QOS_TITLE)}</a></li>')
    if disk_keys:
        out.append('<li><a href="#hosts">Host disks</a><ul>')
        for host in sorted({h for h, _ in disk_keys}, key=natural_key):
            n = sum(1 for h, _d in disk_keys if h == host)
            out.append(f'<li><a href="#{anchor_id("host", host)}">{esc(host)}</a>: {n} disk(s)</li>')
        out.append("</ul></li>")
    if groups:
        out.append('<li><a href="#ontap">ONTAP</a><ul>')
        out += [f'<li><a href="#{anchor}">{esc(title)}</a></li>' for title, anchor, _s in groups]
        out.append("</ul></li>")
    out.append('<li><a href="#series">All series</a></li></ul></nav>')
    return "".join(out)


def _table(results: Sequence[Analysis]) -> list[str]:
    series_rows = [(r.input.get("path"), sj) for r in results for sj in r.series]
    if not series_rows:
        return []
    out = [
        f'<h2 id="series">All series ({len(series_rows)})</h2>',
        "<table><tr><th>series</th><th>file</th><th>samples</th><th>min</th><th>mean</th><th>p95</th><th>p99</th><th>max</th></tr>",
    ]
    for path, sj in series_rows:
        unit = series_unit(sj)
        unit = "" if unit == "count" else unit  # a queue length is a plain number
        cells = [esc(fmt_unit(sj.get(k), unit)) for k in ("min", "mean", "p95", "p99", "max")]
        out.append(
            f"<tr><td>{esc(sj.get('path'))}</td><td class=muted>{esc(path)}</td><td class=n>{esc(sj.get('samples'))}</td>"
            + "".join(f"<td class=n>{c}</td>" for c in cells)
            + "</tr>"
        )
    out.append("</table>")
    return out
