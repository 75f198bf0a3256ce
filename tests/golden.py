#!/usr/bin/env python3
"""A reproducible /metrics page: the exporter against the simulator on a clock nobody moves but us.

The simulator serves ``mixed`` (every field case at once) and the exporter polls it
three times, 60 s apart on a hand-moved clock shared by both, so every counter, rate,
diagnosis and timestamp comes out the same on every run. One extra host target
points at a host the simulator does not know, so the failure families are filled too.
The page is fetched over HTTP from the exporter's own server, as Prometheus would.

The only values left that change from machine to machine are the labels of
``sanlens_build_info``; :func:`mask` replaces them.

    .venv/bin/python tests/golden.py --update   # rewrite tests/data/golden/metrics.txt
    .venv/bin/python tests/golden.py --check    # exit 1 if it differs from a fresh render
    .venv/bin/python tests/golden.py            # print the page
"""

from __future__ import annotations

import argparse
import difflib
import functools
import re
import sys
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from sanlens.config import Config, DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.errors import SourceError
from sanlens.runtime.exporter import Exporter
from sanlens_sim.server import Simulator

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden" / "metrics.txt"

SCENARIO = "mixed"
START = 1_700_000_000.0  # 2023-11-14T22:13:20Z
INTERVAL = 60.0
POLLS = 3  # the third poll is the first with a sustained diagnosis and a progress rate (ETA)
POLL_DURATION = 0.25  # reported for every poll instead of the wall time it took
SUSTAIN_SCALE = 0.05  # as `sanlens demo`: a 10-minute sustain window is 30 s
UNKNOWN_HOST = "offline01"  # a host target the simulator answers 404 for

_PROCESS = re.compile(r"^(# (HELP|TYPE) )?process_\w+.*\n", re.M)
_BUILD_INFO = re.compile(r"^(sanlens_build_info)\{[^}]*\}", re.M)


class Clock:
    """Wall-clock stand-in shared by the simulator and the exporter."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def config(sim: Simulator) -> Config:
    hosts = [*sim.hosts, UNKNOWN_HOST]
    return Config(
        listen="127.0.0.1:0",
        ontap=[OntapTarget(name=sim.cluster_name, url=sim.url, poll_interval=Duration(INTERVAL))],
        hosts=[
            HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics", poll_interval=Duration(INTERVAL))
            for h in hosts
        ],
        diagnose=DiagnoseConfig(sustain_scale=SUSTAIN_SCALE),
    )


def render() -> str:
    """The exporter's /metrics text after POLLS polls of the simulator, unmasked."""
    clock = Clock(START)
    # Every `time.time()` the simulator, the sources, the engine and the state read is the clock, and
    # so is `time.monotonic()` (the receive clock, sanlens.freshness, runs on it); the pollers are not
    # started: each poll is run here, in order, and handed to the pipeline as a poller would.
    with mock.patch("time.time", clock), mock.patch("time.monotonic", clock):
        sim = Simulator(scenario=SCENARIO, clock=clock).start()
        try:
            exporter = Exporter(config(sim))
            exporter.server.start()
            try:
                for i in range(POLLS):
                    if i:
                        clock.t += INTERVAL
                    for source in exporter.sources:
                        try:
                            snap = source.poll()
                        except SourceError as e:
                            exporter.state.record_failure(
                                source.name, source.kind, e.reason, str(e), POLL_DURATION
                            )
                        else:
                            exporter.pipeline.record_success(snap, POLL_DURATION)
                        settle(source)
                    exporter.engine.evaluate_pending()  # as the engine thread does after each round
                exporter.server.exposition.refresh()  # the renderer thread may not have run yet
                url = f"http://127.0.0.1:{exporter.port}/metrics"
                with urllib.request.urlopen(url, timeout=30) as resp:
                    return str(resp.read().decode("utf-8"))
            finally:
                exporter.server.stop()
                for source in exporter.sources:
                    source.close()
        finally:
            sim.stop()


def mask(text: str) -> str:
    """The page with the labels that differ between builds and machines replaced."""
    text = _BUILD_INFO.sub(r'\1{python_version="<masked>",version="<masked>"}', text)
    return _PROCESS.sub("", text)  # the process' own CPU, memory and fds differ every run


@functools.cache
def golden_text() -> str:
    """The masked page; rendered once per process (the golden and the docs tests share it)."""
    return mask(render())


def diff(expected: str, got: str, limit: int = 60) -> str:
    lines = list(
        difflib.unified_diff(expected.splitlines(), got.splitlines(), "golden", "rendered", lineterm="", n=1)
    )
    more = f"\n... {len(lines) - limit} more diff lines" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


def settle(source: Any) -> None:
    """Wait for a QoS read the poll started (it runs beside the poll and the next poll folds it), so a
    hand-moved clock gives the same figures on every run."""
    reader = getattr(source, "qos_reader", None)
    if reader is not None:
        reader.wait(120)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--update", action="store_true", help=f"rewrite {GOLDEN.relative_to(ROOT)}")
    group.add_argument("--check", action="store_true", help="exit 1 if the golden file is stale")
    args = ap.parse_args(argv)
    text = golden_text()
    if args.update:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN.relative_to(ROOT)} ({len(text.splitlines())} lines)")
        return 0
    if args.check:
        old = GOLDEN.read_text(encoding="utf-8") if GOLDEN.exists() else ""
        if old != text:
            print(diff(old, text), file=sys.stderr)
            print(f"{GOLDEN.relative_to(ROOT)} is stale: run tests/golden.py --update", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
