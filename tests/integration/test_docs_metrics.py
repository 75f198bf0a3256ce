"""docs/metrics.md is generated, current, and documents exactly what the exporter exposes.

The page to hold it against is the exporter's own /metrics after polling the simulator
(``tests/golden.py``, the same page the golden test compares).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from types import ModuleType

import pytest
from prometheus_client.parser import text_string_to_metric_families

import golden
from conftest import ROOT
from sanlens.ontap.catalogue import catalogue

BUILD = ROOT / "docs" / "build.py"
SOURCE = ROOT / "exporter" / "sanlens"


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sanlens_docs_build", BUILD)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module by name
    spec.loader.exec_module(mod)
    return mod


build = _load_build()


@pytest.fixture(scope="module")
def exposed() -> dict[str, tuple[str, frozenset[str]]]:
    """Family name as documented (counters with _total) -> (type, label names seen)."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for fam in text_string_to_metric_families(golden.golden_text()):
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        labels: set[str] = set()
        for s in fam.samples:
            labels |= set(s.labels)
        out[name] = (fam.type, frozenset(labels))
    return out


def documented() -> dict[str, tuple[str, frozenset[str]]]:
    out = {name: (t, frozenset(labels)) for name, (t, labels) in build.catalogue_families().items()}
    for f in build.FAMILIES:
        assert f.name not in out, f"{f.name} is declared in docs/build.py and in the counter catalogue"
        out[f.name] = (f.type, frozenset(f.labels))
    return out


def test_committed_metrics_reference_is_current() -> None:
    p = subprocess.run(
        [sys.executable, str(BUILD), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert p.returncode == 0, p.stderr + "\n(run .venv/bin/python docs/build.py and commit docs/metrics.md)"


def test_every_exposed_family_is_documented_with_its_type_and_labels(
    exposed: dict[str, tuple[str, frozenset[str]]],
) -> None:
    docs = documented()
    missing = sorted(set(exposed) - set(docs))
    assert not missing, f"exposed but not in docs/metrics.md (declare them in docs/build.py): {missing}"
    for name, (type_, labels) in exposed.items():
        doc_type, doc_labels = docs[name]
        assert type_ == doc_type, f"{name}: exposed as {type_}, documented as {doc_type}"
        if labels:  # a family with no series yet shows no labels
            assert labels == doc_labels, (
                f"{name}: exposed labels {sorted(labels)}, documented {sorted(doc_labels)}"
            )


def test_every_documented_family_is_exposed_or_says_when_it_is_not(
    exposed: dict[str, tuple[str, frozenset[str]]],
) -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in SOURCE.rglob("*.py"))
    declared = {f.name: f for f in build.FAMILIES}
    for name in sorted(set(documented()) - set(exposed)):
        f = declared.get(name)
        assert f is not None and f.conditional, (
            f"{name} is documented but not on the simulator's page; "
            "if it only appears in some states, say when (`conditional`)"
        )
        built = (f'"{name}"', f'"{name.removesuffix("_total")}"')  # client-library counters drop _total
        assert any(b in code for b in built), (
            f"{name} is documented but no code under exporter/sanlens builds it"
        )


def test_families_without_series_on_the_page_are_the_conditional_ones(
    exposed: dict[str, tuple[str, frozenset[str]]],
) -> None:
    conditional = {f.name for f in build.FAMILIES if f.conditional}
    empty = {name for name, (_, labels) in exposed.items() if not labels}
    assert empty <= conditional, empty - conditional


def test_catalogue_notes_and_table_order_name_real_families_and_tables() -> None:
    families = build.catalogue_families()
    assert set(build.CATALOGUE_NOTES) <= set(families), set(build.CATALOGUE_NOTES) - set(families)
    assert set(build.TABLE_ORDER) <= set(catalogue()), set(build.TABLE_ORDER) - set(catalogue())


def test_units_follow_the_names() -> None:
    for f in build.FAMILIES:
        named = build.metric_unit(f.name)
        if named not in ("count", "—"):
            assert f.unit == named, f"{f.name}: unit {f.unit}, its name says {named}"


def test_reference_mentions_every_family_once_in_a_table_row() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(sanlens_\w+)` \| (?:counter|gauge) \|", text, flags=re.M)
    assert sorted(rows) == sorted(documented())


def test_evidence_and_threshold_labels_on_the_page_are_documented() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(\w+)` \| `(\w+)` \|", text, flags=re.M))
    seen: set[tuple[str, str]] = set()
    for fam in text_string_to_metric_families(golden.golden_text()):
        key = {"sanlens_diagnosis_evidence": "evidence", "sanlens_diagnosis_threshold": "threshold"}.get(
            fam.name
        )
        if key:
            seen |= {(s.labels["diagnosis"], s.labels[key]) for s in fam.samples}
    assert seen, "no evidence or threshold series on the page"
    assert seen <= rows, sorted(seen - rows)
