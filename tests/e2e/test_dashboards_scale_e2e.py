"""Every dashboard at 10,000 LUNs: each panel query returns at most its top-N series, fast.

A healthy simulated estate padded to 10,000 LUNs, the real exporter (short polls), Debian's
Prometheus with the shipped recording rules; then every dashboard's variables are resolved the
way Grafana does (the top-N variables at their default, the worst 10) and every target runs as an
instant query with Prometheus's own per-query timeout. A panel that lists the estate (every LUN
behind an "All" regex, one line per LUN, a repeated row per LUN) fails the series bound; a query
that cannot answer in time fails the timeout.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from conftest import ROOT
from dashboard_queries import builtins, checks_for
from harness import Harness, harness  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

LUNS = 10_000
SCRAPE_S = 5
QUERY_TIMEOUT = "20s"  # Prometheus's per-query timeout for this test (its default is 2m)
QUERY_BUDGET_S = 20.0
# A panel may draw a read and a write line per subject, and its threshold lines: per subject, N x 2.
SERIES_PER_SUBJECT = 2
SETTLE_TIMEOUT_S = 120.0


def dashboards() -> dict[str, dict[str, Any]]:
    return {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((ROOT / "dashboards").glob("*.json"))
    }


def top_n(d: dict[str, Any]) -> int:
    for v in d["templating"]["list"]:
        if v["name"] == "topn":
            return int(v["current"]["value"])
    return 10


def test_every_panel_query_is_bounded_and_fast_at_10000_luns(harness: Harness) -> None:  # noqa: F811
    t0 = time.monotonic()
    sim = harness.start_simulator("healthy", luns=LUNS)
    exp = harness.start_exporter(sim, ontap_interval=5.0, host_interval=5.0, timeout=120.0)
    rules = ROOT / "rules" / "sanlens.rules.yaml"
    prom = harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[rules],
        scrape_interval=f"{SCRAPE_S}s",
        evaluation_interval=f"{SCRAPE_S}s",
    )

    def rated() -> list[dict[str, Any]] | None:
        n = prom.query("count(lun:sanlens_ontap_lun_ops:rate5m)")
        return n if n and float(n[0]["value"][1]) >= LUNS * 0.9 else None

    luns = harness.wait_until(rated, SETTLE_TIMEOUT_S, 2.0, "rated IOPS of the whole estate's LUNs")
    print(f"estate up after {time.monotonic() - t0:.0f}s: {luns[0]['value'][1]} LUNs rated")

    base = builtins(SCRAPE_S)
    report: list[tuple[float, int, str]] = []
    for uid, d in dashboards().items():
        n = top_n(d)

        def resolved(d: dict[str, Any] = d) -> list[Any] | None:
            try:
                return checks_for(prom, d, base) or None
            except AssertionError:  # a variable's recording rule has no sample yet
                return None

        checks = harness.wait_until(resolved, SETTLE_TIMEOUT_S, 2.0, f"the variables of {uid}")
        repeats = {c.repeat for c in checks if c.repeat}
        assert len(repeats) <= n, f"{uid}: a row repeated {len(repeats)} times, over its top {n}"
        for c in checks:
            start = time.monotonic()
            data = prom.api("query", query=c.expr, timeout=QUERY_TIMEOUT)
            took = time.monotonic() - start
            series = len(data["result"]) if isinstance(data["result"], list) else 1
            report.append((took, series, str(c)))
            assert took < QUERY_BUDGET_S, f"{c}: {took:.1f}s"
            assert series <= n * SERIES_PER_SUBJECT, f"{c}: {series} series (top {n})"
    report.sort(reverse=True)
    slowest, widest = report[0], max(report, key=lambda r: r[1])
    print(
        f"{len(report)} panel queries at {LUNS} LUNs: slowest {slowest[0]:.2f}s ({slowest[2][:120]}), "
        f"most series {widest[1]} ({widest[2][:120]}); total {time.monotonic() - t0:.0f}s"
    )
