"""The cached fast /metrics path renders exactly what prometheus_client would, for real snapshots."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import OntapTarget
from sanlens.exposition import Exposition, make_registry
from sanlens.join import LunDirectory
from sanlens.model import MetricBuilder, Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens.sim.server import Simulator
from sanlens.state import State


def _parse(text: str) -> set[tuple[str, str, tuple, float]]:
    out = set()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            out.add((fam.type, s.name, tuple(sorted(s.labels.items())), s.value))
    return out


def test_fast_exposition_equals_client_library_on_simulator_snapshot() -> None:
    sim = Simulator(scenario="mixed", port=0)
    sim.start()
    try:
        src = OntapSource(OntapTarget(name="c1", url=sim.url), LunDirectory())
        state = State()
        state.register("c1", "ontap", 60.0)
        state.record_success(src.poll(), 0.1)
        exp = Exposition(state)
        fast = exp.render().decode()
        assert exp.render().decode() == fast  # cached path is stable
        slow = generate_latest(make_registry(state)).decode()
    finally:
        sim.stop()
    a, b = _parse(fast), _parse(slow)
    assert len(a) > 1000
    assert a == b


def test_label_values_are_escaped_and_special_floats_rendered() -> None:
    b = MetricBuilder()
    b.add("sanlens_test_total", "counter", 'help with \\ and "quotes"', {"x": 'a"b\\c\nd'}, float("inf"))
    b.add("sanlens_test_gauge", "gauge", "g", {"x": ""}, float("nan"))
    state = State()
    state.register("t", "host", 5.0)
    state.record_success(Snapshot("t", "host", 0.0, b.build()), 0.0)
    text = Exposition(state).render().decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    s = fams["sanlens_test"].samples[0]
    assert s.labels["x"] == 'a"b\\c\nd'
    assert s.value == float("inf")
    g = fams["sanlens_test_gauge"].samples[0]
    assert g.value != g.value  # NaN
