"""NetApp Harvest's series through a Prometheus query API: the queries, and their answers as samples.

One instant query per Harvest object kind (a ``__name__`` regex batched by the cluster's label),
made from the catalogue's ``harvest`` declarations. The queries aggregate to the labels read
(``max by``), so the API answers only them: Harvest's info families carry up to 29 labels
(volume_labels), every series its cluster, datacenter, job and instance too, and a second Harvest
poller or scrape job for the same cluster folds into one series.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

from sanlens.errors import SourceError
from sanlens.ontap.catalogue import HarvestInfo, TableDef, catalogue

FAMILY_LABEL = "sanlens_family"  # tells apart info families read by the same labels (HarvestQuery.text)
Sample = tuple[dict[str, str], float]
Samples = dict[str, list[Sample]]  # family -> its samples, as one query answered them


@dataclass(frozen=True, slots=True)
class HarvestQuery:
    """One instant query: the gauges of its tables (the row families first) and their info families."""

    name: str
    by: tuple[str, ...]
    gauges: tuple[str, ...]
    info: tuple[HarvestInfo, ...]
    tables: tuple[TableDef, ...]

    def text(self, selector: str) -> str:
        """The PromQL: the gauges aggregated to ``by``, each info family to its own labels.

        ``or`` matches label sets without the metric name, so an info family read by the same labels
        as one before it (``volume_size`` and ``volume_size_available`` by svm and volume) would be
        dropped: it carries its name in ``FAMILY_LABEL`` as well."""
        q = f'max by (__name__, {", ".join(self.by)}) ({{__name__=~"{"|".join(self.gauges)}", {selector}}})'
        seen: set[frozenset[str]] = set()
        for i in self.info:
            part = f'label_replace(max by ({", ".join(i.by)}) ({i.name}{{{selector}}}), "__name__", "{i.name}", "", "")'
            if frozenset(i.by) in seen:
                part = f'label_replace({part}, "{FAMILY_LABEL}", "{i.name}", "", "")'
            seen.add(frozenset(i.by))
            q += f" or {part}"
        return q


@functools.cache
def queries() -> tuple[HarvestQuery, ...]:
    """The queries a poll sends, one per ``harvest.query`` name of the catalogue's tables."""
    grouped: dict[str, list[TableDef]] = {}
    for t in catalogue().values():
        if t.harvest is not None:
            grouped.setdefault(t.harvest.query, []).append(t)
    out = []
    for name, tables in grouped.items():
        by = tables[0].harvest.by  # type: ignore[union-attr]
        info: dict[str, HarvestInfo] = {}
        gauges: list[str] = []
        for t in tables:
            h = t.harvest
            assert h is not None
            if h.by != by:
                raise ValueError(
                    f"harvest query {name}: tables {tables[0].table} and {t.table} read by other labels"
                )
            info.update({i.name: i for i in h.info})
            gauges += [f for f in h.rows if f not in info]
        for t in tables:
            gauges += [c.harvest for c in t.harvest_counters]
        out.append(HarvestQuery(name, by, tuple(dict.fromkeys(gauges)), tuple(info.values()), tuple(tables)))
    return tuple(out)


def samples_of(doc: dict, where: str, problems: Counter[str] | None = None) -> Samples:
    """An instant query's answer as samples by family.

    A sample that is not ``{"metric": {"__name__": ..., labels}, "value": [time, "number"]}`` is
    skipped; an answer with samples and not one readable is refused as ``malformed`` (garbage is not
    an empty cluster). The same series twice (no real API answers an aggregation so): the first wins.
    """
    data = doc.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if result is None:
        result = []
    if not isinstance(result, list):
        raise SourceError(f"{where}: the query's result is not a list", reason="malformed")
    out: Samples = {}
    seen: set[tuple[object, ...]] = set()
    skipped = duplicates = 0
    for r in result:
        metric = r.get("metric") if isinstance(r, dict) else None
        pair = r.get("value") if isinstance(r, dict) else None
        try:
            if not isinstance(metric, dict) or not isinstance(pair, list) or len(pair) != 2:
                raise ValueError
            value = float(pair[1])  # a string, as the API sends it; "12345"[1] is not a value
            labels = {str(k): str(v) for k, v in metric.items() if isinstance(v, str)}
            name = labels.pop("__name__")
            labels.pop(FAMILY_LABEL, None)
        except (KeyError, TypeError, ValueError, OverflowError):
            skipped += 1
            continue
        key = (name, *sorted(labels.items()))
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        out.setdefault(name, []).append((labels, value))
    if result and not out:
        raise SourceError(f"{where}: none of the {len(result)} samples is readable", reason="malformed")
    if problems is not None:
        problems["unreadable"] += skipped
        problems["duplicate"] += duplicates
    return out


def clip(text: str, limit: int = 200) -> str:
    """An upstream's words in a message: one line, bounded (an error body can be megabytes)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(v: str) -> str:
    """A label value inside a PromQL string."""
    return v.replace("\\", "\\\\").replace('"', '\\"')
