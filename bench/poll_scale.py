#!/usr/bin/env python3
"""Poll-scale benchmark: one exporter polling every table of a large simulated cluster.

The simulator runs in its own process so that the CPU time measured here is the
exporter's alone. Reports medians over the measured poll cycles; the first
cycle (schema reads, inventory, no rates yet) is reported separately.

Targets: <= 2 CPU-s per full poll cycle, <= 1 s per /metrics render,
<= 300 MB peak RSS, at 24 nodes, 10,000 LUNs, 5,000 volumes and 2,000 disks.

    .venv/bin/python bench/poll_scale.py [--cycles 5] [--luns 10000] ... [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sanlens.config import Duration, OntapTarget
from sanlens.ontap.collector import OntapSource
from sanlens.serve.exposition import Exposition
from sanlens.store import State

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _start_simulator(args: argparse.Namespace, port: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "sanlens", "simulate", "--scenario", args.scenario, "--port", str(port),
        "--nodes", str(args.nodes), "--luns", str(args.luns), "--volumes", str(args.volumes),
        "--disks", str(args.disks),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise SystemExit(f"simulator exited with {proc.returncode}:\n{err}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cluster", timeout=2):
                return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("simulator did not answer within 120 s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=5, help="measured poll cycles after the first (default 5)")
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--luns", type=int, default=10000)
    ap.add_argument("--volumes", type=int, default=5000)
    ap.add_argument("--disks", type=int, default=2000)
    ap.add_argument("--scenario", default="healthy")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args(argv)

    port = _free_port()
    print(f"poll_scale: starting simulator ({args.nodes} nodes, {args.luns} LUNs, "
          f"{args.volumes} volumes, {args.disks} disks) on :{port}", flush=True)  # fmt: skip
    sim = _start_simulator(args, port)
    try:
        target = OntapTarget(name="bench", url=f"http://127.0.0.1:{port}", poll_interval=Duration(60.0))
        source = OntapSource(target)
        state = State()
        state.register(source.name, source.kind, target.poll_interval)
        cpu: list[float] = []
        wall: list[float] = []
        first: tuple[float, float] | None = None
        for i in range(args.cycles + 1):
            if i:
                time.sleep(1.0)  # a non-zero interval so rates are cooked
            c0, w0 = time.process_time(), time.perf_counter()
            snap = source.poll()
            c1, w1 = time.process_time(), time.perf_counter()
            state.record_success(snap, w1 - w0)
            if i == 0:
                first = (c1 - c0, w1 - w0)
            else:
                cpu.append(c1 - c0)
                wall.append(w1 - w0)
            print(f"  cycle {i}: {c1 - c0:.2f} CPU-s, {w1 - w0:.2f} s wall", flush=True)
        source.close()

        # /metrics as the server renders it: the first scrape after a poll renders the snapshot's
        # text and deflates it; later gzip scrapes reuse the answer until the next poll, and a
        # plain scrape inflates it piece by piece.
        renders: list[float] = []
        cached: list[float] = []
        plain: list[float] = []
        for _ in range(3):
            exposition = Exposition(state)
            t0 = time.perf_counter()
            exposition.gzip()
            renders.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            exposition.gzip()
            cached.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            size, pieces = exposition.plain()
            assert sum(len(p) for p in pieces) == size
            plain.append(time.perf_counter() - t0)
        body = exposition.render()
        series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
        families = len(re.findall(rb"^# TYPE ", body, flags=re.M))
    finally:
        sim.terminate()
        try:
            sim.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sim.kill()

    assert first is not None
    result = {
        "scale": {"nodes": args.nodes, "luns": args.luns, "volumes": args.volumes, "disks": args.disks},
        "cycles": args.cycles,
        "first_poll_cpu_s": round(first[0], 3),
        "first_poll_wall_s": round(first[1], 3),
        "median_poll_cpu_s": round(statistics.median(cpu), 3),
        "median_poll_wall_s": round(statistics.median(wall), 3),
        "median_render_s": round(statistics.median(renders), 3),
        "median_cached_render_s": round(statistics.median(cached), 3),
        "median_plain_scrape_s": round(statistics.median(plain), 3),
        "response_bytes": len(body),
        "series": series,
        "families": families,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }
    targets = {"median_poll_cpu_s": 2.0, "median_render_s": 1.0, "peak_rss_mb": 300.0}
    print(json.dumps(result, indent=2))
    for key, limit in targets.items():
        verdict = "ok" if result[key] <= limit else "MISSED"  # type: ignore[operator]
        print(f"target {key} <= {limit}: {result[key]} {verdict}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
