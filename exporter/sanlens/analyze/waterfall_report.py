"""A finding's waterfall in the report: where its subject's latency went, from the host's queue to ONTAP.

The engine puts a waterfall on every finding whose subject it can split (``sanlens.diagnose.waterfall``);
the report shows its parts in path order with their share, the dominant one named, as a table and
one proportional bar in HTML and one line in text.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from sanlens.diagnose.waterfall import NAMES

# a colour per part, the same in every report: the host's side warm, ONTAP's cool, throttles red
COLOURS = {
    "host_queue": "#e8a33d",
    "transport": "#d9534f",
    "network": "#5b8def",
    "cluster": "#8a6de9",
    "data": "#3fb6a8",
    "disk": "#2e7d32",
    "qos_max": "#c62828",
    "qos_min": "#ef6c00",
    "nvram": "#6d4c41",
    "array": "#78909c",
}


def _ms(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.2f} ms"


def _parts(wf: Mapping[str, Any]) -> tuple[float, list[tuple[str, float]]]:
    total = float(wf.get("latency_seconds") or 0.0)
    parts = [(str(k), float(v)) for k, v in (wf.get("parts") or {}).items() if float(v) > 0]
    return total, parts


def summary(wf: Mapping[str, Any] | None) -> str:
    """``ONTAP QoS Max 24.00 ms of 25.30 ms (95 %)``: the dominant part; '' without a waterfall."""
    if not wf:
        return ""
    total, parts = _parts(wf)
    if not parts or total <= 0:
        return ""
    name, secs = max(parts, key=lambda p: p[1])
    return f"{NAMES.get(name, name)} {_ms(secs)} of {_ms(total)} ({secs / total * 100:.0f} %)"


def text_line(wf: Mapping[str, Any] | None) -> str:
    """One line for the text report: every part in path order."""
    if not wf:
        return ""
    total, parts = _parts(wf)
    if not parts:
        return ""
    body = ", ".join(f"{NAMES.get(k, k)} {_ms(v)}" for k, v in parts)
    return f"      where the time goes ({_ms(total)}): {body}; most of it {summary(wf)}\n"


def html_block(wf: Mapping[str, Any] | None) -> str:
    """A proportional bar and a table of the parts; '' without a waterfall."""
    if not wf:
        return ""
    total, parts = _parts(wf)
    if not parts or total <= 0:
        return ""
    whole = sum(v for _, v in parts)
    bar = "".join(
        f'<span class="wf-part" title="{html.escape(NAMES.get(k, k))}: {_ms(v)}" '
        f'style="display:inline-block;height:14px;width:{v / whole * 100:.2f}%;'
        f'background:{COLOURS.get(k, "#b0bec5")}"></span>'
        for k, v in parts
    )
    rows = "".join(
        f"<tr><td>{html.escape(NAMES.get(k, k))}</td><td class=n>{_ms(v)}</td>"
        f"<td class=n>{v / total * 100:.0f} %</td></tr>"
        for k, v in parts
    )
    return (
        f'<div class="waterfall"><p><b>Where the time goes:</b> most of it {html.escape(summary(wf))}.</p>'
        f'<div style="width:100%;max-width:520px;white-space:nowrap">{bar}</div>'
        f"<table>{rows}</table></div>"
    )
