"""The dashboard envelope, its variables and the grid: what every sanlens dashboard has alike.

Uid, tags and the runbook base come from the mixin config, so a site that
overrides them for the rules gets the same values on its dashboards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mixin.config import MixinConfig

from . import Json
from .panels import DS, panel, target

# title, description, expr, legend, and the panel settings this one sets apart from its neighbours
Variant = tuple[str, str, str, str, Json]
SCHEMA_VERSION = 39
GRID_W = 24


class Layout:
    """Places panels left to right on Grafana's 24-column grid, wrapping to a new line."""

    def __init__(self) -> None:
        self.panels: list[Json] = []
        self.x = self.y = self.line_h = 0

    def row(self, title: str, repeat: str | None = None) -> None:
        self.newline()
        p: Json = {"type": "row", "title": title, "collapsed": False, "panels": []}
        if repeat:
            p["repeat"] = repeat
        p["gridPos"] = {"h": 1, "w": GRID_W, "x": 0, "y": self.y}
        self.panels.append(p)
        self.y += 1

    def newline(self) -> None:
        self.y += self.line_h
        self.x = self.line_h = 0

    def add(self, p: Json, w: int, h: int) -> None:
        if self.x + w > GRID_W:
            self.newline()
        p["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.line_h = max(self.line_h, h)
        self.panels.append(p)

    def add_each(self, kind: str, w: int, h: int, rows: Iterable[Variant], **common: Any) -> None:
        """Panels alike but for their title, description, one query and a few settings; stats show now."""
        for title, description, expr, legend, own in rows:
            t = target(expr, legend, instant=kind in ("stat", "bargauge"))
            self.add(panel(kind, title, description, t, **common, **own), w, h)

    def numbered(self) -> list[Json]:
        for i, p in enumerate(self.panels, start=1):
            p["id"] = i
        return self.panels


# ------------------------------------------------------------------ variables
@dataclass(frozen=True)
class Var:
    """A label variable, read from ``metric`` and narrowed by every variable before it in its chain."""

    name: str
    label: str
    metric: str
    extra: str = ""  # further matchers, e.g. 'lun!=""'


CLUSTER = Var("cluster", "Cluster", "sanlens_ontap_cluster_info")


def query_var(name: str, label: str, query: str) -> Json:
    return {
        "type": "query",
        "name": name,
        "label": label,
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-variable"},
        "definition": query,
        "refresh": 2,  # on time range change
        "multi": True,
        "includeAll": True,
        "current": {},
        "options": [],
        "regex": "",
        "sort": 1,
        "hide": 0,
    }


def chained(*chain: Var) -> list[Json]:
    """Cluster first, then each variable filtered by all before it (Grafana refreshes them in order)."""
    out: list[Json] = []
    before: list[str] = []
    for v in (CLUSTER, *chain):
        matchers = ", ".join([*before, v.extra] if v.extra else before)
        selector = f"{v.metric}{{{matchers}}}" if matchers else v.metric
        out.append(query_var(v.name, v.label, f"label_values({selector}, {v.name})"))
        before.append(f'{v.name}=~"${v.name}"')
    return out


def runbook_var(cfg: MixinConfig) -> Json:
    """Hidden, so a table cell can link a diagnosis id to its runbook wherever the site serves them."""
    base = cfg.runbook_base_url
    return {
        "type": "textbox",
        "name": "runbook_base",
        "label": "Runbook base URL",
        "description": "Where docs/runbooks/<diagnosis>.md is published (the Helm value alerting.runbookBaseURL).",
        "query": base,
        "current": {"text": base, "value": base},
        "hide": 2,
    }


def datasource_var() -> Json:
    return {
        "type": "datasource",
        "name": "datasource",
        "label": "Data source",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "options": [],
    }


# ------------------------------------------------------------------ the envelope
def dashboard(
    cfg: MixinConfig, name: str, title: str, description: str, variables: list[Json], layout: Layout
) -> Json:
    """A provisionable dashboard: uid ``<prefix><name>``, a dropdown to its siblings by the mixin's tags."""
    tags = list(cfg.dashboard_tags)
    return {
        "uid": cfg.dashboard_uid_prefix + name,
        "title": title,
        "description": description,
        "tags": [*tags, "san", "ontap"],
        "editable": False,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "refresh": "1m",
        "timezone": "browser",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": []},
        "links": [
            {
                "type": "dashboards",
                "tags": tags,
                "asDropdown": True,
                "title": "sanlens",
                "includeVars": True,
                "keepTime": True,
            }
        ],
        "templating": {"list": [datasource_var(), *variables]},
        "panels": layout.numbered(),
    }
