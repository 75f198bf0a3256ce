#!/usr/bin/env python3
"""Soak: `sanlens serve` against a large simulated cluster for a while, faults switched on and off.

The simulator (healthy, at 24 nodes, 10,000 LUNs, 5,000 volumes and 2,000 disks by default)
and the exporter (`python -m sanlens serve`) each run in their own process. After a healthy
warm-up every fault knob of the simulator is switched on for a while and off again, in turn,
until a healthy cool-down; `/metrics` is scraped every second throughout (gzip, as Prometheus
asks) and the exporter's
RSS, threads and open file descriptors are read from /proc every two seconds.

A run of 20 minutes or more warms up until the exporter's periodic full reads (inventory and QoS
workloads, every 5 min) have run once: the resident size is compared from there (FULL_WARMUP_MIN_S).

Targets (exit 1 when one is missed): RSS drift from the end of the warm-up to the end < 10 %;
threads and fds flat (the end no more than a few above the start); scrape p99 < 100 ms; no
unhandled exception (no ``Traceback`` in the exporter's log).

    .venv/bin/python bench/soak.py [--minutes 30] [--interval 15] [--luns 10000] ... [--json out.json]
    .venv/bin/python bench/soak.py --minutes 2      # a smoke run
    .venv/bin/python bench/soak.py --minutes 8 --luns 3000 --tracemalloc 25   # what grows?

``--tracemalloc N`` runs the exporter through bench/traced_serve.py with N frames traced,
takes a snapshot at the end of the warm-up and one at the end, and prints the top growers
between them, with the traced total next to RSS and glibc's free-but-held heap (growth
tracemalloc cannot see). Tracing slows the exporter: its scrape latencies do not count then.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens.ontap.collector import INVENTORY_EVERY

ROOT = Path(__file__).resolve().parent.parent
PASSWORD_ENV = "SANLENS_SOAK_PASSWORD"
PASSWORD = "Sanlens-Soak-Secret-2b9d71c4"

RSS_DRIFT_MAX_PCT = 10.0
FULL_WARMUP_MIN_S = 20 * 60.0
"""Runs this long warm up until the exporter's periodic full reads (inventory and QoS workloads,
every ``INVENTORY_EVERY``) have run once and a compared window has passed since: their first peak
raises the resident size once (Python's arenas keep it), so a warm-up that ends before it counts
that high-water mark as drift. Shorter runs keep the short warm-up and say so."""
SCRAPE_P99_MAX_S = 0.100
THREADS_SLACK = 2  # "flat": the end's median at most this far above the start's
FDS_SLACK = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(
    url: str, data: Any = None, timeout: float = 30.0, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    body = None if data is None else json.dumps(data).encode()
    req = urllib.request.Request(
        url, data=body, method="GET" if body is None else "POST", headers=headers or {}
    )
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


def wait_until(check: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"soak: {what}: the process exited with {proc.returncode}")
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"soak: {what}: not within {timeout:.0f} s")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def add_scale_arguments(ap: argparse.ArgumentParser) -> None:
    """The simulated cluster's size, 10,000 LUNs by default (the scale the targets are set at)."""
    ap.add_argument("--nodes", type=int, default=24)
    ap.add_argument("--luns", type=int, default=10000)
    ap.add_argument("--volumes", type=int, default=5000)
    ap.add_argument("--disks", type=int, default=2000)


def stop_processes(*procs: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM each process group, then SIGKILL what is still there after 15 s."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


# ------------------------------------------------------------------ the faults
# (name, knobs on, knobs off); a counter reset is a one-shot, its "off" is nothing to do.
def faults(read_timeout_s: float) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        ("latency", {"latency_ms": int(read_timeout_s * 1000 * 1.2)}, {"latency_ms": 0}),
        ("5xx", {"error_rate_5xx": 1.0}, {"error_rate_5xx": 0.0}),
        ("401", {"status_401": True}, {"status_401": False}),
        ("resets", {"reset_rate": 1.0}, {"reset_rate": 0.0}),
        ("malformed JSON", {"malformed_json_rate": 1.0}, {"malformed_json_rate": 0.0}),
        ("counter reset", {"counter_reset": True}, {}),
        ("partial aggregation", {"partial_aggregation": True}, {"partial_aggregation": False}),
        ("pagination loop", {"pagination_loop": True}, {"pagination_loop": False}),
    ]


# ------------------------------------------------------------------ measuring
@dataclass
class Sample:
    t: float  # seconds since the exporter was ready
    rss_mb: float
    threads: int
    fds: int


@dataclass
class Scrape:
    t: float
    seconds: float
    size: int
    status: int


@dataclass
class Recorder:
    pid: int
    metrics_url: str
    t0: float = field(default_factory=time.monotonic)
    samples: list[Sample] = field(default_factory=list)
    scrapes: list[Scrape] = field(default_factory=list)
    scrape_errors: list[str] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=lambda: [(0.0, "warm-up")])  # phase starts
    stop: threading.Event = field(default_factory=threading.Event)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def sample(self) -> Sample | None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
            fds = len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return None
        rss = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        threads = re.search(r"^Threads:\s+(\d+)", status, re.M)
        if not rss or not threads:
            return None
        return Sample(self.now(), int(rss[1]) / 1024.0, int(threads[1]), fds)

    def sampler(self) -> None:
        while not self.stop.wait(2.0):
            s = self.sample()
            if s is not None:
                self.samples.append(s)

    def scraper(self) -> None:
        next_at = time.monotonic()
        while not self.stop.is_set():
            t = self.now()
            t0 = time.perf_counter()
            try:  # as Prometheus asks: gzip; timed to the last byte, unpacked after
                status, body = http(self.metrics_url, timeout=30, headers={"Accept-Encoding": "gzip"})
                took = time.perf_counter() - t0
                if body[:2] == b"\x1f\x8b":
                    body = gzip.decompress(body)
                self.scrapes.append(Scrape(t, took, len(body), status))
                if status != 200:
                    self.scrape_errors.append(f"{t:.0f}s: HTTP {status}")
            except OSError as e:
                self.scrape_errors.append(f"{t:.0f}s: {e!r}")
            next_at += 1.0
            self.stop.wait(max(next_at - time.monotonic(), 0.0))

    def start(self) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self.sampler, name="soak-sampler", daemon=True),
            threading.Thread(target=self.scraper, name="soak-scraper", daemon=True),
        ]
        for t in threads:
            t.start()
        return threads


def short_warmup(total: float, interval: float) -> float:
    """Seconds of a warm-up that covers a few polls, not the periodic full reads."""
    return min(max(3 * interval, 0.15 * total), 300.0)


def compared_span(cooldown: float) -> float:
    """Seconds of the windows whose medians are compared (the warm-up's last, the run's last)."""
    return max(min(60.0, cooldown / 2), 6.0)


def window(samples: list[Sample], start: float, end: float) -> list[Sample]:
    return [s for s in samples if start <= s.t <= end]


def self_monitoring(page: str) -> dict[str, dict[str, float]]:
    """sanlens_polls_total, sanlens_poll_errors_total (by target/reason) and sanlens_target_up of a page."""
    kinds = {"sanlens_polls_total": "polls", "sanlens_poll_errors_total": "errors", "sanlens_target_up": "up"}
    out: dict[str, dict[str, float]] = {kind: {} for kind in kinds.values()}
    for line in page.splitlines():
        m = re.match(r"^(\w+)\{(.*)\} (\S+)$", line)
        if not m or m[1] not in kinds:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m[2]))
        key = labels.get("target", "")
        if m[1] == "sanlens_poll_errors_total":
            key += f" {labels.get('reason', '')}"
        out[kinds[m[1]]][key] = float(m[3])
    return out


# ------------------------------------------------------------------ the run
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0, help="length of the run (default 30)")
    ap.add_argument("--interval", type=float, default=15.0, help="ONTAP poll interval, seconds (default 15)")
    ap.add_argument("--host-interval", type=float, default=5.0, help="host poll interval, s (default 5)")
    ap.add_argument("--read-timeout", type=float, default=5.0, help="ONTAP and host timeouts, seconds (5)")
    add_scale_arguments(ap)
    ap.add_argument("--hosts", type=int, default=None, help="simulated hosts (default: the scenario's 2)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--logs", type=Path, help="keep the exporter's and the simulator's logs in this folder")
    ap.add_argument(
        "--tracemalloc",
        type=int,
        default=0,
        metavar="FRAMES",
        help="trace the exporter's allocations (FRAMES deep) and print what grew after the warm-up",
    )
    ap.add_argument("--top", type=int, default=15, help="growers printed with --tracemalloc (15)")
    ap.add_argument(
        "--faults",
        default="",
        metavar="NAMES",
        help="comma-separated faults to run, by name (default: every one, in turn)",
    )
    args = ap.parse_args(argv)

    total = args.minutes * 60.0
    warmup = short_warmup(total, args.interval)
    cooldown = min(max(2 * args.interval + 10.0, 0.10 * total), 300.0)
    span = compared_span(cooldown)
    steady = INVENTORY_EVERY + 2 * args.interval + span
    if total >= FULL_WARMUP_MIN_S:
        warmup = max(warmup, steady)
    plan = faults(args.read_timeout)
    if args.faults:
        chosen = {n.strip() for n in args.faults.split(",")}
        unknown = chosen - {name for name, _on, _off in plan}
        if unknown:
            ap.error(f"unknown fault(s) {sorted(unknown)}; known: {', '.join(n for n, _a, _b in plan)}")
        plan = [f for f in plan if f[0] in chosen]
    phase = max((total - warmup - cooldown) / (2 * len(plan)), 1.0)  # each fault on, then off, this long

    workdir = Path(tempfile.mkdtemp(prefix="sanlens-soak-"))
    logs = args.logs or workdir
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "exporter") + os.pathsep + env.get("PYTHONPATH", "")
    env[PASSWORD_ENV] = PASSWORD

    sim_port, exp_port = free_port(), free_port()
    sim_url = f"http://127.0.0.1:{sim_port}"
    snapshots = workdir / "snapshots"
    snapped: list[Path] = []
    scale = ["--nodes", str(args.nodes), "--luns", str(args.luns), "--volumes", str(args.volumes)]
    scale += ["--disks", str(args.disks)] + (["--hosts", str(args.hosts)] if args.hosts else [])
    print(
        f"soak: {args.minutes:g} min; simulator at {args.nodes} nodes, {args.luns} LUNs, {args.volumes} "
        f"volumes, {args.disks} disks; ONTAP every {args.interval:g} s, hosts every {args.host_interval:g} s",
        flush=True,
    )
    sim_log = open(logs / "simulator.log", "wb")  # noqa: SIM115 - closed at the end
    exp_log_path = logs / "exporter.log"
    exp_log = open(exp_log_path, "wb")  # noqa: SIM115 - closed at the end
    sim = subprocess.Popen(
        [sys.executable, "-m", "sanlens", "simulate", "--scenario", "healthy", "--port", str(sim_port), *scale],
        stdout=sim_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
    )  # fmt: skip
    exporter: subprocess.Popen[bytes] | None = None
    recorder: Recorder | None = None
    try:
        wait_until(lambda: http(f"{sim_url}/-/sim/state", timeout=5)[0] == 200, 120, "simulator", sim)
        state = json.loads(http(f"{sim_url}/-/sim/state")[1])
        auth = {"username": "soak", "password_env": PASSWORD_ENV}
        cfg = {
            "listen": f"127.0.0.1:{exp_port}",
            "log_level": "info",
            "ontap": [
                {
                    "name": state["cluster_name"],
                    "url": sim_url,
                    "poll_interval": f"{args.interval}s",
                    "connect_timeout": "2s",
                    "read_timeout": f"{args.read_timeout}s",
                    "auth": auth,
                }
            ],
            "hosts": [
                {
                    "name": h,
                    "url": f"{sim_url}/windows/{h}/metrics",
                    "poll_interval": f"{args.host_interval}s",
                    "timeout": f"{args.read_timeout}s",
                    "auth": auth,
                }
                for h in state["hosts"]
            ],
        }
        cfg_path = workdir / "sanlens.json"  # JSON is YAML
        cfg_path.write_text(json.dumps(cfg, indent=1))
        serve = [sys.executable, "-m", "sanlens"]
        exp_env = env
        if args.tracemalloc:
            serve = [sys.executable, str(ROOT / "bench" / "traced_serve.py")]
            exp_env = {**env, "PYTHONTRACEMALLOC": str(args.tracemalloc), SNAPSHOT_DIR_ENV: str(snapshots)}
        exporter = subprocess.Popen(
            [*serve, "serve", "--config", str(cfg_path)],
            stdout=exp_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=exp_env, start_new_session=True,
        )  # fmt: skip
        base = f"http://127.0.0.1:{exp_port}"
        wait_until(lambda: http(f"{base}/-/ready", timeout=5)[0] == 200, 300, "exporter ready", exporter)
        recorder = Recorder(exporter.pid, f"{base}/metrics")
        workers = recorder.start()
        why = (
            "past the first full inventory and QoS workload read"
            if total >= FULL_WARMUP_MIN_S
            else f"shorter than the first full read at {INVENTORY_EVERY:.0f} s: its peak may count as drift"
        )
        print(f"soak: exporter ready (pid {exporter.pid}); warm-up {warmup:.0f} s ({why})", flush=True)

        def sleep_until(t: float) -> None:
            assert recorder is not None and exporter is not None
            while recorder.now() < t:
                if exporter.poll() is not None:
                    raise SystemExit(f"soak: the exporter exited with {exporter.returncode}")
                time.sleep(min(0.5, max(t - recorder.now(), 0.0)))

        t = warmup
        sleep_until(t)
        if args.tracemalloc:
            snapped.append(snapshot(exporter, snapshots, 1))
        while t + 2 * phase <= total - cooldown + 1e-6:
            for name, on, off in plan:
                if t + 2 * phase > total - cooldown + 1e-6:
                    break
                print(f"soak: {recorder.now():6.0f} s  {name} on for {phase:.0f} s", flush=True)
                recorder.marks.append((recorder.now(), f"{name} on"))
                http(f"{sim_url}/-/sim/faults", on)
                t += phase
                sleep_until(t)
                recorder.marks.append((recorder.now(), f"{name} off"))
                if off:
                    http(f"{sim_url}/-/sim/faults", off)
                t += phase
                sleep_until(t)
        print(f"soak: {recorder.now():6.0f} s  faults off; cool-down until {total:.0f} s", flush=True)
        recorder.marks.append((recorder.now(), "cool-down"))
        sleep_until(total)
        if args.tracemalloc:
            snapped.append(snapshot(exporter, snapshots, 2))
        final = self_monitoring(http(f"{base}/metrics", timeout=60)[1].decode("utf-8", "replace"))
        recorder.stop.set()
        for w in workers:
            w.join(timeout=35)
    finally:
        stop_processes(exporter, sim)
        sim_log.close()
        exp_log.close()

    assert recorder is not None
    if len(snapped) == 2:
        growers(snapped[0], snapped[1], args.top)
    return report(args, recorder, final, warmup, cooldown, phase, exp_log_path, logs / "simulator.log")


# ------------------------------------------------------------------ tracemalloc
SNAPSHOT_DIR_ENV = "SANLENS_SNAPSHOT_DIR"  # read by bench/traced_serve.py


def snapshot(proc: subprocess.Popen[bytes], folder: Path, n: int, timeout: float = 600.0) -> Path:
    """Have the traced exporter dump its n-th snapshot (SIGUSR1); wait for the file."""
    path = folder / f"snapshot-{n}.pickle"
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGUSR1)
    wait_until(path.exists, timeout, f"tracemalloc snapshot {n}", proc)
    print(f"soak: tracemalloc snapshot {n} in {time.monotonic() - t0:.0f} s", flush=True)
    return path


def growers(old_path: Path, new_path: Path, top: int) -> None:
    """Print the top growers between two snapshots, by traceback, and RSS beside the traced total."""
    old, new = tracemalloc.Snapshot.load(str(old_path)), tracemalloc.Snapshot.load(str(new_path))
    ignore = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
    ]
    old, new = old.filter_traces(ignore), new.filter_traces(ignore)
    m0, m1 = (json.loads(p.with_suffix(".json").read_text()) for p in (old_path, new_path))
    mb = 1 / 2**20

    def heap(m: dict[str, Any]) -> str:
        c = m.get("malloc") or {}
        extra = (
            f", malloc in use {c['in_use'] * mb:.1f} MB, free-but-held {c['free'] * mb:.1f} MB" if c else ""
        )
        quiet = m.get("quiet_after_s")
        when = "mid-work" if quiet is None else f"quiet after {quiet:.1f} s"
        own = m["tracemalloc_overhead"] * mb
        return f"traced {m['traced'] * mb:.1f} MB (tracemalloc's own {own:.1f} MB){extra}; {when}"

    print()
    print(f"tracemalloc after warm-up: RSS {m0['rss'] * mb:.1f} MB, {heap(m0)}")
    print(f"tracemalloc at the end:    RSS {m1['rss'] * mb:.1f} MB, {heap(m1)}")
    d_rss, d_traced = (m1["rss"] - m0["rss"]) * mb, (m1["traced"] - m0["traced"]) * mb
    d_own = (m1["tracemalloc_overhead"] - m0["tracemalloc_overhead"]) * mb
    print(f"growth: RSS {d_rss:+.1f} MB, traced {d_traced:+.1f} MB, tracemalloc's own {d_own:+.1f} MB, "
          f"untraced {d_rss - d_traced - d_own:+.1f} MB")  # fmt: skip
    stats = [s for s in new.compare_to(old, "traceback") if s.size_diff > 0]
    for by in ("filename", "lineno"):
        lines = new.compare_to(old, by)[:top]
        print(f"top growers by {by}:")
        for s in lines:
            print(f"  {s.size_diff * mb:+8.2f} MB {s.count_diff:+8d} blocks  {s.traceback[0]}")
    print("top growers by traceback (innermost frames of sanlens first):")
    for s in stats[:top]:
        print(f"  {s.size_diff * mb:+8.2f} MB {s.count_diff:+8d} blocks (now {s.size * mb:.2f} MB)")
        frames = [f for f in s.traceback if "sanlens" in f.filename] or list(s.traceback)
        for f in list(reversed(frames))[:6]:
            print(f"      {f.filename}:{f.lineno}")
    print()


def report(
    args: argparse.Namespace,
    rec: Recorder,
    final: dict[str, dict[str, float]],
    warmup: float,
    cooldown: float,
    phase: float,
    exp_log: Path,
    sim_log: Path,
) -> int:
    total = args.minutes * 60.0
    span = compared_span(cooldown)
    start_w = window(rec.samples, warmup - span, warmup)
    end_w = window(rec.samples, total - span, total + 5)
    if not start_w or not end_w:
        raise SystemExit("soak: too few resource samples; run longer")

    def med(ws: list[Sample], attr: str) -> float:
        return float(statistics.median(getattr(s, attr) for s in ws))

    rss0, rss1 = med(start_w, "rss_mb"), med(end_w, "rss_mb")
    drift = (rss1 - rss0) / rss0 * 100.0
    short = short_warmup(total, args.interval)  # for comparison: from before the first full read
    short_w = window(rec.samples, short - span, short)
    short_drift = (rss1 - med(short_w, "rss_mb")) / med(short_w, "rss_mb") * 100.0 if short_w else None
    th0, th1 = med(start_w, "threads"), med(end_w, "threads")
    fd0, fd1 = med(start_w, "fds"), med(end_w, "fds")
    lat = [s.seconds for s in rec.scrapes if s.status == 200]
    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    text = exp_log.read_text(encoding="utf-8", errors="replace")
    tracebacks = sum(1 for line in text.splitlines() if "Traceback" in line)
    sim_text = sim_log.read_text(encoding="utf-8", errors="replace")
    sim_tracebacks = sum(1 for line in sim_text.splitlines() if "Traceback" in line)
    leaked = PASSWORD in text
    checks = {
        f"RSS drift after warm-up < {RSS_DRIFT_MAX_PCT:g} %": drift < RSS_DRIFT_MAX_PCT,
        f"threads flat (end <= start + {THREADS_SLACK})": th1 <= th0 + THREADS_SLACK,
        f"open fds flat (end <= start + {FDS_SLACK})": fd1 <= fd0 + FDS_SLACK,
        f"scrape p99 < {SCRAPE_P99_MAX_S * 1000:g} ms": p99 < SCRAPE_P99_MAX_S,
        "no unhandled exception (Traceback) in the exporter's log": tracebacks == 0,
    }
    result: dict[str, Any] = {
        "minutes": args.minutes,
        "scale": {"nodes": args.nodes, "luns": args.luns, "volumes": args.volumes, "disks": args.disks},
        "interval_s": args.interval,
        "host_interval_s": args.host_interval,
        "warmup_s": round(warmup),
        "cooldown_s": round(cooldown),
        "fault_phase_s": round(phase, 1),
        "rss_mb": {"start": round(rss0, 1), "end": round(rss1, 1), "max": round(max(s.rss_mb for s in rec.samples), 1)},
        "rss_drift_pct": round(drift, 2),
        "rss_drift_from_short_warmup_pct": None if short_drift is None else round(short_drift, 2),
        "threads": {"start": th0, "end": th1, "max": max(s.threads for s in rec.samples)},
        "fds": {"start": fd0, "end": fd1, "max": max(s.fds for s in rec.samples)},
        "scrapes": len(rec.scrapes),
        "scrape_failures": rec.scrape_errors[:10],
        "scrape_p50_ms": round(p50 * 1000, 1),
        "scrape_p99_ms": round(p99 * 1000, 1),
        "scrape_max_ms": round(max(lat, default=float("nan")) * 1000, 1),
        "page_mb": round(statistics.median(s.size for s in rec.scrapes) / 1e6, 1) if rec.scrapes else 0,
        "exporter_tracebacks": tracebacks,
        "simulator_tracebacks": sim_tracebacks,
        "password_in_log": leaked,
        "polls": final["polls"],
        "poll_errors": final["errors"],
        "up_at_end": final["up"],
        "checks": checks,
        "pass": all(checks.values()),
    }  # fmt: skip
    print()
    print(f"RSS            {rss0:7.1f} MB after warm-up -> {rss1:7.1f} MB at the end ({drift:+.1f} %), "
          f"max {result['rss_mb']['max']} MB")  # fmt: skip
    if short_drift is not None and short < warmup:
        print(
            f"               ({short_drift:+.1f} % from the end of a {short:.0f} s warm-up, before the first full read)"
        )
    print(f"threads        {th0:g} -> {th1:g} (max {result['threads']['max']})")
    print(f"open fds       {fd0:g} -> {fd1:g} (max {result['fds']['max']})")
    print(f"scrapes        {len(rec.scrapes)} of a {result['page_mb']} MB page: p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms, max {result['scrape_max_ms']} ms; failures {len(rec.scrape_errors)}")  # fmt: skip
    print(f"tracebacks     exporter {tracebacks}, simulator {sim_tracebacks}; password in the log: {leaked}")
    print(f"polls          {', '.join(f'{k} {v:g}' for k, v in sorted(final['polls'].items()))}")
    errors = ", ".join(f"{k} {v:g}" for k, v in sorted(final["errors"].items())) or "none"
    print(f"poll errors    {errors}")
    print(f"up at the end  {', '.join(f'{k} {v:g}' for k, v in sorted(final['up'].items()))}")
    print("RSS by phase   (MB: median, max, at its end)")
    ends = [t for t, _ in rec.marks[1:]] + [total + 5]
    for (start, name), end in zip(rec.marks, ends, strict=True):
        ws = [s.rss_mb for s in window(rec.samples, start, end)]
        if ws:
            print(f"  {start:6.0f} s  {name:28s} {statistics.median(ws):7.1f} {max(ws):7.1f} {ws[-1]:7.1f}")
    result["rss_by_phase"] = [
        {
            "start_s": round(start),
            "phase": name,
            "rss_mb": [round(s.rss_mb, 1) for s in window(rec.samples, start, end)],
        }
        for (start, name), end in zip(rec.marks, ends, strict=True)
    ]
    print()
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    print(f"soak: {'PASS' if result['pass'] else 'FAIL'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
