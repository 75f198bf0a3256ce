"""The probe's `sanlens analyze` category: hostile inputs beside a good PerfMon log."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from hostile.common import GOOD, IOSTAT, LUN, SYSSTAT, Case, Category, Run, Tree, crashed, run_bounded

# ------------------------------------------------------------------ analyze: the inputs
H = (
    '"(PDH-CSV 4.0) (UTC)({bias})",'
    '"\\\\H\\PhysicalDisk(0 C:)\\Avg. Disk sec/Read","\\\\H\\PhysicalDisk(0 C:)\\Disk Reads/sec"\n'
)


def perfmon(rows: list[tuple[str, str]], bias: str = "0", start: str = "01/15/2024 09:00:00") -> str:
    """A two-counter PerfMon log, one row a second from ``start`` (local time, shifted by ``bias``)."""
    t0 = datetime.strptime(start, "%m/%d/%Y %H:%M:%S")
    body = ""
    for i, (a, b) in enumerate(rows):
        t = t0 + timedelta(seconds=i)
        body += f'"{t.month:02d}/{t.day:02d}/{t.year:04d} {t:%H:%M:%S}.000","{a}","{b}"\n'
    return H.format(bias=bias) + body


class Inputs:
    """A case's working folder: files and FIFOs (fed by threads that never outlive the case)."""

    def __init__(self, d: Path) -> None:
        self.dir = d
        self.fifos: list[Path] = []
        self.threads: list[threading.Thread] = []

    def file(self, name: str, content: str | bytes) -> str:
        p = self.dir / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(p)

    def fifo(self, name: str, feed: Callable[[Path], None] | None = None) -> str:
        """A FIFO, fed by ``feed(path)`` in a thread (None: nobody ever opens it to write)."""
        p = self.dir / name
        os.mkfifo(p)
        self.fifos.append(p)
        if feed is not None:

            def run() -> None:
                with contextlib.suppress(OSError):
                    feed(p)

            t = threading.Thread(target=run, daemon=True)
            t.start()
            self.threads.append(t)
        return str(p)

    def close(self) -> None:
        """Unblocks a feeder still waiting for a reader (the product never opened its FIFO)."""
        for p in self.fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
        for t in self.threads:
            t.join(timeout=2)


def writes(data: bytes, pieces: int = 1, pause: float = 0.0) -> Callable[[Path], None]:
    def feed(p: Path) -> None:
        with open(p, "wb") as f:
            step = max(len(data) // pieces, 1)
            for i in range(0, len(data), step):
                f.write(data[i : i + step])
                f.flush()
                time.sleep(pause)

    return feed


def opens_and_closes(p: Path) -> None:
    open(p, "wb").close()


@dataclass(frozen=True)
class AnalyzeCase:
    name: str
    build: Callable[[Inputs], list[str]]  # the case's arguments; its hostile input first
    expect: frozenset[int]  # exit codes promised
    fmt: str = "text"
    quick: bool = False
    good: bool = True  # the good log beside it must still be reported
    names_input: bool = True  # an exit 2 must come with an error line naming the input


def analyze_cases() -> list[AnalyzeCase]:
    ok, bad, either = frozenset({0}), frozenset({2}), frozenset({0, 2})
    lun, iostat, sysstat = LUN.read_text(), IOSTAT.read_text(), SYSSTAT.read_text()

    def f(name: str, content: str | bytes) -> Callable[[Inputs], list[str]]:
        return lambda i: [i.file(name, content)]

    def pipe(name: str, data: bytes, pieces: int = 1, pause: float = 0.0) -> Callable[[Inputs], list[str]]:
        return lambda i: [i.fifo(name, writes(data, pieces, pause))]

    rows4 = [("0.01", "1")] * 4
    big = perfmon([("0.01", "1")] * 3000).encode()
    return [
        AnalyzeCase("bias-huge", f("b.csv", perfmon(rows4, bias="99999999999")), bad, quick=True),
        AnalyzeCase("bias-negative-huge", f("bn.csv", perfmon(rows4, bias="-99999999999")), bad),
        AnalyzeCase("bias-huge-rows", f("b2.csv", perfmon(rows4, bias="5256000000")), bad),
        AnalyzeCase(
            "year-1-bias-pushes-out", f("y1.csv", perfmon(rows4[:1], "-600", "01/01/0001 00:00:00")), bad
        ),
        AnalyzeCase(
            "year-9999-bias-pushes-out", f("y9.csv", perfmon(rows4[:1], "600", "12/31/9999 23:59:59")), bad
        ),
        AnalyzeCase(
            "json-nested-list-100000",
            f("deep.json", '{"records": ' + "[" * 100_000 + "]" * 100_000 + "}"),
            bad,
            quick=True,
        ),
        AnalyzeCase(
            "json-nested-object-100000",
            f("deep2.json", '{"records":[' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "]}"),
            bad,
        ),
        AnalyzeCase(
            "ndjson-nested-100000",
            f("deep3.json", '{"records":[]}\n' + "[" * 100_000 + "]" * 100_000 + "\n"),
            bad,
        ),
        AnalyzeCase(
            "schema-nested-100000",
            f("schema.json", '{"counter_schemas": ' + "[" * 100_000 + "]" * 100_000 + "}"),
            bad,
        ),
        AnalyzeCase("json-nan-record", f("nan.json", '{"records": [NaN]}'), bad, quick=True),
        AnalyzeCase(
            "json-5000-digit-integer",
            f(
                "bigint.json",
                '{"records": [{"id": "a", "counters": [{"name": "read_ops", "value": ' + "9" * 5000 + "}]}]}",
            ),
            bad,
        ),
        AnalyzeCase("json-truncated", f("trunc.json", '{"records": [{"id": '), bad),
        AnalyzeCase("ontap-through-a-pipe", pipe("p-lun", lun.encode()), ok, quick=True),
        AnalyzeCase("sysstat-through-a-pipe", pipe("p-sysstat", sysstat.encode()), ok),
        AnalyzeCase("perfmon-through-a-pipe", pipe("p-perfmon", GOOD.read_bytes()), ok, quick=True),
        AnalyzeCase("iostat-through-a-pipe", pipe("p-iostat", iostat.encode()), ok),
        AnalyzeCase("json-through-a-pipe", pipe("p-json", b'{"records": []}'), ok),
        AnalyzeCase("perfmon-3000-rows-through-a-pipe", pipe("p-big", big), ok),
        AnalyzeCase("perfmon-trickled-through-a-pipe", pipe("p-slow", big, pieces=20, pause=0.1), ok),
        AnalyzeCase("empty-pipe", pipe("p-empty", b""), bad),
        AnalyzeCase("fifo-without-writer", lambda i: [i.fifo("silent")], bad, quick=True),
        AnalyzeCase("fifo-writer-closes-at-once", lambda i: [i.fifo("closes", opens_and_closes)], bad),
        AnalyzeCase("directory", lambda i: [str(i.dir)], bad, quick=True),
        AnalyzeCase("missing-file", lambda i: [str(i.dir / "nope.csv")], bad),
        AnalyzeCase("dev-zero", lambda i: ["/dev/zero"], bad, quick=True),
        AnalyzeCase("dev-null", lambda i: ["/dev/null"], bad),
        AnalyzeCase(
            "overflow-json", f("ovf.csv", perfmon([("1e308", "1.7e308")] * 4)), ok, "json", quick=True
        ),
        AnalyzeCase("overflow-text", f("ovf.csv", perfmon([("1e308", "1.7e308")] * 4)), ok),
        AnalyzeCase("overflow-html", f("ovf.csv", perfmon([("1e308", "1e308")] * 4)), ok, "html", quick=True),
        AnalyzeCase(
            "overflow-negative-json", f("ovfn.csv", perfmon([("-1e308", "1.7e308")] * 4)), ok, "json"
        ),
        AnalyzeCase("infinite-cells-json", f("inf.csv", perfmon([("inf", "-inf")] * 4)), ok, "json"),
        AnalyzeCase("nan-cells-json", f("nanc.csv", perfmon([("nan", "NaN")] * 4)), ok, "json"),
        AnalyzeCase("latency-1e300-text", f("hl.csv", perfmon([("1e300", "1e300")] * 40)), ok),
        AnalyzeCase("latency-1e300-json", f("hl.csv", perfmon([("1e300", "1e300")] * 40)), ok, "json"),
        AnalyzeCase(
            "iostat-400-digit-value-json",
            f("iov.txt", iostat.replace("0.93", "9" * 400, 1)),
            ok,
            "json",
            quick=True,
        ),
        AnalyzeCase(
            "decimal-commas", f("de.csv", perfmon([("0,012", "250,5"), ("0,02", "300")])), ok, quick=True
        ),
        AnalyzeCase("mixed-decimal-marks", f("dem.csv", perfmon([("0,012", "250.5")])), bad),
        AnalyzeCase(
            "decimal-commas-tsv",
            f(
                "de.tsv",
                '"(PDH-TSV 4.0) (UTC)(0)"\t"\\\\H\\PhysicalDisk(0 C:)\\Avg. Disk sec/Read"\n'
                '"01/15/2024 09:00:01.000"\t"0,012"\n',
            ),
            ok,
        ),
        AnalyzeCase(
            "header-20-mb-of-cells",
            f("hx.csv", '"(PDH-CSV 4.0) (UTC)(0)"' + ',"x"' * (5 << 20) + "\n"),
            bad,
            quick=True,
        ),
        AnalyzeCase("header-20-mb-no-pdh", f("hx2.csv", '"x",' * (5 << 20) + "\n"), bad),
        AnalyzeCase(
            "header-without-newline",
            f("hnn.csv", '"(PDH-CSV 4.0) (UTC)(0)"' + ',"\\\\H\\A\\B"' * 600_000),
            bad,
        ),
        AnalyzeCase(
            "row-of-20-mb-commas",
            f("rc.csv", H.format(bias="0") + '"01/15/2024 09:00:01.000"' + "," * (20 << 20) + "\n"),
            bad,
            quick=True,
        ),
        AnalyzeCase(
            "row-with-3-mb-cell",
            f("rcell.csv", H.format(bias="0") + '"01/15/2024 09:00:01.000","' + "1" * (3 << 20) + '","1"\n'),
            bad,
        ),
        AnalyzeCase("perfmon-bad-utf8", f("bad.csv", perfmon(rows4[:1]).encode() + b"\xff\xfe\xfd\n"), bad),
        AnalyzeCase(
            "perfmon-utf16-odd-length",
            f("u16.csv", b"\xff\xfe" + perfmon(rows4[:1]).encode("utf-16-le") + b"\x00"),
            bad,
        ),
        AnalyzeCase(
            "perfmon-february-30",
            f("bd.csv", H.format(bias="0") + '"02/30/2024 09:00:01.000","1","1"\n'),
            bad,
        ),
        AnalyzeCase(
            "perfmon-month-13", f("m13.csv", H.format(bias="0") + '"13/45/2024 99:99:99.000","1","1"\n'), bad
        ),
        AnalyzeCase("blg-binary", f("x.blg", b"\x00" * 100), bad),
        AnalyzeCase("ontap-binary-tail", f("lunb.txt", lun.encode() + b"\x00\xff" * 10), bad),
        AnalyzeCase("ontap-3-mb-line", f("lunl.txt", "Object: lun\nInstance: x\n" + "a" * (3 << 20)), bad),
        AnalyzeCase(
            "ontap-400-digit-counter-json",
            f("lunh.txt", lun.replace("10000000\n", "9" * 400 + "\n", 1)),
            ok,
            "json",
        ),
        AnalyzeCase(
            "sysstat-300-digit-value-json", f("ss.txt", sysstat.replace("%", "9" * 300 + "%", 1)), ok, "json"
        ),
        AnalyzeCase("ontap-year-9999-json", f("luny.txt", lun.replace("3/2/2025", "12/31/9999")), ok, "json"),
        AnalyzeCase(
            "iostat-year-9999-json", f("ioy.txt", iostat.replace("01/15/2021", "12/31/9999")), ok, "json"
        ),
        AnalyzeCase("interval-1e-320", lambda i: [str(LUN), "--interval", "1e-320"], ok),
        AnalyzeCase("interval-1e308-json", lambda i: [str(LUN), "--interval", "1e308"], ok, "json"),
        AnalyzeCase(
            "interval-nan", lambda i: [str(LUN), "--interval", "nan"], bad, good=False, names_input=False
        ),
        AnalyzeCase("interval-inf", lambda i: [str(LUN), "--interval", "inf"], either, names_input=False),
        AnalyzeCase("step-1e308", lambda i: [str(GOOD), "--step", "1e308"], ok, quick=True),
        AnalyzeCase("step-1e-300", lambda i: [str(GOOD), "--step", "1e-300"], ok),
        AnalyzeCase("every-kind-at-once-json", lambda i: [str(LUN), str(IOSTAT), str(SYSSTAT)], ok, "json"),
    ]


def judge_analyze(case: AnalyzeCase, argv: list[str], good: str, run: Run) -> tuple[str, str]:
    """(outcome, detail) of one analyze run against what is promised."""
    if run.rc is None:
        return "hang", run.killed
    wrong: list[str] = []
    if run.rc not in case.expect:
        wrong.append(f"exit {run.rc}, promised {'/'.join(map(str, sorted(case.expect)))}")
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    if run.rc == 2 and case.names_input and not any(argv[0] in line for line in errors):
        wrong.append("no error line names the input")
    if "RuntimeWarning" in run.err:
        wrong.append("a RuntimeWarning on stderr")
    if case.good and run.rc in (0, 2):
        if case.fmt == "json":
            try:
                doc = json.loads(run.out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
                if good not in [i.get("path") for i in doc.get("inputs", [])]:
                    wrong.append("the good log is not reported")
            except (ValueError, AttributeError) as e:
                wrong.append(f"not strict JSON ({str(e)[:40]})")
        elif "sql01" not in run.out.lower():
            wrong.append("the good log is not reported")
    if re.search(r"\d{31,}", run.out):
        wrong.append("a number of more than 30 digits in the report")
    if wrong:
        first = errors[0][:140] if errors else ""
        return "wrong", "; ".join(wrong) + (f" [{first}]" if first else "")
    return "ok", ""


def probe_analyze(tree: Tree, args: argparse.Namespace, work: Path) -> Category:
    cat = Category("analyze")
    cases = [c for c in analyze_cases() if c.quick or not args.quick]
    env = tree.env()

    def one(n: int, case: AnalyzeCase) -> Case:
        d = work / f"analyze-{n:02d}"
        d.mkdir()
        good = d / "good.csv"
        good.write_bytes(GOOD.read_bytes())
        inputs = Inputs(d)
        try:
            argv = case.build(inputs)
            at = next((k for k, a in enumerate(argv) if a.startswith("--")), len(argv))
            options, files = argv[at:], argv[:at]  # options first: the files are one positional list
            cmd = tree.command("analyze", "-q", "--format", case.fmt, *options, *files, str(good))
            run = run_bounded(cmd, env, d, args.timeout, args.rss_cap_mb)
        finally:
            inputs.close()
        outcome, detail = judge_analyze(case, argv, str(good), run)
        return Case("analyze", case.name, outcome, detail, crashed(run.err) > 0, run.rss_mb, run.seconds)

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        cat.cases = list(pool.map(lambda nc: one(*nc), enumerate(cases)))
    cat.tracebacks = sum(c.traceback for c in cat.cases)
    cat.peak_rss_mb = max((c.rss_mb for c in cat.cases), default=0.0)
    return cat
