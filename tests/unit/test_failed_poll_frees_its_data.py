"""A failed ONTAP poll's pages and rows are freed when it ends, not frozen with its traceback.

``sanlens serve`` freezes what each poll leaves (``gcpolicy.settle``); a failed poll leaves its
exception, whose traceback and the future that holds it form a cycle with the frames' locals.
Frozen, a whole poll's data per failure waited minutes for the full collection: a fault that
failed poll after poll grew the exporter's memory by hundreds of MB at 10,000 LUNs.
"""

from __future__ import annotations

import concurrent.futures
import gc
import time
import weakref

import pytest

from sanlens import gcpolicy
from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.ontap.collector import OntapSource

POLLS = 20


class Rows(list[int]):
    """A stand-in for a poll's rows that a weak reference can watch."""


def test_failed_polls_leave_no_rows_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    src = OntapSource(OntapTarget(name="c1", url="https://127.0.0.1:9"))
    watched: list[weakref.ref[Rows]] = []

    def failing_poll() -> None:
        rows = Rows(range(10_000))
        watched.append(weakref.ref(rows))
        fetched: concurrent.futures.Future[Rows] = concurrent.futures.Future()
        fetched.set_exception(SourceError("HTTP 503", reason="api"))  # as a table fetched on the pool fails
        fetched.result()  # raises: exception -> traceback -> this frame -> fetched -> exception

    monkeypatch.setattr(src, "_poll", failing_poll)
    monkeypatch.setattr(gcpolicy, "_last_full", time.monotonic())  # no periodic full collection meanwhile
    try:
        for _ in range(POLLS):
            with pytest.raises(SourceError, match="HTTP 503"):
                src.poll()
        alive = sum(1 for ref in watched if ref() is not None)
        assert alive == 0, f"{alive} of {POLLS} failed polls' rows still held (frozen in a reference cycle)"
    finally:
        gc.unfreeze()
        src.close()
