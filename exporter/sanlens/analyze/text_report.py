"""`sanlens analyze`'s text report of its inputs: each input's status, then its counters' statistics
in human units with a unit column (ms, MB/s, IOPS, %), never in scientific notation."""

from __future__ import annotations

import math
from typing import Any, TextIO

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.charts import fmt, human
from sanlens.analyze.series_units import series_unit


def _num(v: float | None, factor: float = 1.0) -> str:
    """A statistic in the unit column's unit, in plain decimals (no scientific notation)."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return "overflow" if math.isinf(v) else "-"
    x = v * factor
    if not math.isfinite(x):
        return "overflow"
    text = fmt(x)
    return f"{x:.6f}".rstrip("0").rstrip(".") if "e" in text else text


def render_text(results: list[Analysis], out: TextIO) -> None:
    for r in results:
        i = r.input
        out.write(f"{i['path']}  ({i['kind']})\n")
        if i.get("objects") is not None:
            what = f"objects: {', '.join(i['objects']) or '-'}   instances: {i.get('instances')}"
        else:
            what = f"hosts: {', '.join(i.get('hosts') or []) or '-'}   counters: {i.get('counters')}"
        out.write(
            f"  {what}   samples: {i.get('samples')}   {i.get('start') or '-'} .. {i.get('end') or '-'}\n"
        )
        status_text(i.get("status") or {}, out)
        out.write("\n")
        if not r.series:
            continue
        perfmon = "p95" in r.series[0]
        head = (
            ("counter", "unit", "samples", "min", "max", "mean", "p95", "p99")
            if perfmon
            else ("counter", "unit", "samples", "min", "max", "mean")
        )
        rows = [head]
        for s in r.series:
            factor, label = human(series_unit(s))
            cells = [s["path"], label or "-", str(s["samples"])]
            cells += [_num(s.get(k), factor) for k in head[3:]]
            rows.append(tuple(cells))
        widths = [max(len(row[k]) for row in rows) for k in range(len(head))]
        widths[0] = min(widths[0], 90)
        for n, row in enumerate(rows):
            name = row[0] if len(row[0]) <= widths[0] else "…" + row[0][-(widths[0] - 1) :]
            cells = [name.ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            out.write("  " + "  ".join(cells).rstrip() + "\n")
            if n == 0:
                out.write("  " + "  ".join("-" * w for w in widths) + "\n")
        out.write("\n")


def status_text(st: dict[str, Any], out: TextIO) -> None:
    if not st:
        return
    out.write(f"  status: {st.get('state')}")
    if st.get("reader"):
        out.write(f"   reader: {st['reader']}")
    if st.get("analysis_intervals"):
        width = st.get("analysis_interval_seconds")
        n = st["analysis_intervals"]
        out.write(f"   judged over {n} interval{'' if n == 1 else 's'}")
        out.write(f" of {width:g} s (averaged)" if width else " (one per row)")
    out.write("\n")
    for e in st.get("errors") or []:
        out.write(f"  error: {e}\n")
    if st.get("evaluated"):
        out.write(f"  evaluated: {', '.join(st['evaluated'])}\n")
    for did, why in (st.get("not_evaluated") or {}).items():
        out.write(f"  not evaluated: {did}: {why}\n")
    for w in st.get("skipped") or []:
        out.write(f"  skipped: {w}\n")
    for w in st.get("warnings") or []:
        out.write(f"  warning: {w}\n")
    if st.get("note"):
        out.write(f"  note: {st['note']}\n")
