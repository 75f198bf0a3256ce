"""The single PerfMon pass of `sanlens analyze`: percentiles, analysis intervals, reader choice, progress."""

from __future__ import annotations

import csv
import json
import math
import random
import statistics
import sys
from pathlib import Path

import numpy as np
import pytest

from perfmon_logs import disk_columns, write_log
from sanlens.analyze import perfmon_batches
from sanlens.analyze.host_intervals import MAX_STEPS
from sanlens.analyze.perfmon_summary import summarize
from sanlens.analyze.progress import Progress
from sanlens.analyze.quantiles import ALPHA, ColumnQuantiles
from sanlens.cli import main
from sanlens.hosts.mapping import DiskMapping
from sanlens.hosts.perfmon import PerfmonLog

DATA = Path(__file__).parents[1] / "data" / "perfmon"
T0 = 1_700_000_000.0


def nearest_rank(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(max(math.ceil(q * len(s)), 1), len(s)) - 1]


def test_sketch_quantiles_are_within_alpha_of_the_sorted_values() -> None:

    rnd = random.Random(3)
    cols = [
        [rnd.lognormvariate(-5, 1.5) for _ in range(20_000)],  # latencies
        [rnd.choice((0.0, rnd.uniform(0, 5000))) for _ in range(20_000)],  # IOPS with idle zeros
        [rnd.gauss(0, 10) for _ in range(20_000)],  # negatives too
    ]
    sk = ColumnQuantiles(3)
    data = np.array(cols).T
    for start in range(0, len(data), 4096):  # folded in batches, as the reader does
        sk.add(data[start : start + 4096])
    for j, col in enumerate(cols):
        for q in (0.5, 0.95, 0.99):
            got, want = sk.quantile(j, q), nearest_rank(col, q)
            assert got is not None
            assert abs(got - want) <= ALPHA * abs(want) + 1e-12, (j, q, got, want)
    assert ColumnQuantiles(1).quantile(0, 0.95) is None


def test_every_columns_quantile_read_at_once_is_the_bucket_of_its_nearest_rank_value() -> None:
    """``quantiles`` reads all columns in one pass: each is the representative of the bucket that
    holds the column's nearest-rank value (negative, zero or positive), None for an empty column."""
    from sanlens.analyze.quantiles import ColumnQuantiles, _value

    rnd = np.random.default_rng(5)
    data = rnd.lognormal(0, 3, (2500, 12)) * rnd.choice([-1.0, 1.0, 1.0, 1.0], (2500, 12))
    data[rnd.random(data.shape) < 0.15] = 0.0
    data[rnd.random(data.shape) < 0.05] = np.nan
    data[:, 3] = np.nan  # no sample at all
    data[:, 4] = -np.abs(data[:, 4])  # only negatives and zeros
    sk = ColumnQuantiles(12)
    for start in range(0, 2500, 300):
        sk.add(data[start : start + 300])
    qs = (0.0, 0.05, 0.5, 0.95, 0.99, 1.0)
    wants: list[list[float | None]] = []
    for q in qs:
        want: list[float | None] = []
        for j in range(12):
            col = [float(v) for v in data[:, j] if math.isfinite(v)]
            if not col:
                want.append(None)
                continue
            v = nearest_rank(col, q)
            bucket = int(ColumnQuantiles._index(np.array([abs(v)]))[0]) if v else 0
            want.append(0.0 if v == 0 else math.copysign(_value(bucket), v))
        assert sk.quantiles((q,)) == [want], q
        assert [sk.quantile(j, q) for j in range(12)] == want
        wants.append(want)
    assert sk.quantiles(qs) == wants  # every q from one pass over the counts


def test_small_batches_kept_back_are_counted_before_a_quantile_is_read() -> None:
    """Batches far smaller than the sketch's buckets wait to be counted together: a read between
    them, and the read at the end, see every value added so far, infinities and NaN left out."""
    rnd = random.Random(11)
    seen: list[list[float]] = [[], []]
    sk = ColumnQuantiles(2)
    for step in range(60):
        rows = [[rnd.lognormvariate(0, 2), -rnd.lognormvariate(0, 2)] for _ in range(9)]
        rows.append([math.inf, math.nan])
        sk.add(np.array(rows))
        for r in rows:
            for j, v in enumerate(r):
                if math.isfinite(v):
                    seen[j].append(v)
        if step in (0, 17, 59):
            for j in (0, 1):
                got, want = sk.quantile(j, 0.95), nearest_rank(seen[j], 0.95)
                assert got is not None
                assert abs(got - want) <= ALPHA * abs(want) + 1e-12, (step, j, got, want)
    assert int(sk.pos.sum()) == len(seen[0]) and int(sk.neg.sum()) == len(seen[1])


def _independent_columns(path: Path) -> dict[str, list[float]]:
    """Every column's values, read with the csv module (blanks dropped): no sanlens code involved."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    out: dict[str, list[float]] = {name: [] for name in rows[0][1:]}
    for row in rows[1:]:
        for name, cell in zip(rows[0][1:], row[1:], strict=True):
            if cell.strip():
                out[name].append(float(cell))
    return out


@pytest.mark.parametrize("engine", ["python", "arrow"])
def test_p95_p99_and_mean_match_independent_arithmetic(tmp_path: Path, engine: str) -> None:
    rnd = random.Random(11)
    cols = disk_columns("SQL01", "1 E:") + disk_columns("SQL01", "2 F:")
    rows = [
        (T0 + 15 * i, [None if rnd.random() < 0.02 else rnd.lognormvariate(2, 1) for _ in cols])
        for i in range(3000)
    ]
    log = write_log(tmp_path / "q.csv", cols, rows)
    s = summarize(log, engine=engine)
    want = _independent_columns(log)
    for c in s.columns:
        values = want[c.column.path]
        assert c.samples == len(values)
        assert c.mean == pytest.approx(statistics.fmean(values), rel=1e-12)
        assert (c.min, c.max) == (min(values), max(values))
        for q, got in ((0.95, c.p95), (0.99, c.p99)):
            exact = nearest_rank(values, q)
            assert got is not None and abs(got - exact) <= ALPHA * exact, (c.column.path, q)


def test_p95_in_json_of_the_sample_log(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "relog_sql01.csv"
    assert main(["analyze", str(path), "--format", "json", "--quiet"]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = _independent_columns(path)
    for s in doc["series"]:
        values = want[s["path"]]
        if values:
            assert s["p99"] == pytest.approx(nearest_rank(values, 0.99), rel=ALPHA)
            assert s["p95"] == pytest.approx(nearest_rank(values, 0.95), rel=ALPHA)
        else:
            assert s["p95"] is None and s["p99"] is None


def test_long_logs_are_judged_over_bounded_iops_weighted_intervals(tmp_path: Path) -> None:
    rnd = random.Random(5)
    cols = disk_columns("SQL01", "1 E:")
    n = 3 * MAX_STEPS + 7
    rows = [
        (T0 + 15 * i, [rnd.uniform(0, 900), rnd.uniform(0, 90), rnd.uniform(0, 0.05), 0.001, 50.0, 2.0])
        for i in range(n)
    ]
    log = write_log(tmp_path / "long.csv", cols, rows)
    s = summarize(log)
    iv = s.intervals
    assert iv is not None and iv.steps == MAX_STEPS  # sized from the last row, read from the tail
    snaps = list(iv.snapshots(lambda host, disk, drives: DiskMapping()))
    assert len(snaps) == iv.steps
    # recompute one interval by hand: rows whose time falls in it, latency weighted by reads/sec
    k = sorted(iv.buckets)[len(iv.buckets) // 2]
    lo, hi = iv.origin + k * iv.width, iv.origin + (k + 1) * iv.width
    mine = [v for t, v in rows if lo <= t < hi]
    view = next(sn.view for sn in snaps if sn.timestamp == max(t for t, _ in rows if lo <= t < hi))
    [disk] = view.disks
    reads = [v[0] for v in mine]
    assert disk.read_iops == pytest.approx(statistics.fmean(reads), rel=1e-9)
    assert disk.read_latency_s == pytest.approx(sum(v[0] * v[2] for v in mine) / sum(reads), rel=1e-9)
    assert disk.idle_ratio == pytest.approx(0.5)


def test_reader_is_chosen_by_the_files_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sanlens.analyze import perfmon_arrow

    if not perfmon_arrow.available():
        pytest.skip("pyarrow is not installed")
    monkeypatch.setattr(perfmon_batches, "ARROW_MIN_BYTES", 64 << 10)
    monkeypatch.setattr(perfmon_batches, "ARROW_MIN_ROWS", 1000)
    long_cols = disk_columns("H", "1 E:")
    long_log = write_log(tmp_path / "long.csv", long_cols, [(T0 + i, [1.0] * 6) for i in range(3000)])
    wide_cols = [f"\\\\H\\Process(p{i})\\% Processor Time" for i in range(3000)]
    wide_log = write_log(tmp_path / "wide.csv", wide_cols, [(T0 + i, [1.0] * 3000) for i in range(10)])
    assert long_log.stat().st_size > 64 << 10 and wide_log.stat().st_size > 64 << 10
    with PerfmonLog(long_log) as a, PerfmonLog(wide_log) as b, PerfmonLog(DATA / "relog_sql01.csv") as c:
        assert perfmon_batches.choose_engine(a) == "arrow"
        assert perfmon_batches.choose_engine(b) == "python"  # wide, few rows
        assert perfmon_batches.choose_engine(c) == "python"  # small
        assert perfmon_batches.choose_engine(a, "python") == "python"
    assert summarize(long_log).engine == "arrow" and summarize(wide_log).engine == "python"


def test_progress_only_on_a_terminal_and_never_with_quiet(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from sanlens.analyze import progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not Progress().enabled
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert Progress().enabled and not Progress(quiet=True).enabled
    monkeypatch.setattr(progress, "MIN_BYTES", 0)
    assert main(["analyze", str(DATA / "relog_sql01.csv")]) == 0
    assert "reading relog_sql01.csv" in capsys.readouterr().err
    assert main(["analyze", str(DATA / "relog_sql01.csv"), "--quiet"]) == 0
    assert "reading" not in capsys.readouterr().err
