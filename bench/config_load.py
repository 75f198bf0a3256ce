#!/usr/bin/env python3
"""Config-load benchmark: ``load_config`` of a generated 100,000-host file.

The file is the one the scale tests load (tests/unit/test_config_validation.py): one flow
mapping per host, ``{name: hN, url: 'http://hN:9182'}``. Two cases: ``valid`` loads,
``duplicate`` repeats one name at the end, so the whole error path runs too (the problem
is located by line and key path). Each run is a fresh interpreter, so the peak RSS is that
load's own; the figures are the medians over the runs.

    .venv/bin/python bench/config_load.py [--hosts 100000] [--runs 5] [--exporter DIR] [--json out.json]

``--exporter`` loads another tree's ``sanlens`` (e.g. a ``git worktree`` of an older
commit, ``--exporter /tmp/sanlens-head/exporter``) to compare before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import gc, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
try:
    from sanlens.config.load import load_config
except ImportError:  # a tree from before the config package
    from sanlens.config import load_config
from sanlens.errors import ConfigErrors
gc.collect()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    cfg = load_config(sys.argv[2])
    outcome = f"{len(cfg.hosts)} hosts"
except ConfigErrors as e:
    outcome = f"{e.count} problem(s): {e.problems[0].located()[:80]}"
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"seconds": seconds, "rss_before_kib": before, "rss_peak_kib": peak, "outcome": outcome}))
"""


def config_text(hosts: int, duplicate: bool) -> str:
    text = "hosts:\n" + "".join(f"  - {{name: h{i}, url: 'http://h{i}:9182'}}\n" for i in range(hosts))
    if duplicate:
        text += "  - {name: h7, url: 'http://h7:9182'}\n"
    return text


def run_once(exporter: Path, path: Path) -> dict[str, object]:
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(exporter), str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if p.returncode != 0:
        raise SystemExit(f"the load failed:\n{p.stderr}")
    out: dict[str, object] = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--exporter", type=Path, default=ROOT / "exporter", help="the tree holding sanlens/")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("valid", "duplicate"):
            path = Path(tmp) / f"{case}.yaml"
            path.write_text(config_text(args.hosts, case == "duplicate"), encoding="utf-8")
            runs = [run_once(args.exporter, path) for _ in range(args.runs)]
            seconds = [float(str(r["seconds"])) for r in runs]
            peaks = [int(str(r["rss_peak_kib"])) / 1024 for r in runs]
            growth = [(int(str(r["rss_peak_kib"])) - int(str(r["rss_before_kib"]))) / 1024 for r in runs]
            results[case] = {
                "file_mb": round(path.stat().st_size / 1e6, 2),
                "seconds_median": round(statistics.median(seconds), 3),
                "seconds_min": round(min(seconds), 3),
                "seconds_max": round(max(seconds), 3),
                "peak_rss_mb_median": round(statistics.median(peaks), 1),
                "load_rss_growth_mb_median": round(statistics.median(growth), 1),
                "outcome": runs[0]["outcome"],
            }
            r = results[case]
            print(
                f"{case:9} {args.hosts:,} hosts ({r['file_mb']} MB): load {r['seconds_median']:.2f} s median "
                f"(min {r['seconds_min']:.2f}, max {r['seconds_max']:.2f}, {args.runs} runs); "
                f"peak RSS {r['peak_rss_mb_median']:.0f} MB (+{r['load_rss_growth_mb_median']:.0f} MB "
                f"over the imports); {r['outcome']}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
