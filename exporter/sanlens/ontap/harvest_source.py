"""An ONTAP cluster read from the series NetApp Harvest already exports, through a Prometheus query API.

A site that runs Harvest should not poll its clusters twice (ONTAP's API has real concurrency
limits). Harvest exports cooked gauges, not counters: rates per second, latencies already
divided by their ops in microseconds, CPU in percent, and ``fcp_queue_full`` as the count of
its last poll. This source reads them with one instant query per object kind (a ``__name__``
regex batched by the cluster's label), builds the same ``OntapView`` the REST collector builds,
and returns the LUNs for the host join by the serial Harvest exports as ``serial_hex``. QoS is
one query more: the workloads' ``qos_*`` (RestPerf Workload and WorkloadVolume) with the policy
groups' label families (Rest QosPolicyFixed, QosPolicyAdaptive) and the volumes' sizes; Harvest
exports no latency breakdown, so the workloads come without components.

Its ``/metrics`` part is the cluster's identity (``sanlens_ontap_cluster_info``) only: the series
are already in Prometheus.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from sanlens.config import OntapTarget
from sanlens.errors import SourceError
from sanlens.model import LunIdentity, MetricBuilder, Snapshot
from sanlens.ontap.catalogue import catalogue
from sanlens.ontap.client import OntapClient
from sanlens.ontap.collector import CLUSTER_INFO_HELP, MALFORMED_HELP
from sanlens.ontap.harvest_series import HarvestQuery, Samples, clip, queries, quote, samples_of
from sanlens.ontap.harvest_views import HarvestRow, harvest_view
from sanlens.ontap.inputs import harvest_status
from sanlens.urls import safe_url

log = logging.getLogger(__name__)


class HarvestSource:
    """One cluster's view from a Prometheus-compatible query API holding Harvest's series."""

    kind = "ontap"

    def __init__(self, target: OntapTarget) -> None:
        self.target = target
        self.name = target.name
        self.interval = float(target.poll_interval)
        self.client = OntapClient(target)
        self.cluster = target.harvest_cluster or target.name
        self.selector = f'cluster="{quote(self.cluster)}"' + (
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

    def _query(self, query: HarvestQuery) -> Samples:
        """One instant query for one object kind of this cluster, split back by family."""
        q = query.text(self.selector)
        doc = self.client.get("/api/v1/query", {"query": q})
        self.queries += 1
        if doc.get("status") != "success":
            why = clip(str(doc.get("error") or doc))
            raise SourceError(f"{safe_url(self.target.url)}: query {q!r} failed: {why}", reason="api")
        return samples_of(doc, safe_url(self.target.url), self.problems)

    def poll(self) -> Snapshot:
        self.client.resume()  # a poll cut at its deadline left the client refusing requests
        now = time.time()
        self.problems.clear()
        answers = {query.name: self._query(query) for query in queries()}
        self._note_problems()
        polls = self.interval / float(self.target.harvest_data_interval)
        view, rows = harvest_view(self.name, now, self.interval, answers, polls)
        uuids = {
            (r.key["svm"], r.key["path"]): r.info.get("uuid", "") for r in rows.get("namespace", ()) if r.info
        }
        identities = tuple(
            LunIdentity(self.name, x.svm, x.volume, x.lun, x.serial, x.node)
            if x.kind == "lun"
            else LunIdentity(
                self.name, x.svm, x.volume, x.lun, "", x.node, kind="namespace", uuid=uuids[x.svm, x.lun]
            )
            for x in view.luns
            if x.kind == "lun" or uuids.get((x.svm, x.lun))
        )
        # the cluster's identity, so the dashboards' cluster variable and version ceilings find it
        b = MetricBuilder()
        b.add(
            "sanlens_ontap_cluster_info",
            "gauge",
            CLUSTER_INFO_HELP,
            {
                "cluster": self.name,
                "version": str(view.version or ""),
                "personality": "unified",
                "collection": "harvest",
            },
            1,
        )
        for problem, n in sorted(self.problems.items()):
            if n:
                b.add("sanlens_ontap_malformed_records", "gauge", MALFORMED_HELP,
                      {"cluster": self.name, "table": "harvest", "problem": problem}, n)  # fmt: skip
        inputs = harvest_status(labels_missing(answers), groups_absent(rows))
        return Snapshot(self.name, "ontap", now, b.build(), view, inputs=inputs, lun_identities=identities)


def labels_missing(answers: dict[str, Samples]) -> dict[str, list[str]]:
    """Labels the host join needs that the page lacks (an info family's ``required``): ``serial_hex``
    came with Harvest 26.02, and without it no host disk finds its LUN. Named by the caller's status,
    once per poll, not per LUN."""
    out: dict[str, list[str]] = {}
    for t in catalogue().values():
        for i in t.harvest.info if t.harvest else ():
            infos = answers.get(t.harvest.query, {}).get(i.name, [])  # type: ignore[union-attr]
            lacking = [label for label in i.required if infos and not any(lv.get(label) for lv, _ in infos)]
            if lacking:
                out[i.name] = lacking
    return out


def groups_absent(rows: dict[str, list[HarvestRow]]) -> list[str]:
    """The table groups (the front end) none of whose tables gave a row: Harvest reads none of them."""
    groups: dict[str, bool] = {}
    for t in catalogue().values():
        if t.harvest is not None and t.harvest.group:
            groups[t.harvest.group] = groups.get(t.harvest.group, False) or bool(rows.get(t.table))
    return sorted(g for g, seen in groups.items() if not seen)
