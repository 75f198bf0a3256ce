"""Scale-out by the Helm chart's ``shards``, run for real: two shards answer as one exporter does.

Two simulated clusters, each with a scenario that fires: ``nvme-tcp`` (NVMe/TCP hosts over-subscribed
behind their cluster, a host/array join per host) and ``kahuna-bottleneck`` (a node's serial CPU
domain). ``helm template`` of the repo's chart renders one config whole and split in two shards; each
rendered Deployment runs as ``sanlens serve`` with its own ConfigMap's config and its own args. Two
real Prometheus servers, one per way of deploying, scrape them with the shipped rules (``for:`` cut to
a second): the rules' and the panels' ``sum by (cluster)`` carry no job, so in one TSDB the single
exporter's series would add to the shards' and neither alerts nor panels could be told apart without
rewriting every expression. Both servers name the job ``sanlens``, as the ServiceMonitor's jobLabel
does (the rules select ``job=~".*sanlens.*"``), and the sharded one applies the ServiceMonitor's own
relabelings to give every series its ``shard``.

The simulator names every cluster ``sanlens-sim`` and has no knob for it; the exporter labels a cluster
by its config name, so the two are ``cluster-a`` and ``cluster-b`` here. The two scenarios are chosen
because their host names and their LUN serials differ: the simulator derives a serial from that one
cluster name and the LUN path, and two scenarios sharing a path would present one serial on both
clusters, which the join rightly treats as SnapMirror active sync rather than as two LUNs.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, free_port, require_tool
from dashboard_queries import BUILTINS, SCRAPE_S, Check, checks_for
from fast_alerting import fast_rules
from harness import (  # noqa: F401  (harness is a fixture)
    LOOPBACK,
    ExporterHandle,
    Harness,
    PrometheusHandle,
    SimHandle,
    _py_env,
    get_json_list,
    harness,
    http_get,
)

pytestmark = pytest.mark.e2e

CHART = ROOT / "helm" / "sanlens"
DASH_DIR = ROOT / "dashboards"
IMAGE = {"repository": "registry.example.com/storage/sanlens"}  # the one value without a default
SCENARIOS = {"cluster-a": "nvme-tcp", "cluster-b": "kahuna-bottleneck"}
# what each cluster's scenario must make the exporter find (docs/simulator.md)
EXPECTED = {
    "cluster-a": {"san_oversubscription", "host_queue_limited"},
    "cluster-b": {"cpu_domain_serial_bottleneck", "volume_affinity_concentration"},
}
ALERTS = {"SanlensSanOversubscription", "SanlensCpuDomainSerialBottleneck"}
SHARD_LABEL = "sanlens.io/shard"
# Labels that name the exporter, not the estate: the scrape address, and the shard the chart adds.
NOT_COMPARED = ("instance", "shard")
# Two exporters poll one simulator at moments up to a poll apart and two Prometheus servers scrape
# them up to a scrape apart; a counter steps once per 1 s poll, so a rate over a window sees a step
# more or fewer at each end. The panels run with Grafana's $__rate_interval for a few hours' range
# (RANGE_VARS: 30 s windows, one step in 28 is 4 %; the 8 s of a short range would be one step in 6).
# A 5 m recording rule over a TSDB younger than 5 m is short by its missing history: both servers
# start together and are compared after MIN_HISTORY_S, one 2 s scrape in 60 s, 3 %. The simulator's
# rates are steady. 10 % holds those with room and is far below what sharding could break (a host,
# cluster or join missing from a view is a whole series, or all of its value).
REL_TOL = 0.10
ABS_TOL = 1e-6  # ratios and seconds of a healthy estate that are zero in one view and 1e-9 in the other
# A panel drawn in percent is a share, and a small share (a busy disk's 2 % idle) is one minus a large
# one: the rate's step more or fewer at a window's end is REL_TOL of the large share (98 % busy read as
# 95 %), which is most of the small one. Such a value compares relatively by either share.
PERCENT_TOL = 0.01
MIN_HISTORY_S = 60.0
RANGE_VARS = {**BUILTINS, "__interval": "28s", "__interval_ms": "28000", "__rate_interval": "30s"}
# Panels whose values are the exporter process's own clocks, not the estate: how long its last poll
# took (labels only: every target polled in both views), how old its last poll is (within one 1 s
# poll plus one 2 s scrape, with two seconds of slack), and how long a finding has been active
# (the exporters start together but each enters a finding at its own poll: a few seconds apart).
PROCESS_CLOCKS: dict[tuple[str, str, str], float | None] = {
    ("sanlens-overview", "Poll duration", "A"): None,
    ("sanlens-overview", "Time since last poll", "A"): 5.0,
    ("sanlens-overview", "Active diagnoses (worst $topn)", "B"): 10.0,
}
TOPK = re.compile(r"\btopk\(\s*\d+\s*,")  # a panel's worst-N cut (not `topk by (x) (1, ...)`)
DEADLINE_S = 120.0
MIN_COMPARED = 150  # of about 255 dashboard queries, with data in both views: not a vacuous comparison


# ------------------------------------------------------------------ the chart's split
@dataclass
class Pod:
    """One rendered Deployment: what its pod would run."""

    name: str
    shard: str  # the pod's sanlens.io/shard label, "" unsharded
    config: dict[str, Any]  # its ConfigMap's config.yaml
    args: list[str]  # the container's args after the image's ENTRYPOINT (sanlens serve)
    config_path: str  # where the pod reads the config: the ConfigMap's mount


@dataclass
class Render:
    pods: list[Pod]
    relabelings: list[dict[str, Any]]  # the ServiceMonitor's, for every pod's scrape


def helm_template(helm: str, work: Path, values: Mapping[str, Any], name: str) -> Render:
    """The chart's Deployments for ``values``, each with the config of the ConfigMap it mounts, and the
    ServiceMonitor's relabelings."""
    home = work / "helm-home"
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    path = work / f"{name}-values.yaml"
    path.write_text(yaml.safe_dump(dict(values), sort_keys=False), encoding="utf-8")
    argv = [helm, "template", "sanlens", str(CHART), "--namespace", "monitoring", "-f", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, f"helm template ({name}) failed:\n{done.stderr}"
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    pods: list[Pod] = []
    for d in (d for d in docs if d["kind"] == "Deployment"):
        spec = d["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        (volume,) = [v for v in spec["volumes"] if "configMap" in v]
        (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
        text = maps[volume["configMap"]["name"]]["data"]["config.yaml"]
        pods.append(
            Pod(
                name=d["metadata"]["name"],
                shard=d["spec"]["template"]["metadata"]["labels"].get(SHARD_LABEL, ""),
                config=yaml.safe_load(text),
                args=[str(a) for a in container["args"]],
                config_path=f"{mount['mountPath']}/config.yaml",
            )
        )
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    return Render(pods, list(endpoint.get("relabelings", [])))


def values_for(sims: Mapping[str, SimHandle], shards: list[dict[str, Any]]) -> dict[str, Any]:
    """Chart values: every cluster and host of both simulators, polls and windows short."""
    hosts: list[dict[str, Any]] = []
    for sim in sims.values():
        for source, path, names in (
            ("windows_exporter", "windows", sim.hosts),
            ("node_exporter", "linux", sim.linux_hosts),
        ):
            hosts += [
                {"name": h, "source": source, "url": f"{sim.url}/{path}/{h}/metrics", "poll_interval": "1s"}
                for h in names
            ]
    # The simulators want no credentials and refuse none; a real cluster's auth.password_file would
    # point under the chart's secret mount, a path that does not exist outside the pod.
    ontap = [{"name": c, "url": sim.url, "poll_interval": "1s"} for c, sim in sims.items()]
    # waterfall_top_n counts per process: one exporter shows the components of the N slowest ok
    # workloads of every cluster, each shard the N slowest of its own (up to N per shard); above the
    # estate's size every workload shows in both views, so the panels' own worst-N cut compares them
    diagnose = {"sustain_scale": 0.02, "waterfall_top_n": 1000}
    config = {"log_level": "info", "ontap": ontap, "hosts": hosts, "diagnose": diagnose}
    return {"image": IMAGE, "config": config, "shards": shards, "serviceMonitor": {"enabled": True}}


def host_names(sim: SimHandle) -> list[str]:
    return [*sim.hosts, *sim.linux_hosts]


def serve(harness: Harness, pods: list[Pod]) -> list[ExporterHandle]:  # noqa: F811
    """``sanlens serve`` with each pod's args, all started together: only the config path (the
    ConfigMap's mount, a file here) and the listen address (":9842" in every pod; one loopback port
    each here) differ."""
    exps: list[ExporterHandle] = []
    for pod in pods:
        port = free_port()
        path = harness.write(harness.fresh(f"{pod.name}.yaml").name, pod.config)
        args = list(pod.args)
        for flag, local in (("--config", str(path)), ("--listen", f"{LOOPBACK}:{port}")):
            i = args.index(flag)
            if flag == "--config":
                assert args[i + 1] == pod.config_path, f"{pod.name}: --config is not the ConfigMap's mount"
            args[i + 1] = local
        proc = harness.spawn(pod.name, [sys.executable, "-m", "sanlens", "serve", *args], env=_py_env())
        exps.append(ExporterHandle(port=port, config_path=path, proc=proc))
    for exp in exps:
        ready = exp.url + "/-/ready"
        harness.wait_until(
            lambda u=ready: http_get(u, timeout=2)[0] == 200, 60, 0.3, f"{ready} to answer 200"
        )
    return exps


def start_prometheus(
    harness: Harness,  # noqa: F811
    targets: Iterable[tuple[ExporterHandle, str]],
    relabelings: list[dict[str, Any]],
    rules: Path,
) -> PrometheusHandle:
    """A Prometheus (started, not waited for) scraping job ``sanlens`` as the chart's ServiceMonitor
    would: each target carries its pod's shard label as the Kubernetes discovery meta label, and the
    ServiceMonitor's relabelings (prometheus-operator's camelCase in Prometheus' snake_case) make it
    the ``shard`` label."""
    port = free_port()
    snake = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    relabel = [{snake.get(k, k): v for k, v in r.items()} for r in relabelings]
    static = [
        {"targets": [exp.address], "labels": {"__meta_kubernetes_pod_label_sanlens_io_shard": shard}}
        for exp, shard in targets
    ]
    cfg = {
        "global": {
            "scrape_interval": f"{SCRAPE_S}s",
            "scrape_timeout": f"{SCRAPE_S}s",
            "evaluation_interval": f"{SCRAPE_S}s",
        },
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "sanlens", "static_configs": static, "relabel_configs": relabel}],
    }
    path = harness.write(harness.fresh("prometheus.yml").name, cfg)
    data = harness.fresh("prometheus-data")
    data.mkdir(exist_ok=True)
    argv = [
        require_tool("prometheus"),
        f"--config.file={path}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address={LOOPBACK}:{port}",
        "--log.level=info",
    ]
    return PrometheusHandle(port=port, config_path=path, proc=harness.spawn("prometheus", argv))


# ------------------------------------------------------------------ what each view says
Series = dict[frozenset[tuple[str, str]], float]


def at(prom: PrometheusHandle, expr: str, ts: float) -> Series:
    """An instant query at ``ts``, each series by its labels less the exporter's own."""
    result = prom.api("query", query=expr, time=f"{ts:.3f}")["result"]
    out: Series = {}
    for r in result if isinstance(result, list) else []:
        key = frozenset((k, v) for k, v in r["metric"].items() if k not in NOT_COMPARED)
        assert key not in out, f"two series differ only by {NOT_COMPARED}: {dict(key)} ({expr})"
        out[key] = float(r["value"][1])
    return out


def close(a: float, b: float, abs_tol: float, share: bool = False) -> bool:
    """Within REL_TOL or ``abs_tol``; a ``share`` (a ratio of a whole) also when its complement is."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if share and math.isclose(1 - a, 1 - b, rel_tol=REL_TOL, abs_tol=abs_tol):
        return True
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=abs_tol)


def mismatch(single: Series, sharded: Series, abs_tol: float | None = ABS_TOL, share: bool = False) -> str:
    """'' when both views hold the same series with close values (``abs_tol`` None: any values)."""
    if single.keys() != sharded.keys():
        only1 = [dict(k) for k in single.keys() - sharded.keys()]
        only2 = [dict(k) for k in sharded.keys() - single.keys()]
        return f"only single: {only1[:3]}; only sharded: {only2[:3]}"
    if abs_tol is None:
        return ""
    off = {k: (single[k], sharded[k]) for k in single if not close(single[k], sharded[k], abs_tol, share)}
    return f"values differ: {[(dict(k), v) for k, v in list(off.items())[:3]]}" if off else ""


def spread(single: Series, sharded: Series) -> float:
    """The largest relative difference of a value both views hold (what REL_TOL has to cover)."""
    pairs = [(single[k], sharded[k]) for k in single.keys() & sharded.keys()]
    return max(
        (abs(x - y) / max(abs(x), abs(y)) for x, y in pairs if max(abs(x), abs(y)) > ABS_TOL), default=0.0
    )


def units(dashboards: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Each panel's unit, by (dashboard uid, panel title)."""
    return {
        (d["uid"], p["title"]): p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        for d in dashboards
        for row in d["panels"]
        for p in [row, *row.get("panels", [])]
    }


def compare(
    one: PrometheusHandle, two: PrometheusHandle, c: Check, ts: float, unit: str
) -> tuple[str, bool, bool, float]:
    """(what differs or '', whether the views hold data, whether only a worst-N cut differed, the
    largest relative difference of a value compared).

    Near-equal series on either side of a panel's worst-N cut may fall in or out of it by a hair of
    timing: when the series differ, the query runs again without the cut, where every series must match.
    """
    share = unit == "percentunit"
    tol = PROCESS_CLOCKS.get(c.key, PERCENT_TOL if share else ABS_TOL)
    a, b = at(one, c.expr, ts), at(two, c.expr, ts)
    problem = mismatch(a, b, tol, share)
    if problem and TOPK.search(c.expr) and a.keys() != b.keys():
        uncut = TOPK.sub("topk(100000,", c.expr)
        again = mismatch(at(one, uncut, ts), at(two, uncut, ts), tol, share)
        return (f"{problem}; without the cut: {again}" if again else ""), bool(a), not again, 0.0
    relative = c.key not in PROCESS_CLOCKS and unit != "percentunit"
    return problem, bool(a), False, spread(a, b) if relative else 0.0


def firing(prom: PrometheusHandle) -> set[frozenset[tuple[str, str]]]:
    return {
        frozenset((k, v) for k, v in r["metric"].items() if k not in NOT_COMPARED)
        for r in prom.query('ALERTS{alertstate="firing"}')
    }


Incident = tuple[str, int, str, frozenset[tuple[str, str, str, int]]]


def incidents(exp: ExporterHandle) -> set[Incident]:
    """/diagnoses?group=incident: each incident with its findings (role, diagnosis, subject, state)."""
    out: set[Incident] = set()
    for g in get_json_list(f"{exp.url}/diagnoses?group=incident", "/diagnoses?group=incident"):
        findings = frozenset(
            (role, str(f["id"]), json.dumps(f["subject"], sort_keys=True), int(f["state"]))
            for role in ("causes", "symptoms")
            for f in g[role]
        )
        out.add((str(g["incident"]), int(g["state"]), str(g["severity"]), findings))
    return out


def diagnosis_ids(found: set[Incident]) -> set[str]:
    return {f[1] for _i, _s, _sev, fs in found for f in fs}


def settle(harness: Harness, differ: Callable[[], str], timeout: float, what: str) -> None:  # noqa: F811
    """Poll ``differ`` (what is still wrong, '' once right) until ''; fail with its last answer."""
    last = ["never checked"]

    def right() -> bool:
        last[0] = differ()
        return not last[0]

    try:
        harness.wait_until(right, timeout, 2.0, what)
    except AssertionError as e:
        raise AssertionError(f"{what}: not after {timeout:.0f}s: {last[0]}") from e


# ------------------------------------------------------------------ the test
def test_two_shards_answer_as_one_exporter(harness: Harness) -> None:  # noqa: F811
    t0 = time.monotonic()
    helm = require_tool("helm")
    sims = {c: harness.start_simulator(s) for c, s in SCENARIOS.items()}
    a, b = (host_names(sims[c]) for c in SCENARIOS)
    assert not set(a) & set(b), f"the scenarios share host names {set(a) & set(b)}"
    shards = [
        {"name": "east", "ontap": ["cluster-a"], "hosts": a},
        {"name": "west", "ontap": ["cluster-b"], "hosts": b},
    ]
    work = harness.path("chart")
    work.mkdir(exist_ok=True)
    whole = helm_template(helm, work, values_for(sims, []), "single")
    (single_pod,) = whole.pods
    split = helm_template(helm, work, values_for(sims, shards), "sharded")
    # the chart's split: each shard's ConfigMap holds its own targets and the rest of the config
    targets = {
        p.shard: ({t["name"] for t in p.config["ontap"]}, {h["name"] for h in p.config["hosts"]})
        for p in split.pods
    }
    assert targets == {"east": ({"cluster-a"}, set(a)), "west": ({"cluster-b"}, set(b))}, targets
    rest = {k: v for k, v in single_pod.config.items() if k not in ("ontap", "hosts")}
    assert all({k: v for k, v in p.config.items() if k not in ("ontap", "hosts")} == rest for p in split.pods)
    # a host put with the other shard's cluster: the chart accepts it (it cannot know who serves whom)
    stray = sims["cluster-a"].linux_hosts[0]
    wrong = [
        {"name": "east", "ontap": ["cluster-a"], "hosts": [h for h in a if h != stray]},
        {"name": "west", "ontap": ["cluster-b"], "hosts": [*b, stray]},
    ]
    (stray_pod,) = [
        p for p in helm_template(helm, work, values_for(sims, wrong), "wrong").pods if p.shard == "west"
    ]

    single, east, west, stray_exp = serve(harness, [single_pod, *split.pods, stray_pod])
    shard_exps = [(east, split.pods[0].shard), (west, split.pods[1].shard)]
    rules = fast_rules(harness.path("sanlens.rules.yaml"))
    # both servers start together, so their TSDBs are as old: a 5 m rule's rate over either is as short
    prom1 = start_prometheus(harness, [(single, "")], whole.relabelings, rules)
    prom2 = start_prometheus(harness, shard_exps, split.relabelings, rules)
    t_prom = time.monotonic()
    for prom in (prom1, prom2):
        harness.wait_until(lambda p=prom: http_get(f"{p.url}/-/ready", timeout=2)[0] == 200, 60, 0.2, "ready")
        harness.wait_until(
            lambda p=prom: p.targets_up("sanlens"), 30, what="Prometheus to scrape every exporter"
        )

    # (3) incident grouping: once both scenarios fired what they fire, the shards' incidents together
    # are the single exporter's, none of them in both shards
    wanted = EXPECTED["cluster-a"] | EXPECTED["cluster-b"]

    def incidents_differ() -> str:
        one = incidents(single)
        parts = [incidents(exp) for exp, _ in shard_exps]
        union: set[Incident] = set().union(*parts)
        if not wanted <= diagnosis_ids(one):
            return f"single has fired {sorted(diagnosis_ids(one))} of {sorted(wanted)}"
        if set.intersection(*parts):
            return f"in both shards: {set.intersection(*parts)}"
        return "" if one == union else f"only single: {one - union}; only the shards: {union - one}"

    settle(harness, incidents_differ, DEADLINE_S, "the shards' incidents together are the single's")
    print(f"incidents equal after {time.monotonic() - t0:.0f}s: {sorted(i[0] for i in incidents(single))}")

    # (2) the same alerts fire in both Prometheus servers
    def alerts_differ() -> str:
        one, two = firing(prom1), firing(prom2)
        names = {dict(x)["alertname"] for x in one}
        if not names >= ALERTS:
            return f"single fires {sorted(names)}, not yet all of {sorted(ALERTS)}"
        only1, only2 = [dict(x) for x in one - two], [dict(x) for x in two - one]
        return f"only single: {only1}; only sharded: {only2}" if only1 or only2 else ""

    settle(harness, alerts_differ, 60, "the same alerts fire in both views")
    print(f"firing alerts equal: {sorted({dict(x)['alertname'] for x in firing(prom1)})}")

    # (1) every dashboard query, its variables resolved as Grafana does against the single view, holds
    # the same series and values in the sharded one (less shard and instance), both at one timestamp
    dashboards = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(DASH_DIR.glob("*.json"))]
    checks: list[Check] = harness.wait_until(
        lambda: [c for d in dashboards for c in checks_for(prom1, d, RANGE_VARS)],
        30,
        2.0,
        "dashboard variables",
    )
    unit_of = units(dashboards)
    time.sleep(max(0.0, MIN_HISTORY_S - (time.monotonic() - t_prom)))
    ts = time.time() - SCRAPE_S
    compared, empty, cut, differ, worst, worst_at = 0, 0, 0, [], 0.0, ""
    for c in checks:
        problem, data, at_cut, rel = compare(prom1, prom2, c, ts, unit_of[(c.dashboard, c.panel)])
        worst, worst_at = max((worst, worst_at), (rel, f"{c.dashboard} / {c.panel} / {c.ref}"))
        if problem:
            differ.append(f"{c}\n    {problem}")
        compared += int(data and not problem)
        empty += int(not data and not problem)
        cut += int(at_cut)
    print(
        f"dashboard queries: {compared} equal with data ({cut} only past a worst-N cut), {empty} empty in "
        f"both, {len(differ)} differ, of {len(checks)}; largest relative difference of a value not in "
        f"percent {worst:.1%} ({worst_at})"
    )
    assert not differ, f"{len(differ)} of {len(checks)} dashboard queries differ:\n" + "\n".join(differ)
    assert compared >= MIN_COMPARED, f"only {compared} of {len(checks)} queries have data ({empty} empty)"
    # the ServiceMonitor's relabeling put the pod's shard on the sharded series, and only there
    assert {r["metric"].get("shard") for r in prom2.query("up")} == {"east", "west"}
    assert {r["metric"].get("shard") for r in prom1.query("up")} == {None}

    check_stray_host(harness, single, stray_exp, stray)
    print(f"done in {time.monotonic() - t0:.0f}s")


def disk_clusters(exp: ExporterHandle, host: str) -> dict[str, str]:
    """The cluster each NVMe disk of ``host`` joined (sanlens_host_disk_info), '' for none."""
    return {
        s.labels["disk"]: s.labels["cluster"]
        for f in text_string_to_metric_families(exp.metrics_text())
        if f.name == "sanlens_host_disk_info"
        for s in f.samples
        if s.labels.get("host") == host and s.labels["disk"].startswith("nvme")
    }


def oversubscribed(exp: ExporterHandle, host: str) -> list[dict[str, Any]]:
    return [
        f for f in exp.diagnoses() if f["id"] == "san_oversubscription" and f["subject"].get("host") == host
    ]


def check_stray_host(harness: Harness, single: ExporterHandle, stray: ExporterHandle, host: str) -> None:  # noqa: F811
    """A host in the shard of a cluster that does not serve its LUNs: its disks join no LUN, so its
    over-subscription is judged on the host's evidence alone and, with nothing to show the array has
    headroom, held at warning; the same host beside its cluster pages."""
    joined = disk_clusters(single, host)
    assert joined and set(joined.values()) == {"cluster-a"}, joined
    assert disk_clusters(stray, host) == dict.fromkeys(joined, ""), (
        "no LUN of the shard's cluster is the host's"
    )
    paged = oversubscribed(single, host)
    assert paged and {f["state"] for f in paged} == {2}, paged
    assert all(f["evidence"].get("lun_latency_seconds") is not None for f in paged)
    held = harness.wait_until(lambda: oversubscribed(stray, host), 30, 2.0, f"{host}'s host-only finding")
    assert {f["state"] for f in held} == {1}, [(f["state"], f["recommendation"]) for f in held]
    assert all(f["evidence"].get("lun_latency_seconds") is None for f in held)
    assert all("Held at warning" in f["recommendation"] for f in held)
    assert {f["incident"] for f in held} == {f"san_oversubscription:{host}"}, "no cluster in its incident"
