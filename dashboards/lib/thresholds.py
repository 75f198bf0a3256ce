"""Threshold steps and the words that quote them, both from the diagnosis specs through the mixin config.

A band on a panel and the number in its description come from the same default
as the engine's decision, so none of them can drift from the others.
"""

from __future__ import annotations

from mixin.config import MixinConfig

from . import Json

Step = tuple[str, float | None]
GREEN: Step = ("green", None)


def steps(*pairs: Step) -> Json:
    return {"mode": "absolute", "steps": [{"color": c, "value": v} for c, v in pairs]}


def bands(
    cfg: MixinConfig,
    diagnosis: str,
    *names: str,
    scale: float = 1.0,
    colors: tuple[str, ...] = ("orange", "red"),
    base: Step = GREEN,
) -> Json:
    """``base``, then each colour from its named threshold of the diagnosis (orange, then red by default)."""
    if len(names) > len(colors):
        raise ValueError(f"{diagnosis}: {len(names)} thresholds for {len(colors)} colours")
    values = [_scaled(cfg.threshold(diagnosis, n), scale) for n in names]
    return steps(base, *zip(colors, values, strict=False))


def data_latency(cfg: MixinConfig) -> Json:
    """The data-file latency bands of latency_slo, the ones every latency panel draws."""
    return bands(cfg, "latency_slo", "data_warning_seconds", "data_critical_seconds")


def _scaled(value: float, scale: float) -> float:
    # rounded so 100 x 0.07 stays 7.0 in the JSON, not 7.000000000000001
    return value if scale == 1.0 else round(value * scale, 9)


# ------------------------------------------------------------------ in descriptions
def ms(seconds: float) -> str:
    return f"{seconds * 1000:g} ms"


def pct(ratio: float) -> str:
    return f"{ratio * 100:g} %"


def kilo(count: float) -> str:
    return f"{count / 1000:g}K"


def num(value: float) -> str:
    return f"{value:g}"
