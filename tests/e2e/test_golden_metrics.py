"""The whole /metrics page against a committed golden file, and through `promtool check metrics`.

A change to any family, label, help text, value or order shows up here as a diff to
review; if it is intended, regenerate with `.venv/bin/python tests/golden.py --update`
and commit tests/data/golden/metrics.txt with the change.
"""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from prometheus_client.parser import text_string_to_metric_families

import golden
from conftest import require_tool

# promtool's lint findings on the page that are accepted, with why. Any other finding fails.
ACCEPTED_LINT: set[str] = set()


@pytest.fixture(scope="module")
def page() -> str:
    return golden.golden_text()


def test_metrics_page_matches_the_golden_file(page: str) -> None:
    assert golden.GOLDEN.exists(), "no golden file: run tests/golden.py --update"
    expected = golden.GOLDEN.read_text(encoding="utf-8")
    assert page == expected, (
        "the /metrics page differs from tests/data/golden/metrics.txt "
        "(if intended: tests/golden.py --update)\n" + golden.diff(expected, page)
    )


def test_rendering_is_reproducible(page: str) -> None:
    assert golden.mask(golden.render()) == page


def test_promtool_check_metrics_parses_the_page_and_finds_only_accepted_lint(page: str) -> None:
    promtool = require_tool("promtool")
    p = subprocess.run(
        [promtool, "check", "metrics"], input=page, capture_output=True, text=True, timeout=60, check=False
    )
    out = (p.stdout + p.stderr).strip()
    assert "error while linting" not in out, out
    findings = {line.strip() for line in out.splitlines() if line.strip()}
    assert findings == ACCEPTED_LINT, f"new promtool findings: {sorted(findings - ACCEPTED_LINT)}"
    # promtool exits 3 for lint findings and 1 for a page it cannot parse
    assert p.returncode == (3 if findings else 0), out


def test_page_has_no_duplicate_series_and_no_empty_help(page: str) -> None:
    families = list(text_string_to_metric_families(page))
    seen = Counter((s.name, tuple(sorted(s.labels.items()))) for f in families for s in f.samples)
    dup = [k for k, n in seen.items() if n > 1]
    assert not dup, dup[:5]
    assert all(f.documentation.strip() for f in families)
    names = [f.name for f in families]
    assert len(names) == len(set(names)), "a family is split into two blocks"


def test_page_masks_only_the_build_labels(page: str) -> None:
    assert 'sanlens_build_info{python_version="<masked>",version="<masked>"} 1.0' in page
    assert page.count("<masked>") == 2
