"""Parsers of ONTAP CLI text: `statistics show -raw` (real captures) and `sysstat -M`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import fixture_path

from sanlens.ontap import cli_capture
from sanlens.ontap.cli_capture import parse_cli_time, text_head
from sanlens.ontap.cooking import CaptureError, cook_row
from sanlens.ontap.statistics_text import iter_statistics_samples
from sanlens.ontap.sysstat_text import iter_sysstat_samples

DATA = Path(__file__).parents[1] / "data" / "ontap"
OSC = "/vol/osc_iscsi_vol01/osc_iscsi_vol01"


def _value_in_text(text: str, instance: str, counter: str, element: int | None = None) -> str:
    """The raw cell of one counter (or array element) of one instance, read straight from the text."""
    block = text.split(f"Instance: {instance}\n", 1)[1].split("\nObject:", 1)[0]
    if element is not None:
        m = re.search(
            rf"^ {{4}}{re.escape(counter)}\s+-\n(?: +\S+ +\d+\n){{{element}}} +\S+ +(\d+)$", block, re.M
        )
    else:
        m = re.search(rf"^ {{4}}{re.escape(counter)}\s+(\S+)\s*$", block, re.M)
    assert m, counter
    return m[1]


def test_real_capture_blocks_and_values() -> None:
    path = fixture_path("ontap/statperf/lun-statistics-show-raw-1.txt")
    text = path.read_text()
    samples = list(iter_statistics_samples(path))
    assert len(samples) == 1
    rows = samples[0].rows
    assert len(rows) == text.count("\nObject: lun\n")
    row = next(r for r in rows if r.instance == OSC)
    assert row.table == "lun" and row.complete
    for counter in ("read_ops", "write_ops", "read_data", "write_ops_sent"):
        assert row.counters[counter] == float(_value_in_text(text, OSC, counter))
    # microsecond and percent suffixes are stripped
    assert row.counters["avg_read_latency"] == float(
        _value_in_text(text, OSC, "avg_read_latency").removesuffix("us")
    )
    # wrapped string values are joined back together
    assert row.properties["instance_name"] == OSC
    assert row.properties["instance_uuid"] == "d32abf06-0327-4d06-bb9d-1c19c8eeea01"
    assert row.properties["vserver_name"] == "osc"
    # array counters keep their labels by position
    assert row.labels["read_align_histo"] == [str(i) for i in range(8)]
    assert row.counters["read_align_histo"][2] == 70069.0
    assert samples[0].timestamp == parse_cli_time("6/11/2025 18:51:00")


def test_cooked_across_the_two_real_captures() -> None:
    a = fixture_path("ontap/statperf/lun-statistics-show-raw-1.txt")
    b = fixture_path("ontap/statperf/lun-statistics-show-raw-2.txt")
    ta, tb = a.read_text(), b.read_text()
    ra = next(r for r in next(iter_statistics_samples(a)).rows if r.instance == OSC)
    rb = next(r for r in next(iter_statistics_samples(b)).rows if r.instance == OSC)
    d_sent = float(_value_in_text(tb, OSC, "read_ops_sent")) - float(_value_in_text(ta, OSC, "read_ops_sent"))
    histo0 = [
        re.search(r"read_align_histo\s+-\n\s+0\s+(\d+)", t.split(f"Instance: {OSC}\n")[1])[1]
        for t in (ta, tb)
    ]
    d_h0 = float(histo0[1]) - float(histo0[0])
    assert d_sent == 110000 and d_h0 == 100000
    interval = 60.0  # the captures carry equal timestamps: the interval comes from the user
    cooked = {(c.counter, c.label): c for c in cook_row(ra, rb, interval)}
    assert cooked[("read_ops_sent", "")].value == d_sent  # delta
    # cooked values carry ONTAP's REST names
    assert cooked[("read_align_histogram", "0")].value == pytest.approx(
        100 * d_h0 / d_sent
    )  # percent of read_ops_sent
    assert cooked[("read_align_histogram", "0")].unit == "percent"
    d_ops = float(_value_in_text(tb, OSC, "read_ops")) - float(_value_in_text(ta, OSC, "read_ops"))
    assert cooked[("read_ops", "")].value == pytest.approx(d_ops / interval)  # rate
    # no read ops moved, so there is no read latency to report
    assert ("average_read_latency", "") not in cooked
    # without an interval, rates are left out rather than guessed
    assert ("read_ops", "") not in {(c.counter, c.label) for c in cook_row(ra, rb, None)}


def test_one_file_with_several_samples() -> None:
    samples = list(iter_statistics_samples(DATA / "lun-statistics-show-raw-samples.txt"))
    assert [s.timestamp for s in samples] == [parse_cli_time(f"3/2/2025 10:0{i}:00") for i in range(3)]
    r0, r1 = samples[0].rows[0], samples[1].rows[0]
    c = {x.counter: x.value for x in cook_row(r0, r1, samples[1].timestamp - samples[0].timestamp)}
    assert c["read_ops"] == pytest.approx((11_800_000 - 10_000_000) / 60)
    assert c["average_read_latency"] == pytest.approx(
        (5.9e9 - 5.0e9) / (11_800_000 - 10_000_000) * 1e-6
    )  # 0.5 ms


def test_reset_and_partial_aggregation_drop_the_row() -> None:
    samples = list(iter_statistics_samples(DATA / "lun-statistics-show-raw-samples.txt"))
    r0, r1 = samples[0].rows[0], samples[1].rows[0]
    assert cook_row(r1, r0, 60.0) == []  # negative deltas: a reset
    r1.complete = False
    assert cook_row(r0, r1, 60.0) == []


@pytest.mark.parametrize(
    "text",
    [
        "Instance: /vol/a/b\n",
        "Object: lun\nInstance: /vol/a/b\n    Counter   Value\n    -------- --------\n    read_ops 1\n"
        "                 x  notanumber\n",
        "garbage before anything\n",
    ],
)
def test_malformed_statistics_text_is_a_located_error(tmp_path: Path, text: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(CaptureError, match=r"bad\.txt"):
        list(iter_statistics_samples(f))


def test_sysstat_m_columns() -> None:
    samples = list(iter_sysstat_samples(DATA / "sysstat-M.txt", node="cluster1-01"))
    assert len(samples) == 4  # the repeated header is not a sample
    row = samples[1].rows[0]
    assert row.instance == "cluster1-01"
    assert row.counters["avg"] == 31.0
    assert row.counters["cpu"] == [30.0, 32.0, 31.0, 31.0]
    dom = dict(zip(row.labels["domain_busy"], row.counters["domain_busy"], strict=True))
    assert dom["kahuna"] == 90.0 and dom["wafl_exempt"] == 8.0 and dom["wafl_exempt_kahuna"] == 3.0
    assert dom["network"] == 11.0 and row.counters["ops"] == 21510.0
    # Σ domains ≈ N_cpu·AVG (percent of one core each)
    total = sum(v for k, v in dom.items() if not k.endswith("_kahuna"))
    assert total == pytest.approx(4 * row.counters["avg"], abs=6)


def test_sysstat_column_mismatch_is_located(tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_text(" AVG CPU0 CPU1 Kahuna\n 30% 29% 31%\n")
    with pytest.raises(CaptureError, match=r"s\.txt:2"):
        list(iter_sysstat_samples(f))


# ------------------------------------------------- real captures from NetApp Harvest (see real/README.md)
REAL = DATA / "real"
HEADER_PROPS = {"scope", "constituents", "aggregation", "node"}  # properties that come from the block header


def _blocks(text: str) -> list[str]:
    """The instance blocks of a capture, each from its `Object:` line to the next."""
    return re.split(r"^(?=Object: )", text, flags=re.M)[1:]


def _trailer(text: str) -> int:
    m = re.search(r"^(\d+) entries were displayed\.", text, re.M)
    assert m
    return int(m[1])


def _entries(rows: list) -> int:
    """Counter entries as ONTAP counts them: one per counter (an array is one), strings included."""
    return sum(len(r.counters) + len(set(r.properties) - HEADER_PROPS) for r in rows)


def _parse(path: Path) -> tuple[list, list[str]]:
    notes: list[str] = []
    return list(iter_statistics_samples(path, notes)), notes


@pytest.mark.parametrize("name", ["system-node-partial-1.txt", "system-node-partial-2.txt"])
def test_warning_preamble_is_noted_and_partial_rows_are_kept(name: str) -> None:
    path = REAL / name
    text = path.read_text()
    samples, notes = _parse(path)
    assert len(samples) == 1
    rows = samples[0].rows
    blocks = _blocks(text)
    assert len(rows) == len(blocks) == 3
    assert [r.instance for r in rows] == re.findall(r"^Instance: (\S+)$", text, re.M)
    # the warning and its two indented continuation lines are one note, located at the warning
    assert len(notes) == 1
    assert notes[0].startswith(f"{path}:4: ") and "node sti78-vsim-ucs188k" in notes[0]
    assert notes[0].endswith("to mgwd at 192.168.176.166]")
    for row, block in zip(rows, blocks, strict=True):
        assert row.table == "system:node" and not row.complete  # kept: the cooking policy decides
        assert row.properties["constituents"] == "1"
        assert row.properties["aggregation"] == "partial_aggregation"
        assert row.properties["scope"] == re.search(r"^Scope: (\S+)$", block, re.M)[1]
        assert "node" not in row.properties  # the scope is the cluster, not a node
        kahuna = re.search(r"^ +kahuna +(\d+)$", block, re.M)[1]
        busy = dict(zip(row.labels["domain_busy"], row.counters["domain_busy"], strict=True))
        assert busy["kahuna"] == float(kahuna)
        assert row.labels["domain_busy"] == re.findall(r"^ {5,}(\w+) +\d+$", block, re.M)
        assert row.counters["avg_processor_busy"] == float(
            re.search(r"^    avg_processor_busy +(\d+)%$", block, re.M)[1]
        )
        uuid = re.search(r"^    instance_uuid +(\S+)\n +(\S+)$", block, re.M)
        assert row.properties["instance_uuid"] == uuid[1] + uuid[2]
    assert samples[0].timestamp == parse_cli_time(re.search(r"^End-time: (.+)$", text, re.M)[1])
    assert _entries(rows) == _trailer(text) == 81


def test_wafl_instances_told_apart_by_scope() -> None:
    path = REAL / "wafl-two-nodes.txt"
    text = path.read_text()
    (sample,), notes = _parse(path)
    assert notes == []
    scopes = re.findall(r"^Scope: (\S+)$", text, re.M)
    assert re.findall(r"^Instance: (\S+)$", text, re.M) == ["wafl", "wafl"]
    assert [r.instance for r in sample.rows] == scopes == ["umeng-aff300-02", "umeng-aff300-03"]
    for row, block, scope in zip(sample.rows, _blocks(text), scopes, strict=True):
        assert row.table == "wafl" and row.properties["node"] == row.properties["scope"] == scope
        # cp_count's labels run from its '-' line to cp_phase_times; the long one starts at column 4
        section = block.split("    cp_count ", 1)[1].split("\n", 1)[1].split("    cp_phase_times ", 1)[0]
        pairs = re.findall(r"^ *(\S.*?) +(\d+)$", section, re.M)
        cp = dict(zip(row.labels["cp_count"], row.counters["cp_count"], strict=True))
        assert cp == {label: float(v) for label, v in pairs}
        nvlog = re.search(r"^    nvlog replay takeover time limit CP +(\d+)$", block, re.M)[1]
        assert cp["nvlog replay takeover time limit CP"] == float(nvlog)
        assert row.labels["cp_count"][-1] == "scanner triggered CP"  # the array goes on after it
        assert "nvlog" not in row.counters and "nvlog" not in row.properties
        assert row.counters["wafl_memory_free"] == float(
            re.search(r"^    wafl_memory_free +(\d+)$", block, re.M)[1]
        )
    assert _entries(sample.rows) == _trailer(text) == 50


def test_node_scoped_names_are_stable_when_a_node_is_missing(tmp_path: Path) -> None:
    text = (REAL / "wafl-two-nodes.txt").read_text()
    first = _blocks(text)[0]
    n = len(re.findall(r"^    (?!Counter\b|-)\S+ +\S+$", first, re.M))  # its counter lines
    f = tmp_path / "wafl-one-node.txt"
    f.write_text(first + f"{n} entries were displayed.\n")
    (sample,), _ = _parse(f)
    assert [r.instance for r in sample.rows] == ["umeng-aff300-02"]


def test_wrapped_counter_names_are_joined() -> None:
    path = REAL / "volume-wrapped-counter-name.txt"
    text = path.read_text()
    (sample,), _ = _parse(path)
    (row,) = sample.rows
    m = re.search(r"^    (\S+_) +(\d+)\n    (\w+)$", text, re.M)
    assert row.counters[m[1] + m[3]] == float(m[2])  # wvblk_saved_fsinfo_private_inos_reserve
    assert m[3] not in row.counters and m[3] not in row.properties
    name = re.search(r"^    instance_name +(\S+)\n +(\S+)$", text, re.M)
    assert row.properties["instance_name"] == name[1] + name[2] == row.instance
    assert _entries(sample.rows) == _trailer(text) == 3


def test_login_banners_wrapped_names_and_same_named_instances() -> None:
    path = REAL / "flexcache-per-volume.txt"
    text = path.read_text()
    (sample,), notes = _parse(path)
    assert notes == [
        f"{path}:3: skipped session text: 'This is your first recorded login.'",
        f"{path}:5: skipped session text: 'Your privilege has changed since last login.'",
    ]
    rows = sample.rows
    assert len(rows) == len(_blocks(text)) == 6
    for row, block in zip(rows, _blocks(text), strict=True):
        for head, value, tail in re.findall(r"^    (\S+_) +(\d+)\n    (\w+)$", block, re.M):
            assert row.counters[head + tail] == float(value)
            assert tail not in row.counters
    # hs_1 is printed twice under one scope; its instance_uuid tells the two apart
    twins = [r for r in rows if r.properties["instance_name"] == "hs_1"]
    assert len(twins) == 2 and twins[0].instance != twins[1].instance
    assert {r.properties["instance_uuid"] for r in twins} == {"harvest", "osc"}
    assert len({r.instance for r in rows}) == 6
    assert _entries(rows) == _trailer(text) == 108


def test_instance_names_with_spaces_on_two_nodes() -> None:
    path = REAL / "nvm-mirror-two-nodes.txt"
    text = path.read_text()
    (sample,), notes = _parse(path)
    assert notes == [f"{path}:1: skipped session text: 'Last login time: 11/7/2025 10:37:26'"]
    for row, block in zip(sample.rows, _blocks(text), strict=True):
        scope = re.search(r"^Scope: (\S+)$", block, re.M)[1]
        assert row.instance == f"{scope}:NVM Mirror" and row.properties["node"] == scope
        uuid = re.search(r"^    instance_uuid +(\S+)\n +(\S.*)$", block, re.M)
        assert row.properties["instance_uuid"] == uuid[1] + uuid[2] == f"{scope}:kernel:NVM Mirror"
        tp = re.search(r"^    write_throughput +(\d+)$", block, re.M)[1]
        assert row.counters["write_throughput"] == float(tp)
    assert len({r.instance for r in sample.rows}) == 2


def test_lun_partial_aggregation_keeps_rows_and_arrays() -> None:
    path = REAL / "lun-partial.txt"
    text = path.read_text()
    (sample,), notes = _parse(path)
    assert notes == []
    assert len(sample.rows) == len(_blocks(text)) == 5
    assert all(not r.complete and r.properties["constituents"] == "2" for r in sample.rows)
    row = next(r for r in sample.rows if r.instance == OSC)
    assert row.counters["read_align_histo"][2] == float(_value_in_text(text, OSC, "read_align_histo", 2))
    assert _entries(sample.rows) == _trailer(text) == 125


# ------------------------------------------------------------- cut, damaged and re-encoded copies
def _lines_in(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n"))


@pytest.mark.parametrize("cut", ["mid-line", "inside-array", "line-end", "before-trailer"])
def test_truncated_capture_is_a_located_error(tmp_path: Path, cut: str) -> None:
    text = (REAL / "wafl-two-nodes.txt").read_text()
    at = {
        "mid-line": text.index("    wafl_memory_used") + 55,  # inside the value
        "inside-array": text.index("    nvlog replay") + 3,
        "line-end": text.index("\nObject: wafl", 10) + 1,
        "before-trailer": text.index("50 entries"),
    }[cut]
    cut_text = text[:at]
    f = tmp_path / "cut.txt"
    f.write_text(cut_text)
    with pytest.raises(CaptureError, match=rf"cut\.txt:{_lines_in(cut_text.rstrip())}: .*cut short"):
        list(iter_statistics_samples(f))


def test_lost_lines_disagree_with_the_trailer(tmp_path: Path) -> None:
    text = (REAL / "wafl-two-nodes.txt").read_text()
    lost = re.sub(r"^    wafl_memory_free .*\n", "", text, count=1, flags=re.M)
    f = tmp_path / "lost.txt"
    f.write_text(lost)
    line = lost[: lost.index("50 entries")].count("\n") + 1
    with pytest.raises(CaptureError, match=rf"lost\.txt:{line}: 50 entries were displayed but 49"):
        list(iter_statistics_samples(f))


def test_a_trailer_that_undercounts_is_a_note(tmp_path: Path) -> None:
    text = (REAL / "volume-wrapped-counter-name.txt").read_text()
    f = tmp_path / "under.txt"
    f.write_text(text.replace("3 entries were", "2 entries were"))
    samples, notes = _parse(f)
    assert len(samples) == 1
    assert notes == [
        f"{f}:{_lines_in(text)}: 2 entries were displayed but 3 counter entries were read; "
        "the trailer is not trusted"
    ]


def test_one_entry_needs_no_trailer(tmp_path: Path) -> None:
    f = tmp_path / "one.txt"
    f.write_text(
        "Object: wafl\nInstance: wafl\nScope: n1\n"
        "    Counter                                                     Value\n"
        "    -------------------------------- --------------------------------\n"
        "    wafl_memory_free                                            56683\n"
    )
    (sample,), _ = _parse(f)
    assert sample.rows[0].instance == "n1" and sample.rows[0].counters == {"wafl_memory_free": 56683.0}


@pytest.mark.parametrize(
    "name", ["wafl-two-nodes.txt", "system-node-partial-1.txt", "flexcache-per-volume.txt"]
)
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be-bom", "utf-8-sig", "cr", "crlf"])
def test_reencoded_copies_parse_identically(tmp_path: Path, name: str, encoding: str) -> None:
    src = REAL / name
    text = src.read_text()
    f = tmp_path / name
    if encoding == "utf-16-be-bom":
        f.write_bytes(b"\xfe\xff" + text.encode("utf-16-be"))
    elif encoding in ("cr", "crlf"):
        f.write_bytes(text.replace("\n", "\r" if encoding == "cr" else "\r\n").encode())
    else:
        f.write_bytes(text.encode(encoding))
    samples, notes = _parse(f)
    want, want_notes = _parse(src)
    assert samples == want
    assert notes == [n.replace(str(src), str(f)) for n in want_notes]


def test_sysstat_reencoded_copies_parse_identically(tmp_path: Path) -> None:
    text = (DATA / "sysstat-M.txt").read_text()
    want = list(iter_sysstat_samples(DATA / "sysstat-M.txt", node="n"))
    for i, data in enumerate([text.encode("utf-16"), text.replace("\n", "\r").encode()]):
        f = tmp_path / f"s{i}.txt"
        f.write_bytes(data)
        assert list(iter_sysstat_samples(f, node="n")) == want


@pytest.mark.parametrize("pad", [0, 100_000])  # the second puts the bad byte past the first read chunk
def test_bytes_that_are_not_utf8_are_a_located_error(tmp_path: Path, pad: int) -> None:
    raw = (REAL / "wafl-two-nodes.txt").read_bytes()
    at = raw.index(b"wafl_memory_free")
    line = pad + raw[:at].count(b"\n") + 1
    f = tmp_path / "latin1.txt"
    f.write_bytes(b"\n" * pad + raw[:at] + b"\xe9" + raw[at:])
    with pytest.raises(CaptureError, match=rf"latin1\.txt:{line}: not UTF-8 text: byte 0xe9"):
        list(iter_statistics_samples(f))


def test_sysstat_bytes_that_are_not_utf8_are_a_located_error(tmp_path: Path) -> None:
    raw = (DATA / "sysstat-M.txt").read_bytes()
    f = tmp_path / "s.txt"
    f.write_bytes(raw + b"\xff\xff\n")
    line = raw.count(b"\n") + 1
    with pytest.raises(CaptureError, match=rf"s\.txt:{line}: not UTF-8 text"):
        list(iter_sysstat_samples(f))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("Object: lun\n".encode("utf-16-le"), r"bad\.txt:1: NUL bytes.*UTF-16 without a byte-order mark"),
        ("Object: lun\n".encode("utf-16") + b"\x00", r"bad\.txt:2: not UTF-16 text"),
    ],
)
def test_utf16_trouble_is_a_located_error(tmp_path: Path, data: bytes, message: str) -> None:
    f = tmp_path / "bad.txt"
    f.write_bytes(data)
    with pytest.raises(CaptureError, match=message):
        list(iter_statistics_samples(f))


# ------------------------------------------------------------------ what is skipped, and said so
LUN_BLOCK = (
    "Object: lun\nInstance: /vol/v/l{i}\nStart-time: {t}\nEnd-time: {t}\nScope: svm1\n"
    "Number of Constituents: 1 (complete_aggregation)\n"
    "    Counter                                                     Value\n"
    "    -------------------------------- --------------------------------\n"
    "    read_align_histo                                                -\n"
    "    read_ops                                                       {i}\n"
)


def test_every_skipped_thing_is_a_located_note(tmp_path: Path) -> None:
    f = tmp_path / "chatter.txt"
    f.write_text(
        "cluster1::*> statistics show -object lun -raw\n"  # 1
        "Do you want to continue? {y|n}: y\n"
        + LUN_BLOCK.format(i=1, t="3/2/2025 10:00:00")  # 3-12
        + "Warning: Unable to list entries on node n2. RPC: Couldn't make\n"  # 13
        "         connection\n"
        + LUN_BLOCK.format(i=2, t="the day after")  # 15-24
        + "Error: command failed on node n3\n"  # 25
        "Info: nothing to see\n"  # 26
        "4 entries were displayed.\n"  # 27
        "Press <space> to page down, <return> for next line, or 'q' to quit...\n"  # 28
        "cluster1::*>\n"  # 29
    )
    (sample,), notes = _parse(f)
    assert [r.instance for r in sample.rows] == ["/vol/v/l1", "/vol/v/l2"]
    assert all("read_align_histo" not in r.counters for r in sample.rows)
    assert sample.timestamp == parse_cli_time("3/2/2025 10:00:00")
    # notes come as the reader decides (an empty array when its block ends); by line they read:
    by_line = {int(n.split(": ", 1)[0].rsplit(":", 1)[1]): n.split(": ", 1)[1] for n in notes}
    assert len(by_line) == len(notes) == 11
    assert [(line, text.split(": ", 1)[0]) for line, text in sorted(by_line.items())] == [
        (1, "skipped session text"),
        (2, "skipped session text"),
        (11, "lun '/vol/v/l1'"),
        (13, "skipped ONTAP warning"),
        (17, "Start-time 'the day after' is not a time ONTAP prints; the block gives the sample no time"),
        (18, "End-time 'the day after' is not a time ONTAP prints; the block gives the sample no time"),
        (23, "lun '/vol/v/l2'"),
        (25, "skipped ONTAP error"),
        (26, "skipped ONTAP info"),
        (28, "skipped session text"),
        (29, "skipped session text"),
    ]
    assert by_line[11].endswith("array read_align_histo printed no elements; left out")
    assert by_line[13].endswith("RPC: Couldn't make connection")  # the continuation line joined on


def test_an_error_that_is_the_whole_output_stays_an_error(tmp_path: Path) -> None:
    f = tmp_path / "err.txt"
    f.write_text(
        '\ncluster1::> statistics show -object nope -raw\nError: show failed: Object "nope" was not found.\n'
    )
    with pytest.raises(CaptureError, match=r"err\.txt:3: the capture holds an ONTAP error: show failed"):
        list(iter_statistics_samples(f))


def test_no_entries_is_an_empty_capture_with_a_note(tmp_path: Path) -> None:
    f = tmp_path / "none.txt"
    f.write_text("There are no entries matching your query.\n")
    samples, notes = _parse(f)
    assert samples == [] and notes == [
        f"{f}:1: skipped session text: 'There are no entries matching your query.'"
    ]


def test_text_head_sniffs_utf16() -> None:
    assert text_head("Object: lun\n".encode("utf-16")) == "Object: lun\n"
    assert text_head(b"\xef\xbb\xbfObject: lun\n") == "Object: lun\n"


def test_chunk_boundaries_split_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny reads put a chunk boundary inside every CRLF pair and UTF-16 code unit."""
    src = REAL / "wafl-two-nodes.txt"
    want, _ = _parse(src)
    text = src.read_text().replace("\n", "\r\n")
    monkeypatch.setattr(cli_capture, "CHUNK", 7)
    f = tmp_path / "w.txt"
    f.write_bytes(text.encode("utf-16"))
    assert _parse(f)[0] == want
    raw = text.encode()
    at = raw.index(b"cp_phase_times")
    f.write_bytes(raw[:at] + b"\xff" + raw[at:])
    line = raw[:at].count(b"\n") + 1
    with pytest.raises(CaptureError, match=rf"w\.txt:{line}: not UTF-8 text: byte 0xff at offset {at}\b"):
        list(iter_statistics_samples(f))
