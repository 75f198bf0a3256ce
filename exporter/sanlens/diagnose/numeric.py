"""Arithmetic on counter values that may be missing: NaN, inf and None are no data, never zero.

Its own module so that the diagnoses' context and the history it keeps both read it.
"""

from __future__ import annotations

import math


def num(x: float | None) -> float | None:
    """A finite float, or None (NaN and inf are missing data)."""
    if type(x) is float:  # the common case, millions of times per analyze: no conversion, no call
        return x if x - x == 0.0 else None  # inf - inf and nan - nan are nan
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def total(*xs: float | None) -> float | None:
    out: float | None = None
    for x in xs:
        v = num(x)
        if v is not None:
            out = v if out is None else out + v
    return out


def weighted_latency(
    r_iops: float | None, w_iops: float | None, r_lat: float | None, w_lat: float | None
) -> float | None:
    """IOPS-weighted mean of read and write latency (seconds); None without data."""
    rl, wl = num(r_lat), num(w_lat)
    if rl is None and wl is None:
        return None
    ri = (num(r_iops) or 0.0) if rl is not None else 0.0
    wi = (num(w_iops) or 0.0) if wl is not None else 0.0
    ops = ri + wi
    if ops <= 0:
        return max(v for v in (rl, wl) if v is not None)
    return ((ri * rl if rl is not None else 0.0) + (wi * wl if wl is not None else 0.0)) / ops


def worst_latency(
    r_iops: float | None, w_iops: float | None, r_lat: float | None, w_lat: float | None, min_iops: float
) -> tuple[float | None, str]:
    """The worse of read and write latency among ops that run at least ``min_iops``."""
    best: tuple[float | None, str] = (None, "")
    for op, i, lat in (("read", r_iops, r_lat), ("write", w_iops, w_lat)):
        iv, lv = num(i), num(lat)
        if lv is None or iv is None or iv < min_iops:
            continue
        if best[0] is None or lv > best[0]:
            best = (lv, op)
    return best


def clamp01(x: float) -> float:
    return 0.0 if not math.isfinite(x) or x < 0 else min(x, 1.0)
