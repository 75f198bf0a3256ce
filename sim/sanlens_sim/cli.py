"""`sanlens simulate`: serve the simulator until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from sanlens import cliargs
from sanlens.errors import UsageError, is_bind_error, listen_error
from sanlens_sim.scenario_base import KnobError
from sanlens_sim.scenarios import SCENARIOS


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scenario",
        default="mixed",
        choices=sorted(SCENARIOS),
        help="field case to simulate (default: mixed, the demo)",
    )
    p.add_argument(
        "--host", type=cliargs.host, default="127.0.0.1", help="listen address (default 127.0.0.1)"
    )
    p.add_argument("--port", type=cliargs.port, default=0, help="listen port (default: a free one)")
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a self-signed certificate made at start (needs cryptography)",
    )
    for knob in ("nodes", "luns", "volumes", "disks", "hosts"):
        p.add_argument(f"--{knob}", type=int, default=None, help=f"scale: at least this many {knob}")
    p.add_argument(
        "--fa-ports", type=int, default=None, help="san-oversubscription/mixed: front-end ports (2|4|6)"
    )
    p.add_argument(
        "--ontap-version",
        default=None,
        help="ONTAP version to report, e.g. 9.8.0 (< 9.11: no counter tables)",
    )
    p.add_argument(
        "--rebuild-after-s",
        type=cliargs.seconds,
        default=None,
        help="seconds before the reconstruct starts (30)",
    )
    p.add_argument(
        "--rebuild-rate-pct-s",
        type=cliargs.positive_number,
        default=None,
        help="reconstruct progress in %%/s",
    )


def run(args: argparse.Namespace) -> int:
    from sanlens_sim.server import Simulator

    knobs: dict[str, Any] = {
        k: getattr(args, k)
        for k in (
            "nodes",
            "luns",
            "volumes",
            "disks",
            "hosts",
            "fa_ports",
            "ontap_version",
            "rebuild_after_s",
            "rebuild_rate_pct_s",
        )
        if getattr(args, k, None) is not None
    }
    try:
        sim = Simulator(scenario=args.scenario, host=args.host, port=args.port, tls=args.tls, **knobs)
    except KnobError as e:
        raise UsageError(str(e), hint="see 'sanlens simulate --help'") from None
    try:
        sim.start()
    except OSError as e:
        if not is_bind_error(e):
            raise
        raise listen_error(e, f"{args.host}:{args.port}") from e
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    state = sim.state()
    print(f"sanlens simulate: scenario {args.scenario!r} ({state['summary']})", flush=True)
    print(
        f"  ONTAP REST: {sim.url}/api/cluster  (cluster {sim.cluster_name}, ONTAP {state['ontap_version']})",
        flush=True,
    )
    for h in sim.hosts:
        print(f"  windows_exporter: {sim.url}/windows/{h}/metrics", flush=True)
    for h in sim.linux_hosts:
        print(f"  node_exporter:    {sim.url}/linux/{h}/metrics", flush=True)
    print(f"  control:    {sim.url}/-/sim/state", flush=True)
    if sim.cert_file:
        print(f"  TLS certificate (self-signed): {sim.cert_file}", flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        sim.stop()
    print("sanlens simulate: stopped", flush=True)
    return 0
