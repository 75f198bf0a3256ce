"""Wires config into sources, pollers, the pipeline and the HTTP server; reloads it on SIGHUP.

Each poller hands its results to one ``Pipeline``: the join stage (the host ↔ array join),
then the store (``State``), then the diagnosis engine. The server reads the store, the
engine's findings and the join's status; nothing else is shared.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from sanlens import gcpolicy
from sanlens.config import Config, HostTarget, OntapTarget
from sanlens.diagnose.engine import Engine
from sanlens.diagnose.registry import validate_config
from sanlens.hosts.registry import make_host_source
from sanlens.join.directory import LunDirectory
from sanlens.join.stage import JoinStage
from sanlens.ontap.collector import OntapSource
from sanlens.ontap.harvest_source import HarvestSource
from sanlens.runtime.pipeline import Pipeline
from sanlens.runtime.poller import Poller
from sanlens.serve.server import ExporterServer
from sanlens.source import Source
from sanlens.store import State

log = logging.getLogger(__name__)

STOP_BUDGET_S = 1.0
"""Total time stop() (and a reload) waits for halted pollers: a hung poll runs on in its
daemon worker and never delays shutdown."""
SIGNAL_CHECK_S = 0.2
"""How often the main thread looks at the flags the signal handlers set."""
SWITCH_INTERVAL_S = 0.001
JUDGE_EVERY_S = 60.0
"""The engine judges what the polls brought at most this often (and at most once per the
shortest ONTAP interval): several host polls between two judgements cost one evaluation.
Sustain windows are minutes long, so this pace loses nothing."""


@dataclass(frozen=True)
class _Running:
    """One configured target and what polls it."""

    target: OntapTarget | HostTarget
    source: Source
    poller: Poller


def _key(target: OntapTarget | HostTarget) -> tuple[str, str]:
    return ("ontap" if isinstance(target, OntapTarget) else "host", target.name)


class Exporter:
    """Everything `sanlens serve` runs: one poller thread per target plus the HTTP server."""

    def __init__(self, cfg: Config, listen: str | None = None) -> None:
        self.cfg = cfg
        self.listen = listen or cfg.listen
        self.state = State()
        self.stop_event = threading.Event()
        # the engine's time is the receive clock the state stamps snapshots with (sanlens.freshness)
        self.engine = Engine(cfg.diagnose, deferred=True, clock=self.state.clock)
        self.judge = threading.Thread(target=self._judge, name="engine", daemon=True)
        self.directory = LunDirectory()
        self.join = JoinStage(self.directory)
        self.pipeline = Pipeline(self.state, self.join, self.engine)  # poll -> join -> store -> engine
        self._lock = threading.Lock()  # reload and stop, one at a time
        self._started = False
        self._running: dict[tuple[str, str], _Running] = {}
        targets: list[OntapTarget | HostTarget] = [*cfg.ontap, *cfg.hosts]
        for target in targets:
            self._running[_key(target)] = self._build(target)
        self.server = ExporterServer(self.state, self.listen, engine=self.engine, directory=self.directory)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def sources(self) -> list[Source]:
        return [r.source for r in self._running.values()]

    @property
    def pollers(self) -> list[Poller]:
        return [r.poller for r in self._running.values()]

    def _source(self, target: OntapTarget | HostTarget) -> Source:
        if isinstance(target, OntapTarget):
            if target.source == "prometheus":
                return HarvestSource(target)
            return OntapSource(target)
        return make_host_source(target)

    def _build(self, target: OntapTarget | HostTarget, source: Source | None = None) -> _Running:
        source = source or self._source(target)
        return _Running(target, source, Poller(source, self.pipeline))

    def start(self) -> None:
        # Poll threads run Python for seconds at a time; a 1 ms switch interval (default 5 ms)
        # lets the event loop answer a scrape between their bytecodes instead of queueing.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        gcpolicy.limit_arenas()
        with self._lock:
            self._started = True
            self.server.start()
            self.judge.start()
            for p in self.pollers:
                p.start()

    def stop(self) -> None:
        """Stop serving and polling within about STOP_BUDGET_S plus the server's shutdown poll."""
        self.stop_event.set()
        with self._lock:
            running = list(self._running.values())
            for r in running:
                r.poller.halt()
            if self._started:
                self.server.stop()
                self._started = False
            _join(running)
            for r in running:
                if r.poller.ident is None:  # never started: nobody else closes its source
                    _close(r.source)

    def judge_every(self) -> float:
        """Seconds between engine evaluations: JUDGE_EVERY_S, or less when the targets poll faster."""
        ontap = [
            float(r.target.poll_interval) for r in self._running.values() if isinstance(r.target, OntapTarget)
        ]
        every = [float(r.target.poll_interval) for r in self._running.values()]
        return max(min([JUDGE_EVERY_S, *(ontap or every)]), 0.1)

    def _judge(self) -> None:
        last = -float("inf")
        while not self.stop_event.wait(0.1):
            if time.monotonic() - last < self.judge_every() and not self.engine.due():
                continue
            try:
                judged = self.engine.evaluate_pending()
            except Exception:  # a diagnosis bug must not stop the judging
                log.exception("diagnosis engine failed")
                judged = True
            if judged:
                gcpolicy.settle()
                last = time.monotonic()
                self.state.touch()

    def reload(self, cfg: Config) -> None:
        """Replace the targets with ``cfg``'s; on any error the running config stays as it was.

        Targets whose config is unchanged keep their source (and its counters) and poller; the
        HTTP server, the engine's history and the LUN directory carry over. The listen address
        needs a restart.
        """
        with self._lock:
            if self.stop_event.is_set():
                return
            targets: list[OntapTarget | HostTarget] = [*cfg.ontap, *cfg.hosts]
            wanted = {_key(t): t for t in targets}
            kept = {k for k, t in wanted.items() if k in self._running and self._running[k].target == t}
            sources: dict[tuple[str, str], Source] = {}
            validate_config(cfg.diagnose)  # before set_config, which would keep half of a bad config
            try:  # everything that can fail, before anything changes
                for k, t in wanted.items():
                    if k not in kept:
                        sources[k] = self._source(t)
                self.engine.set_config(cfg)
                self.state.touch()
            except BaseException:
                for source in sources.values():
                    _close(source)
                raise
            fresh = {k: self._build(wanted[k], source) for k, source in sources.items()}
            retired = [r for k, r in self._running.items() if k not in kept]
            for r in retired:
                r.poller.halt()  # from here on, none of their polls writes to the state
            names = {t.name for t in wanted.values()}
            for k, r in self._running.items():
                if k not in wanted and r.target.name not in names:  # a replaced target keeps its state
                    self.engine.forget(r.target.name)  # its findings go with its series, now
                    self.state.forget(r.target.name)
                    if isinstance(r.target, OntapTarget):
                        self.join.forget(r.target.name)
            self._running = {k: self._running[k] if k in kept else fresh[k] for k in wanted}
            if self._started:
                for r in fresh.values():
                    r.poller.start()
            _join(retired)
            for r in retired:
                if r.poller.ident is None:  # never started: nobody else closes its source
                    _close(r.source)
            listen = self.cfg.listen
            self.cfg = cfg
        log.info(
            "config reloaded: %d target(s) kept, %d started, %d stopped",
            len(kept),
            len(fresh),
            len(retired),
        )
        if cfg.listen != listen and self.listen == listen:
            log.warning("listen address %s takes a restart; still serving on %s", cfg.listen, listen)


def _join(running: list[_Running]) -> None:
    """Join halted pollers within STOP_BUDGET_S in total (a stuck one is a daemon: left behind)."""
    until = time.monotonic() + STOP_BUDGET_S
    for r in running:
        if r.poller.ident is None:
            continue
        r.poller.join(max(until - time.monotonic(), 0.0))
        if r.poller.is_alive():
            log.warning("poller %s did not stop within %.1fs; left behind", r.target.name, STOP_BUDGET_S)


def _close(source: Source) -> None:
    try:
        source.close()
    except Exception:
        log.debug("close %s failed", source.name, exc_info=True)


def wait_for_signal(stop: threading.Event, reload: Callable[[], object] | None = None) -> None:
    """Block until SIGINT/SIGTERM (or ``stop`` is set by someone else); on SIGHUP call ``reload``.

    The handlers only set flags: the reload runs here, in the main thread, between waits.
    A failed reload is logged in one line and the running config stays.
    """
    hup = threading.Event()
    received: list[int] = []

    def on_stop(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        stop.set()

    def on_hup(signum: int, frame: FrameType | None) -> None:
        hup.set()

    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    if reload is not None and hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, on_hup)
    while not stop.wait(SIGNAL_CHECK_S):
        if hup.is_set() and reload is not None:
            hup.clear()
            log.info("SIGHUP: reloading the config")
            try:
                reload()
            except Exception as e:
                reason = " ".join(str(e).split()) or type(e).__name__
                log.error("config reload failed, keeping the running config: %s", reason)
    log.info("%s: shutting down", signal.Signals(received[0]).name if received else "stop requested")
