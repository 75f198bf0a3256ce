"""Percentiles of many columns in bounded memory: a log-bucket sketch folded one batch at a time.

A 1 GB PerfMon log holds ~100 million cells; keeping them to sort is out of the
question. Each column instead counts its values in logarithmic buckets
(bucket i holds (gamma^(i-1), gamma^i], gamma = (1 + alpha) / (1 - alpha)), the DDSketch scheme: a
quantile read back from a bucket is within a relative error alpha (1 %) of a value
whose rank is the requested one. Zeros are counted apart, negative values in a
mirrored set of buckets. Memory is fixed per column (about 20 KB), whatever the
number of rows, and a batch costs a handful of vectorised numpy calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

ALPHA = 0.01  # relative accuracy of every reported quantile
_GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LN_GAMMA = math.log(_GAMMA)
# Buckets cover 1e-9 .. 1e13 in magnitude (ns to 10 TB/s); values outside fall in the end buckets,
# and a quantile is clamped to the column's min..max anyway.
_LO = math.floor(math.log(1e-9) / _LN_GAMMA)
_HI = math.ceil(math.log(1e13) / _LN_GAMMA)
NBUCKETS = _HI - _LO + 1


class ColumnQuantiles:
    """Bucket counts for ``ncols`` columns; ``add`` a (rows x ncols) batch, NaN meaning no sample.

    A batch's bucket numbers are kept until they outnumber the buckets, then counted
    in one ``bincount``: counting each batch of a few hundred rows on its own cost more in
    clearing a count array of every column's buckets than in counting."""

    def __init__(self, ncols: int) -> None:
        self.ncols = ncols
        # int32: a bucket never counts more than a column's rows (2 billion would be a 20 TB log)
        self.pos = np.zeros((ncols, NBUCKETS), dtype=np.int32)
        self.neg = np.zeros((ncols, NBUCKETS), dtype=np.int32)
        self.zero = np.zeros(ncols, dtype=np.int64)
        self._pending: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])  # flat bucket numbers: pos, neg
        self._pending_n = 0

    @staticmethod
    def _index(magnitudes: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            idx = np.log(magnitudes)
        idx /= _LN_GAMMA
        np.ceil(idx, out=idx)
        np.clip(idx, _LO, _HI, out=idx)
        idx -= _LO
        return idx.astype(np.int64)

    def add(self, values: np.ndarray) -> None:
        if values.size == 0:
            return
        cols = np.broadcast_to(np.arange(self.ncols, dtype=np.int64) * NBUCKETS, values.shape)
        # NaN fails every comparison; an infinity is no sample either
        for side, mask in enumerate(((values > 0) & (values < np.inf), (values < 0) & (values > -np.inf))):
            if side and not mask.any():
                continue
            picked = values[mask]
            flat = self._index(picked if side == 0 else -picked)
            flat += cols[mask]
            self._pending[side].append(flat)
            self._pending_n += flat.size
        self.zero += np.count_nonzero(values == 0, axis=0)
        if self._pending_n >= self.pos.size:
            self._count()

    def _count(self) -> None:
        for pending, counts in zip(self._pending, (self.pos, self.neg), strict=True):
            if pending:
                flat = np.concatenate(pending) if len(pending) > 1 else pending[0]
                counts += np.bincount(flat, minlength=counts.size).reshape(counts.shape).astype(np.int32)
                pending.clear()
        self._pending_n = 0

    def quantile(self, col: int, q: float) -> float | None:
        """The q-quantile (0..1) of one column, nearest rank on the sorted values; None with no values."""
        return self.quantiles((q,), [col])[0][0]

    def quantiles(self, qs: Sequence[float], cols: list[int] | None = None) -> list[list[float | None]]:
        """Per q of ``qs``, the q-quantile of each of ``cols`` (default every column), read from all
        of them at once: nearest rank on the sorted values, None for a column with no values. The
        running counts are summed once for every q."""
        if self._pending_n:
            self._count()
        pick = slice(None) if cols is None else cols
        neg, pos, zero = self.neg[pick], self.pos[pick], self.zero[pick]
        below = neg.sum(axis=1, dtype=np.int64)  # values under zero, then up to and with zero
        upto = below + zero
        n = upto + pos.sum(axis=1, dtype=np.int64)
        running = np.cumsum(pos, axis=1, dtype=np.int64)  # positive values, smallest first
        running += upto[:, None]
        # negative values, most negative first: the buckets from the largest magnitude down
        walked = np.cumsum(neg[:, ::-1], axis=1, dtype=np.int64) if below.any() else None
        below_l, upto_l = below.tolist(), upto.tolist()
        out: list[list[float | None]] = []
        for q in qs:
            rank = np.minimum(np.maximum(np.ceil(q * n), 1), np.maximum(n, 1)).astype(np.int64)  # 1-based
            # the first bucket whose running count reaches the rank
            up = np.count_nonzero(running < rank[:, None], axis=1).tolist()
            down = (
                (NBUCKETS - 1 - np.count_nonzero(walked < rank[:, None], axis=1)).tolist()
                if walked is not None
                else [0] * len(n)
            )
            got: list[float | None] = []
            for k, (total, r) in enumerate(zip(n.tolist(), rank.tolist(), strict=True)):
                if total == 0:
                    got.append(None)
                elif r <= below_l[k]:
                    got.append(-_value(down[k]))
                elif r <= upto_l[k]:
                    got.append(0.0)
                else:
                    got.append(_value(up[k]))
            out.append(got)
        return out


def _value(i: int) -> float:
    """The representative of bucket i: within alpha of every magnitude in (gamma^(k-1), gamma^k]."""
    k = i + _LO
    return 2.0 * _GAMMA**k / (_GAMMA + 1.0)
