"""The host sources the runtime can build are exactly the ones the config accepts."""

from __future__ import annotations

import typing

import pytest

from sanlens.config.load import load_config_text
from sanlens.config.models import HOST_MODELS, HostSource
from sanlens.hosts.registry import SOURCES, make_host_source


def test_every_configurable_source_has_a_class_and_every_class_a_config_model() -> None:
    assert set(SOURCES) == set(HOST_MODELS) == set(typing.get_args(HostSource))


@pytest.mark.parametrize(
    ("source", "extra"),
    [
        ("windows_exporter", ""),
        ("node_exporter", ""),
        ("perfmon", "    files: [a.csv]\n"),
        ("prometheus", '    exporter: node_exporter\n    selector: instance="h1:9100"\n'),
    ],
)
def test_a_validated_host_builds_the_source_of_its_kind(source: str, extra: str) -> None:
    cfg = load_config_text(f"hosts:\n  - name: h1\n    source: {source}\n    url: http://h1:9100\n{extra}")
    built = make_host_source(cfg.hosts[0])
    try:
        assert type(built) is SOURCES[source]
        assert built.kind == source
    finally:
        built.close()
