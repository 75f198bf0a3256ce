"""A small grafonnet-like library: PromQL fragments, threshold steps, panel kinds and the dashboard envelope."""

from typing import Any

Json = dict[str, Any]  # a piece of Grafana's dashboard model, as json.dumps writes it
