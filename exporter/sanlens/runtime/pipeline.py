"""What becomes of a poll's result: poll -> join -> store -> engine, in that order.

The pollers hand every result here (``sanlens.runtime.poller.Sink``); the join stage sees it first
(the directory learns a cluster's LUNs, a host's disks find theirs), the store keeps it
for the exposition, and the diagnosis engine reads it as stored.
"""

from __future__ import annotations

import logging

from sanlens.join.stage import JoinStage
from sanlens.model import Snapshot
from sanlens.store import Engine, State

log = logging.getLogger(__name__)


class Pipeline:
    """A poller's sink: joins, stores and feeds the engine each result, in that order.

    A deferred engine (``deferred`` true) says when it has judged (the runtime then touches the
    state); any other has judged on ``update``, so the exposition renders again at once.
    """

    def __init__(self, state: State, join: JoinStage | None = None, engine: Engine | None = None) -> None:
        self.state, self.join, self.engine = state, join, engine

    def register(self, name: str, kind: str, interval: float | None = None) -> None:
        self.state.register(name, kind, interval)

    def record_failure(self, name: str, kind: str, reason: str, message: str, duration: float | None) -> None:
        self.state.record_failure(name, kind, reason, message, duration)

    def record_success(self, snap: Snapshot, duration: float) -> Snapshot:
        """Join, store and diagnose one poll's snapshot; the snapshot as stored."""
        if self.join is not None:
            try:
                snap = self.join.apply(snap)
            except Exception:  # a join bug must not lose the poll: stored as the source cooked it
                log.exception("joining %s failed", snap.target)
        stored = self.state.record_success(snap, duration)
        if self.engine is not None:
            try:
                self.engine.update(stored)
            except Exception:  # a diagnosis bug must not stop polling
                log.exception("diagnosis engine failed on %s", stored.target)
            if not getattr(self.engine, "deferred", False):
                self.state.touch()
        return stored
