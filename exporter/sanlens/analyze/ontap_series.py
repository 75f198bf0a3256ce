"""The second pass over ONTAP captures: samples in time order, cooked into bounded series and views.

Each instance is cooked against its previous sample; the cooked values fold into
per-series statistics with decimated chart points, and each cooked interval
becomes an ``OntapView`` snapshot for the diagnose engine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sanlens.analyze.ontap_inputs import OntapInput
from sanlens.errors import SanlensError
from sanlens.model import OntapVersion, Snapshot, parse_ontap_version
from sanlens.ontap.qos_centres import DETAIL_TABLES, WORKLOAD_TABLES

if TYPE_CHECKING:  # the cooking and the views load when a capture is cooked: a host log needs neither
    from sanlens.ontap.cooking import Cooked, CounterRow, CounterSpec, Sample

# per-workload QoS latency parts, read by sanlens.analyze.qos_breakdown rather than cooked here
QOS_TABLES = DETAIL_TABLES | WORKLOAD_TABLES | {"qos_latency"}

MAX_POINTS = 400  # chart points kept per series (decimated by 2 when full)


# -------------------------------------------------------------------- series
@dataclass
class SeriesStats:
    object: str
    instance: str
    counter: str
    label: str
    unit: str
    inputs: list[str]
    samples: int = 0
    min: float = math.inf
    max: float = -math.inf
    total: float = 0.0
    points: list[tuple[float, float]] = field(default_factory=list)
    stride: int = 1
    _seen: int = 0

    def add(self, t: float, v: float) -> None:
        if v != v or v in (math.inf, -math.inf):
            return
        self.samples += 1
        self.total += v
        self.min = min(self.min, v)
        self.max = max(self.max, v)
        if self._seen % self.stride == 0:
            self.points.append((t, v))
            if len(self.points) >= MAX_POINTS:
                self.points = self.points[::2]
                self.stride *= 2
        self._seen += 1

    @property
    def path(self) -> str:
        return f"{self.object}({self.instance})\\{self.counter}" + (f"[{self.label}]" if self.label else "")

    def as_json(self) -> dict[str, Any]:
        n = self.samples
        return {
            "path": self.path,
            "object": self.object,
            "instance": self.instance,
            "counter": self.counter,
            "label": self.label,
            "unit": self.unit,
            "samples": n,
            "min": self.min if n else None,
            "max": self.max if n else None,
            "mean": self.total / n if n else None,
            "inputs": self.inputs,
        }


# --------------------------------------------------------------------- views
def version_from_rows(rows: Iterable[CounterRow]) -> OntapVersion | None:
    for r in rows:
        text = r.properties.get("ontap_version") or r.properties.get("version") or ""
        version = parse_ontap_version(text, anywhere=True)
        if version is not None:
            return version
    return None


class OntapCooker:
    """Walks the ONTAP samples in order; folds series; yields Snapshots for the engine."""

    def __init__(
        self,
        inputs: list[OntapInput],
        interval: float | None,
        cluster: str,
        version: OntapVersion | None,
        anchors: dict[str, float] | None = None,
    ) -> None:
        """``anchors``: per input kind, the time of the first sample of captures that carry no time."""
        self.anchors = anchors or {}
        self.inputs = [i for i in inputs if i.kind not in ("ontap-counter-schema", "ontap-qos-latency")]
        self.schemas: dict[str, dict[str, CounterSpec]] = {}
        for i in inputs:
            if i.schema:
                self.schemas.setdefault(i.schema[0], {}).update(i.schema[1])
        self.interval = interval
        self.cluster = cluster
        self.version = version
        self.series: dict[tuple[str, str, str, str], SeriesStats] = {}
        self.warnings: list[str] = []
        self.skipped: dict[str, int] = {}  # reason -> rows
        self.no_rate = False

    def _ordered(self) -> list[OntapInput]:
        # by capture time (untimed captures at their anchor); else as given on the command line
        def start(i: OntapInput) -> float | None:
            return i.start if i.start is not None else self.anchors.get(i.kind)

        if all(start(i) is not None for i in self.inputs):
            return sorted(self.inputs, key=lambda i: (start(i), i.order))
        return sorted(self.inputs, key=lambda i: i.order)

    def snapshots(self) -> Iterator[Snapshot]:
        if not self.inputs:  # host inputs alone: nothing to cook, and no cooking to load
            return
        from sanlens.ontap.cooking import cook_row
        from sanlens.ontap.views import build_view, row_fields

        prev: dict[tuple[str, str], tuple[CounterRow, float | None, int, str]] = {}
        baseline: set[str] = set()  # inputs whose samples served as the previous sample of this one
        table_index: dict[tuple[str, str], int] = {}  # (kind, table) -> samples seen
        for inp in self._ordered():
            for sample in samples_again(inp):
                cooked: list[tuple[CounterRow, list[Cooked]]] = []
                t_view: float | None = None
                dt_view: float | None = self.interval
                for row in sample.rows:
                    if row.table in QOS_TABLES:
                        continue  # per-workload latency parts: sanlens.analyze.qos_breakdown reads them
                    k = (inp.kind, row.table)
                    idx = table_index.get(k, 0)
                    key = (row.table, row.instance)
                    # the sample's own time, or its position times --interval
                    t = sample.timestamp
                    if t is None and self.interval:
                        t = self.anchors.get(inp.kind, 0.0) + idx * self.interval
                    p = prev.get(key)
                    if row.table == "sysstat":  # already per interval
                        values = cook_row(row, row, None, self.schemas)
                        cooked.append((row, values))
                    elif p is not None:
                        dt = None
                        if t is not None and p[1] is not None and t > p[1]:
                            dt = t - p[1]
                        elif self.interval:
                            dt = self.interval * (idx - p[2])
                        if dt is None:
                            self.no_rate = True
                        else:
                            dt_view = dt
                        values = cook_row(p[0], row, dt, self.schemas)
                        if values:
                            baseline.add(p[3])
                        if not values:
                            reason = self._skip_reason(p[0], row)
                            if reason:
                                self.skipped[reason] = self.skipped.get(reason, 0) + 1
                        cooked.append((row, values))
                    prev[key] = (row, t, idx, str(inp.path))
                    t_view = (
                        t
                        if t is not None
                        else self.anchors.get(inp.kind, 0.0) + idx * (self.interval or 60.0)
                    )
                for k in {(inp.kind, r.table) for r in sample.rows}:
                    table_index[k] = table_index.get(k, 0) + 1
                if self.version is None:
                    self.version = version_from_rows(sample.rows)
                if not cooked or t_view is None:
                    continue
                sources = [str(inp.path), *sorted(baseline - {str(inp.path)})]
                baseline.clear()
                for _row, values in cooked:
                    for c in values:
                        sk = (c.table, c.instance, c.counter, c.label)
                        st = self.series.get(sk)
                        if st is None:
                            st = self.series[sk] = SeriesStats(
                                c.table, c.instance, c.counter, c.label, c.unit, list(sources)
                            )
                        else:
                            st.inputs.extend(x for x in sources if x not in st.inputs)
                        st.add(t_view, c.value)
                yield Snapshot(
                    self.cluster,
                    "ontap",
                    t_view,
                    view=build_view(self.cluster, t_view, dt_view, self.version, row_fields(cooked)),
                )
        if self.no_rate:
            self.warnings.append(
                "some captures carry no usable time between samples (equal or missing timestamps): "
                "rate counters are left out; pass --interval SECONDS to cook them"
            )
        if self.skipped:
            self.warnings.append(
                f"{sum(self.skipped.values())} row(s) skipped: "
                + ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
            )

    @staticmethod
    def _skip_reason(prev: CounterRow, cur: CounterRow) -> str:
        """Why cook_row gave nothing for a row, or '' when it simply had no known counters."""
        from sanlens.ontap.cooking import keeps_partial

        if not (prev.complete and cur.complete) and not keeps_partial(cur.table):
            return "incomplete aggregation (a node was unreachable)"
        for name, cv in cur.counters.items():
            pv = prev.counters.get(name)
            if pv is None:
                continue
            pl = pv if isinstance(pv, list) else [pv]
            cl = cv if isinstance(cv, list) else [cv]
            if len(pl) == len(cl) and any(c < p for c, p in zip(cl, pl, strict=True)):
                return f"counter reset or takeover ({name} went backwards)"
        return ""


def samples_again(inp: OntapInput) -> Iterator[Sample]:
    """The second pass over one capture; a failure becomes the input's own error, the run goes on."""
    try:
        yield from inp.iter_samples()
    except SanlensError as e:
        inp.failure = str(e)
    except (OSError, RecursionError, MemoryError, ValueError) as e:
        inp.failure = f"{inp.path}: cannot read it again: {type(e).__name__}: {e}"
