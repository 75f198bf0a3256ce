"""`sanlens demo` prints each finding as it rises, changes severity or clears."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sanlens import demo


class _Engine:
    def __init__(self, rounds: list[list[dict[str, Any]]], done: threading.Event) -> None:
        self.rounds, self.done, self.reads = rounds, done, 0

    def findings(self) -> list[dict[str, Any]]:
        out = self.rounds[min(self.reads, len(self.rounds) - 1)]
        self.reads += 1
        if self.reads >= len(self.rounds):
            self.done.set()
        return out


class _Exporter:
    def __init__(self, rounds: list[list[dict[str, Any]]]) -> None:
        self.stop_event = threading.Event()
        self.engine = _Engine(rounds, self.stop_event)


def _finding(did: str, severity: str, **subject: str) -> dict[str, Any]:
    return {"id": did, "severity": severity, "title": f"{did} title", "subject": subject}


def test_the_feed_prints_rises_changes_and_clears_once_each(capsys: pytest.CaptureFixture[str]) -> None:
    lun = {"cluster": "c1", "svm": "s1", "volume": "v1", "lun": "/vol/v1/l1"}
    warn = _finding("latency_slo", "warning", **lun)
    crit = _finding("latency_slo", "critical", **lun)
    node = _finding("cpu_domain_serial_bottleneck", "critical", cluster="c1", node="n2")
    rounds = [[], [warn], [warn], [crit, node], [node], [node]]
    exporter = _Exporter(rounds)
    demo._feed(exporter, every=0.001)  # type: ignore[arg-type]
    lines = [ln.split(" ", 3)[-1] for ln in capsys.readouterr().out.splitlines()]
    assert lines == [
        "warning   latency_slo  c1 s1 /vol/v1/l1: latency_slo title",
        "critical  cpu_domain_serial_bottleneck  c1 n2: cpu_domain_serial_bottleneck title",
        "critical  latency_slo  c1 s1 /vol/v1/l1: latency_slo title",
        "cleared   latency_slo  c1 s1 /vol/v1/l1",
    ]
