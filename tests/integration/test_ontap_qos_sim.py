"""The ONTAP source against the simulator's ``qos-throttle`` scenario over loopback: the QoS tables and
endpoints cook into workloads whose components add up to their latency, QoS Max dominating the capped one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sanlens.config import Duration, OntapTarget
from sanlens.model import OntapView
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator


@pytest.fixture
def view() -> Iterator[OntapView]:
    sim = Simulator(scenario="qos-throttle", port=0)
    sim.start()
    src = OntapSource(
        OntapTarget(name="c1", url=sim.url, poll_interval=Duration(1.0), qos_interval=Duration(0))
    )
    try:
        # a QoS read runs beside the poll that starts it and the next poll folds it: two reads, three polls
        for _ in range(2):
            src.poll()
            src.qos_reader.wait(30)
            time.sleep(1.2)
        snap = src.poll()
        assert isinstance(snap.view, OntapView)
        assert snap.inputs is not None and not snap.inputs["tables_missing"], snap.inputs
        yield snap.view
    finally:
        src.close()
        sim.stop()


def test_the_capped_workloads_components_add_up_to_its_latency_and_qos_max_dominates(view: OntapView) -> None:
    (w,) = [w for w in view.qos_workloads if w.policy == "sql-cap"]
    assert w.volume == "sql_data" and w.svm
    assert w.latency_s is not None and w.latency_s > 0.01
    assert abs(sum(w.components.values()) - w.latency_s) < 1e-9
    assert w.dominant is not None and w.dominant[0] == "qos_max"
    assert w.components["qos_max"] > 0.5 * w.latency_s
    ceiling = {p.name: p for p in view.qos_policies}["sql-cap"]
    assert ceiling.kind == "fixed" and ceiling.max_iops is not None
    assert w.iops is not None and w.iops >= 0.85 * ceiling.max_iops, "held at its ceiling"


def test_every_workload_with_a_breakdown_adds_up_and_the_policy_kinds_are_read(view: OntapView) -> None:
    broken_down = [w for w in view.qos_workloads if w.components]
    assert len(broken_down) >= 3
    for w in broken_down:
        assert w.latency_s is not None and abs(sum(w.components.values()) - w.latency_s) < 1e-9, w.workload
    kinds = {(p.kind, p.shared) for p in view.qos_policies}
    assert {("fixed", False), ("fixed", True), ("adaptive", False)} <= kinds
