#!/usr/bin/env python3
"""What a `source: prometheus` target costs the query API: Harvest's series for a large cluster.

A Harvest page for N LUNs, N/2 volumes, 24 nodes, 2,000 disks and 96 FC ports is generated in the
shapes of the real capture (tests/data/harvest/san-oversubscription.prom: the same families, label
sets and units), served to a real Prometheus, and read back by one HarvestSource poll after another.
Per poll: the queries sent, the bytes the API answered, the wall time, and Prometheus's CPU seconds.

    .venv/bin/python bench/harvest_queries.py [--luns 10000] [--polls 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import http.server
import json
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from collection_paths import _cpu_s  # the simulator-side CPU reading of the collection-path benchmark
from poll_scale import _free_port
from sanlens.config import OntapTarget
from sanlens.ontap.harvest_source import HarvestSource


def page(luns: int, nodes: int = 24, disks: int = 2000, ports: int = 96) -> bytes:
    """Harvest's families for one cluster, in the label sets of the real capture."""
    c = 'cluster="big",datacenter="dc1"'
    out: list[str] = []
    for i in range(luns):
        v, node = f"vol{i // 2}", f"big-{i % nodes + 1:02d}"
        k = f'{c},svm="svm1",volume="{v}",lun="lun{i % 2}"'
        serial = f"{i:012d}".encode().hex()
        out += [f"lun_read_ops{{{k}}} 210", f"lun_write_ops{{{k}}} 90", f"lun_read_data{{{k}}} 1720320",
                f"lun_write_data{{{k}}} 737280", f"lun_avg_read_latency{{{k}}} 1000", f"lun_avg_write_latency{{{k}}} 1000",
                f'lun_labels{{{k},node="{node}",qtree="",serial_hex="{serial}",state="online"}} 1']  # fmt: skip
    for j in range(luns // 2):
        k = f'{c},svm="svm1",volume="vol{j}",aggr="aggr{j % nodes}",node="big-{j % nodes + 1:02d}",style="flexvol"'
        out += [f"volume_{m}{{{k}}} {x}" for m, x in (("read_ops", 420), ("write_ops", 180), ("other_ops", 12),
                ("total_ops", 612), ("read_latency", 1000), ("write_latency", 1000), ("avg_latency", 983))]  # fmt: skip
        out.append(f"volume_labels{{{k}}} 1")
    for n in range(nodes):
        k = f'{c},node="big-{n + 1:02d}"'
        out += [f"node_cpu_busy{{{k}}} 30", f"node_avg_processor_busy{{{k}}} 20",
                f'node_labels{{{k},model="AFF-A800",version="NetApp Release 9.12.1: Tue Jan 10 14:31:20 UTC 2023"}} 1']  # fmt: skip
        out += [f'node_cpu_domain_busy{{{k},metric="d{d}"}} 10' for d in range(21)]
    for p in range(ports):
        k = f'{c},node="big-{p % nodes + 1:02d}",port="{p}",speed="32"'
        out += [f"fcp_read_data{{{k}}} 8e8", f"fcp_write_data{{{k}}} 1e8", f"fcp_queue_full{{{k}}} 0"]
    for d in range(disks):
        k = f'{c},node="big-{d % nodes + 1:02d}",aggr="aggr{d % nodes}",plex="plex0",raid="rg{d % 4}",disk="{d}"'
        out.append(f"raid_disk_busy{{{k}}} 25")
    return ("\n".join(out) + "\n").encode()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--luns", type=int, default=10000)
    ap.add_argument("--polls", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    body = page(args.luns)
    print(f"harvest_queries: {args.luns} LUNs, page {len(body) / 1e6:.1f} MB", flush=True)

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="harvest-bench-"))
    port = _free_port()
    (work / "prometheus.yml").write_text(
        "global: {scrape_interval: 15s, scrape_timeout: 10s}\nscrape_configs:\n"
        f"  - job_name: harvest\n    static_configs: [{{targets: ['127.0.0.1:{server.server_address[1]}']}}]\n"
    )
    prom = subprocess.Popen(
        ["/usr/bin/prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/api/v1/query?query=count(lun_read_ops)", timeout=5) as r:
                    res = json.load(r)["data"]["result"]
                if res and float(res[0]["value"][1]) >= args.luns:
                    break
            except OSError:
                pass
            time.sleep(1)
        src = HarvestSource(OntapTarget(name="big", url=url, source="prometheus"))
        got = {"bytes": 0}
        src.client.session.hooks["response"].append(
            lambda r, *_a, **_k: got.__setitem__("bytes", got["bytes"] + len(r.content))
        )
        rows = []
        for i in range(args.polls):
            got["bytes"], q0 = 0, src.queries
            p0, w0 = _cpu_s(prom.pid), time.perf_counter()
            view = src.poll().view
            w1, p1 = time.perf_counter(), _cpu_s(prom.pid)
            n = len(view.luns) if view else 0
            rows.append(
                {
                    "queries": src.queries - q0,
                    "bytes": got["bytes"],
                    "wall_s": w1 - w0,
                    "prometheus_cpu_s": p1 - p0,
                }
            )
            print(f"  poll {i}: {src.queries - q0} queries, {got['bytes'] / 1e6:.1f} MB, {w1 - w0:.2f} s wall, "
                  f"Prometheus {p1 - p0:.2f} CPU-s, {n} LUNs", flush=True)  # fmt: skip
        src.close()
    finally:
        prom.terminate()
        prom.wait(timeout=20)
        server.shutdown()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"median per poll: {med['queries']:.0f} queries, {med['bytes'] / 1e6:.1f} MB, {med['wall_s']:.2f} s wall, "
          f"Prometheus {med['prometheus_cpu_s']:.2f} CPU-s")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(med, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
