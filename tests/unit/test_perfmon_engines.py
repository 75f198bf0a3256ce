"""The pyarrow fast path of PerfMon statistics agrees with the Python reader, and hands every
file it cannot vouch for back to it (so errors still name the line and column)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import skip_or_fail
from sanlens.analyze import perfmon_arrow
from sanlens.analyze.perfmon_summary import LogSummary, summarize
from sanlens.hosts.perfmon import PerfmonParseError

DATA = Path(__file__).parents[1] / "data" / "perfmon"
HDR = '"(PDH-CSV 4.0) (Pacific Standard Time)(480)","\\\\SQL01\\PhysicalDisk(0 C:)\\Disk Reads/sec","\\\\SQL01\\PhysicalDisk(0 C:)\\Avg. Disk sec/Read"\r\n'


@pytest.fixture(autouse=True)
def _need_arrow() -> None:
    if not perfmon_arrow.available():
        skip_or_fail("pyarrow is not installed (the dev extra pulls it in)")


def write(tmp_path: Path, text: str, name: str = "log.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    return p


def same(a: LogSummary, b: LogSummary) -> None:
    assert a.input_json() == b.input_json()
    for x, y in zip(a.columns, b.columns, strict=True):
        jx, jy = x.as_json(), y.as_json()
        assert (jx["samples"], jx["min"], jx["max"]) == (jy["samples"], jy["min"], jy["max"]), jx["path"]
        if jx["mean"] is None:
            assert jy["mean"] is None
        else:
            assert math.isclose(jx["mean"], jy["mean"], rel_tol=1e-12), jx["path"]


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_engines_agree_on_the_sample_logs(name: str) -> None:
    fast, slow = summarize(DATA / name, engine="arrow"), summarize(DATA / name, engine="python")
    assert slow.engine == "python"
    same(fast, slow)


def test_a_clean_generated_log_takes_the_arrow_path_and_matches_hand_sums(tmp_path: Path) -> None:
    rnd = random.Random(7)
    rows, lines = [], [HDR, '"01/15/2024 09:00:00.000"," "," "\r\n']
    for i in range(1, 3001):
        r, lat = rnd.uniform(0, 5000), rnd.uniform(0, 0.05)
        if i % 97 == 0:  # a gap in one counter
            lines.append(
                f'"01/15/2024 {9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000","{r:.6f}"," "\r\n'
            )
            rows.append((float(f"{r:.6f}"), None))
        else:
            lines.append(
                f'"01/15/2024 {9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000","{r:.6f}","{lat:.9f}"\r\n'
            )
            rows.append((float(f"{r:.6f}"), float(f"{lat:.9f}")))
    s = summarize(write(tmp_path, "".join(lines)), engine="arrow")
    assert s.engine == "arrow"
    reads = [r for r, _ in rows]
    lats = [v for _, v in rows if v is not None]
    got = {c.column.counter: c for c in s.columns}
    assert got["Disk Reads/sec"].samples == len(reads) == 3000
    assert got["Avg. Disk sec/Read"].samples == len(lats) == 3000 - 3000 // 97
    assert got["Disk Reads/sec"].min == min(reads) and got["Disk Reads/sec"].max == max(reads)
    assert math.isclose(got["Avg. Disk sec/Read"].total, math.fsum(lats), rel_tol=1e-12)
    assert s.samples == 3001
    # 09:00:00 PST + 480 min = 17:00:00 UTC
    assert s.input_json()["start"] == "2024-01-15T17:00:00Z"
    assert s.input_json()["end"] == "2024-01-15T17:50:00Z"


def _rows(start: int, count: int) -> list[str]:
    return [
        f'"01/15/2024 {9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000","{i % 89 * 1.5}","{i % 13 / 1000}"\r\n'
        for i in range(start, start + count)
    ]


def test_a_log_of_many_blocks_reads_as_python_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks are read ahead of the fold on another thread: every block arrives, in order."""
    monkeypatch.setattr(perfmon_arrow, "BLOCK_BYTES", 2048)
    p = write(tmp_path, HDR + "".join(_rows(0, 2000)))
    fast = summarize(p, engine="arrow")
    assert fast.engine == "arrow"
    same(fast, summarize(p, engine="python"))
    assert fast.samples == 2000


def test_a_bad_row_blocks_after_the_first_hands_the_log_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found while a later block is read ahead: the whole log goes to the Python reader."""
    monkeypatch.setattr(perfmon_arrow, "BLOCK_BYTES", 2048)
    rows = _rows(0, 2000)
    rows[1500] = rows[1500].replace("01/15/2024", "01/15/24")
    with pytest.raises(PerfmonParseError) as e:
        summarize(write(tmp_path, HDR + "".join(rows)), engine="arrow")
    assert (e.value.line, e.value.column) == (1502, 1)


@pytest.mark.parametrize(
    ("case", "body"),
    [
        ("typeperf trailer", '"01/15/2024 09:00:00.000","1","2"\r\nExiting, please wait...\r\n'),
        ("NaN cell", '"01/15/2024 09:00:00.000","nan","2"\r\n"01/15/2024 09:00:15.000","1","2"\r\n'),
        ("two-space blank", '"01/15/2024 09:00:00.000","  ","2"\r\n'),
    ],
)
def test_logs_arrow_will_not_vouch_for_fall_back_to_the_same_result(
    tmp_path: Path, case: str, body: str
) -> None:
    p = write(tmp_path, HDR + body)
    fast = summarize(p, engine="arrow")
    same(fast, summarize(p, engine="python"))


def test_padded_numbers_read_the_same_on_both_paths(tmp_path: Path) -> None:
    p = write(
        tmp_path, HDR + '"01/15/2024 09:00:00.000"," 1.5","2 "\r\n"01/15/2024 09:00:15.000","3","4"\r\n'
    )
    fast, slow = summarize(p, engine="arrow"), summarize(p, engine="python")
    same(fast, slow)
    assert [c.min for c in fast.columns] == [1.5, 2.0]


@pytest.mark.parametrize(
    ("case", "body", "line", "column"),
    [
        ("short row", '"01/15/2024 09:00:00.000","1","2"\r\n"01/15/2024 09:00:15.000","1"\r\n', 3, 3),
        (
            "text in a value",
            '"01/15/2024 09:00:00.000","1","2"\r\n"01/15/2024 09:00:15.000","x","2"\r\n',
            3,
            2,
        ),
        ("bad time", '"01/15/2024 09:00:00.000","1","2"\r\n"01/15/2024 25:00:15.000","1","2"\r\n', 3, 1),
        ("bad date", '"01/15/2024 09:00:00.000","1","2"\r\n"02/30/2024 09:00:15.000","1","2"\r\n', 3, 1),
    ],
)
def test_bad_logs_still_report_line_and_column(
    tmp_path: Path, case: str, body: str, line: int, column: int
) -> None:
    with pytest.raises(PerfmonParseError) as e:
        summarize(write(tmp_path, HDR + body), engine="arrow")
    assert (e.value.line, e.value.column) == (line, column), case


@settings(
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.text(alphabet='"0123456789., \r\n/:x-', max_size=300))
def test_any_body_gives_the_python_result_or_its_error(tmp_path: Path, body: str) -> None:
    p = write(tmp_path, HDR + body, "h.csv")
    try:
        slow = summarize(p, engine="python")
    except PerfmonParseError:
        with pytest.raises(PerfmonParseError):  # arrow must not accept what Python rejects
            summarize(p, engine="arrow")
        return
    same(summarize(p, engine="arrow"), slow)
