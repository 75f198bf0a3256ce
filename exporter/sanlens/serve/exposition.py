"""Prometheus exposition: one /metrics body per update, compressed once, shared by every scrape.

Snapshots are immutable, so each one's text is rendered and gzip-compressed once, per
metric family, when it arrives; the body is then assembled from those cached pieces
whenever a poll, a failure or the engine changes something (not per scrape). A scrape
only copies bytes: the cached gzip stream plus a small per-scrape tail with the
``process_*`` families, so concurrent scrapes cost next to nothing and never wait for
a render. After its pieces exist, a snapshot's per-series objects are released.

The gzip body is one member made of independently deflated pieces joined at byte
boundaries (each piece ends with a sync flush), so unchanged pieces are reused as they
are; zlib-ng supplies a faster deflate and ``crc32_combine`` for the trailer's CRC.
"""

from __future__ import annotations

import logging
import math
import platform
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.core import (
    Metric as PromMetric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry
from zlib_ng import zlib_ng

from sanlens import __version__
from sanlens.join.directory import LunDirectory
from sanlens.model import Metric
from sanlens.store import Engine, State

log = logging.getLogger(__name__)

GZIP_LEVEL = 1
"""Metric text is so repetitive that level 1 already shrinks it ~15x; higher levels cost
several times the CPU for a few percent."""
PROCESS_TTL_S = 1.0
"""How long one reading of the ``process_*`` families serves: 20 scrapers a second then read
/proc once, not 20 times; no Prometheus scrapes one exporter more often than that."""
PLAIN_CHUNK = 256 * 1024
"""A plain /metrics answer is inflated and written this much at a time."""
MAX_LABEL_VALUE_BYTES = 1024
"""The longest label value /metrics carries. Label values come from upstreams (host disk and volume
names, ONTAP object names): one oversized value would make a line of this page as long, and a
Prometheus with ``label_value_length_limit`` set refuses the whole scrape for it. A series with a
longer value is left out, counted in ``sanlens_series_dropped`` and logged once per target."""
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, no mtime, OS unknown
_FINAL_EMPTY_BLOCK = b"\x03\x00"  # a final, empty fixed-Huffman block: ends the deflate stream


class _SelfCollector(Collector):
    """sanlens' own health families, rendered with every body (they change with each poll)."""

    def __init__(self, state: State, dropped: Mapping[str, int], directory: LunDirectory | None) -> None:
        self.state = state
        self.dropped = dropped
        self.directory = directory

    def collect(self) -> Iterator[PromMetric]:
        status = self.state.view()[1]
        info = InfoMetricFamily(
            "sanlens_build", "sanlens build information.", labels=["version", "python_version"]
        )
        info.add_metric([__version__, platform.python_version()], {})
        yield info
        up = GaugeMetricFamily(
            "sanlens_target_up", "1 if the last poll of the target succeeded.", labels=["target", "kind"]
        )
        dur = GaugeMetricFamily(
            "sanlens_poll_duration_seconds", "Wall time of the last poll.", labels=["target", "kind"]
        )
        last = GaugeMetricFamily(
            "sanlens_last_poll_timestamp_seconds",
            "Unix time of the last successful poll.",
            labels=["target", "kind"],
        )
        errs = CounterMetricFamily(
            "sanlens_poll_errors", "Failed polls by reason.", labels=["target", "kind", "reason"]
        )
        polls = CounterMetricFamily("sanlens_polls", "Polls attempted.", labels=["target", "kind"])
        interval = GaugeMetricFamily(
            "sanlens_poll_interval_seconds",
            "Configured poll interval of the target.",
            labels=["target", "kind"],
        )
        for st in status.values():
            lv = [st.name, st.kind]
            up.add_metric(lv, 1.0 if st.up else 0.0)
            polls.add_metric(lv, float(st.polls))
            if st.interval is not None:
                interval.add_metric(lv, st.interval)
            if st.last_duration is not None:
                dur.add_metric(lv, st.last_duration)
            if st.last_success is not None:
                last.add_metric(lv, st.last_success)
            for reason, n in sorted(st.errors.items()):
                errs.add_metric([*lv, reason], float(n))
        yield from (up, dur, last, errs, polls, interval)
        if self.dropped:  # none in a normal estate: no family at all
            dropped = GaugeMetricFamily(
                "sanlens_series_dropped",
                f"Series left out of this page: a label value longer than {MAX_LABEL_VALUE_BYTES} bytes "
                '(target "" for sanlens\' own findings).',
                labels=["target", "reason"],
            )
            for name, n in sorted(self.dropped.items()):
                dropped.add_metric([name, "label_value_too_long"], float(n))
            yield dropped
        found = self.directory.ambiguous() if self.directory is not None else []
        if found:  # none in a normal estate: no family at all
            ambiguous = GaugeMetricFamily(
                "sanlens_lun_join_ambiguous",
                "A LUN serial that several clusters present (SnapMirror active sync, SVM DR) with nothing "
                "telling which copy the hosts use; host disks join the copy on `cluster` until that changes.",
                labels=["serial", "cluster", "candidates"],
            )
            for a in found:
                ambiguous.add_metric([a.serial, a.chosen, ",".join(a.clusters)], 1.0)
            yield ambiguous


# ------------------------------------------------------------------ text format 0.0.4
def escape_label_value(v: str) -> str:
    """A label value as text format 0.0.4 quotes it."""
    if "\\" not in v and "\n" not in v and '"' not in v:  # nearly always: three scans, no copies
        return v
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def label_pair(name: str, value: str) -> str:
    """One label as text format 0.0.4 writes it: ``name="value"``."""
    return f'{name}="{escape_label_value(value)}"'


def format_value(v: float) -> str:
    """A sample value as text format 0.0.4 writes it (``1.0``, ``NaN``, ``+Inf``), as the client library does."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def oversized(values: tuple[str, ...]) -> int | None:
    """The position of the first value longer than ``MAX_LABEL_VALUE_BYTES`` in UTF-8, else None."""
    for i, v in enumerate(values):
        if (
            len(v) > MAX_LABEL_VALUE_BYTES // 4
            and len(v.encode("utf-8", "surrogatepass")) > MAX_LABEL_VALUE_BYTES
        ):
            return i
    return None


class LabelText(dict[tuple[str, ...], str | None]):
    """Label sets rendered as ``k="v",...`` for one tuple of label names.

    Families of one snapshot share it during a render (a LUN's dozen families repeat the same label
    values), and it falls back to ``last``, the texts those families had at their previous render:
    a target's next poll brings the same label sets as new but equal tuples, so the render joins
    only the sets that are new. It is not kept past the render; the families keep their texts.

    A set with a value past ``MAX_LABEL_VALUE_BYTES`` renders as None: its series are left out, and
    ``dropped`` counts them (``example``: the first one's family, label and length, for the log)."""

    __slots__ = ("dropped", "example", "last", "names", "refused")

    def __init__(self, names: tuple[str, ...]) -> None:
        super().__init__()
        self.names = names
        self.last: dict[tuple[str, ...], str | None] = {}
        self.dropped = 0
        self.example: tuple[str, str, int] | None = None
        self.refused = False  # some set here renders as None

    def __missing__(self, values: tuple[str, ...]) -> str | None:
        text = self.last.get(values)
        if text is None and oversized(values) is None:
            text = ",".join(label_pair(k, x) for k, x in zip(self.names, values, strict=True))
        self[values] = text
        if text is None:
            self.refused = True
        return text

    def texts(self, m: Metric, keys: Sequence[tuple[str, ...]] | None = None) -> list[str | None]:
        """Each sample's label text, in order (``keys``: the label values to write, when not all of
        ``m.keys``: a prefix of each); the sets left out are counted here."""
        keys = m.keys if keys is None else keys
        texts = list(map(self.__getitem__, keys))
        if self.refused and None in texts:
            self.dropped += texts.count(None)
            if self.example is None:
                values = keys[texts.index(None)]
                i = oversized(values) or 0
                self.example = (m.name, m.label_names[i], len(values[i].encode("utf-8", "surrogatepass")))
        return texts


def split_tails(m: Metric) -> list[str] | None:
    """A split family's last label as each sample writes it (``op="read"``), one text per value;
    None when the family is not split, or one of those values is too long to write."""
    if not m.split or len(m.label_names) < 2:
        return None
    name = m.label_names[-1]
    made: dict[str, str] = {}
    tails = []
    for key in m.keys:
        v = key[-1]
        t = made.get(v)
        if t is None:
            if oversized((v,)) is not None:
                return None  # such a set is left out and counted, as any other family's
            t = made[v] = label_pair(name, v)
        tails.append(t)
    return tails


def sample_lines(m: Metric, texts: Sequence[str | None], tails: Sequence[str] | None = None) -> str:
    """The sample lines of one family in text format 0.0.4 (no HELP/TYPE), each sample's label
    text given (or, with ``tails``, the text of all its labels but the last, and the last's); a
    sample whose text is None is left out."""
    values = m.values
    if m.label_names and math.isfinite(sum(values)) and None not in texts:
        # the common case in one comprehension: every value finite (repr is the format's), every set kept
        prefix = m.name + "{"
        if tails is not None:
            return "".join(
                [f"{prefix}{lab},{t}}} {v!r}\n" for lab, t, v in zip(texts, tails, values, strict=True)]
            )
        return "".join([f"{prefix}{lab}}} {v!r}\n" for lab, v in zip(texts, values, strict=True)])
    if tails is not None:
        texts = [lab if lab is None else f"{lab},{t}" for lab, t in zip(texts, tails, strict=True)]
    lines: list[str] = []
    append = lines.append
    for lab, v in zip(texts, values, strict=True):
        if lab is None:
            continue
        value = repr(v) if math.isfinite(v) else format_value(v)
        append(f"{m.name}{{{lab}}} {value}\n" if lab else f"{m.name} {value}\n")
    return "".join(lines)


def render_samples(m: Metric, label_cache: LabelText | None = None) -> str:
    """The sample lines of one family in text format 0.0.4 (no HELP/TYPE)."""
    cache = LabelText(m.label_names) if label_cache is None else label_cache
    return sample_lines(m, cache.texts(m))


@dataclass(slots=True)
class _Labelled:
    """One family's label texts as last rendered, for its next poll: when that brings equal label
    tuples in the same order (a healthy estate's every poll), the texts are taken whole, with no
    lookup per sample. Only a family with no set left out is kept.

    A split family keeps its rows' texts (the very strings of its table's other families) and its
    last label's: at 10,000 LUNs, a text per row and op was 6 MB held between polls."""

    names: tuple[str, ...]
    keys: Sequence[tuple[str, ...]]
    texts: list[str | None]
    tails: list[str] | None = None


def header(m: Metric) -> str:
    help_ = m.help.replace("\\", "\\\\").replace("\n", "\\n")
    kind = "gauge" if m.type == "info" else m.type
    return f"# HELP {m.name} {help_}\n# TYPE {m.name} {kind}\n"


# ------------------------------------------------------------------ compressed pieces
@dataclass(frozen=True, slots=True)
class Piece:
    """Some exposition text, deflated and sync-flushed so pieces join into one stream."""

    deflated: bytes
    crc: int
    size: int

    @classmethod
    def of(cls, data: bytes) -> Piece:
        c = zlib_ng.compressobj(GZIP_LEVEL, zlib_ng.DEFLATED, -15)
        return cls(c.compress(data) + c.flush(zlib_ng.Z_SYNC_FLUSH), zlib_ng.crc32(data), len(data))


@dataclass(frozen=True, slots=True)
class Body:
    """One /metrics body: the gzip stream up to (not including) its end, and its CRC and size."""

    generation: int
    prefix: bytes  # gzip header + every piece
    crc: int
    size: int
    series: int

    def gzip(self, tail: bytes = b"") -> bytes:
        """The complete gzip member, with ``tail`` (per-scrape text) appended."""
        c = zlib_ng.compressobj(GZIP_LEVEL, zlib_ng.DEFLATED, -15)
        end = c.compress(tail) + c.flush(zlib_ng.Z_FINISH) if tail else _FINAL_EMPTY_BLOCK
        crc = zlib_ng.crc32(tail, self.crc) if tail else self.crc
        trailer = struct.pack("<II", crc & 0xFFFFFFFF, (self.size + len(tail)) & 0xFFFFFFFF)
        return b"".join((self.prefix, end, trailer))

    def plain(self, tail: bytes = b"") -> bytes:
        return b"".join(self.plain_chunks(tail))

    def plain_chunks(self, tail: bytes = b"", size: int = PLAIN_CHUNK) -> Iterator[bytes]:
        """The plain text, inflated ``size`` bytes at a time, then ``tail``: ``self.size + len(tail)``
        bytes in all. A client that does not accept gzip gets the page piece by piece, so it is
        never whole in memory (at 10,000 LUNs it is 20 MB)."""
        d = zlib_ng.decompressobj(-15)
        deflated = memoryview(self.prefix)[len(_GZIP_HEADER) :]
        steps = [deflated[i : i + size // 16] for i in range(0, len(deflated), size // 16)]
        for data in (*steps, _FINAL_EMPTY_BLOCK):  # the input a step at a time: its unread tail is a copy
            while data:
                out = d.decompress(data, size)
                if out:
                    yield out
                data = d.unconsumed_tail
        rest = d.flush()
        if rest:
            yield rest
        if tail:
            yield tail


def assemble(generation: int, parts: list[Piece], series: int) -> Body:
    crc, size = 0, 0
    for p in parts:
        crc = zlib_ng.crc32_combine(crc, p.crc, p.size)
        size += p.size
    return Body(generation, _GZIP_HEADER + b"".join(p.deflated for p in parts), crc, size, series)


class Exposition:
    """The current /metrics body, rebuilt from cached pieces when the state changes.

    ``refresh`` rebuilds (the exporter's renderer thread calls it after each change, so
    scrapes find a body ready); ``body`` returns the latest, building it only if none
    exists yet. Snapshot pieces are cached until the next poll of their target replaces
    them; only the engine's and sanlens' own small families are rendered every time.
    """

    def __init__(
        self,
        state: State,
        *,
        engine: Engine | None = None,
        directory: LunDirectory | None = None,
        release_series: bool = False,
    ) -> None:
        self.state = state
        self.engine = engine  # its findings' families, rendered with every body
        self.release_series = release_series
        self._snap_cache: dict[str, tuple[int, dict[str, tuple[Metric, Piece, int]]]] = {}
        # snapshot -> family -> its label texts from its last render (a render's LabelText maps are
        # not kept: a family whose sets changed finds its old texts here, and they are one copy)
        self._families: dict[str, dict[str, _Labelled]] = {}
        self._headers: dict[tuple[str, str, str], Piece] = {}
        self._lock = threading.Lock()  # one build at a time
        self._body: Body | None = None
        self._process_text: tuple[float, bytes] | None = None
        self._gzip: tuple[int, bytes, bytes] | None = None
        # series left out of the current body for an oversized label value, by target ("": sanlens' own)
        self.dropped: dict[str, int] = {}
        self._dropped_logged: set[str] = set()
        self._self = CollectorRegistry(auto_describe=False)
        self._self.register(_SelfCollector(state, self.dropped, directory))
        self._process = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self._process)
        self.renders = 0
        self.last_render_seconds = 0.0

    # ------------------------------------------------------------ building
    def _snapshot_pieces(
        self, name: str, stamp: int, metrics: tuple[Metric, ...]
    ) -> dict[str, tuple[Metric, Piece, int]]:
        hit = self._snap_cache.get(name)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        last_families = self._families.get(name, {})
        caches: dict[tuple[str, ...], LabelText] = {}
        families: dict[str, _Labelled] = {}
        pieces = {}
        for m in metrics:
            kept = last_families.get(m.name)
            dropped = 0
            if kept is not None and kept.names == m.label_names and kept.keys == m.keys:
                texts, tails = kept.texts, kept.tails
            else:
                tails = split_tails(m)
                names = m.label_names[:-1] if tails is not None else m.label_names
                text = caches.get(names)
                if text is None:
                    text = caches[names] = LabelText(names)
                keys = [k[:-1] for k in m.keys] if tails is not None else m.keys
                if (
                    kept is not None
                    and kept.names == m.label_names
                    and (kept.tails is None) == (tails is None)
                ):
                    last = [k[:-1] for k in kept.keys] if tails is not None else kept.keys
                    text.last.update(zip(last, kept.texts, strict=True))  # its sets: maybe not in `last`
                before = text.dropped
                texts = text.texts(m, keys)
                dropped = text.dropped - before
            if not dropped:
                families[m.name] = _Labelled(m.label_names, m.keys, texts, tails)
            pieces[m.name] = (
                Metric(m.name, m.type, m.help, m.label_names),  # the family without its samples
                Piece.of(sample_lines(m, texts, tails).encode()),
                len(m.values) - dropped,
            )
        self._count_dropped(name, caches.values())
        self._families[name] = families
        self._snap_cache[name] = (stamp, pieces)
        return pieces

    def _count_dropped(self, name: str, caches: Iterable[LabelText]) -> None:
        """Count the series left out of ``name``'s part of the body; log when that starts."""
        n, example = 0, None
        for text in caches:
            n += text.dropped
            example = example or text.example
        if not n:
            self.dropped.pop(name, None)
            self._dropped_logged.discard(name)
            return
        self.dropped[name] = n
        if name not in self._dropped_logged and example is not None:
            self._dropped_logged.add(name)
            family, label, size = example
            log.warning(
                "%s: %d series left out of /metrics: a label value longer than %d bytes (first: %s's %s, "
                "%d bytes); see sanlens_series_dropped",
                name or "sanlens", n, MAX_LABEL_VALUE_BYTES, family, label, size,
            )  # fmt: skip

    def _header(self, m: Metric) -> Piece:
        key = (m.name, m.type, m.help)
        p = self._headers.get(key)
        if p is None:
            p = self._headers[key] = Piece.of(header(m).encode())
        return p

    def refresh(self) -> Body:
        """Build the body for the state as it is now (a no-op when nothing changed)."""
        with self._lock:
            generation = self.state.generation
            if self._body is not None and self._body.generation == generation:
                return self._body
            t0 = time.perf_counter()
            snaps, stamps = self.state.snapshots_with_stamps()
            families: dict[str, tuple[Metric, list[Piece]]] = {}
            series = 0
            for name, snap in snaps.items():
                for fam, (m, piece, n) in self._snapshot_pieces(name, stamps[name], snap.metrics).items():
                    families.setdefault(fam, (m, []))[1].append(piece)
                    series += n
                if self.release_series and snap.metrics:
                    self.state.release_metrics(name, stamps[name])
            for gone in set(self._snap_cache) - set(snaps):
                del self._snap_cache[gone]
                self._families.pop(gone, None)
                self._count_dropped(gone, ())
            engine = self.engine
            if engine is not None:
                caches: dict[tuple[str, ...], LabelText] = {}
                for m in engine.metrics():
                    text = render_samples(m, caches.setdefault(m.label_names, LabelText(m.label_names)))
                    families.setdefault(m.name, (m, []))[1].append(Piece.of(text.encode()))
                    series += len(m.values)
                self._count_dropped("", caches.values())
                series -= self.dropped.get("", 0)
            parts: list[Piece] = []
            for m, pieces in families.values():
                parts.append(self._header(m))
                parts.extend(pieces)
            own = generate_latest(self._self)
            parts.append(Piece.of(own))
            series += sum(1 for line in own.splitlines() if line and not line.startswith(b"#"))
            self._body = assemble(generation, parts, series)
            self.renders += 1
            self.last_render_seconds = time.perf_counter() - t0
            return self._body

    # ------------------------------------------------------------ serving
    def body(self) -> Body:
        """The latest body without waiting for a rebuild (only the very first is built here)."""
        body = self._body
        return body if body is not None else self.refresh()

    def process_text(self) -> bytes:
        """``process_*`` families, read at scrape time (CPU seconds and RSS move between polls),
        at most once per ``PROCESS_TTL_S``."""
        now = time.monotonic()
        cached = self._process_text
        if cached is None or now - cached[0] >= PROCESS_TTL_S:
            cached = self._process_text = (now, generate_latest(self._process))
        return cached[1]

    def gzip(self) -> bytes:
        """The whole gzip answer; scrapes within ``PROCESS_TTL_S`` of each other share one."""
        body = self.body()
        tail = self.process_text()
        cached = self._gzip
        if cached is not None and cached[0] == body.generation and cached[1] is tail:
            return cached[2]
        gz = body.gzip(tail)
        self._gzip = (body.generation, tail, gz)
        return gz

    def text(self) -> bytes:
        """The body for the state as it is now, as plain text (offline use and tests)."""
        self.refresh()
        return self.render()

    def render(self) -> bytes:
        """The latest body as plain text, whole (offline use and tests; a scrape takes ``plain``)."""
        return self.body().plain(self.process_text())

    def plain(self) -> tuple[int, Iterator[bytes]]:
        """The latest body as plain text, for clients that do not accept gzip: its length, and its
        pieces as they are inflated. Nothing of it is kept: such scrapes are rare (Prometheus asks
        for gzip), and each costs an inflate of the page (6-8 ms for 20 MB at 10,000 LUNs) rather
        than the whole page held between polls and copied per scrape."""
        body, tail = self.body(), self.process_text()
        return body.size + len(tail), body.plain_chunks(tail)
