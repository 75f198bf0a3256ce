"""`sanlens analyze` against hostile inputs: one bad input is that input's error, never the run's.

Table-driven: each case builds an input, runs ``sanlens analyze`` in process with a good
PerfMon log beside it, and expects the exit code, an ``error:`` line naming the input
(or none), no traceback, no numpy warning, strict JSON, and the good log still reported.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sanlens.analyze import source as source_mod
from sanlens.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD = DATA / "perfmon" / "relog_sql01.csv"
LUN = DATA / "ontap" / "lun-statistics-show-raw-samples.txt"
H = '"(PDH-CSV 4.0) (UTC)({bias})","\\\\H\\PhysicalDisk(0 C:)\\Avg. Disk sec/Read","\\\\H\\PhysicalDisk(0 C:)\\Disk Reads/sec"\n'
ROW = '"01/15/2024 09:00:{s:02d}.000","{a}","{b}"\n'


def perfmon(rows: list[tuple[str, str]], bias: str = "0", day: str = "01/15/2024 09:00") -> str:
    body = "".join(f'"{day}:{i:02d}.000","{a}","{b}"\n' for i, (a, b) in enumerate(rows))
    return H.format(bias=bias) + body


Build = Callable[[Path], str]


def text(name: str, content: str | bytes) -> Build:
    def build(d: Path) -> str:
        p = d / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(p)

    return build


def deep_json(d: Path) -> str:
    p = d / "deep.json"
    p.write_text('{"records": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return str(p)


def deep_schema(d: Path) -> str:
    p = d / "schema.json"
    p.write_text('{"counter_schemas": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return str(p)


def silent_fifo(d: Path) -> str:
    p = d / "fifo"
    os.mkfifo(p)
    return str(p)


def pipe_of(src: Path) -> Build:
    """A FIFO a thread fills with ``src`` (what ``<(cat src)`` gives): readable once, unseekable."""

    def build(d: Path) -> str:
        p = d / f"pipe-{src.name}"
        os.mkfifo(p)

        def feed() -> None:
            with open(p, "wb") as f:
                f.write(src.read_bytes())

        threading.Thread(target=feed, daemon=True).start()
        return str(p)

    return build


def big_pipe(d: Path) -> str:
    big = d / "big.csv"
    rows = "".join(ROW.format(s=i % 60, a="0.01", b="1") for i in range(3000))
    big.write_text(H.format(bias="0") + rows)
    return pipe_of(big)(d)


# (id, input, exit code, words of its error line (None: no error), extra argv)
CASES: list[tuple[str, Build, int, tuple[str, ...] | None, tuple[str, ...]]] = [
    (
        "bias-huge",
        text("bias.csv", perfmon([("0.01", "1")], bias="99999999999")),
        2,
        ("bias", "out of range"),
        (),
    ),
    ("bias-negative", text("biasn.csv", perfmon([("0.01", "1")], bias="-99999999999")), 2, ("bias",), ()),
    (
        "year-1-bias-pushes-out",
        text("y1.csv", perfmon([("0.01", "1")], bias="-600", day="01/01/0001 00:00")),
        2,
        ("years 1..9999",),
        (),
    ),
    (
        "year-9999-bias-pushes-out",
        text("y9.csv", perfmon([("0.01", "1")], bias="600", day="12/31/9999 23:59")),
        2,
        ("years 1..9999",),
        (),
    ),
    ("json-nested-100000", deep_json, 2, ("nested too deeply",), ()),
    ("schema-nested-100000", deep_schema, 2, ("nested too deeply",), ()),
    ("ontap-through-a-pipe", pipe_of(LUN), 0, None, ()),
    ("perfmon-through-a-pipe", pipe_of(GOOD), 0, None, ()),
    ("perfmon-3000-rows-through-a-pipe", big_pipe, 0, None, ()),
    ("fifo-without-writer", silent_fifo, 2, ("nobody writes",), ()),
    ("directory", lambda d: str(d), 2, ("Is a directory",), ()),
    ("german-decimal-commas", text("de.csv", perfmon([("0,012", "250,5"), ("0,02", "300")])), 0, None, ()),
    ("mixed-decimal-marks", text("mix.csv", perfmon([("0,012", "250.5")])), 2, ("one decimal mark",), ()),
    (
        "header-20-mb-of-x",
        text("hx.csv", '"(PDH-CSV 4.0) (UTC)(0)"' + ',"x"' * (5 << 20) + "\n"),
        2,
        ("longer than", "not a PerfMon header"),
        (),
    ),
    (
        "row-of-20-mb-commas",
        text("rc.csv", H.format(bias="0") + '"01/15/2024 09:00:01.000"' + "," * (20 << 20) + "\n"),
        2,
        ("not a PerfMon data row",),
        (),
    ),
    ("overflow-to-json", text("ovf.csv", perfmon([("1e308", "1.7e308")] * 4)), 0, None, ("--format", "json")),
    ("overflow-to-text", text("ovf.csv", perfmon([("1e300", "1e300")] * 40)), 0, None, ()),
    ("overflow-to-html", text("ovf.csv", perfmon([("1e308", "1e308")] * 4)), 0, None, ("--format", "html")),
]


@pytest.fixture(autouse=True)
def short_fifo_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_mod, "FIFO_WAIT_S", 0.5)


def analyze(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["analyze", "-q", *argv])
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("build", "code", "words", "extra"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_hostile_input_is_its_own_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    build: Build,
    code: int,
    words: tuple[str, ...] | None,
    extra: tuple[str, ...],
) -> None:
    good = tmp_path / "good.csv"
    shutil.copy(GOOD, good)
    name = build(tmp_path)
    started = time.monotonic()
    rc, out, err = analyze([name, str(good), *extra], capsys)
    assert time.monotonic() - started < 30
    assert rc == code, err
    assert "Traceback" not in err and "RuntimeWarning" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    if words is None:
        assert errors == [], err
    else:
        assert len(errors) == 1 and name in errors[0], err
        for w in words:
            assert w in errors[0], err
    assert "SQL01" in out or "sql01" in out.lower(), "the good input is still reported"
    if "json" in extra:
        doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        assert str(good) in [i["path"] for i in doc["inputs"]]
    assert not any(len(tok) > 30 and tok.isdigit() for tok in out.split()), "no 300-digit numbers"


def test_the_mean_of_values_near_the_float_maximum_does_not_overflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "ovf.csv"
    log.write_text(perfmon([("1e308", "1.7e308")] * 4))
    rc, out, err = analyze([str(log), "--format", "json"], capsys)
    assert rc == 0, err
    series = {s["counter"]: s for s in json.loads(out)["series"]}
    assert series["Avg. Disk sec/Read"]["mean"] == pytest.approx(1e308)
    assert series["Disk Reads/sec"]["mean"] == pytest.approx(1.7e308)


def test_values_beyond_floats_are_null_in_json_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 400-digit iostat value is infinite as a float: JSON has no Infinity, so it is null."""
    src = (DATA / "linux" / "marslo-ibook-rhel7-iostat-x.txt").read_text()
    cap = tmp_path / "io.txt"
    cap.write_text(src.replace("0.93", "9" * 400, 1))
    rc, out, err = analyze([str(cap), "--format", "json"], capsys)
    assert rc == 0, err
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert any(s["max"] is None and s["samples"] for s in doc["series"])
    assert "overflowed" in err and "null" in err


def test_decimal_commas_read_as_decimals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "de.csv"
    log.write_text(perfmon([("0,012", "250,5"), ("0,020", "300")]))
    rc, out, err = analyze([str(log), "--format", "json"], capsys)
    assert rc == 0, err
    series = {s["counter"]: s for s in json.loads(out)["series"]}
    assert series["Avg. Disk sec/Read"]["min"] == pytest.approx(0.012)
    assert series["Disk Reads/sec"]["max"] == pytest.approx(300)


def test_a_capture_deleted_after_opening_is_read_from_what_was_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second ONTAP pass reads the descriptor the first opened, not the path again."""
    from sanlens.analyze import ontap_inputs

    lun = tmp_path / "lun.txt"
    shutil.copy(LUN, lun)
    scan = ontap_inputs.scan

    def scan_then_delete(path: object, kind: str) -> ontap_inputs.OntapInput:
        inp = scan(path, kind)  # type: ignore[arg-type]
        lun.unlink()
        return inp

    monkeypatch.setattr(ontap_inputs, "scan", scan_then_delete)
    rc, out, err = analyze([str(lun), str(GOOD), "--format", "json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert (
        any(s["object"] == "lun" for s in doc["series"] if "object" in s) or doc["inputs"][0]["samples"] > 0
    )


def test_a_capture_emptied_between_passes_is_its_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sanlens.analyze import ontap_inputs

    lun = tmp_path / "lun.txt"
    shutil.copy(LUN, lun)
    scan = ontap_inputs.scan

    def scan_then_empty(path: object, kind: str) -> ontap_inputs.OntapInput:
        inp = scan(path, kind)  # type: ignore[arg-type]
        lun.write_bytes(b"")
        return inp

    monkeypatch.setattr(ontap_inputs, "scan", scan_then_empty)
    rc, out, err = analyze([str(lun), str(GOOD)], capsys)
    assert rc == 2, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(lun) in errors[0] and "changed while it was read" in errors[0], err
    assert "SQL01" in out
