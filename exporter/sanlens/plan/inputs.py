"""Checked command-line inputs of `sanlens plan`: every bad value is a PlanError (exit 2)."""

from __future__ import annotations

import math

from sanlens.errors import SanlensError


class PlanError(SanlensError):
    """Bad input to `sanlens plan` (exit 2)."""


def parse_ratio(text: str) -> float:
    """0..1, or a percent such as ``30%``."""
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        raise PlanError(f"--write-ratio: expected 0..1 or a percent like 30%, got {text!r}") from None
    if not 0.0 <= v <= 1.0 or math.isnan(v):
        raise PlanError(f"--write-ratio: must be within 0..1 (or 0%..100%), got {text!r}")
    return v


def check_positive(name: str, v: float, *, integer: bool = False) -> None:
    if math.isnan(v) or v <= 0 or (integer and v != int(v)):
        kind = "a positive integer" if integer else "positive"
        raise PlanError(f"--{name}: must be {kind}, got {v:g}")
