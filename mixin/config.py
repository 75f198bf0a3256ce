"""The one configuration of the sanlens mixin: what the rules and the dashboards share.

In the monitoring-mixins manner, a site changes selectors and links here (or with
the generators' flags, which override this), never in the generated files.
Thresholds are not copied: they are the diagnosis specs' defaults, read from the
exporter package, so an alert, a dashboard band and the engine cannot disagree.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "exporter") not in sys.path:
    sys.path.insert(0, str(ROOT / "exporter"))


@dataclass(frozen=True)
class MixinConfig:
    # the exporter's scrape job(s), as a label matcher (Prometheus Operator names jobs after the Service)
    job_selector: str = 'job=~".*sanlens.*"'
    # where docs/runbooks/*.md are served
    runbook_base_url: str = "https://github.com/sanlens/sanlens/blob/main/docs/runbooks"
    # your Grafana's root URL (Grafana's default address by default)
    dashboard_base_url: str = "http://localhost:3000"
    # Grafana folder tags and the uid prefix of every dashboard
    dashboard_tags: tuple[str, ...] = ("sanlens",)
    dashboard_uid_prefix: str = "sanlens-"
    # the fewest ops per second a latency is computed over in recording rules and panels (an idle
    # LUN's single slow op would otherwise draw a spike): latency_slo's own min_iops
    latency_min_iops: float = 5.0
    # how many subjects the dashboards' top-N variables offer by default (the worst N)
    top_n: int = 10

    def threshold(self, diagnosis: str, name: str) -> float:
        """A diagnosis threshold's default, from the diagnosis spec itself."""
        from sanlens.diagnose.registry import REGISTRY

        return REGISTRY[diagnosis].threshold(name).default


DEFAULT = MixinConfig()


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The flags both generators take; each overrides its field of the config."""
    for f in fields(MixinConfig):
        if f.type in ("str", str):
            ap.add_argument("--" + f.name.replace("_", "-"), default=None, help=f"override {f.name}")


def from_args(args: argparse.Namespace, base: MixinConfig = DEFAULT) -> MixinConfig:
    over: dict[str, Any] = {}
    for f in fields(MixinConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            over[f.name] = v
    return replace(base, **over)
