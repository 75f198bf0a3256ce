"""What a polled source is, and how long one poll of it may run.

The pollers (``sanlens.runtime.poller``) run sources; the ONTAP client spends the same
budget on its retries, so the rule lives below both.
"""

from __future__ import annotations

from typing import Protocol

from sanlens.model import Snapshot

POLL_DEADLINE_RATIO = 0.8
"""Share of its interval a poll may run before it is abandoned (reason ``deadline``).

Per-request timeouts restart with every byte received, so a server that trickles its
answer would hold a poll forever; only an overall deadline bounds it."""
MIN_POLL_DEADLINE_S = 2.0
"""Floor of that deadline, so that a test or demo interval of a second or two does not
abandon polls that merely take longer than the interval."""


def poll_budget(
    interval: float, ratio: float = POLL_DEADLINE_RATIO, floor: float = MIN_POLL_DEADLINE_S
) -> float:
    """Seconds a poll of ``interval`` may run: a share of the interval, not below the floor."""
    return max(interval * ratio, floor)


class Source(Protocol):
    """One polled target: an ONTAP cluster or a host."""

    name: str
    kind: str  # "ontap" | "windows_exporter" | "winrm" | "perfmon" | "node_exporter"
    interval: float

    def poll(self) -> Snapshot:
        """Return a fresh snapshot, or raise SourceError (with a reason) on failure."""
        ...

    def close(self) -> None: ...
