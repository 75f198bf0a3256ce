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
from collections.abc import Callable

import pytest

from sanlens import gcpolicy
from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.ontap import collector as collector_mod
from sanlens.ontap import inventory as inventory_mod
from sanlens.ontap.client import OntapNotFound
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.cooking import CounterRow

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


def _missing_table(watched: list[weakref.ref[Rows]], lacking: str) -> Callable[[str], list[CounterRow]]:
    """A table fetch that, for ``lacking``, reads a page's worth of rows and then finds the table gone
    (ONTAP's 404 for a table this release lacks); every other table has no rows."""

    def fetch(table: str) -> list[CounterRow]:
        if table != lacking:
            return []
        rows = Rows(range(10_000))
        watched.append(weakref.ref(rows))
        raise OntapNotFound(404, f"no table {table}", path=f"/api/cluster/counter/tables/{table}")

    return fetch


def test_a_table_the_cluster_lacks_keeps_no_rows_on_a_good_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The poll keeps the 404 a while (to log it once, to name the table); not what its fetch read."""
    src = OntapSource(OntapTarget(name="c1", url="https://127.0.0.1:9", tables=["lun", "fcp"]))
    watched: list[weakref.ref[Rows]] = []
    monkeypatch.setattr(src, "_table_rows", _missing_table(watched, "fcp"))
    monkeypatch.setattr(gcpolicy, "_last_full", time.monotonic())
    futures = {t: src._pool.submit(src._table_rows, t) for t in ("lun", "fcp")}
    try:
        rows = src._fetch_rows([], futures)
        assert set(rows) == {"lun"} and src.tables_missing == {"fcp"}
        gcpolicy.settle()  # as after every poll: what is left is frozen
        assert [r for r in watched if r() is not None] == [], "the lacking table's rows are still held"
    finally:
        gc.unfreeze()
        src.close()


def test_a_qos_table_the_cluster_lacks_keeps_no_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    src = OntapSource(OntapTarget(name="c1", url="https://127.0.0.1:9"))
    watched: list[weakref.ref[Rows]] = []
    monkeypatch.setattr(src, "_table_rows", _missing_table(watched, "qos_detail"))
    monkeypatch.setattr(inventory_mod, "fetch_qos", lambda *a, **k: None)
    monkeypatch.setattr(collector_mod, "fetch_qos", lambda *a, **k: None)
    monkeypatch.setattr(gcpolicy, "_last_full", time.monotonic())
    try:
        read = src._read_qos(["qos", "qos_detail"], "9.12.1", 0.0)
        assert set(read.missing) == {"qos_detail"}  # kept with the read, to name the table
        gcpolicy.settle()
        assert [r for r in watched if r() is not None] == [], "the lacking QoS table's rows are still held"
    finally:
        gc.unfreeze()
        src.close()
