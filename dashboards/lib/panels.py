"""Grafana panels: one builder for every kind, with the defaults all sanlens panels share.

A panel differs from its neighbours by its queries, unit, range and threshold
steps; everything else (legend, tooltip, colour mode, line style) is decided
here once, per kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mixin.config import MixinConfig

from . import Json
from .promql import configured
from .thresholds import GREEN, bands, steps

DS = {"type": "prometheus", "uid": "${datasource}"}
REDUCE_LAST = {"calcs": ["lastNotNull"], "fields": "", "values": False}
OPTIONS: dict[str, Json] = {
    "timeseries": {
        "legend": {
            "displayMode": "table",
            "placement": "bottom",
            "showLegend": True,
            "calcs": ["lastNotNull", "max"],
        },
        "tooltip": {"mode": "multi", "sort": "desc"},
    },
    "stat": {
        "reduceOptions": REDUCE_LAST,
        "colorMode": "background",
        "graphMode": "none",
        "textMode": "value",
    },
    "bargauge": {
        "reduceOptions": REDUCE_LAST,
        "displayMode": "gradient",
        "orientation": "horizontal",
        "showUnfilled": True,
    },
    "table": {"showHeader": True, "cellHeight": "sm"},
    "heatmap": {
        "calculate": True,
        "calculation": {"yBuckets": {"mode": "count", "value": "10"}},
        "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
        "yAxis": {},  # the panel's unit, set per panel
        "cellGap": 1,
        "tooltip": {"mode": "single", "yHistogram": True},
        "legend": {"show": True},
    },
}


def target(expr: str, legend: str = "", instant: bool = False, table: bool = False) -> Json:
    t: Json = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "range": not instant}
    if instant:
        t["instant"] = True
    if table:
        t["format"] = "table"
    return t


def instant(expr: str, legend: str = "") -> Json:
    """A query for a panel that shows the value now (stat, bar gauge)."""
    return target(expr, legend, instant=True)


def panel(
    kind: str,
    title: str,
    description: str,
    *targets: Json,
    unit: str,
    thresholds: Json | None = None,
    min_: float | None = None,
    max_: float | None = None,
    decimals: int | None = None,
    overrides: Sequence[Json] = (),
    options: Json | None = None,
    transformations: Sequence[Json] = (),
) -> Json:
    """A panel of ``kind``; a time series with thresholds draws them as dashed lines."""
    defaults: Json = {"unit": unit, "thresholds": thresholds or steps(GREEN)}
    limits = {"min": min_, "max": max_, "decimals": decimals}
    defaults.update({k: v for k, v in limits.items() if v is not None})
    if kind == "timeseries":
        defaults["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 0,
            "showPoints": "never",
            "spanNulls": False,
            "thresholdsStyle": {"mode": "dashed" if thresholds else "off"},
        }
        defaults["color"] = {"mode": "palette-classic"}
    elif kind == "table":
        defaults["custom"] = {"align": "auto", "cellOptions": {"type": "auto"}}
    else:
        defaults["color"] = {"mode": "thresholds"}
    opts: Json = dict(OPTIONS[kind])
    if kind == "heatmap":
        opts["yAxis"] = {"unit": unit, "axisPlacement": "left"}
    opts.update(options or {})
    p: Json = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "targets": [{**t, "refId": ref} for t, ref in zip(targets, "ABCDEFGHIJKL", strict=False)],
        "fieldConfig": {"defaults": defaults, "overrides": list(overrides)},
        "options": opts,
    }
    if transformations:
        p["transformations"] = list(transformations)
    return p


# ------------------------------------------------------------------ tables
@dataclass(frozen=True)
class Column:
    """One query of a table; its value field is shown as ``name`` (None: as Prometheus names it)."""

    expr: str
    name: str | None = None
    unit: str | None = None
    props: tuple[Json, ...] = ()


def table(
    title: str,
    description: str,
    *columns: Column,
    hide: Sequence[str] = ("Time",),
    overrides: Sequence[Json] = (),
    options: Json | None = None,
) -> Json:
    """Instant queries merged into one row per series, each value column renamed."""
    named = [
        rename(f"Value #{ref}", c.name, c.unit, c.props)
        for c, ref in zip(columns, "ABCDEFGHIJKL", strict=False)
        if c.name
    ]
    return panel(
        "table",
        title,
        description,
        *(target(c.expr, instant=True, table=True) for c in columns),
        unit="none",
        overrides=[*named, *overrides],
        options=options,
        transformations=[
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": dict.fromkeys(hide, True)}},
        ],
    )


def drill(table_panel: Json, title: str, url: str) -> Json:
    """Every cell of the table links to ``url`` (``${__data.fields.<label>}`` fills in its row's subject)."""
    table_panel["fieldConfig"]["defaults"]["links"] = [{"title": title, "url": url}]
    return table_panel


def rename(field: str, name: str, unit: str | None = None, extra: Iterable[Json] = ()) -> Json:
    props: list[Json] = [{"id": "displayName", "value": name}]
    if unit:
        props.append({"id": "unit", "value": unit})
    props.extend(extra)
    return {"matcher": {"id": "byName", "options": field}, "properties": props}


def mapped(cell: str, *values: tuple[str, str, str]) -> tuple[Json, ...]:
    """Cell properties that show raw values (raw, text, colour) as coloured words."""
    options = {raw: {"text": text, "color": color, "index": i} for i, (raw, text, color) in enumerate(values)}
    return (
        {"id": "mappings", "value": [{"type": "value", "options": options}]},
        {"id": "custom.cellOptions", "value": {"type": cell}},
    )


def gauge_cell(max_: float) -> tuple[Json, ...]:
    return (
        {"id": "custom.cellOptions", "value": {"type": "gauge", "mode": "basic"}},
        {"id": "min", "value": 0},
        {"id": "max", "value": max_},
    )


UP = mapped("color-text", ("0", "down", "red"), ("1", "up", "green"))


# ------------------------------------------------------------------ series overrides
def series(name: str, *props: Json) -> Json:
    """Override for the series whose display name matches a regex (threshold or config lines)."""
    return {"matcher": {"id": "byRegexp", "options": name}, "properties": list(props)}


DASHED = {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}


def fixed(color: str) -> Json:
    return {"id": "color", "value": {"mode": "fixed", "fixedColor": color}}


def against_thresholds(
    cfg: MixinConfig,
    title: str,
    description: str,
    *targets: Json,
    diagnosis: str,
    names: Sequence[str],
    unit: str,
) -> Json:
    """A time series drawn against a diagnosis's warning and critical thresholds: the defaults as bands,
    and the exporter's live values (a site's override) as dashed ``<level> (configured)`` lines."""
    lines = [
        target(configured(diagnosis, name), f"{level} (configured)")
        for name, level in zip(names, ("warning", "critical"), strict=True)
    ]
    return panel(
        "timeseries",
        title,
        description,
        *targets,
        *lines,
        unit=unit,
        thresholds=bands(cfg, diagnosis, *names),
        min_=0,
        overrides=[series(".*configured.*", DASHED)],
    )
