"""Progress of a long analysis on stderr (tqdm): bytes per PerfMon log, then the engine's intervals.

Silent when stderr is not a terminal (pipes, CI logs, cron mail) or with
``--quiet``, so redirected output never fills with bars. Small inputs finish
before a bar would be worth drawing and show none.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm

# tqdm is imported when a bar is drawn: its import (it reads its version from the installed
# metadata) is 30 ms, a thirtieth of a short log's whole run, which draws no bar. Whether it is
# installed is known now, so a missing extra still stops `analyze` before it reads anything.
if importlib.util.find_spec("tqdm") is None:
    raise ModuleNotFoundError("No module named 'tqdm'", name="tqdm")

MIN_BYTES = 16 << 20  # a log smaller than this is read in a blink
MIN_UPDATES = 500


def _bar(**kwargs: object) -> tqdm:
    from tqdm import tqdm

    return tqdm(**kwargs)


class Progress:
    def __init__(self, quiet: bool = False) -> None:
        self.enabled = not quiet and sys.stderr.isatty()

    @contextmanager
    def reading(self, name: str, total: int) -> Iterator[Callable[[int], None] | None]:
        """A callback taking the bytes read so far, or None when no bar is shown."""
        if not self.enabled or total < MIN_BYTES:
            yield None
            return
        bar = _bar(
            total=total, desc=f"reading {name}", unit="B", unit_scale=True, leave=False, file=sys.stderr
        )

        def to(position: int) -> None:
            bar.update(max(min(position, total) - bar.n, 0))

        try:
            yield to
        finally:
            bar.close()

    @contextmanager
    def diagnosing(self, total: int) -> Iterator[Callable[[int], None] | None]:
        """A callback taking a count of engine updates done, or None when no bar is shown."""
        if not self.enabled or total < MIN_UPDATES:
            yield None
            return
        bar = _bar(total=total, desc="diagnosing", unit=" intervals", leave=False, file=sys.stderr)
        try:
            yield bar.update
        finally:
            bar.close()
