#!/usr/bin/env python3
"""Hostile-input probe: `sanlens analyze`, `sanlens serve`'s pollers and its HTTP server, fed what a
broken or malicious peer sends, each case judged against the outcome the product promises.

Three categories, each case in a bounded time:

- analyze: hostile inputs beside a good PerfMon log (huge time-zone biases, JSON nested 100,000
  deep, NaN and 5,000-digit numbers, inputs through pipes and FIFOs nobody writes to, directories,
  /dev/zero, values near the float maximum, decimal commas, 20 MB header rows and data rows,
  broken encodings, absurd --interval/--step). Promised: exit 0 (nothing wrong) or 2 (an input
  could not be read), that input's own ``error:`` line, the good log still reported, strict JSON,
  no 300-digit numbers.
- upstream: `sanlens serve` polling one ONTAP cluster and one windows_exporter host through a
  proxy in this process that turns the simulator's answers hostile (400 MB bodies with and
  without a length, bodies cut short, redirect loops, redirects to ``file://`` and to another
  server, garbage records, ``503`` with ``Retry-After: 99999``, 250,000 series, a series twice, a
  megabyte label value), and a Prometheus query API with a password in its URL. Promised: each
  fails the next poll with its own ``reason`` (the ``sanlens_poll_errors_total`` label), the
  target is up again at the first poll after the fault clears, no other server is asked, no
  password in the log or on /metrics.
- http: raw requests and connection floods against `sanlens serve`'s listener at its real
  defaults (long URLs and heads, HTTP/0.9..9.9, ``Expect``, malformed and random heads, 1,030
  silent connections, 600 heads that never end, one address flooding). Promised: the right
  status (414/431/505/100/413/417/408), never a reset or a hang, and /-/healthy and /metrics
  answered at once while a flood is held open.

Per category: cases tried, tracebacks seen (``Traceback`` or ``error: unexpected`` in a
process's output), hangs (no outcome within the case's time), wrong outcomes (exit code, reason
or status not the promised one) and the peak RSS of the product's processes.

The product runs from ``--tree`` (default: this checkout) with this interpreter and
``PYTHONPATH=<tree>/exporter``, driven only through ``python -m sanlens`` and over HTTP, so the
same probe runs against an older checkout (``git worktree add /tmp/before <commit>``). Exit 1
when a case is not ok. About 3 minutes (5 against code that hangs); ``--quick`` about 1.5.

    .venv/bin/python bench/hostile_probe.py [--tree PATH] [--quick] [--only analyze,upstream,http]
        [--jobs 2] [--timeout 20] [--rss-cap-mb 8192] [--json out.json] [--logs DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from hostile.analyze_inputs import probe_analyze
from hostile.common import CATEGORIES, ROOT, Category, Tree
from hostile.http_requests import probe_http
from hostile.upstreams import probe_upstream


# ------------------------------------------------------------------ report
def table(cats: list[Category]) -> str:
    head = ("category", "cases", "tracebacks", "hangs", "wrong", "skipped", "peak RSS MB", "wall s")
    rows = [head] + [
        (
            c.name,
            str(len(c.cases) - c.count("skipped")),
            str(c.tracebacks),
            str(c.count("hang")),
            str(c.count("wrong")),
            str(c.count("skipped")),
            f"{c.peak_rss_mb:.0f}",
            f"{c.seconds:.0f}",
        )
        for c in cats
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--tree", type=Path, default=ROOT, help="checkout whose code is probed (default: this one)"
    )
    ap.add_argument("--quick", action="store_true", help="a subset of every category (about 1.5 minutes)")
    ap.add_argument("--only", default=",".join(CATEGORIES), help="categories, comma-separated (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="analyze runs side by side (default 2)")
    ap.add_argument(
        "--timeout", type=float, default=20.0, help="seconds an analyze run may take (default 20)"
    )
    ap.add_argument(
        "--rss-cap-mb",
        type=float,
        default=8192.0,
        help="a product process over this is killed (default 8192)",
    )
    ap.add_argument("--json", help="also write the results as JSON here ('-': stdout, instead of the table)")
    ap.add_argument("--logs", type=Path, help="keep the inputs and the exporters' logs in this folder")
    args = ap.parse_args(argv)
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    if unknown := set(only) - set(CATEGORIES):
        ap.error(f"--only: unknown {', '.join(sorted(unknown))} (known: {', '.join(CATEGORIES)})")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4096:  # the floods hold over a thousand sockets
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (4096 if hard == resource.RLIM_INFINITY else min(4096, hard), hard)
        )
    tree = Tree(args.tree.resolve())
    where = tree.check()
    say = (
        (lambda *a: print(*a, file=sys.stderr, flush=True))
        if args.json == "-"
        else (lambda *a: print(*a, flush=True))
    )
    say(f"hostile_probe: {tree.path} (sanlens from {where}){' --quick' if args.quick else ''}")

    probes = {"analyze": probe_analyze, "upstream": probe_upstream, "http": probe_http}
    cats: list[Category] = []
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=f"{time.strftime('%Y%m%d-%H%M%S')}-", dir=args.logs))
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sanlens-hostile-")))
        for name in only:
            say(f"hostile_probe: {name} ...")
            t0 = time.monotonic()
            d = work / name
            d.mkdir(exist_ok=True)
            cat = probes[name](tree, args, d)
            cat.seconds = time.monotonic() - t0
            cats.append(cat)
    total = time.monotonic() - started

    report = {
        "tree": str(tree.path),
        "quick": args.quick,
        "seconds": round(total, 1),
        "categories": [
            {
                "name": c.name,
                "cases": len(c.cases) - c.count("skipped"),
                "tracebacks": c.tracebacks,
                "hangs": c.count("hang"),
                "wrong": c.count("wrong"),
                "skipped": c.count("skipped"),
                "peak_rss_mb": round(c.peak_rss_mb, 1),
                "seconds": round(c.seconds, 1),
                "note": c.note,
                "results": [
                    asdict(x) | {"rss_mb": round(x.rss_mb, 1), "seconds": round(x.seconds, 2)}
                    for x in c.cases
                ],
            }
            for c in cats
        ],
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        print()
        print(table(cats))
        for c in cats:
            bad = [x for x in c.cases if x.outcome != "ok" or x.traceback]
            if c.note:
                print(f"\n{c.name}: {c.note}")
            if bad:
                print(f"\n{c.name}: not as promised")
                for x in bad:
                    tb = " (traceback)" if x.traceback else ""
                    print(f"  {x.outcome:7} {x.name}{tb}: {x.detail}")
        print(f"\n{total:.0f} s in all")
    return 1 if any(c.tracebacks or c.count("hang") or c.count("wrong") or not c.cases for c in cats) else 0


if __name__ == "__main__":
    sys.exit(main())
