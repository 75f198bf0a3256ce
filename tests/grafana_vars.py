"""Grafana dashboard variable references (``$x``, ``${x}``, ``${x:fmt}``, ``[[x]]``), shared by the dashboard tests."""

from __future__ import annotations

import re

VAR_RE = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)|\[\[([A-Za-z_]\w*)\]\]")


def substitute(text: str, values: dict[str, str]) -> str:
    """Replace every variable reference; an undefined one is an error, as it would be an empty panel."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        if name not in values:
            raise AssertionError(f"undefined variable ${name} in {text!r}")
        return values[name]

    return VAR_RE.sub(repl, text)
