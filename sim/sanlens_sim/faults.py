"""Fault knobs for reliability tests: slow answers, 5xx, 401, resets, bad JSON, counter resets,
partial aggregation, a missing counter table, pagination loops and lost Linux path devices. They
apply to ``/api``, ``/windows`` and ``/linux``, never to ``/-/sim``."""

from __future__ import annotations

import random
import threading
from dataclasses import asdict, dataclass, fields
from typing import Any


class FaultError(ValueError):
    pass


@dataclass
class Faults:
    latency_ms: float = 0.0  # added to every answer
    error_rate_5xx: float = 0.0  # share of requests answered 503
    status_401: bool = False  # every request answered 401
    reset_rate: float = 0.0  # share of connections reset without an answer
    malformed_json_rate: float = 0.0  # share of JSON answers truncated
    counter_reset: bool = False  # one-shot: every counter restarts from zero now
    # share of counter rows missing one node's constituent (aggregation.complete=false; true = all):
    # the summed tables' values lack that node's part
    partial_aggregation: float = 0.0
    pagination_loop: bool = False  # next link repeats the current page
    missing_table: str = ""  # a counter table answering 404 "Table is not found" ("" = none)
    # seconds every simulated Windows host's clock runs ahead (negative: behind) of the real time
    host_clock_offset_s: float = 0.0
    # Linux path devices that lost their link, "host/sdX" comma-separated ("" = none): their SCSI
    # state reads transport-offline and the map's other paths carry its I/O
    failed_paths: str = ""

    def failed_path_set(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.failed_paths.split(",") if p.strip())

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def update(self, raw: Any) -> None:
        """Apply a JSON object of knobs; raises :class:`FaultError` on unknown names or bad values."""
        if not isinstance(raw, dict):
            raise FaultError("body must be a JSON object of fault knobs")
        unknown = sorted(set(raw) - set(self.names()))
        if unknown:
            raise FaultError(f"unknown fault knob(s) {unknown}; known: {self.names()}")
        staged = asdict(self)
        for k, v in raw.items():
            if k == "missing_table":
                if not isinstance(v, str):
                    raise FaultError(f'{k} must be a counter table name or "", got {v!r}')
                staged[k] = v
                continue
            if k == "failed_paths":
                if not isinstance(v, str) or any(
                    p.strip() and p.strip().count("/") != 1 for p in v.split(",")
                ):
                    raise FaultError(f'{k} must be "host/device" names, comma-separated, or "", got {v!r}')
                staged[k] = v
                continue
            if k in ("status_401", "counter_reset", "pagination_loop"):
                if not isinstance(v, bool):
                    raise FaultError(f"{k} must be true or false, got {v!r}")
            elif k == "partial_aggregation":
                v = 1.0 if v is True else 0.0 if v is False else v
                if not isinstance(v, int | float) or not 0 <= v <= 1:
                    raise FaultError(f"{k} must be a boolean or a share 0..1, got {v!r}")
            elif k == "host_clock_offset_s":
                if isinstance(v, bool) or not isinstance(v, int | float) or not -86400 <= v <= 86400:
                    raise FaultError(f"{k} must be a number of seconds within a day either way, got {v!r}")
            elif k == "latency_ms":
                if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 600000:
                    raise FaultError(f"{k} must be a number of milliseconds >= 0, got {v!r}")
            else:
                if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
                    raise FaultError(f"{k} must be a share 0..1, got {v!r}")
            staged[k] = float(v) if not isinstance(v, bool) else v
        for k, v in staged.items():
            setattr(self, k, v)


class FaultState:
    """Thread-safe faults plus a seeded random source (reproducible tests)."""

    def __init__(self, seed: int = 1) -> None:
        self.faults = Faults()
        self.lock = threading.Lock()
        self.rng = random.Random(seed)

    def roll(self, share: float) -> bool:
        if share <= 0:
            return False
        with self.lock:
            return self.rng.random() < share

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return asdict(self.faults)
