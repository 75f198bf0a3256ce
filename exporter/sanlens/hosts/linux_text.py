"""sysstat text captures of Linux disks: ``iostat -x`` and ``sar -d``, every column set since sysstat 9.

Columns are read by their header names, never by position: sysstat 11 prints
``rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util``,
11.5-12.0 ``r/s w/s rkB/s wkB/s rrqm/s ... r_await w_await aqu-sz rareq-sz wareq-sz svctm
%util``, 12.x ``r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s ... [d/s ...] [f/s f_await]
aqu-sz %util``; ``--pretty`` moves the device name last, ``-m`` gives MB/s, locales a
decimal comma. ``sar -d`` prints ``DEV tps rd_sec/s wr_sec/s avgrq-sz avgqu-sz await svctm
%util`` (sysstat 11) or ``DEV tps rkB/s wkB/s [dkB/s] areq-sz aqu-sz await [svctm] %util``
(12), DEV first or, with ``-p``/pretty output, last.

Time: iostat's ``-t`` line (``%x %X`` in the locale: ``06/01/20 12:53:20`` or
``12/25/2019 03:17:34 AM``; ``2020-06-01T12:53:20+0200`` with S_TIME_FORMAT=ISO), sar's
per-line ``HH:MM:SS [AM|PM]`` on the date of the file's header line, a day added each time
the clock goes back (midnight). Times without a zone are read as UTC.

Values become ``HostDiskStats`` fields in SI units: latencies in seconds, bytes. iostat's ``d/s
d_await`` and ``f/s f_await`` (sysstat 12.1.2 and 12.3.1) are discards and flushes, kept apart from
reads and writes. aqu-sz is the rate of diskstats field 11, the time of every kind: the mean reads
and writes in flight are aqu-sz less d/s x d_await + f/s x f_await. ``%util`` is kept as printed
(``reported_busy_ratio``); idle is 1 - %util/100 with the busy share bounded by the mean number of
every kind in flight (``hosts/busy_time.py``: kernels from 5.0 until the 2024 io_ticks fix
overcount busy time).

sar records no per-kind operations (its ``stats_disk`` holds one ``nr_ios``): ``tps`` and
``await`` are over reads, writes and, from sysstat 12.1.2 (the ``dkB/s`` column), discards
(rd_stats.c ``read_diskstats_disk``, ``compute_ext_disk_stats``). Where a row moved no discard
bytes, both ops get that await (the total and the IOPS-weighted latency are exact) and tps is split
by the read/write byte share, an estimate. Where ``dkB/s`` > 0 the discards cannot be told from the
reads and writes, whose sizes and latencies differ by orders of magnitude (an fstrim's discards
run up to the device's discard_max_bytes each, in tens of ms): the row's read and write IOPS, latencies and numbers in flight are left
unknown rather than guessed, its bytes and busy time kept, and the capture says so in a warning.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sanlens.errors import SanlensError
from sanlens.hosts.busy_time import idle_from_busy, in_flight

# iostat / sar column -> (HostDiskStats field, factor to SI)
COLUMNS: dict[str, tuple[str, float]] = {
    "r/s": ("read_iops", 1.0),
    "w/s": ("write_iops", 1.0),
    "rkB/s": ("read_bytes_s", 1024.0),
    "wkB/s": ("write_bytes_s", 1024.0),
    "rMB/s": ("read_bytes_s", 1024.0 * 1024.0),
    "wMB/s": ("write_bytes_s", 1024.0 * 1024.0),
    "rsec/s": ("read_bytes_s", 512.0),
    "wsec/s": ("write_bytes_s", 512.0),
    "rd_sec/s": ("read_bytes_s", 512.0),
    "wr_sec/s": ("write_bytes_s", 512.0),
    "r_await": ("read_latency_s", 1e-3),
    "w_await": ("write_latency_s", 1e-3),
    "d/s": ("discard_iops", 1.0),
    "d_await": ("discard_latency_s", 1e-3),
    "f/s": ("flush_iops", 1.0),
    "f_await": ("flush_latency_s", 1e-3),
    "dkB/s": ("discard_bytes_s", 1024.0),
    "dMB/s": ("discard_bytes_s", 1024.0 * 1024.0),
    "await": ("await_s", 1e-3),
    "aqu-sz": ("outstanding_io", 1.0),
    "avgqu-sz": ("outstanding_io", 1.0),
    "%util": ("busy_ratio", 0.01),
    "tps": ("tps", 1.0),
}
# not whole disks: partitions, optical drives, loops, RAM disks, iostat -g's group line
_NOT_DISKS = re.compile(r"^(sr|loop|z?ram|fd)\d+$|^(mmcblk\d+p|nvme\d+n\d+p|x?[shv]d[a-z]+)\d+$|^ALL$")
_FIRST = re.compile(r"^(?P<os>\S+) (?P<kernel>\S+) \((?P<host>[^)]*)\)\s+(?P<date>\S+)")
_CLOCK = re.compile(r"^(\d{1,2}):(\d\d):(\d\d)$")
HALF_DAY_S = 43200
KINDS = ("read", "write", "discard", "flush")  # HostDiskStats ``<kind>_iops`` / ``<kind>_latency_s``
_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)([+-]\d{4}|Z)?$")


class LinuxTextError(SanlensError):
    """A capture sanlens cannot read, with its file and line."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        super().__init__(f"{path}{f':{line}' if line else ''}: {message}")


@dataclass
class Report:
    """One interval: per device, HostDiskStats fields; ``end`` in epoch seconds when the capture says."""

    line: int
    end: float | None
    devices: dict[str, dict[str, float]] = field(default_factory=dict)
    start: float | None = None  # sar: the interval's start (the previous line's time or the header's)
    raw: dict[str, dict[str, float]] = field(default_factory=dict)  # device -> column as printed


@dataclass
class Capture:
    kind: str  # linux-iostat | linux-sar
    path: str
    host: str = ""
    kernel: str = ""
    date: dt.date | None = None
    columns: tuple[str, ...] = ()
    reports: list[Report] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    restarts: int = 0
    since_boot_dropped: bool = False


def parse_date(text: str) -> dt.date | None:
    """The header's date: ``06/01/20``, ``01/15/2021``, ``2021-01-15``; day-first when the month
    would exceed 12 (``15/01/2021``); None for other locales' spellings."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", text)
    if m:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    m = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})", text)
    if not m:
        return None
    a, b, y = int(m[1]), int(m[2]), int(m[3])
    y += 2000 if y < 70 else 1900 if y < 100 else 0
    month, day = (a, b) if a <= 12 else (b, a)
    try:
        return dt.date(y, month, day)
    except ValueError:
        return None


def _clock(tokens: list[str]) -> tuple[int, int] | None:
    """Seconds of the day and tokens used, of ``HH:MM:SS`` or ``HH:MM:SS AM|PM``; None if not a time."""
    m = _CLOCK.match(tokens[0]) if tokens else None
    if not m:
        return None
    h, mi, s = int(m[1]), int(m[2]), int(m[3])
    used = 1
    if len(tokens) > 1 and tokens[1].upper() in ("AM", "PM"):
        h = h % 12 + (12 if tokens[1].upper() == "PM" else 0)
        used = 2
    if h > 23 or mi > 59 or s > 60:
        return None
    return h * 3600 + mi * 60 + s, used


def _epoch(day: dt.date, seconds: int) -> float:
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() + seconds


def parse_timestamp_line(line: str) -> float | None:
    """An iostat ``-t`` line as epoch seconds (UTC unless it carries a zone); None when it is none."""
    text = line.strip()
    m = _ISO.match(text)
    if m:
        y, mo, d, h, mi, sec = (int(m[i]) for i in range(1, 7))
        try:
            t = dt.datetime(y, mo, d, h, mi, min(sec, 59), tzinfo=dt.UTC)
        except ValueError:
            return None
        zone = m[7]
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            t -= sign * dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
        return t.timestamp()
    parts = text.split()
    if len(parts) in (2, 3):
        day = parse_date(parts[0])
        clock = _clock(parts[1:])
        if day is not None and clock is not None and clock[1] == len(parts) - 1:
            return _epoch(day, clock[0])
    return None


def _number(text: str) -> float:
    return float(text.replace(",", ".") if "," in text and "." not in text else text)


def _values(columns: list[str], cells: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """(HostDiskStats fields, raw columns) of one device row."""
    raw = {c: _number(v) for c, v in zip(columns, cells, strict=True)}
    out: dict[str, float] = {}
    for c, v in raw.items():
        spec = COLUMNS.get(c)
        if spec is not None:
            out[spec[0]] = v * spec[1]
    await_s = out.pop("await_s", None)
    tps = out.pop("tps", None)
    discard_bytes = out.pop("discard_bytes_s", 0.0)  # no HostDiskStats field: in ``raw`` only
    if tps is not None and "read_iops" not in out:  # sar: one count and one await over every kind
        pairs: list[tuple[float | None, float | None]] = [(tps, await_s)]
        if discard_bytes <= 0 or not tps:
            rb, wb = out.get("read_bytes_s", 0.0), out.get("write_bytes_s", 0.0)
            share = rb / (rb + wb) if rb + wb > 0 else 0.5
            out["read_iops"], out["write_iops"] = tps * share, tps * (1.0 - share)
            if await_s is not None:
                out["read_latency_s"] = out["write_latency_s"] = await_s
        else:
            out.pop("outstanding_io", None)  # aqu-sz holds the discards too, in an unknown share
    else:
        if await_s is not None:  # one await for both ops (sysstat before 10)
            out.setdefault("read_latency_s", await_s)
            out.setdefault("write_latency_s", await_s)
        pairs = [(out.get(f"{k}_iops"), out.get(f"{k}_latency_s")) for k in KINDS]
        # aqu-sz is field 11, every kind's time; reads and writes in flight are what is left
        other = in_flight(pairs[2:])
        if other is not None and "outstanding_io" in out:
            out["outstanding_io"] = max(out["outstanding_io"] - other, 0.0)
    busy = out.pop("busy_ratio", None)
    if busy is not None:
        out["reported_busy_ratio"] = busy
        idle = idle_from_busy(busy, in_flight(pairs))
        if idle is not None:
            out["idle_ratio"] = idle
    return out, raw


def _lines(path: str, stream: Iterable[str]) -> Iterator[tuple[int, str]]:
    for n, line in enumerate(stream, start=1):
        yield n, line.rstrip("\r\n")


def _header(cap: Capture, line: str) -> bool:
    m = _FIRST.match(line)
    if not m or m["os"] != "Linux":
        return False
    cap.host, cap.kernel, cap.date = m["host"], m["kernel"], parse_date(m["date"])
    return True


def parse_iostat(path: str, stream: Iterable[str]) -> Capture:
    """``iostat -x`` text: one Report per device block, with its ``-t`` time when printed."""
    cap = Capture("linux-iostat", path)
    columns: list[str] | None = None
    dev_at = 0
    pending_time: float | None = None
    report: Report | None = None
    skip_next = False
    for n, line in _lines(path, stream):
        text = line.strip()
        if skip_next:
            skip_next = False
            continue
        if not text:
            columns, report = None, None
            continue
        if not cap.reports and not cap.host and _header(cap, text):
            continue
        if text.startswith("avg-cpu:"):
            skip_next = True  # the CPU values line
            continue
        tokens = text.split()
        first, last = tokens[0].rstrip(":"), tokens[-1].rstrip(":")
        if first == "Device" or (last == "Device" and len(tokens) > 1):
            names = [t.rstrip(":") for t in tokens]
            dev_at = 0 if first == "Device" else len(names) - 1
            columns = [c for i, c in enumerate(names) if i != dev_at]
            if not any(c in COLUMNS for c in columns) or ("r/s" not in columns and "tps" in columns):
                raise LinuxTextError(path, n, "not extended statistics: capture with iostat -x")
            cap.columns = tuple(columns)
            report = Report(n, pending_time)
            cap.reports.append(report)
            pending_time = None
            continue
        stamp = parse_timestamp_line(text) if columns is None else None
        if stamp is not None or text.startswith("Time:"):
            pending_time = stamp
            continue
        if columns is None or report is None:
            continue  # a banner, a blank report, anything that is not a device block
        if len(tokens) != len(columns) + 1:
            raise LinuxTextError(path, n, f"{len(tokens)} fields, the Device header has {len(columns) + 1}")
        device = tokens[dev_at]
        cells = tokens[:dev_at] + tokens[dev_at + 1 :]
        try:
            values, raw = _values(columns, cells)
        except ValueError:
            raise LinuxTextError(
                path, n, "a value is not a number (iostat -h/--human output cannot be read)"
            ) from None
        report.devices[device] = values
        report.raw[device] = raw
    if not cap.reports:
        raise LinuxTextError(path, None, "no Device block: not iostat -x output")
    if len(cap.reports) > 1:
        # iostat's first report averages everything since boot (unless -y): not an interval
        cap.reports.pop(0)
        cap.since_boot_dropped = True
    return cap


def parse_sar_disk(path: str, stream: Iterable[str]) -> Capture:
    """``sar -d`` text: one Report per time stamp of the DEV sections."""
    cap = Capture("linux-sar", path)
    columns: list[str] | None = None
    dev_at = 0
    day_offset = 0
    last_clock: int | None = None
    interval_start: float | None = None
    by_time: dict[float, Report] = {}
    mixed: dict[str, int] = {}  # device -> rows whose tps and await mix discards with reads and writes
    for n, line in _lines(path, stream):
        text = line.strip()
        if not text:
            continue
        if not cap.reports and not cap.host and _header(cap, text):
            continue
        tokens = text.split()
        if tokens[0].startswith("Average") or tokens[0].startswith("Summary"):
            continue
        clock = _clock(tokens)
        if clock is None:
            continue
        seconds, used = clock
        if last_clock is not None and seconds < last_clock - HALF_DAY_S:
            day_offset += 1  # past midnight (sections of one interval repeat its start: a small step back)
        last_clock = seconds
        base = cap.date or dt.date(1970, 1, 1)
        t = _epoch(base + dt.timedelta(days=day_offset), seconds)
        rest = tokens[used:]
        if "RESTART" in rest:
            cap.restarts += 1
            columns, interval_start = None, None
            continue
        if "DEV" in rest:
            dev_at = rest.index("DEV")
            columns = [c for i, c in enumerate(rest) if i != dev_at]
            cap.columns = tuple(columns)
            interval_start = t
            continue
        if not any(_is_number(x) for x in rest):
            columns = None  # another activity's header (sar -b, -u, -r, -n): its rows are not disks
            continue
        if columns is None:
            continue
        if len(rest) != len(columns) + 1:
            raise LinuxTextError(path, n, f"{len(rest)} fields, the DEV header has {len(columns) + 1}")
        device = rest[dev_at]
        cells = rest[:dev_at] + rest[dev_at + 1 :]
        try:
            values, raw = _values(columns, cells)
        except ValueError:
            raise LinuxTextError(path, n, "a value is not a number") from None
        report = by_time.get(t)
        if report is None:
            report = Report(n, t, start=interval_start)
            by_time[t] = report
            cap.reports.append(report)
            interval_start = t  # the next interval starts where this one ends
        report.devices[device] = values
        report.raw[device] = raw
        if "read_iops" not in values and raw.get("tps"):
            mixed[device] = mixed.get(device, 0) + 1
    if not cap.reports:
        raise LinuxTextError(path, None, "no DEV section: not sar -d output")
    for device, n in mixed.items():
        if not whole_disk(device):
            continue
        cap.warnings.append(
            f"{device}: {n} sar -d interval{'s' if n > 1 else ''} moved discards (dkB/s > 0): sar counts them "
            "in tps, await and aqu-sz with the reads and writes and prints no per-kind operations, so there "
            "the read and write IOPS, latencies and numbers in flight are unknown (iostat -x prints d/s and "
            "d_await apart)"
        )
    if cap.date is None:
        cap.warnings.append("the header line has no date sanlens can read: times are placed on 1970-01-01")
    return cap


def _is_number(text: str) -> bool:
    try:
        _number(text)
    except ValueError:
        return False
    return True


def whole_disk(device: str) -> bool:
    """Whether a device row is a disk the diagnoses judge (not a partition, CD drive, loop or group)."""
    return not _NOT_DISKS.match(device)
