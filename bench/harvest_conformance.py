#!/usr/bin/env python3
"""Conformance of the simulator with NetApp Harvest: run a real Harvest poller against it.

Starts the simulator (HTTPS, in this process, logging every request), writes a ``harvest.yml``
for one poller with the Rest (Aggregate, Disk, Lun, Node, Volume, Status, LIF, NetPort, Namespace,
FCP, Cluster, and QoS: QosPolicyFixed, QosPolicyAdaptive, QosWorkload from the private CLI),
RestPerf (Disk, Lun, SystemNode, FcpPort, FcpLif, ISCSI, NVMfLif, NicCommon, Namespace, WAFL, and
QoS: Workload, WorkloadVolume; data every 20 s) and KeyPerf (Volume; data every 20 s) collectors:
Harvest's objects for everything sanlens models (RestPerf's ``lif`` table is not read by sanlens;
NicCommon gives the Ethernet ports' own byte counters, ``nic_rx_bytes`` and ``nic_tx_bytes``),
runs Harvest's ``bin/poller`` for ``--seconds`` and then reports, per object:

- requests the simulator refused (any 4xx/5xx, a 404 above all);
- the poller's error and warning lines, and lines that speak of missing or unknown things;
- fields the poller asked for that no record carries (each logged request replayed against the
  simulator), but for the few the simulated estate has nothing to put in (``NOT_APPLICABLE``);
- the metric families its Prometheus page must hold (``lun_labels`` with ``serial_hex`` equal to
  the hex of each LUN serial, ``volume_labels``, ``aggr_labels``, ``disk_labels``, ``node_labels``,
  KeyPerf's ``volume_read_ops``, ...); for QoS, each workload ONTAP lists on ``qos_ops`` under its
  svm, volume, LUN and policy group, and each fixed policy's ceiling on ``qos_policy_fixed_labels``.

Harvest's Workload and WorkloadVolume templates poll every 3 min; the run uses copies made from the
checkout on the collector's 20 s schedule (``RESCHEDULED``; the sidecar names them).

With ``--prometheus`` (default ``/usr/bin/prometheus`` when present) a real Prometheus scrapes the
poller and the families are looked up through its query API as well.

With ``--capture PATH`` the poller's Prometheus page is written to PATH once every performance
object has answered at least ``--capture-polls`` (3) data polls, with a JSON sidecar
(``PATH.json``: Harvest commit and version, simulator scenario, knobs, ONTAP version, capture time,
the simulator's ``/-/sim/state``). A page larger than ``--capture-max-bytes`` loses whole families
that sanlens never reads (largest first; the sidecar lists them). ``tests/data/harvest`` holds one.

Not run in CI (it needs Go or a built poller). Harvest's source: a checkout at ``--harvest-dir``;
``bin/poller`` is built there (``go build -p 1``) when missing.

    .venv/bin/python bench/harvest_conformance.py --harvest-dir /tmp/harvest [--seconds 150]
    .venv/bin/python bench/harvest_conformance.py --scenario san-oversubscription \\
        --capture tests/data/harvest/san-oversubscription.prom
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sanlens_sim.server import Simulator

QOS_OBJECTS = ("WorkloadVolume", "Workload", "QosPolicyFixed", "QosPolicyAdaptive", "QosWorkload")
OBJECTS = (
    "Aggregate", "Disk", "Lun", "Node", "Volume", "LIF", "NetPort", "Namespace", "FCP", "Cluster", *QOS_OBJECTS,
)  # fmt: skip
ASA_R2_OBJECTS = (
    *(o for o in OBJECTS if o not in ("Aggregate", *QOS_OBJECTS)), "StorageUnit", "AvailabilityZone",
)  # fmt: skip

# The simulator's request paths and the objects whose polls send them.
PATH_OBJECT = {
    "/api/private/cli/lun": "Lun",
    "/api/storage/luns": "Lun",
    "/api/private/cli/volume": "Volume",
    "/api/private/cli/volume/efficiency/stat": "Volume",
    "/api/private/cli/volume/footprint": "Volume",
    "/api/private/cli/volume/snapshot/autodelete": "Volume",
    "/api/storage/volumes": "Volume",
    "/api/private/cli/aggr": "Aggregate",
    "/api/private/cli/aggr/show-space": "Aggregate",
    "/api/storage/aggregates": "Aggregate",
    "/api/private/cli/disk": "Disk",
    "/api/storage/disks": "Disk",
    "/api/private/cli/node": "Node",
    "/api/cluster/nodes": "Node",
    "/api/network/ip/interfaces": "LIF",
    "/api/private/cli/network/interface": "LIF",
    "/api/network/ethernet/ports": "NetPort",
    # RestPerf NicCommon: the Ethernet ports' counters, reported with the port inventory
    "/api/cluster/counter/tables/nic_common": "NetPort",
    "/api/cluster/counter/tables/nic_common/rows": "NetPort",
    "/api/private/cli/network/port": "NetPort",
    "/api/private/cli/network/port/ifgrp": "NetPort",
    "/api/storage/namespaces": "Namespace",
    "/api/network/fc/ports": "FCP",
    "/api/storage/cluster": "Cluster",
    "/api/cluster": "Cluster",
    "/api/storage/storage-units": "StorageUnit",
    "/api/storage/availability-zones": "AvailabilityZone",
    "/api/private/cli/qos/policy-group": "QosPolicyFixed",
    "/api/private/cli/qos/adaptive-policy-group": "QosPolicyAdaptive",
    "/api/private/cli/qos/workload": "QosWorkload",
    # RestPerf's Workload and WorkloadVolume both list their instances here (by workload_class)
    "/api/storage/qos/workloads": "Workload",
    "/api/cluster/counter/tables/qos": "Workload",
    "/api/cluster/counter/tables/qos/rows": "Workload",
    "/api/cluster/counter/tables/qos_volume": "WorkloadVolume",
    "/api/cluster/counter/tables/qos_volume/rows": "WorkloadVolume",
}

# Fields Harvest asks for that do not apply to anything in the simulated estate, so ONTAP leaves
# them out too: no FlexClone, no FabricPool object store, no mounted (NAS) volume, no tags, no
# anti-ransomware dry run, no failed disk in every scenario.
NOT_APPLICABLE = {
    "/api/private/cli/volume": {
        "clone_parent_name",
        "clone_parent_vserver",
        "junction_path",
        "tags",
        "tiering_minimum_cooling_days",
    },
    "/api/private/cli/aggr/show-space": {"object_store_logical_used", "object_store_physical_used"},
    "/api/storage/volumes": {
        "anti_ransomware.dry_run_start_time",
        "clone.parent_snapshot.name",
        "clone.split_estimate",
    },
    "/api/storage/disks": {"outage.reason.message", "aggregates.name", "protection_mode"},
    "/api/storage/aggregates": {"cloud_storage.stores.#.cloud_store.name"},
    # a storage unit in no consistency group has none
    "/api/storage/storage-units": {"consistency_group.name"},
    # a namespace mapped to no subsystem has no subsystem_map (none is, in the mixed scenario)
    "/api/storage/namespaces": {"subsystem_map", "subsystem_map.nsid", "subsystem_map.subsystem.name"},
    # LIFs given their addresses directly have no subnet; physical ports have no LAG or VLAN part
    "/api/network/ip/interfaces": {"subnet.name"},
    # no QoS workload is set on a file or a qtree
    "/api/private/cli/qos/workload": {"file", "qtree"},
    "/api/network/ethernet/ports": {
        "lag.active_ports.name",
        "lag.distribution_policy",
        "lag.mode",
        "vlan.base_port.name",
        "vlan.base_port.node.name",
        "vlan.tag",
    },
}

# Families each object must put on the poller's Prometheus page.
EXPECTED_FAMILIES = {
    "Lun": ("lun_labels", "lun_size", "lun_size_used", "lun_new_status"),
    "Volume": (
        "volume_labels",
        "volume_size",
        "volume_size_used",
        "volume_new_status",
        "volume_read_ops",
        "volume_write_ops",
        "volume_read_latency",
        "volume_read_data",
        "volume_total_ops",
    ),
    "Aggregate": ("aggr_labels", "aggr_space_total", "aggr_space_used", "aggr_new_status"),
    "Disk": ("disk_labels", "disk_uptime", "disk_stats_io_kbps", "disk_new_status"),
    "Node": ("node_labels", "node_uptime", "node_cpu_busytime", "node_new_status"),
    "Cluster": ("cluster_space_available",),
}


def expected_families(sim_url: str, ctx: ssl.SSLContext, asa_r2: bool) -> dict[str, tuple[str, ...]]:
    """EXPECTED_FAMILIES plus those of the front ends and namespaces the simulated estate has: the
    LIF and port inventory, iSCSI and NVMe LIF performance (RestPerf ISCSI, NVMfLif), FC ports,
    namespaces (Rest and RestPerf Namespace)."""
    out = dict(EXPECTED_FAMILIES)
    if asa_r2:  # no aggregates; KeyPerf's LUN, node and storage-unit performance instead of RestPerf's
        out.pop("Aggregate")
        out["Lun"] += ("lun_read_ops", "lun_avg_read_latency")
        out["Node"] += ("node_avg_processor_busy",)
        out["StorageUnit"] = ("storage_unit_labels", "storage_unit_read_ops")
        out["AvailabilityZone"] = ("availability_zone_space_size",)
    services = {
        s
        for r in replay(sim_url, "/api/network/ip/interfaces?fields=services", ctx)
        for s in r.get("services", [])
    }
    if services:
        out["LIF"] = ("lif_labels",)
        out["NetPort"] = ("net_port_status",)  # NetPort exports its labels on every metric: no _labels
    if services and not asa_r2:
        out["NetPort"] += ("nic_rx_bytes", "nic_tx_bytes")  # RestPerf NicCommon: each port's own bytes
    if services and asa_r2:
        out["LIF"] += ("lif_sent_data",)  # KeyPerf's LIF object: bytes only
    if "data_iscsi" in services and not asa_r2:
        out["LIF"] += ("iscsi_lif_read_data", "iscsi_lif_iscsi_read_ops", "iscsi_lif_avg_read_latency")
    if "data_nvme_tcp" in services and not asa_r2:
        out["LIF"] += ("nvme_lif_read_ops", "nvme_lif_avg_read_latency")
    if replay(sim_url, "/api/network/fc/ports?fields=name", ctx):
        out["FCP"] = ("fcp_labels",) if asa_r2 else ("fcp_labels", "fcp_read_data", "fcp_lif_read_ops")
    if replay(sim_url, "/api/storage/namespaces?fields=name", ctx):
        out["Namespace"] = ("namespace_labels", "namespace_read_ops", "namespace_avg_read_latency")
    if not asa_r2:
        out.update(qos_families(sim_url, ctx))
    return out


QOS_PERF = (
    "qos_ops",
    "qos_latency",
    "qos_read_ops",
    "qos_write_ops",
    "qos_read_latency",
    "qos_write_latency",
)
AUTOVOLUME = re.compile(r"-wid\d+$")


def qos_families(sim_url: str, ctx: ssl.SSLContext) -> dict[str, tuple[str, ...]]:
    """The QoS objects' families, for the workloads and policy groups the simulated estate has.

    RestPerf Workload and WorkloadVolume both export as object ``qos`` (``qos_ops`` ...), told apart
    by ``check_qos``; the Rest QoS objects export their plugins' metrics beside their ``_labels``."""
    out: dict[str, tuple[str, ...]] = {}
    classes = {
        r.get("workload_class")
        for r in replay(sim_url, "/api/storage/qos/workloads?fields=workload_class", ctx)
    }
    if classes & {"user_defined", "system_defined"}:
        out["Workload"] = QOS_PERF
    if "autovolume" in classes:
        out["WorkloadVolume"] = QOS_PERF
    if classes:
        out["QosWorkload"] = ("qos_workload_labels",)
    if replay(sim_url, "/api/private/cli/qos/policy-group?fields=policy_group", ctx):
        out["QosPolicyFixed"] = ("qos_policy_fixed_labels", "qos_policy_fixed_max_throughput_iops")
    if replay(sim_url, "/api/private/cli/qos/adaptive-policy-group?fields=policy_group", ctx):
        out["QosPolicyAdaptive"] = ("qos_policy_adaptive_labels", "qos_policy_adaptive_peak_iops")
    return out


def check_qos(text: str, sim_url: str, ctx: ssl.SSLContext, report: Report) -> None:
    """Each workload ONTAP lists is on ``qos_ops`` under its name, svm, volume and policy group (an
    autovolume workload from WorkloadVolume, the others from Workload), and each fixed policy's IOPS
    ceiling and sharing are on ``qos_policy_fixed_labels`` as its REST record gives them."""
    fams = parse_families(text)
    ops = {lv.get("workload", ""): lv for lv in fams.get("qos_ops", [])}
    fields = "name,workload_class,svm.name,volume,lun,policy.name"
    for w in replay(sim_url, f"/api/storage/qos/workloads?fields={fields}", ctx):
        obj = "WorkloadVolume" if w.get("workload_class") == "autovolume" else "Workload"
        lv = ops.get(w.get("name", ""))
        if lv is None:
            report.missing_families[obj].append(f"qos_ops{{workload={w.get('name')!r}}}: absent")
            continue
        want = {
            "svm": w.get("svm", {}).get("name", ""),
            "volume": w.get("volume", ""),  # ONTAP's workload names its volume and LUN path as strings
            "lun": w.get("lun", ""),
            "policy_group": w.get("policy", {}).get("name", ""),
        }
        for k, v in want.items():
            if v and lv.get(k) != v:
                report.missing_families[obj].append(
                    f"qos_ops{{workload={w['name']!r}}}: {k} {lv.get(k)!r}, want {v!r}"
                )
    fixed = {(lv.get("svm", ""), lv.get("name", "")): lv for lv in fams.get("qos_policy_fixed_labels", [])}
    for p in replay(sim_url, "/api/storage/qos/policies?fields=name,svm.name,fixed", ctx):
        f = p.get("fixed") or {}
        if not f:
            continue
        lv = fixed.get((p.get("svm", {}).get("name", ""), p.get("name", "")))
        if lv is None:
            report.missing_families["QosPolicyFixed"].append(
                f"qos_policy_fixed_labels{{name={p.get('name')!r}}}: absent"
            )
            continue
        iops = f.get("max_throughput_iops") or 0
        want = {
            "max_throughput_iops": str(iops) if iops else None,
            "capacity_shared": str(bool(f.get("capacity_shared"))).lower(),
        }
        for k, v in want.items():
            if lv.get(k) != v and not (v is None and not lv.get(k)):
                report.missing_families["QosPolicyFixed"].append(
                    f"qos_policy_fixed_labels{{name={p['name']!r}}}: {k} {lv.get(k)!r}, want {v!r}"
                )


LOG_SUSPECT = re.compile(r"\b(404|not found|missing|unknown|no best-fit|failed|invalid)\b", re.IGNORECASE)
LOG_LEVEL = re.compile(r"\b(ERR|WRN|ERROR|WARN)\b|level=(error|warn)", re.IGNORECASE)
REQUEST = re.compile(r'"(GET|POST|HEAD) (\S+) HTTP/[\d.]+" (\d{3})')


@dataclass
class Report:
    bad_requests: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    log_lines: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    missing_fields: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    missing_families: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    notes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


class RequestLog(logging.Handler):
    """Collects the simulator's request lines (``"GET <path> HTTP/1.1" <status>``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.requests: list[tuple[str, int]] = []
        self.times: list[float] = []  # time.monotonic() of each entry of ``requests``

    def emit(self, record: logging.LogRecord) -> None:
        m = REQUEST.search(record.getMessage())
        if m:
            self.requests.append((m.group(2), int(m.group(3))))
            self.times.append(time.monotonic())

    def perf_last(self) -> dict[str, float]:
        """When each performance object (as in ``perf_polls``) was last asked for its rows."""
        last: dict[str, float] = {}
        for (href, _status), t in zip(list(self.requests), list(self.times), strict=False):
            key = perf_poll_key(href)
            if key is not None:
                last[key] = t
        return last

    def perf_polls(self) -> dict[str, int]:
        """Data polls answered so far per performance object (key: RestPerf table or ``keyperf:volume``).

        A RestPerf data poll asks ``/api/cluster/counter/tables/<table>/rows`` for ``counters.name``;
        KeyPerf's Volume asks ``/api/storage/volumes`` for ``statistics``. Requests less than 2 s after
        the previous one of the same key are further pages of the same poll.
        """
        last: dict[str, float] = {}
        polls: dict[str, int] = defaultdict(int)
        for (href, status), t in zip(list(self.requests), list(self.times), strict=False):
            key = perf_poll_key(href)
            if key is None or status >= 400:
                continue
            if t - last.get(key, -1e9) >= 2.0:
                polls[key] += 1
            last[key] = t
        return dict(polls)


def perf_poll_key(href: str) -> str | None:
    parts = urllib.parse.urlsplit(href)
    path = urllib.parse.unquote(parts.path).rstrip("/")
    query = urllib.parse.parse_qs(parts.query)
    m = re.fullmatch(r"/api/cluster/counter/tables/([^/]+)/rows", path)
    if m and "counters.name" in query:
        return m.group(1)
    if path == "/api/storage/volumes" and "statistics" in query.get("fields", [""])[0].split(","):
        return "keyperf:volume"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def object_of(path: str) -> str:
    return PATH_OBJECT.get(urllib.parse.urlsplit(path).path.rstrip("/"), "other")


# ------------------------------------------------------------------ Harvest
def find_go() -> str | None:
    return shutil.which("go") or next((p for p in ("/usr/local/go/bin/go",) if Path(p).exists()), None)


def ensure_poller(harvest: Path) -> Path:
    poller = harvest / "bin" / "poller"
    if poller.exists():
        return poller
    go = find_go()
    if go is None:
        sys.exit(f"no {poller} and no Go toolchain to build it")
    print(f"building {poller} (go build -p 1) ...", flush=True)
    subprocess.run([go, "build", "-p", "1", "-o", str(poller), "./cmd/poller"], cwd=harvest, check=True)
    return poller


Templates = dict[str, tuple[str, str, dict[str, str]]]  # folder -> (collector, data schedule, objects)
TEMPLATES: Templates = {
    "rest": (
        "Rest",
        "30s",
        {
            o: f
            for o, f in (
                ("Aggregate", "aggr.yaml"),
                ("Disk", "disk.yaml"),
                ("Lun", "lun.yaml"),
                ("Node", "node.yaml"),
                ("Volume", "volume.yaml"),
                ("Status", "status.yaml"),
                ("LIF", "lif.yaml"),
                ("NetPort", "netport.yaml"),
                ("Namespace", "namespace.yaml"),
                ("FCP", "fcp.yaml"),
                ("Cluster", "cluster.yaml"),
                ("QosPolicyFixed", "qos_policy_fixed.yaml"),
                ("QosPolicyAdaptive", "qos_policy_adaptive.yaml"),
                ("QosWorkload", "qos_workload.yaml"),
            )
        },
    ),
    "restperf": (
        "RestPerf",
        "20s",
        {
            "Disk": "disk.yaml",
            "Lun": "lun.yaml",
            "SystemNode": "system_node.yaml",
            "FcpPort": "fcp.yaml",
            "FcpLif": "fcp_lif.yaml",
            "ISCSI": "iscsi_lif.yaml",
            "NVMfLif": "nvmf_lif.yaml",
            "NicCommon": "nic_common.yaml",
            "Namespace": "namespace.yaml",
            "WAFL": "wafl.yaml",
            "Workload": "workload.yaml",
            "WorkloadVolume": "workload_volume.yaml",
        },
    ),
    "keyperf": ("KeyPerf", "20s", {"Volume": "volume.yaml"}),
}


# An ASA r2 system serves no counter tables: Harvest replaces RestPerf by KeyPerf there, and adds its
# asar2 templates (conf/{rest,keyperf}/asar2: availability zones, storage units; docs/asar2.md).
# No aggregates either, so no Aggregate object.
ASA_R2_TEMPLATES: Templates = {
    "rest": (
        "Rest",
        "30s",
        {
            **{o: f for o, f in TEMPLATES["rest"][2].items() if o not in ("Aggregate", *QOS_OBJECTS)},
            "AvailabilityZone": "availability_zone.yaml",
            "StorageUnit": "storage_unit.yaml",
        },
    ),
    "keyperf": (
        "KeyPerf",
        "20s",
        {
            "Lun": "lun.yaml",
            "Namespace": "namespace.yaml",
            "SystemNode": "system_node.yaml",
            "Volume": "volume.yaml",
            "LIF": "lif.yaml",
            "StorageUnit": "storage_unit.yaml",
        },
    ),
}


# Harvest's QoS performance templates poll every 3 min (their own ``schedule``, which wins over the
# collector's): the run uses a copy of each, made from the checkout at run time, on the collector's
# data schedule, so three data polls fit in minutes. Nothing else in them changes.
RESCHEDULED = {("restperf", "workload.yaml"), ("restperf", "workload_volume.yaml")}
_SCHEDULE = re.compile(r"^schedule:\n(?:[ \t]+-.*\n)+", re.MULTILINE)


def reschedule(harvest: Path, work: Path, folder: str, name: str, every: str) -> str:
    """A copy of Harvest's template ``name`` (its 9.12.0 version) on the data schedule ``every``;
    returns the copy's file name, which the collector's object list names instead."""
    src = harvest / "conf" / folder / "9.12.0" / name
    text, n = _SCHEDULE.subn(f"schedule:\n  - instance: 10m\n  - data: {every}\n", src.read_text())
    if n != 1:
        sys.exit(f"{src}: no schedule block to replace")
    out = work / "conf" / folder / "9.12.0" / f"sanlens_{name}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out.name


def write_config(
    work: Path, sim_port: int, prom_port: int, templates: Templates | None = None, harvest: Path | None = None
) -> Path:
    templates = TEMPLATES if templates is None else templates
    collectors = "".join(
        f"      - {c}:\n          - sanlens.yaml\n" for c, _every, _objs in templates.values()
    )
    for folder, (collector, every, objects) in templates.items():
        d = work / "conf" / folder
        d.mkdir(parents=True, exist_ok=True)
        lines = [f"collector: {collector}", "schedule:", "  - counter: 24h"]
        if collector == "RestPerf":
            lines.append("  - instance: 10m")
        lines += [f"  - data: {every}", "objects:"]
        lines += [
            f"  {o}: {reschedule(harvest, work, folder, f, every) if harvest and (folder, f) in RESCHEDULED else f}"
            for o, f in objects.items()
        ]
        (d / "sanlens.yaml").write_text("\n".join(lines) + "\n")
    cfg = work / "harvest.yml"
    cfg.write_text(
        f"""Exporters:
  prom:
    exporter: Prometheus
    local_http_addr: 127.0.0.1
    port: {prom_port}
Pollers:
  sim:
    datacenter: sanlens
    addr: 127.0.0.1:{sim_port}
    auth_style: basic_auth
    username: harvest
    password: harvest
    use_insecure_tls: true
    collectors:
{collectors}    exporters:
      - prom
"""
    )
    return cfg


def start_prometheus(binary: str, work: Path, prom_port: int) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    (work / "prometheus.yml").write_text(
        f"""global:
  scrape_interval: 10s
scrape_configs:
  - job_name: harvest
    static_configs:
      - targets: ['127.0.0.1:{prom_port}']
"""
    )
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=(work / "prometheus.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fetch(url: str, ctx: ssl.SSLContext | None = None) -> bytes:
    with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
        return bytes(r.read())


# ------------------------------------------------------------------ checks
def requested_fields(href: str) -> tuple[str, list[str]]:
    parts = urllib.parse.urlsplit(href)
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return parts.path.rstrip("/"), [f for f in query.get("fields", "").split(",") if f]


def has_path(rec: Any, path: list[str]) -> bool:
    if not path:
        return True
    if isinstance(rec, list):
        if path[0] == "#":
            return has_path(rec, path[1:]) if len(path) > 1 else True
        if path[0].isdigit():
            i = int(path[0])
            return i < len(rec) and has_path(rec[i], path[1:])
        return any(has_path(x, path) for x in rec)
    return isinstance(rec, dict) and path[0] in rec and has_path(rec[path[0]], path[1:])


def replay(sim_url: str, href: str, ctx: ssl.SSLContext) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    url = sim_url + href
    for _ in range(100):
        try:
            body = json.loads(fetch(url, ctx))
        except urllib.error.HTTPError:  # refused: reported with the poller's own request
            break
        records += body.get("records", [])
        nxt = body.get("_links", {}).get("next", {}).get("href")
        if not nxt:
            break
        url = sim_url + nxt
    return records


def check_fields(sim_url: str, hrefs: set[str], ctx: ssl.SSLContext, report: Report) -> None:
    for href in sorted(hrefs):
        path, fields = requested_fields(href)
        obj = object_of(path)
        if obj == "other" or not fields or ("*" in fields and len(fields) == 1):
            continue
        records = replay(sim_url, href, ctx)
        if not records:
            report.notes[obj].append(f"no records: {href}")
            continue
        skip = NOT_APPLICABLE.get(path, set())
        for f in fields:
            if f == "*" or f in skip:
                continue
            if not any(has_path(r, f.split(".")) for r in records):
                report.missing_fields[obj].append(f"{path}: {f}")


def parse_families(text: str) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    line_re = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+\S+")
    label_re = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = line_re.match(line)
        if m:
            out[m.group(1)].append(dict(label_re.findall(m.group(2) or "")))
    return out


def check_page(
    text: str,
    serial_hex: dict[tuple[str, str, str], str],
    expected: dict[str, tuple[str, ...]],
    report: Report,
) -> None:
    """``serial_hex``: (svm, volume, lun) -> the hex of that LUN's serial."""
    fams = parse_families(text)
    for obj, names in expected.items():
        for n in names:
            if not fams.get(n):
                report.missing_families[obj].append(n)
    for lv in fams.get("lif_labels", []):  # the CLI's data-protocol: what tells iSCSI from NVMe/TCP
        if not lv.get("protocols"):
            report.missing_families["LIF"].append(f"lif_labels{{lif={lv.get('lif')!r}}}: no protocols")
    seen = {
        (s.get("svm", ""), s.get("volume", ""), s.get("lun", "")): s.get("serial_hex")
        for s in fams["lun_labels"]
    }
    for key, want in serial_hex.items():
        got = seen.get(key)
        if got != want:
            report.missing_families["Lun"].append(f"lun_labels{key}: serial_hex {got!r}, want {want!r}")


def check_prometheus(port: int, expected: dict[str, tuple[str, ...]], report: Report) -> None:
    for obj, names in expected.items():
        for n in names:
            q = urllib.parse.urlencode({"query": f"count({n})"})
            body = json.loads(fetch(f"http://127.0.0.1:{port}/api/v1/query?{q}"))
            if not body.get("data", {}).get("result"):
                report.missing_families[obj].append(f"prometheus: {n}")


def scan_log(log: str, report: Report) -> None:
    for line in log.splitlines():
        if not (LOG_LEVEL.search(line) or LOG_SUSPECT.search(line)):
            continue
        debug = "level=DEBUG" in line or " DBG " in line
        if debug and not re.search(r"\b(404|StatusCode: [45]\d\d)\b", line):
            continue  # debug lines name templates, rules and counters freely; keep refused requests
        obj = next((o for o in (*OBJECTS, "SystemNode") if re.search(rf"(:|object=){o}\b", line)), "other")
        report.log_lines["Node" if obj == "SystemNode" else obj].append(line.strip()[:400])


# ------------------------------------------------------------------ capture
# Families a page may lose when too large: none whose name starts with one of these.
KEEP_PREFIXES = (
    "lun_", "volume_", "node_", "fcp_", "aggr_", "disk_", "cluster_", "metadata_", "qos_", "nic_",
)  # fmt: skip
PERF_OBJECTS = ("lun", "system:node", "fcp_lif", "keyperf:volume")


def family_of(line: str) -> str:
    return re.split(r"[{\s]", line, maxsplit=1)[0]


def trim_page(text: str, max_bytes: int) -> tuple[str, list[str]]:
    """Drop whole families (largest first) outside ``KEEP_PREFIXES`` until ``text`` fits ``max_bytes``."""
    sizes: dict[str, int] = defaultdict(int)
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.startswith("#"):
            sizes[family_of(line)] += len(line.encode())
    droppable = sorted(
        (f for f in sizes if not f.startswith(KEEP_PREFIXES) and not f.endswith("_labels")),
        key=lambda f: (-sizes[f], f),
    )
    total, dropped = len(text.encode()), []
    for f in droppable:
        if total <= max_bytes:
            break
        dropped.append(f)
        total -= sizes[f]
    drop = set(dropped)
    kept = [ln for ln in text.splitlines(keepends=True) if not ln.strip() or family_of(ln) not in drop]
    return "".join(kept), sorted(dropped)


def wait_for_polls(
    reqlog: RequestLog, polls: int, timeout: float, proc: subprocess.Popen[bytes]
) -> dict[str, int]:
    """Wait until every object of ``PERF_OBJECTS`` (and any other perf table asked for) has ``polls`` data polls."""
    deadline = time.monotonic() + timeout
    while True:
        seen = reqlog.perf_polls()
        # a table asked once and not again for a minute has no instances here (no NVMe LIF on an
        # iSCSI site): Harvest stops polling it, so there is nothing to wait for
        last = reqlog.perf_last()
        gone = {k for k, n in seen.items() if n == 1 and time.monotonic() - last.get(k, 0.0) > 60.0}
        wanted = set(PERF_OBJECTS) | (set(seen) - gone)
        if all(seen.get(k, 0) >= polls for k in wanted):
            time.sleep(5.0)  # the last poll's answer is parsed and handed to the exporter
            return reqlog.perf_polls()
        if proc.poll() is not None:
            sys.exit(f"the poller exited ({proc.returncode}) before {polls} perf polls: {seen}")
        if time.monotonic() > deadline:
            sys.exit(f"timed out after {timeout:.0f} s waiting for {polls} perf polls: {seen}")
        time.sleep(2.0)


def git_commit(repo: Path) -> str:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def capture(
    path: Path,
    page: str,
    *,
    harvest: Path,
    sim_state: dict[str, Any],
    scenario: str,
    knobs: dict[str, Any],
    polls: dict[str, int],
    max_bytes: int,
    argv: list[str],
) -> None:
    text, dropped = trim_page(page, max_bytes)
    m = re.search(r'^metadata_\w+\{[^}]*\bversion="([^"]+)"', page, re.MULTILINE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    side = {
        "source": "NetApp Harvest poller Prometheus exporter page (/metrics), built from source",
        "harvest_commit": git_commit(harvest),
        "harvest_version": m.group(1) if m else None,
        "collectors": {c: sorted(objs) for c, _every, objs in TEMPLATES.values()},
        "schedules": {c: {"data": every} for c, every, _objs in TEMPLATES.values()},
        "rescheduled_templates": sorted(f"{folder}/9.12.0/{name}" for folder, name in RESCHEDULED),
        "simulator_scenario": scenario,
        "simulator_knobs": knobs,
        "ontap_version": sim_state.get("ontap_version"),
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "perf_data_polls": polls,
        "bytes": len(text.encode()),
        "bytes_before_trim": len(page.encode()),
        "dropped_families": dropped,
        "command": shlex.join([".venv/bin/python", "bench/harvest_conformance.py", *argv]),
        "simulator_state": sim_state,
    }
    Path(f"{path}.json").write_text(json.dumps(side, indent=2, sort_keys=True) + "\n")
    print(
        f"captured {path} ({side['bytes']} bytes, {len(dropped)} families dropped) and {path}.json",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harvest-dir", type=Path, default=Path(os.environ.get("HARVEST_DIR", "/tmp/harvest")))
    ap.add_argument("--seconds", type=float, default=150.0, help="how long the poller runs (150)")
    ap.add_argument("--scenario", default="mixed", help="simulator scenario (mixed)")
    ap.add_argument("--ontap-version", default=None, help="ONTAP version the simulator reports")
    ap.add_argument("--fa-ports", type=int, default=None, help="simulator knob fa_ports (2|4|6)")
    ap.add_argument("--capture", type=Path, default=None, help="write the poller's /metrics page here")
    ap.add_argument("--capture-polls", type=int, default=3, help="perf data polls before capturing (3)")
    ap.add_argument("--capture-timeout", type=float, default=420.0, help="seconds to wait for them (420)")
    ap.add_argument("--capture-max-bytes", type=int, default=1_500_000, help="trim a larger page (1.5 MB)")
    ap.add_argument(
        "--prometheus",
        default="/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else "",
        help="a Prometheus binary to scrape the poller ('' for none)",
    )
    ap.add_argument("--work-dir", type=Path, default=None, help="keep config and logs here")
    ap.add_argument("--json", type=Path, default=None, help="write the report as JSON")
    args = ap.parse_args(argv)
    raw_argv = list(sys.argv[1:] if argv is None else argv)

    harvest = args.harvest_dir.resolve()
    poller = ensure_poller(harvest)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="harvest-conformance-"))
    work.mkdir(parents=True, exist_ok=True)

    reqlog = RequestLog()
    handler_log = logging.getLogger("sanlens_sim.handler")
    handler_log.setLevel(logging.DEBUG)
    handler_log.addHandler(reqlog)
    knobs: dict[str, Any] = {"ontap_version": args.ontap_version} if args.ontap_version else {}
    if args.fa_ports is not None:
        knobs["fa_ports"] = args.fa_ports
    sim = Simulator(args.scenario, port=free_port(), tls=True, **knobs).start()
    prom_port = free_port()
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    about = json.loads(fetch(sim.url + "/api/cluster?fields=san_optimized,disaggregated", ctx))
    asa_r2 = bool(about.get("san_optimized") and about.get("disaggregated"))
    objects = ASA_R2_OBJECTS if asa_r2 else OBJECTS
    cfg = write_config(work, sim.port, prom_port, ASA_R2_TEMPLATES if asa_r2 else TEMPLATES, harvest)
    procs: list[subprocess.Popen[bytes]] = []
    report = Report()
    try:
        log_path = work / "poller.log"
        poller_proc = subprocess.Popen(
            [
                str(poller),
                "--poller",
                "sim",
                "--config",
                str(cfg),
                "--confpath",
                f"{work / 'conf'}:{harvest / 'conf'}",
                "--loglevel",
                "1",
                "--promPort",
                str(prom_port),
            ],
            cwd=harvest,
            stdout=log_path.open("wb"),
            stderr=subprocess.STDOUT,
        )
        procs.append(poller_proc)
        prom_api = 0
        if args.prometheus:
            proc, prom_api = start_prometheus(args.prometheus, work, prom_port)
            procs.append(proc)
        print(
            f"simulator {sim.url}, poller page http://127.0.0.1:{prom_port}/metrics, work dir {work}",
            flush=True,
        )
        started = time.monotonic()
        if args.capture:
            polls = wait_for_polls(reqlog, args.capture_polls, args.capture_timeout, poller_proc)
            page = fetch(f"http://127.0.0.1:{prom_port}/metrics").decode()
            capture(
                args.capture,
                page,
                harvest=harvest,
                sim_state=json.loads(fetch(sim.url + "/-/sim/state", ctx)),
                scenario=args.scenario,
                knobs=knobs,
                polls=polls,
                max_bytes=args.capture_max_bytes,
                argv=raw_argv,
            )
        time.sleep(max(0.0, args.seconds - (time.monotonic() - started)))
        page = fetch(f"http://127.0.0.1:{prom_port}/metrics").decode()
        (work / "poller-metrics.txt").write_text(page)
        luns = json.loads(fetch(sim.url + "/api/storage/luns?fields=serial_number,svm.name,location", ctx))[
            "records"
        ]
        serial_hex = {
            (x["svm"]["name"], x["location"]["volume"]["name"], x["location"]["logical_unit"]): x[
                "serial_number"
            ]
            .encode()
            .hex()
            for x in luns
        }
        expected = expected_families(sim.url, ctx, asa_r2)
        check_page(page, serial_hex, expected, report)
        if not asa_r2:
            check_qos(page, sim.url, ctx, report)
        if prom_api:
            check_prometheus(prom_api, expected, report)
        stop(poller_proc)
        scan_log(log_path.read_text(errors="replace"), report)
        seen = sorted({f"{status} {urllib.parse.unquote(path)}" for path, status in reqlog.requests})
        (work / "requests.txt").write_text("\n".join(seen) + "\n")
        hrefs = set()
        for path, status in reqlog.requests:
            if status >= 400 and asa_r2 and path.startswith("/api/cluster/counter/tables"):
                # Harvest's probe for RestPerf: refused, so it reads the system with KeyPerf
                report.notes["other"].append(f"expected on ASA r2: {status} {path}")
            elif status >= 400:
                report.bad_requests[object_of(path)].append(f"{status} {path}")
            hrefs.add(path)
        check_fields(sim.url, hrefs, ctx, report)
        objects_seen = {object_of(p) for p, _ in reqlog.requests}
        for obj in objects:
            if obj not in objects_seen:
                report.notes[obj].append("the poller sent no request for this object")
    finally:
        for p in procs:
            stop(p)
        sim.stop()
    return summarize(report, work, args.json, objects)


def summarize(report: Report, work: Path, out: Path | None, objects: tuple[str, ...] = OBJECTS) -> int:
    failed = False
    rows: dict[str, Any] = {}
    for obj in (*objects, "other"):
        problems = {
            "refused requests": sorted(set(report.bad_requests.get(obj, []))),
            "poller log": report.log_lines.get(obj, [])[:20],
            "missing fields": sorted(set(report.missing_fields.get(obj, []))),
            "missing metrics": report.missing_families.get(obj, []),
        }
        bad = any(problems.values())
        if obj == "other" and not bad:
            continue
        failed |= bad and obj != "other"
        rows[obj] = {"pass": not bad, **problems, "notes": report.notes.get(obj, [])}
        print(f"{'PASS' if not bad else 'FAIL'} {obj}")
        for what, items in problems.items():
            for item in items:
                print(f"    {what}: {item}")
        for note in report.notes.get(obj, []):
            print(f"    note: {note}")
    print(f"logs and config: {work}")
    if out:
        out.write_text(json.dumps(rows, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
