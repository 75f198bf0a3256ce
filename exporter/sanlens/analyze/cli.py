"""`sanlens analyze FILE... [--format text|json|html]`: offline analysis of captured files.

Each input kind (PerfMon CSV/TSV, ONTAP captures) registers a reader in
``READERS`` with a ``detect`` function over the file's name and first bytes.
Every reader returns an ``Analysis``: its entry in ``inputs[]``, its
``series[]`` and any warnings. The JSON shape is a stable, documented interface
(docs/analyze.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from sanlens.analyze import diagnoses, ontap_inputs
from sanlens.errors import SanlensError
from sanlens.model import ontap_version_option

HEAD_BYTES = 4096


@dataclass
class Analysis:
    """What one input contributes to the report."""

    input: dict[str, Any]
    series: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    detail: object = None  # the reader's own result, for later stages (diagnoses, HTML)


@dataclass(frozen=True)
class InputReader:
    kind: str
    detect: Callable[[Path, bytes], bool]
    read: Callable[[Path], Analysis]


READERS: list[InputReader] = []


def register(reader: InputReader) -> None:
    """Add an input kind; earlier registrations win when several detect a file."""
    READERS.append(reader)


# ------------------------------------------------------------------ PerfMon
def _detect_perfmon(path: Path, head: bytes) -> bool:
    if path.suffix.lower() == ".blg":
        return True  # the reader explains how to convert it
    text = head.lstrip(b"\xef\xbb\xbf").lstrip(b'"').upper()
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = head[2:].replace(b"\x00", b"").lstrip(b'"').upper()
    return text.startswith((b"(PDH-CSV", b"(PDH-TSV"))


def _read_perfmon(path: Path) -> Analysis:
    from sanlens.analyze.perfmon_summary import summarize

    s = summarize(path)
    return Analysis(s.input_json(), [c.as_json() for c in s.columns], list(s.warnings), s)


register(InputReader("perfmon", _detect_perfmon, _read_perfmon))

# ------------------------------------------------------------------ ONTAP captures
for _kind, _detect in ontap_inputs.DETECTORS:
    register(InputReader(_kind, _detect, ontap_inputs.reader(_kind)))


# ------------------------------------------------------------------ driver
def analyze_file(path: Path) -> Analysis:
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as e:
        raise SanlensError(f"{path}: cannot read: {e.strerror}") from None
    for reader in READERS:
        if reader.detect(path, head):
            return reader.read(path)
    kinds = ", ".join(r.kind for r in READERS)
    raise SanlensError(f"{path}: unrecognised input (known kinds: {kinds})")


def report_json(results: list[Analysis], findings: diagnoses.Findings | None = None) -> dict[str, Any]:
    return {
        "inputs": [r.input for r in results],
        "series": [s for r in results for s in r.series],
        "diagnoses": findings.diagnoses if findings else [],
    }


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    if v == 0 or 0.001 <= abs(v) < 1e7:
        return f"{v:.4g}" if abs(v) < 1 else f"{v:.3f}".rstrip("0").rstrip(".")
    return f"{v:.3e}"


def render_text(results: list[Analysis], out: TextIO) -> None:
    for r in results:
        i = r.input
        out.write(f"{i['path']}  ({i['kind']})\n")
        out.write(
            f"  hosts: {', '.join(i.get('hosts') or []) or '-'}   samples: {i.get('samples')}   "
            f"counters: {i.get('counters')}   {i.get('start') or '-'} .. {i.get('end') or '-'}\n\n"
        )
        rows = [("counter", "samples", "min", "max", "mean")]
        for s in r.series:
            name = s["path"]
            rows.append((name, str(s["samples"]), _num(s["min"]), _num(s["max"]), _num(s["mean"])))
        widths = [max(len(row[k]) for row in rows) for k in range(5)]
        widths[0] = min(widths[0], 90)
        for n, row in enumerate(rows):
            name = row[0] if len(row[0]) <= widths[0] else "…" + row[0][-(widths[0] - 1) :]
            cells = [name.ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            out.write("  " + "  ".join(cells).rstrip() + "\n")
            if n == 0:
                out.write("  " + "  ".join("-" * w for w in widths) + "\n")
        out.write("\n")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="PerfMon CSV/TSV logs; ONTAP statistics show -raw text, sysstat -M text, counter-table rows JSON",
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
    p.add_argument("--cluster", default="offline", help="cluster name for ONTAP findings (default offline)")
    p.add_argument(
        "--ontap-version", default=None, help="ONTAP version for version-dependent ceilings, e.g. 9.8"
    )


def run(args: argparse.Namespace) -> int:
    results: list[Analysis] = []
    failed = 0
    for name in args.files:
        try:
            results.append(analyze_file(Path(name)))
        except SanlensError as e:
            failed += 1
            print(f"error: {e}", file=sys.stderr)
    if args.interval is not None and not args.interval > 0:
        print("error: --interval: must be positive", file=sys.stderr)
        return 2
    try:
        version = ontap_version_option(args.ontap_version) if args.ontap_version else None
        findings = diagnoses.finish(results, args.interval, args.cluster, version)
    except SanlensError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in results:
        path = str(r.input.get("path"))
        for w in r.warnings:
            print(f"warning: {w}" if w.startswith(path + ":") else f"warning: {path}: {w}", file=sys.stderr)
    for w in findings.warnings:
        print(f"warning: {w}", file=sys.stderr)
    out: TextIO = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    try:
        if args.format == "json":
            json.dump(report_json(results, findings), out, indent=2)
            out.write("\n")
        elif args.format == "html":
            from sanlens.analyze.html import render_html

            out.write(render_html(results, findings))
        else:
            render_text(results, out)
            diagnoses.render_findings_text(findings, out)
    finally:
        if out is not sys.stdout:
            out.close()
    return 2 if failed else 0
