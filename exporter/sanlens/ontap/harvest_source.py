"""An ONTAP cluster read from the series NetApp Harvest already exports, through a Prometheus query API.

A site that runs Harvest should not poll its clusters twice (ONTAP's API has real concurrency
limits). Harvest exports cooked gauges, not counters: rates per second, latencies already
divided by their ops in microseconds, CPU in percent, and ``fcp_queue_full`` as the count of
its last poll. This source reads them with one instant query per object kind (a ``__name__``
regex batched by the cluster's label), builds the same ``OntapView`` the REST collector builds,
and publishes the LUNs to the host join by the serial Harvest exports as ``serial_hex``.

Its ``/metrics`` part is the cluster's identity (``sanlens_ontap_cluster_info``) only: the series
are already in Prometheus.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter

from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.join import LunDirectory, LunIdentity
from sanlens.model import (
    DiskStats,
    FcPortStats,
    LifStats,
    LunStats,
    MetricBuilder,
    NodeStats,
    OntapVersion,
    OntapView,
    Snapshot,
    VolumeStats,
)
from sanlens.ontap.client import OntapClient
from sanlens.ontap.collector import CLUSTER_INFO_HELP, MALFORMED_HELP
from sanlens.ontap.inputs import harvest_status
from sanlens.urls import safe_url

log = logging.getLogger(__name__)

US = 1e-6  # Harvest's latencies are microseconds per op
PCT = 0.01  # and its CPU figures percent (0..100)
LUN = ("lun_read_ops", "lun_write_ops", "lun_read_data", "lun_write_data", "lun_avg_read_latency",
       "lun_avg_write_latency", "lun_labels")  # fmt: skip
VOLUME = ("volume_read_ops", "volume_write_ops", "volume_other_ops", "volume_total_ops", "volume_read_latency",
          "volume_write_latency", "volume_avg_latency", "volume_labels")  # fmt: skip
NODE = ("node_cpu_busy", "node_avg_processor_busy", "node_cpu_domain_busy", "node_labels")
FCP = ("fcp_read_data", "fcp_write_data", "fcp_queue_full")
# per-disk busy: Harvest's Disk plugin exports it by RAID group (raid_disk_busy), not as disk_busy
DISK = ("raid_disk_busy", "disk_labels")
Sample = tuple[dict[str, str], float]
# Per object kind: the labels its gauges are read by, its info family and the info labels read. The
# queries aggregate to these (``max by``), so the API answers only them: Harvest's info families carry
# up to 29 labels (volume_labels), every series its cluster, datacenter, job and instance too, and a
# second Harvest poller or scrape job for the same cluster folds into one series.
# iSCSI and NVMe-oF LIFs (Harvest's RestPerf ISCSI and NVMfLif objects) with the IP LIF inventory
# (Rest LIF: the port each sits on) and the Ethernet ports' speeds (Rest NetPort, Mbit/s)
FRONT = ("iscsi_lif_iscsi_read_ops", "iscsi_lif_iscsi_write_ops", "iscsi_lif_read_data", "iscsi_lif_write_data",
         "iscsi_lif_avg_read_latency", "iscsi_lif_avg_write_latency", "nvme_lif_read_ops", "nvme_lif_write_ops",
         "nvme_lif_read_data", "nvme_lif_write_data", "nvme_lif_avg_read_latency", "nvme_lif_avg_write_latency",
         "lif_labels", "net_port_status")  # fmt: skip
# NVMe namespaces (RestPerf Namespace; Rest Namespace: the UUID that joins host namespaces)
NAMESPACE = ("namespace_read_ops", "namespace_write_ops", "namespace_other_ops", "namespace_read_data",
             "namespace_write_data", "namespace_avg_read_latency", "namespace_avg_write_latency",
             "namespace_labels")  # fmt: skip
READ_BY: dict[tuple[str, ...], tuple[str, tuple[tuple[str, str], ...]]] = {
    LUN: ("svm, volume, lun", (("lun_labels", "svm, volume, lun, qtree, node, serial_hex, state"),)),
    VOLUME: ("svm, volume, aggr, node, style", (("volume_labels", "svm, volume, aggr, node, style"),)),
    NODE: ("node, metric", (("node_labels", "node, model, version"),)),
    FCP: ("node, port, speed", ()),
    DISK: ("node, aggr, plex, raid, disk", (("disk_labels", "disk, node, container_type, failed"),)),
    FRONT: (
        "svm, lif, node, port",
        (
            ("lif_labels", "svm, lif, node, port, protocols, status"),
            ("net_port_status", "node, port, op_speed"),
        ),
    ),
    NAMESPACE: ("svm, volume, path", (("namespace_labels", "svm, volume, path, uuid, node, state"),)),
}
KINDS = (LUN, VOLUME, NODE, FCP, DISK, FRONT, NAMESPACE)


class HarvestSource:
    """One cluster's view from a Prometheus-compatible query API holding Harvest's series."""

    kind = "ontap"

    def __init__(self, target: OntapTarget, directory: LunDirectory) -> None:
        self.target = target
        self.name = target.name
        self.interval = float(target.poll_interval)
        self.directory = directory
        self.client = OntapClient(target)
        self.cluster = target.harvest_cluster or target.name
        self.selector = f'cluster="{_quote(self.cluster)}"' + (
            f", {target.selector}" if target.selector else ""
        )
        self.queries = 0  # instant queries sent, for the query budget
        self.problems: Counter[str] = Counter()  # this poll's samples skipped, by why
        self._problems_logged = False

    def close(self) -> None:
        self.client.close()

    def abort(self) -> None:
        self.client.abort()

    def _note_problems(self) -> None:
        """Log when the API starts (or stops) answering samples that must be skipped, not every poll."""
        bad = sum(self.problems.values())
        if bad and not self._problems_logged:
            log.warning(
                "%s: %s skipped (not a series with a name and a number, or the same series twice; the first "
                "wins); see sanlens_ontap_malformed_records",
                self.name, ", ".join(f"{n} {p}" for p, n in sorted(self.problems.items()) if n),
            )  # fmt: skip
        self._problems_logged = bool(bad)

    def _query(self, names: tuple[str, ...]) -> dict[str, list[Sample]]:
        """One instant query for one object kind of this cluster, split back by family."""
        q = query_of(names, self.selector)
        doc = self.client.get("/api/v1/query", {"query": q})
        self.queries += 1
        if doc.get("status") != "success":
            why = _clip(str(doc.get("error") or doc))
            raise SourceError(f"{safe_url(self.target.url)}: query {q!r} failed: {why}", reason="api")
        return samples_of(doc, safe_url(self.target.url), self.problems)

    def poll(self) -> Snapshot:
        self.client.resume()  # a poll cut at its deadline left the client refusing requests
        now = time.time()
        self.problems.clear()
        lun, vol, node, fcp, disk, front, ns = (self._query(names) for names in KINDS)
        self._note_problems()
        luns = _luns(self.name, lun)
        namespaces, uuids = _namespaces(self.name, ns)
        self.directory.publish(
            self.name,
            [LunIdentity(self.name, x.svm, x.volume, x.lun, x.serial, x.node) for x in luns]
            + [
                LunIdentity(
                    self.name, x.svm, x.volume, x.lun, "", x.node, kind="namespace", uuid=uuids[x.svm, x.lun]
                )
                for x in namespaces
                if uuids.get((x.svm, x.lun))
            ],
        )
        version = _version(node)
        fc_speeds = port_speeds(fcp.get("fcp_read_data", []), "speed")
        view = OntapView(
            self.name,
            now,
            self.interval,
            version,
            (*luns, *namespaces),
            _volumes(self.name, vol),
            _nodes(self.name, node),
            disks=_disks(self.name, disk),
            fc_ports=_ports(
                self.name, fcp, self.interval / float(self.target.harvest_data_interval), fc_speeds
            ),
            lifs=_lifs(self.name, front, fc_speeds),
        )
        # the cluster's identity, so the dashboards' cluster variable and version ceilings find it
        b = MetricBuilder()
        b.add(
            "sanlens_ontap_cluster_info",
            "gauge",
            CLUSTER_INFO_HELP,
            {
                "cluster": self.name,
                "version": str(version or ""),
                "personality": "unified",
                "collection": "harvest",
            },
            1,
        )
        for problem, n in sorted(self.problems.items()):
            if n:
                b.add("sanlens_ontap_malformed_records", "gauge", MALFORMED_HELP,
                      {"cluster": self.name, "table": "harvest", "problem": problem}, n)  # fmt: skip
        front_end = bool(view.fc_ports or view.lifs)
        inputs = harvest_status(_labels_missing(lun), front_end)
        return Snapshot(self.name, "ontap", now, b.build(), view, inputs=inputs)


def samples_of(doc: dict, where: str, problems: Counter[str] | None = None) -> dict[str, list[Sample]]:
    """An instant query's answer as samples by family.

    A sample that is not ``{"metric": {"__name__": ..., labels}, "value": [time, "number"]}`` is
    skipped; an answer with samples and not one readable is refused as ``malformed`` (garbage is not
    an empty cluster). The same series twice (no real API answers an aggregation so): the first wins.
    """
    data = doc.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if result is None:
        result = []
    if not isinstance(result, list):
        raise SourceError(f"{where}: the query's result is not a list", reason="malformed")
    out: dict[str, list[Sample]] = {}
    seen: set[tuple[object, ...]] = set()
    skipped = duplicates = 0
    for r in result:
        metric = r.get("metric") if isinstance(r, dict) else None
        pair = r.get("value") if isinstance(r, dict) else None
        try:
            if not isinstance(metric, dict) or not isinstance(pair, list) or len(pair) != 2:
                raise ValueError
            value = float(pair[1])  # a string, as the API sends it; "12345"[1] is not a value
            labels = {str(k): str(v) for k, v in metric.items() if isinstance(v, str)}
            name = labels.pop("__name__")
        except (KeyError, TypeError, ValueError, OverflowError):
            skipped += 1
            continue
        key = (name, *sorted(labels.items()))
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        out.setdefault(name, []).append((labels, value))
    if result and not out:
        raise SourceError(f"{where}: none of the {len(result)} samples is readable", reason="malformed")
    if problems is not None:
        problems["unreadable"] += skipped
        problems["duplicate"] += duplicates
    return out


def _clip(text: str, limit: int = 200) -> str:
    """An upstream's words in a message: one line, bounded (an error body can be megabytes)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _labels_missing(lun: dict[str, list[Sample]]) -> dict[str, list[str]]:
    """Labels sanlens joins on that the page lacks: ``serial_hex`` came with Harvest 26.02, and without
    it no host disk finds its LUN. Logged by the caller's status, once per poll, not per LUN."""
    infos = lun.get("lun_labels", [])
    if infos and not any(lv.get("serial_hex") for lv, _ in infos):
        return {"lun_labels": ["serial_hex"]}
    return {}


def query_of(names: tuple[str, ...], selector: str) -> str:
    """The gauges of one object kind and its info families, each aggregated to the labels read."""
    keys, infos = READ_BY[names]
    info_names = {info for info, _ in infos}
    gauges = "|".join(n for n in names if n not in info_names)
    q = f'max by (__name__, {keys}) ({{__name__=~"{gauges}", {selector}}})'
    for info, info_keys in infos:
        q += f' or label_replace(max by ({info_keys}) ({info}{{{selector}}}), "__name__", "{info}", "", "")'
    return q


def _quote(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"')


def _by(samples: dict[str, list[Sample]], family: str, *keys: str) -> dict[tuple[str, ...], float]:
    return {tuple(lv.get(k, "") for k in keys): v for lv, v in samples.get(family, ())}


def lun_path(labels: dict[str, str]) -> str:
    """Harvest splits a LUN's path into volume, qtree and lun: put it back (/vol/<volume>[/<qtree>]/<lun>)."""
    parts = [labels.get("volume", ""), labels.get("qtree", ""), labels.get("lun", "")]
    return "/vol/" + "/".join(p for p in parts if p)


def per_op(latency: float | None, ops: float | None) -> float | None:
    """A latency per operation, None when there were no operations: Harvest exports an average over
    a zero base as 0 (an idle LIF reads "0 µs"), where the counter tables' cooking leaves it unset."""
    return None if ops == 0 else latency


def serial_of(serial_hex: str) -> str:
    """Harvest's ``serial_hex`` back to ONTAP's 12-character serial (the hex of its ASCII bytes)."""
    try:
        return bytes.fromhex(serial_hex).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return ""


def _luns(cluster: str, s: dict[str, list[Sample]]) -> list[LunStats]:
    keys = ("svm", "volume", "lun")
    info = {tuple(lv.get(k, "") for k in keys): lv for lv, _ in s.get("lun_labels", ())}
    fams = {f: _by(s, f, *keys) for f in LUN if f != "lun_labels"}
    out = []
    for key in sorted(set(info) | set(fams["lun_read_ops"])):
        lv = info.get(key, dict(zip(keys, key, strict=True)))

        def g(f: str, scale: float = 1.0, key: tuple[str, ...] = key) -> float | None:
            v = fams[f].get(key)
            return None if v is None else v * scale

        out.append(
            LunStats(
                cluster,
                key[0],
                key[1],
                lun_path(lv),
                serial_of(lv.get("serial_hex", "")),
                lv.get("node", ""),
                g("lun_read_ops"),
                g("lun_write_ops"),
                None,
                per_op(g("lun_avg_read_latency", US), g("lun_read_ops")),
                per_op(g("lun_avg_write_latency", US), g("lun_write_ops")),
                g("lun_read_data"),
                g("lun_write_data"),
                lv.get("state", ""),
            )
        )
    return out


def _volumes(cluster: str, s: dict[str, list[Sample]]) -> tuple[VolumeStats, ...]:
    keys = ("svm", "volume")
    # aggr, node and style ride on every volume series; volume_labels, where exported, wins
    info = {tuple(lv.get(k, "") for k in keys): lv for f in VOLUME for lv, _ in s.get(f, ())}
    info |= {tuple(lv.get(k, "") for k in keys): lv for lv, _ in s.get("volume_labels", ())}
    fams = {f: _by(s, f, *keys) for f in VOLUME if f != "volume_labels"}
    out = []
    for key in sorted(set(fams["volume_total_ops"]) | set(fams["volume_read_ops"])):
        lv = info.get(key, {})

        def g(f: str, scale: float = 1.0, key: tuple[str, ...] = key) -> float | None:
            v = fams[f].get(key)
            return None if v is None else v * scale

        out.append(
            VolumeStats(
                cluster, key[0], key[1], lv.get("aggr", ""), lv.get("node", ""), lv.get("style", ""),
                g("volume_read_ops"), g("volume_write_ops"), g("volume_other_ops"), g("volume_total_ops"),
                per_op(g("volume_read_latency", US), g("volume_read_ops")),
                per_op(g("volume_write_latency", US), g("volume_write_ops")),
                per_op(g("volume_avg_latency", US), g("volume_total_ops")),
            )
        )  # fmt: skip
    return tuple(out)


def _nodes(cluster: str, s: dict[str, list[Sample]]) -> tuple[NodeStats, ...]:
    busy = _by(s, "node_cpu_busy", "node")
    avg = _by(s, "node_avg_processor_busy", "node")
    domains: dict[str, dict[str, float]] = {}
    for lv, v in s.get("node_cpu_domain_busy", ()):
        domains.setdefault(lv.get("node", ""), {})[lv.get("metric", "")] = v * PCT
    model = {lv.get("node", ""): lv.get("model", "") for lv, _ in s.get("node_labels", ())}
    names = sorted({k[0] for k in busy} | {k[0] for k in avg} | set(domains) | set(model))
    return tuple(
        NodeStats(
            cluster,
            n,
            model.get(n, ""),
            None,
            busy[(n,)] * PCT if (n,) in busy else None,
            domains.get(n, {}),
            avg[(n,)] * PCT if (n,) in avg else None,
        )
        for n in names
    )


_SPEED = re.compile(r"(\d+(?:\.\d+)?)")


def port_speeds(samples: list[Sample], label: str, per_gbps: float = 1.0) -> dict[tuple[str, ...], float]:
    """(node, port) -> link speed in Gbit/s from a speed label (FC's in Gbit/s, Ethernet's ``op_speed``
    in Mbit/s: ``per_gbps`` 1000); ports whose label gives no positive speed are left out."""
    out: dict[tuple[str, ...], float] = {}
    for lv, _ in samples:
        m = _SPEED.search(lv.get(label, ""))
        if m and float(m.group(1)) > 0:
            out[(lv.get("node", ""), lv.get("port", ""))] = float(m.group(1)) / per_gbps
    return out


def _ports(
    cluster: str, s: dict[str, list[Sample]], polls: float, speed: dict[tuple[str, ...], float]
) -> tuple[FcPortStats, ...]:
    """FC ports; ``fcp_queue_full`` counts one Harvest poll, so it is scaled by the ``polls`` of Harvest's
    schedule in one of ours (the view holds counts per its own interval)."""
    keys = ("node", "port")
    rd, wr, qf = (_by(s, f, *keys) for f in FCP)
    return tuple(
        FcPortStats(
            cluster, k[0], k[1], speed.get(k), "", None, None, rd.get(k), wr.get(k),
            qf[k] * polls if k in qf else None,
        )
        for k in sorted(set(rd) | set(wr))
    )  # fmt: skip


def _disks(cluster: str, s: dict[str, list[Sample]]) -> tuple[DiskStats, ...]:
    """Every disk of ``disk_labels`` (its container and whether ONTAP failed it) with, for the disks in
    RAID groups, busy and the aggregate and RAID group (/aggr/plex/rg, as ONTAP's plexes name it)."""
    info = {lv.get("disk", ""): lv for lv, _ in s.get("disk_labels", ())}
    busy = {lv.get("disk", ""): (lv, v) for lv, v in s.get("raid_disk_busy", ())}
    out = []
    for disk in sorted(set(busy) | set(info)):
        lv, v = busy.get(disk, ({}, None))
        meta = info.get(disk, {})
        aggr = lv.get("aggr", "")
        out.append(
            DiskStats(
                cluster,
                disk,
                aggr,
                lv.get("node", "") or meta.get("node", ""),
                f"/{aggr}/{lv.get('plex', '')}/{lv.get('raid', '')}" if lv else "",
                container=meta.get("container_type", ""),
                busy_ratio=None if v is None else v * PCT,
                state="broken" if meta.get("failed") == "true" else "",
            )
        )
    return tuple(out)


def _namespaces(
    cluster: str, s: dict[str, list[Sample]]
) -> tuple[list[LunStats], dict[tuple[str, str], str]]:
    """NVMe namespaces (LUN subjects of kind namespace, by path) and each one's UUID by (svm, path)."""
    keys = ("svm", "volume", "path")
    info = {(lv.get("svm", ""), lv.get("path", "")): lv for lv, _ in s.get("namespace_labels", ())}
    fams = {f: _by(s, f, *keys) for f in NAMESPACE if f != "namespace_labels"}
    out = []
    for key in sorted(
        set(fams["namespace_read_ops"]) | {(k[0], lv.get("volume", ""), k[1]) for k, lv in info.items()}
    ):
        svm, volume, path = key
        lv = info.get((svm, path), {})

        def g(f: str, scale: float = 1.0, key: tuple[str, ...] = key) -> float | None:
            v = fams[f].get(key)
            return None if v is None else v * scale

        out.append(
            LunStats(
                cluster, svm, volume or lv.get("volume", ""), path, "", lv.get("node", ""),
                g("namespace_read_ops"), g("namespace_write_ops"), g("namespace_other_ops"),
                per_op(g("namespace_avg_read_latency", US), g("namespace_read_ops")),
                per_op(g("namespace_avg_write_latency", US), g("namespace_write_ops")),
                g("namespace_read_data"), g("namespace_write_data"), lv.get("state", ""), kind="namespace",
            )
        )  # fmt: skip
    return out, {k: lv.get("uuid", "") for k, lv in info.items()}


def _lifs(cluster: str, s: dict[str, list[Sample]], fc: dict[tuple[str, ...], float]) -> tuple[LifStats, ...]:
    """iSCSI and NVMe-oF LIFs with the port each sits on and its speed: an IP LIF's port from the LIF
    inventory and its speed from the Ethernet port's (Mbit/s); an NVMe LIF no IP LIF names is NVMe/FC,
    on the FC port its series name (``fc``: the FC ports' speeds)."""
    ip = {(lv.get("svm", ""), lv.get("lif", "")): lv for lv, _ in s.get("lif_labels", ())}
    eth = port_speeds(s.get("net_port_status", []), "op_speed", per_gbps=1000.0)
    out = []
    for prefix, ops in (("iscsi_lif_", "iscsi_lif_iscsi_"), ("nvme_lif_", "nvme_lif_")):
        keys = ("svm", "lif", "node", "port")
        fams = {f: _by(s, prefix + f if f.endswith(("data", "latency")) else ops + f, *keys)
                for f in ("read_ops", "write_ops", "read_data", "write_data", "avg_read_latency", "avg_write_latency")}  # fmt: skip
        for key in sorted(set(fams["read_ops"]) | set(fams["write_ops"])):
            svm, lif, node, port = key
            inv = ip.get((svm, lif))
            protocol = "iscsi" if prefix == "iscsi_lif_" else "nvme_tcp" if inv is not None else "nvme_fc"
            # nvmf_lif's port_id, as the REST collector reads it: the port after the node's name
            where = inv.get("port", "") if inv is not None else port.rsplit(":", 1)[-1]
            node = node or (inv.get("node", "") if inv is not None else "")
            speed = eth.get((node, where)) if inv is not None else fc.get((node, where))

            def g(f: str, scale: float = 1.0, key: tuple[str, ...] = key, fams: dict = fams) -> float | None:
                v = fams[f].get(key)
                return None if v is None else v * scale

            out.append(
                LifStats(
                    cluster, node, svm, lif, protocol, where, speed, inv.get("status", "") if inv else "",
                    g("read_ops"), g("write_ops"), per_op(g("avg_read_latency", US), g("read_ops")),
                    per_op(g("avg_write_latency", US), g("write_ops")),
                    g("read_data"), g("write_data"),
                )
            )  # fmt: skip
    return tuple(out)


def _version(s: dict[str, list[Sample]]) -> OntapVersion | None:
    """The ONTAP release from the node inventory's ``version`` label (``9.12.1`` inside NetApp's text)."""
    for lv, _ in s.get("node_labels", ()):
        m = re.search(r"(\d+)\.(\d+)\.(\d+)", lv.get("version", ""))
        if m:
            return OntapVersion(int(m.group(1)), int(m.group(2)), int(m.group(3)), lv.get("version", ""))
    return None
