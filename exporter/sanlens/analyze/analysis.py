"""``Analysis``: what one input contributes to a `sanlens analyze` report.

Every input reader returns one and every later stage (diagnoses, input status, the text,
JSON and HTML reports) reads it: a module of its own keeps the readers and those stages
independent of the command that runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Analysis:
    """What one input contributes to the report."""

    input: dict[str, Any]
    series: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    detail: object = None  # the reader's own result, for later stages (diagnoses, HTML)
    errors: list[str] = field(default_factory=list)  # FILE:LINE: message; the input was not (fully) read
