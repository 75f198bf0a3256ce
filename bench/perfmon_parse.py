"""Benchmark: `sanlens analyze` statistics over a generated PerfMon CSV.

Generates a relog-style CSV with 500 counter columns (default 1 GB) in a temp
dir, then summarises it in a fresh child process per run and reports the
median throughput (MB/s) and peak RSS (MB). Targets: >= 50 MB/s, <= 200 MB.

    .venv/bin/python bench/perfmon_parse.py --size-mb 200 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHILD = """
import json, resource, sys, time
from sanlens.analyze.perfmon_summary import summarize
t = time.perf_counter()
s = summarize(sys.argv[1], engine=sys.argv[2])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "samples": s.samples, "engine": s.engine, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def generate(path: Path, size_mb: float, columns: int, seed: int = 1) -> int:
    """Write the log; rows cycle through 64 pre-drawn value sets (drawing 85M floats would dominate)."""
    rnd = random.Random(seed)
    objects = ["PhysicalDisk", "LogicalDisk", "Processor", "Process", "Network Interface"]
    counters = [
        "Avg. Disk sec/Read",
        "Disk Reads/sec",
        "% Idle Time",
        "Current Disk Queue Length",
        "% Processor Time",
    ]
    names = [f'"\\\\SQL01\\{objects[i % 5]}({i // 5} X:)\\{counters[(i // 5) % 5]}"' for i in range(columns)]
    header = '"(PDH-CSV 4.0) (Pacific Standard Time)(480)",' + ",".join(names) + "\r\n"
    bodies = [
        ",".join(
            f'"{rnd.choice((rnd.uniform(0, 0.05), rnd.uniform(0, 5000), rnd.randint(0, 64))):.6f}"'
            for _ in range(columns)
        )
        for _ in range(64)
    ]
    target = int(size_mb * 1024 * 1024)
    t0 = 1_700_000_000
    with open(path, "w", encoding="ascii", newline="") as f:
        f.write(header)
        f.write('"11/14/2023 22:13:05.000",' + ",".join('" "' for _ in range(columns)) + "\r\n")
        written, i = len(header), 0
        while written < target:
            ts = time.strftime("%m/%d/%Y %H:%M:%S", time.gmtime(t0 + 15 * i)) + ".000"
            line = f'"{ts}",{bodies[i % 64]}\r\n'
            f.write(line)
            written += len(line)
            i += 1
    return path.stat().st_size


def run_once(path: Path, engine: str) -> dict[str, Any]:
    env = dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), engine], check=True, capture_output=True, text=True, env=env
    ).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1024.0, help="generated file size (default 1024)")
    ap.add_argument("--columns", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--engine",
        choices=("auto", "python"),
        default="auto",
        help="auto: pyarrow when installed, else Python; python: the pure-Python reader",
    )
    ap.add_argument("--dir", default=None, help="where to write the file (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "bench.csv"
        t = time.perf_counter()
        size = generate(path, args.size_mb, args.columns)
        print(f"generated {size / 1e6:.0f} MB ({args.columns} columns) in {time.perf_counter() - t:.1f}s")
        results = [run_once(path, args.engine) for _ in range(args.runs)]
    mbs = [size / 1e6 / r["seconds"] for r in results]
    rss = [r["rss_kb"] / 1024 for r in results]
    for r, m in zip(results, mbs, strict=True):
        print(
            f"  run ({r['engine']}): {r['seconds']:.2f}s  {m:.1f} MB/s  rows {r['samples']}  "
            f"peak RSS {r['rss_kb'] / 1024:.0f} MB"
        )
    print(
        f"median: {statistics.median(mbs):.1f} MB/s (target >= 50), "
        f"peak RSS {statistics.median(rss):.0f} MB (target <= 200)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
