"""The ONTAP source: one poll = version, inventory, every counter table, cooked into a Snapshot.

Raw cumulative counters are exposed as-is (PromQL computes rates); the cooked
rates between this poll and the previous one feed the diagnoses via OntapView.
One cooker (``ontap.offline.cook_row``) serves both this live path and
``sanlens analyze``.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Mapping
from urllib.parse import quote

from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.join import LunDirectory, LunIdentity
from sanlens.model import (
    AggregateInfo,
    BackgroundOp,
    DiskStats,
    LunStats,
    MetricBuilder,
    NodeStats,
    OntapVersion,
    OntapView,
    Snapshot,
    VolumeStats,
)
from sanlens.ontap.client import OntapClient, OntapNotFound
from sanlens.ontap.inventory import Inventory, fallback_rows, fetch_dynamic, fetch_static
from sanlens.ontap.offline import CounterRow, CounterSpec, cook_row, parse_schema_doc, rows_from_response
from sanlens.ontap.tables import TableSpec, load_tables

log = logging.getLogger(__name__)

INVENTORY_EVERY = 300.0  # seconds between full inventory refreshes
COUNTER_TABLES_SINCE = (9, 11, 0)

Cooked = dict[str, dict[str, float]]  # instance -> {counter or counter#label: value}


class OntapSource:
    kind = "ontap"

    def __init__(self, target: OntapTarget, directory: LunDirectory) -> None:
        self.target = target
        self.name = target.name
        self.interval = float(target.poll_interval)
        self.directory = directory
        self.client = OntapClient(target)
        self.specs: dict[str, TableSpec] = load_tables()
        unknown = [t for t in target.tables if t not in self.specs]
        if unknown:
            raise SourceError(
                f"unknown counter tables {unknown}; known: {sorted(self.specs)}", reason="config"
            )
        self.version: OntapVersion | None = None
        self.inventory = Inventory()
        self._inventory_at = 0.0
        self._schemas: dict[str, tuple[float, dict[str, CounterSpec]]] = {}
        self._prev: dict[str, tuple[float, dict[str, CounterRow]]] = {}
        self._fallback = False

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------ poll
    def poll(self) -> Snapshot:
        # A large cluster's poll allocates ~10^6 short-lived, acyclic objects; the cyclic GC would
        # rescan the whole heap (previous rows, snapshots) over and over while they come and go.
        # Reference counting frees them; the cycle collector runs again once the poll is done.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return self._poll()
        finally:
            if enabled:
                gc.enable()

    def _poll(self) -> Snapshot:
        now = time.time()
        if self.version is None or now - self._inventory_at >= INVENTORY_EVERY:
            self.version = self.client.version()
            v = self.version
            self._fallback = (v.generation, v.major, v.minor) < COUNTER_TABLES_SINCE
            fetch_static(self.client, self.inventory)
            self._inventory_at = now
            self.directory.publish(
                self.name,
                [
                    LunIdentity(self.name, x["svm"], x["volume"], x["lun"], x["serial"], x["node"])
                    for x in self.inventory.luns
                ],
            )
        vol_recs = fetch_dynamic(self.client, self.inventory, self.name, with_stats=self._fallback)
        rows = self._fetch_rows(vol_recs)
        ts = time.time()
        cooked: dict[str, Cooked] = {}
        interval: float | None = None
        for table, trows in rows.items():
            cooked[table], dt = self._cook(table, trows, ts)
            interval = interval or dt
        metrics = self._metrics(rows)
        view = self._view(ts, interval, cooked, rows)
        return Snapshot(self.name, "ontap", ts, metrics, view)

    def _fetch_rows(self, vol_recs: list[dict]) -> dict[str, list[CounterRow]]:
        if not self._fallback:
            out: dict[str, list[CounterRow]] = {}
            try:
                for table in self.target.tables:
                    out[table] = self._table_rows(table)
                return out
            except OntapNotFound:
                if out:  # one table missing on a release that has the others
                    raise
                log.warning("%s: counter tables unavailable; using the statistics fields", self.name)
                self._fallback = True
                vol_recs = fetch_dynamic(self.client, self.inventory, self.name, with_stats=True)
        return fallback_rows(self.client, vol_recs)

    def _schema(self, table: str) -> dict[str, CounterSpec]:
        cached = self._schemas.get(table)
        if cached and time.time() - cached[0] < float(self.target.schema_refresh):
            return cached[1]
        _, specs = parse_schema_doc(self.client.get(f"/api/cluster/counter/tables/{quote(table, safe='')}"))
        self._schemas[table] = (time.time(), specs)
        return specs

    def _table_rows(self, table: str) -> list[CounterRow]:
        schema = self._schema(table)
        wanted = list(self.specs[table].counters)
        for c in list(wanted):
            base = schema.get(c)
            if base and base.base and base.base not in wanted:
                wanted.append(base.base)
        recs = list(
            self.client.records(
                f"/api/cluster/counter/tables/{quote(table, safe='')}/rows",
                {"fields": "properties,counters", "counters.name": "|".join(wanted)},
            )
        )
        rows = rows_from_response({"records": recs}, table)
        if not self.target.skip_incomplete_aggregation:
            for r in rows:
                r.complete = True
        return rows

    def _cook(self, table: str, rows: list[CounterRow], ts: float) -> tuple[Cooked, float | None]:
        prev_ts, prev = self._prev.get(table, (None, {}))
        self._prev[table] = (ts, {r.instance: r for r in rows if r.complete})
        if prev_ts is None:
            return {}, None
        dt = ts - prev_ts
        schemas = {table: self._schemas[table][1]} if table in self._schemas else None
        out: Cooked = {}
        for r in rows:
            p = prev.get(r.instance)
            if p is None:
                continue
            vals = cook_row(p, r, dt, schemas, self.target.min_ops_for_latency)
            if vals:
                out[r.instance] = {(c.counter + ("#" + c.label if c.label else "")): c.value for c in vals}
        return out, dt

    # ------------------------------------------------------------------ exposition
    def _metrics(self, rows: Mapping[str, list[CounterRow]]) -> tuple:
        b = MetricBuilder()
        c = self.name
        inv = self.inventory
        v = self.version
        b.add(
            "sanlens_ontap_cluster_info",
            "gauge",
            "ONTAP cluster and version.",
            {"cluster": c, "version": str(v or "")},
            1,
        )
        for node, n in inv.nodes.items():
            b.add("sanlens_ontap_node_info", "gauge", "ONTAP node inventory.",
                  {"cluster": c, "node": node, "model": n["model"], "serial": n["serial"]}, 1)  # fmt: skip
        for x in inv.luns:
            b.add("sanlens_ontap_lun_info", "gauge", "ONTAP LUN inventory; serial joins host disks.",
                  {"cluster": c, "svm": x["svm"], "volume": x["volume"], "lun": x["lun"], "serial": x["serial"],
                   "os_type": x["os_type"], "node": x["node"]}, 1)  # fmt: skip
        aggr_node = {a: i["node"] for a, i in inv.aggregates.items()}
        for (svm, vol), i in inv.volumes.items():
            b.add("sanlens_ontap_volume_info", "gauge", "ONTAP volume inventory.",
                  {"cluster": c, "svm": svm, "volume": vol, "aggregate": i["aggregate"],
                   "node": aggr_node.get(i["aggregate"], ""), "style": i["style"]}, 1)  # fmt: skip
            if i["move_state"] and i["move_percent"] is not None:
                b.add("sanlens_ontap_volume_move_percent", "gauge", "Volume move progress, percent (only while moving).",
                      {"cluster": c, "svm": svm, "volume": vol, "state": i["move_state"]}, float(i["move_percent"]))  # fmt: skip
        for a, i in inv.aggregates.items():
            b.add("sanlens_ontap_aggregate_info", "gauge", "ONTAP aggregate inventory.",
                  {"cluster": c, "aggregate": a, "node": i["node"], "disk_type": i["disk_type"]}, 1)  # fmt: skip
            if i["disk_count"] is not None:
                b.add("sanlens_ontap_aggregate_disks", "gauge", "Disks in the aggregate.",
                      {"cluster": c, "aggregate": a}, float(i["disk_count"]))  # fmt: skip
        for op in inv.raid_ops:
            b.add("sanlens_ontap_raid_operation_percent", "gauge", "RAID background operation progress, percent (only while active).",
                  {"cluster": c, "aggregate": op.aggregate, "raid_group": op.raid_group, "operation": op.operation},
                  float(op.percent or 0))  # fmt: skip
        for d, i in inv.disks.items():
            b.add("sanlens_ontap_disk_info", "gauge", "ONTAP disk inventory.",
                  {"cluster": c, "node": i["node"], "disk": d, "aggregate": i["aggregate"],
                   "raid_group": inv.disk_raid_group.get(d, ""), "type": i["type"], "rpm": i["rpm"],
                   "container": i["container"], "state": i["state"]}, 1)  # fmt: skip
        procs_from_table = "system:node" in rows and any(
            "num_processors" in r.counters for r in rows["system:node"]
        )
        if not procs_from_table:
            for node, n in inv.nodes.items():
                if n["processors"] is not None:
                    b.add("sanlens_ontap_node_processors", "gauge", "Processors in the node.",
                          {"cluster": c, "node": node}, float(n["processors"]))  # fmt: skip
        for table, trows in rows.items():
            spec = self.specs[table]
            for r in trows:
                base = {"cluster": c, **spec.label_values(r)}
                spec.emit(r, base, b)
        return b.build()

    # ------------------------------------------------------------------ view
    def _view(self, ts: float, interval: float | None, cooked: Mapping[str, Cooked],
              rows: Mapping[str, list[CounterRow]]) -> OntapView:  # fmt: skip
        c = self.name
        inv = self.inventory
        aggr_node = {a: i["node"] for a, i in inv.aggregates.items()}
        props = {t: {r.instance: r.properties for r in rs} for t, rs in rows.items()}

        def val(d: Mapping[str, float], k: str) -> float | None:
            return d.get(k)

        serial = {(x["svm"], x["lun"]): x for x in inv.luns}
        luns = []
        for inst, d in cooked.get("lun", {}).items():
            p = props["lun"].get(inst, {})
            svm, path = p.get("svm.name", ""), p.get("name", "")
            meta = serial.get((svm, path), {})
            luns.append(LunStats(c, svm, p.get("volume.name", "") or meta.get("volume", ""), path,
                                 meta.get("serial", ""), p.get("node.name", "") or meta.get("node", ""),
                                 val(d, "read_ops"), val(d, "write_ops"), val(d, "other_ops"),
                                 val(d, "avg_read_latency"), val(d, "avg_write_latency"),
                                 val(d, "read_data"), val(d, "write_data")))  # fmt: skip
        vols = []
        seen_vols = set()
        for inst, d in cooked.get("volume", {}).items():
            p = props["volume"].get(inst, {})
            key = (p.get("svm.name", ""), p.get("name", ""))
            seen_vols.add(key)
            i = inv.volumes.get(key, {})
            aggr = i.get("aggregate") or p.get("parent_aggregate", "")
            parts = [val(d, k) for k in ("total_read_ops", "total_write_ops", "total_other_ops")]
            total = val(d, "total_ops")
            if total is None and any(x is not None for x in parts):
                total = sum(x or 0.0 for x in parts)
            vols.append(VolumeStats(c, key[0], key[1], aggr, aggr_node.get(aggr, p.get("node.name", "")),
                                    i.get("style", ""), parts[0], parts[1], parts[2], total,
                                    val(d, "read_latency"), val(d, "write_latency"), val(d, "average_latency"),
                                    i.get("move_state", ""), _f(i.get("move_percent"))))  # fmt: skip
        for key, i in inv.volumes.items():  # volumes without counters still carry move state
            if key not in seen_vols and i.get("move_state"):
                vols.append(VolumeStats(c, key[0], key[1], i["aggregate"], aggr_node.get(i["aggregate"], ""),
                                        i["style"], move_state=i["move_state"], move_percent=_f(i["move_percent"])))  # fmt: skip
        nodes = []
        seen_nodes = set()
        for inst, d in cooked.get("system:node", {}).items():
            p = props["system:node"].get(inst, {})
            name = p.get("name") or p.get("node.name") or inst
            seen_nodes.add(name)
            n = inv.nodes.get(name, {})
            procs = d.get("num_processors", n.get("processors"))
            busy = d.get("cpu_busy")
            domains = {k.split("#", 1)[1]: v / 100.0 for k, v in d.items() if k.startswith("domain_busy#")}
            nodes.append(NodeStats(c, name, n.get("model", ""), int(procs) if procs is not None else None,
                                   busy / 100.0 if busy is not None else None, domains))  # fmt: skip
        for name, n in inv.nodes.items():
            if name not in seen_nodes:
                procs = n.get("processors")
                nodes.append(
                    NodeStats(c, name, n.get("model", ""), int(procs) if procs is not None else None)
                )
        disks = []
        for inst, d in cooked.get("disk:constituent", {}).items():
            p = props["disk:constituent"].get(inst, {})
            name = p.get("name", inst)
            i = inv.disks.get(name, {})
            rg = p.get("raid_group") or inv.disk_raid_group.get(name, "")
            aggr = i.get("aggregate") or (rg.split("/")[1] if rg.count("/") >= 2 else "")
            busy = d.get("disk_busy")
            disks.append(DiskStats(c, name, aggr, p.get("node.name", "") or i.get("node", ""), rg,
                                   i.get("type", ""), i.get("container", ""),
                                   busy / 100.0 if busy is not None else None,
                                   d.get("user_reads"), d.get("user_writes")))  # fmt: skip
        aggrs = tuple(
            AggregateInfo(
                c, a, i["node"], i["disk_type"], int(i["disk_count"]) if i["disk_count"] is not None else None
            )
            for a, i in inv.aggregates.items()
        )
        moves = tuple(
            BackgroundOp(c, "volume_move", i["aggregate"], vol, svm, percent=_f(i["move_percent"]))
            for (svm, vol), i in inv.volumes.items()
            if i["move_state"] and i["move_state"] not in ("done", "success", "failed", "aborted")
        )
        return OntapView(c, ts, interval, self.version, tuple(luns), tuple(vols), tuple(nodes), tuple(disks),
                         aggrs, tuple(inv.raid_ops) + moves)  # fmt: skip


def _f(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) else None
