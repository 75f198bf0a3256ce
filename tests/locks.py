"""Reading the lock files of requirements/ (uv pip compile output) for the tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements"
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
