#!/usr/bin/env python3
"""What ONTAP's QoS data costs: one exporter polling a large simulated cluster without, then with QoS.

The simulator (healthy by default: 24 nodes, 10,000 LUNs, 5,000 volumes, 2,000 disks) runs in its
own process, and each phase in a process of its own, so that CPU time and peak RSS are one
exporter's alone:

- plain: every catalogue table without a ``schedule`` (the tables a poll reads every time);
- qos: every table with ``qos_interval`` 0, so each poll starts a QoS read (``qos*`` tables,
  ``/api/storage/qos/workloads`` and ``/policies``) on the QoS thread; a cycle is the poll plus
  the wait for that read, whose rows the next poll folds into the view.

Per cycle (medians over ``--cycles`` after ``--warmup``): requests and bytes per table or endpoint,
counted on the client side (``OntapClient.adapter.read_body`` wrapped: every answer's decoded body),
the process's CPU-s (``getrusage(RUSAGE_SELF)``: every thread), the QoS read's wall time and its own
thread's CPU. Then /metrics rendered once (``Exposition``), samples per family, and the diagnosis
engine's ``sanlens_latency_component_seconds`` series: fed each cycle's snapshot outside the timing,
then the last one again a minute apart for ``--hold`` minutes, so findings get past pending.

    .venv/bin/python bench/qos_cost.py [--cycles 3] [--scenario qos-throttle] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import requests

from poll_scale import _free_port, _peak_rss_mb, _start_simulator
from sanlens.config import DiagnoseConfig, Duration, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.ontap.catalogue import catalogue
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.qos_reader import QosRead
from sanlens.serve.exposition import Exposition
from sanlens.store import State
from soak import add_scale_arguments

COMPONENT = "sanlens_latency_component_seconds"
QOS_PREFIX = "sanlens_ontap_qos_"
_UUID = re.compile(r"/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TABLE_PATH = re.compile(r"^/api/cluster/counter/tables/(?P<table>[^/]+)(?P<rows>/rows)?$")


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return ru.ru_utime + ru.ru_stime


def _endpoint(url: str) -> str:
    """A request's table (``lun``; its schema ``lun (schema)``) or endpoint path (``/api/storage/luns``)."""
    path = _UUID.sub("/*", urlsplit(url).path)  # every aggregate's plexes: one endpoint
    m = _TABLE_PATH.match(path)
    if m is None:
        return path
    return unquote(m["table"]) + ("" if m["rows"] else " (schema)")


class Traffic:
    """Requests and body bytes per endpoint, counted where the client reads every answer."""

    def __init__(self, source: OntapSource) -> None:
        self.requests: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self._lock = threading.Lock()  # tables are fetched side by side
        adapter = source.client.adapter
        read_body = adapter.read_body

        def counted(resp: requests.Response, limit: int, where: str) -> bytearray:
            body = read_body(resp, limit, where)
            key = _endpoint(resp.url)
            with self._lock:
                self.requests[key] += 1
                self.bytes[key] += len(body)
            return body

        adapter.read_body = counted

    def take(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            out = (self.requests, self.bytes)
            self.requests, self.bytes = Counter(), Counter()
        return out


def _time_qos_reads(source: OntapSource, wall: list[float], cpu: list[float]) -> None:
    """Record each QoS read's wall time and its thread's CPU (the reader calls ``source._read_qos``)."""
    read: Callable[[list[str], str, float], QosRead] = source._read_qos

    def timed(tables: list[str], release: str, started: float) -> QosRead:
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            return read(tables, release, started)
        finally:
            wall.append(time.perf_counter() - w0)
            cpu.append(time.thread_time() - c0)

    source._read_qos = timed


def _families(body: bytes) -> Counter[str]:
    """Samples per family of an exposition (a sample belongs to the last ``# TYPE`` before it)."""
    out: Counter[str] = Counter()
    family = ""
    for line in body.splitlines():
        if line.startswith(b"# TYPE "):
            family = line.split()[2].decode()
        elif line and not line.startswith(b"#"):
            out[family] += 1
    return out


def _later(view: Any, dt: float) -> Any:
    return replace(view, timestamp=view.timestamp + dt)


def _components(engine: Engine) -> dict[str, int]:
    """The engine's latency component series, their subjects, and its non-ok findings."""
    comp = [m for m in engine.metrics() if m.name == COMPONENT]
    subjects = {
        tuple(v for n, v in zip(m.label_names, labels, strict=True) if n != "component")
        for m in comp
        for labels, _ in m.samples
    }
    return {
        "series": sum(len(m.samples) for m in comp),
        "subjects": len(subjects),
        "findings": len(engine.findings()),
    }


def _median(xs: list[float], digits: int = 3) -> float:
    return round(statistics.median(xs), digits) if xs else 0.0


def phase(args: argparse.Namespace) -> dict[str, Any]:
    """One exporter's cycles against the running simulator at ``--port``: plain or with QoS."""
    qos = args.phase == "qos"
    tables = [n for n, t in catalogue().items() if t.rest and (qos or not t.schedule)]
    target = OntapTarget(
        name="bench",
        url=f"http://127.0.0.1:{args.port}",
        poll_interval=Duration(60.0),
        tables=tables,
        qos_interval=Duration(0.0) if qos else None,
    )
    source = OntapSource(target)
    traffic = Traffic(source)
    qos_wall: list[float] = []
    qos_cpu: list[float] = []
    _time_qos_reads(source, qos_wall, qos_cpu)
    state = State()
    state.register(source.name, source.kind, target.poll_interval)
    engine = Engine(DiagnoseConfig())
    cpu: list[float] = []
    poll_wall: list[float] = []
    reqs: list[Counter[str]] = []
    sizes: list[Counter[str]] = []
    for i in range(args.warmup + args.cycles):
        if i:
            time.sleep(1.0)  # a non-zero interval so rates are cooked
        traffic.take()
        c0, w0 = _cpu_s(), time.perf_counter()
        snap = source.poll()
        w1 = time.perf_counter()
        source.qos_reader.wait()
        c1 = _cpu_s()
        r, b = traffic.take()
        state.record_success(snap, w1 - w0)
        engine.update(snap)  # outside the CPU window, as serve's engine thread
        read = f", QoS read {qos_wall[-1]:.2f} s" if qos and qos_wall else ""
        print(f"  {args.phase} cycle {i}: {c1 - c0:.2f} CPU-s, poll {w1 - w0:.2f} s{read}", file=sys.stderr)
        if i >= args.warmup:
            cpu.append(c1 - c0)
            poll_wall.append(w1 - w0)
            reqs.append(r)
            sizes.append(b)
    source.close()
    reads = qos_wall[args.warmup :]  # the read each measured cycle started
    reads_cpu = qos_cpu[args.warmup :]
    body = Exposition(state).render()
    fams = _families(body)
    measured = _components(engine)
    for k in range(1, args.hold + 1):  # the last view held a minute at a time: findings past pending
        dt = 60.0 * k
        engine.update(replace(snap, timestamp=snap.timestamp + dt, view=_later(snap.view, dt)))
    held = _components(engine)
    keys = sorted(set().union(*reqs)) if reqs else []
    return {
        "tables": tables,
        "cpu_s": _median(cpu),
        "cpu_s_all": [round(x, 3) for x in cpu],
        "poll_wall_s": _median(poll_wall),
        "qos_read_wall_s": _median(reads),
        "qos_read_thread_cpu_s": _median(reads_cpu),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "requests": {k: statistics.median(c[k] for c in reqs) for k in keys},
        "bytes": {k: statistics.median(c[k] for c in sizes) for k in keys},
        "series": sum(fams.values()),
        "families": dict(sorted(fams.items())),
        "response_bytes": len(body),
        "latency_component": measured,
        "latency_component_held": held,
    }


def _run_phase(args: argparse.Namespace, port: int, name: str) -> dict[str, Any]:
    argv = [
        sys.executable, __file__, "--phase", name, "--port", str(port),
        "--cycles", str(args.cycles), "--warmup", str(args.warmup), "--hold", str(args.hold),
    ]  # fmt: skip
    done = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f}"


def report(args: argparse.Namespace, plain: dict[str, Any], qos: dict[str, Any]) -> dict[str, Any]:
    """Print the comparison; the JSON ``--json`` writes."""
    print(
        f"qos_cost: {args.scenario}, {args.nodes} nodes, {args.luns} LUNs, {args.volumes} volumes, "
        f"{args.disks} disks; medians of {args.cycles} cycles after {args.warmup}"
    )
    print(f"  {'table / endpoint':<38}{'plain req':>10}{'MB':>8}{'qos req':>10}{'MB':>8}")
    keys = sorted(set(plain["requests"]) | set(qos["requests"]), key=lambda k: -qos["bytes"].get(k, 0))
    for k in keys:
        pr, pb = plain["requests"].get(k, 0), plain["bytes"].get(k, 0)
        qr, qb = qos["requests"].get(k, 0), qos["bytes"].get(k, 0)
        print(f"  {k:<38}{pr:>10g}{_mb(pb):>8}{qr:>10g}{_mb(qb):>8}")
    tot = {
        name: (sum(p["requests"].values()), sum(p["bytes"].values()))
        for name, p in (("plain", plain), ("qos", qos))
    }
    print(
        f"  {'total':<38}{tot['plain'][0]:>10g}{_mb(tot['plain'][1]):>8}"
        f"{tot['qos'][0]:>10g}{_mb(tot['qos'][1]):>8}"
    )
    qos_fams = {k: v for k, v in qos["families"].items() if k.startswith(QOS_PREFIX)}
    rows = [
        ("CPU-s per cycle (poll + QoS read)", plain["cpu_s"], qos["cpu_s"]),
        ("poll wall s", plain["poll_wall_s"], qos["poll_wall_s"]),
        ("QoS read wall s", "-", qos["qos_read_wall_s"]),
        ("QoS read thread CPU-s", "-", qos["qos_read_thread_cpu_s"]),
        ("peak RSS MB", plain["peak_rss_mb"], qos["peak_rss_mb"]),
        ("/metrics series", plain["series"], qos["series"]),
        ("/metrics MB", _mb(plain["response_bytes"]), _mb(qos["response_bytes"])),
    ]
    for when, key in (("", "latency_component"), (f", +{args.hold} min", "latency_component_held")):
        p, q = plain[key], qos[key]
        rows.append((f"latency_component series{when}", p["series"], q["series"]))
        rows.append(("  their subjects / non-ok findings", f"{p['subjects']} / {p['findings']}",
                     f"{q['subjects']} / {q['findings']}"))  # fmt: skip
    print(f"  {'':<38}{'plain':>12}{'qos':>12}")
    for label, a, b in rows:
        print(f"  {label:<38}{a!s:>12}{b!s:>12}")
    print(f"  QoS families ({sum(qos_fams.values())} series):")
    for k, v in sorted(qos_fams.items(), key=lambda kv: -kv[1]):
        print(f"    {k:<56}{v:>8}")
    return {
        "scenario": args.scenario,
        "scale": {"nodes": args.nodes, "luns": args.luns, "volumes": args.volumes, "disks": args.disks},
        "cycles": args.cycles,
        "warmup": args.warmup,
        "hold_min": args.hold,
        "plain": plain,
        "qos": qos,
        "qos_series": sum(qos_fams.values()),
        "qos_families": qos_fams,
        "added_series": qos["series"] - plain["series"],
        "added_requests": tot["qos"][0] - tot["plain"][0],
        "added_bytes": tot["qos"][1] - tot["plain"][1],
        "added_cpu_s": round(qos["cpu_s"] - plain["cpu_s"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scale_arguments(ap)
    ap.add_argument("--scenario", default="healthy")
    ap.add_argument("--cycles", type=int, default=3, help="measured cycles per phase (default 3)")
    ap.add_argument("--warmup", type=int, default=2, help="cycles before them (schemas, first rates)")
    ap.add_argument("--hold", type=int, default=15, help="minutes the engine then sees the last view (15)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON here")
    ap.add_argument("--phase", choices=("plain", "qos"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.phase:  # a child: one phase against the parent's simulator, JSON on stdout
        print(json.dumps(phase(args)))
        return 0
    port = _free_port()
    print(
        f"qos_cost: starting simulator ({args.scenario}: {args.nodes} nodes, {args.luns} LUNs, "
        f"{args.volumes} volumes, {args.disks} disks) on :{port}",
        flush=True,
    )
    sim = _start_simulator(args, port)
    try:
        plain = _run_phase(args, port, "plain")
        qos = _run_phase(args, port, "qos")
    finally:
        sim.terminate()
        try:
            sim.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sim.kill()
    out = report(args, plain, qos)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
