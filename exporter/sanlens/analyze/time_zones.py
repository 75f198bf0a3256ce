"""Time zones of `sanlens analyze` inputs that print local time without saying which.

ONTAP CLI text (``Start-time: 3/2/2025 10:00:00``) and Linux iostat/sar text print
the clock of the machine that wrote them; their readers return it as if it were
UTC. ``--tz`` / ``--input-tz`` name the real zone, and the timestamps are moved
here, after reading, so the readers stay zone-free. PerfMon logs carry their own
zone (the header's bias) and are never moved.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo

from sanlens.errors import SanlensError

_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.I)


def parse_zone(text: str) -> dt.tzinfo:
    """An IANA name (``America/Los_Angeles``), ``UTC``, or a UTC offset (``-08:00``, ``+0530``, ``UTC-8``)."""
    t = text.strip()
    if t.upper() in ("UTC", "Z", "GMT"):
        return dt.UTC
    m = _OFFSET.match(t)
    if m:
        hours, minutes = int(m[2]), int(m[3] or 0)
        if hours > 14 or minutes >= 60:
            raise SanlensError(f"time zone {text!r}: offsets lie within -14:00 .. +14:00")
        delta = dt.timedelta(hours=hours, minutes=minutes)
        return dt.timezone(-delta if m[1] == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(t)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SanlensError(
            f"time zone {text!r} is not known: give an IANA name such as America/Los_Angeles or "
            "Europe/Berlin, UTC, or an offset such as -08:00"
        ) from None


def zone_name(zone: dt.tzinfo) -> str:
    return getattr(zone, "key", None) or str(zone)


def localize(t: float, zone: dt.tzinfo) -> float:
    """``t`` read as UTC but really the wall clock of ``zone`` -> the real epoch seconds."""
    wall = dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None)
    return wall.replace(tzinfo=zone).timestamp()


def parse_start(text: str, zone: dt.tzinfo | None) -> float:
    """``2025-03-02 10:00:00`` (in ``zone``, else UTC) or with its own offset -> epoch seconds."""
    t = text.strip().replace("T", " ", 1)
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        when = dt.datetime.fromisoformat(t)
    except ValueError:
        raise SanlensError(
            f"start time {text!r}: expected YYYY-MM-DD HH:MM:SS (optionally with an offset such as -08:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone or dt.UTC)
    return when.timestamp()


def per_input(items: list[str] | None, option: str) -> dict[str, str]:
    """``FILE=VALUE`` arguments of a per-input option, by file (the last one given wins)."""
    out: dict[str, str] = {}
    for item in items or []:
        path, sep, value = item.rpartition("=")
        if not sep or not path or not value.strip():
            raise SanlensError(f"{option} {item!r}: expected FILE=VALUE")
        out[path] = value.strip()
    return out


_ISO_ZONED = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[+-]\d{4}|Z)\s*$", re.M)


def linux_zoned(head: bytes) -> bool:
    """Whether an iostat capture's first bytes show ISO times with their offset (S_TIME_FORMAT=ISO)."""
    return bool(_ISO_ZONED.search(head))


def shift_linux(detail: object, zone: dt.tzinfo) -> bool:
    """Move a Linux iostat/sar capture's report times into ``zone``; False when it has none to move."""
    capture = getattr(detail, "capture", None)
    reports = getattr(capture, "reports", None) or []
    moved = False
    for r in reports:
        if r.end is not None:
            r.end = localize(r.end, zone)
            moved = True
        if r.start is not None:
            r.start = localize(r.start, zone)
    return moved


def hours(seconds: float) -> str:
    """A gap for people: ``8 h``, ``5 h 30 min``, ``12 min``, ``3 d 2 h``."""
    s = abs(seconds)
    if s < 3600:
        return f"{round(s / 60)} min"
    d, rest = divmod(round(s / 60), 24 * 60)
    h, m = divmod(rest, 60)
    parts = [f"{d} d"] * bool(d) + [f"{h} h"] * bool(h) + [f"{m} min"] * bool(m)
    return " ".join(parts) or "0 min"


def offset_text(seconds: float) -> str:
    """Seconds east of UTC as ``+05:30`` / ``-08:00``."""
    sign = "-" if seconds < 0 else "+"
    m = round(abs(seconds) / 60)
    return f"{sign}{m // 60:02d}:{m % 60:02d}"
