"""The findings part of the HTML report: incidents as ``serve`` groups them, the cause first with its
evidence, time range, fix and the charts of its worst few subjects, then the symptoms it explains,
each diagnosis's subjects as a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sanlens.analyze.diagnoses import Findings
from sanlens.analyze.evidence_format import (
    rows,
    runbook_url,
)
from sanlens.analyze.evidence_format import value as evidence_value
from sanlens.analyze.html_charts import Page, band_for, disk_charts, esc, is_domain, series_chart
from sanlens.analyze.incidents import Group, Incident
from sanlens.analyze.ontap_series import SeriesStats
from sanlens.analyze.waterfall_report import html_block as waterfall_html

MAX_SUBJECT_ROWS = 200  # subjects listed per diagnosis of an incident; JSON has them all
MAX_SUBJECT_CHARTS = 3  # subjects of one incident charted (its worst); all are in its table


def _finding_charts(d: dict[str, Any], p: Page) -> list[str]:
    subj = d.get("subject") or {}
    host, disk = subj.get("host"), subj.get("disk")
    if host and disk and (host, disk) in p.disks:
        return disk_charts(p.f, (host, disk), p.disks[(host, disk)])
    node, lun, volume = subj.get("node"), subj.get("lun"), subj.get("volume")
    picked: list[SeriesStats] = []
    for s in p.ontap:
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
    return [series_chart(s) for s in picked[:4]]


def _evidence_table(d: Mapping[str, Any]) -> str:
    ev = d.get("evidence") or {}
    if not ev:
        return ""
    out = ["<table class=ev>"]
    for r in rows(str(d.get("id")), ev):
        out.append(
            f'<tr><th title="evidence {esc(r.key)}">{esc(r.label)}</th><td class=n>{esc(r.value)}</td>'
            f"<td class=help>{esc(r.help)}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _runbook(d: Mapping[str, Any]) -> str:
    rb = d.get("runbook")
    if not rb:
        return ""
    return (
        f'<p class="muted">Runbook: <a href="{esc(runbook_url(str(rb)))}">{esc(d.get("title") or rb)}</a></p>'
    )


def _subjects_table(g: Group, p: Page) -> str:
    """Every subject of one diagnosis in an incident, worst first, with its key evidence."""
    keys = g.key_evidence()
    shown = g.findings[:MAX_SUBJECT_ROWS]
    spans = [p.span(d) for d in shown]
    same = len(set(spans)) == 1  # one time range for all: said once, not per row
    head = "".join(f"<th>{esc(r.label)}</th>" for r in rows(g.id, dict.fromkeys(keys, 0.0)))
    when = "" if same else "<th>when</th>"
    out = [f"<table class=subjects><tr><th>subject</th><th>severity</th>{when}{head}</tr>"]
    for d, span in zip(shown, spans, strict=True):
        ev = d.get("evidence") or {}
        sev = str(d.get("severity") or "ok")
        cells = "".join(f"<td class=n>{esc(evidence_value(g.id, k, ev.get(k)))}</td>" for k in keys)
        at = "" if same else f"<td>{esc(span)}</td>"
        out.append(
            f"<tr><td>{esc(p.subject(d))}</td><td class='badge sev-{esc(sev)}'>{esc(sev)}</td>{at}{cells}</tr>"
        )
    out.append("</table>")
    if same:
        out.append(f"<p class=muted>All {len(shown)} subjects: {esc(spans[0])}.</p>")
    if len(g.findings) > MAX_SUBJECT_ROWS:
        out.append(
            f"<p class=muted>{len(g.findings) - MAX_SUBJECT_ROWS} more subject(s) are in --format json.</p>"
        )
    return "".join(out)


def _group(g: Group, p: Page, lead: bool) -> list[str]:
    """One diagnosis of an incident: its worst subject in full, every subject in a table."""
    d = g.worst
    n = len(g.findings)
    role = "cause" if g.role == "cause" else "symptom"
    out = [f'<div class="diag {role} sev-{esc(g.severity)}" data-diagnosis="{esc(g.id)}" data-role="{role}">']
    many = f" on {n} subjects" if n > 1 else ""
    title = f"<b>{esc(g.title)}</b>" if not lead else ""
    out.append(
        f"<p><span class=role>{'cause' if role == 'cause' else 'symptom'}</span> {title} "
        f'<span class="badge sev-{esc(g.severity)}">{esc(g.severity)}</span>{esc(many)}</p>'
    )
    worst = "Worst: " if n > 1 else ""
    out.append(f"<p>{esc(worst)}<b>{esc(p.subject(d))}</b> · {esc(p.span(d))}</p>")
    if d.get("recommendation"):
        out.append(f"<p><b>What to do:</b> {esc(d['recommendation'])}</p>")
    out.append(_evidence_table(d))
    if lead:  # a symptom's waterfall is its cause's, shown above
        out.append(waterfall_html(d.get("waterfall")))
    if n > 1:
        out.append(_subjects_table(g, p))
    out.append(_runbook(d))
    out.append("</div>")
    return out


def _incident_charts(inc: Incident, p: Page, anchor: str) -> list[str]:
    """Charts of the incident's worst few subjects, each subject once (a symptom on a charted disk is not redrawn)."""
    out: list[str] = []
    seen: set[str] = set()
    for d in sorted(
        inc.findings, key=lambda d: (-int(d.get("state") or 0), 0 if d.get("role") != "symptom" else 1)
    ):
        name = p.subject(d)
        if name in seen or len(seen) >= MAX_SUBJECT_CHARTS:
            continue
        charts = _finding_charts(d, p)
        if not charts:
            continue
        seen.add(name)
        subj = d.get("subject") or {}
        if subj.get("host") and subj.get("disk"):
            p.charted.setdefault((subj["host"], subj["disk"]), anchor)
        out.append(f"<h4>{esc(name)}</h4><div class=charts>{''.join(charts)}</div>")
    subjects = len({p.subject(d) for d in inc.findings})
    if out and subjects > len(seen):
        out.append(
            f"<p class=muted>Charts of the worst {len(seen)} of {subjects} subjects; every subject is in the tables.</p>"
        )
    return out


def findings_section(f: Findings, p: Page, incs: Sequence[Incident]) -> list[str]:
    n = len(f.diagnoses)
    out = [f'<h2 id="diagnoses">Findings: {len(incs)} incident(s), {n} finding(s)</h2>']
    if not f.diagnoses:
        if f.evaluated_any:
            out.append(
                "<p>No diagnosis fired on the subjects that could be judged (see the inputs below).</p>"
            )
        else:
            out.append(
                '<p class="st-nothing">Nothing could be evaluated: no input had the counters any diagnosis needs.</p>'
            )
    for k, inc in enumerate(incs, 1):
        anchor = f"incident-{k}"
        lead = inc.lead
        subjects = len({p.subject(d) for d in lead.findings})
        on = f" on {subjects} subjects" if subjects > 1 else f" · {p.subject(lead.worst)}"
        out.append(
            f'<section class="incident sev-{esc(inc.severity)}" id="{anchor}" data-incident="{esc(inc.key)}">'
        )
        out.append(
            f"<h3>{k}. {esc(lead.title)} — <span class='badge sev-{esc(inc.severity)}'>{esc(inc.severity)}</span>"
            f"{esc(on)}</h3>"
        )
        if inc.causes and inc.symptoms:
            names = ", ".join(f"{g.title} ({len(g.findings)})" for g in inc.symptoms)
            out.append(f"<p class=muted>Explains: {esc(names)}.</p>")
        elif not inc.causes:
            out.append("<p class=muted>No cause on its I/O path explains it in these captures.</p>")
        out += _group(lead, p, lead=True)
        out += _incident_charts(inc, p, anchor)
        rest = [g for g in inc.groups if g is not lead]
        if rest and inc.causes:
            out.append("<h4>Symptoms this cause explains</h4>")
        for g in rest:
            out += _group(g, p, lead=False)
        out.append("</section>")
    return out
