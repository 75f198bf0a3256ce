#!/usr/bin/env python3
"""Writes the sanlens Grafana dashboards (dashboards/*.json) from their descriptions.

``harvest/`` holds the evidence dashboard for clusters read through NetApp Harvest's series.

Why a generator: six dashboards share one datasource variable, the same chained
label variables, the same panel defaults and the same PromQL fragments; writing
them once keeps every panel consistent. ``lib/`` holds those shared builders,
``defs/`` one module per dashboard.

It imports the exporter package (``mixin/config.py`` puts exporter/ on the path):
threshold bands and the numbers quoted in descriptions are the diagnosis specs'
defaults, and links, tags and the uid prefix come from the mixin config, so the
dashboards, the alert rules and the engine agree. It takes the rules
generator's override flags (``--job-selector`` and ``--dashboard-base-url`` are
accepted but change nothing here: panels select by cluster/host variables, and
the links between dashboards go by tag inside Grafana):

    python3 dashboards/build.py          # rewrite dashboards/*.json
    python3 dashboards/build.py --check  # exit 1 if a committed file differs
    python3 dashboards/build.py --out /tmp/d --runbook-base-url https://wiki.example.com/runbooks

Metric names follow docs/metrics.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from mixin.config import DEFAULT, MixinConfig, add_arguments, from_args  # noqa: E402

from dashboards.defs import (  # noqa: E402
    disks,
    harvest_evidence,
    io_path,
    latency_breakdown,
    lun_volume,
    ontap_cpu_domains,
    overview,
)

DEFS = (overview, io_path, latency_breakdown, ontap_cpu_domains, lun_volume, disks)
# where sanlens reads ONTAP through NetApp Harvest's series: shipped with the overview instead of DEFS[1:]
HARVEST_DEFS = (harvest_evidence,)
HARVEST_DIR = "harvest"


def render(d: dict[str, Any]) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def build_all(cfg: MixinConfig = DEFAULT) -> dict[str, str]:
    """File name (the uid; Harvest's under harvest/) -> JSON text for every dashboard."""
    out = {f"{d['uid']}.json": render(d) for d in (m.build(cfg) for m in DEFS)}
    out |= {f"{HARVEST_DIR}/{d['uid']}.json": render(d) for d in (m.build(cfg) for m in HARVEST_DEFS)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="fail if a committed dashboard differs from the build"
    )
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: this folder)")
    add_arguments(ap)
    args = ap.parse_args(argv)
    stale = []
    for name, text in build_all(from_args(args)).items():
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale dashboards (run python3 dashboards/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
