"""How the reports show a finding: evidence under readable names in human units, subjects, times, runbooks.

Evidence keys stay what the engine, the rules and the dashboards use; the reports read each key's
declaration in its diagnosis spec (``Evidence``: unit, description) and show

* a label derived from the key (``host_to_array_latency_ratio`` -> "host / array latency"),
  with the declared description beside it;
* the value in the unit people read: seconds as ms (or s), a share (0..1) as %, a ratio of two
  like quantities (host latency / LUN latency) as a multiple (``296x``, printed with a multiplication sign), ops/s as IOPS, counts
  as whole numbers with their unit (``8 cores``).

Text and HTML share these helpers, so both say the same thing.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sanlens.analyze.charts import fmt
from sanlens.diagnose.registry import REGISTRY
from sanlens.diagnose.spec import Evidence

# Where the runbooks are read; a site publishing its own sets SANLENS_RUNBOOK_BASE_URL (the same
# default as the alert rules' runbook_url).
RUNBOOK_BASE_URL = "https://github.com/sanlens/sanlens/blob/main/docs/runbooks"

TIMES, DASH, MINUS = "\u00d7", "\u2013", "\u2212"  # the multiplication sign, the en dash of a range, minus
# evidence units that are plain counts of things
COUNT_UNITS = frozenset(
    {"cores", "disks", "groups", "aggregates", "operations", "paths", "ports", "LUNs", "volumes", "commands"}
)
_SUFFIXES = (
    ("_bytes_per_second", "bytes_per_second"),
    ("_per_second", "per_second"),
    ("_seconds", "seconds"),
    ("_ratio", "ratio"),
    ("_fraction", "ratio"),
    ("_iops", "iops"),
    ("_bytes", "bytes"),
)


def declared(did: str, key: str) -> Evidence | None:
    """The spec's declaration of an evidence key; None for a key the spec does not declare."""
    spec = REGISTRY.get(did)
    if spec is None:
        return None
    for ev in spec.evidence:
        if ev.name == key:
            return ev
    return None


def _kind(key: str, ev: Evidence | None) -> str:
    """How a value is shown: seconds, multiple, share, iops, per_second, bytes, count or number."""
    unit = ev.unit if ev else ""
    if ev is not None and ev.fmt == "multiple":  # a ratio of two like quantities, 296x, not a share
        return "multiple"
    if unit.startswith("ratio") or key.endswith(("_ratio", "_fraction")):
        return "share"
    if unit == "seconds" or key.endswith("_seconds"):
        return "seconds"
    if unit == "ops/s" or key.endswith("_iops"):
        return "iops"
    if unit == "1/s" or key.endswith("_per_second"):
        return "per_second"
    if unit == "bytes" or key.endswith("_bytes"):
        return "bytes"
    if unit in COUNT_UNITS:
        return "count"
    return "number"


def label(key: str) -> str:
    """A readable name for an evidence key: ``host_to_array_latency_ratio`` -> ``host / array latency``."""
    stem = key
    for suffix, _kind_name in _SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    words = stem.replace("_to_", " / ").replace("_", " ")
    if key.endswith("_iops") and stem != key:
        words += " IOPS"  # the unit names the quantity: "host IOPS", not "host"
    words = re.sub(r"\bcv\b", "CV", words)
    words = re.sub(r"\b(lun|cpu|fc|lif|qos|eta)\b", lambda m: m[1].upper(), words)
    return words


def _bytes(v: float) -> str:
    for factor, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(v) >= factor:
            return f"{fmt(v / factor)} {name}"
    return f"{fmt(v)} B"


def whole(v: float) -> str:
    """A count as a whole number (``8``, not ``8.0``); a fractional mean keeps three digits."""
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return fmt(v)


def value(did: str, key: str, v: Any) -> str:
    """One evidence value in the unit a reader expects: 296 times, ``91 %``, ``200 ms``, ``8 cores``."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return "-" if v is None else str(v)
    x = float(v)
    if not math.isfinite(x):
        return "-" if math.isnan(x) else ("overflow" if x > 0 else "-overflow")
    ev = declared(did, key)
    kind = _kind(key, ev)
    if kind == "multiple":
        return f"{fmt(x)}{TIMES}"
    if kind == "share":
        of = " of one core" if ev is not None and ev.unit == "ratio of one core" else ""
        return f"{fmt(x * 100)} %{of}"
    if kind == "seconds":
        return f"{fmt(x)} s" if abs(x) >= 1 else f"{fmt(x * 1000)} ms"
    if kind == "iops":
        return whole(round(x)) if abs(x) >= 10 else fmt(x)  # the label says IOPS
    if kind == "per_second":
        return f"{fmt(x)} /s"
    if kind == "bytes":
        return _bytes(x)
    if kind == "count":
        unit = ev.unit if ev else ""
        return f"{whole(x)} {unit}".rstrip()
    return whole(x)


@dataclass(frozen=True)
class Row:
    key: str  # the evidence key, as rules and dashboards name it
    label: str
    value: str
    help: str  # the spec's description; '' when the key is not declared


def rows(did: str, evidence: Mapping[str, Any]) -> list[Row]:
    """A finding's evidence as the report lists it: the spec's declaration order, then any other key."""
    spec = REGISTRY.get(did)
    order = {e.name: n for n, e in enumerate(spec.evidence)} if spec else {}
    keys = sorted(evidence, key=lambda k: (order.get(k, len(order)), k))
    out = []
    for k in keys:
        ev = declared(did, k)
        name = label(k)
        help_ = ev.help if ev and ev.help.lower() != name.lower() else ""
        out.append(Row(k, name, value(did, k, evidence[k]), help_))
    return out


# ------------------------------------------------------------------ subjects
def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders digits by value: disk 2 before disk 10."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", text))


def disk_name(disk: str, drives: Sequence[str] = ()) -> str:
    """``disk 1 (E:, F:)``: the disk number with the drive letters and mount points it carries."""
    return f"disk {disk}" + (f" ({', '.join(drives)})" if drives else "")


def subject_text(subject: Mapping[str, Any], drives: Sequence[str] = ()) -> str:
    """A finding's subject in words: ``SQL01 disk 1 (E:) → LUN svm1:/vol/sqldata/lun0``."""
    s = {k: str(v) for k, v in subject.items() if v}
    if "host" in s and "disk" in s:
        out = f"{s['host']} {disk_name(s['disk'], drives)}"
        if "lun" in s:
            out += f" → LUN {s['svm'] + ':' if 'svm' in s else ''}{s['lun']}"
        return out
    parts = []
    for k in ("node", "aggregate", "svm", "volume", "lun", "port", "host", "disk"):
        if k in s:
            parts.append(f"{'LUN' if k == 'lun' else k} {s[k]}")
    cluster = s.get("cluster")
    if cluster and cluster != "offline":
        parts.insert(0, f"cluster {cluster}")
    return ", ".join(parts) or "-"


# ------------------------------------------------------------------ runbooks
def runbook_url(runbook: str) -> str:
    """The runbook's published page: ``docs/runbooks/x.md`` under the runbook base URL."""
    base = os.environ.get("SANLENS_RUNBOOK_BASE_URL") or RUNBOOK_BASE_URL
    return f"{base.rstrip('/')}/{runbook.rsplit('/', 1)[-1]}"


# ------------------------------------------------------------------ time
@dataclass(frozen=True)
class Zone:
    """A capture's local time: the name it gives and its zone (a fixed offset, or an IANA zone)."""

    name: str
    tz: dt.tzinfo

    @classmethod
    def offset(cls, name: str, minutes: int) -> Zone:
        """A zone ``minutes`` east of UTC (a PerfMon header's bias is the opposite sign)."""
        return cls(name, dt.timezone(dt.timedelta(minutes=minutes)))

    def utc_offset(self, t: float) -> str:
        """``UTC-08:00`` (with a minus sign) at time ``t``."""
        off = dt.datetime.fromtimestamp(t, self.tz).utcoffset() or dt.timedelta(0)
        minutes = int(off.total_seconds() // 60)
        sign = "+" if minutes >= 0 else MINUS
        h, m = divmod(abs(minutes), 60)
        return f"UTC{sign}{h:02d}:{m:02d}"

    def is_utc(self, t: float) -> bool:
        return dt.datetime.fromtimestamp(t, self.tz).utcoffset() == dt.timedelta(0)


def parse_time(text: Any) -> float | None:
    """Epoch seconds of an ISO time as the JSON report writes it (``2025-03-02T10:00:00Z``)."""
    if isinstance(text, int | float):
        return float(text)
    if not text or not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _clock(t: float, tz: dt.tzinfo = dt.UTC) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz)


def span_text(start: float | None, end: float | None, zone: Zone | None = None) -> str:
    """``2025-03-02 10:00:00 - 10:04:00 UTC (02:00:00 - 02:04:00 Pacific Standard Time, UTC-08:00)``
    (with an en dash and a minus sign).

    The date is written once when both ends fall on one day; local time follows where known."""
    if start is None and end is None:
        return "-"
    a_t = start if start is not None else end or 0.0
    b_t = end if end is not None else a_t

    def one(tz: dt.tzinfo, suffix: str) -> str:
        a, b = _clock(a_t, tz), _clock(b_t, tz)
        if a == b:
            return f"{a:%Y-%m-%d %H:%M:%S} {suffix}"
        right = f"{b:%H:%M:%S}" if a.date() == b.date() else f"{b:%Y-%m-%d %H:%M:%S}"
        return f"{a:%Y-%m-%d %H:%M:%S} {DASH} {right} {suffix}"

    text = one(dt.UTC, "UTC")
    if zone is not None and not zone.is_utc(a_t):
        text += f" ({one(zone.tz, zone.name)}, {zone.utc_offset(a_t)})"
    return text


def common_zone(zones: Iterable[Zone]) -> Zone | None:
    """The one local time zone of the captures; None when they know none or disagree."""
    found = set(zones)
    return found.pop() if len(found) == 1 else None
