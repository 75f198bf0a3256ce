"""PerfMon CSV/TSV reader: each edge case of real relog/typeperf output, by name."""

from __future__ import annotations

import calendar
import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sanlens.hosts.perfmon import PerfmonLog, PerfmonParseError, parse_counter_path

DATA = Path(__file__).parents[1] / "data" / "perfmon"


def _log(text: str | bytes, name: str = "x.csv") -> PerfmonLog:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return PerfmonLog(name, stream=io.BytesIO(raw))


def _rows(text: str | bytes) -> list[tuple[int, float, list[str]]]:
    with _log(text) as log:
        return list(log.rows())


def _utc(y: int, mo: int, d: int, h: int, mi: int, s: float) -> float:
    return calendar.timegm((y, mo, d, h, mi, 0, 0, 0, 0)) + s


HDR = '"(PDH-CSV 4.0) (Pacific Standard Time)(480)","\\\\H\\PhysicalDisk(1 E:)\\Disk Reads/sec"\r\n'


def test_pdh_csv_header_timezone_and_bias() -> None:
    with _log(HDR) as log:
        assert log.header.kind == "perfmon-csv"
        assert log.header.timezone == "Pacific Standard Time"
        assert log.header.bias_minutes == 480
        assert log.header.version == "4.0"


def test_timestamps_shift_to_utc_by_positive_bias() -> None:
    rows = _rows(HDR + '"01/15/2024 09:00:15.250","1"\r\n')
    assert rows[0][1] == _utc(2024, 1, 15, 17, 0, 15.25)  # 09:00 PST + 480 min


def test_timestamps_shift_to_utc_by_negative_bias_across_midnight_and_year() -> None:
    rows = _rows(
        '"(PDH-CSV 4.0) (W. Europe Standard Time)(-60)","\\\\H\\Memory\\Available MBytes"\n'
        '"01/01/2024 00:30:00.000","5"\n'
    )
    assert rows[0][1] == _utc(2023, 12, 31, 23, 30, 0)


def test_pdh_tsv_header() -> None:
    with _log(
        '"(PDH-TSV 4.0) (UTC)(0)"\t"\\\\H\\Memory\\Available MBytes"\n"03/10/2024 12:00:00.000"\t"7"\n'
    ) as log:
        assert log.header.kind == "perfmon-tsv"
        assert [r[2] for r in log.rows()] == [["7"]]


def test_blank_and_space_cells_are_kept_as_blank_strings() -> None:
    rows = _rows(
        HDR.replace("\r\n", ',"\\\\H\\Memory\\Available MBytes"\r\n') + '"01/15/2024 09:00:00.000"," ",""\r\n'
    )
    assert [c.strip() for c in rows[0][2]] == ["", ""]


def test_utf8_bom_is_ignored() -> None:
    with _log(b"\xef\xbb\xbf" + HDR.encode()) as log:
        assert log.header.bias_minutes == 480


def test_utf16_log_with_bom() -> None:
    text = HDR + '"01/15/2024 09:00:00.000","4"\r\n'
    rows = _rows(text.encode("utf-16"))
    assert rows[0][2] == ["4"]


def test_crlf_and_lf_give_the_same_rows() -> None:
    body = HDR + '"01/15/2024 09:00:00.000","4"\r\n'
    assert _rows(body) == _rows(body.replace("\r\n", "\n"))


def test_typeperf_console_trailers_are_skipped() -> None:
    rows = _rows(
        HDR + '"01/15/2024 09:00:00.000","4"\r\n\r\nExiting, please wait...\r\n'
        "The command completed successfully.\r\n"
    )
    assert len(rows) == 1


def test_counter_path_case_insensitive_key() -> None:
    a = parse_counter_path(r"\\SQL01\PhysicalDisk(1 E:)\Avg. Disk sec/Read")
    b = parse_counter_path(r"\\sql01\physicaldisk(1 e:)\avg. disk SEC/read")
    assert a is not None and b is not None
    assert a.key == b.key
    assert (b.host, b.object, b.instance, b.counter) == (
        "sql01",
        "physicaldisk",
        "1 e:",
        "avg. disk SEC/read",
    )


def test_instance_with_parentheses_commas_and_hash() -> None:
    cp = parse_counter_path(r"\\H\Network Interface(Intel(R) Ethernet 10G, Port #2)\Bytes Total/sec")
    assert cp is not None
    assert (cp.object, cp.instance, cp.counter) == (
        "Network Interface",
        "Intel(R) Ethernet 10G, Port #2",
        "Bytes Total/sec",
    )
    cp = parse_counter_path(r"\\H\Process(sqlservr#1)\% Processor Time")
    assert cp is not None and cp.instance == "sqlservr#1"


def test_counter_name_with_parentheses() -> None:
    cp = parse_counter_path(r"\\H\Processor Information(_Total)\% of Maximum Frequency (Boost)")
    assert cp is not None
    assert (cp.instance, cp.counter) == ("_Total", "% of Maximum Frequency (Boost)")


def test_instance_with_backslashes_mount_point() -> None:
    cp = parse_counter_path(r"\\FS\LogicalDisk(C:\mount\data)\Avg. Disk sec/Read")
    assert cp is not None and (cp.instance, cp.counter) == (r"C:\mount\data", "Avg. Disk sec/Read")


def test_object_without_instance_and_path_without_host() -> None:
    cp = parse_counter_path(r"\\H\Memory\Available MBytes")
    assert cp is not None and (cp.host, cp.object, cp.instance, cp.counter) == (
        "H",
        "Memory",
        "",
        "Available MBytes",
    )
    cp = parse_counter_path(r"\Memory\Available MBytes")
    assert cp is not None and cp.host == "" and cp.object == "Memory"
    assert parse_counter_path("Available MBytes") is None


def test_non_counter_header_cells_are_reported_not_fatal() -> None:
    with _log('"(PDH-CSV 4.0) (UTC)(0)","Verfügbare MB","\\\\H\\Memory\\Available MBytes"\n') as log:
        assert log.header.unparsed == ("Verfügbare MB",)
        assert len(log.header.columns) == 2


def test_ansi_cp1252_header_is_decoded() -> None:
    text = '"(PDH-CSV 4.0) (Mitteleuropäische Zeit)(-60)","\\\\H\\Speicher\\Verfügbare MB"\r\n"01/15/2024 09:00:00.000","4"\r\n'
    with _log(text.encode("cp1252")) as log:
        assert log.header.timezone == "Mitteleuropäische Zeit"
        assert log.header.columns[0].object == "Speicher"
        assert len(list(log.rows())) == 1


def test_short_row_error_names_line_and_column() -> None:
    body = (
        HDR.replace("\r\n", ',"\\\\H\\Memory\\Available MBytes"\r\n')
        + '"01/15/2024 09:00:00.000","1","2"\r\n"01/15/2024 09:00:15.000","1"\r\n'
    )
    with pytest.raises(PerfmonParseError) as e:
        _rows(body)
    assert (e.value.line, e.value.column) == (3, 3)
    assert "x.csv:3:3" in str(e.value)


def test_long_row_error() -> None:
    with pytest.raises(PerfmonParseError) as e:
        _rows(HDR + '"01/15/2024 09:00:00.000","1","2"\r\n')
    assert e.value.line == 2 and e.value.column == 3


def test_bad_timestamp_error() -> None:
    with pytest.raises(PerfmonParseError) as e:
        _rows(HDR + '"2024-01-15 09:00:00","1"\r\n')
    assert (e.value.line, e.value.column) == (2, 1)
    with pytest.raises(PerfmonParseError):
        _rows(HDR + '"02/30/2024 09:00:00.000","1"\r\n')


def test_not_a_perfmon_header() -> None:
    with pytest.raises(PerfmonParseError) as e:
        _rows("time,value\n1,2\n")
    assert e.value.line == 1 and "PDH-CSV" in str(e.value)


def test_empty_file() -> None:
    with pytest.raises(PerfmonParseError, match="empty"):
        _rows("")


def test_blg_file_gets_relog_hint(tmp_path: Path) -> None:
    p = tmp_path / "DataCollector01.blg"
    p.write_bytes(b"\x00\x01binary")
    with pytest.raises(PerfmonParseError) as e:
        PerfmonLog(p)
    assert "relog DataCollector01.blg -f csv -o DataCollector01.csv" in str(e.value)


def test_binary_content_with_csv_name_gets_relog_hint() -> None:
    with pytest.raises(PerfmonParseError, match="relog"):
        _rows(b"\x00\x00\x00\x00PLA binary log")


def test_invalid_utf8_after_a_utf8_header_is_a_parse_error() -> None:
    with pytest.raises(PerfmonParseError) as e:
        _rows(HDR.encode() + b'"01/15/2024 09:00:00.000","\xff\xfe1"\r\n')
    assert e.value.line is not None


def test_sample_files_parse() -> None:
    for p in sorted(DATA.iterdir()):
        with PerfmonLog(p) as log:
            rows = list(log.rows())
        assert rows, p


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_own_error(data: bytes) -> None:
    with contextlib.suppress(PerfmonParseError):
        _rows(data)


@settings(max_examples=300)
@given(st.text(alphabet='"(),\\\t\r\n PDHCSV4.0/:1x', max_size=200))
def test_any_header_like_text_parses_or_raises_own_error(body: str) -> None:
    with contextlib.suppress(PerfmonParseError):
        _rows('"(PDH-CSV 4.0) (UTC)(0)",' + body)
