"""A partial-aggregation episode seen by a real Prometheus scraping the real exporter.

While one node's constituents are missing, a LUN row's sums drop (the simulator lowers them as
ONTAP does). Exposed as counters, that drop is a counter reset to Prometheus: rate() jumps by the
whole counter value (days of I/O) on the drop and again on the recovery. The exporter leaves the
incomplete rows out of /metrics instead, so Prometheus sees a short gap and rate() stays at the
LUNs' real rates, which the simulator's scenario defines.
"""

from __future__ import annotations

import time

import pytest

from harness import Harness, harness, http_post_json  # noqa: F401  (``harness`` is a fixture)

pytestmark = pytest.mark.e2e

EPISODE_S = 5.0  # how long one node's constituents are missing
TAIL_S = 8.0  # samples after the recovery, so the windows that span the gap are evaluated


def test_partial_aggregation_makes_no_counter_reset_and_no_rate_spike(harness: Harness) -> None:  # noqa: F811
    sim = harness.start_simulator("healthy")
    exp = harness.start_exporter(sim, ontap_interval=1.0, host_interval=1.0)
    prom = harness.start_prometheus({"sanlens": [exp.address]}, scrape_interval="1s")
    world = sim.obj.estate.world()
    expected = {(x.svm, x.path): x.io.read_ops for x in world.luns}
    assert min(expected.values()) > 0
    read_ops = 'sanlens_ontap_lun_ops_total{op="read"}'
    harness.wait_until(lambda: prom.query(f"count_over_time({read_ops}[1m]) >= 5"), 60, 0.5, "5 samples")

    status, body = http_post_json(f"{sim.url}/-/sim/faults", {"partial_aggregation": True})
    assert status == 200, body
    harness.wait_until(
        lambda: prom.query('sanlens_ontap_partial_aggregation_rows{table="lun"} > 0'), 30, 0.5, "partial rows"
    )
    time.sleep(EPISODE_S)
    status, body = http_post_json(f"{sim.url}/-/sim/faults", {"partial_aggregation": False})
    assert status == 200, body
    harness.wait_until(
        lambda: prom.query('sanlens_ontap_partial_aggregation_rows{table="lun"} == 0'), 30, 0.5, "recovery"
    )
    time.sleep(TAIL_S)

    span = "[2m]"
    # the episode happened and Prometheus saw it
    seen = prom.query(f'max_over_time(sanlens_ontap_partial_aggregation_rows{{table="lun"}}{span})')
    assert seen and float(seen[0]["value"][1]) == len(expected)
    # no counter ever went backwards
    resets = prom.query(f"resets({read_ops}{span})")
    assert len(resets) == len(expected)
    assert all(float(r["value"][1]) == 0 for r in resets), [r for r in resets if float(r["value"][1])]
    # and the worst 5 s rate over the whole run stays near each LUN's simulated rate
    worst = prom.query(f"max_over_time(rate({read_ops}[5s])[2m:1s])")
    assert len(worst) == len(expected)
    for r in worst:
        m = r["metric"]
        want = expected[(m["svm"], m["lun"])]
        got = float(r["value"][1])
        assert got <= 3.0 * want, f"{m['lun']}: rate peaked at {got:.0f}/s, the LUN does {want:.0f}/s"
