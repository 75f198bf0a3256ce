"""windows_exporter ``/metrics`` → ``DiskReading``s.

Uses the ``physical_disk`` collector (label ``disk`` = disk number; releases before
0.30 wrote the PerfMon instance, ``"1 E:"``), ``windows_logical_disk_info`` for
drive letters (its ``disk`` label lists disk numbers joined by ``;``), and our
textfile-collector families ``sanlens_windows_disk_info`` for LUN serials, which
windows_exporter itself does not expose, and ``sanlens_windows_disk_paths`` for
MPIO paths, by ALUA state where the script writes one (docs/hosts-windows.md).

``windows_physical_disk_read_seconds_total`` is % Disk Read Time
(PERF_PRECISION_100NS_TIMER, uint64, 100 ns units scaled by 1e-7): the integral of the
read queue length, not busy time. By Little's law its increase over the reads'
increase is the mean read latency, and it never wraps, so latency is taken from
it; ``read_latency_seconds_total`` (the uint32 Avg. Disk sec/Read numerator, which
wraps every 429.5/N s at N reads outstanding) is the fallback.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from sanlens.hosts.catalogue import WINDOWS_EXPORTER
from sanlens.hosts.cooking import DiskReading
from sanlens.hosts.mapping import normalize_drive

COLLECTORS = ("logical_disk", "physical_disk", "textfile")
Sample = tuple[str, dict[str, str], float]

# family -> DiskReading field, from the catalogue that also gives each counter's width
_FIELDS = WINDOWS_EXPORTER.fields()
SERIAL_FAMILY = "sanlens_windows_disk_info"
PATHS_FAMILY = "sanlens_windows_disk_paths"
# ALUA states of MPIO paths (MPIO_DSM_Path_V2.TargetPortGroup_State; mpclaim prints Active/Optimized,
# Active/Unoptimized, Standby, Unavailable, Transitioning): those that count as the disk's paths
OPTIMIZED = "active_optimized"
ACTIVE_STATES = frozenset({"active_optimized", "active_unoptimized"})
# every family read here: what a Prometheus-backed host asks its query API for
FAMILIES = (*_FIELDS, "windows_logical_disk_info", SERIAL_FAMILY, PATHS_FAMILY)


class ScrapeParseError(ValueError):
    pass


def _is_drive(volume: str) -> bool:
    return (len(volume) == 2 and volume[1] == ":" and volume[0].isalpha()) or ":\\" in volume


def _usable(name: str, disk: str, value: float) -> float:
    """A sample value a counter or a path count can hold: finite and within float range."""
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v) or abs(v) > 1e300:
        raise ScrapeParseError(f"{name}{{disk={disk!r}}}: not a usable number")
    return v


def text_samples(text: str) -> list[Sample]:
    """(name, labels, value) of every sample of a Prometheus text page; ValueError when it is none.

    A page with the same series twice is refused whole: an exporter never writes one (its client
    library refuses to), so it is two pages run together or a broken textfile, and which of the two
    values is this host's cannot be told. The parser's words are clipped: they quote the line."""
    try:
        families = list(text_string_to_metric_families(text.lstrip("\ufeff")))
    except (ValueError, TypeError, IndexError, OverflowError) as e:
        raise ValueError(_clip(str(e))) from None
    out = [(s.name, s.labels, s.value) for fam in families for s in fam.samples]
    seen: set[tuple[str, frozenset[tuple[str, str]]]] = set()
    for name, labels, _ in out:
        key = (name, frozenset(labels.items()))
        if key in seen:
            raise ValueError(f"the series {_clip(name, 100)} appears twice with the same labels")
        seen.add(key)
    return out


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_scrape(text: str) -> list[DiskReading]:
    """Disks of one scrape, sorted by disk number; ``_Total`` is skipped."""
    try:
        samples = text_samples(text)
    except (ValueError, TypeError, IndexError, OverflowError) as e:
        raise ScrapeParseError(f"not Prometheus text format: {e}") from None
    return disk_readings(samples)


def disk_readings(samples: Iterable[Sample]) -> list[DiskReading]:
    """Disks of one scrape's samples (a page, or the same series read back from Prometheus)."""
    values: dict[str, dict[str, Any]] = defaultdict(dict)
    drives: dict[str, set[str]] = defaultdict(set)
    serials: dict[str, str] = {}
    paths: dict[str, int] = {}
    by_state: dict[str, dict[str, int]] = defaultdict(dict)
    for name, labels, value in samples:
        field = _FIELDS.get(name)
        if field is not None:
            instance = labels.get("disk", "")
            number, _, rest = instance.partition(" ")
            if not number or number == "_Total":
                continue
            values[number][field] = _usable(name, instance, value)
            for d in rest.split():
                if _is_drive(d):
                    drives[number].add(normalize_drive(d))
        elif name == "windows_logical_disk_info":
            volume = labels.get("volume", "")
            if _is_drive(volume):
                for number in filter(None, labels.get("disk", "").split(";")):
                    drives[number.strip()].add(normalize_drive(volume))
        elif name == SERIAL_FAMILY:
            number = labels.get("disk", "").strip()
            if number:
                serials[number] = labels.get("serial_number", "").strip()
        elif name == PATHS_FAMILY:
            number = labels.get("disk", "").strip()
            state = labels.get("state", "").strip().lower()
            if not number:
                continue
            count = _usable(name, number, value)
            if state:
                by_state[number][state] = max(int(count), 0)
            elif count >= 1:
                paths[number] = int(count)
    optimized: dict[str, int] = {}
    for number, states in by_state.items():
        optimized[number] = states.get(OPTIMIZED, 0)
        active = sum(n for st, n in states.items() if st in ACTIVE_STATES)
        if active >= 1:
            paths[number] = active
    return [
        DiskReading(
            disk=n,
            drives=tuple(sorted(drives.get(n, ()))),
            serial=serials.get(n, ""),
            paths=paths.get(n),
            optimized_paths=optimized.get(n),
            **values[n],
        )
        for n in sorted(values, key=lambda x: (len(x), x))
    ]
