"""`sanlens analyze FILE... [--format text|json|html]`: offline analysis of captured files.

Each input kind (PerfMon CSV/TSV, Linux iostat/sar text, ONTAP captures) registers a reader in
``READERS`` with a ``detect`` function over the file's name and first bytes.
Every reader returns an ``Analysis``: its entry in ``inputs[]``, its
``series[]`` and any warnings. The JSON shape is a stable, documented interface
(docs/analyze.md).

Each input is opened once (:mod:`sanlens.analyze.source`), so pipes, FIFOs and files
that change under the run behave; whatever goes wrong with one input becomes that
input's ``error:`` (exit 2) while the others are still reported.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from sanlens.analyze import diagnoses, linux_inputs, ontap_inputs, qos_report
from sanlens.analyze.analysis import Analysis
from sanlens.analyze.html import render_html
from sanlens.analyze.input_checks import RunWarning, config_misses, time_overlap
from sanlens.analyze.linux_inputs import LinuxInput
from sanlens.analyze.offline_join import analysis_cluster
from sanlens.analyze.perfmon_summary import LogSummary, summarize
from sanlens.analyze.progress import Progress
from sanlens.analyze.source import InputSource, as_source
from sanlens.analyze.status import input_status
from sanlens.analyze.text_report import render_text
from sanlens.analyze.time_zones import (
    linux_zoned,
    parse_start,
    parse_zone,
    per_input,
    shift_linux,
    zone_name,
)
from sanlens.errors import SanlensError
from sanlens.model import ontap_version_option


@dataclass(frozen=True)
class InputReader:
    kind: str
    detect: Callable[[Path, bytes], bool]
    read: Callable[[InputSource, ReadOptions], Analysis]
    passes: int = 1  # 2: the reader reads the input again later (ONTAP captures), so it stays open


@dataclass(frozen=True)
class ReadOptions:
    progress: Progress
    step: float | None = None
    zone: dt.tzinfo | None = None  # the zone of an input's wall-clock times (--tz / --input-tz)
    interval: float | None = None  # --interval
    start: float | None = None  # --input-start: the first sample of a capture that prints no date


READERS: list[InputReader] = []


def register(reader: InputReader) -> None:
    """Add an input kind; earlier registrations win when several detect a file."""
    READERS.append(reader)


# ------------------------------------------------------------------ PerfMon
def _detect_perfmon(path: Path, head: bytes) -> bool:
    if path.suffix.lower() == ".blg" or looks_binary(head):
        return True  # the reader explains how to convert a binary log, whatever its name
    text = head.lstrip(b"\xef\xbb\xbf").lstrip(b'"').upper()
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = head[2:].replace(b"\x00", b"").lstrip(b'"').upper()
    return text.startswith((b"(PDH-CSV", b"(PDH-TSV"))


def looks_binary(head: bytes) -> bool:
    """NUL bytes where a text log has none (UTF-16 logs start with a byte-order mark)."""
    return not head.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" in head[:512]


def _read_perfmon(source: InputSource, opts: ReadOptions) -> Analysis:
    with opts.progress.reading(source.path.name, source.size or 0) as tick:
        s = summarize(source, progress=tick, step=opts.step)
    return Analysis(s.input_json(), [c.as_json() for c in s.columns], list(s.warnings), s)


register(InputReader("perfmon", _detect_perfmon, _read_perfmon))

# ------------------------------------------------------------------ ONTAP captures
for _kind, _detect in ontap_inputs.DETECTORS:
    register(InputReader(_kind, _detect, ontap_inputs.reader(_kind), passes=2))

# ------------------------------------------------------------------ Linux sysstat captures
for _kind, _detect, _read in linux_inputs.DETECTORS:
    register(InputReader(_kind, _detect, _read))


# ------------------------------------------------------------------ driver
def analyze_file(path: Path | InputSource, opts: ReadOptions | None = None) -> Analysis:
    """Open, detect and read one input; raise SanlensError (naming it) for anything wrong with it.

    The source stays open for readers that read again later (``passes=2``): the caller closes
    it, through the Analysis' ``detail``, once the run is over.
    """
    opts = opts or ReadOptions(Progress(quiet=True))
    source = as_source(path)
    keep = False
    try:
        for reader in READERS:
            if reader.detect(source.path, source.head):
                result = _guarded(source.name, reader.read, source, opts)
                source.check_unchanged()
                keep = reader.passes > 1
                return result
        kinds = ", ".join(r.kind for r in READERS)
        raise SanlensError(f"{source.name}: unrecognised input (known kinds: {kinds})")
    finally:
        if not keep:
            source.close()


def _guarded(
    name: str, read: Callable[[InputSource, ReadOptions], Analysis], source: InputSource, opts: ReadOptions
) -> Analysis:
    """``read()``, its unforeseen failures turned into this input's error (``--debug`` shows them whole)."""
    try:
        return read(source, opts)
    except SanlensError:
        raise
    except RecursionError:
        raise SanlensError(f"{name}: nested too deeply to read") from None
    except MemoryError:
        raise SanlensError(f"{name}: too large to read in the memory available") from None
    except OSError as e:
        raise SanlensError(f"{name}: cannot read: {e.strerror or e}") from None
    except Exception as e:  # a reader's unforeseen failure is still only this input's
        if DEBUG:
            raise
        raise SanlensError(f"{name}: cannot read: {type(e).__name__}: {str(e)[:200]}") from None


DEBUG = False  # set by ``run`` from --debug: unforeseen failures then keep their traceback


def failed(path: str, error: str) -> Analysis:
    """The entry of an input that could not be read: it stays in every report, with its error."""
    return Analysis({"path": path, "kind": "unreadable", "samples": 0}, errors=[error])


def with_status(results: list[Analysis], findings: diagnoses.Findings | None) -> None:
    for r in results:
        r.input["status"] = input_status(r, findings)
    if findings is not None:
        findings.inputs_judged = sum(1 for r in results if r.input["status"]["state"] == "judged")


def report_json(results: list[Analysis], findings: diagnoses.Findings | None = None) -> dict[str, Any]:
    return {
        "inputs": [r.input for r in results],
        "series": [s for r in results for s in r.series],
        "diagnoses": findings.diagnoses if findings else [],
        "evaluated": bool(findings and findings.evaluated_any),
        "qos_breakdown": qos_report.as_json(findings.qos) if findings else None,
    }


def finite_json(doc: Any) -> tuple[Any, int]:
    """``doc`` with every NaN or infinity replaced by null, and how many were replaced.

    JSON has no such numbers: Python's ``Infinity`` would make the report unreadable to
    strict parsers (jq, browsers), so it is written with ``allow_nan=False`` after this.
    """
    count = 0

    def walk(v: Any) -> Any:
        nonlocal count
        if isinstance(v, float) and not math.isfinite(v):
            count += 1
            return None
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(doc), count


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="PerfMon CSV/TSV logs; Linux iostat -x and sar -d text; ONTAP statistics show -raw text, "
        "sysstat -M text, counter-table rows JSON",
    )
    p.add_argument(
        "--format", choices=["text", "json", "html"], default="text", help="output format (default text)"
    )
    p.add_argument("--output", "-o", default=None, help="write the report to this file instead of stdout")
    p.add_argument(
        "--interval",
        type=float,
        default=None,
        help="seconds between ONTAP samples when the captures do not say",
    )
    p.add_argument(
        "--cluster",
        default=None,
        help="cluster name for ONTAP findings (default: the config's only cluster, else offline)",
    )
    p.add_argument(
        "--ontap-version", default=None, help="ONTAP version for version-dependent ceilings, e.g. 9.8"
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="the sanlens serve config: hosts[].disks LUN mappings, data classes, queue depth, paths, thresholds",
    )
    p.add_argument(
        "--step",
        type=float,
        default=None,
        metavar="SECONDS",
        help="shortest interval the diagnoses judge PerfMon data over (default: one row, or what keeps "
        "a log within 2048 intervals)",
    )
    p.add_argument(
        "--tz",
        default=None,
        metavar="ZONE",
        help="time zone of inputs that print local time without a zone (ONTAP CLI text, Linux iostat/sar): "
        "an IANA name such as America/Los_Angeles, UTC, or an offset such as --tz=-08:00 (default UTC); "
        "PerfMon logs carry their own",
    )
    p.add_argument(
        "--input-tz",
        action="append",
        default=None,
        metavar="FILE=ZONE",
        help="time zone of one input, as --tz (repeatable; wins over --tz)",
    )
    p.add_argument(
        "--input-start",
        action="append",
        default=None,
        metavar="FILE=TIME",
        help="time of the first sample of a capture that prints no date (sysstat -M), e.g. "
        "sysstat.txt=2025-03-02T10:00:01, in its zone unless the time gives an offset (repeatable)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars on stderr")


def _per_input_time(args: argparse.Namespace) -> dict[str, tuple[dt.tzinfo | None, float | None, bool]]:
    """Each input's (zone, first sample time, whether the zone was given for it alone) from the options."""
    default = parse_zone(args.tz) if args.tz else None
    zones = {path: parse_zone(z) for path, z in per_input(args.input_tz, "--input-tz").items()}
    starts = per_input(args.input_start, "--input-start")
    for path in [*zones, *starts]:
        if path not in args.files:
            raise SanlensError(f"{path}: named by --input-tz or --input-start but not among the inputs")
    out: dict[str, tuple[dt.tzinfo | None, float | None, bool]] = {}
    for name in args.files:
        zone = zones.get(name, default)
        start = parse_start(starts[name], zone) if name in starts else None
        out[name] = (zone, start, name in zones)
    return out


def _place_host_input(
    result: Analysis, zone: dt.tzinfo | None, start: float | None, explicit: bool, zoned: bool = False
) -> list[str]:
    """A host input's times in the zone given (Linux text is moved; a PerfMon log keeps its own),
    and what of --input-tz / --input-start did not apply to it."""
    d = result.detail
    out: list[str] = []
    path = str(result.input.get("path"))
    if isinstance(d, LinuxInput) and zone is not None and zoned:
        if explicit:
            out.append(
                f"{path}: its times carry their own offset (S_TIME_FORMAT=ISO): --input-tz is not applied"
            )
    elif isinstance(d, LinuxInput) and zone is not None:
        if shift_linux(d, zone):
            result.input["zone"] = zone_name(zone)
        elif explicit:
            out.append(f"{path}: prints no times (iostat without -t): --input-tz does not apply")
    elif zone is not None and explicit and isinstance(d, LogSummary):
        out.append(f"{path}: carries its own time zone (the log's header): --input-tz is not applied")
    if start is not None and getattr(d, "kind", None) != "ontap-sysstat":
        out.append(f"{path}: --input-start applies only to sysstat -M captures that print no date")
    return out


def run(args: argparse.Namespace) -> int:
    if args.interval is not None and not args.interval > 0:
        print("error: --interval: must be positive", file=sys.stderr)
        return 2
    if args.step is not None and not args.step > 0:
        print("error: --step: must be positive", file=sys.stderr)
        return 2
    config = None
    if args.config:
        from sanlens.config.load import check_config, print_config_error

        try:
            config = check_config(args.config, files=False)
        except SanlensError as e:
            return print_config_error(e, "analyze")
    try:
        per_file = _per_input_time(args)
    except SanlensError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    global DEBUG
    DEBUG = bool(getattr(args, "debug", False))
    progress = Progress(args.quiet)
    opts = ReadOptions(progress, args.step, interval=args.interval)
    results: list[Analysis] = []
    checks: list[RunWarning] = []  # warnings that also go into their inputs' status
    failures = 0
    try:
        for name in args.files:
            try:
                zone, start, explicit = per_file.get(name, (None, None, False))
                source = InputSource.open(name)
                result = analyze_file(source, replace(opts, zone=zone, start=start))
                notes = _place_host_input(result, zone, start, explicit, linux_zoned(source.head))
                notes += getattr(result.detail, "time_notes", [])
                checks += [RunWarning(n, [result]) for n in notes]
                results.append(result)
            except SanlensError as e:
                failures += 1
                results.append(failed(name, str(e)))
                print(f"error: {e}", file=sys.stderr)
        try:
            version = ontap_version_option(args.ontap_version) if args.ontap_version else None
            named = {c for r in results for c in getattr(r.detail, "clusters", ())}
            cluster = analysis_cluster(config, args.cluster, named)
            with progress.diagnosing(diagnoses.expected_updates(results)) as tick:
                findings = diagnoses.finish(results, args.interval, cluster, version, config, tick)
        except SanlensError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    finally:
        for r in results:
            close = getattr(r.detail, "close", None)
            if close is not None:
                close()
    for r in results:  # inputs a later pass could not read again
        late = getattr(r.detail, "failure", None)
        if late:
            failures += 1
            r.errors.append(late)
            print(f"error: {late}", file=sys.stderr)
    with_status(results, findings)
    for r in results:
        path = str(r.input.get("path"))
        for w in r.warnings:
            print(f"warning: {w}" if w.startswith(path + ":") else f"warning: {path}: {w}", file=sys.stderr)
    for w in findings.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for check in (*checks, *time_overlap(results), *config_misses(config, results)):
        print(f"warning: {check.text}", file=sys.stderr)
        for r in check.inputs:
            r.input["status"].setdefault("warnings", []).append(check.text)
    doc: Any = None
    if args.format == "json":
        doc, non_finite = finite_json(report_json(results, findings))
        if non_finite:
            print(
                f"warning: {non_finite} value(s) overflowed or are not numbers; the JSON report has null there",
                file=sys.stderr,
            )
    out: TextIO = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    try:
        if args.format == "json":
            json.dump(doc, out, indent=2, allow_nan=False)
            out.write("\n")
        elif args.format == "html":
            out.write(render_html(results, findings))
        else:
            render_text(results, out)
            qos_report.render_text(findings.qos, out)
            judged = [st for r in results if (st := r.input.get("status") or {}).get("evaluated")]
            too_short = bool(judged) and all(st.get("intervals_needed") for st in judged)
            diagnoses.render_findings_text(findings, out, too_short=too_short)
    finally:
        if out is not sys.stdout:
            out.close()
    return 2 if failures else 0
