"""The engine's findings on recorded inputs are the committed ones (tests/golden_findings.py).

Every scenario of the simulator, every real capture under tests/data and a seeded 64-disk PerfMon
log: a change that makes the engine faster must not change what it finds, when, or with what
evidence. Rewrite the file only for a change meant to alter findings, and review its diff.
"""

from __future__ import annotations

import json

import golden_findings


def test_the_engine_finds_what_it_found_on_the_recorded_inputs() -> None:
    want = json.loads(golden_findings.GOLDEN.read_text(encoding="utf-8"))
    got = json.loads(golden_findings.render())
    assert sum(len(f) for polls in want["scenarios"].values() for f in polls) > 50, "a golden with findings"
    for name, polls in want["scenarios"].items():
        for i, (a, b) in enumerate(zip(got["scenarios"][name], polls, strict=True)):
            assert a == b, f"scenario {name}, evaluation {i + 1}: findings changed (tests/golden_findings.py)"
    assert got["captures"] == want["captures"]
    assert got["generated"] == want["generated"]
    assert set(got["scenarios"]) == set(want["scenarios"])
