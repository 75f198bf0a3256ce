"""A cluster's QoS tables and inventory, read on a thread and a schedule of their own.

NetApp warns that ``qos_detail`` returns very many rows (30,000 and more at 10,000 LUNs), and NetApp
Harvest gives its workload objects a timeout of 90 s. Read inside the counter poll, one slow answer
would hold the poll past its deadline and take every LUN, node and disk of the cluster down with
it. So a QoS read runs beside the polls: a poll starts one when it is due and none is running, and
the first poll after it finishes folds its rows into the view. A failed read loses only the QoS
figures until the next one (the view keeps the last); it is logged when it starts and stops failing.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from sanlens.ontap.row_block import RowBlock

log = logging.getLogger(__name__)


@dataclass
class QosRead:
    """One finished read: each table's rows and when they arrived, and the tables the cluster lacks."""

    started: float = 0.0  # the poll time it started at: the QoS schedule counts from there
    rows: dict[str, RowBlock] = field(default_factory=dict)
    fetched_at: dict[str, float] = field(default_factory=dict)
    missing: dict[str, Exception] = field(default_factory=dict)


class QosReader:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"qos-{cluster}")
        self._job: concurrent.futures.Future[QosRead] | None = None
        self._failing = False

    @property
    def running(self) -> bool:
        return self._job is not None and not self._job.done()

    def start(self, read: Callable[[], QosRead]) -> None:
        """Start ``read`` unless one is still running or unfolded."""
        if self._job is None:
            self._job = self._pool.submit(read)

    def take(self) -> QosRead | None:
        """A finished read (once), or None while it runs, after a failure or with none started."""
        job = self._job
        if job is None or not job.done():
            return None
        self._job = None
        try:
            got = job.result()
        except Exception as e:  # a failed QoS read must not fail the poll that finds it
            if not self._failing:
                log.warning("%s: QoS read failed (%s); the last QoS figures are kept", self.cluster, e)
            self._failing = True
            return None
        if self._failing:
            log.info("%s: QoS read succeeded again", self.cluster)
        self._failing = False
        return got

    def wait(self, timeout: float | None = None) -> None:
        """Until the running read is done (benchmarks and tests; a poll never waits)."""
        if self._job is not None:
            concurrent.futures.wait([self._job], timeout)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
