"""The simulator's HTTP(S) server: fake ONTAP REST, windows_exporter hosts, control and faults.

``Simulator`` is the interface the demo, the tests and the benchmarks use
(docs/architecture.md, "Simulator"). Everything listens on 127.0.0.1 by default.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sanlens.sim import ontap_api, windows_api
from sanlens.sim.estate import Estate
from sanlens.sim.faults import FaultError, FaultState
from sanlens.sim.ontap_api import ApiError, Json, RowOptions
from sanlens.sim.scenarios import KnobError
from sanlens.sim.tls import make_self_signed
from sanlens.sim.world import World, stable_uuid

log = logging.getLogger(__name__)

TABLES_PREFIX = "/api/cluster/counter/tables"


class _Reset(Exception):
    """Abort the connection with a TCP reset (fault ``reset_rate``)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    sim: Simulator

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops the connection or never speaks TLS (a probe) is not a server error."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, ssl.SSLError | OSError):
            log.debug("connection from %s dropped: %s", client_address[0], exc)
            return
        super().handle_error(request, client_address)


class Simulator:
    """The ONTAP REST + windows_exporter simulator, in-process, on a background thread."""

    def __init__(
        self,
        scenario: str = "mixed",
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
        nodes: int | None = None,
        luns: int | None = None,
        volumes: int | None = None,
        disks: int | None = None,
        hosts: int | None = None,
        fa_ports: int | None = None,
        ontap_version: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        **knobs: Any,
    ) -> None:
        """``knobs``: further scenario knobs (rebuild_after_s, rebuild_rate_pct_s); ``clock`` for tests."""
        knobs.update(
            nodes=nodes,
            luns=luns,
            volumes=volumes,
            disks=disks,
            hosts=hosts,
            fa_ports=fa_ports,
            ontap_version=ontap_version,
        )
        self.estate = Estate(scenario, {k: v for k, v in knobs.items() if v is not None}, clock)
        self.faults = FaultState()
        self.host, self._port, self.tls = host, port, tls
        self.cert_file: Path | None = None
        self._tmp: Path | None = None
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> Simulator:
        ctx = self._tls_context() if self.tls else None  # before binding: it may fail
        server = _Server((self.host, self._port), _Handler)
        server.sim = self
        if ctx is not None:
            server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
        self._server = server
        self._port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="sanlens-sim", daemon=True
        )
        self._thread.start()
        return self

    def _tls_context(self) -> ssl.SSLContext:
        tmp = Path(tempfile.mkdtemp(prefix="sanlens-sim-tls-"))
        try:
            cert, key = make_self_signed(tmp, self.host)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self._tmp, self.cert_file = tmp, cert
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        return ctx

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- interface
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self._port}"

    @property
    def cluster_name(self) -> str:
        return self.estate.world().cluster

    @property
    def hosts(self) -> list[str]:
        return [h.name for h in self.estate.world().hosts]

    def set_scenario(self, name: str, **knobs: Any) -> None:
        """Switch live; counters continue monotonically; scale knobs stay unless given."""
        self.estate.switch(name, knobs, keep_scale=True)

    def set_faults(self, **knobs: Any) -> None:
        self.faults.faults.update(knobs)
        if self.faults.faults.counter_reset:
            self.estate.reset_counters()
            self.faults.faults.counter_reset = False

    def state(self) -> Json:
        out = self.estate.summary()
        out["faults"] = self.faults.snapshot()
        out["url"] = self.url
        return out


# ------------------------------------------------------------------ request handling
def _start_index(ids: Sequence[str], query: dict[str, str], key: str) -> int:
    start = query.get(f"start.{key}")
    if start is None:
        return 0
    try:
        return ids.index(start)
    except ValueError:
        raise ApiError(400, f'Invalid value for "start.{key}": "{start}"', "262179") from None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
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
    def sim(self) -> Simulator:
        return self.server.sim

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
            elif path.startswith("/api/"):
                self._api(path, parsed.path, query)
            else:
                raise ApiError(404, f"API not found: {path}", "3")
        except _Reset:
            self._reset()
        except ApiError as e:
            self._json(e.status, e.body())
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
        if len(parts) != 4 or parts[3] != "metrics":
            raise ApiError(404, f"no such windows endpoint {path}; use /windows/<host>/metrics", "3")
        with self.sim.estate.lock:
            t = self.sim.estate.clock()
            world = self.sim.estate.world(t)
            host = next((h for h in world.hosts if h.name == parts[2]), None)
            if host is None:
                raise ApiError(404, f"unknown host {parts[2]!r}; hosts: {[h.name for h in world.hosts]}", "3")
            text = windows_api.render(self.sim.estate, host, t)
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
                    ontap_api.project(ontap_api.cluster_record(w), _fields(query, all_default=True)),
                    malformed,
                )
                return
            if path.startswith(TABLES_PREFIX):
                self._tables(estate, w, t, path, raw_path, query, malformed)
                return
            answer = self._collection(estate, w, t, path, raw_path, query)
        self._json(200, answer, malformed)

    def _collection(
        self, estate: Estate, w: World, t: float, path: str, raw_path: str, query: dict[str, str]
    ) -> Json:
        paths = ontap_api.parse_fields(query.get("fields"))
        stats = paths is None or any(p[0] in ("statistics", "metric") for p in paths)
        build: Callable[[list[Any]], list[Json]]
        items: list[Any]
        key = "uuid"
        if path == "/api/cluster/nodes":
            items, build = w.nodes, lambda page: ontap_api.node_records(estate, w, page, t)
        elif path == "/api/storage/luns":
            items, build = w.luns, lambda page: ontap_api.lun_records(estate, w, page, t, stats)
        elif path == "/api/storage/volumes":
            items, build = w.volumes, lambda page: ontap_api.volume_records(estate, w, page, t, stats)
        elif path == "/api/storage/aggregates":
            items, build = w.aggregates, lambda page: ontap_api.aggregate_records(w, page)
        elif path == "/api/storage/disks":
            items, build, key = w.disks, lambda page: ontap_api.disk_records(w, page), "name"
        elif path == "/api/storage/shelves":
            items, build = [], lambda page: []
        elif path == "/api/network/fc/ports":
            items, build = w.lifs, lambda page: ontap_api.fc_port_records(w, page)
            ids = [stable_uuid(w.cluster, "fcport", x.node, x.port) for x in w.lifs]
            return self._page(items, ids, key, build, paths, raw_path, query)
        elif path == "/api/svm/svms":
            items, build, key = w.svms, lambda page: ontap_api.svm_records(w, page), "name"
        elif path.startswith("/api/storage/aggregates/") and path.endswith("/plexes"):
            aggr_uuid = path.split("/")[4]
            items = ontap_api.plex_records(estate, w, aggr_uuid, t)
            build, key = (lambda page: page), "name"
        else:
            raise ApiError(404, f"API not found: {path}", "3")
        ids = [_item_key(x, key) for x in items]
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
        start = _start_index(ids, query, key)
        limit = _max_records(query)
        page = items[start : start + limit]
        records = [ontap_api.project(r, paths) for r in build(page)]
        links: Json = {"self": {"href": _href(raw_path, query)}}
        nxt = start + limit
        if self.sim.faults.faults.pagination_loop:
            links["next"] = {"href": _href(raw_path, query)}
        elif nxt < len(items):
            q = {k: v for k, v in query.items() if not k.startswith("start.")}
            q[f"start.{key}"] = ids[nxt]
            links["next"] = {"href": _href(raw_path, q)}
        return {"records": records, "num_records": len(records), "_links": links}

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
        if not rest:
            recs = ontap_api.table_list(w)
            self._json(
                200,
                {"records": recs, "num_records": len(recs), "_links": {"self": {"href": raw_path}}},
                malformed,
            )
            return
        name, _, sub = rest.partition("/rows")
        if not sub and "/rows" not in rest:
            self._json(200, ontap_api.schema(w, name), malformed)
            return
        if sub:
            raise ApiError(404, "single-row lookups are not simulated; list /rows", "4")
        table = ontap_api.TABLES.get(name)
        ontap_api.schema(w, name)  # 404 for an unknown table or an old ONTAP
        assert table is not None
        objs = table.objects(w)
        ids = [table.row_id(w, o) for o in objs]
        fields = ontap_api.parse_fields(query.get("fields"))
        every = fields is None
        names = query.get("counters.name")
        share = self.sim.faults.faults.partial_aggregation
        opts = RowOptions(
            counters=None if not names or names == "*" else set(names.split("|")),
            with_properties=every or any(p[0] == "properties" for p in fields or []),
            with_counters=every or bool(names) or any(p[0] == "counters" for p in fields or []),
            incomplete=(lambda i: True) if share >= 1 else (lambda i: self.sim.faults.roll(share)),
        )

        def build(page: list[Any]) -> list[Json]:
            return ontap_api.rows(estate, w, name, t, opts, page)

        self._json(200, self._page(objs, ids, "id", build, None, raw_path, query), malformed)


def _item_key(x: Any, key: str) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, dict):
        return str(x.get(key, ""))
    if key == "uuid" and hasattr(x, "uuid"):
        return str(x.uuid)
    return str(getattr(x, "name", getattr(x, "path", "")))


def _fields(query: dict[str, str], all_default: bool = False) -> list[list[str]] | None:
    if "fields" not in query and all_default:
        return None
    return ontap_api.parse_fields(query.get("fields"))


def _max_records(query: dict[str, str]) -> int:
    raw = query.get("max_records")
    if raw is None:
        return ontap_api.DEFAULT_MAX_RECORDS
    try:
        n = int(raw)
    except ValueError:
        raise ApiError(400, f'Invalid value for "max_records": "{raw}"', "262179") from None
    if n < 1:
        raise ApiError(400, f'"max_records" must be at least 1, got {n}', "262179")
    return n


def _href(raw_path: str, query: dict[str, str]) -> str:
    if not query:
        return raw_path
    return raw_path + "?" + urllib.parse.urlencode(query, safe="*,|.")
