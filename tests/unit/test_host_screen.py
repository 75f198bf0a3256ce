"""The host screens against the diagnoses they stand for: a view screened calm is one the engine finds calm.

Views of generated disks, with values on either side of every threshold the screens read, missing,
NaN or infinite: wherever ``calm`` answers, every diagnosis judges exactly the subjects it names, all
ok, and raises none. Then whole ``analyze`` runs over the sample captures and a generated log with a
troubled stretch give the same findings and the same judged subjects screened as judged in full.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from sanlens.analyze import diagnoses
from sanlens.analyze.cli import analyze_file
from sanlens.analyze.host_screen import MAYBE, OK, SCREENS, UNSCREENED, Columns, calm
from sanlens.config import DiagnoseConfig
from sanlens.diagnose.base import Context
from sanlens.diagnose.history import History
from sanlens.diagnose.registry import MODULES, resolve
from sanlens.model import HostDiskStats, HostView

DATA = Path(__file__).parents[1] / "data"
sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
sys.path.insert(0, str(Path(__file__).parents[1]))


def _value(rnd: random.Random, around: list[float]) -> float | None:
    """Missing, not a number, or on either side of one of ``around`` (the thresholds the screens read)."""
    pick = rnd.random()
    if pick < 0.08:
        return None
    if pick < 0.11:
        return rnd.choice([math.nan, math.inf, -math.inf])
    base = rnd.choice(around)
    return base * rnd.choice([0.0, 0.5, 0.999999, 1.0, 1.000001, 2.0, 50.0])


def _disk(rnd: random.Random, i: int, th: dict) -> HostDiskStats:
    mapped = rnd.random() < 0.3
    paths = rnd.choice([None, 1, 2, 4])
    queue_depth, io_paths = rnd.choice([0, 1, 32, 64]), rnd.choice([1, 2])
    slo, queue = th["latency_slo"], th["host_queue_limited"]
    iops = [slo["min_iops"], 1000.0, th["lun_iops_ceiling"]["warning_fraction"] * 100_000.0 / 2]
    latency = [slo[f"{c}_warning_seconds"] for c in ("data", "log")] + [0.5]
    in_flight = [queue["queue_fill_ratio"] * max(queue_depth * io_paths, 1), 1.0]
    return HostDiskStats(
        "sql01",
        str(i),
        lun_serial=rnd.choice(["", "80AbCdEfGhIj"]),
        cluster="c1" if mapped else "",
        svm="svm1" if mapped else "",
        lun=f"/vol/v/lun{i}" if mapped else "",
        data_class=rnd.choice(["data", "log", "tempdb", "other"]),
        queue_depth=queue_depth,
        paths=io_paths,
        observed_paths=paths if paths is None else max(paths - rnd.choice([0, 0, 1]), 0),
        configured_paths=paths if rnd.random() < 0.7 else None,
        local=rnd.random() < 0.15,
        read_iops=_value(rnd, iops),
        write_iops=_value(rnd, iops),
        read_latency_s=_value(rnd, latency),
        write_latency_s=_value(rnd, latency),
        idle_ratio=_value(rnd, [th["san_oversubscription"]["min_idle_ratio"]]),
        queue_length=_value(rnd, in_flight),
        outstanding_io=_value(rnd, in_flight) if rnd.random() < 0.5 else None,
    )


def _truth(view: HostView, th: dict, capacity: float | None) -> dict[str, list[tuple[str, int | None]]]:
    ctx = Context(view.timestamp, {}, {view.host: view}, History(), capacity)
    return {m.SPEC.id: [(o.key, o.level) for o in m.evaluate(ctx, th)] for m in MODULES}


@pytest.mark.parametrize("capacity", [None, 20_000.0])
def test_a_view_screened_calm_is_calm_to_every_diagnosis(capacity: float | None) -> None:
    th = resolve(DiagnoseConfig(backend_iops_capacity=capacity))
    rnd = random.Random(7)
    screened = calm_views = 0
    for n in range(4000):
        view = HostView(
            "sql01", 1.7e9 + n, 60.0, tuple(_disk(rnd, i, th) for i in range(rnd.choice([1, 1, 1, 2, 3])))
        )
        truth = _truth(view, th, capacity)
        quiet = all(level in (0, None) for obs in truth.values() for _k, level in obs)
        calm_views += quiet
        got = calm(view, th, capacity)
        if got is None:
            continue
        screened += 1
        assert quiet, (view, truth)
        for did, obs in truth.items():
            ok = sorted(k for k, level in obs if level == 0)
            assert sorted(got.get(did, [])) == ok, (did, view, obs, got.get(did))
    # the screen is no trivial "never": most calm views are seen as calm
    assert calm_views > 300
    assert screened > 0.6 * calm_views, (screened, calm_views)


@pytest.mark.parametrize("did", sorted(SCREENS))
def test_each_screen_answers_for_its_own_diagnosis(did: str) -> None:
    """Per disk: "ok" only where the diagnosis judges level 0, "not judged" only where it gives no level;
    and most disks the diagnosis finds ok are seen as ok."""
    th = resolve(DiagnoseConfig())
    rnd = random.Random(11)
    disks = tuple(_disk(rnd, i, th) for i in range(6000))
    view = HostView("sql01", 1.7e9, 60.0, disks)
    truth = dict(_truth(view, th, None)[did])
    levels = np.broadcast_to(SCREENS[did](Columns.of(disks), th, None), (1, len(disks)))[0].tolist()
    seen_ok = ok = 0
    for d, got in zip(disks, levels, strict=True):
        want = truth.get(f"{d.host}/disk {d.disk}")
        ok += want == 0
        if got == MAYBE:
            continue
        assert (want == 0) == (got == OK), (d, want, got)
        seen_ok += got == OK
    assert ok > 100 and seen_ok > 0.6 * ok, (seen_ok, ok)


def test_every_diagnosis_that_judges_host_disks_alone_is_screened() -> None:
    """A diagnosis judging a host disk with no cluster polled has a screen (or keeps its views judged)."""
    th = resolve(DiagnoseConfig())
    rnd = random.Random(3)
    judges_hosts: set[str] = set()
    for n in range(400):
        view = HostView("h", float(n), 60.0, tuple(_disk(rnd, i, th) for i in range(3)))
        for did, obs in _truth(view, th, None).items():
            if obs:
                judges_hosts.add(did)
    assert judges_hosts == set(SCREENS), judges_hosts
    mapped = HostView(
        "h", 0.0, 60.0, (HostDiskStats("h", "1", cluster="c", svm="s", volume="v", lun="/vol/v/l"),)
    )
    assert calm(mapped, th) is None  # a volume named: the host-view volume ceiling judges it in full
    assert UNSCREENED == ("volume_iops_ceiling",)


def _run(paths: list[Path], screen: bool) -> diagnoses.Findings:
    results = [analyze_file(p) for p in paths]
    try:
        return diagnoses.finish(results, None, "offline", None, None, screen=screen)
    finally:
        for r in results:
            close = getattr(r.detail, "close", None)
            if close is not None:
                close()


def _flapping(tmp_path: Path, host: str, shift: int) -> Path:
    """Four disks a minute apart for 400 minutes: one waits while idle, stops for five minutes (less
    than an exit window) and starts again; one queues at the log's end; one flaps every few minutes;
    one has blank cells. ``shift`` moves the troubles, so two hosts' come and go at other times."""
    from perfmon_logs import disk_columns, write_log

    cols = [c for d in ("1 E:", "2 F:", "3 G:", "4 H:") for c in disk_columns(host, d)]
    rows = []
    for i in range(400):
        k = (i + shift) % 400
        calm = [800.0, 200.0, 0.002, 0.001, 60.0, 1.0]
        d1 = [60.0, 20.0, 0.2, 0.1, 90.0, 1.0] if 50 <= k < 80 or 85 <= k < 120 else calm
        d2 = [3000.0, 500.0, 0.009, 0.004, 2.0, 40.0] if k >= 370 else calm
        d3 = [60.0, 20.0, 0.05, 0.01, 95.0, 1.0] if (k // 3) % 4 == 0 else calm
        d4 = [None, None, None, None, 50.0, None] if k % 7 == 0 else calm
        rows.append((1_700_000_000.0 + 60 * i, d1 + d2 + d3 + d4))
    return write_log(tmp_path / f"flap-{host}.csv", cols, rows)


def _generated(tmp_path: Path, host: str = "SQL01", seed: int = 1) -> Path:
    """The report benchmark's 64-disk log: one disk waits while idle, another queues, a tenth of it."""
    from report_scale import generate_disks

    log = tmp_path / f"disks-{host}.csv"
    generate_disks(log, 2.0, seed=seed)
    if host != "SQL01":
        log.write_text(log.read_text().replace("\\\\SQL01\\", f"\\\\{host}\\"))
    return log


@pytest.mark.parametrize(
    "inputs",
    [
        ["perfmon/relog_sql01.csv"],
        ["perfmon/typeperf_web03.csv", "perfmon/perfmon_fs02.tsv"],
        ["linux/marslo-ibook-rhel7-iostat-x.txt"],
        ["linux/constructed-short-io-kernel515-iostat-xt.txt"],
        ["generated"],
        ["generated", "generated-SQL02", "linux/marslo-ibook-rhel7-iostat-x.txt"],
        ["flapping"],
        ["flapping", "flapping-2"],
    ],
)
def test_screened_runs_find_what_judging_every_interval_finds(inputs: list[str], tmp_path: Path) -> None:
    paths = [
        _generated(tmp_path, *((i.split("-")[1], 2) if "-" in i else ()))
        if i.startswith("generated")
        else _flapping(tmp_path, "FLAP" + i[9:], 173 if "-" in i else 0)
        if i.startswith("flapping")
        else DATA / i
        for i in inputs
    ]
    full = _run(paths, screen=False)
    fast = _run(paths, screen=True)
    assert fast.diagnoses == full.diagnoses
    assert fast.judged == full.judged
    assert fast.updates == full.updates
    assert full.screened == 0
    if inputs[0] == "generated":
        # a tenth of the log is in trouble: the calm rest is screened, the trouble judged
        assert full.diagnoses, "the generated log's troubled disks are found"
        assert fast.screened > full.updates // 2, (fast.screened, full.updates)


def test_interval_views_follow_the_per_disk_rules_by_hand() -> None:
    """Views built from the columns of every interval at once: % idle as a clamped ratio, latency by
    Little's law where a queue and a non-zero rate were logged, the drives of the disk's last column
    with a value, a disk with no value left out of its interval, and each mapped once per drive set."""
    from sanlens.analyze.host_intervals import HostIntervals
    from sanlens.hosts.mapping import DiskMapping

    cols = {
        0: ("h", "1", ("E:",), "read_iops"),
        1: ("h", "1", ("E:",), "read_latency_s"),
        2: ("h", "1", ("E:", "F:"), "read_queue"),
        3: ("h", "1", ("E:", "F:"), "idle_ratio"),
        4: ("h", "2", ("G:",), "read_iops"),
    }
    nan = math.nan
    rows = [
        [100.0, 0.004, 0.8, 40.0, 10.0],  # queue / rate: 8 ms
        [0.0, 0.004, 0.8, 130.0, nan],  # no rate: the logged latency; idle clamped to 1; disk 2 silent
        [50.0, 0.002, nan, nan, 5.0],  # no queue: the logged latency, and disk 1's drives from column 1
        [nan, nan, nan, nan, 7.0],  # disk 1 silent
    ]
    iv = HostIntervals(cols, step=60.0)
    iv.add(np.array([0.0, 60.0, 120.0, 180.0]), np.array(rows))
    calls: list[tuple[str, tuple[str, ...]]] = []

    def mapper(host: str, disk: str, drives: tuple[str, ...]) -> DiskMapping:
        calls.append((disk, drives))
        return DiskMapping("")

    views = [s.view for s in iv.snapshots(mapper)]
    assert [len(v.disks) for v in views] == [2, 1, 2, 1]
    d = views[0].disks[0]
    assert (d.read_iops, d.read_latency_s, d.idle_ratio, d.drives) == (100.0, 0.8 / 100.0, 0.4, ("E:", "F:"))
    d = views[1].disks[0]
    assert (d.read_latency_s, d.idle_ratio) == (0.004, 1.0)
    d = views[2].disks[0]
    assert (d.read_latency_s, d.idle_ratio, d.drives) == (0.002, None, ("E:",))
    assert [dk.disk for dk in views[3].disks] == ["2"]
    assert sorted(set(calls)) == [("1", ("E:",)), ("1", ("E:", "F:")), ("2", ("G:",))]
    assert len(calls) == len(set(calls))


def test_chart_points_merge_consecutive_intervals_by_hand() -> None:
    """Ten 60 s intervals drawn in at most four points: groups of three (the last of one), each point
    at its group's newest row, a mean of the group's samples, and a latency weighted by its IOPS."""
    from sanlens.analyze.host_intervals import HostIntervals

    cols = {
        0: ("h", "1", (), "read_iops"),
        1: ("h", "1", (), "read_latency_s"),
        2: ("h", "1", (), "idle_ratio"),
    }
    nan = math.nan
    times = [60.0 * k for k in range(10)]
    iops = [100.0, 300.0, 0.0, 50.0, 50.0, nan, 10.0, 30.0, 20.0, 5.0]
    lat = [0.001, 0.003, 0.5, 0.002, 0.004, 0.9, nan, 0.010, 0.020, 0.007]
    idle = [0.5, nan, 0.7, 0.1, 0.2, 0.3, nan, nan, nan, 0.9]
    iv = HostIntervals(cols, step=60.0)
    iv.add(np.array(times), np.array([iops, lat, idle]).T)
    pts = iv.chart_points(max_points=4)
    groups = [range(0, 3), range(3, 6), range(6, 9), range(9, 10)]

    def mean(xs: list[float]) -> float:
        have = [x for x in xs if x == x]
        return sum(have) / len(have)

    def weighted(g: range) -> float:
        pairs = [(lat[k], iops[k]) for k in g if lat[k] == lat[k] and iops[k] == iops[k] and iops[k] > 0]
        return sum(x * w for x, w in pairs) / sum(w for _, w in pairs)

    assert [t for t, _ in pts[cols[0]]] == [times[g[-1]] for g in groups]
    assert [v for _, v in pts[cols[0]]] == pytest.approx([mean([iops[k] for k in g]) for g in groups])
    assert [v for _, v in pts[cols[1]]] == pytest.approx([weighted(g) for g in groups])
    # idle: no sample in the third group, so no point there
    assert [t for t, _ in pts[cols[2]]] == [times[2], times[5], times[9]]
    assert [v for _, v in pts[cols[2]]] == pytest.approx([0.6, 0.2, 0.9])


def test_screen_rows_name_each_intervals_disks_once_per_pattern() -> None:
    """Each interval's disks as a direct reading of its row gives them; equal rows share one object
    (the recorder notes a shared list once), at widths that are not whole bytes and at none."""
    from sanlens.analyze.host_screen import _rows

    rnd = np.random.default_rng(7)
    mask = rnd.random((300, 70)) < 0.5
    mask[::3] = mask[0]
    keys = [f"d{j}" for j in range(70)]
    got = _rows(mask, keys, list)
    assert got == [[keys[j] for j in range(70) if mask[t, j]] for t in range(300)]
    assert all(got[t] is got[0] for t in range(0, 300, 3))
    assert len({id(r) for r in got}) == len({mask[t].tobytes() for t in range(300)})
    assert _rows(np.zeros((4, 0), dtype=bool), [], frozenset) == [frozenset()] * 4
