"""Linux's names for NVMe block devices, read by the node_exporter collector and the offline readers alike.

Native NVMe multipath shows a namespace once (``nvme0n1``, the head) and hides one device per
controller path (``nvme0c1n1``); the path's controller and namespace numbers tie it to its head.
"""

from __future__ import annotations

import re

NVME_NS = re.compile(r"^nvme(\d+)n(\d+)$")  # a namespace block device (the multipath head)
NVME_PATH = re.compile(r"^nvme(\d+)c(\d+)n(\d+)$")  # a hidden per-controller path device
