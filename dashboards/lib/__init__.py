"""A small grafonnet-like library: PromQL fragments, threshold steps, panel kinds and the dashboard envelope."""
