"""The REST collector's view of a simulated cluster, and the findings beside its hosts: what the
Harvest-interop tests compare a view read from Harvest's series against."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from tests.joining import joined

from golden import Clock
from sanlens.config import DiagnoseConfig, Duration, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory, LunIdentity
from sanlens.model import OntapView, Snapshot
from sanlens.ontap.catalogue import catalogue
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator

T0 = 1_700_000_000.0


def rest_view(scenario: str, knobs: dict[str, Any], with_inventory: bool = False, qos: bool = False) -> Any:
    """The REST collector's cooked view of the same simulated cluster (polls a minute apart):
    (view, cluster), and its namespace inventory (svm, lun path, uuid, ...) ``with_inventory``.

    ``qos``: with the QoS tables, read at every poll (each read folded by the poll after it, so three
    polls give the breakdown); without, none (a Harvest page recorded without Harvest's QoS objects
    is compared with a REST view without them)."""
    clock = Clock(T0)
    with Simulator(scenario=scenario, clock=clock, **knobs) as sim:
        tables = [t for t, d in catalogue().items() if d.rest and (qos or not d.schedule)]
        src = OntapSource(
            OntapTarget(name=sim.cluster_name, url=sim.url, tables=tables, qos_interval=Duration(0))
        )
        src.clock = clock  # type: ignore[assignment]
        for _ in range(2 if qos else 1):
            src.poll()
            src.qos_reader.wait(60)
            clock.t += 60.0
        view = src.poll().view
        src.close()
    assert isinstance(view, OntapView)
    if with_inventory:
        return view, sim.cluster_name, list(src.inventory.namespaces)
    return view, sim.cluster_name


def close(a: float | None, b: float | None, rel: float = 0.01) -> bool:
    if a is None or b is None:
        return a is b
    return a == pytest.approx(b, rel=rel, abs=1e-9)


def diagnose(
    scenario: str, knobs: dict[str, Any], view: OntapView
) -> dict[tuple[str, str], dict[str, float]]:
    """Findings (id, subject) -> evidence of one engine fed ``view`` and the scenario's host views, the
    hosts polled on the simulator's clock a minute apart."""
    clock = Clock(T0)
    with (
        mock.patch("time.time", clock),
        mock.patch("time.monotonic", clock),
        Simulator(scenario=scenario, clock=clock, **knobs) as sim,
    ):
        directory = LunDirectory()
        # namespaces join by UUID, which the view does not carry: the REST inventory's, published as is
        rest = OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url))
        rest.poll()
        uuids = {(x["svm"], x["lun"]): x["uuid"] for x in rest.inventory.namespaces}
        rest.close()
        directory.publish(
            view.cluster,
            [
                LunIdentity(view.cluster, x.svm, x.volume, x.lun, x.serial, x.node)
                if x.kind == "lun"
                else LunIdentity(view.cluster, x.svm, x.volume, x.lun, "", x.node, kind="namespace",
                                 uuid=uuids.get((x.svm, x.lun), ""))
                for x in view.luns
            ],
        )  # fmt: skip
        hosts = [
            joined(make_host_source(HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics")), directory)
            for h in sim.hosts
        ] + [
            joined(
                make_host_source(
                    HostTarget(name=h, source="node_exporter", url=f"{sim.url}/linux/{h}/metrics")
                ),
                directory,
            )
            for h in sim.linux_hosts
        ]
        engine = Engine(DiagnoseConfig(sustain_scale=0.0))
        for i in range(4):
            clock.t = T0 + 60.0 * i
            engine.update(Snapshot(view.cluster, "ontap", clock.t, (), replace(view, timestamp=clock.t)))
            for h in hosts:
                engine.update(h.poll())
        for h in hosts:
            h.close()
    return {
        (f["id"], json.dumps(f["subject"], sort_keys=True)): {
            k: v for k, v in f["evidence"].items() if isinstance(v, float)
        }
        for f in engine.findings()
        if f["state"] > 0
    }
