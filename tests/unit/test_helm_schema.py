"""The chart's `config` schema is generated from the exporter's config model, and agrees with it.

helm/build.py writes `properties.config` of helm/sanlens/values.schema.json from the
pydantic models of exporter/sanlens/config/ (with the diagnosis registry's ranges). These
tests hold it to three promises: it is current; it never refuses a config the exporter
accepts (except the chart's credentials rule); and what it refuses, the exporter refuses
too, at every bound it writes and for the rules across keys.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from conftest import ROOT
from sanlens.config.load import load_config_text
from sanlens.diagnose.registry import REGISTRY, validate_config
from sanlens.errors import ConfigError

BUILD = ROOT / "helm" / "build.py"
CHART = ROOT / "helm" / "sanlens"


SCHEMA = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))["properties"]["config"]
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)

BASE: dict[str, Any] = {
    # a cluster with credentials: without them every poll is refused, which check-config tells
    "ontap": [
        {"name": "c1", "url": "https://c1.example.com", "auth": {"username": "u", "password_file": "/pw"}}
    ],
    "hosts": [{"name": "sql01", "url": "http://sql01:9182/metrics"}],
    "diagnose": {},
}
# where a mapping of each model sits in BASE, and its properties in the schema
WHERE = {
    "Config": ((), SCHEMA["properties"]),
    "OntapTarget": (("ontap", 0), SCHEMA["properties"]["ontap"]["items"]["properties"]),
    # the hosts of BASE use the default source, windows_exporter: the first model of the union
    "HostTarget": (("hosts", 0), SCHEMA["properties"]["hosts"]["items"]["oneOf"][0]["properties"]),
    "DiagnoseConfig": (("diagnose",), SCHEMA["properties"]["diagnose"]["properties"]),
}


def schema_ok(cfg: dict[str, Any]) -> bool:
    return VALIDATOR.is_valid(cfg)


def exporter_ok(cfg: dict[str, Any]) -> bool:
    """What `sanlens check-config` and `sanlens serve` accept."""
    try:
        validate_config(load_config_text(yaml.safe_dump(cfg)).diagnose)
    except ConfigError:
        return False
    return True


def with_value(where: tuple[Any, ...], key: str, value: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(BASE)
    node: Any = cfg
    for step in where:
        node = node[step]
    node[key] = value
    return cfg


def test_committed_schema_is_current() -> None:
    p = subprocess.run(
        [sys.executable, str(BUILD), "--check"], capture_output=True, text=True, timeout=60, check=False
    )
    assert p.returncode == 0, p.stderr + "\n(run .venv/bin/python helm/build.py and commit the schema)"


def test_schema_is_valid_draft7() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("values", sorted((CHART / "ci").glob("*-values.yaml")), ids=lambda p: p.name)
def test_every_ci_config_passes_the_schema_and_the_exporter(values: Path) -> None:
    cfg = (yaml.safe_load(values.read_text(encoding="utf-8")) or {}).get("config", {})
    assert schema_ok(cfg), list(VALIDATOR.iter_errors(cfg))
    assert exporter_ok(cfg)


def test_base_config_passes_both() -> None:
    assert schema_ok(BASE) and exporter_ok(BASE)


def _samples(kind: str, rule: dict[str, Any]) -> list[tuple[Any, bool]]:
    """(value, valid) pairs at and just past each bound of ``rule``."""
    out: list[tuple[Any, bool]] = []
    step = 1 if kind == "integer" else 0.5
    if "minimum" in rule and rule["minimum"] > rule.get("exclusiveMinimum", -float("inf")):
        out += [(rule["minimum"], True), (rule["minimum"] - step, False)]
    if "maximum" in rule:
        out += [(rule["maximum"], True), (rule["maximum"] + step, False)]
    if "exclusiveMinimum" in rule:
        out += [(rule["exclusiveMinimum"] + step, True), (rule["exclusiveMinimum"], False)]
    if "pattern" in rule:
        out += [(" ", False)]
    return out


def _kind(rule: dict[str, Any]) -> str:
    kinds = rule.get("type")
    return "integer" if kinds == "integer" or (isinstance(kinds, list) and "integer" in kinds) else ""


BOUND_CASES = [
    pytest.param(model, key, value, valid, id=f"{model}.{key}={value!r}")
    for model, (_, props) in WHERE.items()
    for key, rule in props.items()
    for value, valid in _samples(_kind(rule), rule)
]


def test_the_schema_has_bounds_to_sample() -> None:
    assert len(BOUND_CASES) > 30


@pytest.mark.parametrize(("model", "key", "value", "valid"), BOUND_CASES)
def test_each_generated_bound_agrees_with_the_exporter(model: str, key: str, value: Any, valid: bool) -> None:
    cfg = with_value(WHERE[model][0], key, value)
    assert schema_ok(cfg) is valid, list(VALIDATOR.iter_errors(cfg))
    assert exporter_ok(cfg) is valid


def _host(**kw: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(BASE)
    cfg["hosts"] = [{"name": "h", **kw}]
    return cfg


def _auth(**kw: Any) -> dict[str, Any]:
    cfg = copy.deepcopy(BASE)
    cfg["ontap"][0]["auth"] = kw
    return cfg


@pytest.mark.parametrize(
    ("cfg", "valid"),
    [
        (_host(url="http://h:9182"), True),
        (_host(), False),  # windows_exporter needs a url
        (_host(source="winrm", url=""), False),
        (_host(source="winrm", url="https://h:5986/wsman"), True),
        (_host(source="perfmon", files=["a.csv"]), True),
        (_host(source="perfmon"), False),
        (_host(source="perfmon", files=[]), False),
        (_host(url="http://h", disks=[{"disk": "1", "cluster": "c1", "svm": "s", "lun": "/vol/v/l"}]), True),
        (_host(url="http://h", disks=[{"drive": "E:"}]), True),
        (_host(url="http://h", disks=[{"disk": "1", "drive": "E:"}]), False),
        (_host(url="http://h", disks=[{"disk": None, "drive": "E:"}]), True),
        (_host(url="http://h", disks=[{"cluster": "c1"}]), False),
        (_host(url="http://h", disks=[{"drive": "E:", "data_class": "tempdb", "queue_depth": 64}]), True),
        (_host(url="http://h", data_class="archive"), False),
        (_auth(username="u", password_file="/s/p"), True),
        (_auth(password_file="/s/p"), False),  # a password needs a username
        (_auth(username="", password_file="/s/p"), False),
        (_auth(cert_file="/c.pem", key_file="/c.key"), True),
        (_auth(cert_file="/c.pem"), False),
        (_auth(key_file="/c.key"), False),
        (_auth(username="u", password_file="/s/p", cert_file=None, key_file=None), True),
        (with_value(("ontap", 0), "tables", ["lun", "volume"]), True),
        (with_value(("ontap", 0), "tables", ["lun", "nope"]), False),
        (with_value(("ontap", 0), "poll_interval", "90s"), True),
        (with_value(("ontap", 0), "poll_interval", 0.5), False),  # under 1 s (strings: syntax only)
        (with_value(("ontap", 0), "read_timeout", "1m"), True),
        (with_value(("ontap", 0), "read_timeout", "soon"), False),
        (with_value(("ontap", 0), "tls", {"ca_file": "/ca.pem", "insecure_skip_verify": False}), True),
        (with_value(("ontap", 0), "tls", {"verify": False}), False),
        (with_value(("ontap", 0), "nmae", "x"), False),
        (with_value((), "log_level", "trace"), False),
        (with_value((), "listen", "127.0.0.1:9842"), True),
        (with_value((), "listen", "9842"), False),
        (with_value(("diagnose",), "thresholds", {"latency_slo": {"log_warning_seconds": 0.001}}), True),
        (with_value(("diagnose",), "thresholds", {"latency_slo": {"sustain_seconds": 600}}), True),
        (with_value(("diagnose",), "thresholds", {"latency_slo": {"sustain_seconds": 90000}}), False),
        (with_value(("diagnose",), "thresholds", {"latency_slo": {"nope": 1}}), False),
        (with_value(("diagnose",), "thresholds", {"nope": {}}), False),
        (with_value(("diagnose",), "backend_iops_capacity", 20000), True),
    ],
)
def test_schema_and_exporter_agree(cfg: dict[str, Any], valid: bool) -> None:
    assert schema_ok(cfg) is valid, list(VALIDATOR.iter_errors(cfg))
    assert exporter_ok(cfg) is valid


@pytest.mark.parametrize("did", sorted(REGISTRY))
def test_every_threshold_range_agrees_with_the_registry(did: str) -> None:
    """Defaults pass both; values out of the registry's range fail both; bounds pass the schema.

    (The exporter may still refuse a bound on its own, for the order of a pair such as
    warning <= critical, which a JSON Schema cannot express.)
    """
    for t in REGISTRY[did].thresholds:
        span = abs(t.max - t.min) + 1
        cases = [(t.default, True, True), (t.min - span, False, False), (t.max + span, False, False)]
        cases += [(t.min, True, None), (t.max, True, None)]
        for value, in_schema, in_exporter in cases:
            cfg = with_value(("diagnose",), "thresholds", {did: {t.name: value}})
            assert schema_ok(cfg) is in_schema, (t.name, value)
            if in_exporter is not None:
                assert exporter_ok(cfg) is in_exporter, (t.name, value)


@pytest.mark.parametrize("key", ["password", "password_env"])
def test_chart_refuses_inline_and_environment_credentials_the_exporter_allows(key: str) -> None:
    cfg = _auth(username="u", **{key: "x"})
    assert not schema_ok(cfg)
    assert exporter_ok(cfg)  # the exporter allows them (with a warning for password); the chart does not


@pytest.mark.parametrize("page", ["docs/configuration.md", "README.md"])
def test_documented_config_example_passes_both(page: str) -> None:
    """The first YAML example of the page is a config the chart and the exporter accept."""
    text = (ROOT / page).read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    cfg = yaml.safe_load(block)
    assert exporter_ok(cfg)
    assert schema_ok(cfg), [e.message for e in VALIDATOR.iter_errors(cfg)]


def test_descriptions_come_from_the_config_model() -> None:
    perfmon = SCHEMA["properties"]["hosts"]["items"]["oneOf"][2]["properties"]
    assert perfmon["files"]["description"] == "perfmon source: CSV/TSV logs"
    assert SCHEMA["properties"]["diagnose"]["properties"]["history"]["default"] == 240
