"""HTTP request handling of the simulator: ONTAP REST routes, windows_exporter and node_exporter pages,
control and faults.

Faults (latency, 5xx, 401, resets, malformed JSON, pagination loops, partial
aggregation, a missing counter table) apply to the data endpoints, never to the ``/-/`` control ones.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import ssl
import struct
import time
import urllib.parse
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from sanlens_sim import (
    linux_api,
    ontap_api,
    ontap_asa_r2,
    ontap_cli,
    ontap_collections,
    ontap_namespaces,
    ontap_network,
    ontap_qos,
    ontap_qos_tables,
    ontap_query,
    ontap_tables,
    windows_api,
)
from sanlens_sim.estate import Estate
from sanlens_sim.faults import FaultError, FaultState
from sanlens_sim.ontap_api import ApiError, Json
from sanlens_sim.ontap_tables import RowOptions
from sanlens_sim.scenario_base import KnobError
from sanlens_sim.world import World, stable_uuid

log = logging.getLogger(__name__)

TABLES_PREFIX = "/api/cluster/counter/tables"


class Simulated(Protocol):
    """What the handler serves and drives: the simulator's estate, its faults and its control verbs
    (``sanlens_sim.server.Simulator``)."""

    estate: Estate
    faults: FaultState

    def state(self) -> Json: ...

    def set_scenario(self, name: str, **knobs: Any) -> None: ...

    def set_faults(self, **knobs: Any) -> None: ...


class SimHTTPServer(ThreadingHTTPServer):
    """The HTTP server of the simulator: carries it to each request's ``Handler``."""

    daemon_threads = True
    allow_reuse_address = True
    sim: Simulated

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops the connection or never speaks TLS (a probe) is not a server error."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, ssl.SSLError | OSError):
            log.debug("connection from %s dropped: %s", client_address[0], exc)
            return
        super().handle_error(request, client_address)


class _Reset(Exception):
    """Abort the connection with a TCP reset (fault ``reset_rate``)."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SimHTTPServer
    server_version = "sanlens-sim"

    def setup(self) -> None:
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.settimeout(10)
            try:
                self.connection.do_handshake()
            except (ssl.SSLError, OSError):
                self.close_connection = True
                raise

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    @property
    def sim(self) -> Simulated:
        return self.server.sim

    @property
    def _loop(self) -> bool:
        return self.sim.faults.faults.pagination_loop

    # -- plumbing
    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any, malformed: bool = False) -> None:
        body = json.dumps(obj, separators=(",", ":")).encode()
        if malformed:
            body = body[: max(1, len(body) // 2)]
        self._send(status, body, "application/hal+json")

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path).rstrip("/") or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        try:
            if path.startswith("/-/"):
                self._control(method, path)
                return
            if method != "GET":
                raise ApiError(405, f"method {method} not allowed on {path}", "3")
            self._apply_faults()
            if path.startswith("/windows/"):
                self._windows(path)
            elif path.startswith("/linux/"):
                self._linux(path)
            elif path.startswith("/api/"):
                self._api(path, parsed.path, query)
            else:
                raise ApiError(404, f"API not found: {path}", "3")
        except _Reset:
            self._reset()
        except ApiError as e:
            self._json(e.status, e.body())
        except (BrokenPipeError, ConnectionResetError) as e:  # the client hung up mid-answer
            log.debug("client went away on %s: %s", self.path, e)
            self.close_connection = True
        except Exception as e:  # a simulator bug must not kill the connection silently
            log.exception("simulator error on %s", self.path)
            self._json(500, {"error": {"message": f"simulator error: {e}", "code": "1"}})

    def _apply_faults(self) -> None:
        fs = self.sim.faults
        f = fs.faults
        if f.status_401:
            raise ApiError(401, "not authorized for that command", "6")
        if fs.roll(f.reset_rate):
            raise _Reset
        if f.latency_ms > 0:
            time.sleep(f.latency_ms / 1000.0)
        if fs.roll(f.error_rate_5xx):
            raise ApiError(503, "The service is temporarily unavailable (simulated).", "2")

    # -- control
    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError as e:
            raise ApiError(400, f"body is not valid JSON: {e}", "400") from None

    def _control(self, method: str, path: str) -> None:
        sim = self.sim
        if path in ("/-/sim/state", "/-/healthy") and method == "GET":
            self._json(200, sim.state())
        elif path == "/-/sim/faults" and method == "GET":
            self._json(200, sim.faults.snapshot())
        elif path == "/-/sim/scenario" and method == "POST":
            body = self._body()
            if not isinstance(body, dict) or not isinstance(body.get("scenario"), str):
                raise ApiError(
                    400, 'body must be a JSON object with "scenario": "<name>" and optional knobs', "400"
                )
            knobs = {k: v for k, v in body.items() if k != "scenario"}
            try:
                sim.set_scenario(body["scenario"], **knobs)
            except KnobError as e:
                raise ApiError(400, str(e), "400") from None
            self._json(200, sim.state())
        elif path == "/-/sim/faults" and method == "POST":
            body = self._body()
            try:
                sim.set_faults(**body) if isinstance(body, dict) else sim.faults.faults.update(body)
            except FaultError as e:
                raise ApiError(400, str(e), "400") from None
            self._json(200, sim.faults.snapshot())
        else:
            raise ApiError(404, f"no control endpoint {method} {path}", "3")

    # -- windows
    def _windows(self, path: str) -> None:
        parts = path.split("/")
        if len(parts) != 4 or parts[3] not in ("metrics", "winrm"):
            raise ApiError(
                404,
                f"no such windows endpoint {path}; use /windows/<host>/metrics or /windows/<host>/winrm",
                "3",
            )
        skew = self.sim.faults.faults.host_clock_offset_s  # the host's clock, not the counters' time
        with self.sim.estate.lock:
            t = self.sim.estate.clock()
            world = self.sim.estate.world(t)
            hosts = [h for h in world.hosts if h.os == "windows"]
            host = next((h for h in hosts if h.name == parts[2]), None)
            if host is None:
                raise ApiError(404, f"unknown host {parts[2]!r}; hosts: {[h.name for h in hosts]}", "3")
            if parts[3] == "winrm":  # the JSON the WinRM source's PowerShell prints
                doc = windows_api.winrm_document(self.sim.estate, host, t, skew)
            else:
                text = windows_api.render(self.sim.estate, host, t, skew)
        if parts[3] == "winrm":
            self._json(200, doc)
            return
        self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")

    # -- linux
    def _linux(self, path: str) -> None:
        parts = path.split("/")
        if len(parts) != 4 or parts[3] != "metrics":
            raise ApiError(404, f"no such linux endpoint {path}; use /linux/<host>/metrics", "3")
        with self.sim.estate.lock:
            t = self.sim.estate.clock()
            hosts = [h for h in self.sim.estate.world(t).hosts if h.os == "linux"]
            host = next((h for h in hosts if h.name == parts[2]), None)
            if host is None:
                raise ApiError(404, f"unknown host {parts[2]!r}; linux hosts: {[h.name for h in hosts]}", "3")
            text = linux_api.render(self.sim.estate, host, t)
        self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")

    # -- ONTAP
    def _api(self, path: str, raw_path: str, query: dict[str, str]) -> None:
        estate = self.sim.estate
        f = self.sim.faults.faults
        malformed = self.sim.faults.roll(f.malformed_json_rate)
        with estate.lock:
            t = estate.clock()
            w = estate.world(t)
            if path == "/api/cluster":
                self._json(
                    200,
                    ontap_api.project(
                        ontap_collections.cluster_record(w), ontap_api.fields_of(query, all_default=True)
                    ),
                    malformed,
                )
                return
            if path == "/api/storage/cluster":
                record = ontap_collections.storage_cluster_record(w)
                self._json(200, ontap_api.project(record, ontap_api.fields_of(query)), malformed)
                return
            if path.startswith(TABLES_PREFIX):
                self._tables(estate, w, t, path, raw_path, query, malformed)
                return
            if path.startswith(ontap_cli.CLI_PREFIX):
                answer = ontap_cli.answer(estate, w, t, path, raw_path, query)
            else:
                answer = self._collection(estate, w, t, path, raw_path, query)
        self._json(200, answer, malformed)

    def _collection(
        self, estate: Estate, w: World, t: float, path: str, raw_path: str, query: dict[str, str]
    ) -> Json:
        paths = ontap_api.parse_fields(query.get("fields"))
        conds = ontap_query.filters(query)
        stats = (
            paths is None
            or any(p[0] in ("statistics", "metric") for p in paths)
            or any(c.split(".")[0] in ("statistics", "metric") for c in conds)
        )
        nfs = paths is not None and any(p[:2] == ["statistics", "nfs_ops_raw"] for p in paths)
        build: Callable[[list[Any]], list[Json]]
        items: list[Any]
        key = "uuid"
        if path in ontap_qos.COLLECTIONS:
            items, build = ontap_qos.COLLECTIONS[path](w)
        elif path == "/api/cluster/nodes":
            items, build = w.nodes, lambda page: ontap_collections.node_records(estate, w, page, t)
        elif path == "/api/storage/luns":
            items, build = w.plain_luns, lambda page: ontap_collections.lun_records(estate, w, page, t, stats)
        elif path == "/api/storage/namespaces":
            items = w.namespaces
            build = partial(ontap_namespaces.namespace_records, estate, w, t=t, with_stats=stats)
        elif path == "/api/storage/volumes":
            items = w.volumes
            build = partial(ontap_collections.volume_records, estate, w, t=t, with_stats=stats, with_nfs=nfs)
        elif w.asa_r2 and path.startswith("/api/storage/aggregates"):
            raise ontap_api.asa_r2_refusal()
        elif w.asa_r2 and path == "/api/storage/storage-units":
            items = w.luns
            build = partial(ontap_asa_r2.storage_unit_records, estate, w, t=t, with_stats=stats)
        elif w.asa_r2 and path == "/api/storage/availability-zones":
            items, build = (
                ontap_asa_r2.zones(w),
                lambda page: ontap_asa_r2.availability_zone_records(w, page),
            )
        elif path == "/api/storage/aggregates":
            items, build = w.aggregates, lambda page: ontap_collections.aggregate_records(w, page)
        elif path == "/api/storage/disks":
            items, key = w.disks, "name"
            build = partial(ontap_collections.disk_records, w, estate=estate, t=t)
        elif path == "/api/storage/shelves":
            items, build = [], lambda page: []
        elif path == "/api/network/fc/ports":
            items = w.fc_lifs
            build = partial(ontap_network.fc_port_records, w, estate=estate, t=t, with_stats=stats)
            ids = [stable_uuid(w.cluster, "fcport", x.node, x.port) for x in items]
            return self._page(items, ids, key, build, paths, raw_path, query)
        elif path == "/api/network/ip/interfaces":
            items = w.ip_lifs
            build = partial(ontap_network.ip_interface_records, estate, w, t=t, with_stats=stats)
            ids = [ontap_network.ip_interface_uuid(w, x) for x in items]
            return self._page(items, ids, key, build, paths, raw_path, query)
        elif path == "/api/network/ethernet/ports":
            items = ontap_network.ethernet_ports(w)
            build = partial(ontap_network.ethernet_port_records, w, estate=estate, t=t, with_stats=stats)
            ids = [ontap_network.ethernet_port_uuid(w, x) for x in items]
            return self._page(items, ids, key, build, paths, raw_path, query)
        elif path == "/api/svm/svms":
            items, build, key = w.svms, lambda page: ontap_collections.svm_records(w, page), "name"
        elif path.startswith("/api/storage/aggregates/") and path.endswith("/plexes"):
            aggr_uuid = path.split("/")[4]
            items = ontap_collections.plex_records(estate, w, aggr_uuid, t)
            build, key = (lambda page: page), "name"
        else:
            raise ApiError(404, f"API not found: {path}", "3")
        ids = [ontap_api.item_key(x, key) for x in items]
        return self._page(items, ids, key, build, paths, raw_path, query)

    def _page(
        self,
        items: list[Any],
        ids: list[str],
        key: str,
        build: Callable[[list[Any]], list[Json]],
        paths: list[list[str]] | None,
        raw_path: str,
        query: dict[str, str],
    ) -> Json:
        """One page of a collection, after the query's field filters; ``return_records=false``
        answers the count alone."""
        conds = ontap_query.filters(query)
        if conds:
            recs = build(items)  # built once, to filter, then paged as they are
            keep = [i for i, r in enumerate(recs) if ontap_query.match_all(r, conds)]
            items, ids = [recs[i] for i in keep], [ids[i] for i in keep]
            build = _built
        if not ontap_query.flag(query, "return_records", True):
            return {"num_records": len(items), "_links": {"self": {"href": ontap_api.href(raw_path, query)}}}
        return ontap_api.page(items, ids, key, build, paths, raw_path, query, loop=self._loop)

    def _tables(
        self,
        estate: Estate,
        w: World,
        t: float,
        path: str,
        raw_path: str,
        query: dict[str, str],
        malformed: bool,
    ) -> None:
        rest = path[len(TABLES_PREFIX) :].strip("/")
        missing = self.sim.faults.faults.missing_table
        if not rest:
            recs = ontap_tables.table_list(w, missing) + ontap_qos_tables.table_list(w, missing)
            self._json(
                200,
                {"records": recs, "num_records": len(recs), "_links": {"self": {"href": raw_path}}},
                malformed,
            )
            return
        name, _, sub = rest.partition("/rows")
        fields = ontap_api.parse_fields(query.get("fields"))
        every = fields is None
        names = query.get("counters.name")
        share = self.sim.faults.faults.partial_aggregation
        opts = RowOptions(
            counters=None if not names or names == "*" else set(names.split("|")),
            with_properties=every or any(p[0] == "properties" for p in fields or []),
            with_counters=every or bool(names) or any(p[0] == "counters" for p in fields or []),
            incomplete=(lambda i: True) if share >= 1 else (lambda i: self.sim.faults.roll(share)),
            missing_table=missing,
        )
        qos = ontap_qos_tables.answer(estate, w, t, rest, raw_path, query, opts, self._loop)
        if qos is not None:  # the QoS tables: filtered rows, ONTAP's own schema
            self._json(200, qos, malformed)
            return
        if not sub and "/rows" not in rest:
            self._json(200, ontap_tables.schema(w, name, missing), malformed)
            return
        if sub:
            raise ApiError(404, "single-row lookups are not simulated; list /rows", "4")
        table = ontap_tables.TABLES.get(name)
        ontap_tables.schema(w, name, missing)  # 404 for an unknown or missing table, or an old ONTAP
        assert table is not None
        objs = table.objects(w)
        ids = [table.row_id(w, o) for o in objs]

        def build(page: list[Any]) -> list[Json]:
            return ontap_tables.rows(estate, w, name, t, opts, page)

        self._json(
            200, ontap_api.page(objs, ids, "id", build, None, raw_path, query, loop=self._loop), malformed
        )


def _built(records: list[Json]) -> list[Json]:
    """``build`` for records already built."""
    return records
