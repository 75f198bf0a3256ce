"""Checks across the inputs of one `sanlens analyze` run that no single reader can make.

A host log and an array capture join only where their times overlap, and a
``--config`` mapping joins only the hosts and disks it names. When either does
not hold, the run still succeeds but silently judges host-only: these checks
say why, on stderr and in each input's ``status.warnings``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sanlens.analyze.analysis import Analysis
from sanlens.analyze.linux_inputs import LinuxInput
from sanlens.analyze.ontap_inputs import LOCAL_TIME_KINDS, OntapInput
from sanlens.analyze.perfmon_summary import LogSummary
from sanlens.analyze.time_zones import hours, offset_text
from sanlens.hosts.mapping import normalize_drive
from sanlens.model import iso_utc

if TYPE_CHECKING:
    from sanlens.config import Config

SLACK_S = 120.0  # spans this close still share an interval of the join


@dataclass
class RunWarning:
    text: str
    inputs: list[Analysis] = field(default_factory=list)  # whose status carries it


# ------------------------------------------------------------------ time
def _span(r: Analysis) -> tuple[float, float] | None:
    d = r.detail
    if isinstance(d, OntapInput) and d.kind == "ontap-counter-schema":
        return None
    if isinstance(d, LogSummary | LinuxInput | OntapInput):
        start, end = d.start, d.end
        if start is not None and end is not None:
            return float(start), float(end)
    return None


def _zoneless(r: Analysis) -> bool:
    """An input whose times are a wall clock read as UTC, with no zone given for it."""
    d = r.detail
    if isinstance(d, OntapInput):
        placed_by_file = d.placed is not None and d.given_start is None
        zoned = d.facts is not None and d.facts.zoned
        return d.kind in LOCAL_TIME_KINDS and d.zone is None and not placed_by_file and not zoned
    return isinstance(d, LinuxInput) and not d.placed and not r.input.get("zone")


def _names(rs: Iterable[Analysis]) -> str:
    names = [str(r.input.get("path")) for r in rs]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def time_overlap(results: list[Analysis]) -> list[RunWarning]:
    """A warning when ONTAP captures cover no time that any host input covers (nothing can join them)."""
    host = [(r, s) for r in results if isinstance(r.detail, LogSummary | LinuxInput) and (s := _span(r))]
    array = [(r, s) for r in results if isinstance(r.detail, OntapInput) and (s := _span(r))]
    lonely = [
        (r, (a0, a1))
        for r, (a0, a1) in array
        if not any(max(h0, a0) <= min(h1, a1) + SLACK_S for _, (h0, h1) in host)
    ]
    if not host or not lonely:
        return []
    h0, h1 = min(s[0] for _, s in host), max(s[1] for _, s in host)
    a0, a1 = min(s[0] for _, s in lonely), max(s[1] for _, s in lonely)
    apart = a0 - h0
    text = (
        f"host and array inputs do not overlap in time, {hours(apart)} apart: host "
        f"{_names(r for r, _ in host)} {iso_utc(h0)} .. {iso_utc(h1)}, ONTAP {_names(r for r, _ in lonely)} "
        f"{iso_utc(a0)} .. {iso_utc(a1)}; no host disk is joined to "
        f"{'their' if len(lonely) > 1 else 'its'} data"
    )
    sides = [r for r, _ in lonely]
    text += (
        _file_time_hint(sides)
        or _zone_hint(sides, apart)
        or _zone_hint([r for r, _ in host], -apart)
        or ": check that the captures were taken at the same time"
    )
    return [RunWarning(text, [r for r, _ in host] + sides)]


def _file_time_hint(side: list[Analysis]) -> str:
    placed = [
        r
        for r in side
        if isinstance(r.detail, OntapInput) and r.detail.placed is not None and r.detail.given_start is None
    ]
    if not placed:
        return ""
    first = str(placed[0].input.get("path"))
    return (
        f". {_names(placed)} {'are' if len(placed) > 1 else 'is'} placed by the file's modification time: "
        f"pass --input-start {first}=YYYY-MM-DDTHH:MM:SS (its first sample)"
    )


def _zone_hint(side: list[Analysis], apart: float) -> str:
    """What to pass when ``side``'s zone-less clock, ``apart`` s off the other side, is a zone's offset."""
    zoneless = [r for r in side if _zoneless(r)]
    half_hours = round(apart / 1800)
    if not zoneless or not half_hours or abs(half_hours) > 28:
        return ""
    off = offset_text(half_hours * 1800)
    first = str(zoneless[0].input.get("path"))
    verb = "print" if len(zoneless) > 1 else "prints"
    return (
        f". {_names(zoneless)} {verb} local time, read as UTC: if that clock runs {hours(apart)} "
        f"{'behind' if apart < 0 else 'ahead of'} UTC, give --tz={off} (or --input-tz {first}={off}, "
        "or its zone's name such as America/Los_Angeles)"
    )


# ---------------------------------------------------------------- config
def _hosts(
    results: list[Analysis],
) -> dict[str, tuple[str, list[Analysis], set[tuple[str, tuple[str, ...]]]]]:
    """Hosts of the inputs (upper-cased) -> (as spelled, their inputs, their PerfMon disks)."""
    out: dict[str, tuple[str, list[Analysis], set[tuple[str, tuple[str, ...]]]]] = {}
    for r in results:
        d = r.detail
        if isinstance(d, LogSummary) and d.intervals:
            for host, disk, drives, _f in d.intervals.columns:
                if host:
                    entry = out.setdefault(host.upper(), (host, [], set()))
                    if r not in entry[1]:
                        entry[1].append(r)
                    entry[2].add((disk, drives))
        elif isinstance(d, LinuxInput):
            entry = out.setdefault(d.host.upper(), (d.host, [], set()))
            if r not in entry[1]:
                entry[1].append(r)
    return out


def _near(word: str, choices: Iterable[str]) -> str | None:
    by_upper = {c.upper(): c for c in choices}
    got = difflib.get_close_matches(word.upper(), list(by_upper), n=1, cutoff=0.6)
    return by_upper[got[0]] if got else None


def config_misses(config: Config | None, results: list[Analysis]) -> list[RunWarning]:
    """Config hosts and disk entries that match nothing in the inputs (host names match case-insensitively).

    A config host absent from the inputs is reported only while some input host has no
    config entry (one config serves a fleet; a run reads a few of its hosts). A disk entry
    is checked against the disks of a PerfMon log (Linux disks also match by aliases
    and WWIDs the capture does not show).
    """
    if config is None:
        return []
    hosts = _hosts(results)
    if not hosts:
        return []
    named = {t.name.upper() for t in config.hosts}
    unnamed = [spelled for key, (spelled, _, _) in hosts.items() if key not in named]
    out: list[RunWarning] = []
    for i, t in enumerate(config.hosts):
        key = t.name.upper()
        if key not in hosts:
            if not unnamed:
                continue
            near = _near(t.name, unnamed)
            text = (
                f"config hosts[{i}] {t.name!r} matches no host in the inputs ({', '.join(sorted(unnamed))})"
            )
            text += f": did you mean {near!r}?" if near else "."
            text += f" Its {len(t.disks)} disk mapping(s) map nothing" if t.disks else ""
            target = hosts[near.upper()][1] if near else [r for h in unnamed for r in hosts[h.upper()][1]]
            out.append(RunWarning(text, list({id(r): r for r in target}.values())))
            continue
        spelled, inputs, disks = hosts[key]
        if not disks:
            continue
        names = {disk for disk, _ in disks}
        drives = {normalize_drive(d) for _, dr in disks for d in dr}
        labels = sorted(f"{disk} {' '.join(dr)}".strip() for disk, dr in disks)
        for j, entry in enumerate(t.disks):
            if entry.disk is not None and entry.disk.strip() in names:
                continue
            if entry.drive is not None and normalize_drive(entry.drive) in drives:
                continue
            what = f"disk {entry.disk!r}" if entry.disk is not None else f"drive {entry.drive!r}"
            wanted = entry.disk if entry.disk is not None else entry.drive or ""
            near = _near(wanted, names | drives)
            text = (
                f"config hosts[{i}] ({t.name}) disks[{j}] {what} matches no disk of {spelled} in the inputs "
                f"(disks: {', '.join(labels)})"
            )
            text += f": did you mean {near!r}?" if near else "."
            text += " It maps nothing: those disks are judged host-only"
            out.append(RunWarning(text, list(inputs)))
    return out
