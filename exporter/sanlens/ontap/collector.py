"""The ONTAP source: one poll = version, inventory, every counter table, cooked into a Snapshot
that also carries the inventory's LUN and namespace identities for the host join (sanlens.join.stage).

Raw cumulative counters are exposed as-is (PromQL computes rates); the cooked
rates between this poll and the previous one feed the diagnoses via OntapView.
One cooker (``ontap.cooking.cook_table``, column by column over a table's rows)
serves both this live path and ``sanlens analyze``.
"""

from __future__ import annotations

import concurrent.futures
import gc
import logging
import time
from collections import Counter
from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import quote

from sanlens import gcpolicy
from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.freshness import ReceiveClock
from sanlens.model import LunIdentity, MetricType, OntapVersion, Snapshot
from sanlens.ontap import collector_metrics, qos_views, statistics
from sanlens.ontap.capabilities import ASA_R2, Capabilities, personality
from sanlens.ontap.catalogue import TableDef, catalogue, unit_scale
from sanlens.ontap.client import POOL_SIZE, OntapClient, OntapNotFound
from sanlens.ontap.collector_metrics import CLUSTER_INFO_HELP, MALFORMED_HELP
from sanlens.ontap.cooking import (
    CaptureError,
    CookedTable,
    CounterSpec,
    cook_table,
    keeps_partial,
    pair,
)
from sanlens.ontap.counter_json import KeptStrings, decode_records, parse_schema_doc
from sanlens.ontap.inputs import status
from sanlens.ontap.inventory import Inventory, fetch_dynamic, fetch_qos, fetch_static, identities
from sanlens.ontap.qos_reader import QosRead, QosReader
from sanlens.ontap.row_block import RowBlock
from sanlens.ontap.rows_page import PageReader, RowsPage, decode_page
from sanlens.ontap.views import build_view, table_fields

__all__ = ["CLUSTER_INFO_HELP", "MALFORMED_HELP", "OntapSource"]

log = logging.getLogger(__name__)

INVENTORY_EVERY = 300.0  # seconds between full inventory refreshes
COUNTER_TABLES_SINCE = (9, 11, 0)

# (counter as the row carries it, family, type, help, label names, `by` value or None for arrays, scale)
_Emit = tuple[str, str, MetricType, str, tuple[str, ...], str | None, float]
_NO_SCHEMA: dict[str, CounterSpec] = {}


class _Schema(NamedTuple):
    """A table's counter schema as one ONTAP release serves it: an upgrade can add or rename counters."""

    fetched_at: float
    version: str
    specs: dict[str, CounterSpec]


class OntapSource:
    kind = "ontap"

    def __init__(self, target: OntapTarget) -> None:
        self.target = target
        self.name = target.name
        self.interval = float(target.poll_interval)
        self.client = OntapClient(target)
        # poll times: Unix seconds whose differences (the rate intervals) an NTP step cannot distort
        self.clock = ReceiveClock()
        # tables are fetched side by side over the client's connection pool, so a poll takes
        # about as long as its slowest table, not the sum of them
        self._pool = concurrent.futures.ThreadPoolExecutor(POOL_SIZE, thread_name_prefix=f"ontap-{self.name}")
        self.specs: dict[str, TableDef] = {n: t for n, t in catalogue().items() if t.rest}
        unknown = [t for t in target.tables if t not in self.specs]
        if unknown:
            raise SourceError(
                f"unknown counter tables {unknown}; known: {sorted(self.specs)}", reason="config"
            )
        self.missing: dict[str, tuple[str, ...]] = {}  # table -> catalogue counters the cluster lacks
        self._missing_logged: set[tuple[str, str, str]] = set()
        self._emit: dict[tuple[str, int], list[_Emit]] = {}
        self.partial: dict[str, int] = {}  # table -> rows with incomplete aggregation this poll
        # table -> ids of this poll's rows with incomplete aggregation: sums that dropped, never exported
        self._partial_ids: dict[str, frozenset[str]] = {}
        self.tables_missing: set[str] = set()  # configured tables this cluster answers 404 for
        self._missing_tables_logged: set[tuple[str, str]] = set()
        self._fetched_at: dict[str, float] = {}  # table -> when its rows arrived in this poll
        self._kept: dict[str, KeptStrings] = {}  # table -> its ids and names, one object each across polls
        self.malformed: dict[str, Counter[str]] = {}  # table -> records skipped this poll, by problem
        self.version: OntapVersion | None = None
        self.inventory = Inventory()
        self._inventory_at = 0.0
        self.identities: tuple[LunIdentity, ...] = ()  # the inventory's LUNs and namespaces, for the join
        self._schemas: dict[str, _Schema] = {}
        self._prev: dict[str, tuple[float, RowBlock]] = {}  # table -> the last poll's rows and time
        self._fallback = False  # this poll reads the objects' statistics fields, not the counter tables
        self.caps = Capabilities(self.name)
        # QoS tables and endpoints run on a schedule of their own; the view keeps the last QoS figures
        every = 3 * self.interval if target.qos_interval is None else float(target.qos_interval)
        self.qos = qos_views.QosState(every, self.interval / 2)
        self.qos_reader = QosReader(self.name)
        self._qos_inventory_at = -INVENTORY_EVERY  # when the QoS workloads were last read in full
        self._qos_missing: set[str] = set()  # QoS tables the cluster lacks, as the last QoS read found

    def close(self) -> None:
        self.qos_reader.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()

    def abort(self) -> None:
        """Cut the requests of a poll abandoned at its deadline, so it ends now."""
        self.client.abort()

    # ------------------------------------------------------------------ poll
    def poll(self) -> Snapshot:
        # A large cluster's poll allocates ~10^6 short-lived, acyclic objects; the cyclic GC would
        # rescan the whole heap (previous rows, snapshots) over and over while they come and go.
        # Reference counting frees them; the cycle collector runs again once the poll is done.
        self.client.resume()
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._poll()
        except BaseException as e:
            gcpolicy.release(e)  # a failed poll's pages and rows must not be frozen with its traceback
            raise
        finally:
            gcpolicy.settle()  # the rows and view it keeps are long-lived: out of the scans
            if enabled:
                gc.enable()

    def _poll(self) -> Snapshot:
        now = self.clock()
        # the version is read every poll (one small GET): after an upgrade the counter schemas, the
        # inventory and the version-dependent limits must follow at once, not hours later
        version = self.client.version()
        upgraded = self.version is not None and _release(version) != _release(self.version)
        if upgraded:
            log.warning(
                "%s: ONTAP version changed from %s to %s; re-reading counter schemas and inventory",
                self.name, self.version, version,
            )  # fmt: skip
        full = self.version is None or upgraded or now - self._inventory_at >= INVENTORY_EVERY
        if full:
            self.version = version
            was = self.caps.personality
            self.caps.personality = personality(self.client)
            if self.caps.personality == ASA_R2 and was != ASA_R2:
                log.info(
                    "%s: ASA r2 system (ONTAP %s): performance from the statistics fields; no aggregates, so "
                    "disk_busy_imbalance, aggregate_degraded, volume_affinity_concentration and the RAID part "
                    "of background_operation_impact have no subject here",
                    self.name, version,
                )  # fmt: skip
            self._fallback = self._statistics_path()
            fetch_static(self.client, self.inventory, self.caps, _release(version))
            self._inventory_at = now
            self.identities = identities(self.name, self.inventory)
        self._fetched_at = {}
        dynamic = self._pool.submit(
            fetch_dynamic,
            self.client,
            self.inventory,
            self.name,
            self._fallback,
            self.caps,
            _release(version),
            full,
        )
        polled = [t for t in self.target.tables if not self.specs[t].schedule]
        tables = {} if self._fallback else {t: self._pool.submit(self._table_rows, t) for t in polled}
        rows = self._fetch_rows(dynamic.result(), tables)
        ts = self.clock()
        cooked: list[CookedTable] = []
        interval: float | None = None
        for table, trows in rows.items():
            # each table's rows against the time they arrived: one poll timestamp taken after the
            # last table would stretch the earlier tables' intervals and understate their rates
            dt = self._cook(table, trows, self._fetched_at.get(table, ts), cooked)
            interval = interval or dt
        self._qos_step(now, version)
        metrics = collector_metrics.render(self, {**rows, **self.qos.rows})
        view = build_view(
            self.name,
            ts,
            interval,
            self.version,
            table_fields(cooked),
            self.inventory,
            self.qos.workloads,
            self.qos.policies,
        )
        inputs = status(
            self.caps.personality,
            "statistics" if self._fallback else "tables",
            self.tables_missing | self._qos_missing,
            {} if self._fallback else self.missing,
            self.caps.missing,
        )
        return Snapshot(self.name, "ontap", ts, metrics, view, inputs=inputs, lun_identities=self.identities)

    def _qos_step(self, now: float, version: OntapVersion) -> None:
        """Fold a finished QoS read into the QoS state; start the next when due (sanlens.ontap.qos_reader).
        The statistics fields carry no QoS: that path reads none."""
        qos_tables = [t for t in self.target.tables if self.specs[t].schedule]
        if not qos_tables or self._fallback:
            return
        done = self.qos_reader.take()
        if done is not None:
            cooked: list[CookedTable] = []
            for table, trows in done.rows.items():
                self._cook(table, trows, done.fetched_at[table], cooked)
            for table, error in done.missing.items():
                self._table_missing(table, error)
            self._qos_missing = set(done.missing)
            self.qos.update(self.name, done.started, self.inventory, done.rows, {t.table: t for t in cooked})
        if self.qos.due(now) and not self.qos_reader.running:
            self.qos_reader.start(lambda: self._read_qos(qos_tables, _release(version), now))

    def _read_qos(self, tables: list[str], release: str, started: float) -> QosRead:
        """One QoS read, on the QoS reader's thread: each table, then the policies, and the workloads
        when a full inventory read is due, none is held, or a row names a workload they lack."""
        out = QosRead(started)
        for table in tables:
            try:
                out.rows[table] = self._table_rows(table)
            except OntapNotFound as e:
                out.missing[table] = gcpolicy.released(e)
                continue
            out.fetched_at[table] = self.clock()
        inv = self.inventory
        workloads = (
            started - self._qos_inventory_at >= INVENTORY_EVERY
            or not inv.qos_workloads
            or qos_views.unknown_workload(inv, out.rows)
        )
        fetch_qos(self.client, inv, self.caps, release, workloads)
        if workloads:
            self._qos_inventory_at = started
        return out

    def qos_pending(self) -> bool:
        """Whether a QoS read is running (benchmarks and tests wait for it with ``qos_reader.wait``)."""
        return self.qos_reader.running

    def _statistics_path(self) -> bool:
        """Whether this cluster's performance comes from the objects' statistics fields: chosen in the
        config, or (auto) an ASA r2 system or a release before the counter tables."""
        mode = self.target.collection
        if mode != "auto":
            return mode == "statistics"
        v = self.version
        old = v is not None and (v.generation, v.major, v.minor) < COUNTER_TABLES_SINCE
        return old or self.caps.personality == ASA_R2

    def _fetch_rows(
        self, vol_recs: list[dict], tables: Mapping[str, concurrent.futures.Future[RowBlock]]
    ) -> dict[str, RowBlock]:
        if tables:
            out: dict[str, RowBlock] = {}
            absent: dict[str, OntapNotFound] = {}
            for table, future in tables.items():
                try:
                    out[table] = future.result()
                except OntapNotFound as e:
                    absent[table] = gcpolicy.released(e)
            self.tables_missing = set(absent) if out or self.target.collection == "tables" else set()
            if out or self.target.collection == "tables":
                # tables missing on a release that has the others: only what needs them is lost
                for table, missing in absent.items():
                    self._table_missing(table, missing)
                    self.partial.pop(table, None)
                    self._partial_ids.pop(table, None)
                    self.malformed.pop(table, None)
                return out
            log.warning("%s: counter tables unavailable; using the statistics fields", self.name)
            self._fallback = True
            vol_recs = fetch_dynamic(self.client, self.inventory, self.name, with_stats=True)
        fetched = statistics.fetch_rows(self.client, vol_recs, self.caps, _release(self.version))
        rows = {t: RowBlock.of_rows(t, trows) for t, trows in fetched.items()}
        self._fetched_at = dict.fromkeys(rows, self.clock())
        # a record whose statistics status is not ok is a partial sample: never exported nor cooked
        self._partial_ids = {t: _incomplete(b) for t, b in rows.items()}
        self.partial = {t: len(ids) for t, ids in self._partial_ids.items() if ids}
        return rows

    def _table_missing(self, table: str, error: Exception) -> None:
        """A counter table the cluster does not serve (a release without it, no such hardware): logged once."""
        key = (table, str(self.version or ""))
        if key not in self._missing_tables_logged:
            self._missing_tables_logged.add(key)
            log.warning(
                "%s: ONTAP %s has no counter table %s (%s); the metrics and diagnoses that need it stay empty",
                self.name, self.version or "?", table, error,
            )  # fmt: skip

    def _schema(self, table: str) -> dict[str, CounterSpec]:
        """The table's counter schema, cached per ONTAP release (an upgrade re-reads it at once)."""
        release = _release(self.version)
        cached = self._schemas.get(table)
        if (
            cached
            and cached.version == release
            and time.time() - cached.fetched_at < float(self.target.schema_refresh)
        ):
            return cached.specs
        _, specs = parse_schema_doc(self.client.get(f"/api/cluster/counter/tables/{quote(table, safe='')}"))
        self._schemas[table] = _Schema(time.time(), release, specs)
        self._check_schema(table, specs)
        return specs

    def _check_schema(self, table: str, schema: dict[str, CounterSpec]) -> None:
        """Counters the catalogue wants that this cluster lacks: logged once per table and version."""
        missing = tuple(c for c in self.specs[table].wanted if c not in schema)
        self.missing[table] = missing
        key = (table, str(self.version or ""), ",".join(missing))
        if missing and key not in self._missing_logged:
            self._missing_logged.add(key)
            log.warning(
                "%s: ONTAP %s counter table %s lacks %s; the metrics and diagnoses that need them stay empty",
                self.name, self.version or "?", table, ", ".join(missing),
            )  # fmt: skip

    def _table_rows(self, table: str) -> RowBlock:
        schema = self._schema(table)
        wanted = [c for c in self.specs[table].wanted if c in schema]
        for c in list(wanted):
            base = schema.get(c)
            if base and base.base and base.base not in wanted and base.base in schema:
                wanted.append(base.base)
        rows = RowBlock(table)
        problems: Counter[str] = Counter()
        kept = self._kept.setdefault(table, KeptStrings())
        kept.new_poll()
        seen = 0
        params = {"fields": "properties,counters", "counters.name": "|".join(wanted)}
        for page in self.client.typed_pages(
            f"/api/cluster/counter/tables/{quote(table, safe='')}/rows",
            {**params, **qos_views.row_filter(table)},
            PageReader(tuple(wanted)),
        ):
            try:
                if isinstance(page, RowsPage):
                    seen += decode_page(rows, page, table, seen, problems, kept)
                else:
                    decode_records(rows, page, table, first=seen, problems=problems, kept=kept)
                    seen += len(page)
            except CaptureError as e:  # a record or counter of the wrong type: the page cannot be trusted
                raise SourceError(str(e), reason="malformed") from None
            del page
        kept.done()
        self._fetched_at[table] = self.clock()
        rows = _first_of_each(rows, problems)
        self._note_malformed(table, problems)
        if seen and not len(rows):
            raise SourceError(
                f"{table}: none of the {seen} records is a row ({_problems(problems)})", reason="malformed"
            )
        partial = _incomplete(rows)
        self._note_partial(table, len(partial))
        self.partial[table] = len(partial)
        self._partial_ids[table] = partial
        if not self.target.skip_incomplete_aggregation:  # the view keeps them; /metrics never does
            rows.complete = [True] * len(rows)
        return rows

    def _note_malformed(self, table: str, problems: Counter[str]) -> None:
        """Log when a table's records start (or stop) being garbage, not every poll."""
        before = self.malformed.get(table)
        self.malformed[table] = problems
        if problems and not before:
            log.warning(
                "%s: %s records skipped (%s); the first of records sharing an id is kept",
                self.name, table, _problems(problems),
            )  # fmt: skip
        elif before and not problems:
            log.info("%s: %s records are well-formed again", self.name, table)

    def _note_partial(self, table: str, n: int) -> None:
        """Log when a table's rows start (or stop) missing constituents, not every poll."""
        before = self.partial.get(table, 0)
        if n and not before:
            log.warning(
                "%s: %d %s rows have incomplete aggregation (a node did not answer); their counters are "
                "left out of /metrics until it is complete again",
                self.name, n, table,
            )  # fmt: skip
        elif before and not n:
            log.info("%s: %s rows are complete again", self.name, table)

    def _cook(self, table: str, rows: RowBlock, ts: float, out: list[CookedTable]) -> float | None:
        """Cook ``rows`` against the previous poll into ``out``; the interval, or None on the first poll.

        The rows kept for the next poll's deltas are those complete (or kept partial by the table's
        policy), their float columns as arrays (``RowBlock.compacted``); a statistics field not
        sampled again since the last poll keeps its last sample."""
        had = self._prev.get(table)
        kept = rows if keeps_partial(table) or all(rows.complete) else rows.take(_where(rows.complete))
        if had is None:
            self._prev[table] = (ts, kept.compacted())
            return None
        prev_ts, prev = had
        dt = ts - prev_ts
        schemas = {table: self._schemas[table].specs} if table in self._schemas else None
        # min_ops: a centre's service and wait times count however few its visits; its share needs them all
        min_ops = 0.0 if table in qos_views.DETAIL_TABLES else self.target.min_ops_for_latency
        paired = pair(prev, rows, dt)
        if paired.stale:
            kept_ids = set(kept.instances)
            stale = [j for j in paired.stale if prev.instances[j] in kept_ids]
            gone = {prev.instances[j] for j in stale}
            fresh = [k for k, inst in enumerate(kept.instances) if inst not in gone]
            kept = kept.take(fresh).joined(prev.take(stale))
        self._prev[table] = (ts, kept.compacted())
        out.append(cook_table(paired.prev, paired.cur, paired.dts, schemas, min_ops))
        return dt

    def emit_plan(self, table: str) -> list[_Emit]:
        """How each counter of ``table`` is exported; scales from the live schema's units."""
        live = self._schemas[table].specs if table in self._schemas else _NO_SCHEMA
        key = (table, id(live))
        plan = self._emit.get(key)
        if plan is not None:
            return plan
        tdef = self.specs[table]
        names = ("cluster", *(lab.name for lab in tdef.export_labels))
        plan = []
        for c in tdef.counters.values():
            if not c.metric:
                continue
            m = tdef.metrics[c.metric]
            unit = live[c.name].unit if c.name in live else None
            scale = c.export_scale if c.export_scale is not None else unit_scale(unit or c.spec.unit)
            lnames = (*names, m.by) if m.by else names
            plan.append((c.name, m.name, m.type, m.help, lnames, c.label if m.by else None, scale))
        self._emit = {k: v for k, v in self._emit.items() if k[0] != table}
        self._emit[key] = plan
        return plan


def _first_of_each(rows: RowBlock, problems: Counter[str]) -> RowBlock:
    """The first row of each id: ONTAP never repeats one, but a collection that changes between pages
    can hand the same record twice, and two rows of one instance would be cooked and exported twice."""
    if len(set(rows.instances)) == len(rows):
        return rows
    seen: set[str] = set()
    keep: list[int] = []
    for i, inst in enumerate(rows.instances):
        if inst not in seen:
            seen.add(inst)
            keep.append(i)
    problems["duplicate_id"] += len(rows) - len(keep)
    return rows.take(keep)


def _incomplete(rows: RowBlock) -> frozenset[str]:
    """The ids of rows whose aggregation was incomplete."""
    return frozenset(inst for inst, ok in zip(rows.instances, rows.complete, strict=True) if not ok)


def _where(flags: list[bool]) -> list[int]:
    return [i for i, f in enumerate(flags) if f]


def _problems(problems: Counter[str]) -> str:
    return ", ".join(f"{n} {p.replace('_', ' ')}" for p, n in sorted(problems.items()))


def _release(v: OntapVersion | None) -> str:
    """The key of one ONTAP release: the full version string (9.12.1P2 differs from 9.12.1), else x.y.z."""
    if v is None:
        return ""
    return v.full or str(v)
