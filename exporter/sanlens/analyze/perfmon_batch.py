"""``Batch``: a block of PerfMon rows as numbers, what both PerfMon readers yield.

The Python reader (:mod:`sanlens.analyze.perfmon_batches`) and the Arrow reader
(:mod:`sanlens.analyze.perfmon_arrow`) both produce it and the summary folds it, so it
sits below all three.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Batch:
    line: int  # file line of the first row (1-based)
    times: np.ndarray  # UTC epoch seconds, one per row
    values: np.ndarray  # rows x columns, NaN = no sample
