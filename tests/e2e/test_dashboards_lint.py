"""Lint of dashboards/*.json: grafana dashboard-linter's rules re-implemented, plus sanlens conventions.

Rules mirrored from grafana/dashboard-linter: template-datasource-rule,
template-on-time-change-reload-rule, template-label-promql-rule, panel-datasource-rule,
panel-title-description-rule, panel-units-rule, panel-no-targets-rule, target-promql-rule,
target-rate-interval-rule, target-counter-agg-rule, uneditable-dashboard. The job/instance
rules are replaced by ours: every ONTAP or host selector is filtered by a dashboard variable
(sanlens series carry cluster/host labels; job and instance name the exporter, not the SAN).

"Every expr parses" is proven by promtool: each expr (variables replaced by sample values)
becomes a recording rule in a generated rules file that `promtool check rules` must accept.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, require_tool
from grafana_vars import VAR_RE, substitute
from sanlens.diagnose.registry import REGISTRY

DASH_DIR = ROOT / "dashboards"
FILES = sorted(DASH_DIR.glob("*.json")) + sorted(DASH_DIR.glob("harvest/*.json"))
UIDS = {
    "sanlens-overview",
    "sanlens-io-path",
    "sanlens-latency-breakdown",
    "sanlens-ontap-cpu-domains",
    "sanlens-lun-volume",
    "sanlens-disks",
    "sanlens-harvest-evidence",  # under harvest/: for clusters read through NetApp Harvest's series
}
PATHS = {p.stem: p for p in FILES}
PANEL_TYPES = {"timeseries", "stat", "table", "bargauge", "heatmap"}
# Unit ids from Grafana's valueFormats/categories.ts that suit sanlens panels.
VALID_UNITS = {
    "none", "short", "percent", "percentunit", "s", "ms", "µs", "ns", "dtdurations", "dtdurationms",
    "iops", "ops", "reqps", "rps", "wps", "opm", "bytes", "decbytes", "Bps", "binBps", "KBs", "MBs",
}  # fmt: skip
DS_REF = {"type": "prometheus", "uid": "${datasource}"}
RANGE_FUNCS = ("rate", "irate", "increase")
BUILTIN_SAMPLES = {
    "__rate_interval": "1m",
    "__interval": "1m",
    "__range": "1h",
    "__range_s": "3600",
    "__interval_ms": "60000",
}


def load(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


DASHBOARDS = {p.stem: load(p) for p in FILES}


def panels(d: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every panel with the row it sits in (expanded rows own the panels below them)."""
    row: dict[str, Any] | None = None
    for p in d.get("panels", []):
        if p.get("type") == "row":
            row = p
            yield p, None
            for inner in p.get("panels", []):
                yield inner, p
            continue
        yield p, row


def leaf_panels(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p, _ in panels(d) if p.get("type") != "row"]


def variables(d: dict[str, Any]) -> list[dict[str, Any]]:
    return list(d.get("templating", {}).get("list", []))


def var_query(v: dict[str, Any]) -> str:
    q = v.get("query")
    return str(q.get("query", "")) if isinstance(q, dict) else str(q or "")


def inner_expr(query: str) -> str:
    """The PromQL inside label_values(expr, label) / query_result(expr), or '' for label_values(label)."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", query, re.S)
    if m:
        return m.group(1)
    if re.fullmatch(r"\s*label_values\(\s*\w+\s*\)\s*", query):
        return ""
    m = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.S)
    if m:
        return m.group(1)
    raise AssertionError(f"unsupported variable query {query!r}")


def used_vars(text: str) -> set[str]:
    return {a or b or c for a, b, c in VAR_RE.findall(text)}


def sample_values(d: dict[str, Any]) -> dict[str, str]:
    out = dict(BUILTIN_SAMPLES)
    for v in variables(d):
        out[v["name"]] = str(v["current"]["value"]) if v["type"] == "custom" else "sample"
    return out


def exprs(d: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, expr) of every target."""
    return [
        (f"{d['uid']} / {p['title']} / {t.get('refId')}", str(t.get("expr", "")))
        for p in leaf_panels(d)
        for t in p.get("targets", [])
    ]


RECORDED = re.compile(r"\b[a-z_]+:(sanlens_\w+):\w+\b")


def selectors(expr: str, prefix: str) -> list[tuple[str, str]]:
    """(metric, matcher text) for every selector of a metric (or recording rule of one) starting with prefix."""
    pattern = rf"(?:\b[a-z_]+:)?\b({prefix}\w*)\b(?::\w+)?(?:\{{([^{{}}]*)\}})?"
    return [(m.group(1), m.group(2) or "") for m in re.finditer(pattern, expr)]


ids = pytest.mark.parametrize("uid", sorted(DASHBOARDS))


# ------------------------------------------------------------------ files, generator
def test_the_dashboards_exist_with_stable_uids() -> None:
    assert set(DASHBOARDS) == UIDS
    for stem, d in DASHBOARDS.items():
        assert d["uid"] == stem, "the file name is the uid"
    titles = [d["title"] for d in DASHBOARDS.values()]
    assert len(set(titles)) == len(titles)


@cache
def generator() -> Any:
    """dashboards/build.py as a module (it puts the repository root on sys.path for its own packages)."""
    spec = importlib.util.spec_from_file_location("dashboards_build", DASH_DIR / "build.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_json_equals_the_generator_output(tmp_path: Path) -> None:
    mod = generator()
    built = mod.build_all()
    assert set(built) == {str(p.relative_to(DASH_DIR)) for p in FILES}
    for name, text in built.items():
        assert (DASH_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run dashboards/build.py"
        )
    # --check must see a changed file
    for name, text in built.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert mod.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "sanlens-disks.json").write_text("{}", encoding="utf-8")
    assert mod.main(["--check", "--out", str(tmp_path)]) == 1


def test_the_generator_takes_the_mixin_overrides(tmp_path: Path) -> None:
    """The rules generator's flags: uid prefix and runbook base reach every dashboard, nothing else moves."""
    runbooks = "https://wiki.example.com/sanlens/runbooks"
    args = ["--out", str(tmp_path), "--dashboard-uid-prefix", "acme-", "--runbook-base-url", runbooks]
    assert generator().main(args) == 0
    built = {p.stem: load(p) for p in [*tmp_path.glob("*.json"), *tmp_path.glob("harvest/*.json")]}
    assert set(built) == {"acme-" + uid.removeprefix("sanlens-") for uid in UIDS}
    for stem, d in built.items():
        assert d["uid"] == stem
        assert "sanlens" in d["tags"] and d["links"][0]["tags"] == ["sanlens"]
        theirs = DASHBOARDS["sanlens-" + stem.removeprefix("acme-")]
        # drill-down links name the dashboards they open, with the site's prefix
        assert json.loads(json.dumps(d["panels"]).replace("acme-", "sanlens-")) == theirs["panels"]
    base = next(v for v in variables(built["acme-overview"]) if v["name"] == "runbook_base")
    assert base["query"] == base["current"]["value"] == runbooks


# ------------------------------------------------------------------ dashboard-level conventions
@ids
def test_dashboard_conventions(uid: str) -> None:
    d = DASHBOARDS[uid]
    raw = PATHS[uid].read_text(encoding="utf-8")
    assert "__inputs" not in d and "__requires" not in d, "sidecar provisioning cannot fill __inputs"
    assert "${DS_" not in raw, "import-time datasource placeholders break provisioning"
    assert d["schemaVersion"] >= 39
    assert "sanlens" in d["tags"]
    assert d.get("editable") is False, "uneditable-dashboard"
    assert d.get("refresh"), "dashboards refresh on their own"
    assert d.get("description")
    ids_ = [p["id"] for p, _ in panels(d)]
    assert len(ids_) == len(set(ids_)), "panel ids are unique"
    for p, _ in panels(d):
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]


@ids
def test_only_current_panel_types(uid: str) -> None:
    for p in leaf_panels(DASHBOARDS[uid]):
        assert p["type"] in PANEL_TYPES, f"{p['title']}: {p['type']} (no graph/singlestat)"


# ------------------------------------------------------------------ template rules
@ids
def test_template_datasource_rule(uid: str) -> None:
    ds = [v for v in variables(DASHBOARDS[uid]) if v["type"] == "datasource"]
    assert len(ds) == 1
    assert ds[0]["name"] == "datasource" and ds[0]["query"] == "prometheus"
    assert ds[0]["label"].lower() == "data source"


@ids
def test_template_on_time_change_reload_rule(uid: str) -> None:
    for v in variables(DASHBOARDS[uid]):
        if v["type"] == "query":
            assert v["refresh"] == 2, f"${v['name']} must refresh on time range change"
            assert v["datasource"] == DS_REF


@ids
def test_variables_are_chained_in_order(uid: str) -> None:
    """Each query variable refers only to variables defined before it; there is a cluster variable."""
    seen: set[str] = set()
    names = []
    for v in variables(DASHBOARDS[uid]):
        if v["type"] == "query":
            q = var_query(v)
            assert q.startswith(("label_values(", "query_result(")), q
            assert used_vars(q) <= seen, f"${v['name']} uses a variable defined after it: {q}"
        seen.add(v["name"])
        names.append(v["name"])
    assert names[:2] == ["datasource", "cluster"]


@ids
def test_variables_used_are_defined_and_repeats_are_multi(uid: str) -> None:
    d = DASHBOARDS[uid]
    defined = {v["name"]: v for v in variables(d)}
    for where, expr in exprs(d):
        undefined = used_vars(expr) - set(defined) - set(BUILTIN_SAMPLES)
        assert not undefined, f"{where}: {undefined}"
    for p, _ in panels(d):
        if p.get("repeat"):
            v = defined[p["repeat"]]
            assert v["multi"] and v["includeAll"], f"repeat over ${p['repeat']} needs a multi-value variable"


# ------------------------------------------------------------------ panel rules
@ids
def test_panel_datasource_rule(uid: str) -> None:
    for p in leaf_panels(DASHBOARDS[uid]):
        assert p["datasource"] == DS_REF, p["title"]
        for t in p["targets"]:
            assert t["datasource"] == DS_REF, f"{p['title']} {t['refId']}"


@ids
def test_panel_title_description_rule(uid: str) -> None:
    for p, _ in panels(DASHBOARDS[uid]):
        assert p.get("title", "").strip(), p
        if p["type"] != "row":
            assert len(p.get("description", "").strip()) >= 20, f"{p['title']}: description"


@ids
def test_panel_units_rule(uid: str) -> None:
    for p in leaf_panels(DASHBOARDS[uid]):
        unit = p["fieldConfig"]["defaults"].get("unit")
        assert unit in VALID_UNITS, f"{p['title']}: unit {unit!r}"
        for o in p["fieldConfig"].get("overrides", []):
            for prop in o["properties"]:
                if prop["id"] == "unit":
                    assert prop["value"] in VALID_UNITS, f"{p['title']}: override unit {prop['value']!r}"
        if p["type"] == "heatmap":
            assert p["options"]["yAxis"]["unit"] in VALID_UNITS


@ids
def test_panel_no_targets_rule(uid: str) -> None:
    for p in leaf_panels(DASHBOARDS[uid]):
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs))
        for t in p["targets"]:
            assert t["expr"].strip(), f"{p['title']} {t['refId']}"


# ------------------------------------------------------------------ target rules
@ids
def test_target_rate_interval_rule(uid: str) -> None:
    for where, expr in exprs(DASHBOARDS[uid]):
        ranges = re.findall(r"\[([^\]]*)\]", expr)
        for r in ranges:
            assert r == "$__rate_interval", f"{where}: range [{r}]"
        for f in RANGE_FUNCS:
            for m in re.finditer(rf"\b{f}\(", expr):
                assert "[$__rate_interval]" in expr[m.end() :], where


WRAPPED_COUNTER = re.compile(
    r"\b(?:rate|irate|increase)\(\s*\w+_total\s*(?:\{[^{}]*\})?\s*\[\$__rate_interval\]\s*\)"
)


@ids
def test_target_counter_agg_rule(uid: str) -> None:
    for where, expr in exprs(DASHBOARDS[uid]):
        rest = WRAPPED_COUNTER.sub("RATE", expr)
        assert not re.search(r"\b\w+_total\b", rest), (
            f"{where}: a _total counter outside rate/increase: {expr}"
        )


@ids
def test_ontap_and_host_selectors_are_filtered_by_a_variable(uid: str) -> None:
    """Our stand-in for target-job/instance-rule: no ONTAP or host selector reads every cluster."""
    for where, expr in exprs(DASHBOARDS[uid]):
        for metric, matchers in selectors(expr, "sanlens_ontap_") + selectors(expr, "sanlens_host_"):
            assert used_vars(matchers), (
                f"{where}: {metric}{{{matchers}}} not filtered by a dashboard variable"
            )


def test_every_metric_is_in_the_metrics_reference() -> None:
    contract = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    for d in DASHBOARDS.values():
        texts = [e for _, e in exprs(d)] + [var_query(v) for v in variables(d)]
        for text in texts:
            for name in re.findall(r"\bsanlens_\w+", RECORDED.sub("", text)):
                assert re.search(rf"`{name}[`{{]", contract), f"{d['uid']}: {name} is not in docs/metrics.md"


def test_recording_rules_used_exist_in_the_rules_file() -> None:
    """Panels on recording rules (issue: the dashboards use them) name rules that rules/sanlens.rules.yaml records."""
    rules = yaml.safe_load((ROOT / "rules" / "sanlens.rules.yaml").read_text(encoding="utf-8"))
    recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    used = {m.group(0) for d in DASHBOARDS.values() for _, e in exprs(d) for m in RECORDED.finditer(e)}
    assert used, "no dashboard panel uses a recording rule"
    assert used <= recorded, used - recorded


def test_every_expr_parses_with_promtool(tmp_path: Path) -> None:
    """target-promql-rule and template-label-promql-rule, by the real PromQL parser."""
    promtool = require_tool("promtool")
    rules: list[dict[str, str]] = []
    where_of: list[str] = []
    for d in DASHBOARDS.values():
        values = sample_values(d)
        for v in variables(d):
            if v["type"] == "query" and (inner := inner_expr(var_query(v))):
                where_of.append(f"{d['uid']} variable ${v['name']}")
                rules.append(
                    {"record": f"dashboard_lint:expr{len(rules)}", "expr": substitute(inner, values)}
                )
        for where, expr in exprs(d):
            where_of.append(where)
            rules.append({"record": f"dashboard_lint:expr{len(rules)}", "expr": substitute(expr, values)})
    assert len(rules) > 60
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}), encoding="utf-8")
    res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    index = "\n".join(f"  expr{i}: {w}" for i, w in enumerate(where_of))
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}\n{index}"
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout


def test_promtool_check_catches_a_broken_expr(tmp_path: Path) -> None:
    """The promtool check above is not vacuous: a bad expr fails it."""
    promtool = require_tool("promtool")
    path = tmp_path / "bad.rules.yaml"
    bad = {"record": "dashboard_lint:bad", "expr": 'sum by (cluster (rate(x_total{cluster=~"a"}[1m]))'}
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [bad]}]}), encoding="utf-8")
    res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode != 0


# ------------------------------------------------------------------ thresholds = diagnosis defaults
Th = Callable[[str, str], float]


def spec_default(diagnosis: str, name: str) -> float:
    return REGISTRY[diagnosis].threshold(name).default


def expected_steps(th: Th = spec_default) -> dict[tuple[str, str], list[float]]:
    """(dashboard, panel) -> its threshold step values, as the diagnosis thresholds ``th`` gives them."""
    data = [th("latency_slo", "data_warning_seconds"), th("latency_slo", "data_critical_seconds")]
    busy = th("disk_busy_imbalance", "min_max_busy_ratio")
    return {
        ("sanlens-overview", "Worst LUN latency per cluster (5m mean)"): data,
        ("sanlens-overview", "Worst host disk latency per host (5m mean, worst $topn hosts)"): data,
        ("sanlens-io-path", "Latency: host vs ONTAP LUN"): data,
        ("sanlens-io-path", "Fabric + queue time (host - ONTAP)"): [
            th("host_queue_limited", "min_latency_gap_seconds")
        ],
        ("sanlens-io-path", "% idle"): [th("san_oversubscription", "min_idle_ratio")],
        ("sanlens-io-path", "Backend utilization E"): [th("san_oversubscription", "max_backend_utilization")],
        ("sanlens-ontap-cpu-domains", "Kahuna vs its thresholds"): [
            th("cpu_domain_serial_bottleneck", "kahuna_warning_ratio"),
            th("cpu_domain_serial_bottleneck", "serial_critical_ratio"),
        ],
        ("sanlens-ontap-cpu-domains", "Ops share per volume in its aggregate"): [
            th("volume_affinity_concentration", "volume_share")
        ],
        ("sanlens-lun-volume", "LUN IOPS as a share of its ceiling"): [
            th("lun_iops_ceiling", "warning_fraction"),
            th("lun_iops_ceiling", "critical_fraction"),
        ],
        ("sanlens-lun-volume", "Volume IOPS as a share of its ceiling"): [
            th("volume_iops_ceiling", "warning_fraction"),
            th("volume_iops_ceiling", "critical_fraction"),
        ],
        ("sanlens-lun-volume", "LUN latency"): data,
        ("sanlens-lun-volume", "Volume latency"): data,
        ("sanlens-lun-volume", "LUN write share"): [th("volume_iops_ceiling", "write_share")],
        ("sanlens-lun-volume", "Volume write share"): [th("volume_iops_ceiling", "write_share")],
        ("sanlens-disks", "Busy per disk now"): [busy, th("disk_busy_imbalance", "critical_max_busy_ratio")],
        ("sanlens-disks", "Imbalance: coefficient of variation"): [th("disk_busy_imbalance", "cv")],
        ("sanlens-disks", "Imbalance: max / median"): [th("disk_busy_imbalance", "max_to_median")],
        ("sanlens-disks", "Busy per RAID group"): [busy],
        ("sanlens-latency-breakdown", "Slowest subjects now (worst $topn)"): data,
        ("sanlens-latency-breakdown", "Ops / ceiling"): [th("qos_throttle", "ceiling_used_ratio")],
        ("sanlens-latency-breakdown", "QoS Max share of the workload's latency"): [
            th("qos_throttle", "qos_max_share")
        ],
        ("sanlens-latency-breakdown", "Indirect share of the LUN's ops"): [th("indirect_io", "remote_share")],
        ("sanlens-latency-breakdown", "Interconnect time per op"): data,
        ("sanlens-latency-breakdown", "Cluster component share of the latency"): [
            th("indirect_io", "cluster_share")
        ],
    }


def assert_steps(dashboards: dict[str, dict[str, Any]], key: tuple[str, str], want: list[float]) -> None:
    uid, title = key
    found = [p for p in leaf_panels(dashboards[uid]) if p["title"] == title]
    assert len(found) == 1, f"{uid} has no single panel {title!r}"
    p = found[0]
    got = [s["value"] for s in p["fieldConfig"]["defaults"]["thresholds"]["steps"] if s["value"] is not None]
    assert got == pytest.approx(want), key
    if p["type"] == "timeseries":
        assert p["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off", (
            "threshold lines shown"
        )


@pytest.mark.parametrize("key", sorted(expected_steps()), ids=lambda k: f"{k[0]}:{k[1]}")
def test_thresholds_equal_the_diagnosis_defaults(key: tuple[str, str]) -> None:
    assert_steps(DASHBOARDS, key, expected_steps()[key])


def test_thresholds_follow_the_specs_not_copies() -> None:
    """Build with every diagnosis threshold doubled: each band and quoted ceiling doubles with it."""
    gen = generator()
    config: Any = gen.MixinConfig

    class Doubled(config):
        def threshold(self, diagnosis: str, name: str) -> float:
            return 2 * spec_default(diagnosis, name)

    built = {n.removesuffix(".json"): json.loads(t) for n, t in gen.build_all(Doubled()).items()}
    doubled = expected_steps(lambda d, n: 2 * spec_default(d, n))
    for key, want in doubled.items():
        assert_steps(built, key, want)
    p = next(
        p for p in leaf_panels(built["sanlens-lun-volume"]) if p["title"] == "LUN IOPS vs version ceiling"
    )
    assert f"{2 * spec_default('lun_iops_ceiling', 'ceiling_iops') / 1000:.0f}K" in p["description"]


def test_ceiling_descriptions_quote_the_registry_ceilings() -> None:
    d = DASHBOARDS["sanlens-lun-volume"]
    for kind, diag in (("LUN", "lun_iops_ceiling"), ("Volume", "volume_iops_ceiling")):
        p = next(p for p in leaf_panels(d) if p["title"] == f"{kind} IOPS vs version ceiling")
        for name in ("ceiling_pre_9_9_1_iops", "ceiling_iops"):
            assert f"{spec_default(diag, name) / 1000:.0f}K" in p["description"]
        assert f"{spec_default(diag, 'warning_fraction'):.0%}".replace("%", " %") in p["description"]
        assert "warning_fraction" in " ".join(t["expr"] for t in p["targets"])


# ------------------------------------------------------------------ content the issue asks for
def _targets_text(uid: str) -> str:
    return "\n".join(e for _, e in exprs(DASHBOARDS[uid]))


def test_overview_links_each_diagnosis_to_its_runbook() -> None:
    d = DASHBOARDS["sanlens-overview"]
    table = next(p for p in leaf_panels(d) if p["title"] == "Active diagnoses (worst $topn)")
    exprs_ = [t["expr"] for t in table["targets"]]
    assert any("sanlens_diagnosis_since_timestamp_seconds" in e for e in exprs_)
    links = [
        link
        for o in table["fieldConfig"]["overrides"]
        if o["matcher"]["options"] == "diagnosis"
        for prop in o["properties"]
        if prop["id"] == "links"
        for link in prop["value"]
    ]
    assert links and links[0]["url"] == "${runbook_base}/${__value.raw}.md"
    base = next(v for v in variables(d) if v["name"] == "runbook_base")["query"]
    assert base.endswith("docs/runbooks")
    for diag in REGISTRY:  # every id the link can produce has its runbook
        assert (ROOT / "docs" / "runbooks" / f"{diag}.md").is_file(), diag


def test_io_path_repeats_one_row_per_lun() -> None:
    d = DASHBOARDS["sanlens-io-path"]
    rows = [p for p in d["panels"] if p["type"] == "row" and p.get("repeat") == "lun"]
    assert len(rows) == 1
    inside = [p for p, row in panels(d) if row is rows[0]]
    text = "\n".join(t["expr"] for p in inside for t in p["targets"])
    for needle in (
        "sanlens_host_disk_latency_seconds_total",
        "sanlens_ontap_lun_latency_seconds_total",
        "sanlens_host_disk_queue_length",
        "sanlens_host_disk_queue_depth",
        "sanlens_host_disk_paths",
        "sanlens_host_disk_idle_seconds_total",
        'threshold="ceiling_iops"',
        "sanlens_ontap_lun_bytes_total",
    ):
        assert needle in text, needle
    assert all('lun=~"$lun"' in t["expr"] or "threshold" in t["expr"] for p in inside for t in p["targets"])


def test_latency_breakdown_stacks_each_subjects_waterfall_and_reads_both_diagnoses() -> None:
    """One repeated row per slowest subject stacks its components in path order, named as the report
    names them; the top-N table names each subject's dominant component; every evidence the two
    diagnoses declare for a panel is drawn."""
    from sanlens.diagnose.waterfall import NAMES, PARTS

    d = DASHBOARDS["sanlens-latency-breakdown"]
    rows = [p for p in d["panels"] if p["type"] == "row" and p.get("repeat") == "subject"]
    assert len(rows) == 1
    inside = [p for p, row in panels(d) if row is rows[0]]
    stacked = next(p for p in inside if p["type"] == "timeseries")
    assert stacked["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"
    assert stacked["targets"][0]["expr"].startswith("sum by (component) (sanlens_latency_component_seconds{")
    assert all('subject=~"$subject"' in t["expr"] for p in inside for t in p["targets"])
    shown = [
        (o["matcher"]["options"], o["properties"][0]["value"]) for o in stacked["fieldConfig"]["overrides"]
    ]
    assert shown == [(part, NAMES[part]) for part in PARTS], "every part, in path order, by its name"
    (table_,) = [p for p in leaf_panels(d) if p["type"] == "table"]
    assert "topk by (subject) (1, sanlens_latency_component_seconds" in table_["targets"][1]["expr"]
    text = _targets_text("sanlens-latency-breakdown")
    drawn = set(re.findall(r'diagnosis="(qos_throttle|indirect_io)", evidence="(\w+)"', text))
    for did in ("qos_throttle", "indirect_io"):
        assert {(did, e.name) for e in REGISTRY[did].evidence} == {p for p in drawn if p[0] == did}, did
    assert 'threshold="ceiling_used_ratio"' in text


def test_cpu_domains_lun_volume_and_disks_answer_their_questions() -> None:
    cpu = _targets_text("sanlens-ontap-cpu-domains")
    assert 'domain="kahuna"' in cpu and "sanlens_ontap_node_cpu_busy_seconds_total" in cpu
    assert "count by (cluster, aggregate) (sanlens_ontap_volume_info" in cpu
    lv = _targets_text("sanlens-lun-volume")
    assert 'diagnosis="lun_iops_ceiling", threshold="ceiling_pre_9_9_1_iops"' in lv and 'op="write"' in lv
    assert 'diagnosis="volume_iops_ceiling", threshold="ceiling_iops"' in lv and "_bytes_total" in lv
    disks = _targets_text("sanlens-disks")
    for needle in (
        "stddev by (cluster, aggregate)",
        "sanlens_background_operation_done_ratio",
        "sanlens_background_operation_eta_seconds",
    ):
        assert needle in disks, needle
    assert "_percent" not in disks, "progress is a ratio (0..1)"
    bands = [p for p in leaf_panels(DASHBOARDS["sanlens-disks"]) if p["title"] == "Disks per busy band"]
    assert bands and 'count_values("busy"' in bands[0]["targets"][0]["expr"], "counted in Prometheus"


# ------------------------------------------------------------------ at scale
SUBJECT_VARS = {"lun", "volume", "host", "aggregate", "subject"}


@ids
def test_subject_variables_offer_only_the_worst_n(uid: str) -> None:
    """LUN, volume, host and aggregate variables are topk($topn, …): their "All" is N values, not the estate."""
    d = DASHBOARDS[uid]
    found = {v["name"]: v for v in variables(d) if v["name"] in SUBJECT_VARS}
    for name, v in found.items():
        q = var_query(v)
        assert q.startswith("query_result(topk($topn, "), f"{uid} ${name}: {q}"
        assert v["regex"] == f'/{name}="([^"]+)"/', v["regex"]
    if found:
        topn = next(v for v in variables(d) if v["name"] == "topn")
        assert topn["type"] == "custom" and topn["current"]["value"] == "10", "the worst 10 by default"
    for p, _ in panels(d):
        if p.get("repeat"):
            assert p["repeat"] in found, f"{uid}: a row repeats over ${p['repeat']}, not a top-N variable"


@ids
def test_every_latency_has_a_minimum_ops_guard(uid: str) -> None:
    """A latency divides only by ops of at least latency_min_iops (or reads a guarded recording rule)."""
    for where, expr in exprs(DASHBOARDS[uid]):
        if "_latency_seconds_total" in expr and "_ops_total" in expr:  # a latency per op (not N = IOPS x R)
            assert re.search(r"_ops_total\{[^{}]*\}\[\$__rate_interval\]\)\) >= 5\)", expr), (
                f"{where}: {expr}"
            )


def test_recording_rule_latencies_have_a_minimum_ops_guard() -> None:
    rules = yaml.safe_load((ROOT / "rules" / "sanlens.rules.yaml").read_text(encoding="utf-8"))
    latencies = [r for g in rules["groups"] for r in g["rules"] if "latency_seconds" in r.get("record", "")]
    assert len(latencies) >= 6
    for r in latencies:
        assert re.search(r">= 5\)$", r["expr"].strip()), r


def test_every_overview_table_drills_down_to_its_subjects_dashboard() -> None:
    d = DASHBOARDS["sanlens-overview"]
    tables = [p for p in leaf_panels(d) if p["type"] == "table"]
    assert len(tables) >= 4
    for t in tables:
        (link,) = t["fieldConfig"]["defaults"]["links"]
        assert link["url"].startswith("/d/"), (t["title"], link)
        uid = link["url"][3:].split("/", 1)[0]
        fields = set(re.findall(r"__data\.fields\.(\w+)", link["url"]))
        assert fields, (t["title"], link["url"])
        if uid.startswith("sanlens-"):  # a fixed dashboard: its variables are set from the row
            assert uid in UIDS, uid
            names = {v["name"] for v in variables(DASHBOARDS[uid])}
            assert {f"var-{f}" for f in fields} <= {f"var-{n}" for n in names}, (t["title"], fields, names)
        else:  # the diagnosis's own dashboard, computed in the query from the registry
            assert uid == "${__data.fields.dashboard}" and "drill" in fields
            hidden = [
                o for o in t["fieldConfig"]["overrides"] if o["matcher"]["options"] in ("dashboard", "drill")
            ]
            assert len(hidden) == 2, "the link's fields stay in the frame, hidden"
            expr = t["targets"][0]["expr"]
            for did, spec in REGISTRY.items():
                assert re.search(
                    rf'"dashboard", "{spec.dashboard.uid}", "diagnosis", "[^"]*\b{did}\b', expr
                ), did
