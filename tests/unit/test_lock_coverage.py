"""The locks install a whole environment on every Python and platform sanlens supports.

Offline: each lock is read for one target environment at a time (its markers evaluated as that
interpreter would), and the requirement graph is walked from the lock's roots through the
metadata of the distributions the dev venv installed from these very pins. Every dependency
found must be pinned, once, within its specifier. Nothing here resolves against a registry:
whether `make lock` would write the same bytes today is `make lock-check`, a release step.
"""

from __future__ import annotations

import importlib.metadata as md
import tomllib
from dataclasses import dataclass

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from tests.conftest import ROOT
from tests.locks import (
    REQUIREMENTS,
    Pin,
    extra_requirements,
    parse_lock,
    runtime_requirements,
    simulator_requirements,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
"""CPython minor versions covered: requires-python's floor up to the newest release."""


@dataclass(frozen=True)
class Platform:
    name: str
    sys_platform: str
    platform_system: str
    platform_machine: str
    os_name: str


PLATFORMS = (
    Platform("linux-x86_64", "linux", "Linux", "x86_64", "posix"),  # the image, CI
    Platform("linux-aarch64", "linux", "Linux", "aarch64", "posix"),  # the image on arm64 nodes
    Platform("macos-arm64", "darwin", "Darwin", "arm64", "posix"),  # engineers' laptops (analyze)
    Platform("windows-amd64", "win32", "Windows", "AMD64", "nt"),  # analyze beside PerfMon logs
)


def environment(python: str, platform: Platform) -> dict[str, str]:
    """The marker environment of CPython ``python`` on ``platform`` (PEP 508 names)."""
    full = f"{python}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": platform.os_name,
        "platform_machine": platform.platform_machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": platform.platform_system,
        "platform_version": "",
        "python_full_version": full,
        "python_version": python,
        "sys_platform": platform.sys_platform,
    }


ENVIRONMENTS = [(py, p) for py in PYTHONS for p in PLATFORMS]


def _reqs(items: list[str]) -> list[Requirement]:
    return [Requirement(r) for r in items]


def _in_file(name: str) -> list[Requirement]:
    lines = (REQUIREMENTS / name).read_text(encoding="utf-8").splitlines()
    return _reqs([s for s in (line.split("#", 1)[0].strip() for line in lines) if s])


def roots(lock: str) -> list[Requirement]:
    """What each lock is made from (scripts/lock.py): its root requirements."""
    runtime = runtime_requirements()
    extras = [r for reqs in extra_requirements().values() for r in reqs]
    return {
        "runtime.txt": runtime,
        "build.txt": _in_file("build.in"),
        "dev.txt": runtime + extras + _in_file("build.in") + _in_file("tools.in") + simulator_requirements(),
    }[lock]


def pinned(pins: list[Pin], env: dict[str, str], lock: str) -> dict[str, str]:
    """name -> version in ``env``; a package pinned twice for one environment is an error."""
    out: dict[str, str] = {}
    for pin in pins:
        if pin.applies(env):
            assert pin.name not in out, (
                f"{lock}: {pin.name} is pinned twice ({out[pin.name]}, {pin.version}) for {env['sys_platform']} "
                f"Python {env['python_version']}"
            )
            out[pin.name] = pin.version
    return out


def _metadata(name: str, version: str) -> list[Requirement] | None:
    """The requirements of ``name`` at ``version`` as installed in this venv, or None when not here."""
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        return None
    if dist.version != version:
        return None
    return _reqs(dist.requires or [])


def _wanted(req: Requirement, env: dict[str, str], extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({**env, "extra": e}) for e in ({""} | extras))


def walk(lock: str, env: dict[str, str], lines: list[Pin] | None = None) -> tuple[set[str], list[str]]:
    """Every package the lock's roots need in ``env`` (names read), and what is wrong on the way."""
    pins = pinned(parse_lock(REQUIREMENTS / lock) if lines is None else lines, env, lock)
    problems: list[str] = []
    seen: dict[str, set[str]] = {}
    queue = [(r, "the lock's inputs") for r in roots(lock) if _wanted(r, env, set())]
    read: set[str] = set()
    while queue:
        req, by = queue.pop()
        name = canonicalize_name(req.name)
        version = pins.get(name)
        if version is None:
            problems.append(f"{name} (needed by {by}) is not pinned")
            continue
        if not SpecifierSet(str(req.specifier)).contains(version, prereleases=True):
            problems.append(f"{name}=={version} is outside {req} (needed by {by})")
        extras = {canonicalize_name(e) for e in req.extras}
        if name in seen and extras <= seen[name]:
            continue
        seen[name] = seen.get(name, set()) | extras
        requires = _metadata(name, version)
        if requires is None:
            continue  # pinned for another Python or platform than this venv's: its pins are checked above
        read.add(name)
        for dep in requires:
            if _wanted(dep, env, seen[name]):
                queue.append((dep, f"{name}=={version}"))
    problems += [f"{n}=={v} is pinned but nothing here needs it" for n, v in pins.items() if n not in seen]
    return read, problems


@pytest.mark.parametrize("lock", ["runtime.txt", "build.txt", "dev.txt"])
@pytest.mark.parametrize(
    ("python", "platform"), ENVIRONMENTS, ids=[f"py{p}-{q.name}" for p, q in ENVIRONMENTS]
)
def test_each_lock_installs_a_whole_environment(lock: str, python: str, platform: Platform) -> None:
    read, problems = walk(lock, environment(python, platform))
    assert not problems, f"{lock} on {platform.name}, Python {python}:\n" + "\n".join(sorted(problems))
    # the walk read real metadata (all but what this venv's platform does not install), not passed for want of it
    assert len(read) >= len(pinned(parse_lock(REQUIREMENTS / lock), environment(python, platform), lock)) - 3


def test_the_walk_sees_a_missing_pin_and_a_pin_outside_its_specifier() -> None:
    """The check can fail: runtime.txt without idna (requests needs it), or with an old urllib3."""
    env = environment("3.11", PLATFORMS[0])
    pins = parse_lock(REQUIREMENTS / "runtime.txt")
    assert walk("runtime.txt", env, pins)[1] == []
    _, problems = walk("runtime.txt", env, [p for p in pins if p.name != "idna"])
    assert any(p.startswith("idna (needed by requests==") for p in problems), problems
    stale = [Pin(p.name, "1.0", p.marker, p.hashes, p.via) if p.name == "urllib3" else p for p in pins]
    _, problems = walk("runtime.txt", env, stale)
    assert any(p.startswith("urllib3==1.0 is outside urllib3") for p in problems), problems


def test_the_environments_span_requires_python() -> None:
    """The oldest Python covered is requires-python's floor, the one scripts/lock.py compiles for."""
    spec = SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert all(spec.contains(f"{p}.0") for p in PYTHONS)
    assert not spec.contains(f"{PYTHONS[0][:-2]}{int(PYTHONS[0].split('.')[1]) - 1}.0")
    header = (REQUIREMENTS / "runtime.txt").read_text(encoding="utf-8").splitlines()[1]
    assert "--universal" in header and f"--python-version={PYTHONS[0]}" in header
