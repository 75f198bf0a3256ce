"""Fuzzing the capture parsers: mutated real captures and random input raise only documented errors.

Each parser either reads its input or raises the error it documents, which says where:

- ``statistics show -raw`` and ``sysstat -M`` text, counter-table rows JSON: ``CaptureError``
  at ``FILE:LINE``, or ``FILE: ... records[N] ...`` for a JSON record;
- PerfMon CSV/TSV logs: ``PerfmonParseError`` at ``FILE:LINE[:COLUMN]``;
- windows_exporter pages: ``ScrapeParseError`` (the source adds the URL);
- Linux ``iostat -x`` and ``sar -d`` text: ``LinuxTextError`` naming the file (and the line);
- node_exporter pages: ``NodeScrapeError`` (the source adds the URL).

Never another exception. The inputs start from the captures in ``tests/data`` and
``../shared/fixtures`` (when present), mutated byte- and line-wise: flips, inserts of
delimiters, quotes, BOMs, NULs and extreme numbers, deletions, truncation, lines duplicated,
swapped or dropped, other encodings; and from random text. Bounded: 200 examples a parser,
the same ones on every run (``SANLENS_FUZZ=random`` explores new ones).
"""

from __future__ import annotations

import codecs
import io
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sanlens.errors import SanlensError
from sanlens.hosts.exporter_scrape import ScrapeParseError, parse_scrape
from sanlens.hosts.linux_text import LinuxTextError, parse_iostat, parse_sar_disk
from sanlens.hosts.node_exporter import NodeScrapeError, parse_node_exporter
from sanlens.hosts.perfmon import PerfmonLog, PerfmonParseError
from sanlens.ontap.cooking import CaptureError
from sanlens.ontap.counter_json import iter_json_samples, rows_from_response
from sanlens.ontap.statistics_text import iter_statistics_samples
from sanlens.ontap.sysstat_text import iter_sysstat_samples

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "data"
SHARED = TESTS.parent.parent / "shared" / "fixtures"

FUZZ = settings(
    max_examples=int(os.environ.get("SANLENS_FUZZ_EXAMPLES", "200")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


def seeds(*patterns: str) -> list[bytes]:
    """The bytes of every capture matching ``patterns`` under tests/data and ../shared/fixtures."""
    found = sorted({p for root in (DATA, SHARED) for pat in patterns for p in root.glob(pat) if p.is_file()})
    assert found, f"no seed captures for {patterns}"
    return [p.read_bytes() for p in found]


STATISTICS = seeds("ontap/*statistics*.txt", "ontap/real/*.txt", "ontap/statperf/*show-raw*.txt")
SYSSTAT = seeds("ontap/sysstat*.txt")
PERFMON = seeds("perfmon/*.csv", "perfmon/*.tsv")
ROWS_JSON = [
    *(seeds("ontap/restperf/*rows*.json") if SHARED.exists() else []),
    b'{"records":[{"counter_table":{"name":"lun"},"id":"n1:/vol/v/l","properties":[{"name":"node.name",'
    b'"value":"n1"}],"counters":[{"name":"read_ops","value":12},{"name":"read_align_histo","values":'
    b'[1,2],"labels":["0","1"]},{"name":"domain_busy","counters":[{"label":"idle","values":[5,6]}],'
    b'"labels":["a","b"]}],"aggregation":{"count":2,"complete":false}}],"num_records":1}\n',
]
SCRAPES = [
    *(seeds("windows/*.prom") if SHARED.exists() else []),
    b"# HELP windows_physical_disk_reads_total Reads.\n# TYPE windows_physical_disk_reads_total counter\n"
    b'windows_physical_disk_reads_total{disk="1 E:"} 12345\n'
    b'windows_physical_disk_requests_queued{disk="1"} 2\n'
    b'windows_logical_disk_info{volume="E:",disk="1;2"} 1\n'
    b'sanlens_windows_disk_info{disk="1",serial_number="80SGK+Ts0jyW",unique_id="x",friendly_name="n"} 1\n'
    b'sanlens_windows_disk_paths{disk="1"} 4\n',
]

LINUX_TEXT = seeds("linux/*.txt")


def _node_exporter_page() -> bytes:
    """The simulator's node_exporter page of a Linux host with a failed path device."""
    from sanlens_sim import linux_api
    from sanlens_sim.estate import Estate

    estate = Estate("path-faults", {}, clock=lambda: 1_700_000_000.0)
    host = next(h for h in estate.world().hosts if h.os == "linux")
    return linux_api.render(estate, host, 1_700_000_060.0).encode()


NODE_PAGES = [_node_exporter_page()]

# Bytes that mean something to one parser or another.
TOKENS = [
    b"\n", b"\r", b"\r\n", b"\x00", b"\xff", b"\xfe", b"\xef\xbb\xbf", b"\xff\xfe", b"\t", b",", b";",
    b'"', b"'", b"\\", b"(", b")", b"%", b"-", b" ", b"    ", b"{", b"}", b"[", b"]", b":", b"=", b"#",
    b"-1", b"0", b"1e309", b"-1e309", b"NaN", b"nan", b"+Inf", b"Infinity", b"99999999999999999999999999",
    b"1" * 400, b"0.5", b"true", b"null", b"\xc3\x28", b"\xe2\x82", b"\xf0\x9f\x98\x80",
    b"Object: ", b"Instance: ", b"Counter Value", b"---------- ----------", b"2 entries were displayed.",
    b"Number of Constituents: 1 (partial_aggregation)", b"Error: ", b"Warning: ", b"cluster1::> ",
    b"Start-time: 13/45/2025 25:61:61", b"End-time: ", b"Scope: ", b"ANY1+ AVG CPU0 Ops/s CP", b"( 3%)",
    b"(PDH-CSV 4.0) (UTC)(0)", b"(PDH-TSV 4.0) (x)(-99999999999)", b"02/30/2024 24:00:00.000",
    b"\\\\HOST\\PhysicalDisk(1 E:)\\Disk Reads/sec", b"The command completed successfully.",
    b'"records"', b'"values"', b'"counters"', b'"value"', b'"labels"', b'{"name":"x"}', b"[[[[[[[[",
    b"# TYPE x counter", b"# HELP", b'{disk="1"}', b'disk="_Total"', b"windows_physical_disk_reads_total",
    b"sanlens_windows_disk_paths", b'{disk="\\"x\\n"}',
    b"Device:", b"Device", b" DEV ", b"r/s", b"%util", b"12:00:01 AM", b"LINUX RESTART", b"Average:",
    b"Linux 5.14.0 (h) \t06/01/20 \t_x86_64_\t(8 CPU)", b"2020-13-45T25:61:61+9999", b"1,5", b"dm-",
    b'node_dmmultipath_path_state{device="mpatha",path="sdb",state="offline"} 1', b'uuid="mpath-3600a0980',
]  # fmt: skip

Mutation = Callable[[st.DrawFn, bytes], bytes]


def _pos(draw: st.DrawFn, data: bytes) -> int:
    return draw(st.integers(0, len(data)))


def flip(draw: st.DrawFn, data: bytes) -> bytes:
    if not data:
        return data
    i = draw(st.integers(0, len(data) - 1))
    return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]


def insert(draw: st.DrawFn, data: bytes) -> bytes:
    i = _pos(draw, data)
    piece = draw(st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=6)))
    return data[:i] + piece + data[i:]


def delete(draw: st.DrawFn, data: bytes) -> bytes:
    i = _pos(draw, data)
    return data[:i] + data[i + draw(st.integers(1, 64)) :]


def truncate(draw: st.DrawFn, data: bytes) -> bytes:
    return data[: _pos(draw, data)]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def line_dup(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    i = draw(st.integers(0, len(lines) - 1))
    return b"".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])


def line_drop(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    i = draw(st.integers(0, len(lines) - 1))
    return b"".join(lines[:i] + lines[i + 1 :])


def line_swap(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def line_replace(draw: st.DrawFn, data: bytes) -> bytes:
    lines = _lines(data)
    i = draw(st.integers(0, len(lines) - 1))
    text = draw(st.text(max_size=40)).encode("utf-8", "surrogatepass") + b"\n"
    return b"".join([*lines[:i], text, *lines[i + 1 :]])


def number_swap(draw: st.DrawFn, data: bytes) -> bytes:
    """One number of the capture replaced by an extreme or a non-number."""
    spans = [m.span() for m in re.finditer(rb"-?\d+(?:\.\d+)?", data)]
    if not spans:
        return data
    a, b = draw(st.sampled_from(spans))
    new = draw(
        st.sampled_from(
            [b"-1", b"1e309", b"NaN", b"-", b"", b"1" * 400, b"0x10", b"1,5", b"\xd9\xa3", b"1e-400"]
        )
    )
    return data[:a] + new + data[b:]


def reencode(draw: st.DrawFn, data: bytes) -> bytes:
    """The whole capture in another encoding (with or without its byte-order mark), or cut mid-character."""
    text = data.decode("utf-8", "replace")
    enc = draw(
        st.sampled_from(["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "cp1252", "latin-1", "utf-32"])
    )
    try:
        out = text.encode(enc, "replace")
    except (UnicodeError, LookupError):
        return data
    if draw(st.booleans()) and enc in ("utf-16-le", "utf-16-be"):
        out = (codecs.BOM_UTF16_LE if enc.endswith("le") else codecs.BOM_UTF16_BE) + out
    if draw(st.booleans()) and len(out) > 1:
        out = out[: len(out) - 1 - draw(st.integers(0, min(len(out) - 2, 3)))]  # an odd byte count
    return out


MUTATIONS: list[Mutation] = [
    flip, insert, insert, delete, truncate, line_dup, line_drop, line_swap, line_replace, number_swap, reencode,
]  # fmt: skip


def inputs(corpus: list[bytes]) -> st.SearchStrategy[bytes]:
    """A seed capture with up to five mutations, or random bytes, or random text."""

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = draw(st.sampled_from(corpus))
        for _ in range(draw(st.integers(1, 5))):
            data = draw(st.sampled_from(MUTATIONS))(draw, data)
        return data

    return st.one_of(
        mutated(),
        st.binary(max_size=300),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


# ------------------------------------------------------------------ locations
def located(err: BaseException, file: Path) -> bool:
    """The message starts with ``FILE:LINE``, or with ``FILE: `` and names a JSON key path.

    A key path: ``records[N]``, ``[N]``, the ``'records'`` key, or the top level of the document.
    """
    msg, name = str(err), re.escape(str(file))
    key_path = r"records\[\d+\]|\[\d+\]|'records'|the top level"
    return bool(re.match(rf"{name}:\d+(:\d+)?: ", msg) or re.match(rf"{name}: .*({key_path})", msg))


def assert_documented(err: BaseException, allowed: type[BaseException], file: Path | None) -> None:
    assert isinstance(err, allowed), f"{type(err).__name__} is not a {allowed.__name__}: {err!r}"
    if file is not None:
        assert located(err, file), f"no FILE:LINE or key path in: {err}"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _write(scratch: Path, name: str, data: bytes) -> Path:
    p = scratch / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ the parsers
@FUZZ
@given(data=inputs(STATISTICS))
def test_statistics_show_raw_raises_only_located_capture_errors(scratch: Path, data: bytes) -> None:
    p = _write(scratch, "lun-statistics.txt", data)
    notes: list[str] = []
    try:
        for sample in iter_statistics_samples(p, notes):
            assert all(r.table is not None for r in sample.rows)
    except SanlensError as e:
        assert_documented(e, CaptureError, p)
    assert all(n.startswith(f"{p}:") for n in notes), notes[:3]


@FUZZ
@given(data=inputs(SYSSTAT), node=st.sampled_from([None, "cluster1-01"]))
def test_sysstat_raises_only_located_capture_errors(scratch: Path, data: bytes, node: str | None) -> None:
    p = _write(scratch, "sysstat-M.txt", data)
    notes: list[str] = []
    try:
        for sample in iter_sysstat_samples(p, node, notes):
            assert len(sample.rows) == 1
    except SanlensError as e:
        assert_documented(e, CaptureError, p)


@FUZZ
@given(data=inputs(ROWS_JSON))
def test_counter_rows_json_raises_only_located_capture_errors(scratch: Path, data: bytes) -> None:
    p = _write(scratch, "lun-rows.json", data)
    try:
        for sample in iter_json_samples(p):
            assert isinstance(sample.rows, list)
    except SanlensError as e:
        assert_documented(e, CaptureError, p)


@FUZZ
@given(data=inputs(PERFMON))
def test_perfmon_log_raises_only_located_parse_errors(scratch: Path, data: bytes) -> None:
    p = scratch / "sql01.csv"
    try:
        with PerfmonLog(p, stream=io.BytesIO(data)) as log:
            width = len(log.header.columns)
            for _line, ts, cells in log.rows():
                assert len(cells) == width and ts == ts
    except SanlensError as e:
        assert_documented(e, PerfmonParseError, p)


@FUZZ
@given(data=inputs(SCRAPES))
def test_windows_exporter_page_raises_only_scrape_parse_errors(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        readings = parse_scrape(text)
    except ScrapeParseError:
        return
    for r in readings:
        assert r.disk and r.disk != "_Total"


@FUZZ
@given(data=inputs(LINUX_TEXT), sar=st.booleans())
def test_iostat_and_sar_text_raise_only_linux_text_errors_naming_the_file(
    scratch: Path, data: bytes, sar: bool
) -> None:
    p = scratch / ("h-sar.txt" if sar else "h-iostat.txt")
    try:
        cap = (parse_sar_disk if sar else parse_iostat)(str(p), io.StringIO(data.decode("utf-8", "replace")))
    except SanlensError as e:
        assert isinstance(e, LinuxTextError), repr(e)
        assert str(e).startswith(f"{p}:"), str(e)
        return
    for r in cap.reports:
        for values in r.devices.values():
            assert all(isinstance(v, float) for v in values.values())


@FUZZ
@given(data=inputs(NODE_PAGES))
def test_node_exporter_page_raises_only_node_scrape_errors(data: bytes) -> None:
    try:
        readings = parse_node_exporter(data.decode("utf-8", "replace"))
    except NodeScrapeError:
        return
    for r in readings:
        assert r.disk and r.platform == "linux"
        assert r.paths is None or r.known_paths is None or r.paths <= r.known_paths


# ------------------------------------------------------------------ rows JSON, structure-aware
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["12", "1e309", "NaN", "-", "", "lun", "x:y"]),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@st.composite
def counter_entry(draw: st.DrawFn) -> object:
    """A counter as the rows endpoint writes it (scalar, array, 2-D array), any part of it replaced."""
    entry: dict[str, object] = {"name": draw(st.sampled_from(["read_ops", "domain_busy", "histo", "speed"]))}
    shape = draw(st.sampled_from(["value", "values", "counters"]))
    if shape == "value":
        entry["value"] = draw(JSON_SCALARS)
    elif shape == "values":
        entry["values"] = draw(st.lists(JSON_SCALARS, max_size=4))
        entry["labels"] = draw(st.lists(JSON_SCALARS, max_size=4))
    else:
        entry["labels"] = draw(st.lists(JSON_SCALARS, max_size=3))
        entry["counters"] = draw(
            st.lists(
                st.fixed_dictionaries({"label": JSON_SCALARS, "values": st.lists(JSON_SCALARS, max_size=3)})
                | JSON_VALUES,
                max_size=3,
            )
        )
    for key in draw(st.lists(st.sampled_from(sorted(entry)), max_size=2, unique=True)):
        entry[key] = draw(JSON_VALUES)
    return draw(st.sampled_from([entry, entry, entry, draw(JSON_VALUES)]))


@st.composite
def rows_doc(draw: st.DrawFn) -> dict[str, object]:
    """A rows response whose records, properties, counters and aggregation may each be anything."""
    record: dict[str, object] = {
        "counter_table": {"name": draw(st.sampled_from(["lun", "volume", "system:node"]))},
        "id": draw(JSON_SCALARS),
        "properties": [{"name": draw(st.text(max_size=6)), "value": draw(JSON_SCALARS)}],
        "counters": draw(st.lists(counter_entry(), max_size=4)),
        "aggregation": {"count": 2, "complete": draw(JSON_SCALARS)},
    }
    for key in draw(st.lists(st.sampled_from(sorted(record)), max_size=3, unique=True)):
        record[key] = draw(JSON_VALUES)
    records = draw(st.lists(st.sampled_from([record, draw(JSON_VALUES)]), min_size=1, max_size=3))
    doc: dict[str, object] = {"records": records, "num_records": len(records)}
    return draw(st.sampled_from([doc, doc, doc, {"records": draw(JSON_VALUES)}]))


@FUZZ
@given(doc=rows_doc())
def test_rows_from_response_raises_only_located_capture_errors(doc: dict[str, object]) -> None:
    """The live poll's decoded pages and ``sanlens analyze``'s JSON files go through this."""
    try:
        rows = rows_from_response(doc, "lun-rows.json:3")
    except SanlensError as e:
        assert_documented(e, CaptureError, None)
        assert str(e).startswith("lun-rows.json:3: "), str(e)
        return
    for r in rows:
        assert all(isinstance(v, float | list) for v in r.counters.values())


# ------------------------------------------------------------------ what the fuzzing found
def test_rows_json_with_an_integer_too_large_for_a_float_is_a_capture_error(tmp_path: Path) -> None:
    p = tmp_path / "rows.json"
    p.write_text('{"records":[{"id":"a","counters":[{"name":"read_ops","value":1' + "0" * 400 + "}]}]}")
    with pytest.raises(CaptureError, match=r"records\[0\] counter 'read_ops': not a number"):
        list(iter_json_samples(p))


def test_rows_record_whose_counter_table_is_not_an_object_is_read() -> None:
    rows = rows_from_response({"records": [{"counter_table": "lun", "id": "a"}]}, "rows.json")
    assert rows[0].instance == "a" and rows[0].table == ""


def test_rows_record_whose_properties_or_counters_are_not_lists_is_read() -> None:
    rows = rows_from_response({"records": [{"id": "a", "properties": 1, "counters": 2}]}, "rows.json")
    assert rows[0].properties == {} and rows[0].counters == {}


def test_rows_json_file_holding_no_object_names_the_element(tmp_path: Path) -> None:
    p = tmp_path / "rows.json"
    p.write_text("0")
    with pytest.raises(CaptureError) as top:
        list(iter_json_samples(p))
    assert located(top.value, p), str(top.value)
    p.write_text('[{"records": []}, 7]')
    with pytest.raises(CaptureError) as element:
        list(iter_json_samples(p))
    assert str(element.value) == f"{p}: [1] is not a JSON object"


def test_perfmon_log_that_looks_binary_is_reported_at_line_1() -> None:
    with pytest.raises(PerfmonParseError) as e:
        PerfmonLog("sql01.csv", stream=io.BytesIO(b'\x00"\x00(\x00P\x00D\x00H\x00'))
    assert e.value.line == 1 and str(e.value).startswith("sql01.csv:1: ")


@pytest.mark.parametrize(
    "page",
    [
        pytest.param('windows_physical_disk_requests_queued{disk="1"} 1' + "1" * 400 + "\n", id="huge-value"),
        pytest.param('sanlens_windows_disk_paths{disk="1"} +Inf\n', id="infinite-paths"),
        pytest.param(
            'windows_physical_disk_reads_total{disk="1"} 1 1' + "0" * 400 + "\n", id="huge-timestamp"
        ),
    ],
)
def test_windows_exporter_page_with_numbers_past_a_float_is_a_scrape_parse_error(page: str) -> None:
    with pytest.raises(ScrapeParseError):
        parse_scrape(page)
