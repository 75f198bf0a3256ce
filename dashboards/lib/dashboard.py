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


@dataclass(frozen=True)
class TopVar:
    """A variable offering only the worst ``$topn`` subjects, ranked by a PromQL expression.

    ``rank`` is an instant expression with one series per subject and the ``name`` label (e.g.
    ``max by (lun) (lun:…:mean5m{…})``); every variable before it in the chain narrows it. Its
    "All" is those N values, so a repeated row or a ``=~"$lun"`` regex never lists the estate.
    """

    name: str
    label: str
    rank: str  # "{sel}" is replaced by the matchers of the variables before it
    uses: tuple[str, ...] | None = None  # the earlier variables that narrow it (None: all of them)


CLUSTER = Var("cluster", "Cluster", "sanlens_ontap_cluster_info")
TOPN = "topn"


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


def chained(*chain: Var | TopVar, top_n: int | None = None) -> list[Json]:
    """Cluster first, then each variable filtered by all before it (Grafana refreshes them in order).

    With a :class:`TopVar` in the chain, a ``topn`` variable (how many, ``top_n`` by default) comes first."""
    out: list[Json] = []
    before: list[str] = []
    for v in (CLUSTER, *chain):
        if isinstance(v, TopVar):
            narrow = [m for m in before if v.uses is None or m.split("=", 1)[0] in v.uses]
            ranked = f"topk(${TOPN}, {v.rank.replace('{sel}', ', '.join(narrow))})"
            var = query_var(v.name, v.label, f"query_result({ranked})")
            var["regex"] = f'/{v.name}="([^"]+)"/'
            var["sort"] = 0  # worst first, as topk returns them
            out.append(var)
        else:
            matchers = ", ".join([*before, v.extra] if v.extra else before)
            selector = f"{v.metric}{{{matchers}}}" if matchers else v.metric
            out.append(query_var(v.name, v.label, f"label_values({selector}, {v.name})"))
        before.append(f'{v.name}=~"${v.name}"')
        if v is CLUSTER and any(isinstance(x, TopVar) for x in chain):
            out.append(topn_var(top_n or 10))
    return out


def topn_var(default: int) -> Json:
    """How many subjects the top-N variables offer (and a "All" selects): the worst N."""
    options = sorted({5, 10, 20, 50, default})
    return {
        "type": "custom",
        "name": TOPN,
        "label": "Top N",
        "description": "How many of the worst subjects the LUN, volume, disk and host variables offer.",
        "query": ",".join(str(n) for n in options),
        "current": {"text": str(default), "value": str(default)},
        "options": [{"text": str(n), "value": str(n), "selected": n == default} for n in options],
        "multi": False,
        "includeAll": False,
        "hide": 0,
    }


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
