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

from collections.abc import Iterator
from typing import Any

import numpy as np

from sanlens.analyze.perfmon_batch import Batch
from sanlens.analyze.source import InputSource
from sanlens.hosts.perfmon import PerfmonLog, parse_timestamp

try:  # optional dependency
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
except ImportError:  # pragma: no cover - exercised when the extra is absent
    pa = None

BLOCK_BYTES = 1 << 20
# MM/DD/YYYY HH:MM:SS[.fff], the only shape parse_timestamp accepts (dates are checked per day).
_TS = r"^\d\d/\d\d/\d{4} ([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d*)?$"


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
        memory_pool=pa.system_memory_pool(),  # returns freed blocks to the OS: bounded RSS
    )
    bias_s = log.header.bias_minutes * 60.0
    cache: dict[str, float] = {}
    line = 2
    for batch in reader:
        n = batch.num_rows
        if n == 0:
            continue
        ts = batch.column(0)
        if ts.null_count or not pc.all(pc.match_substring_regex(ts, _TS)).as_py():
            raise NotClean
        times = np.fromiter((parse_timestamp(t, cache) for t in ts.to_pylist()), float, n) + bias_s
        values = np.empty((n, ncols), dtype=np.float64)
        for i in range(ncols):
            values[:, i] = batch.column(i + 1).to_numpy(zero_copy_only=False)
        yield Batch(line, times, values)
        line += n
