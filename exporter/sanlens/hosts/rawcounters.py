"""Cooking formulas for Windows raw performance counters (Win32_PerfRawData_*).

Each takes two raw samples (previous, current). Numerators of PERF_COUNTER_COUNTER
and PERF_AVERAGE_TIMER are 32-bit and wrap, so their deltas are taken mod 2^32.
``F`` is Frequency_PerfTime (ticks per second).
"""

from __future__ import annotations

MOD32 = 1 << 32


def delta32(n0: int, n1: int) -> int:
    """Δ of a 32-bit counter across at most one wrap."""
    return (int(n1) - int(n0)) % MOD32


def average_timer(n0: int, n1: int, base0: int, base1: int, freq: int) -> float | None:
    """PERF_AVERAGE_TIMER (Avg. Disk sec/Read): ((ΔN mod 2^32) / F) / ΔBase seconds per operation."""
    dbase = delta32(base0, base1)
    if dbase == 0 or freq <= 0:
        return None
    return (delta32(n0, n1) / freq) / dbase


def counter_counter(n0: int, n1: int, t0: int, t1: int, freq: int, wrap32: bool = True) -> float | None:
    """PERF_COUNTER_COUNTER (Disk Reads/sec): ΔN / (ΔT_perf / F). ``wrap32=False`` for the 64-bit BULK_COUNT."""
    dt = int(t1) - int(t0)
    if dt <= 0 or freq <= 0:
        return None
    dn = delta32(n0, n1) if wrap32 else int(n1) - int(n0)
    if dn < 0:
        return None  # a 64-bit counter went backwards: reset
    return dn / (dt / freq)


def precision_100ns_timer(n0: int, n1: int, base0: int, base1: int) -> float | None:
    """PERF_PRECISION_100NS_TIMER (% Idle Time): 100·ΔN/ΔBase, clamped to 0..100."""
    dbase = int(base1) - int(base0)
    if dbase <= 0:
        return None
    return min(max(100.0 * (int(n1) - int(n0)) / dbase, 0.0), 100.0)


def queuelen_100ns(n0: int, n1: int, t0_100ns: int, t1_100ns: int) -> float | None:
    """PERF_COUNTER_100NS_QUEUELEN_TYPE (Avg. Disk Queue Length): ΔN / ΔT_100ns."""
    dt = int(t1_100ns) - int(t0_100ns)
    if dt <= 0:
        return None
    return (int(n1) - int(n0)) / dt


def raw(n: int | float) -> float:
    """PERF_COUNTER_RAWCOUNT (Current Disk Queue Length): the value itself."""
    return float(n)
