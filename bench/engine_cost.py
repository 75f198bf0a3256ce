#!/usr/bin/env python3
"""What one engine evaluation costs, per diagnosis and per subject, on a large cluster's real views.

The simulator (healthy by default: 24 nodes, 10,000 LUNs, 5,000 volumes, 2,000 disks, its hosts)
runs in its own process; the REST collector and the host sources poll it twice here, so the
engine judges the same cooked views ``sanlens serve`` would. Then, over ``--runs`` repetitions:

- each diagnosis's ``evaluate`` alone: median ms, the subjects it judged, µs per subject;
- a whole evaluation after a host poll only (the ONTAP view unchanged: the diagnoses that read
  nothing but ONTAP are not judged again) and after an ONTAP poll (everything is);
- ``findings()``, as /diagnoses and ``analyze`` read it.

    .venv/bin/python bench/engine_cost.py [--luns 10000] [--runs 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from poll_scale import _free_port, _start_simulator
from sanlens.config import DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.diagnose.base import Context
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import MODULES, resolve
from sanlens.hosts.registry import make_host_source
from sanlens.join.stage import JoinStage
from sanlens.model import Snapshot
from sanlens.ontap.collector import OntapSource
from soak import add_scale_arguments


def _median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_scale_arguments(ap)
    ap.add_argument("--scenario", default="healthy")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    port = _free_port()
    sim = _start_simulator(args, port)
    url = f"http://127.0.0.1:{port}"
    try:
        join = JoinStage()  # as the exporter's pipeline joins each poll
        ontap = OntapSource(OntapTarget(name="big", url=url, poll_interval=Duration(60)))
        with urllib_open(f"{url}/-/sim/state") as state:
            hosts = [str(h) for h in state.get("hosts", [])]
        host_sources = [make_host_source(HostTarget(name=h, url=f"{url}/windows/{h}/metrics")) for h in hosts]
        snaps: list[Snapshot] = []
        for _ in range(2):
            snaps = [join.apply(ontap.poll())] + [join.apply(h.poll()) for h in host_sources]
            time.sleep(1.0)
    finally:
        sim.kill()
    ontap_snap, host_snaps = snaps[0], snaps[1:]
    engine = Engine(DiagnoseConfig())
    for s in snaps:
        engine.update(s)
    th = resolve(DiagnoseConfig())
    ctx = Context(engine._now, engine._ontap, engine._hosts, engine._history)
    per: dict[str, dict[str, float]] = {}
    for mod in MODULES:
        n = len(mod.evaluate(ctx, th))
        ms = _median_ms(
            lambda mod=mod: mod.evaluate(Context(ctx.now, ctx.ontap, ctx.hosts, ctx.history), th), args.runs
        )
        per[mod.SPEC.id] = {
            "ms": round(ms, 2),
            "subjects": n,
            "us_per_subject": round(1000 * ms / n, 2) if n else 0.0,
        }

    def host_poll() -> None:
        for s in host_snaps:
            engine.update(
                replace(s, timestamp=s.timestamp + 1, view=replace(s.view, timestamp=s.view.timestamp + 1))
            )

    def ontap_poll() -> None:
        engine.update(
            replace(ontap_snap, view=replace(ontap_snap.view, timestamp=ontap_snap.view.timestamp + 1))
        )

    out: dict[str, Any] = {
        "luns": args.luns,
        "per_diagnosis": per,
        "evaluation_after_host_polls_ms": round(_median_ms(host_poll, args.runs), 1),
        "evaluation_after_ontap_poll_ms": round(_median_ms(ontap_poll, args.runs), 1),
        "findings_ms": round(_median_ms(engine.findings, args.runs), 3),
        "hosts": len(host_snaps),
    }
    width = max(len(k) for k in per)
    print(
        f"engine_cost: {args.luns} LUNs, {args.volumes} volumes, {args.disks} disks, {len(host_snaps)} hosts"
    )
    for did, r in sorted(per.items(), key=lambda kv: -kv[1]["ms"]):
        print(
            f"  {did:<{width}}  {r['ms']:8.2f} ms  {r['subjects']:6d} subjects  {r['us_per_subject']:7.2f} us/subject"
        )
    print(
        f"evaluation after {len(host_snaps)} host polls (ONTAP unchanged): {out['evaluation_after_host_polls_ms']} ms"
    )
    print(f"evaluation after an ONTAP poll: {out['evaluation_after_ontap_poll_ms']} ms")
    print(f"findings(): {out['findings_ms']} ms")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


class urllib_open:
    """GET a JSON document (the simulator's state: its host names)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(self.url, timeout=10) as r:
            doc = json.loads(r.read())
        return doc if isinstance(doc, dict) else {}

    def __exit__(self, *_exc: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
