#!/usr/bin/env python3
"""`sanlens serve` beside NetApp Harvest's poller, polling the same simulated cluster, same run.

The simulator (HTTPS, healthy, 8 nodes, 5,000 LUNs, 2,000 volumes, 500 disks by default) runs in
its own process. Harvest's poller (built from its public source: ``--harvest-dir``, as
``harvest_conformance.py`` builds it) reads it with its Rest, RestPerf and KeyPerf collectors
(every object of what sanlens reads: performance every ``--interval``, its QoS workloads every
3 min as its templates say, its Rest inventory at its default 3 min); ``sanlens serve`` reads the
same cluster's tables at the same interval, QoS every 3 min (its QoS detail tables too, which
Harvest no longer reads), its inventory by change and in full every 5 min, and judges it. Each exporter's page is
scraped once per cycle, as Prometheus would. After ``--warmup`` cycles, per exporter: CPU seconds
per cycle (from /proc, the process alone) and peak RSS (VmHWM).

Not run in CI (it needs a built Harvest poller).

    .venv/bin/python bench/serve_vs_harvest.py --harvest-dir /tmp/harvest [--cycles 5] [--interval 30]
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from harvest_conformance import TEMPLATES, ensure_poller, free_port, write_config
from serve_scale import proc_cpu_s, proc_kb

# Harvest reads every object of what sanlens reads by default (the conformance run's templates: its
# fifteen counter tables' objects, the inventory, the front end and QoS). Harvest's Workload and
# WorkloadVolume keep their template's own 3 min schedule (NetApp: workload objects are expensive);
# sanlens reads QoS on the same schedule (``qos_interval``), its detail tables included.
QOS_EVERY_S = 180


def wait_http(url: str, timeout: float, ctx: ssl.SSLContext | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
                r.read()
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer within {timeout:.0f} s")


def scrape(url: str) -> int:
    with urllib.request.urlopen(url, timeout=30) as r:
        return len(r.read())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harvest-dir", type=Path, default=Path(os.environ.get("HARVEST_DIR", "/tmp/harvest")))
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--luns", type=int, default=5000)
    ap.add_argument("--volumes", type=int, default=2000)
    ap.add_argument("--disks", type=int, default=500)
    ap.add_argument("--interval", type=int, default=30, help="poll interval of both, seconds (30)")
    ap.add_argument(
        "--rest-interval", type=int, default=180, help="Harvest's Rest (inventory) schedule, s (180)"
    )
    ap.add_argument("--warmup", type=int, default=2, help="cycles before measuring (2)")
    ap.add_argument("--cycles", type=int, default=5, help="measured cycles (5)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    harvest = args.harvest_dir.resolve()
    poller = ensure_poller(harvest)
    work = Path(tempfile.mkdtemp(prefix="serve-vs-harvest-"))
    every = f"{args.interval}s"
    for folder, (collector, _every, objects) in list(TEMPLATES.items()):
        # performance at the same interval as sanlens; Harvest's inventory (Rest) at its own default
        TEMPLATES[folder] = (collector, f"{args.rest_interval}s" if collector == "Rest" else every, objects)
    sim_port, harvest_port, sanlens_port = free_port(), free_port(), free_port()
    py = sys.executable
    procs: list[subprocess.Popen[bytes]] = []
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        sim = subprocess.Popen(
            [py, "-m", "sanlens", "simulate", "--scenario", "healthy", "--tls", "--port", str(sim_port),
             "--nodes", str(args.nodes), "--luns", str(args.luns), "--volumes", str(args.volumes),
             "--disks", str(args.disks)],
            stdout=(work / "sim.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs.append(sim)
        wait_http(f"https://127.0.0.1:{sim_port}/api/cluster", 180, ctx)
        cfg = write_config(work, sim_port, harvest_port)
        hv = subprocess.Popen(
            [str(poller), "--poller", "sim", "--config", str(cfg), "--confpath", f"{work / 'conf'}:{harvest / 'conf'}",
             "--loglevel", "2", "--promPort", str(harvest_port)],
            cwd=harvest, stdout=(work / "poller.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs.append(hv)
        sanlens_cfg = work / "sanlens.yaml"
        sanlens_cfg.write_text(
            json.dumps(
                {
                    "listen": f"127.0.0.1:{sanlens_port}",
                    "ontap": [
                        {
                            "name": "sim",
                            "url": f"https://127.0.0.1:{sim_port}",
                            "poll_interval": every,
                            "qos_interval": f"{QOS_EVERY_S}s",
                            "tls": {"insecure_skip_verify": True},
                        }
                    ],
                }
            )
        )
        sl = subprocess.Popen(
            [py, "-m", "sanlens", "serve", "--config", str(sanlens_cfg)],
            stdout=(work / "sanlens.log").open("wb"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs.append(sl)
        pages = {
            "sanlens": f"http://127.0.0.1:{sanlens_port}/metrics",
            "harvest": f"http://127.0.0.1:{harvest_port}/metrics",
        }
        for url in pages.values():
            wait_http(url, 120)
        pids = {"sanlens": sl.pid, "harvest": hv.pid}
        print(f"serve_vs_harvest: {args.luns} LUNs, {args.volumes} volumes, {args.nodes} nodes, every {every}; "
              f"warming up {args.warmup} cycles (work dir {work})", flush=True)  # fmt: skip
        time.sleep(args.warmup * args.interval)
        cpu0 = {k: proc_cpu_s(p) for k, p in pids.items()}
        sizes: dict[str, list[int]] = {k: [] for k in pids}
        per_cycle: dict[str, list[float]] = {k: [] for k in pids}
        for i in range(args.cycles):
            start = {k: proc_cpu_s(p) for k, p in pids.items()}
            t_end = time.monotonic() + args.interval
            for k, url in pages.items():
                sizes[k].append(scrape(url))
            time.sleep(max(0.0, t_end - time.monotonic()))
            for k, p in pids.items():
                per_cycle[k].append(proc_cpu_s(p) - start[k])
            print(
                f"  cycle {i + 1}: " + ", ".join(f"{k} {per_cycle[k][-1]:.2f} CPU-s" for k in pids),
                flush=True,
            )
        out: dict[str, Any] = {
            "scale": {"nodes": args.nodes, "luns": args.luns, "volumes": args.volumes, "disks": args.disks},
            "interval_s": args.interval,
            "harvest_rest_interval_s": args.rest_interval,
        }
        for k, p in pids.items():
            total = proc_cpu_s(p) - cpu0[k]
            out[k] = {
                "cpu_s_per_cycle": round(total / args.cycles, 3),
                "peak_rss_mb": round(proc_kb(p, "VmHWM") / 1024.0, 1),
                "page_bytes": sizes[k][-1],
            }
        ratio = out["sanlens"]["cpu_s_per_cycle"] / max(out["harvest"]["cpu_s_per_cycle"], 1e-9)
        out["cpu_ratio_sanlens_to_harvest"] = round(ratio, 2)
        print(json.dumps(out, indent=2))
        if args.json:
            args.json.write_text(json.dumps(out, indent=2) + "\n")
        return 0
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
