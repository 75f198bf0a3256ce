"""The registry of diagnoses, their runbooks and README entry, and the validation of threshold overrides."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tests.builders import engine

from sanlens.cli import main
from sanlens.config import Config, DiagnoseConfig
from sanlens.config.load import load_config_text
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import (
    REGISTRY,
    alert_name,
    check,
    plainly_valid,
    thresholds_model,
    validate_config,
)
from sanlens.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
IDS = [  # written out: adding or dropping a diagnosis is a deliberate change here too
    "san_oversubscription",
    "host_queue_limited",
    "qos_throttle",
    "indirect_io",
    "lun_iops_ceiling",
    "volume_iops_ceiling",
    "cpu_domain_serial_bottleneck",
    "volume_affinity_concentration",
    "disk_busy_imbalance",
    "background_operation_impact",
    "latency_slo",
    "host_path_loss",
    "lun_not_online",
    "fc_port_down",
    "disk_failed",
    "aggregate_degraded",
]


def test_registry_ids_and_alert_names() -> None:
    assert sorted(REGISTRY) == sorted(IDS)
    assert alert_name("san_oversubscription") == "SanlensSanOversubscription"
    assert alert_name("cpu_domain_serial_bottleneck") == "SanlensCpuDomainSerialBottleneck"
    for did, spec in REGISTRY.items():
        assert spec.alert == "Sanlens" + "".join(w.capitalize() for w in did.split("_"))
        assert spec.runbook == f"docs/runbooks/{did}.md"
        assert spec.sustain_s > 0 and spec.exit_s > 0
        # the path diagnoses judge a state ONTAP or the host reports; the others judge numbers
        assert spec.thresholds or did in {
            "host_path_loss",
            "fc_port_down",
            "disk_failed",
            "aggregate_degraded",
        }
        for t in spec.thresholds:
            assert t.min <= t.default <= t.max, (did, t.name)
            assert t.source and t.unit


@pytest.mark.parametrize("did", IDS)
def test_runbook_documents_its_thresholds(did: str) -> None:
    spec = REGISTRY[did]
    path = ROOT / spec.runbook
    assert path.exists(), f"missing {spec.runbook}"
    text = path.read_text(encoding="utf-8")
    assert f"# {did}" in text.splitlines()[0]
    for section in ("## What it means", "## Formula", "## Default thresholds", "## How to confirm", "## Fix"):
        assert section in text, (did, section)
    for t in spec.thresholds:
        assert f"`{t.name}`" in text, (did, t.name)
        assert f"{t.default:g}" in text, (did, t.name, t.default)
    assert spec.alert in text


def test_readme_lists_every_diagnosis() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Diagnoses", 1)[1]
    for did in IDS:
        assert f"`{did}`" in section


def test_threshold_metrics_cover_the_registry() -> None:
    e = engine(thresholds={"lun_iops_ceiling": {"warning_fraction": 0.7}})
    fam = {m.name: m for m in e.metrics()}["sanlens_diagnosis_threshold"]
    got = {(lv[0], lv[1]): v for lv, v in fam.samples}
    for did, spec in REGISTRY.items():
        for t in spec.thresholds:
            assert (did, t.name) in got
        assert got[(did, "sustain_seconds")] == spec.sustain_s
    assert got[("lun_iops_ceiling", "warning_fraction")] == 0.7


@pytest.mark.parametrize(
    ("thresholds", "path", "words"),
    [
        ({"nope": {}}, "diagnose.thresholds.nope", "unknown diagnosis"),
        (
            {"latency_slo": {"data_warn": 0.01}},
            "diagnose.thresholds.latency_slo.data_warn",
            "unknown threshold",
        ),
        ({"latency_slo": {"min_iops": -1}}, "diagnose.thresholds.latency_slo.min_iops", "out of range"),
        (
            {"latency_slo": {"data_warning_seconds": 0.05}},
            "diagnose.thresholds.latency_slo.data_warning_seconds",
            "must not exceed data_critical_seconds",
        ),
        (
            {"disk_busy_imbalance": {"sustain_seconds": 1e9}},
            "diagnose.thresholds.disk_busy_imbalance.sustain_seconds",
            "out of range",
        ),
    ],
)
def test_bad_thresholds_name_their_key_path(thresholds: dict, path: str, words: str) -> None:
    cfg = DiagnoseConfig(thresholds=thresholds)
    with pytest.raises(ConfigError) as ei:
        validate_config(cfg)
    assert ei.value.path == path and words in str(ei.value)
    with pytest.raises(ConfigError):
        Engine(cfg)


def test_check_lists_every_problem_and_accepts_good_config() -> None:
    # the section's own ranges are the model's: refused, all at once, where the object is made
    with pytest.raises(ValidationError) as ei:
        DiagnoseConfig(sustain_scale=-1, history=1, backend_iops_capacity=0)
    assert [e["loc"] for e in ei.value.errors()] == [
        ("sustain_scale",),
        ("history",),
        ("backend_iops_capacity",),
    ]
    # the thresholds are the registry's
    bad = DiagnoseConfig(thresholds={"x": {}, "latency_slo": {"nope": 1.0, "min_iops": -1.0}})
    problems = check(bad)
    assert len(problems) == 3 and any(p.startswith("diagnose.thresholds.latency_slo.nope") for p in problems)
    good = Config(diagnose=DiagnoseConfig(thresholds={"latency_slo": {"log_warning_seconds": 0.001}}))
    assert check(good.diagnose) == []
    validate_config(good.diagnose)


def test_check_config_command_reports_the_threshold_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("diagnose:\n  thresholds:\n    lun_iops_ceiling:\n      warning_fraction: 5\n")
    load_config_text(f.read_text())  # the loader itself accepts it: the registry must catch it
    assert main(["check-config", str(f)]) == 2
    assert "diagnose.thresholds.lun_iops_ceiling.warning_fraction" in capsys.readouterr().err


_ANY_VALUE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10, 10**6),
    st.booleans(),
    st.none(),
    st.sampled_from(["1", "nan"]),
)


@st.composite
def _overrides(draw: st.DrawFn) -> dict[str, Any]:
    """Overrides near the edge of valid: known and unknown names, values in and out of range."""
    out: dict[str, Any] = {}
    for did in draw(st.lists(st.sampled_from([*IDS, "no_such_diagnosis"]), max_size=3, unique=True)):
        spec = REGISTRY.get(did)
        ranges = {t.name: (t.min, t.max) for t in spec.thresholds} if spec else {}
        ranges |= {"sustain_seconds": (0.0, 86400.0), "exit_seconds": (0.0, 86400.0)}
        if draw(st.integers(0, 9)) == 0:
            out[did] = draw(st.sampled_from([[], None, 1.0]))
            continue
        values: dict[str, Any] = {}
        names = draw(st.lists(st.sampled_from(list(ranges)), max_size=4, unique=True))
        for name in names + (["unknown"] if draw(st.integers(0, 4)) == 0 else []):
            lo, hi = ranges.get(name, (0.0, 1.0))
            in_range = st.one_of(st.floats(lo, hi), st.integers(math.ceil(lo), math.floor(hi)))
            values[name] = draw(in_range if draw(st.integers(0, 4)) else _ANY_VALUE)
        out[did] = values
    return out


@settings(max_examples=400, deadline=None)
@given(_overrides())
def test_overrides_plainly_valid_are_the_ones_the_thresholds_model_accepts(overrides: dict[str, Any]) -> None:
    """The check without pydantic (``analyze`` with no config uses it) never passes what the model
    refuses, and passes everything the model accepts that is made of plain ints and floats."""
    try:
        thresholds_model().model_validate(overrides)
        accepted = True
    except ValidationError:
        accepted = False
    if plainly_valid(overrides):
        assert accepted
    plain = all(
        isinstance(v, dict) and all(type(x) in (int, float) for x in v.values()) for v in overrides.values()
    )
    if accepted and plain:
        assert plainly_valid(overrides)
