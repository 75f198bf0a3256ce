"""The lock files of requirements/ agree with pyproject.toml: everything pinned, hashed, nothing stale.

Offline and fast: pyproject.toml and the locks are parsed and compared; that they install a whole
environment on every supported Python and platform is tests/unit/test_lock_coverage.py. That
regenerating them gives the same bytes resolves against PyPI, whose answer for a past cut-off
changes (new wheels of old releases, yanks): that is `make lock-check`, a release step.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from tests.conftest import ROOT, skip_or_fail
from tests.locks import (
    LOCAL,
    REQUIREMENTS,
    Pin,
    extra_requirements,
    parse_lock,
    pins_for,
    runtime_requirements,
    simulator_requirements,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOCK_FILES = ("runtime.txt", "build.txt", "dev.txt")


def _load_lock_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sanlens_lock_script", ROOT / "scripts" / "lock.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lock_script = _load_lock_script()


def lock(name: str) -> list[Pin]:
    return parse_lock(REQUIREMENTS / name)


def in_file(path: Path) -> list[Requirement]:
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [Requirement(line) for line in lines if line]


def assert_pinned_within(reqs: list[Requirement], pins: list[Pin], where: str) -> None:
    by_name: dict[str, list[Pin]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).append(pin)
    for req in reqs:
        found = by_name.get(canonicalize_name(req.name))
        assert found, f"{req} (pyproject.toml) is not pinned in {where}: run `make lock`"
        for pin in found:
            assert req.specifier.contains(pin.version, prereleases=True), (
                f"{where} pins {pin.name}=={pin.version}, outside {req} of pyproject.toml: run `make lock`"
            )


@pytest.mark.parametrize("name", LOCK_FILES)
def test_every_pin_is_exact_and_hashed(name: str) -> None:
    pins = lock(name)
    assert pins
    for pin in pins:
        assert pin.hashes, f"{name}: {pin.name}=={pin.version} has no --hash"
        assert len(set(pin.hashes)) == len(pin.hashes)


def test_runtime_dependencies_are_pinned_within_their_specifiers() -> None:
    assert_pinned_within(runtime_requirements(), lock("runtime.txt"), "requirements/runtime.txt")
    assert_pinned_within(runtime_requirements(), lock("dev.txt"), "requirements/dev.txt")


@pytest.mark.parametrize("extra", sorted(extra_requirements()))
def test_each_extra_is_pinned_in_the_dev_lock(extra: str) -> None:
    assert_pinned_within(extra_requirements()[extra], lock("dev.txt"), f"requirements/dev.txt ({extra})")


def test_the_simulators_dependencies_are_pinned_in_the_dev_lock() -> None:
    """sim.in is what scripts/lock.py writes from sim/pyproject.toml: its dependencies, less the product."""
    assert (REQUIREMENTS / "sim.in").read_text(encoding="utf-8") == lock_script.sim_in(ROOT), (
        "run `make lock`"
    )
    assert {str(r) for r in in_file(REQUIREMENTS / "sim.in")} == {str(r) for r in simulator_requirements()}
    assert_pinned_within(
        simulator_requirements(), lock("dev.txt"), "requirements/dev.txt (sim/pyproject.toml)"
    )


@pytest.mark.parametrize("name", LOCK_FILES)
def test_no_lock_pins_this_repositorys_own_projects(name: str) -> None:
    assert not LOCAL & {p.name for p in lock(name)}


def test_the_runtime_lock_leaves_out_the_analyze_extra() -> None:
    """What the image installs: serve's dependencies, not analyze's (docs/container.md)."""
    analyze = {canonicalize_name(r.name) for r in extra_requirements()["analyze"]}
    assert analyze == {"numpy", "pyarrow", "tqdm"}
    assert not analyze & {p.name for p in lock("runtime.txt")}
    assert extra_requirements()["arrow"] == extra_requirements()["analyze"]  # the older name


def test_build_lock_holds_the_build_system_requirements() -> None:
    build_in = {str(r) for r in in_file(REQUIREMENTS / "build.in")}
    for req in PYPROJECT["build-system"]["requires"]:
        assert str(Requirement(req)) in build_in, f"[build-system] {req} is not in requirements/build.in"
    backend = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    assert_pinned_within(backend, lock("build.txt"), "requirements/build.txt")
    assert_pinned_within(in_file(REQUIREMENTS / "build.in"), lock("build.txt"), "requirements/build.txt")
    assert_pinned_within(in_file(REQUIREMENTS / "tools.in"), lock("dev.txt"), "requirements/dev.txt")


def _roots(name: str) -> dict[str, set[str]]:
    """What each lock's roots may be: via annotation -> the names allowed to carry it."""
    runtime = {canonicalize_name(r.name) for r in runtime_requirements()}
    extras = {canonicalize_name(r.name) for reqs in extra_requirements().values() for r in reqs}
    build = {canonicalize_name(r.name) for r in in_file(REQUIREMENTS / "build.in")}
    tools = {canonicalize_name(r.name) for r in in_file(REQUIREMENTS / "tools.in")}
    sim = {canonicalize_name(r.name) for r in simulator_requirements()}
    return {
        "runtime.txt": {"sanlens (pyproject.toml)": runtime},
        "build.txt": {"-r requirements/build.in": build},
        "dev.txt": {
            "sanlens (pyproject.toml)": runtime | extras,
            "-r requirements/build.in": build,
            "-r requirements/tools.in": tools,
            "-r requirements/sim.in": sim,
        },
    }[name]


@pytest.mark.parametrize("name", LOCK_FILES)
def test_nothing_stale(name: str) -> None:
    """Every pin is there because a current input asks for it, directly or through another pin."""
    pins = lock(name)
    roots = _roots(name)
    names = {p.name for p in pins}
    required_by: dict[str, set[str]] = {}
    for pin in pins:
        assert pin.via, f"{name}: {pin.name} says nothing of why it is there"
        for via in pin.via:
            if via.startswith("-c "):
                continue  # a constraint pins a version, it does not require anything
            if via in roots:
                assert pin.name in roots[via], (
                    f"{name}: {pin.name} is marked as required by {via}, which no longer asks for it: "
                    "run `make lock`"
                )
                required_by.setdefault(pin.name, set()).add(via)
                continue
            assert canonicalize_name(via) in names, f"{name}: {pin.name} via {via!r}, which is not pinned"
            required_by.setdefault(pin.name, set()).add(canonicalize_name(via))
    # reachable from a root through the via graph
    reached = {n for n, by in required_by.items() if by & set(roots)}
    while True:
        more = {n for n, by in required_by.items() if n not in reached and by & reached}
        if not more:
            break
        reached |= more
    assert reached == names, f"{name}: pinned for nothing current: {sorted(names - reached)}"
    for via, allowed in roots.items():
        carried = {p.name for p in pins if via in p.via}
        assert allowed <= carried, f"{name}: {sorted(allowed - carried)} of {via} are not pinned as such"


def test_the_dev_lock_uses_the_runtime_and_build_pins() -> None:
    dev = {(p.name, str(p.marker)): p.version for p in lock("dev.txt")}
    for other in ("runtime.txt", "build.txt"):
        for pin in lock(other):
            key = (pin.name, str(pin.marker))
            same = [v for (n, _), v in dev.items() if n == pin.name]
            assert same, f"dev.txt lacks {pin.name} of {other}"
            assert dev.get(key, pin.version) == pin.version and pin.version in same, (
                f"dev.txt pins {pin.name} {same}, {other} pins {pin.version}"
            )


@pytest.mark.parametrize("entry", lock_script.locks(), ids=lambda e: e.output)
def test_each_header_is_the_command_of_the_lock_script(entry: Any) -> None:
    """The header is what Renovate re-runs: the script's command minus the flags uv leaves out of it."""
    output = entry.output
    header = (ROOT / output).read_text(encoding="utf-8").splitlines()[:2]
    args = [a for a in lock_script.command(entry) if a not in ("--quiet", "--upgrade")]
    assert header == [
        "# This file was autogenerated by uv via the following command:",
        "#    uv " + " ".join(args),
    ]
    assert "--exclude-newer" not in header[1]  # passed as UV_EXCLUDE_NEWER, see scripts/lock.py


def test_exclude_newer_is_one_timestamp() -> None:
    text = (REQUIREMENTS / "EXCLUDE_NEWER").read_text(encoding="utf-8")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", text), text
    assert lock_script.parse_timestamp(text.strip()).tzinfo == dt.UTC


def test_the_lock_script_refuses_a_cut_off_in_the_future() -> None:
    """A future cut-off would let the next resolution see newer releases: not reproducible."""
    now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    assert lock_script.parse_timestamp("2026-11-27T11:59:59Z", now=now) < now
    with pytest.raises(ValueError, match="in the future"):
        lock_script.parse_timestamp("2026-11-27T12:00:01Z", now=now)


def test_the_venv_runs_the_locked_uv() -> None:
    uv = Path(sys.executable).parent / "uv"
    if not uv.is_file():
        skip_or_fail("uv is not in the venv (requirements/tools.in; run `make venv`)")
    out = subprocess.run(
        [str(uv), "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert out.split()[:2] == ["uv", pins_for(REQUIREMENTS / "dev.txt")["uv"]]


def test_make_installs_from_the_lock_with_hashes_and_reinstalls_when_it_changes() -> None:
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    stamp_rule = re.search(r"^\$\(STAMP\):(.*)$", make, flags=re.M)
    assert stamp_rule, "no $(STAMP) rule"
    assert "$(LOCKS)" in stamp_rule.group(1) and "pyproject.toml" in stamp_rule.group(1)
    assert re.search(r"^LOCKS := .*requirements/dev\.txt", make, flags=re.M)
    assert re.search(r"^STAMP := .*\$\(LOCKS\)", make, flags=re.M), "the stamp's name must hash the locks"
    recipe = make[stamp_rule.end() : make.index("\n\n", stamp_rule.end())]
    assert re.search(r"install --require-hashes .*-r requirements/dev\.txt", recipe), recipe
    assert re.search(r"install --no-deps --no-build-isolation -e \.", recipe), recipe
    # the simulator after the product it depends on, alone too: no lock pins either
    assert re.search(r"-e \.\n.*install --no-deps --no-build-isolation -e sim\n", recipe), recipe
    assert "--upgrade pip" not in recipe


def test_renovate_covers_every_lock_and_the_dockerfile() -> None:
    import json

    config = json.loads((ROOT / "renovate.json").read_text(encoding="utf-8"))
    assert {"pip-compile", "dockerfile"} <= set(config["enabledManagers"])
    (pattern,) = config["pip-compile"]["managerFilePatterns"]
    regex = re.compile(pattern.strip("/"))
    outputs = [entry.output for entry in lock_script.locks()]
    assert all(regex.search(o) for o in outputs), outputs
    assert not any(regex.search(f"requirements/{n}") for n in ("build.in", "tools.in", "EXCLUDE_NEWER"))
    assert config["dockerfile"]["pinDigests"] is True
    # Renovate reads the base from the ARG default that every FROM names (its dockerfile manager
    # substitutes ARG defaults into FROM): the digest stays in that one place
    assert re.search(r"^ARG BASE_IMAGE=\S+@sha256:[0-9a-f]{64}$", (ROOT / "Dockerfile").read_text(), re.M)
