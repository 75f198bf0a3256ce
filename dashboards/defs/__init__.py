"""One module per dashboard; each has ``NAME`` (the uid after the mixin's prefix) and ``build(cfg)``."""
