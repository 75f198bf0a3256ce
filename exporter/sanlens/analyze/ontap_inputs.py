"""ONTAP captures as inputs of `sanlens analyze`: detecting their kind and the first, scanning pass.

Input kinds registered with ``sanlens.analyze.cli``:
- ``ontap-statistics``: ``statistics show -raw`` text (several captures, or one
  file holding several samples);
- ``ontap-sysstat``: nodeshell ``sysstat -M`` text;
- ``ontap-qos-latency``: ``qos statistics [volume|workload] latency show`` text,
  the latency breakdown per workload (scanned here; :mod:`sanlens.analyze.qos_breakdown`
  turns it into QoS workloads and the report's breakdown);
- ``ontap-counter-rows``: counter-table rows JSON (``/api/cluster/counter/tables/
  {table}/rows``), one sample per file, per list item or per line;
- ``ontap-counter-schema``: a table's ``counter_schemas``, which then types the
  rows instead of the built-in knowledge.

Reading is two streaming passes: the per-file reader here only scans (samples,
time span, objects); :mod:`sanlens.analyze.diagnoses` then cooks and diagnoses
every input (:mod:`sanlens.analyze.ontap_series`). Both passes read the one
descriptor the input was opened with (a pipe is first copied to an unnamed
temporary file), so the second sees what the first saw or the change is reported.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.source import InputSource, as_source
from sanlens.analyze.time_zones import localize, zone_name
from sanlens.model import iso_utc
from sanlens.ontap.cli_capture import text_head

if TYPE_CHECKING:  # the parsers load when a capture of theirs is read: sniffing loads none of them
    from sanlens.ontap.cooking import CounterSpec, Sample
    from sanlens.ontap.sysstat_text import SysstatFacts

Reader = Callable[[Path, BinaryIO, "list[str] | None", "SysstatFacts | None"], Iterator["Sample"]]


def reader_of(kind: str) -> Reader:
    """The sample reader of one capture kind (its parser imported on first use)."""
    if kind == "ontap-statistics":
        from sanlens.ontap.statistics_text import iter_statistics_samples

        return lambda p, f, notes, _facts: iter_statistics_samples(p, notes, f)
    if kind == "ontap-sysstat":
        from sanlens.ontap.sysstat_text import iter_sysstat_samples

        return lambda p, f, notes, facts: iter_sysstat_samples(p, None, notes, f, facts)
    if kind == "ontap-counter-rows":
        from sanlens.ontap.counter_json import iter_json_samples

        return lambda p, f, notes, _facts: iter_json_samples(p, f)
    if kind == "ontap-qos-latency":
        from sanlens.ontap.qos_latency_text import iter_qos_latency_samples

        return lambda p, f, notes, _facts: iter_qos_latency_samples(p, notes, f)
    raise KeyError(kind)


# CLI text: the cluster's wall clock, read as UTC until a zone (--tz) says otherwise
LOCAL_TIME_KINDS = frozenset({"ontap-statistics", "ontap-qos-latency", "ontap-sysstat"})


# ------------------------------------------------------------------ detection
def detect_statistics(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(re.search(r"^Object: \S", t, re.M) and re.search(r"^Instance: ", t, re.M))


def detect_sysstat(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(re.search(r"^\s*(ANY1\+\s+.*)?AVG\s+CPU0\b", t, re.M))


def detect_qos_latency(path: Path, head: bytes) -> bool:
    t = text_head(head)
    return bool(re.search(r"^\s*(?:Workload|Policy Group)\s+(?:ID\s+)?Latency\s+\S.*\n\s*-{3,}", t, re.M))


def detect_counter_rows(path: Path, head: bytes) -> bool:
    t = text_head(head).lstrip()
    return t[:1] in "{[" and '"records"' in t and '"counter_schemas"' not in t


def detect_counter_schema(path: Path, head: bytes) -> bool:
    t = text_head(head).lstrip()
    return t[:1] == "{" and '"counter_schemas"' in t


# -------------------------------------------------------------------- pass 1
@dataclass
class OntapInput:
    """What the scan of one capture found; the samples are read again in ``finish``."""

    path: Path
    kind: str
    order: int
    samples: int = 0
    start: float | None = None
    end: float | None = None
    objects: set[str] = field(default_factory=set)
    instances: set[tuple[str, str]] = field(default_factory=set)
    schema: tuple[str, dict[str, CounterSpec]] | None = None
    notes: list[str] = field(default_factory=list)  # what the reader skipped, FILE:LINE: why
    source: InputSource | None = None  # open until the run ends: the second pass reads it again
    failure: str | None = None  # why the second pass could not read it again (the input's error)
    zone: dt.tzinfo | None = None  # the zone of its wall-clock times (--tz / --input-tz)
    interval: float | None = None  # --interval: seconds between samples when the capture does not say
    given_start: float | None = None  # --input-start: its first sample's time, for a capture with no date
    placed: tuple[float, float] | None = None  # (first sample, step) of samples the capture does not date
    facts: SysstatFacts | None = None  # what a sysstat capture says around its rows
    time_notes: list[str] = field(default_factory=list)  # how its samples were placed in time: warnings

    def input_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "hosts": [],
            "objects": sorted(self.objects),
            "instances": len(self.instances),
            "samples": self.samples,
            "counters": None,
            "start": iso_utc(self.start, milliseconds=True),
            "end": iso_utc(self.end, milliseconds=True),
            **({"zone": zone_name(self.zone)} if self.zone and self.zoned_by_option else {}),
        }

    def iter_samples(self, notes: list[str] | None = None) -> Iterator[Sample]:
        """The capture's samples, from the start: each call reads the source again from byte 0."""
        from sanlens.ontap.sysstat_text import SysstatFacts

        source = self.source if self.source is not None else InputSource.open(self.path)
        facts = SysstatFacts(fallback_interval=self.interval) if self.kind == "ontap-sysstat" else None
        with source.stream() as f:
            for idx, s in enumerate(reader_of(self.kind)(self.path, f, notes, facts)):
                yield self._timed(s, idx, facts)
        self.facts = facts
        source.check_unchanged()
        if self.source is None:
            source.close()

    def _timed(self, s: Sample, idx: int, facts: SysstatFacts | None) -> Sample:
        """The sample at its real time: placed when the capture dates none, else moved into its zone."""
        from sanlens.ontap.cooking import Sample

        if self.placed is not None:
            return Sample(self.placed[0] + idx * self.placed[1], s.rows)
        if s.timestamp is None or self.zone is None or self.kind not in LOCAL_TIME_KINDS:
            return s
        if facts is not None and facts.zoned:
            return s
        return Sample(localize(s.timestamp, self.zone), s.rows)

    @property
    def zoned_by_option(self) -> bool:
        """Whether --tz / --input-tz moved its times (not a file's mtime, not a date line with an offset)."""
        if self.zone is None or self.kind not in LOCAL_TIME_KINDS:
            return False
        if self.placed is not None:
            return self.given_start is not None
        return not (self.facts is not None and self.facts.zoned)

    @property
    def clusters(self) -> set[str]:
        """Clusters the capture names (a sysstat prompt line)."""
        return {self.facts.cluster} if self.facts is not None and self.facts.cluster else set()

    def close(self) -> None:
        if self.source is not None:
            self.source.close()

    @property
    def mtime(self) -> float:
        """The capture's modification time when it was opened (a pipe's: when it was read)."""
        return self.source.mtime if self.source is not None else Path(self.path).stat().st_mtime


_order = 0


def scan(
    path: Path | InputSource,
    kind: str,
    *,
    zone: dt.tzinfo | None = None,
    interval: float | None = None,
    start: float | None = None,
) -> OntapInput:
    """Scan one capture; ``zone``, ``interval`` and ``start`` are --tz, --interval and --input-start."""
    global _order
    _order += 1
    source = as_source(path)
    try:
        inp = OntapInput(source.path, kind, _order, source=source, zone=zone, interval=interval)
        inp.given_start = start
        return _scan(inp)
    except BaseException:
        if not isinstance(path, InputSource):
            source.close()
        raise


def _scan(inp: OntapInput) -> OntapInput:
    from sanlens.ontap.cooking import CaptureError
    from sanlens.ontap.counter_json import parse_schema_doc

    source, kind = inp.source, inp.kind
    assert source is not None
    source.rereadable()
    if kind == "ontap-counter-schema":
        with source.stream() as f:
            raw = f.read()
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
        except RecursionError:
            raise CaptureError("not a counter schema JSON: nested too deeply", source.path) from None
        except ValueError as e:
            raise CaptureError(f"not a counter schema JSON: {e}", source.path) from None
        if not isinstance(doc, dict):
            raise CaptureError("expected a JSON object with counter_schemas", source.path)
        inp.schema = parse_schema_doc(doc)
        inp.objects.add(inp.schema[0])
        return inp
    for s in inp.iter_samples(inp.notes):
        inp.samples += 1
        if s.timestamp is not None:
            inp.start = s.timestamp if inp.start is None else min(inp.start, s.timestamp)
            inp.end = s.timestamp if inp.end is None else max(inp.end, s.timestamp)
        for r in s.rows:
            inp.objects.add(r.table)
            if len(inp.instances) < 100_000:
                inp.instances.add((r.table, r.instance))
    if inp.samples == 0:
        raise CaptureError(f"no {kind} samples found", source.path)
    if inp.facts is not None:
        _place_sysstat(inp, inp.facts)
    return inp


def _place_sysstat(inp: OntapInput, facts: SysstatFacts) -> None:
    """Time a sysstat capture's samples: --input-start, else its date line, else the file's mtime (said loudly)."""
    step = facts.interval or inp.interval
    if step is None:
        inp.time_notes.append(
            f"{inp.path}: no sysstat command line gives the interval: samples placed 60 s apart; "
            "pass --interval SECONDS"
        )
    if inp.given_start is not None:
        inp.placed = (inp.given_start, step or 60.0)
    elif facts.dated:
        if inp.zone is None and not facts.zoned:
            inp.time_notes.append(
                f"{inp.path}: dated by its date line {facts.date_line}, which names no zone: read as UTC; "
                f"give its zone with --tz ZONE or --input-tz {inp.path}=ZONE"
            )
        return
    else:
        end = inp.mtime
        inp.placed = (end - (inp.samples - 1) * (step or 60.0), step or 60.0)
        inp.time_notes.append(
            f"{inp.path}: the capture prints no date: its {inp.samples} samples are placed to end at the "
            f"file's modification time, {iso_utc(end)}; if it was taken at another time, pass "
            f"--input-start {inp.path}=YYYY-MM-DDTHH:MM:SS (its first sample, in --tz's zone or with an "
            "offset), or capture `date` just before sysstat"
        )
    first, gap = inp.placed
    inp.start, inp.end = first, first + (inp.samples - 1) * gap


DETECTORS = (
    ("ontap-counter-schema", detect_counter_schema),
    ("ontap-counter-rows", detect_counter_rows),
    ("ontap-statistics", detect_statistics),
    ("ontap-sysstat", detect_sysstat),
    ("ontap-qos-latency", detect_qos_latency),
)


def reader(kind: str) -> Callable[[Path | InputSource, object], Analysis]:
    """The ``read`` of an InputReader for one ONTAP kind: scan now, cook in ``finish``."""

    def read(path: Path | InputSource, options: object = None) -> Analysis:
        # only the settings given: a run without --tz, --interval or --input-start scans as scan(path, kind)
        given = {k: v for k in ("zone", "interval", "start") if (v := getattr(options, k, None)) is not None}
        inp = scan(path, kind, **given)
        try:
            return Analysis(inp.input_json(), [], _summarised(inp.notes), inp)
        except BaseException:
            inp.close()
            raise

    return read


def _summarised(notes: list[str], keep: int = 20) -> list[str]:
    """The reader's notes, the first ``keep`` in full and a count of the rest."""
    if len(notes) <= keep:
        return list(notes)
    return [*notes[:keep], f"... and {len(notes) - keep} more skipped item(s)"]
