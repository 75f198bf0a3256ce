"""`sanlens demo`: the simulator and the exporter in one process, with short windows."""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from sanlens.config import Config, DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.errors import UsageError, is_bind_error, listen_error
from sanlens.optional import SIMULATOR, load

if TYPE_CHECKING:
    from sanlens.runtime.exporter import Exporter

log = logging.getLogger(__name__)

DEMO_ONTAP_INTERVAL = 10.0
DEMO_HOST_INTERVAL = 5.0
# Paths per host disk as the hosts are cabled in a scenario (default 1): path-faults cables
# two and loses one, which only shows against a configured count of two.
SCENARIO_HOST_PATHS = {"path-faults": 2}
DEMO_SUSTAIN_SCALE = 0.05  # a 10-minute sustain window becomes 30 s
NODE_EXPORTER: Final = "node_exporter"  # HostTarget.source for the Linux hosts


def demo_config(
    sim_url: str,
    cluster: str,
    hosts: list[str],
    listen: str,
    scenario: str = "mixed",
    linux_hosts: Sequence[str] = (),
) -> Config:
    """The config `sanlens demo` runs: every simulated cluster and host, short windows.

    ``linux_hosts`` are polled through their node_exporter page; a Linux disk's paths come from its
    multipath map, so the config's path count is left at 1.
    """
    windows = [
        HostTarget(
            name=h,
            source="windows_exporter",
            url=f"{sim_url}/windows/{h}/metrics",
            poll_interval=Duration(DEMO_HOST_INTERVAL),
            paths=SCENARIO_HOST_PATHS.get(scenario, 1),
        )
        for h in hosts
    ]
    linux = [
        HostTarget(
            name=h,
            source=NODE_EXPORTER,
            url=f"{sim_url}/linux/{h}/metrics",
            poll_interval=Duration(DEMO_HOST_INTERVAL),
        )
        for h in linux_hosts
    ]
    return Config(
        listen=listen,
        ontap=[OntapTarget(name=cluster, url=sim_url, poll_interval=Duration(DEMO_ONTAP_INTERVAL))],
        hosts=[*windows, *linux],
        diagnose=DiagnoseConfig(sustain_scale=DEMO_SUSTAIN_SCALE),
    )


def scenario_names() -> list[str]:
    """The simulator's scenarios, for ``--scenario``; MissingPart when the simulator is not installed."""
    return sorted(load("sanlens_sim.scenarios", "demo", SIMULATOR).SCENARIOS)


@contextlib.contextmanager
def _listening(address: str) -> Iterator[None]:
    """A failed bind of ``address`` as a one-line RunError."""
    try:
        yield
    except OSError as e:
        if not is_bind_error(e):
            raise
        raise listen_error(e, address) from e


def run_demo(args: argparse.Namespace) -> int:
    """The demo until Ctrl-C or ``--duration``; a bad knob is a UsageError, a taken port a RunError."""
    from sanlens.runtime.exporter import Exporter, wait_for_signal

    load("sanlens_sim", "demo", SIMULATOR)  # installed? else one line saying how to install it
    from sanlens_sim.scenario_base import KnobError
    from sanlens_sim.server import Simulator

    knobs = {}
    if getattr(args, "fa_ports", None) is not None:
        knobs["fa_ports"] = args.fa_ports
    try:
        sim = Simulator(scenario=args.scenario, port=args.sim_port, **knobs)
    except KnobError as e:
        raise UsageError(str(e), hint="see 'sanlens demo --help'") from None
    with _listening(f"127.0.0.1:{args.sim_port}"):
        sim.start()
    try:
        cfg = demo_config(
            sim.url,
            sim.cluster_name,
            sim.hosts,
            f"127.0.0.1:{args.port}",
            args.scenario,
            linux_hosts=sim.linux_hosts,
        )
        with _listening(cfg.listen):
            exporter = Exporter(cfg)
    except BaseException:
        sim.stop()
        raise
    exporter.start()
    print(f"sanlens demo: scenario {args.scenario!r}", flush=True)
    print(f"  simulator (ONTAP REST):   {sim.url}/api/cluster", flush=True)
    for h in sim.hosts:
        print(f"  simulator (windows host): {sim.url}/windows/{h}/metrics", flush=True)
    for h in sim.linux_hosts:
        print(f"  simulator (linux host):   {sim.url}/linux/{h}/metrics", flush=True)
    print(f"  exporter metrics:         http://127.0.0.1:{exporter.port}/metrics", flush=True)
    print(f"  exporter diagnoses:       http://127.0.0.1:{exporter.port}/diagnoses", flush=True)
    print("Diagnoses appear within about 2 minutes, each printed here as it changes. Press Ctrl-C to stop.",
          flush=True)  # fmt: skip
    if args.duration:
        threading.Timer(args.duration, exporter.stop_event.set).start()
    feed = threading.Thread(target=_feed, args=(exporter,), name="demo-feed", daemon=True)
    feed.start()
    try:
        wait_for_signal(exporter.stop_event)
    finally:
        exporter.stop()
        sim.stop()
    shown = _states(exporter.engine.findings())
    print(f"sanlens demo: stopped with {len(shown)} findings", flush=True)
    return 0


def _states(findings: list[dict[str, object]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(diagnosis, subject) -> (severity, title) of every non-ok finding."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for f in findings:
        subject = f.get("subject")
        if isinstance(subject, dict):  # a LUN's path names its volume already
            who = " ".join(str(v) for k, v in subject.items() if not (k == "volume" and "lun" in subject))
        else:
            who = str(subject)
        out[(str(f.get("id")), who)] = (str(f.get("severity")), str(f.get("title")))
    return out


def _feed(exporter: Exporter, every: float = 2.0) -> None:
    """Print each finding as it rises, changes severity or clears: the demo's console shows what
    /diagnoses holds, without a second terminal."""
    shown: dict[tuple[str, str], tuple[str, str]] = {}
    while not exporter.stop_event.wait(every):
        now = _states(exporter.engine.findings())
        for key in sorted(now.keys() | shown.keys()):
            was, is_ = shown.get(key), now.get(key)
            if was == is_:
                continue
            did, who = key
            stamp = time.strftime("%H:%M:%S")
            if is_ is None:
                print(f"  {stamp} cleared   {did}  {who}", flush=True)
            else:
                print(f"  {stamp} {is_[0]:<9} {did}  {who}: {is_[1]}", flush=True)
        shown = now
