"""PerfMon rows in batches from Apache Arrow's multi-threaded C++ CSV reader.

Why: the pure-Python reader tops out near 25 MB/s (CPython's float() on every cell is
most of it). pyarrow (of the ``sanlens[analyze]`` extra) parses and converts in
C++ on every core, streaming blocks so memory stays bounded. It is strict on purpose:
anything it does not accept as a clean log - typeperf trailers, a short row, text in
a value cell, a malformed timestamp, a non-UTF-8 file - raises ``NotClean`` and
the caller re-reads the file with the Python reader, which names the line and column.
It has a fixed cost (import, thread pool, ~80 MB), so ``perfmon_batches.choose_engine``
sends it only long logs.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from sanlens.analyze.perfmon_batch import Batch
from sanlens.analyze.source import InputSource
from sanlens.hosts.perfmon import PerfmonLog, parse_timestamp

try:  # optional dependency
    import pyarrow as pa
    import pyarrow.csv as pcsv
except ImportError:  # pragma: no cover - exercised when the extra is absent
    pa = None

BLOCK_BYTES = 1 << 20
READ_AHEAD = 4  # blocks read ahead of the fold (about 0.7 MB of values each at 576 columns)
# MM/DD/YYYY HH:MM:SS[.fff], the only shape parse_timestamp accepts (dates are checked per day).
_TS = re.compile(r"\d\d/\d\d/\d{4} ([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d*)?", re.ASCII)


class NotClean(Exception):
    """Arrow will not vouch for this log; the Python reader must read it."""


def available() -> bool:
    return pa is not None


def arrow_batches(log: PerfmonLog, source: InputSource | None = None) -> Iterator[Batch]:
    """Batches of the log's rows; raises NotClean (possibly after some batches) when Python must read it.

    ``source``: the log opened once (its own stream is read here, from the first byte).
    """
    if pa is None or log.encoding not in ("utf-8", "utf-8-sig"):
        raise NotClean
    if source is not None and not source.regular:
        raise NotClean
    try:
        yield from _run(log, source)
    except (pa.ArrowException, ValueError, OSError, OverflowError):
        raise NotClean from None


def _run(log: PerfmonLog, source: InputSource | None) -> Iterator[Batch]:
    ncols = len(log.header.columns)
    names = [f"c{i}" for i in range(ncols + 1)]
    types: dict[str, Any] = {n: pa.float64() for n in names[1:]}
    types[names[0]] = pa.string()
    reader = pcsv.open_csv(
        log.path if source is None else source.stream(),
        read_options=pcsv.ReadOptions(
            column_names=names, skip_rows=1, block_size=BLOCK_BYTES, use_threads=True
        ),
        parse_options=pcsv.ParseOptions(delimiter=log.delimiter, newlines_in_values=False),
        convert_options=pcsv.ConvertOptions(
            column_types=types,
            null_values=[" ", ""],
            strings_can_be_null=False,
            quoted_strings_can_be_null=True,
        ),
        # Arrow's own allocator (mimalloc in the wheels): against glibc's it reads a log faster and
        # peaks lower (100 MB: 0.94 against 1.0 s, 220 against 233 MB; 1 GB: 9.3 against 9.9 s,
        # 232 against 290 MB), a block's memory reused for the next one's
        memory_pool=pa.default_memory_pool(),
    )
    # the worker parses; this thread converts a block (timestamps, one array) and folds it, so
    # the worker does only what Arrow does without the GIL and is never kept waiting for it
    yield from _batches(_read_ahead(iter(reader)), log.header.bias_minutes * 60.0, ncols)


T = TypeVar("T")


def _read_ahead(blocks: Iterator[T]) -> Iterator[T]:
    """``blocks``, each read on a worker thread while the caller uses the ones before.

    Arrow parses a block with the GIL released and numpy folds one without it, so reading
    and folding share the machine's cores instead of taking turns."""
    with ThreadPoolExecutor(1, thread_name_prefix="perfmon-read") as pool:
        # one worker runs the reads in turn; several queued keep it busy through a slow fold
        pending = deque(pool.submit(next, blocks, None) for _ in range(READ_AHEAD))
        while (block := pending.popleft().result()) is not None:
            pending.append(pool.submit(next, blocks, None))
            yield block


def _batches(reader: Iterator[Any], bias_s: float, ncols: int) -> Iterator[Batch]:
    cache: dict[str, float] = {}
    line = 2
    for batch in reader:
        n = batch.num_rows
        if n == 0:
            continue
        ts = batch.column(0)
        # checked here, not with pyarrow.compute: a few thousand strings per log do not repay
        # the 50 ms that importing Arrow's compute functions costs
        texts = ts.to_pylist()
        if ts.null_count or not all(map(_TS.fullmatch, texts)):
            raise NotClean
        times = np.fromiter((parse_timestamp(t, cache) for t in texts), float, n) + bias_s
        # the value columns as one row-major array, made in C++ (a missing cell is NaN): copying
        # them column by column from Python was half of reading a log of 500 columns
        values = (
            np.asarray(
                batch.drop_columns([batch.schema.names[0]]).to_tensor(null_to_nan=True, row_major=True)
            )
            if ncols
            else np.empty((n, 0))
        )
        yield Batch(line, times, values)
        line += n
