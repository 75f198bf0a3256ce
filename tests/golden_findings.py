#!/usr/bin/env python3
"""What the engine finds on recorded inputs, so a faster engine can be held to the same findings.

Two kinds of input, both reproducible:

- every simulator scenario, polled on a hand-moved clock (the REST collector and each host's own
  source, eight polls 60 s apart, sustain windows shortened as ``sanlens demo`` shortens them): the
  findings after every evaluation;
- ``sanlens analyze --format json`` over each real capture under ``tests/data`` (PerfMon logs,
  iostat and sar text, ONTAP statistics and sysstat text) and over a seeded 64-disk PerfMon log:
  the report's findings.

Each finding is reduced to what the engine decides (id, subject, state, score, evidence, since,
incident, role, causes); the report's wording and timing are not part of it.

    .venv/bin/python tests/golden_findings.py --update   # rewrite tests/data/golden/findings.json
    .venv/bin/python tests/golden_findings.py --check    # exit 1 if a fresh run differs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from tests.joining import joined

from golden import Clock, settle
from sanlens.config import DiagnoseConfig, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory
from sanlens.ontap.collector import OntapSource
from sanlens_sim.scenarios import SCENARIOS
from sanlens_sim.server import Simulator

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden" / "findings.json"
START = 1_700_000_000.0
INTERVAL = 60.0
POLLS = 8
SUSTAIN_SCALE = 0.05
GENERATED_MB = 3.0
KEEP = ("id", "subject", "state", "score", "evidence", "since", "incident", "role", "causes")
CAPTURES = (
    ["perfmon/perfmon_fs02.tsv"],
    ["perfmon/relog_sql01.csv"],
    ["perfmon/typeperf_web03.csv"],
    ["linux/marslo-ibook-rhel7-iostat-x.txt"],
    ["linux/marslo-ibook-rhel7-sar-bdp.txt"],
    ["linux/matrixzj-rhel6-multipath-iostat-xkt.txt"],
    ["ontap/lun-statistics-show-raw-samples.txt"],
    ["ontap/sysstat-M.txt"],
)


def reduce(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: f.get(k) for k in KEEP} for f in findings]


def scenario_findings(name: str) -> list[list[dict[str, Any]]]:
    """The findings after each of ``POLLS`` evaluations of one scenario."""
    clock = Clock(START)
    out = []
    with (
        mock.patch("time.time", clock),
        mock.patch("time.monotonic", clock),
        Simulator(scenario=name, clock=clock) as sim,
    ):
        directory = LunDirectory()
        sources: list[Any] = [joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)]
        sources += [
            joined(make_host_source(HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics")), directory)
            for h in sim.hosts
        ]
        sources += [
            joined(
                make_host_source(
                    HostTarget(name=h, source="node_exporter", url=f"{sim.url}/linux/{h}/metrics")
                ),
                directory,
            )
            for h in sim.linux_hosts
        ]
        engine = Engine(DiagnoseConfig(sustain_scale=SUSTAIN_SCALE))
        for i in range(POLLS):
            clock.t = START + INTERVAL * i
            for src in sources:
                engine.update(src.poll())
                settle(src)
            out.append(reduce(engine.findings()))
        for src in sources:
            src.close()
    return out


def capture_findings(files: list[str]) -> list[dict[str, Any]]:
    """``analyze`` over copies whose modification time is ``START``: a capture without dates
    (sysstat text, iostat without ``-t``) is placed in time by its mtime, which a clone sets to
    the moment of checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for f in files:
            src = Path(f) if Path(f).is_absolute() else ROOT / "tests" / "data" / f
            dst = Path(tmp) / str(len(paths)) / src.name
            dst.parent.mkdir()
            shutil.copyfile(src, dst)
            os.utime(dst, (START, START))
            paths.append(str(dst))
        p = subprocess.run(
            [sys.executable, "-m", "sanlens", "analyze", "--format", "json", "--quiet", *paths],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    if p.returncode not in (0, 1):
        raise RuntimeError(f"analyze {files} exited {p.returncode}: {p.stderr[-2000:]}")
    return reduce(json.loads(p.stdout)["diagnoses"])


def generated_log_findings() -> list[dict[str, Any]]:
    """A 64-disk PerfMon log with one disk waiting while idle and another queueing (the report
    benchmark's generator, seeded): many intervals, several findings that come and go."""
    sys.path.insert(0, str(ROOT / "bench"))
    from report_scale import generate_disks

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "disks.csv"
        generate_disks(log, GENERATED_MB, seed=1)
        return capture_findings([str(log)])


def render() -> str:
    doc = {
        "scenarios": {name: scenario_findings(name) for name in sorted(SCENARIOS)},
        "captures": {"+".join(files): capture_findings(files) for files in CAPTURES},
        "generated": generated_log_findings(),
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = render()
    if args.update:
        GOLDEN.write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN.relative_to(ROOT)}")
        return 0
    if args.check:
        same = GOLDEN.read_text(encoding="utf-8") == text
        if not same:
            print(f"{GOLDEN.relative_to(ROOT)} differs: the engine's findings changed", file=sys.stderr)
        return 0 if same else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
