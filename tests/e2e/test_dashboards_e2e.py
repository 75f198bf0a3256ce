"""Every dashboard query returns real data: simulator -> real exporter -> real Prometheus -> each panel target.

Scenario ``mixed`` (oversubscription, Kahuna, disk imbalance and a rebuild at
once) with the rebuild brought forward (``rebuild_after_s``) and sped up, so
the background-operation panels, empty on a healthy estate, fill too. The
dashboards' own variables are resolved the way Grafana does it: each
``label_values(selector, label)`` runs against ``/api/v1/label/<label>/values``
with ``match[]``, earlier variables substituted first; multi values become a
regex ``(a|b)`` with Grafana's escaping; a repeated row is checked once per
value of its variable. Then every target expr runs through ``/api/v1/query``
and must return at least one finite sample.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from typing import Any

import pytest

from conftest import ROOT
from dashboard_queries import BUILTINS, SCRAPE_S, Check, checks_for, fmt
from grafana_vars import substitute
from harness import Harness, PrometheusHandle, harness, wait_until  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

DASH_DIR = ROOT / "dashboards"
RULES = ROOT / "rules" / "sanlens.rules.yaml"
DEADLINE_S = 110.0
LATENCY = "sanlens-latency-breakdown"
# The latency-breakdown panels (and their targets) that only their diagnosis's scenario fills.
SCENARIO_PANELS = {
    "qos-throttle": {
        "Workload ops vs its QoS ceiling": "ABC",
        "Ops / ceiling": "A",
        "QoS Max share of the workload's latency": "A",
        "QoS Max, QoS Min and the workload's latency": "ABC",
    },
    "indirect-io": {
        "Indirect share of the LUN's ops": "A",
        "Indirect and all ops": "AB",
        "Interconnect time per op": "A",
        "Cluster component share of the latency": "A",
        "Host paths: ALUA optimized of active": "AB",
    },
}
REBUILD_RATE = 0.4  # %/s: the reconstruct lasts 250 s, longer than the test
# Targets the mixed scenario leaves empty, by design; each must still be a valid query.
NO_SCENARIO_FILLS = {
    **{
        ("sanlens-io-path", "Path findings", ref): "empty is good: mixed has no path fault (path-faults has)"
        for ref in "ABC"
    },
    ("sanlens-io-path", "FC target ports not online", "A"): "empty is good: every FC port of mixed is online",
    **{
        (LATENCY, panel, ref): "empty is good: mixed has no QoS ceiling and no indirect path "
        "(the qos-throttle and indirect-io scenarios fill it: test_latency_breakdown_fills_from_its_scenarios)"
        for panels in SCENARIO_PANELS.values()
        for panel, refs in panels.items()
        for ref in refs
    },
}


def finite(result: list[dict[str, Any]]) -> bool:
    return any(math.isfinite(float(r["value"][1])) for r in result)


def test_every_panel_query_returns_data(harness: Harness) -> None:  # noqa: F811
    t0 = time.monotonic()
    sim = harness.start_simulator("mixed", rebuild_after_s=12, rebuild_rate_pct_s=REBUILD_RATE)
    exp = harness.start_exporter(sim, ontap_interval=2.0, host_interval=1.0, sustain_scale=0.05)
    prom = harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[RULES] if RULES.exists() else [],
        scrape_interval=f"{SCRAPE_S}s",
        evaluation_interval=f"{SCRAPE_S}s",
    )
    harness.wait_until(lambda: prom.targets_up("sanlens"), 30, what="Prometheus to scrape the exporter")
    dashboards = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(DASH_DIR.glob("*.json"))}
    assert len(dashboards) == 6

    pending: dict[str, Check] = {}
    passed: set[str] = set()
    errors: dict[str, str] = {}
    expected_empty: dict[str, Check] = {}
    while True:
        try:
            all_checks = [c for d in dashboards.values() for c in checks_for(prom, d)]
        except AssertionError as e:  # a variable with no values yet
            errors["variables"] = str(e)
            all_checks = []
        else:
            errors.pop("variables", None)
        pending = {str(c): c for c in all_checks if str(c) not in passed}
        for name, c in pending.items():
            result = prom.query(c.expr)  # raises on a query Prometheus rejects
            if c.key in NO_SCENARIO_FILLS:
                expected_empty[name] = c
                passed.add(name)
            elif result and finite(result):
                passed.add(name)
        left = [c for name, c in pending.items() if name not in passed]
        if all_checks and not left:
            break
        if time.monotonic() - t0 > DEADLINE_S:
            listing = "\n".join(f"  {c}" for c in left) or "  (no checks: variables unresolved)"
            raise AssertionError(
                f"{len(left)} of {len(all_checks)} dashboard queries still empty after {DEADLINE_S:.0f}s "
                f"{errors or ''}:\n{listing}"
            )
        time.sleep(3)

    # Every dashboard was exercised, repeated rows once per value, and the rebuild filled its panels.
    per_dash = {uid: sum(1 for c in all_checks if c.dashboard == uid) for uid in dashboards}
    assert all(n >= 5 for n in per_dash.values()), per_dash
    luns = {c.repeat for c in all_checks if c.dashboard == "sanlens-io-path" and c.repeat}
    assert len(luns) >= 2, "one io-path row per mapped LUN"
    aggrs = {c.repeat for c in all_checks if c.dashboard == "sanlens-disks" and c.repeat}
    assert len(aggrs) == 4, "one disks row per aggregate of the mixed scenario"
    check_values(prom, all_checks)
    print(f"dashboard queries: {len(all_checks)} ok in {time.monotonic() - t0:.0f}s {per_dash}")
    for c in expected_empty.values():
        print(f"not fillable by any scenario (query valid): {c} — {NO_SCENARIO_FILLS[c.key]}")


def test_grafana_escaping_matches_prometheus_regex() -> None:
    """The variable formatting the e2e relies on: '.' in a disk name stays literal."""
    assert fmt(["1.0.1"], True) == "1\\\\.0\\\\.1"
    assert fmt(["a", "b"], True) == "(a|b)"
    assert fmt(["x"], False) == "x"
    assert substitute('{disk=~"$d", x="${e}"} [$__rate_interval] "$1"', {"d": "A", "e": "B", **BUILTINS}) == (
        '{disk=~"A", x="B"} [8s] "$1"'
    )


# ------------------------------------------------------------------ the numbers are right, not just present
def values_of(
    prom: PrometheusHandle, checks: list[Check], dash: str, panel: str, ref: str, repeat: str = ""
) -> list[tuple[dict[str, str], float]]:
    found = [c for c in checks if (c.dashboard, c.panel, c.ref) == (dash, panel, ref) and c.repeat == repeat]
    assert len(found) == 1, f"{dash} / {panel} / {ref} [{repeat}]"
    return [(r["metric"], float(r["value"][1])) for r in prom.query(found[0].expr)]


def settled(
    prom: PrometheusHandle,
    checks: list[Check],
    dash: str,
    panel: str,
    ref: str,
    repeat: str = "",
    reads: int = 5,
) -> list[float]:
    """Each series' median over a few reads a scrape apart. A rate per second of wall time (a disk's
    idle seconds) moves with the exporter's poll timing: one late host poll stretches a short window
    by a second. A wrong formula is off in every read; a late poll, in one or two."""
    seen: dict[tuple[tuple[str, str], ...], list[float]] = {}
    for k in range(reads):
        if k:
            time.sleep(SCRAPE_S)
        for m, v in values_of(prom, checks, dash, panel, ref, repeat):
            seen.setdefault(tuple(sorted(m.items())), []).append(v)
    return [statistics.median(vs) for vs in seen.values()]


def check_values(prom: PrometheusHandle, checks: list[Check]) -> None:
    """Panel maths against the scenario table of docs/simulator.md (mixed = the four field cases)."""
    cpu = "sanlens-ontap-cpu-domains"
    kahuna = {m["node"]: v for m, v in values_of(prom, checks, cpu, "Kahuna vs its thresholds", "A")}
    hot = max(kahuna, key=lambda n: kahuna[n])
    assert kahuna[hot] == pytest.approx(0.90, abs=0.03), "Kahuna is about 90 % of one core"
    avg = {m["node"]: v for m, v in values_of(prom, checks, cpu, "Average CPU busy", "A")}
    assert avg[hot] == pytest.approx(0.30, abs=0.03), "while average CPU is about 30 %"
    domains = {
        (m["node"], m["domain"]): v
        for m, v in values_of(prom, checks, cpu, "Domain busy (ratio of one core)", "A")
    }
    assert domains[(hot, "kahuna")] == pytest.approx(kahuna[hot], rel=1e-6)
    cpus = float(prom.query(f'sanlens_ontap_node_processors{{node="{hot}"}}')[0]["value"][1])
    serial = {m["node"]: v for m, v in values_of(prom, checks, cpu, "Kahuna vs its thresholds", "B")}
    expected = domains[(hot, "kahuna")] + domains[(hot, "wafl_exempt")] / (cpus - 1)
    assert serial[hot] == pytest.approx(expected, rel=0.01), "U_K + U_W / (N_cpu - 1)"

    # aggregate expansion: 46 old disks at 25 % busy, 24 new ones at 75 % -> CV of the population
    busy = [0.25] * 46 + [0.75] * 24
    mean = sum(busy) / len(busy)
    cv = math.sqrt(sum((b - mean) ** 2 for b in busy) / len(busy)) / mean
    disks = "sanlens-disks"
    cvs = {
        c.repeat: values_of(prom, checks, disks, c.panel, c.ref, c.repeat)[0][1]
        for c in checks
        if (c.dashboard, c.panel, c.ref) == (disks, "Imbalance: coefficient of variation", "A")
    }
    expanded = [r for r in cvs if r.endswith("aggr_sas_exp")]
    assert len(expanded) == 1 and cvs[expanded[0]] == pytest.approx(cv, abs=0.05)
    assert all(v < 0.3 for r, v in cvs.items() if r not in expanded), cvs

    # rebuild: ETA = what is left / the progress rate the test set (0.4 %/s), ONTAP reports whole percents
    def progressed() -> list[tuple[dict[str, str], float]]:
        done = values_of(prom, checks, disks, "Active background operations", "A")
        return done if done and done[0][1] >= 0.08 else []

    # whole percents make the first estimates coarse: judge the ETA once 8 % is done
    done = wait_until(progressed, 60, interval=2, what="the reconstruct to pass 8 %")
    eta = values_of(prom, checks, disks, "Active background operations", "B")
    assert len(done) == 1 and len(eta) == 1
    assert eta[0][1] == pytest.approx(100.0 * (1.0 - done[0][1]) / REBUILD_RATE, rel=0.15)

    # oversubscription (fa_ports 2): host about 1.5 s, ONTAP about 1 ms, host disk 70 % idle
    io = "sanlens-io-path"
    row = "lun=/vol/sql01_data/lun0"
    host = [
        v
        for m, v in values_of(prom, checks, io, "Latency: host vs ONTAP LUN", "A", row)
        if m["host"] == "sql01"
    ]
    ontap = [v for _, v in values_of(prom, checks, io, "Latency: host vs ONTAP LUN", "B", row)]
    gap = [v for _, v in values_of(prom, checks, io, "Fabric + queue time (host - ONTAP)", "A", row)]
    idle = settled(prom, checks, io, "% idle", "A", row)
    assert host and all(v == pytest.approx(1.5, rel=0.2) for v in host), host
    assert ontap and all(v == pytest.approx(0.001, rel=0.3) for v in ontap), ontap
    assert gap and all(v == pytest.approx(max(host) - max(ontap), rel=0.05) for v in gap), gap
    assert idle and all(v == pytest.approx(0.70, abs=0.05) for v in idle), idle


# ------------------------------------------------------------------ the latency breakdown, from its own scenarios
Filled = set[tuple[str, str, str]]


def fill(harness: Harness, scenario: str) -> tuple[PrometheusHandle, list[Check], Filled]:  # noqa: F811
    """The latency-breakdown dashboard's checks against one scenario, polled until every panel the
    scenario is made for has data; returns what filled."""
    sim = harness.start_simulator(scenario)
    exp = harness.start_exporter(sim, ontap_interval=2.0, host_interval=1.0, sustain_scale=0.05)
    prom = harness.start_prometheus(
        {"sanlens": [exp.address]},
        rule_files=[RULES],
        scrape_interval=f"{SCRAPE_S}s",
        evaluation_interval=f"{SCRAPE_S}s",
    )
    harness.wait_until(lambda: prom.targets_up("sanlens"), 30, what="Prometheus to scrape the exporter")
    board = json.loads((DASH_DIR / f"{LATENCY}.json").read_text(encoding="utf-8"))
    t0 = time.monotonic()
    while True:
        try:
            checks = checks_for(prom, board)
        except AssertionError:  # no waterfall exposed yet
            checks = []
        filled = {c.key for c in checks if finite(prom.query(c.expr))}
        mine = {c.key for c in checks if c.ref in SCENARIO_PANELS[scenario].get(c.panel, "")}
        always = {c.key for c in checks if c.key not in NO_SCENARIO_FILLS}
        if checks and mine and (mine | always) <= filled:
            return prom, checks, filled
        if time.monotonic() - t0 > DEADLINE_S:
            left = sorted((mine | always) - filled) if checks else ["variables unresolved"]
            raise AssertionError(f"{scenario}: {LATENCY} panels still empty after {DEADLINE_S:.0f}s: {left}")
        time.sleep(3)


def test_latency_breakdown_fills_from_its_scenarios(harness: Harness) -> None:  # noqa: F811
    """Every latency-breakdown query returns data under qos-throttle or indirect-io (mixed fills only the
    waterfall), and the numbers are the scenarios': 24 ms of QoS Max in about 25 ms; 90 % indirect."""
    prom, checks, qos_filled = fill(harness, "qos-throttle")
    subjects = values_of(
        prom, checks, LATENCY, "Slowest subjects and their dominant component (worst $topn)", "B"
    )
    assert any(m["component"] == "qos_max" for m, _ in subjects), subjects
    share = [v for _, v in values_of(prom, checks, LATENCY, "QoS Max share of the workload's latency", "A")]
    assert share and max(share) == pytest.approx(24.0 / 25.0, abs=0.05), share
    used = [v for _, v in values_of(prom, checks, LATENCY, "Ops / ceiling", "A")]
    assert used and max(used) == pytest.approx(0.97, abs=0.03), used

    prom, checks, indirect_filled = fill(harness, "indirect-io")
    remote = [v for _, v in values_of(prom, checks, LATENCY, "Indirect share of the LUN's ops", "A")]
    assert remote and max(remote) == pytest.approx(0.9, abs=0.05), remote
    every = {c.key for c in checks}
    assert every - qos_filled - indirect_filled == set(), "each query filled by one of the two scenarios"
