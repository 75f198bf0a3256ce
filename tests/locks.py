"""Reading the lock files of requirements/ (uv pip compile output) for the tests."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements"


def _project(path: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    return project


PRODUCT = _project(ROOT / "pyproject.toml")
SIMULATOR = _project(ROOT / "sim" / "pyproject.toml")
# This repository's own distributions: `make venv` installs them editable, no lock pins them
# (pip --require-hashes refuses a local project as a requirement).
LOCAL = {canonicalize_name(PRODUCT["name"]), canonicalize_name(SIMULATOR["name"])}


def runtime_requirements() -> list[Requirement]:
    """The product's [project] dependencies: requirements/runtime.txt, what the image installs."""
    return [Requirement(r) for r in PRODUCT["dependencies"]]


def extra_requirements() -> dict[str, list[Requirement]]:
    """Each extra of the product, an extra naming others of the product's (arrow: analyze) expanded."""
    declared = {
        name: [Requirement(r) for r in reqs] for name, reqs in PRODUCT["optional-dependencies"].items()
    }

    def expand(name: str, seen: frozenset[str] = frozenset()) -> list[Requirement]:
        out: list[Requirement] = []
        for req in declared[name]:
            if canonicalize_name(req.name) not in LOCAL:
                out.append(req)
            elif name not in seen:
                for extra in sorted(req.extras):
                    out += expand(extra, seen | {name})
        return out

    return {name: expand(name) for name in declared}


def simulator_requirements() -> list[Requirement]:
    """The simulator's dependencies but this repository's own: requirements/sim.in, in dev.txt."""
    reqs = [Requirement(r) for r in SIMULATOR["dependencies"]]
    return [r for r in reqs if canonicalize_name(r.name) not in LOCAL]


_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)
_HASH = re.compile(r"^\s+--hash=sha256:([0-9a-f]{64})")


@dataclass
class Pin:
    name: str  # canonical
    version: str
    marker: Marker | None
    hashes: list[str]
    via: list[str]  # what the lock says required it: package names, or "sanlens (pyproject.toml)", "-r file"

    def applies(self, env: dict[str, str] | None = None) -> bool:
        return self.marker is None or self.marker.evaluate(env)


def parse_lock(path: Path) -> list[Pin]:
    pins: list[Pin] = []
    in_via = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := _PIN.match(line):
            marker = Marker(m.group("marker")) if m.group("marker") else None
            pins.append(Pin(canonicalize_name(m.group("name")), m.group("version"), marker, [], []))
            in_via = False
        elif (h := _HASH.match(line)) and pins:
            pins[-1].hashes.append(h.group(1))
        elif line.strip().startswith("# via"):
            rest = line.strip()[len("# via") :].strip()
            in_via = True
            if rest:
                pins[-1].via.append(rest)
        elif in_via and line.startswith("    #   "):
            pins[-1].via.append(line.strip()[1:].strip())
        elif line.strip() and not line.startswith("#") and not line.startswith("    "):
            raise AssertionError(f"{path.name}: a line that is not a pin: {line!r}")
    return pins


def pins_for(path: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """name -> version of the pins whose markers hold in ``env`` (default: this interpreter)."""
    out: dict[str, str] = {}
    for pin in parse_lock(path):
        if pin.applies(env):
            assert pin.name not in out, f"{path.name}: {pin.name} pinned twice for one environment"
            out[pin.name] = pin.version
    return out
