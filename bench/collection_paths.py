#!/usr/bin/env python3
"""What each collection path costs the cluster: the counter tables against the objects' statistics fields.

One simulated cluster (its own process, so its CPU time is the "cluster's" work) is polled by
one exporter source per path, in turn. Per poll cycle after the first: the requests the
cluster answered, the bytes it sent, the CPU seconds the simulator spent answering, and the
exporter's own CPU seconds. Medians over the measured cycles.

The simulator's CPU is a proxy for the cluster's work, not a measurement of ONTAP's: it
shows how the request count and the bytes built per poll scale with each path.

    .venv/bin/python bench/collection_paths.py [--cycles 5] [--luns 5000] [--volumes 2000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from poll_scale import _free_port, _start_simulator  # the same simulator start-up as the poll benchmark
from sanlens.config import Duration, OntapTarget
from sanlens.ontap.collector import OntapSource

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(args: argparse.Namespace, collection: str) -> dict[str, Any]:
    port = _free_port()
    sim = _start_simulator(args, port)
    try:
        target = OntapTarget(
            name="bench", url=f"http://127.0.0.1:{port}", poll_interval=Duration(60.0), collection=collection
        )
        source = OntapSource(target)
        counts = {"requests": 0, "bytes": 0}

        def count(resp: Any, *_a: Any, **_k: Any) -> None:
            counts["requests"] += 1
            counts["bytes"] += len(resp.content)

        source.client.session.hooks["response"].append(count)
        rows: dict[str, list[float]] = {
            "requests": [],
            "bytes": [],
            "cluster_cpu_s": [],
            "exporter_cpu_s": [],
        }
        for i in range(args.cycles + 1):
            if i:
                time.sleep(1.0)  # statistics timestamps move by the second: a later sample each cycle
            counts.update(requests=0, bytes=0)
            s0, c0 = _cpu_s(sim.pid), time.process_time()
            snap = source.poll()
            s1, c1 = _cpu_s(sim.pid), time.process_time()
            if i:
                rows["requests"].append(counts["requests"])
                rows["bytes"].append(counts["bytes"])
                rows["cluster_cpu_s"].append(s1 - s0)
                rows["exporter_cpu_s"].append(c1 - c0)
            cooked = sum(1 for x in snap.view.luns if x.read_iops is not None) if snap.view else 0
            print(f"  {collection} cycle {i}: {counts['requests']} requests, {counts['bytes'] / 1e6:.1f} MB, "
                  f"cluster {s1 - s0:.2f} CPU-s, exporter {c1 - c0:.2f} CPU-s, {cooked} LUNs cooked", flush=True)  # fmt: skip
        source.close()
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    return {k: statistics.median(v) for k, v in rows.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--luns", type=int, default=5000)
    ap.add_argument("--volumes", type=int, default=2000)
    ap.add_argument("--disks", type=int, default=500)
    ap.add_argument("--scenario", default="healthy")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    print(f"collection_paths: {args.nodes} nodes, {args.luns} LUNs, {args.volumes} volumes, {args.disks} disks",
          flush=True)  # fmt: skip
    result = {mode: measure(args, mode) for mode in ("tables", "statistics")}
    for mode, r in result.items():
        print(f"{mode:>10}: {r['requests']:.0f} requests, {r['bytes'] / 1e6:.1f} MB, cluster "
              f"{r['cluster_cpu_s']:.2f} CPU-s, exporter {r['exporter_cpu_s']:.2f} CPU-s per poll (median)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
