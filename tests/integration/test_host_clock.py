"""A Windows host whose clock runs minutes ahead, against the real simulator: the engine's time is the
exporter's receive clock, so the ONTAP view stays judged beside the host's."""

from __future__ import annotations

import time

import requests
from prometheus_client.parser import text_string_to_metric_families
from tests.joining import joined

from sanlens.config import DiagnoseConfig, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.freshness import STALE_MIN_S
from sanlens.hosts.winrm import WinRMSource
from sanlens.join.directory import LunDirectory
from sanlens.ontap.collector import OntapSource
from sanlens.runtime.pipeline import Pipeline
from sanlens.store import State
from sanlens_sim.server import Simulator

SKEW_S = 2 * STALE_MIN_S  # far past the staleness bound: a host clock ahead by this used to blind the array


class SimWinRM:
    """A WinRM transport that gets the PowerShell's JSON from the simulator instead of running it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def run_ps(self, script: str) -> str:
        r = requests.get(self.url, timeout=10)
        r.raise_for_status()
        return r.text


def test_a_host_clock_ahead_leaves_the_array_judged() -> None:
    sim = Simulator(scenario="san-oversubscription", port=0).start()
    try:
        sim.set_faults(host_clock_offset_s=SKEW_S)
        host = sim.hosts[0]
        # the knob moves the host's own clock, as windows_exporter's time collector reports it
        page = requests.get(f"{sim.url}/windows/{host}/metrics", timeout=10).text
        (fam,) = [
            f
            for f in text_string_to_metric_families(page)
            if f.name == "windows_time_current_timestamp_seconds"
        ]
        assert abs(fam.samples[0].value - (time.time() + SKEW_S)) < 30

        state = State()
        engine = Engine(DiagnoseConfig(sustain_scale=0.0), deferred=True, clock=state.clock)
        pipeline = Pipeline(state, engine=engine)  # the sources below join through their wrappers
        directory = LunDirectory()
        ontap = joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)
        winrm = joined(
            WinRMSource(
                HostTarget(name=host, source="winrm", url="https://sql01:5986/wsman"),
                transport=SimWinRM(f"{sim.url}/windows/{host}/winrm"),
            ),
            directory,
        )
        for _ in range(2):  # two polls of each: rates need an interval
            pipeline.record_success(ontap.poll(), 0.1)
            pipeline.record_success(winrm.poll(), 0.1)
            time.sleep(1.0)
        assert engine.evaluate_pending()
        snaps, _ = state.view()
        host_view, array_view = snaps[host].view, snaps[sim.cluster_name].view
        assert host_view is not None and array_view is not None
        # WinRM stamps the view with the host's clock (Timestamp_Sys100NS): minutes ahead of the array's
        assert host_view.timestamp - array_view.timestamp > SKEW_S - 30
        judged = engine.subject_states("latency_slo")
        assert any(k.startswith(f"{sim.cluster_name}/") for k in judged), judged  # the array's LUNs
        assert any(k.startswith(f"{host}/") for k in judged), judged  # and the host's disks
        ontap.close()
    finally:
        sim.stop()
