"""The simulator of NetApp ONTAP clusters and Windows and Linux hosts that `sanlens demo`,
`sanlens simulate` and the tests poll: a distribution of its own (sim/pyproject.toml), so the
product's wheel and image carry none of it."""
