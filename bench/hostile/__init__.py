"""The hostile-input probe's categories (bench/hostile_probe.py runs them)."""
