"""sanlens: SAN performance diagnosis across the Windows host → ONTAP I/O path."""

__version__ = "0.1.0"
