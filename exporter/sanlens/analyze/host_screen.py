"""Which host views can change nothing: each host-side diagnosis's levels over a view's disks as columns.

``analyze`` judges a log's intervals in time order, and in a calm log nearly every interval
leaves the engine as it was: every disk ok, nothing pending, no finding. Judging one
interval of 64 disks costs milliseconds (each diagnosis builds an observation per disk);
telling that it is calm costs a few numpy operations over the disks' columns. So each
host-side diagnosis has a screen here: its level rule over the disks of one view, in arrays,
without evidence or advice, answering per disk "surely ok" (judged, level 0), "not judged"
(not its subject, or no data: level None) or "may be raised". A screen may answer "may be
raised" for a disk the engine then finds ok (the interval is judged in full, nothing lost);
it never answers "ok" where the engine would not (tests hold every screen to its diagnosis
on generated disks and on the golden captures).

It applies only while the engine holds no ONTAP view and no track (nothing pending or up): then a
calm interval's evaluation changes nothing but which subjects were judged, and this says which.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from sanlens.diagnose import iops_ceiling, latency_slo
from sanlens.diagnose.base import Thresholds, disk_key
from sanlens.model import HostDiskStats, HostView

OK, UNJUDGED, MAYBE = 0, -1, 1
# what the screens read of a disk's numbers
FIELDS = (
    "read_iops",
    "write_iops",
    "read_latency_s",
    "write_latency_s",
    "idle_ratio",
    "queue_length",
    "outstanding_io",
)


class Columns:
    """Disks' fields as float arrays, one column per disk (rows: intervals, or one view), NaN where
    there is no number (None, NaN and inf, as ``num`` reads them); and where each read rate was given."""

    def __init__(
        self, disks: Sequence[HostDiskStats], cols: dict[str, np.ndarray], read_iops_given: np.ndarray
    ):
        self.disks = disks  # what the mapping says of each disk (class, queue depth, paths, local)
        self.cols = {f: np.where(np.isfinite(v), v, np.nan) for f, v in cols.items()}
        # latency_slo and san_oversubscription set level 0, not None, where the read rate is present
        # but not a number: ``is not None`` there, not ``num``
        self.read_iops_given = read_iops_given
        self.san = np.array([d.mapped or not d.local for d in disks])  # Context.san_disk, no cluster polled

    @classmethod
    def of(cls, disks: Sequence[HostDiskStats]) -> Columns:
        """One view's disks: a single row."""
        raw = np.array([[getattr(d, f) for f in FIELDS] for d in disks], dtype=np.float64)
        raw = raw.reshape(len(disks), len(FIELDS))  # None -> nan
        given = np.array([[d.read_iops is not None for d in disks]])
        return cls(disks, {f: raw[np.newaxis, :, i] for i, f in enumerate(FIELDS)}, given)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]


def _worst(c: Columns, th: Thresholds) -> tuple[np.ndarray, np.ndarray]:
    """(a latency at or above the disk's class warning, any latency judged): ``worst_latency`` with
    ``class_level``, per disk."""
    t = th[latency_slo.ID]
    min_iops = t["min_iops"]
    warn = np.array(
        [
            t[f"{d.data_class if d.data_class in latency_slo.CLASSES else 'data'}_warning_seconds"]
            for d in c.disks
        ]
    )
    fires = np.zeros(c["read_iops"].shape, dtype=bool)
    judged = np.zeros(c["read_iops"].shape, dtype=bool)
    for iops, lat in (("read_iops", "read_latency_s"), ("write_iops", "write_latency_s")):
        with np.errstate(invalid="ignore"):
            qual = (c[iops] >= min_iops) & np.isfinite(c[lat])
            fires |= qual & (c[lat] >= warn)
        judged |= qual
    return fires, judged


def _levels(subject: np.ndarray, maybe: np.ndarray, judged: np.ndarray) -> np.ndarray:
    out = np.where(maybe, MAYBE, np.where(judged, OK, UNJUDGED))
    return np.where(subject, out, UNJUDGED)


def latency(c: Columns, th: Thresholds, capacity: float | None) -> np.ndarray:
    fires, judged = _worst(c, th)
    return _levels(np.ones(len(c.disks), dtype=bool), fires, judged | c.read_iops_given)


def oversubscription(c: Columns, th: Thresholds, capacity: float | None) -> np.ndarray:
    fires, judged = _worst(c, th)
    with np.errstate(invalid="ignore"):
        idle = c["idle_ratio"] >= th["san_oversubscription"]["min_idle_ratio"]
    # a latency past its warning on a disk that is not idle is ok; the other checks only lower it further
    return _levels(c.san, fires & idle, judged | c.read_iops_given)


def queue(c: Columns, th: Thresholds, capacity: float | None) -> np.ndarray:
    t = th["host_queue_limited"]
    ri, wi, rl, wl = c["read_iops"], c["write_iops"], c["read_latency_s"], c["write_latency_s"]
    rl_ok, wl_ok = np.isfinite(rl), np.isfinite(wl)
    has_lat = rl_ok | wl_ok  # weighted_latency is None without either
    # weighted_latency: IOPS-weighted, or the larger latency when no operations are counted
    r = np.where(rl_ok, np.nan_to_num(ri), 0.0)
    w = np.where(wl_ok, np.nan_to_num(wi), 0.0)
    ops = r + w
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = (
            np.where(rl_ok, r * np.nan_to_num(rl), 0.0) + np.where(wl_ok, w * np.nan_to_num(wl), 0.0)
        ) / ops
        r_host = np.where(ops > 0, weighted, np.fmax(rl, wl))
        iops = np.where(np.isfinite(ri), np.nan_to_num(ri), 0.0) + np.where(
            np.isfinite(wi), np.nan_to_num(wi), 0.0
        )
        iops = np.where(np.isfinite(ri) | np.isfinite(wi), iops, np.nan)
        # Little's law where the source keeps no mean in flight, else the instantaneous queue
        oio, ql = c["outstanding_io"], c["queue_length"]
        rated = np.isfinite(iops) & has_lat
        n = np.where(np.isfinite(oio), oio, np.where(rated, iops * r_host, ql))
        q_eff = np.array([d.q_eff for d in c.disks], dtype=np.float64)
        present = (np.isfinite(oio) | rated | np.isfinite(ql)) & (q_eff > 0)
        fill = n / q_eff
        # a hair below the threshold still counts as raised (the engine's scalar arithmetic decides), and
        # so does a fill that is no number
        maybe = has_lat & present & ~(fill < t["queue_fill_ratio"] * (1 - 1e-9))
    return _levels(c.san, maybe, (has_lat & present) | c.read_iops_given)


def lun_ceiling(c: Columns, th: Thresholds, capacity: float | None) -> np.ndarray:
    t = th["lun_iops_ceiling"]
    ri, wi = c["read_iops"], c["write_iops"]
    given = np.isfinite(ri) | np.isfinite(wi)
    iops = np.nan_to_num(ri) + np.nan_to_num(wi)
    cap = iops_ceiling.ceiling(None, t)  # no cluster in the inputs: no release known
    with np.errstate(invalid="ignore"):
        maybe = given & (iops / cap >= t["warning_fraction"] * (1 - 1e-9))
    return _levels(c.san, maybe, given)


def path_loss(c: Columns, th: Thresholds, capacity: float | None) -> np.ndarray:
    active = np.array([-1 if d.observed_paths is None else d.observed_paths for d in c.disks])
    want = np.array([-1 if d.configured_paths is None else d.configured_paths for d in c.disks])
    known = (active >= 0) & (want >= 0)
    return _levels(known, known & (active < want), known)


Screen = Callable[[Columns, Thresholds, float | None], np.ndarray]
# every diagnosis that judges host disks with no cluster polled; the others judge nothing then
SCREENS: Mapping[str, Screen] = {
    "latency_slo": latency,
    "san_oversubscription": oversubscription,
    "host_queue_limited": queue,
    "lun_iops_ceiling": lun_ceiling,
    "host_path_loss": path_loss,
}
# judges host disks mapped to a volume (its host-view part); a view with one is always judged in full
UNSCREENED = ("volume_iops_ceiling",)


class Screened(NamedTuple):
    """One view as the screens see it: the subjects each diagnosis surely judges ok, and the disks
    (by subject key) one may raise. ``raised`` empty: the view is calm."""

    ok: dict[str, list[str]]
    raised: frozenset[str]

    @property
    def calm(self) -> bool:
        return not self.raised


def _screened(c: Columns, th: Thresholds, capacity: float | None) -> list[Screened | None]:
    """Per row of ``c``: what the screens say, or None when they cannot say (a disk named a volume)."""
    if any(d.volume for d in c.disks):
        return [None] * len(c.read_iops_given)
    keys = [disk_key(d) for d in c.disks]
    shape = c["read_iops"].shape
    levels = {did: np.broadcast_to(screen(c, th, capacity), shape) for did, screen in SCREENS.items()}
    raised = np.zeros(shape, dtype=bool)
    for lv in levels.values():
        raised |= lv == MAYBE
    # intervals mostly repeat a handful of patterns (every disk ok, most of a log): each distinct
    # row's subjects are listed once and shared by every interval that has it
    oks = {did: _rows(lv == OK, keys, list) for did, lv in levels.items()}
    ups = _rows(raised, keys, frozenset)
    return [Screened({did: rows[t] for did, rows in oks.items()}, ups[t]) for t in range(shape[0])]


_Listed = TypeVar("_Listed", list[str], frozenset[str])


def _rows(mask: np.ndarray, keys: Sequence[str], kind: Callable[[list[str]], _Listed]) -> list[_Listed]:
    """Per row of ``mask`` (intervals x disks), the keys of its true disks, one object per distinct row."""
    packed = np.packbits(mask, axis=1)  # a row's bits as bytes: the pattern's key
    width, whole = packed.shape[1], packed.tobytes()
    made: dict[bytes, _Listed] = {}
    out: list[_Listed] = []
    for t in range(mask.shape[0]):
        row = whole[t * width : (t + 1) * width]
        got = made.get(row)
        if got is None:
            got = made[row] = kind([keys[j] for j in np.flatnonzero(mask[t]).tolist()])
        out.append(got)
    return out


def calm(view: HostView, th: Thresholds, capacity: float | None = None) -> dict[str, list[str]] | None:
    """The subjects each diagnosis judges ok in ``view``, when every disk is surely ok or not judged;
    None when a disk may be raised (or one is mapped to a volume): judge the view in full."""
    got = _screened(Columns.of(view.disks), th, capacity)[0]
    return got.ok if got is not None and got.calm else None


def steps_screen(th: Thresholds, capacity: float | None = None) -> Callable[..., list[Screened | None]]:
    """A screen for ``HostIntervals.views``: a host's disks over every interval at once."""

    def screen(
        disks: list[HostDiskStats], field: Callable[[str], tuple[np.ndarray, np.ndarray]]
    ) -> list[Screened | None]:
        read = {f: field(f) for f in FIELDS}
        cols = {f: v for f, (v, _given) in read.items()}
        return _screened(Columns(disks, cols, read["read_iops"][1]), th, capacity)

    return screen
