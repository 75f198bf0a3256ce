"""`sanlens analyze --format html`: one self-contained file that fetches nothing."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from conftest import pinned_copy
from sanlens.analyze.evidence_format import RUNBOOK_BASE_URL
from sanlens.cli import main

DATA = Path(__file__).parents[1] / "data" / "ontap"
PERFMON = Path(__file__).parents[1] / "data" / "perfmon"
# sysstat -M text carries no time: a copy ends at 10:04:00 UTC, after the LUN capture (10:00 .. 10:02)
SYSSTAT = DATA / "sysstat-M.txt"
SYSSTAT_MTIME = 1_740_909_840.0


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "data", "poster", "srcset") and v:
                self.refs.append(v)


def render(tmp_path: Path, *files: Path) -> str:
    out = tmp_path / "report.html"
    assert main(["analyze", *map(str, files), "--format", "html", "--output", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_html_is_self_contained(tmp_path: Path) -> None:
    files = [
        DATA / "lun-statistics-show-raw-samples.txt",
        pinned_copy(SYSSTAT, tmp_path / "in", SYSSTAT_MTIME),
    ]
    files += sorted(PERFMON.glob("*.csv"))[:1]
    text = render(tmp_path, *files)
    p = _Refs()
    p.feed(text)
    assert "script" not in p.tags and "link" not in p.tags and "iframe" not in p.tags
    # links within the page, and the runbooks' pages: nothing is fetched (no src=, no stylesheet)
    assert p.refs and all(r.startswith(("#", RUNBOOK_BASE_URL + "/")) for r in p.refs)
    assert any(r.startswith(RUNBOOK_BASE_URL) for r in p.refs)
    rest = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert not re.search(r"https?://", re.sub(r'href="https?://[^"]*"', "", rest))
    assert "url(" not in text and "@import" not in text
    assert text.count("<svg") >= 3 and "<style>" in text


def test_html_lists_inputs_charts_and_bands(tmp_path: Path) -> None:
    text = render(tmp_path, pinned_copy(SYSSTAT, tmp_path / "in", SYSSTAT_MTIME))
    assert "sysstat-M.txt" in text and "ontap-sysstat" in text
    # the kahuna domain chart carries warning/critical bands (50 % / 90 % of a core)
    chart = text.split("domain_busy[kahuna]", 1)[1].split("</svg>", 1)[0]
    assert "<title>critical</title>" in chart and "<title>warning</title>" in chart
    assert "<polyline" in chart
    assert "Findings:" in text and "incident(s)" in text


def test_html_escapes_names(tmp_path: Path) -> None:
    f = tmp_path / "evil.txt"
    f.write_text((DATA / "lun-statistics-show-raw-samples.txt").read_text().replace("lun0", "<b>lun0</b>"))
    text = render(tmp_path, f)
    assert "<b>lun0</b>" not in text and "&lt;b&gt;lun0&lt;/b&gt;" in text
