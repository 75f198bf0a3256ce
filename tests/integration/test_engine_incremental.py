"""The engine judges again only what changed: each diagnosis part reads only the inputs it declares,
and a part whose inputs did not change is not called.

The views are the simulator's ``mixed`` scenario (every field case at once) as the REST collector
and the host sources cook them, so every diagnosis has subjects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any
from unittest import mock

import pytest
from tests.joining import joined

from golden import Clock
from sanlens.config import DiagnoseConfig, HostTarget, OntapTarget
from sanlens.diagnose import lun_iops_ceiling, lun_not_online
from sanlens.diagnose.base import KEPT_OUT, Context, Observation, quieted
from sanlens.diagnose.engine import ALL_INPUTS, Engine
from sanlens.diagnose.registry import MODULES, relax, resolve
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory
from sanlens.model import Snapshot
from sanlens.ontap.collector import OntapSource
from sanlens_sim.server import Simulator

T0 = 1_700_000_000.0


@pytest.fixture(scope="module")
def snapshots() -> list[Snapshot]:
    """The second poll of the cluster and of every host of ``mixed``, a minute after the first."""
    clock = Clock(T0)
    with (
        mock.patch("time.time", clock),
        mock.patch("time.monotonic", clock),
        Simulator(scenario="mixed", clock=clock) as sim,
    ):
        directory = LunDirectory()
        sources: list[Any] = [joined(OntapSource(OntapTarget(name=sim.cluster_name, url=sim.url)), directory)]
        sources += [joined(make_host_source(HostTarget(name=h, url=f"{sim.url}/windows/{h}/metrics")), directory)
                    for h in sim.hosts]  # fmt: skip
        sources += [joined(make_host_source(HostTarget(name=h, source="node_exporter", url=f"{sim.url}/linux/{h}/metrics")), directory) for h in sim.linux_hosts]  # fmt: skip
        for src in sources:
            src.poll()
        clock.t += 60.0
        snaps = [src.poll() for src in sources]
        for src in sources:
            src.close()
    return snaps


class Forbidden(Mapping[str, Any]):
    """An input a part did not declare: any use of it fails the test."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _no(self) -> AssertionError:
        return AssertionError(f"reads {self.name}, which it does not declare")

    def __getitem__(self, key: str) -> Any:
        raise self._no()

    def __iter__(self) -> Iterator[str]:
        raise self._no()

    def __len__(self) -> int:
        raise self._no()

    def __getattr__(self, attr: str) -> Any:
        raise self._no()


def parts() -> list[tuple[str, Any, frozenset[str]]]:
    out = []
    for mod in MODULES:
        found = getattr(mod, "PARTS", None) or ((mod.evaluate, getattr(mod, "READS", ALL_INPUTS)),)
        out += [(f"{mod.SPEC.id}[{i}]", fn, reads) for i, (fn, reads) in enumerate(found)]
    return out


@pytest.mark.parametrize(("name", "part", "reads"), parts(), ids=[p[0] for p in parts()])
def test_each_part_reads_only_what_it_declares(
    snapshots: list[Snapshot], name: str, part: Any, reads: frozenset[str]
) -> None:
    engine = Engine(DiagnoseConfig())
    for s in snapshots:
        engine.update(s)
    full = Context(engine._now, engine._ontap, engine._hosts, engine._history)
    narrow = Context(
        engine._now,
        engine._ontap if "ontap" in reads else Forbidden("ontap"),
        engine._hosts if "hosts" in reads else Forbidden("hosts"),
        engine._history if "history" in reads else Forbidden("history"),  # type: ignore[arg-type]
    )
    if "mapping" in reads and "hosts" not in reads:
        narrow.__dict__["mapped_luns"] = full.mapped_luns  # the hosts' mapping, and nothing else of them
    assert reads <= ALL_INPUTS
    th = resolve(DiagnoseConfig())
    for thresholds in (th, relax(th)):
        assert part(narrow, thresholds) == part(full, thresholds), name


def test_a_host_poll_does_not_judge_the_ontap_only_parts_again(snapshots: list[Snapshot]) -> None:
    calls = {"lun_not_online": 0, "lun_iops_ceiling luns": 0, "lun_iops_ceiling disks": 0}
    real = (lun_not_online.evaluate, lun_iops_ceiling.evaluate_luns, lun_iops_ceiling.evaluate_disks)

    def counting(name: str, fn: Any) -> Any:
        def wrapped(ctx: Context, th: Any) -> Any:
            calls[name] += 1
            return fn(ctx, th)

        return wrapped

    ontap = next(s for s in snapshots if s.kind == "ontap")
    host = next(s for s in snapshots if s.kind == "host")
    with (
        mock.patch.object(lun_not_online, "evaluate", counting("lun_not_online", real[0])),
        mock.patch.object(lun_iops_ceiling, "PARTS", (
            (counting("lun_iops_ceiling luns", real[1]), lun_iops_ceiling.PARTS[0][1]),
            (counting("lun_iops_ceiling disks", real[2]), lun_iops_ceiling.PARTS[1][1]),
        )),
    ):  # fmt: skip
        engine = Engine(DiagnoseConfig())
        for s in snapshots:
            engine.update(s)
        before = dict(calls)
        assert all(n >= 1 for n in before.values()), before
        # the same host polled again: a new view object, the cluster's unchanged
        engine.update(replace(host, view=replace(host.view, timestamp=host.view.timestamp + 15)))
        assert calls["lun_not_online"] == before["lun_not_online"]
        assert calls["lun_iops_ceiling luns"] == before["lun_iops_ceiling luns"]
        assert calls["lun_iops_ceiling disks"] == before["lun_iops_ceiling disks"] + 1
        engine.update(replace(ontap, view=replace(ontap.view, timestamp=ontap.view.timestamp + 60)))
        assert calls["lun_not_online"] == before["lun_not_online"] + 1
        assert calls["lun_iops_ceiling luns"] == before["lun_iops_ceiling luns"] + 1


def test_findings_are_the_readers_own_list_and_dicts(snapshots: list[Snapshot]) -> None:
    engine = Engine(DiagnoseConfig(sustain_scale=0.0))
    for s in snapshots:
        engine.update(s)
    first = engine.findings()
    assert first, "mixed has findings"
    first[0]["state"] = -1
    first.clear()
    again = engine.findings()
    assert again and again[0]["state"] > 0


class Rejudging(Engine):
    """An engine that judges every part at every evaluation and steps every observation one by
    one (no ok subjects taken as a whole): what the incremental engine must equal."""

    def _observe(self, *args: Any, **kwargs: Any) -> Any:
        self._memo.clear()
        return super()._observe(*args, **kwargs)

    @staticmethod
    def _bulk(*_args: Any) -> None:
        return None


def _calm(ontap: Snapshot) -> Snapshot:
    """The cluster at rest: no LUN or volume I/O, idle CPU domains, evenly idle disks."""
    v = ontap.view
    assert v is not None
    luns = tuple(replace(x, read_iops=0.0, write_iops=0.0, other_iops=0.0) for x in v.luns)  # type: ignore[union-attr]
    vols = tuple(
        replace(x, read_iops=0.0, write_iops=0.0, other_iops=0.0, total_iops=0.0)
        for x in v.volumes  # type: ignore[union-attr]
    )
    nodes = tuple(
        replace(x, cpu_busy_ratio=0.05, domain_busy={}, average_processor_busy_ratio=0.05)
        for x in v.nodes  # type: ignore[union-attr]
    )
    disks = tuple(replace(x, busy_ratio=0.1) for x in v.disks)  # type: ignore[union-attr]
    return replace(ontap, view=replace(v, luns=luns, volumes=vols, nodes=nodes, disks=disks))  # type: ignore[arg-type]


def test_reused_observations_step_the_tracks_as_judging_afresh_does(snapshots: list[Snapshot]) -> None:
    """Host polls between cluster polls reuse the cluster-side observations (their ok subjects are
    not walked again): findings, every subject's state and the engine's series stay those of an
    engine that judges everything every time, while tracks open, hold and close, including the
    tracks of subjects that went ok and wait out their exit window over reused observations."""
    cfg = DiagnoseConfig(sustain_scale=0.01)
    fast, slow = Engine(cfg), Rejudging(cfg)
    ontap = next(s for s in snapshots if s.kind == "ontap")
    calm = _calm(ontap)
    hosts = [s for s in snapshots if s.kind == "host"]
    reused = exiting = 0
    for step in range(40):
        feed = [ontap if step < 20 else calm] if step % 5 == 0 else []
        feed += hosts
        for s in feed:
            snap = replace(s, view=replace(s.view, timestamp=s.view.timestamp + 2.0 * step))  # type: ignore[arg-type]
            fast.update(snap)
            slow.update(snap)
            assert fast.findings() == slow.findings(), f"step {step}, {s.source}"
            assert {k: list(v.items()) for k, v in fast.judged().items()} == {
                k: list(v.items()) for k, v in slow.judged().items()
            }
            assert fast.metrics() == slow.metrics()
            for (did, _part), j in fast._judged.items():
                if j.summarized:
                    reused += 1
                    exiting += sum(1 for k in j.quiet if (did, k) in fast._tracks)
    assert reused > 0, "the incremental engine reused observations"
    assert exiting > 0, "ok subjects with a track were stepped over reused observations"


def test_the_memo_keeps_ok_subjects_without_a_track_as_subject_and_level(snapshots: list[Snapshot]) -> None:
    """An ok observation of a subject with no track is read again only for its subject and level, so
    the memo keeps no evidence for it; a subject with a track keeps its observation whole, and a
    track fed a kept-out observation keeps the evidence it had."""
    engine = Engine(DiagnoseConfig(sustain_scale=0.0))
    for s in snapshots:
        engine.update(s)
    kept_out = whole_ok = tracked_whole = 0
    tracks = set(engine._tracks)
    for (did, _i, which), (_stamp, part) in engine._memo.items():
        if which != "strict":
            continue
        for o in part:
            if o.level == 0 and (did, o.key) not in tracks:
                assert o.evidence is KEPT_OUT and o.score == 0.0, (did, o.key)
                kept_out += 1
            elif (did, o.key) in tracks and o.level is not None:
                assert o.evidence is not KEPT_OUT, (did, o.key)
                tracked_whole += 1
            elif o.level == 0:
                whole_ok += 1
    assert kept_out > 100, "mixed has many ok subjects"
    assert tracked_whole > 0, "mixed has tracked subjects, kept whole"
    findings = engine.findings()
    assert findings and all(f["evidence"] for f in findings), "every finding still has its evidence"
    t = next(t for t in engine._tracks.values() if t.evidence)
    before = dict(t.evidence), t.score
    t.observe(quieted(Observation(t.id, t.key, t.labels, 0, 0.5, {"x": 1.0})))
    assert (t.evidence, t.score) == before
