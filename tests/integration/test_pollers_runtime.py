"""The exporter's pollers against slow, failing and hung servers; stop and reload of the Exporter."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sanlens.config import Config, DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.config.models import WindowsExporterHost
from sanlens.errors import ConfigError
from sanlens.runtime.exporter import Exporter
from sanlens.source import MIN_POLL_DEADLINE_S, POLL_DEADLINE_RATIO
from sanlens_sim.server import Simulator
from slow_http import TrickleServer

Series = dict[str, dict[tuple[tuple[str, str], ...], float]]


def scrape(port: int) -> Series:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out: Series = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def sample(m: Series, name: str, **labels: str) -> float | None:
    for key, v in m.get(name, {}).items():
        if set(labels.items()) <= set(key):
            return v
    return None


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds it took for ``check`` to hold."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - t0


@pytest.fixture
def sim() -> Iterator[Simulator]:
    s = Simulator(scenario="healthy", port=0).start()
    yield s
    s.stop()


@pytest.fixture
def exporters() -> Iterator[list[Exporter]]:
    started: list[Exporter] = []
    yield started
    for e in started:
        e.stop()


def host(sim: Simulator, i: int, interval: float = 1.0) -> HostTarget:
    """A host target; a sub-second interval (below a config file's floor of 1 s) keeps the tests short."""
    h = sim.hosts[i]
    url = f"{sim.url}/windows/{h}/metrics"
    if interval < 1:
        return WindowsExporterHost.model_construct(name=h, url=url, poll_interval=Duration(interval))
    return HostTarget(name=h, url=url, poll_interval=Duration(interval))


def start(exporters: list[Exporter], cfg: Config) -> Exporter:
    e = Exporter(cfg)
    exporters.append(e)
    e.start()
    return e


def test_trickling_server_is_abandoned_at_the_deadline_and_its_poll_never_writes(
    sim: Simulator, exporters: list[Exporter]
) -> None:
    with urllib.request.urlopen(f"{sim.url}/windows/{sim.hosts[0]}/metrics", timeout=5) as r:
        page = r.read()
    srv = TrickleServer(page, slow=4, delay=1.0).start()  # a whole, valid page after 4 s
    try:
        interval = 1.0
        deadline = max(interval * POLL_DEADLINE_RATIO, MIN_POLL_DEADLINE_S)
        cfg = Config(
            listen="127.0.0.1:0",
            hosts=[HostTarget(name="slow", url=f"{srv.url}/metrics", poll_interval=Duration(interval))],
        )
        exp = start(exporters, cfg)

        def overran() -> bool:
            return (
                sample(scrape(exp.port), "sanlens_poll_errors_total", target="slow", reason="deadline") or 0
            ) >= 1

        took = wait_for(overran, deadline + 2.0, "the deadline")
        assert took < deadline + 1.0
        m = scrape(exp.port)
        assert sample(m, "sanlens_target_up", target="slow") == 0.0
        spent = sample(m, "sanlens_poll_duration_seconds", target="slow")
        assert spent is not None and deadline - 0.05 <= spent < deadline + 0.5
        # the abandoned poll's connection is cut at the deadline: the page is never read in
        # full, nothing of it reaches the state, and the next poll is not held up by it
        wait_for(lambda: srv.requests >= 2, deadline + 3.0, "the next poll")
        time.sleep(0.5)
        assert srv.completed == 0
        assert "slow" not in exp.state.view()[0]
        st = exp.state.view()[1]["slow"]
        assert not st.up and st.last_success is None
        # no tick skipped as "busy" behind the cut poll (the trickling server itself notices
        # the cut only at its next byte, so its own count of open connections lags)
        assert st.errors.get("deadline", 0) >= 1 and st.errors.get("busy", 0) == 0
    finally:
        srv.stop()


def test_slow_simulator_overruns_the_deadline_then_recovers(
    sim: Simulator, exporters: list[Exporter]
) -> None:
    interval = 1.0
    deadline = max(interval * POLL_DEADLINE_RATIO, MIN_POLL_DEADLINE_S)
    sim.set_faults(latency_ms=(deadline + 1.5) * 1000)
    exp = start(exporters, Config(listen="127.0.0.1:0", hosts=[host(sim, 0, interval)]))
    name = sim.hosts[0]
    wait_for(lambda: exp.state.view()[1][name].errors.get("deadline", 0) >= 1, deadline + 2.0, "the deadline")
    assert not exp.state.view()[1][name].up
    sim.set_faults(latency_ms=0)
    took = wait_for(lambda: exp.state.view()[1][name].up, 10.0, "recovery")
    # the abandoned poll may hold the target for up to 1.5 s more, then at most two intervals
    assert took < 1.5 + 2 * interval + 1.0


def test_recovers_within_about_two_intervals_after_an_outage(
    sim: Simulator, exporters: list[Exporter]
) -> None:
    interval = 0.5
    sim.set_faults(error_rate_5xx=1.0)
    exp = start(exporters, Config(listen="127.0.0.1:0", hosts=[host(sim, 0, interval)]))
    name = sim.hosts[0]
    wait_for(lambda: exp.state.view()[1][name].errors.get("http", 0) >= 6, 10.0, "a long outage")
    sim.set_faults(error_rate_5xx=0.0)
    took = wait_for(lambda: exp.state.view()[1][name].up, 5.0, "recovery")
    assert took <= 2 * interval + 0.5


def test_stop_takes_under_two_seconds_whatever_the_polls_are_doing(
    sim: Simulator, exporters: list[Exporter]
) -> None:
    sim.set_faults(latency_ms=30_000)
    cfg = Config(
        listen="127.0.0.1:0",
        ontap=[OntapTarget(name=sim.cluster_name, url=sim.url, poll_interval=Duration(60))],
        hosts=[host(sim, i, 60.0) for i in range(len(sim.hosts))],
    )
    exp = Exporter(cfg)
    exp.start()
    time.sleep(0.5)  # every poll is now waiting on the simulator
    t = time.monotonic()
    exp.stop()
    assert time.monotonic() - t < 2.0
    assert not any(p.is_alive() for p in exp.pollers)


def test_reload_keeps_unchanged_targets_starts_new_ones_and_forgets_removed_ones(
    sim: Simulator, exporters: list[Exporter]
) -> None:
    h0, h1 = sim.hosts[0], sim.hosts[1]
    cluster = OntapTarget(name=sim.cluster_name, url=sim.url, poll_interval=Duration(2))
    exp = start(exporters, Config(listen="127.0.0.1:0", ontap=[cluster], hosts=[host(sim, 0)]))
    wait_for(lambda: len(exp.state.view()[0]) == 2 and len(exp.directory) > 0, 15.0, "both targets polled")
    kept = next(p for p in exp.pollers if p.source.name == h0)
    gone = next(p for p in exp.pollers if p.source.name == sim.cluster_name)

    exp.reload(Config(listen="127.0.0.1:0", hosts=[host(sim, 0), host(sim, 1)]))
    assert kept in exp.pollers and kept.is_alive()
    assert not gone.is_alive()
    assert sorted(p.source.name for p in exp.pollers) == sorted([h0, h1])
    snaps, status = exp.state.view()
    assert sim.cluster_name not in status and sim.cluster_name not in snaps
    assert len(exp.directory) == 0  # the removed cluster's LUNs are gone from the join
    wait_for(lambda: sample(scrape(exp.port), "sanlens_target_up", target=h1) == 1.0, 10.0, "the new host")
    assert sample(scrape(exp.port), "sanlens_target_up", target=sim.cluster_name) is None

    # a changed target gets a new poller, and keeps its status meanwhile
    exp.reload(Config(listen="127.0.0.1:0", hosts=[host(sim, 0), host(sim, 1, interval=2.0)]))
    assert kept in exp.pollers
    assert exp.state.view()[1][h1].interval == 2.0

    # a config the engine refuses changes nothing
    before = list(exp.pollers)
    bad = Config(
        listen="127.0.0.1:0",
        hosts=[HostTarget(name="h-new", url=f"{sim.url}/windows/h-new/metrics")],
        diagnose=DiagnoseConfig(thresholds={"no_such_diagnosis": {"x": 1.0}}),
    )
    with pytest.raises(ConfigError):
        exp.reload(bad)
    assert exp.pollers == before and all(p.is_alive() for p in before)
    assert "h-new" not in exp.state.view()[1]


def diagnoses(port: int) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/diagnoses", timeout=5) as r:
        body: list[dict[str, Any]] = json.loads(r.read())
    return body


def test_reload_drops_a_removed_targets_findings_at_once(exporters: list[Exporter]) -> None:
    """A host taken out of the config takes its findings with it at the reload, as its series go,
    not when its view would have gone stale minutes later."""
    sim = Simulator(scenario="san-oversubscription", port=0).start()
    try:
        cluster = OntapTarget(name=sim.cluster_name, url=sim.url, poll_interval=Duration(1))
        fast = DiagnoseConfig(sustain_scale=0.0)
        exp = start(
            exporters, Config(listen="127.0.0.1:0", ontap=[cluster], hosts=[host(sim, 0)], diagnose=fast)
        )
        h0 = sim.hosts[0]
        wait_for(lambda: any(f["subject"].get("host") == h0 for f in diagnoses(exp.port)), 20.0, "a finding")
        exp.reload(Config(listen="127.0.0.1:0", ontap=[cluster], diagnose=fast))
        assert not any(f["subject"].get("host") == h0 for f in diagnoses(exp.port))
        wait_for(
            lambda: sample(scrape(exp.port), "sanlens_diagnosis_state", host=h0) is None,
            2.0,
            "its series gone",
        )
    finally:
        sim.stop()
