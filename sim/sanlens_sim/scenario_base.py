"""What every scenario is made of: its knobs, the ONTAP versions, the CPU domain loads, and the
healthy building blocks (a balanced aggregate, a healthy host) the field cases stand beside.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from sanlens.model import parse_ontap_version
from sanlens_sim.builder import Builder
from sanlens_sim.world import HEALTHY_DOMAINS, Aggregate, Host, Node, Volume

CLUSTER = "sanlens-sim"
MODERN = (9, 12, 1)
LEGACY = (9, 8, 0)
ASA_R2 = (9, 16, 1)  # the first ONTAP release of the ASA r2 systems' storage-unit model

# Kahuna (serial domain) at 90 % of one core, 30 % average over 8 CPUs: Σ busy = 240.
KAHUNA_DOMAINS = {
    "kahuna": 90.0,
    "wafl_exempt": 60.0,
    "exempt": 20.0,
    "target": 20.0,
    "storage": 10.0,
    "raid": 10.0,
    "hostOS": 10.0,
    "nwk_exempt": 15.0,
    "protocol": 5.0,
}
# too-few-luns: 35 % average over 8 CPUs (Σ 280), no serial domain near saturation.
BUSY_PARALLEL_DOMAINS = {
    "kahuna": 25.0,
    "wafl_exempt": 110.0,
    "exempt": 30.0,
    "target": 50.0,
    "storage": 20.0,
    "raid": 15.0,
    "hostOS": 10.0,
    "nwk_exempt": 10.0,
    "protocol": 10.0,
}
QUIET_DOMAINS = {k: v / 3.0 for k, v in HEALTHY_DOMAINS.items()}


class KnobError(ValueError):
    """A bad scenario name or knob value (the control API answers 400 with this message)."""


@dataclass
class Knobs:
    nodes: int | None = None
    luns: int | None = None
    volumes: int | None = None
    disks: int | None = None
    hosts: int | None = None
    fa_ports: int | None = None
    ontap_version: str | None = None
    rebuild_after_s: float | None = None
    rebuild_rate_pct_s: float | None = None

    SCALE = ("nodes", "luns", "volumes", "disks", "hosts")

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Knobs:
        """Validated knobs; unknown names or bad values raise :class:`KnobError`."""
        unknown = sorted(set(raw) - set(cls.names()))
        if unknown:
            raise KnobError(f"unknown knob(s) {unknown}; known: {cls.names()}")
        out = cls()
        for name, value in raw.items():
            if value is None:
                continue
            if name == "ontap_version":
                parse_version(str(value))
                setattr(out, name, str(value))
            elif name in ("rebuild_after_s", "rebuild_rate_pct_s"):
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise KnobError(f"{name} must be a number >= 0, got {value!r}")
                if name == "rebuild_rate_pct_s" and value <= 0:
                    raise KnobError("rebuild_rate_pct_s must be > 0")
                setattr(out, name, float(value))
            else:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise KnobError(f"{name} must be an integer, got {value!r}")
                lo, hi = (1, 64) if name == "fa_ports" else (0, 1_000_000)
                if not lo <= value <= hi:
                    raise KnobError(f"{name} must be in {lo}..{hi}, got {value}")
                setattr(out, name, value)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self.names() if getattr(self, n) is not None}


def parse_version(text: str) -> tuple[int, int, int]:
    v = parse_ontap_version(text)
    if v is None or v.generation != 9:
        raise KnobError(f"ontap_version must look like 9.8.0, got {text!r}")
    return (v.generation, v.major, v.minor)


def builder_for(k: Knobs, default: tuple[int, int, int]) -> Builder:
    return Builder(CLUSTER, parse_version(k.ontap_version) if k.ontap_version else default)


def balanced(b: Builder, node: Node, prefix: str, ops: float = 2500.0, vols: int = 4) -> Aggregate:
    """A healthy SSD aggregate: 12 disks ~25 % busy, ``vols`` equal volumes."""
    a = b.aggregate(node, [(12, 0.25)])
    for i in range(vols):
        b.volume(a, f"{prefix}_vol{i + 1}", ops, lat_ms=(0.6, 0.9))
    return a


def healthy_host(b: Builder, name: str, vols: list[Volume]) -> Host:
    h = b.host(name)
    for v in vols:
        lun = b.luns_of(v)[0]
        b.host_disk(h, lun, (lun.io.read_lat_us / 1000 + 0.35, lun.io.write_lat_us / 1000 + 0.35), 0.85, 1.0)
    return h


def volumes_named(b: Builder, prefix: str) -> list[Volume]:
    return [v for v in b.volumes if v.name.startswith(prefix)]
