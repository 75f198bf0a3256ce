"""The simulator's HTTP(S) server: fake ONTAP REST, windows_exporter and node_exporter hosts, control and
faults.

``Simulator`` is the interface the demo, the tests and the benchmarks use
(docs/simulator.md). Everything listens on 127.0.0.1 by default;
:mod:`sanlens_sim.handler` answers the requests.
"""

from __future__ import annotations

import logging
import shutil
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sanlens_sim.estate import Estate
from sanlens_sim.faults import FaultState
from sanlens_sim.handler import Handler, SimHTTPServer
from sanlens_sim.ontap_api import Json
from sanlens_sim.tls import make_self_signed

log = logging.getLogger(__name__)


class Simulator:
    """The ONTAP REST + windows_exporter + node_exporter simulator, in-process, on a background thread."""

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
        self._server: SimHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> Simulator:
        ctx = self._tls_context() if self.tls else None  # before binding: it may fail
        server = SimHTTPServer((self.host, self._port), Handler)
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
        """The Windows hosts (``/windows/<host>/metrics``)."""
        return [h.name for h in self.estate.world().hosts if h.os == "windows"]

    @property
    def linux_hosts(self) -> list[str]:
        """The Linux hosts (``/linux/<host>/metrics``, node_exporter)."""
        return [h.name for h in self.estate.world().hosts if h.os == "linux"]

    def set_scenario(self, name: str, **knobs: Any) -> None:
        """Switch live; counters continue monotonically; scale knobs stay unless given."""
        self.estate.switch(name, knobs, keep_scale=True)

    def set_faults(self, **knobs: Any) -> None:
        self.faults.faults.update(knobs)
        if self.faults.faults.counter_reset:
            self.estate.reset_counters()
            self.faults.faults.counter_reset = False
        failed = self.faults.faults.failed_path_set()
        if failed != self.estate.failed_paths:
            self.estate.fail_paths(failed)

    def state(self) -> Json:
        out = self.estate.summary()
        out["faults"] = self.faults.snapshot()
        out["url"] = self.url
        return out
