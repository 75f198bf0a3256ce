"""Wires config into sources, the engine, the pollers and the HTTP server."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from sanlens.config import Config
from sanlens.diagnose.engine import Engine
from sanlens.hosts.sources import make_host_source
from sanlens.join import LunDirectory
from sanlens.ontap.collector import OntapSource
from sanlens.server import ExporterServer
from sanlens.state import Poller, Source, State

log = logging.getLogger(__name__)


class Exporter:
    """Everything `sanlens serve` runs: one poller thread per target plus the HTTP server."""

    def __init__(self, cfg: Config, listen: str | None = None) -> None:
        self.cfg = cfg
        self.state = State()
        self.stop_event = threading.Event()
        self.state.engine = Engine(cfg.diagnose)
        self.directory = LunDirectory()
        self.sources: list[Source] = [OntapSource(t, self.directory) for t in cfg.ontap] + [
            make_host_source(h, self.directory) for h in cfg.hosts
        ]
        self.pollers = [Poller(s, self.state, self.stop_event) for s in self.sources]
        self.server = ExporterServer(self.state, listen or cfg.listen)

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> None:
        self.server.start()
        for p in self.pollers:
            p.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.server.stop()
        for p in self.pollers:
            p.join(timeout=5)


def wait_for_signal(stop: threading.Event) -> None:
    """Block until SIGINT/SIGTERM (or ``stop`` is set by someone else)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("received signal %d, shutting down", signum)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    while not stop.wait(0.5):
        pass
