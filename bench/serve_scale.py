#!/usr/bin/env python3
"""Serve-scale benchmark: `sanlens serve`, engine included, scraped concurrently at scale.

The simulator (healthy, 24 nodes, 10,000 LUNs, 5,000 volumes, 2,000 disks and its two
Windows hosts by default) and the exporter (`python -m sanlens serve`) each run in their
own process, so the CPU time read from /proc is the exporter's alone. After a warm-up
(rates cooked, the engine judging), three phases of a few ONTAP poll cycles each:

- idle: no scrapes (one light look per cycle to read the poll duration);
- 1 scraper, then N scrapers (20 by default): each asks for /metrics with
  ``Accept-Encoding: gzip`` on a keep-alive connection, once a second, as Prometheus does.
  The scrapers run in a process of their own, apart from the bench's own page reading.

Per phase: exporter CPU seconds per ONTAP poll cycle (host polls, engine and rendering
included), scrape p50/p99, and the ONTAP poll's wall time. Then the series count, the
body size plain and gzip, and the exporter's peak RSS (VmHWM).

Targets (exit 1 when one is missed): <= 1.0 CPU-s per 60 s poll cycle at 10,000 LUNs; scrape p99 <= 100 ms
with N scrapers; poll wall time under load within 20 % of idle; peak RSS <= 200 MB;
gzip body <= 15 % of plain.

    .venv/bin/python bench/serve_scale.py [--interval 60] [--cycles 3] [--scrapers 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soak import add_scale_arguments, free_port, percentile, stop_processes, wait_until
from soak import http as fetch

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {
    "cpu_per_poll_s": 1.0,
    "scrape_p99_ms": 100.0,
    "poll_wall_under_load_ratio": 1.2,
    "peak_rss_mb": 200.0,
    "gzip_ratio": 0.15,
}


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def proc_kb(pid: int, key: str) -> float:
    m = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return float(m[1]) if m else float("nan")


def sample_value(page: str, name: str, **labels: str) -> float | None:
    """One sample's value, found by a regex over the whole page (C speed, not a Python loop)."""
    lv = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(lv)}\}} (\S+)$", page, re.M)
    return float(m[1]) if m else None


@dataclass
class Scraper:
    """One Prometheus-like client: gzip, keep-alive, a fixed period."""

    host: str
    port: int
    period: float
    stop: Any  # threading.Event or multiprocessing.Event
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        conn: http.client.HTTPConnection | None = None
        next_at = time.monotonic()
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                t0 = time.perf_counter()
                conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
                resp = conn.getresponse()
                resp.read()
                took = time.perf_counter() - t0
                if resp.status != 200:
                    self.errors.append(f"HTTP {resp.status}")
                self.latencies.append(took)
            except (OSError, http.client.HTTPException) as e:
                self.errors.append(repr(e))
                if conn is not None:
                    conn.close()
                conn = None
            next_at += self.period
            self.stop.wait(max(next_at - time.monotonic(), 0.0))
        if conn is not None:
            conn.close()


def scrape_process(port: int, n: int, period: float, stop: Any, out: Any) -> None:
    """N scrapers in a process of their own, so the bench's page reading never delays them."""
    clients = [Scraper("127.0.0.1", port, period, stop) for _ in range(n)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(([x for c in clients for x in c.latencies], [e for c in clients for e in c.errors]))


@dataclass
class Phase:
    name: str
    scrapers: int
    cpu_per_poll_s: float = 0.0
    polls: int = 0
    poll_wall_s: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        lat = self.latencies
        return {
            "scrapers": self.scrapers,
            "ontap_polls": self.polls,
            "cpu_per_poll_s": round(self.cpu_per_poll_s, 3),
            "poll_wall_median_s": round(statistics.median(self.poll_wall_s), 3) if self.poll_wall_s else None,
            "scrapes": len(lat),
            "scrape_p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
            "scrape_p99_ms": round(percentile(lat, 99) * 1000, 1) if lat else None,
            "scrape_errors": self.errors[:5],
        }


class Bench:
    def __init__(
        self, args: argparse.Namespace, exporter: subprocess.Popen[bytes], port: int, cluster: str
    ) -> None:
        self.args, self.exporter, self.port, self.cluster = args, exporter, port, cluster
        self.base = f"http://127.0.0.1:{port}"

    def look(self) -> str:
        """The page, fetched as a scraper does (gzip), so looking costs the exporter little."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
            return gzip.decompress(conn.getresponse().read()).decode("utf-8", "replace")
        finally:
            conn.close()

    def ontap(self, page: str) -> tuple[float, float, float]:
        """(polls, last poll duration, last success time) of the ONTAP target."""
        lv = {"target": self.cluster, "kind": "ontap"}
        return (
            sample_value(page, "sanlens_polls_total", **lv) or 0.0,
            sample_value(page, "sanlens_poll_duration_seconds", **lv) or float("nan"),
            sample_value(page, "sanlens_last_poll_timestamp_seconds", **lv) or 0.0,
        )

    def wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        """Like soak.wait_until, but looking once a second: each look fetches the whole page."""
        deadline = time.monotonic() + timeout
        while not check():
            if self.exporter.poll() is not None:
                raise SystemExit(f"serve_scale: {what}: the exporter exited with {self.exporter.returncode}")
            if time.monotonic() > deadline:
                raise SystemExit(f"serve_scale: {what}: not within {timeout:.0f} s")
            time.sleep(1.0)

    def wait_polls(self, n: int) -> None:
        start = self.ontap(self.look())[0]
        self.wait(
            lambda: self.ontap(self.look())[0] >= start + n, n * self.args.interval * 3 + 120, f"{n} polls"
        )

    def phase(self, name: str, scrapers: int) -> Phase:
        ph = Phase(name, scrapers)
        ctx = multiprocessing.get_context("spawn")
        stop, results = ctx.Event(), ctx.Queue()
        worker = ctx.Process(
            target=scrape_process, args=(self.port, scrapers, 1.0, stop, results), daemon=True
        )
        # start right after a poll, so the phase holds whole cycles
        polls0, _, last0 = self.ontap(self.look())
        self.wait(lambda: self.ontap(self.look())[2] > last0, self.args.interval * 3 + 60, "a poll")
        polls0, _, last = self.ontap(self.look())
        cpu0 = proc_cpu_s(self.exporter.pid)
        if scrapers:
            worker.start()
        print(f"serve_scale: phase {name}: {scrapers} scraper(s), {self.args.cycles} cycles", flush=True)
        while True:
            time.sleep(min(self.args.interval / 4, 5.0))
            if self.exporter.poll() is not None:
                raise SystemExit(f"serve_scale: the exporter exited with {self.exporter.returncode}")
            polls, duration, ts = self.ontap(self.look())
            if ts > last:
                last = ts
                ph.poll_wall_s.append(duration)
            if polls - polls0 >= self.args.cycles:
                break
        cpu1 = proc_cpu_s(self.exporter.pid)
        stop.set()
        if scrapers:
            ph.latencies, ph.errors = results.get(timeout=120)
            worker.join(timeout=10)
        ph.polls = int(polls - polls0)
        ph.cpu_per_poll_s = (cpu1 - cpu0) / max(ph.polls, 1)
        s = ph.summary()
        print(f"  {s['cpu_per_poll_s']} CPU-s/poll, poll wall {s['poll_wall_median_s']} s, "
              f"scrape p50 {s['scrape_p50_ms']} ms p99 {s['scrape_p99_ms']} ms ({s['scrapes']} scrapes)",
              flush=True)  # fmt: skip
        return ph


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=60.0, help="ONTAP poll interval, seconds (default 60)")
    ap.add_argument("--host-interval", type=float, default=15.0, help="host poll interval, s (default 15)")
    ap.add_argument("--cycles", type=int, default=3, help="ONTAP poll cycles per phase (default 3)")
    ap.add_argument("--scrapers", type=int, default=20, help="concurrent scrapers of the loaded phase (20)")
    add_scale_arguments(ap)
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = ap.parse_args(argv)

    workdir = Path(tempfile.mkdtemp(prefix="sanlens-serve-scale-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "exporter") + os.pathsep + env.get("PYTHONPATH", "")
    sim_port, exp_port = free_port(), free_port()
    sim_url = f"http://127.0.0.1:{sim_port}"
    scale = ["--nodes", str(args.nodes), "--luns", str(args.luns), "--volumes", str(args.volumes),
             "--disks", str(args.disks)]  # fmt: skip
    print(f"serve_scale: simulator at {args.nodes} nodes, {args.luns} LUNs, {args.volumes} volumes, "
          f"{args.disks} disks; ONTAP every {args.interval:g} s, hosts every {args.host_interval:g} s", flush=True)  # fmt: skip
    logs = {name: open(workdir / f"{name}.log", "wb") for name in ("simulator", "exporter")}  # noqa: SIM115
    sim = subprocess.Popen(
        [sys.executable, "-m", "sanlens", "simulate", "--scenario", "healthy", "--port", str(sim_port), *scale],
        stdout=logs["simulator"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
    )  # fmt: skip
    exporter: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: fetch(f"{sim_url}/-/sim/state", timeout=5)[0] == 200, 120, "simulator", sim)
        state = json.loads(fetch(f"{sim_url}/-/sim/state")[1])
        cfg = {
            "listen": f"127.0.0.1:{exp_port}",
            "ontap": [{"name": state["cluster_name"], "url": sim_url, "poll_interval": f"{args.interval}s"}],
            "hosts": [
                {
                    "name": h,
                    "url": f"{sim_url}/windows/{h}/metrics",
                    "poll_interval": f"{args.host_interval}s",
                }
                for h in state["hosts"]
            ],
        }
        cfg_path = workdir / "sanlens.json"  # JSON is YAML
        cfg_path.write_text(json.dumps(cfg, indent=1))
        exporter = subprocess.Popen(
            [sys.executable, "-m", "sanlens", "serve", "--config", str(cfg_path)],
            stdout=logs["exporter"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )  # fmt: skip
        bench = Bench(args, exporter, exp_port, state["cluster_name"])
        wait_until(
            lambda: fetch(f"{bench.base}/-/ready", timeout=5)[0] == 200, 300, "exporter ready", exporter
        )
        print("serve_scale: exporter ready; warming up for 2 polls", flush=True)
        bench.wait_polls(2)
        phases = [bench.phase("idle", 0), bench.phase("1 scraper", 1), bench.phase("loaded", args.scrapers)]
        status, gz = 0, b""
        conn = http.client.HTTPConnection("127.0.0.1", exp_port, timeout=60)
        conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        gz, status = resp.read(), resp.status
        conn.close()
        plain = gzip.decompress(gz)
        direct = fetch(f"{bench.base}/metrics", timeout=60)[1]
        peak_rss_mb = proc_kb(exporter.pid, "VmHWM") / 1024.0
    finally:
        stop_processes(exporter, sim)
        for f in logs.values():
            f.close()

    series = sum(1 for line in plain.splitlines() if line and not line.startswith(b"#"))
    diag = sum(1 for line in plain.splitlines() if line.startswith(b"sanlens_diagnosis_"))
    idle, loaded = phases[0], phases[2]
    idle_wall = statistics.median(idle.poll_wall_s) if idle.poll_wall_s else float("nan")
    loaded_wall = statistics.median(loaded.poll_wall_s) if loaded.poll_wall_s else float("nan")
    result: dict[str, Any] = {
        "scale": {"nodes": args.nodes, "luns": args.luns, "volumes": args.volumes, "disks": args.disks,
                  "hosts": len(state["hosts"])},
        "interval_s": args.interval,
        "host_interval_s": args.host_interval,
        "phases": {p.name: p.summary() for p in phases},
        "series": series,
        "diagnosis_series": diag,
        "plain_bytes": len(plain),
        "plain_bytes_direct": len(direct),
        "gzip_bytes": len(gz),
        "gzip_status": status,
        "gzip_ratio": round(len(gz) / len(plain), 4),
        "cpu_per_poll_s": round(max(p.cpu_per_poll_s for p in phases), 3),
        "scrape_p99_ms": loaded.summary()["scrape_p99_ms"],
        "poll_wall_idle_s": round(idle_wall, 3),
        "poll_wall_loaded_s": round(loaded_wall, 3),
        "poll_wall_under_load_ratio": round(loaded_wall / idle_wall, 3),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "logs": str(workdir),
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    ok = True
    for key, limit in TARGETS.items():
        value = result[key]
        met = value is not None and value <= limit
        ok &= met
        print(f"target {key} <= {limit}: {value} {'ok' if met else 'MISSED'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
