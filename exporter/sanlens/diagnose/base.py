"""What every diagnosis module shares: the observation it returns and the joined context it reads.

A diagnosis is a pure function ``evaluate(ctx, th) -> list[Observation]``: one
observation per subject that exists, with the level its thresholds give *now*.
The engine turns those levels into states with sustain and hysteresis.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from sanlens.diagnose.history import History
from sanlens.diagnose.numeric import num
from sanlens.model import (
    HostDiskStats,
    HostView,
    LunStats,
    NodeStats,
    OntapVersion,
    OntapView,
    VolumeStats,
)
from sanlens.qos import QosPolicy, QosWorkload

LABELS = ("cluster", "node", "svm", "volume", "lun", "aggregate", "host", "disk", "port")
# Serial (single-threaded) CPU domains across ONTAP releases; their busy is capped at one core.
SERIAL_DOMAINS = frozenset({"kahuna", "kahuna_legacy", "nwk_legacy", "network", "raid", "target", "cluster"})
Thresholds = Mapping[str, Mapping[str, float]]


class Observation(NamedTuple):
    """One subject of one diagnosis at one evaluation.

    ``level`` is 0/1/2 as the thresholds give it now, or None when the data to
    judge is missing (the engine then keeps the subject's state as it was).
    A tuple, not a frozen dataclass: every diagnosis makes one per subject per
    evaluation (~60,000 at 10,000 LUNs), and a tuple is three times cheaper to build.
    """

    id: str
    key: str  # readable subject, e.g. cluster1/svm1/vol/v/lun0 or sql01/disk 1
    labels: Mapping[str, str]
    level: int | None
    score: float = 0.0
    evidence: Mapping[str, float | None] = MappingProxyType({})  # None/NaN are dropped
    recommendation: str = ""


# The evidence of an ok observation the engine keeps with no track: its subject and level are all a
# later evaluation reads of it, and at 10,000 LUNs the evidence of 47,000 such subjects was 12 MB.
KEPT_OUT: Mapping[str, float | None] = MappingProxyType({})


def quieted(o: Observation) -> Observation:
    """``o`` without its evidence, score and recommendation (:data:`KEPT_OUT`)."""
    return Observation(o.id, o.key, o.labels, o.level, 0.0, KEPT_OUT)


def labels(**kw: str) -> dict[str, str]:
    """A subject's labels, in ``LABELS`` order; one it lacks is absent, which every reader takes as
    "" (a series gets it empty): a LUN names four of nine, and 17,000 subjects are kept at scale."""
    return {k: v for k in LABELS if (v := str(kw.get(k, "") or ""))}


# Subject labels are the same dict for every diagnosis and every evaluation of a subject:
# at 10,000 LUNs, building them afresh was a fifth of the engine's time. Shared, so read-only.
_SUBJECT_LABELS: dict[tuple[str, ...], dict[str, str]] = {}
_SUBJECT_LABELS_MAX = 200_000
_K = TypeVar("_K")
_V = TypeVar("_V")


def _keep(store: dict[_K, _V], ident: _K, value: _V) -> _V:
    """``value`` stored for ``ident`` in a subject cache: subjects come and go, so a full cache
    starts again rather than grow without end."""
    if len(store) >= _SUBJECT_LABELS_MAX:
        store.clear()
    store[ident] = value
    return value


def _subject_labels(key: tuple[str, ...], **kw: str) -> dict[str, str]:
    return _SUBJECT_LABELS.get(key) or _keep(_SUBJECT_LABELS, key, labels(**kw))


def disk_labels(d: HostDiskStats) -> dict[str, str]:
    """The labels of a host disk subject (a shared dict: never modify it)."""
    key = ("disk", d.host, d.disk, d.cluster, d.svm, d.volume, d.lun)
    hit = _SUBJECT_LABELS.get(key)
    if hit is not None:
        return hit
    return _subject_labels(
        key, host=d.host, disk=d.disk, cluster=d.cluster, svm=d.svm, volume=d.volume, lun=d.lun
    )


def lun_labels(lun: LunStats) -> dict[str, str]:
    """The labels of a LUN subject (a shared dict: never modify it).

    Identity only: the node that serves the LUN changes with a volume move, and a label
    change would restart the alert's ``for:``; the engine shows it on
    ``sanlens_diagnosis_location_info`` instead."""
    return lun_subject(lun)[1]


def disk_key(d: HostDiskStats) -> str:
    return f"{d.host}/disk {d.disk}"


def lun_key(cluster: str, svm: str, lun: str) -> str:
    return f"{cluster}/{svm}/{lun.lstrip('/')}"


def of_disk(
    did: str, d: HostDiskStats, level: int | None, score: float, ev: Mapping[str, float | None], advice: str
) -> Observation:
    """An observation whose subject is a host disk."""
    return Observation(did, disk_key(d), disk_labels(d), level, score, ev, advice)


# a LUN subject's key and labels by its identity: every LUN diagnosis names each LUN at every
# evaluation (60,000 times at 10,000 LUNs), and the key's text is the same each time
_LUN_SUBJECTS: dict[tuple[str, str, str, str], tuple[str, dict[str, str]]] = {}


def lun_subject(lun: LunStats) -> tuple[str, dict[str, str]]:
    """A LUN's subject key and labels (the labels a shared dict: never modify it)."""
    ident = (lun.cluster, lun.svm, lun.volume, lun.lun)
    return _LUN_SUBJECTS.get(ident) or _keep(
        _LUN_SUBJECTS,
        ident,
        (
            lun_key(lun.cluster, lun.svm, lun.lun),
            labels(cluster=lun.cluster, svm=lun.svm, volume=lun.volume, lun=lun.lun),
        ),
    )


def of_lun(
    did: str, lun: LunStats, level: int | None, score: float, ev: Mapping[str, float | None], advice: str
) -> Observation:
    """An observation whose subject is an ONTAP LUN."""
    key, subject = lun_subject(lun)
    return Observation(did, key, subject, level, score, ev, advice)


def volume_key(cluster: str, svm: str, volume: str) -> str:
    return f"{cluster}/{svm}/{volume}"


_VOLUME_SUBJECTS: dict[tuple[str, str, str], tuple[str, dict[str, str]]] = {}


def volume_subject(cluster: str, svm: str, volume: str) -> tuple[str, dict[str, str]]:
    """A volume's subject key and labels, kept as a LUN's are (the labels a shared dict: never modify it)."""
    ident = (cluster, svm, volume)
    return _VOLUME_SUBJECTS.get(ident) or _keep(
        _VOLUME_SUBJECTS,
        ident,
        (volume_key(cluster, svm, volume), labels(cluster=cluster, svm=svm, volume=volume)),
    )


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"


def pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio * 100:.0f} %"


# a number standing alone, not part of a name (lun-1234567890123, a serial, a path)
_LONG_NUMBER = re.compile(r"(?<![\w.\-/:])-?\d{13,}(?:\.\d+)?(?![\w.\-/:])")


def compact_numbers(text: str) -> str:
    """``text`` with absurdly long numbers (``{:.0f}`` of 1e300) written as ``1e+300``.

    Counter values near the float maximum are garbage, but a fix text quoting one must stay a
    sentence a storage engineer can read, live and offline alike."""
    return _LONG_NUMBER.sub(lambda m: f"{float(m[0]):.3g}", text)


def serial_domains(node: NodeStats) -> dict[str, float]:
    """Busy (ratio of one core) of the node's serial domains, names as the data gives them."""
    out = {}
    for name, v in node.domain_busy.items():
        val = num(v)
        if val is not None and name.lower() in SERIAL_DOMAINS:
            out[name] = val
    return out


def kahuna(node: NodeStats) -> float | None:
    """Kahuna busy: ``kahuna`` or ``kahuna_legacy``, whichever the release reports (the larger)."""
    vals = [num(v) for k, v in node.domain_busy.items() if k.lower().startswith("kahuna")]
    known = [v for v in vals if v is not None]
    return max(known) if known else None


def wafl_exempt(node: NodeStats) -> float | None:
    for k, v in node.domain_busy.items():
        if k.lower() == "wafl_exempt":
            return num(v)
    return None


class Context:
    """The latest views of every source, joined, plus the engine's history."""

    def __init__(
        self,
        now: float,
        ontap: Mapping[str, OntapView],
        hosts: Mapping[str, HostView],
        history: History,
        backend_iops_capacity: float | None = None,
    ) -> None:
        self.now = now
        self.ontap = ontap
        self.hosts = hosts
        self.history = history
        self.backend_iops_capacity = backend_iops_capacity

    def host_disks(self) -> Iterator[HostDiskStats]:
        for hv in self.hosts.values():
            yield from hv.disks

    def luns(self) -> Iterator[LunStats]:
        for v in self.ontap.values():
            yield from v.luns

    def volumes(self) -> Iterator[VolumeStats]:
        for v in self.ontap.values():
            yield from v.volumes

    def nodes(self) -> Iterator[NodeStats]:
        for v in self.ontap.values():
            yield from v.nodes

    @cached_property
    def _luns(self) -> dict[tuple[str, str, str], LunStats]:
        return {(lun.cluster, lun.svm, lun.lun): lun for lun in self.luns()}

    @cached_property
    def _volumes(self) -> dict[tuple[str, str, str], VolumeStats]:
        return {(v.cluster, v.svm, v.volume): v for v in self.volumes()}

    @cached_property
    def _nodes(self) -> dict[tuple[str, str], NodeStats]:
        return {(n.cluster, n.node): n for n in self.nodes()}

    @cached_property
    def mapped_luns(self) -> dict[tuple[str, str, str], HostDiskStats]:
        """LUNs that a host disk maps to (for the data class of a LUN)."""
        return {(d.cluster, d.svm, d.lun): d for d in self.host_disks() if d.mapped}

    def san_disk(self, d: HostDiskStats) -> bool:
        """Whether a host disk is judged as a SAN LUN by the SAN diagnoses (queue, fabric, LUN ceiling).

        Mapped to a LUN (by serial or statically): yes. Its identity reported (a serial) while
        clusters are polled, yet no LUN carries that serial: no, it is a local disk (a tempdb
        NVMe at 80K IOPS is no LUN to spread). Nothing known of it (a PerfMon log, a host
        without the identity script) or no cluster polled: yes, the host-only signatures apply.
        latency_slo judges every disk: an objective holds wherever the data lives. A disk its source
        knows to be local (a Linux disk with no multipath map and no NetApp WWID) is never one."""
        if d.mapped:
            return True
        if d.local:
            return False
        return not (d.lun_serial and self.ontap)

    def lun_of(self, d: HostDiskStats) -> LunStats | None:
        """The ONTAP LUN behind a mapped host disk, from the latest poll of its cluster."""
        if not d.mapped:
            return None
        return self._luns.get((d.cluster, d.svm, d.lun))

    def lun(self, cluster: str, svm: str, lun: str) -> LunStats | None:
        return self._luns.get((cluster, svm, lun))

    def volume(self, cluster: str, svm: str, volume: str) -> VolumeStats | None:
        return self._volumes.get((cluster, svm, volume))

    def node(self, cluster: str, node: str) -> NodeStats | None:
        return self._nodes.get((cluster, node))

    def node_of_lun(self, lun: LunStats) -> NodeStats | None:
        name = lun.node
        if not name:
            vol = self.volume(lun.cluster, lun.svm, lun.volume)
            name = vol.node if vol else ""
        return self.node(lun.cluster, name) if name else None

    @cached_property
    def _qos(self) -> dict[tuple[str, ...], QosWorkload]:
        """Workloads by what they are: a LUN's own (cluster, svm, "lun", path), a volume's
        (cluster, svm, "volume", name) for a workload on the whole volume."""
        out: dict[tuple[str, ...], QosWorkload] = {}
        for v in self.ontap.values():
            for w in v.qos_workloads:
                if w.lun:
                    out[(w.cluster, w.svm, "lun", w.lun)] = w
                elif w.volume and not w.file and not w.qtree:
                    # a volume in a policy group has one workload; the autovolume one is its fallback
                    key = (w.cluster, w.svm, "volume", w.volume)
                    if key not in out or w.policy:
                        out[key] = w
        return out

    @cached_property
    def component_peaks(self) -> dict[tuple[str, str, str], dict[str, float]]:
        """("node" | "aggregate", cluster, name) -> the most each ONTAP latency component adds to an
        operation among the workloads whose volumes sit there: the breakdown behind node and aggregate
        findings (Data for a CPU domain, Disk for disks), which have no waterfall of their own."""
        out: dict[tuple[str, str, str], dict[str, float]] = {}
        for cluster, view in self.ontap.items():
            for w in view.qos_workloads:
                vol = self._volumes.get((cluster, w.svm, w.volume)) if w.components else None
                if vol is None:
                    continue
                for key in (("node", cluster, vol.node), ("aggregate", cluster, vol.aggregate)):
                    if not key[2]:
                        continue
                    peaks = out.setdefault(key, {})
                    for c, secs in w.components.items():
                        if secs > peaks.get(c, 0.0):
                            peaks[c] = secs
        return out

    def component_peak(self, where: str, cluster: str, name: str, component: str) -> float | None:
        return self.component_peaks.get((where, cluster, name), {}).get(component)

    def qos_workload(self, cluster: str, svm: str, volume: str, lun: str = "") -> QosWorkload | None:
        """The QoS workload an operation on the LUN (or volume) is counted in: the LUN's own when a
        policy is set on it, else its volume's."""
        if lun:
            hit = self._qos.get((cluster, svm, "lun", lun))
            if hit is not None:
                return hit
        return self._qos.get((cluster, svm, "volume", volume)) if volume else None

    @cached_property
    def qos_policies(self) -> dict[tuple[str, str, str], QosPolicy]:
        return {(p.cluster, p.svm, p.name): p for v in self.ontap.values() for p in v.qos_policies}

    def version(self, cluster: str) -> OntapVersion | None:
        view = self.ontap.get(cluster)
        if view is not None and view.version is not None:
            return view.version
        return self.history.version(cluster)
