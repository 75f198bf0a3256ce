"""Dashboard queries as Grafana would run them: variables resolved against a real Prometheus, in order.

Each ``label_values(selector, label)`` runs against ``/api/v1/label/<label>/values`` with
``match[]``; each ``query_result(expr)`` (the top-N variables) as an instant query whose
series the variable's regex reduces to values; a custom variable keeps its default. Earlier
variables are substituted first; multi values become a regex ``(a|b)`` with Grafana's
escaping; a repeated row is checked once per value of its variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from grafana_vars import substitute
from harness import PrometheusHandle

SCRAPE_S = 2
BUILTINS = {
    "__rate_interval": f"{4 * SCRAPE_S}s",  # Grafana: max(4 x scrape interval, interval + scrape)
    "__interval": f"{SCRAPE_S}s",
    "__interval_ms": str(SCRAPE_S * 1000),
    "__range": "60s",
    "__range_s": "60",
}


def builtins(scrape_s: float) -> dict[str, str]:
    return {**BUILTINS, "__rate_interval": f"{4 * scrape_s:g}s", "__interval": f"{scrape_s:g}s"}


def query_result_text(r: dict[str, Any]) -> str:
    """One series as Grafana's query_result() shows it to the variable regex: name{labels} value ts."""
    labels = dict(r["metric"])
    name = labels.pop("__name__", "")
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}} {r['value'][1]} {r['value'][0]}"


def regex_escape(value: str) -> str:
    """Grafana's escaping of a multi-value Prometheus variable (a backslash pair before regex specials)."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), value)


def fmt(values: list[str], multi: bool) -> str:
    if not multi:
        return values[0].replace("\\", "\\\\").replace("'", "\\'")
    escaped = [regex_escape(v) for v in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


@dataclass
class Check:
    dashboard: str
    panel: str
    ref: str
    repeat: str  # "var=value" for a repeated row, else ""
    expr: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.dashboard, self.panel, self.ref)

    def __str__(self) -> str:
        where = f" [{self.repeat}]" if self.repeat else ""
        return f"{self.dashboard} / {self.panel} / {self.ref}{where}: {self.expr}"


def resolve_variables(
    prom: PrometheusHandle, d: dict[str, Any], base: dict[str, str] | None = None
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Formatted value of every variable, and the raw values of query variables (as Grafana would get them)."""
    formatted = dict(base or BUILTINS)
    raw: dict[str, list[str]] = {}
    for v in d["templating"]["list"]:
        name = v["name"]
        if v["type"] == "datasource":
            formatted[name] = "prometheus"
            continue
        if v["type"] in ("textbox", "constant"):
            formatted[name] = str(v["query"])
            continue
        if v["type"] == "custom":
            formatted[name] = str(v["current"]["value"])
            continue
        assert v["type"] == "query", f"{d['uid']}: unsupported variable type {v['type']}"
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        top = re.fullmatch(r"\s*query_result\((.*)\)\s*", q, re.S)
        if top:
            rx = re.compile(v["regex"].strip("/"))
            values = []
            for r in prom.query(substitute(top.group(1), formatted)):
                hit = rx.search(query_result_text(r))
                if hit and hit.group(1) not in values:
                    values.append(hit.group(1))
            assert values, f"{d['uid']}: variable ${name} has no values ({q})"
            raw[name] = values
            formatted[name] = fmt(values, bool(v.get("multi") or v.get("includeAll")))
            continue
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", q, re.S)
        assert m, f"{d['uid']} ${name}: {q}"
        selector, label = substitute(m.group(1), formatted), m.group(2)
        values = sorted(prom.api(f"label/{label}/values", **{"match[]": selector}))
        assert values, f"{d['uid']}: variable ${name} has no values ({selector})"
        raw[name] = values
        formatted[name] = fmt(values, bool(v.get("multi") or v.get("includeAll")))
    return formatted, raw


def checks_for(prom: PrometheusHandle, d: dict[str, Any], base: dict[str, str] | None = None) -> list[Check]:
    formatted, raw = resolve_variables(prom, d, base)
    out: list[Check] = []
    repeat: str | None = None
    for p in d["panels"]:
        if p["type"] == "row":
            repeat = p.get("repeat")
            inner = p.get("panels", [])
        else:
            inner = [p]
        for panel in inner:
            for t in panel.get("targets", []):
                for value in raw[repeat] if repeat else [None]:
                    values = dict(formatted)
                    if repeat and value is not None:
                        values[repeat] = fmt([value], True)
                    out.append(
                        Check(
                            d["uid"],
                            panel["title"],
                            t["refId"],
                            f"{repeat}={value}" if repeat else "",
                            substitute(t["expr"], values),
                        )
                    )
    return out
