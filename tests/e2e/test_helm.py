"""The Helm chart, validated offline: lint, render, unit tests, schemas, promtool.

The chart reads rules/sanlens.rules.yaml and dashboards/*.json through symlinks under
helm/sanlens/files/. Most tests render a copy of the chart in a temporary tree laid out
like the repo, with the real rules and dashboards when they exist and small placeholders
otherwise, so the chart is tested whatever state the other parts are in. The tests named
*_real_* use the repo's chart in place and need the real files (skip locally, fail in CI).
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml
from tests.conftest import ROOT, free_port, require_tool, skip_or_fail
from tests.pki import make_pki

from sanlens.config.load import load_config_text

CHART = ROOT / "helm" / "sanlens"
RULES = ROOT / "rules" / "sanlens.rules.yaml"
DASHBOARDS = ROOT / "dashboards"
TOOLS = ROOT / ".tools"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
SCHEMA_SCRIPT = ROOT / "scripts" / "kubeconform_schemas.py"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and a current one.
KUBE_VERSIONS = ("1.25.0", "1.33.0")
# The one value without a default (no image is published): every render here starts from it.
IMAGE_REPOSITORY = "registry.example.com/storage/sanlens"
IMAGE_REQUIRED = (
    "image.repository is required: build and push the sanlens image (README: Helm, step 1) "
    "and set image.repository"
)

PLACEHOLDER_RULES = """\
groups:
  - name: sanlens.placeholder.recording
    rules:
      - record: cluster:sanlens_ontap_lun_ops:rate5m
        expr: sum by (cluster) (rate(sanlens_ontap_lun_ops_total[5m]))
  - name: sanlens.placeholder.alerts
    rules:
      - alert: SanlensLatencySlo
        expr: max by (cluster, subject) (sanlens_diagnosis_state{diagnosis="latency_slo"}) == 2
        for: 10m
        labels:
          severity: critical
        annotations:
          summary: 'Latency SLO breached on {{ $labels.subject }} ({{ $value | humanize }})'
          description: '{{ $labels.cluster }}: see {{ printf "%s" $labels.subject }}'
          runbook_url: https://github.com/sanlens/sanlens/blob/main/docs/runbooks/latency_slo.md
          dashboard_url: http://grafana.local/d/sanlens-io-path/io-path?var-cluster={{ $labels.cluster }}
"""
PLACEHOLDER_DASHBOARD = {"uid": "sanlens-placeholder", "title": "Placeholder {{instance}}", "panels": []}


@dataclass
class Helm:
    binary: str
    env: dict[str, str]
    base_values: Path  # image.repository; values files given later override it

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(
            [self.binary, *args], capture_output=True, text=True, env=self.env, timeout=120, check=False
        )
        if check and p.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def template(self, chart: Path, *args: str) -> list[dict[str, Any]]:
        out = self.run(
            "template", "sanlens", str(chart), "--namespace", "monitoring", "-f", str(self.base_values), *args
        ).stdout
        return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    binary = require_tool("helm")
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_PLUGINS": str(TOOLS / "helm-plugins"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    base = home / "base-values.yaml"
    base.write_text(yaml.safe_dump({"image": {"repository": IMAGE_REPOSITORY}}), encoding="utf-8")
    return Helm(binary, env, base)


@pytest.fixture(scope="session")
def chart_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the chart (symlinks kept) beside real-or-placeholder rules and dashboards."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(CHART, root / "helm" / "sanlens", symlinks=True)
    (root / "rules").mkdir()
    if RULES.is_file():
        shutil.copy(RULES, root / "rules" / RULES.name)
    else:
        (root / "rules" / RULES.name).write_text(PLACEHOLDER_RULES, encoding="utf-8")
    (root / "dashboards").mkdir()
    real = sorted(DASHBOARDS.glob("*.json"))
    for f in real:
        shutil.copy(f, root / "dashboards" / f.name)
    if (DASHBOARDS / "harvest").is_dir():
        shutil.copytree(DASHBOARDS / "harvest", root / "dashboards" / "harvest")
    if not real:
        (root / "dashboards" / "sanlens-placeholder.json").write_text(
            json.dumps(PLACEHOLDER_DASHBOARD, indent=2), encoding="utf-8"
        )
    return root / "helm" / "sanlens"


def kinds(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def only(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = kinds(docs, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


# ------------------------------------------------------------------ the chart's files


def test_chart_links_to_the_single_sources_of_rules_and_dashboards() -> None:
    rules_link = CHART / "files" / "sanlens.rules.yaml"
    dash_link = CHART / "files" / "dashboards"
    assert rules_link.is_symlink() and dash_link.is_symlink()
    assert (rules_link.parent / os.readlink(rules_link)).resolve() == RULES.resolve()
    assert (dash_link.parent / os.readlink(dash_link)).resolve() == DASHBOARDS.resolve()


def test_values_schema_is_valid_json_and_covers_every_top_level_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert schema["additionalProperties"] is False
    assert set(values) <= set(schema["properties"]), set(values) - set(schema["properties"])


# values that are sections of settings; any other mapping (config, resources, probes...) is one value
SECTIONS = {
    "image",
    "secret",
    "webConfig",
    "tlsSecret",
    "serviceAccount",
    "service",
    "serviceMonitor",
    "prometheusRule",
    "dashboards",
    "networkPolicy",
    "egress",
    "podDisruptionBudget",
}


def _value_keys(d: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for k, v in d.items():
        if isinstance(v, dict) and k in SECTIONS:
            yield from _value_keys(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}"


def test_chart_readme_documents_every_value() -> None:
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    documented = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.M))
    missing = [k for k in _value_keys(values) if k not in documented]
    assert not missing, f"values missing from helm/sanlens/README.md: {missing}"


# ------------------------------------------------------------------ helm lint / template / unittest


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_helm_lint_strict(helm: Helm, chart_tree: Path, values: Path) -> None:
    p = helm.run("lint", "--strict", str(chart_tree), "-f", str(values), check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 chart(s) failed" in p.stdout
    assert "[WARNING]" not in p.stdout


def test_every_ci_configuration_names_the_image(chart_tree: Path) -> None:
    for values in CI_VALUES:
        image = (yaml.safe_load(values.read_text(encoding="utf-8")) or {}).get("image", {})
        assert image.get("repository"), f"{values.name} sets no image.repository"


@pytest.mark.parametrize("command", ["template"])
def test_defaults_refuse_to_render_and_name_image_repository(
    helm: Helm, chart_tree: Path, command: str
) -> None:
    """No image is published, so there is no default to pull: the chart says what to set.

    ``helm install`` renders as ``helm template`` does (``helm lint`` runs in lint mode, where a
    template's ``fail`` does not stop it). The values schema may refuse the empty repository first
    (its message names the key too); past the schema, the template's own check is the one line of
    IMAGE_REQUIRED.
    """
    p = helm.run("template", "x", str(chart_tree), check=False)
    assert p.returncode != 0
    assert "image.repository" in p.stdout + p.stderr or "/image/repository" in p.stdout + p.stderr
    if command == "template":
        q = helm.run("template", "x", str(chart_tree), "--skip-schema-validation", check=False)
        assert q.returncode != 0
        assert IMAGE_REQUIRED in q.stderr, q.stderr
        assert len([line for line in q.stderr.splitlines() if IMAGE_REQUIRED in line]) == 1


def test_helm_unittest_suites_pass(helm: Helm, chart_tree: Path) -> None:
    p = helm.run("unittest", str(chart_tree), check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    suites = len(list((CHART / "tests").glob("*_test.yaml")))
    assert re.search(rf"Test Suites:\s+{suites} passed, {suites} total", out), out
    tests = int(re.search(r"Tests:\s+(\d+) passed", out).group(1))  # type: ignore[union-attr]
    assert tests >= 30, out


@pytest.fixture(scope="session")
def schema_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Offline schemas: Kubernetes kinds from kubernetes-validate, CRDs from prometheus-operator."""
    pytest.importorskip("kubernetes_validate", reason="pip install -e '.[dev]'")
    crds = TOOLS / "crds" / "prometheus-operator"
    needed = [crds / f"monitoring.coreos.com_{n}.yaml" for n in ("servicemonitors", "prometheusrules")]
    if not all(f.is_file() for f in needed):
        skip_or_fail(f"prometheus-operator CRDs absent in {crds} (scripts/install-go-tools.sh)")
    out = tmp_path_factory.mktemp("schemas")
    core_kinds = [
        "deployment-apps-v1",
        "service-v1",
        "serviceaccount-v1",
        "configmap-v1",
        "secret-v1",
        "networkpolicy-networking-v1",
        "poddisruptionbudget-policy-v1",
    ]
    dirs = {"crd": out / "crd"}
    run = [sys.executable, str(SCHEMA_SCRIPT)]
    subprocess.run([*run, "crd", *map(str, needed), "-o", str(dirs["crd"])], check=True, timeout=60)
    for v in KUBE_VERSIONS:
        dirs[v] = out / v
        subprocess.run([*run, "core", *core_kinds, "--kubernetes-version", v, "-o", str(dirs[v])], check=True)
    return dirs


def kubeconform(
    files: list[Path], schemas: dict[str, Path], version: str
) -> subprocess.CompletedProcess[str]:
    binary = require_tool("kubeconform")
    return subprocess.run(
        [
            binary,
            "-strict",
            "-summary",
            "-output",
            "json",
            "-schema-location",
            f"{schemas[version]}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
            "-schema-location",
            f"{schemas['crd']}/{{{{ .Group }}}}/{{{{ .ResourceKind }}}}_{{{{ .ResourceAPIVersion }}}}.json",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_every_ci_configuration_renders_and_passes_kubeconform_strict(
    helm: Helm, chart_tree: Path, schema_dirs: dict[str, Path], values: Path, tmp_path: Path
) -> None:
    docs = helm.template(chart_tree, "-f", str(values))
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    for version in KUBE_VERSIONS:
        p = kubeconform([rendered], schema_dirs, version)
        report = json.loads(p.stdout)
        assert p.returncode == 0, f"{version}: {p.stdout}{p.stderr}"
        summary = report["summary"]
        # every object validated against a schema: none skipped for want of one
        assert summary["valid"] == len(docs) and summary["skipped"] == 0, summary


def test_full_configuration_renders_every_optional_object(helm: Helm, chart_tree: Path) -> None:
    docs = helm.template(chart_tree, "-f", str(CHART / "ci" / "full-values.yaml"))
    got = {d["kind"] for d in docs}
    assert got == {
        "ServiceAccount",
        "ConfigMap",
        "Service",
        "Deployment",
        "ServiceMonitor",
        "PrometheusRule",
        "NetworkPolicy",
        "PodDisruptionBudget",
    }
    n_dash = len(list((chart_tree / "files" / "dashboards").glob("*.json")))
    assert len(kinds(docs, "ConfigMap")) == 1 + n_dash


def test_kubeconform_strict_rejects_a_misspelt_field(
    helm: Helm, chart_tree: Path, schema_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """The offline schemas are real: a typo in a Deployment and in a ServiceMonitor fails."""
    docs = helm.template(chart_tree, "--set", "serviceMonitor.enabled=true")
    only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    only(docs, "ServiceMonitor")["spec"]["endpoints"][0]["intervall"] = "30s"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    p = kubeconform([bad], schema_dirs, KUBE_VERSIONS[-1])
    assert p.returncode != 0
    assert "securityContxt" in p.stdout and "intervall" in p.stdout, p.stdout
    assert json.loads(p.stdout)["summary"]["invalid"] == 2


# ------------------------------------------------------------------ config and credentials


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_rendered_config_is_accepted_by_the_exporter(helm: Helm, chart_tree: Path, values: Path) -> None:
    docs = helm.template(chart_tree, "-f", str(values))
    configs = [d for d in kinds(docs, "ConfigMap") if "config.yaml" in d["data"]]
    assert configs
    given = yaml.safe_load(values.read_text(encoding="utf-8")) or {}
    want_ontap = sorted(t["name"] for t in given.get("config", {}).get("ontap", []))
    got_ontap: list[str] = []
    for cm in configs:
        cfg = load_config_text(cm["data"]["config.yaml"], cm["metadata"]["name"])
        got_ontap += [t.name for t in cfg.ontap]
        for t in [*cfg.ontap, *cfg.hosts]:
            assert t.auth.password is None and t.auth.password_env is None
    assert sorted(got_ontap) == want_ontap  # sharded or not, every target lands exactly once


def test_config_checksum_is_the_sha256_of_the_config_file_and_follows_it(
    helm: Helm, chart_tree: Path
) -> None:
    def render(level: str) -> tuple[str, str]:
        docs = helm.template(chart_tree, "--set", f"config.log_level={level}")
        data = only(docs, "ConfigMap")["data"]["config.yaml"]
        checksum = only(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return data, checksum

    info_data, info_sum = render("info")
    debug_data, debug_sum = render("debug")
    assert info_sum == hashlib.sha256(info_data.rstrip("\n").encode()).hexdigest()
    assert debug_sum == hashlib.sha256(debug_data.rstrip("\n").encode()).hexdigest()
    assert info_sum != debug_sum
    assert render("info")[1] == info_sum  # stable when nothing changed


def test_chart_created_secret_holds_the_password_and_nothing_else_does(helm: Helm, chart_tree: Path) -> None:
    values = CHART / "ci" / "created-secret-values.yaml"
    password = yaml.safe_load(values.read_text(encoding="utf-8"))["secret"]["data"]["password"]
    docs = helm.template(chart_tree, "-f", str(values))
    secret = only(docs, "Secret")
    assert base64.b64decode(secret["data"]["password"]).decode() == password
    others = [d for d in docs if d["kind"] != "Secret"]
    assert password not in yaml.safe_dump_all(others)
    pod = only(docs, "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # the environment holds where the server listens (for sanlens healthcheck), never a credential
    assert "envFrom" not in container
    assert [e["name"] for e in container["env"]] == ["SANLENS_LISTEN"]
    assert all("valueFrom" not in e for e in container["env"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "credentials")
    cfg = load_config_text(only(docs, "ConfigMap")["data"]["config.yaml"])
    assert Path(cfg.ontap[0].auth.password_file or "").parent == Path(mount["mountPath"])
    assert (
        next(v for v in pod["volumes"] if v["name"] == "credentials")["secret"]["secretName"]
        == (secret["metadata"]["name"])
    )


@pytest.mark.parametrize(
    ("flag", "complaint"),
    [
        ("config.ontap[0].auth.password=hunter2", "additional properties 'password' not allowed"),
        ("config.ontap[0].auth.password_env=ONTAP_PW", "additional properties 'password_env' not allowed"),
        ("image.digest=latest", "/image/digest"),
        ("shards[0].name=East_1", "/shards/0/name"),
        ("serviceMonitor.interval=30", "/serviceMonitor/interval"),
        # the config part, generated from the exporter's config model (helm/build.py)
        ("config.ontap[0].max_records=0", "/config/ontap/0/max_records"),
        ("config.ontap[0].tables[0]=nope", "/config/ontap/0/tables/0"),
        ("config.ontap[0].poll_interval=5x", "/config/ontap/0/poll_interval"),
        ("config.hosts[0].name=sql01", "missing property 'url'"),
        (
            "config.diagnose.thresholds.latency_slo.data_warn=1",
            "additional properties 'data_warn' not allowed",
        ),
        (
            "config.diagnose.thresholds.latency_slo.min_iops=-1",
            "/config/diagnose/thresholds/latency_slo/min_iops",
        ),
        # the web config part, generated from exporter/sanlens/config/web.py (helm/build.py)
        (
            "webConfig.config.tls_server_config.cert_fiel=/x",
            "additional properties 'cert_fiel' not allowed",
        ),
        (
            "webConfig.config.basic_auth_users.prometheus=plain",
            "/webConfig/config/basic_auth_users/prometheus",
        ),
        (
            "webConfig.config.tls_server_config.min_version=TLS14",
            "/webConfig/config/tls_server_config/min_version",
        ),
        ("webConfig.probes=grpc", "/webConfig/probes"),
        ("serviceMonitor.basicAuth.username.name=x", "/serviceMonitor/basicAuth"),
    ],
)
def test_schema_refuses_bad_values_with_their_path(
    helm: Helm, chart_tree: Path, flag: str, complaint: str
) -> None:
    base = [
        "-f",
        str(helm.base_values),
        "--set",
        "config.ontap[0].name=a",
        "--set",
        "config.ontap[0].url=https://a",
    ]
    p = helm.run("template", "x", str(chart_tree), *base, "--set", flag, check=False)
    assert p.returncode != 0
    assert complaint in p.stderr, p.stderr
    assert "hunter2" not in p.stderr


# ------------------------------------------------------------------ PrometheusRule and dashboards


def _rendered_rules(helm: Helm, chart_tree: Path, *args: str) -> dict[str, Any]:
    docs = helm.template(chart_tree, "--set", "prometheusRule.enabled=true", *args)
    return only(docs, "PrometheusRule")


def test_prometheusrule_is_the_rules_file_verbatim_and_promtool_accepts_it(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    promtool = require_tool("promtool")
    source = yaml.safe_load((chart_tree / "files" / "sanlens.rules.yaml").read_text(encoding="utf-8"))
    rule = _rendered_rules(helm, chart_tree)
    # {{ $labels }} templates and every other field survive rendering unchanged
    assert rule["spec"]["groups"] == source["groups"]
    templated = [
        v
        for g in source["groups"]
        for r in g["rules"]
        for v in (r.get("annotations") or {}).values()
        if "{{" in v
    ]
    assert templated, "the rules file has no templated annotation to check"
    spec = tmp_path / "spec.rules.yaml"
    spec.write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    p = subprocess.run([promtool, "check", "rules", str(spec)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    n_rules = sum(len(g["rules"]) for g in source["groups"])
    assert f"{n_rules} rules found" in p.stdout, p.stdout


def test_prometheusrule_base_urls_and_extra_labels_are_overridable(helm: Helm, chart_tree: Path) -> None:
    source = yaml.safe_load((chart_tree / "files" / "sanlens.rules.yaml").read_text(encoding="utf-8"))
    rule = _rendered_rules(
        helm,
        chart_tree,
        "--set",
        "prometheusRule.runbookBaseURL=https://wiki.example.com/sre/runbooks/",
        "--set",
        "prometheusRule.dashboardBaseURL=https://grafana.example.com",
        "--set",
        "prometheusRule.additionalRuleLabels.team=storage",
    )
    pairs = [
        (src, out)
        for sg, og in zip(source["groups"], rule["spec"]["groups"], strict=True)
        for src, out in zip(sg["rules"], og["rules"], strict=True)
        if "alert" in src
    ]
    assert pairs
    for src, out in pairs:
        ann, got = src.get("annotations") or {}, out.get("annotations") or {}
        if "runbook_url" in ann:
            file = ann["runbook_url"].rsplit("/", 1)[1]
            assert got["runbook_url"] == f"https://wiki.example.com/sre/runbooks/{file}"
        if "dashboard_url" in ann and "/d/" in ann["dashboard_url"]:
            tail = ann["dashboard_url"].split("/d/", 1)[1]
            assert got["dashboard_url"] == f"https://grafana.example.com/d/{tail}"
        assert out["labels"] == {"team": "storage", **(src.get("labels") or {})}
        assert out["expr"] == src["expr"]
    assert any("runbook_url" in (s.get("annotations") or {}) for s, _ in pairs)


def test_dashboard_configmaps_carry_each_dashboard_unchanged(helm: Helm, chart_tree: Path) -> None:
    files = sorted((chart_tree / "files" / "dashboards").glob("*.json"))
    docs = helm.template(chart_tree, "--set", "dashboards.enabled=true")
    cms = [d for d in kinds(docs, "ConfigMap") if d["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(cms) == len(files)
    by_key = {k: v for cm in cms for k, v in cm["data"].items()}
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert by_key[f.name].strip() == text.strip()
        json.loads(by_key[f.name])
    assert all(len(cm["metadata"]["name"]) <= 63 for cm in cms)


def test_the_harvest_switch_ships_the_overview_and_the_evidence_on_harvests_series(
    helm: Helm, chart_tree: Path
) -> None:
    """dashboards.series=harvest: the counter dashboards would stay empty (sanlens exports no ONTAP
    counters when it reads Harvest's series), so the overview and the Harvest evidence dashboard ship."""
    dash = chart_tree / "files" / "dashboards"
    want = sorted([*dash.glob("*-overview.json"), *dash.glob("harvest/*.json")])
    assert len(want) == 2, want
    docs = helm.template(chart_tree, "--set", "dashboards.enabled=true", "--set", "dashboards.series=harvest")
    cms = [d for d in kinds(docs, "ConfigMap") if d["metadata"]["labels"].get("grafana_dashboard") == "1"]
    by_key = {k: v for cm in cms for k, v in cm["data"].items()}
    assert sorted(by_key) == sorted(f.name for f in want)
    for f in want:
        assert by_key[f.name].strip() == f.read_text(encoding="utf-8").strip()
    bad = helm.run("template", "sanlens", str(chart_tree), "-f", str(helm.base_values),
                   "--set", "dashboards.series=grafana", check=False)  # fmt: skip
    assert bad.returncode != 0 and "/dashboards/series" in bad.stderr, bad.stderr


def test_packaged_chart_contains_the_linked_files_byte_for_byte(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    helm.run("package", str(chart_tree), "--destination", str(tmp_path))
    (tgz,) = tmp_path.glob("sanlens-*.tgz")
    with tarfile.open(tgz) as tar:
        names = tar.getnames()
        rules = tar.extractfile("sanlens/files/sanlens.rules.yaml")
        assert rules is not None
        assert rules.read() == (chart_tree / "files" / "sanlens.rules.yaml").read_bytes()
        for f in (chart_tree / "files" / "dashboards").glob("*.json"):
            member = tar.extractfile(f"sanlens/files/dashboards/{f.name}")
            assert member is not None and member.read() == f.read_bytes()
    assert not [n for n in names if n.startswith(("sanlens/tests/", "sanlens/ci/"))]


# ------------------------------------------------------------------ the repo's chart, in place


def _need_real_sources() -> None:
    if not RULES.is_file():
        skip_or_fail(f"{RULES.relative_to(ROOT)} is not there yet (the alerting work writes it)")
    if not list(DASHBOARDS.glob("*.json")):
        skip_or_fail("dashboards/*.json are not there yet (the dashboards work writes them)")


def test_real_chart_in_place_follows_its_symlinks(helm: Helm) -> None:
    _need_real_sources()
    docs = helm.template(CHART, "-f", str(CHART / "ci" / "full-values.yaml"))
    rule = only(docs, "PrometheusRule")
    source = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert [g["name"] for g in rule["spec"]["groups"]] == [g["name"] for g in source["groups"]]
    names = {k for d in kinds(docs, "ConfigMap") for k in d["data"]}
    assert {f.name for f in DASHBOARDS.glob("*.json")} <= names


def test_real_chart_lints_strict(helm: Helm) -> None:
    _need_real_sources()
    p = helm.run("lint", "--strict", str(CHART), "-f", str(CHART / "ci" / "full-values.yaml"), check=False)
    assert p.returncode == 0, p.stdout + p.stderr


# ------------------------------------------------------------------ pinned tools, and the chart against the real server


def test_installed_tools_are_the_pinned_versions(helm: Helm) -> None:
    script = (ROOT / "scripts" / "install-go-tools.sh").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^([A-Z_]+_VERSION)=(v[\d.]+)$", script, flags=re.M))
    assert helm.run("version", "--short").stdout.startswith(pins["HELM_VERSION"])
    kubeconform = require_tool("kubeconform")
    out = subprocess.run([kubeconform, "-v"], capture_output=True, text=True, timeout=30).stdout
    assert out.strip() == pins["KUBECONFORM_VERSION"]
    plugins = helm.run("plugin", "list").stdout
    assert re.search(rf"^unittest\s+{re.escape(pins['HELM_UNITTEST_VERSION'].lstrip('v'))}\s", plugins, re.M)


def test_rendered_args_config_and_probes_work_against_the_exporter(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    """Run `sanlens serve` with the Deployment's own args and ConfigMap; probe its probe paths."""
    port = free_port()
    docs = helm.template(chart_tree, "--set", f"containerPort={port}")
    container = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    config = tmp_path / "config.yaml"
    config.write_text(only(docs, "ConfigMap")["data"]["config.yaml"], encoding="utf-8")
    args = [str(config) if a == "/etc/sanlens/config/config.yaml" else a for a in container["args"]]
    args = [f"127.0.0.1:{port}" if a == f":{port}" else a for a in args]
    sanlens = Path(sys.executable).parent / "sanlens"
    server = subprocess.Popen(
        [str(sanlens), "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        for probe in ("livenessProbe", "readinessProbe"):
            path = container[probe]["httpGet"]["path"]
            deadline = time.monotonic() + 20
            while True:
                assert server.poll() is None, server.stdout.read() if server.stdout else b""
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                        assert r.status == 200
                        break
                except OSError:
                    assert time.monotonic() < deadline, f"{probe} {path} never answered 200"
                    time.sleep(0.3)
    finally:
        server.terminate()
        server.wait(timeout=20)


# ------------------------------------------------------------------ the secured chart against the real server

SCRAPE_PASSWORD = "scrape-secret"  # what the bcrypt hash in ci/secured-values.yaml hashes


def _mounted(docs: list[dict[str, Any]], tmp: Path, tls_files: dict[str, Path]) -> list[str]:
    """The Deployment's args with its volumes laid out under ``tmp`` as the kubelet would mount them.

    The web config Secret's key becomes a file, the TLS Secret's keys are ``tls_files``; every
    mount path in the args, the container's environment (see ``_pod_env``) and the web config is
    rewritten to its folder under ``tmp``.
    """
    pod = only(docs, "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # /tmp (an emptyDir) stays the host's own
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"] if m["mountPath"] != "/tmp"}
    where = {name: tmp / name for name in mounts.values()}
    for d in where.values():
        d.mkdir(parents=True, exist_ok=True)
    at_mount = re.compile("|".join(re.escape(m) for m in sorted(mounts, key=len, reverse=True)))

    def local(text: str) -> str:
        return at_mount.sub(lambda m: str(where[mounts[m.group(0)]]), text)

    (where["config"] / "config.yaml").write_text(
        only(docs, "ConfigMap")["data"]["config.yaml"], encoding="utf-8"
    )
    secret = next(d for d in kinds(docs, "Secret") if d["metadata"]["name"].endswith("-web-config"))
    for key, value in secret["data"].items():
        (where["web-config"] / key).write_text(local(base64.b64decode(value).decode()), encoding="utf-8")
    if "web-tls" in where:
        for key, src in tls_files.items():
            shutil.copy(src, where["web-tls"] / key)
    env = {e["name"]: local(e["value"]) for e in container.get("env", []) if "value" in e}
    (tmp / "env.json").write_text(json.dumps(env), encoding="utf-8")
    return [local(a) for a in container["args"]]


def _pod_env(tmp: Path, port: int) -> dict[str, str]:
    """The container's environment as ``_mounted`` laid it out, listening on loopback at ``port``."""
    env = json.loads((tmp / "env.json").read_text(encoding="utf-8"))
    assert env["SANLENS_LISTEN"] == f":{port}"
    env["SANLENS_LISTEN"] = f"127.0.0.1:{port}"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SANLENS_")}
    return {**clean, **env}


def _exec_probe(
    container: dict[str, Any], probe: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The probe's exec command as the kubelet runs it in the container: `sanlens` is the venv's."""
    command = list(container[probe]["exec"]["command"])
    assert command[:2] == ["sanlens", "healthcheck"], command
    command[0] = str(Path(sys.executable).parent / "sanlens")
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)


def _until_probe_passes(
    server: subprocess.Popen[bytes], container: dict[str, Any], probe: str, env: dict[str, str]
) -> str:
    deadline = time.monotonic() + 20
    while True:
        assert server.poll() is None, server.stdout.read() if server.stdout else b""
        p = _exec_probe(container, probe, env)
        if p.returncode == 0:
            return p.stdout
        assert time.monotonic() < deadline, f"{probe} never passed: {p.stdout}{p.stderr}"
        time.sleep(0.3)


def _serve(args: list[str], port: int) -> subprocess.Popen[bytes]:
    args = [f"127.0.0.1:{port}" if a == f":{port}" else a for a in args]
    sanlens = Path(sys.executable).parent / "sanlens"
    return subprocess.Popen([str(sanlens), "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _until(proc: subprocess.Popen[bytes], attempt: Any, what: str) -> Any:
    deadline = time.monotonic() + 20
    while True:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else b""
        try:
            return attempt()
        except OSError:
            assert time.monotonic() < deadline, f"{what} never answered"
            time.sleep(0.3)


def test_secured_chart_serves_what_its_servicemonitor_scrapes_and_its_probes_reach(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    """ci/secured-values.yaml: TLS 1.3, client certificates and basic auth, run for real.

    The exporter runs with the Deployment's args, its web config Secret and a TLS Secret laid
    out as mounted; the ServiceMonitor's endpoint (scheme, CA, client certificate, server name,
    basic auth) scrapes /metrics, and the exec probes (`sanlens healthcheck` with the
    container's environment) pass while it runs and fail once it stops.
    """
    port = free_port()
    values = CHART / "ci" / "secured-values.yaml"
    # no targets: this is about the endpoints, and polls would reach for the network
    docs = helm.template(
        chart_tree, "-f", str(values), "--set", f"containerPort={port}", "--set-json", "config.ontap=[]"
    )
    endpoint = only(docs, "ServiceMonitor")["spec"]["endpoints"][0]
    tls, auth = endpoint["tlsConfig"], endpoint["basicAuth"]
    pki = make_pki(tmp_path / "pki", server_name=tls["serverName"])
    mounted = {"tls.crt": pki.server.cert, "tls.key": pki.server.key, "ca.crt": pki.ca}
    args = _mounted(docs, tmp_path / "pod", mounted)
    env = _pod_env(tmp_path / "pod", port)
    # the Secrets the ServiceMonitor names, as Prometheus would read them
    secrets: dict[tuple[str, str], Any] = {
        ("sanlens-tls", "ca.crt"): pki.ca,
        ("prometheus-scrape-tls", "tls.crt"): pki.client.cert,
        ("prometheus-scrape-tls", "tls.key"): pki.client.key,
        ("sanlens-scrape", "username"): "prometheus",
        ("sanlens-scrape", "password"): SCRAPE_PASSWORD,
    }

    def ref(selector: dict[str, Any]) -> Any:
        return secrets[(selector["name"], selector["key"])]

    def scrape(with_cert: bool = True, with_auth: bool = True) -> int:
        ctx = ssl.create_default_context(cafile=str(ref(tls["ca"]["secret"])))
        if with_cert:
            ctx.load_cert_chain(str(ref(tls["cert"]["secret"])), str(ref(tls["keySecret"])))
        headers = {}
        if with_auth:
            token = f"{ref(auth['username'])}:{ref(auth['password'])}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(token).decode()
        status, body = _https_get(port, ctx, tls["serverName"], endpoint["path"], headers)
        assert status != 200 or b"sanlens_build_info" in body
        return status

    assert endpoint["scheme"] == "https"
    container = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    server = _serve(args, port)
    try:
        for probe in ("livenessProbe", "readinessProbe"):
            out = _until_probe_passes(server, container, probe, env)
            assert f"https://127.0.0.1:{port}/" in out and "without a client certificate" in out, out
        assert _until(server, scrape, "the scrape") == 200
        assert scrape(with_auth=False) == 401
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.RemoteDisconnected)):
            scrape(with_cert=False)
    finally:
        server.terminate()
        server.wait(timeout=20)
    for probe in ("livenessProbe", "readinessProbe"):
        p = _exec_probe(container, probe, env)
        assert p.returncode == 1 and "connection refused" in p.stderr, p.stdout + p.stderr


def _https_get(
    port: int, ctx: ssl.SSLContext, server_name: str, path: str, headers: dict[str, str]
) -> tuple[int, bytes]:
    """GET over TLS to 127.0.0.1, the certificate checked against ``server_name`` (tlsConfig.serverName)."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname=server_name) as conn,
    ):
        head = [f"GET {path} HTTP/1.1", f"Host: {server_name}", "Connection: close"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        r = http.client.HTTPResponse(conn)  # type: ignore[arg-type]
        r.begin()
        return r.status, r.read()


def test_httpget_probes_reach_a_tls_and_basic_auth_exporter_as_the_kubelet_would(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    """webConfig.probes=httpGet: HTTPS without verifying the certificate, as the kubelet does, with the header."""
    port = free_port()
    hashed = bcrypt.hashpw(b"probe", bcrypt.gensalt(rounds=4)).decode()
    header = "Basic " + base64.b64encode(b"probe:probe").decode()
    docs = helm.template(
        chart_tree,
        "--set", f"containerPort={port}",
        "--set", "webConfig.enabled=true",
        "--set", "webConfig.probes=httpGet",
        "--set", "webConfig.tlsSecret.name=sanlens-tls",
        "--set", "webConfig.config.tls_server_config.cert_file=/etc/sanlens/tls/tls.crt",
        "--set", "webConfig.config.tls_server_config.key_file=/etc/sanlens/tls/tls.key",
        "--set-string", f"webConfig.config.basic_auth_users.probe={hashed}",
        "--set", "webConfig.probeHttpHeaders[0].name=Authorization",
        "--set-string", f"webConfig.probeHttpHeaders[0].value={header}",
    )  # fmt: skip
    pki = make_pki(tmp_path / "pki")
    args = _mounted(docs, tmp_path / "pod", {"tls.crt": pki.server.cert, "tls.key": pki.server.key})
    container = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    kubelet = ssl_unverified()
    server = _serve(args, port)
    try:
        for probe in ("livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            assert get["scheme"] == "HTTPS"
            url = f"https://127.0.0.1:{port}{get['path']}"
            headers = {h["name"]: h["value"] for h in get["httpHeaders"]}
            request = urllib.request.Request(url, headers=headers)

            def attempt(request: urllib.request.Request = request) -> int:
                with urllib.request.urlopen(request, timeout=2, context=kubelet) as r:
                    return int(r.status)

            assert _until(server, attempt, probe) == 200
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url, timeout=2, context=kubelet)
            assert e.value.code == 401
    finally:
        server.terminate()
        server.wait(timeout=20)


def ssl_unverified() -> ssl.SSLContext:
    """A client context that checks no certificate: what the kubelet's HTTPS probes do."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def test_exec_probes_run_sanlens_healthcheck_against_a_tls_and_basic_auth_exporter(
    helm: Helm, chart_tree: Path, tmp_path: Path
) -> None:
    """webConfig.probes=exec: each httpGet probe becomes `sanlens healthcheck --path PATH`."""
    port = free_port()
    hashed = bcrypt.hashpw(b"probe", bcrypt.gensalt(rounds=4)).decode()
    docs = helm.template(
        chart_tree,
        "--set", f"containerPort={port}",
        "--set", "webConfig.enabled=true",
        "--set", "webConfig.probes=exec",
        "--set", "webConfig.tlsSecret.name=sanlens-tls",
        "--set", "webConfig.config.tls_server_config.cert_file=/etc/sanlens/tls/tls.crt",
        "--set", "webConfig.config.tls_server_config.key_file=/etc/sanlens/tls/tls.key",
        "--set-string", f"webConfig.config.basic_auth_users.probe={hashed}",
    )  # fmt: skip
    container = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["exec"]["command"] == ["sanlens", "healthcheck", "--path", "/-/healthy"]
    assert container["readinessProbe"]["exec"]["command"] == ["sanlens", "healthcheck", "--path", "/-/ready"]
    assert container["livenessProbe"]["periodSeconds"] == 30 and "httpGet" not in container["livenessProbe"]
    pki = make_pki(tmp_path / "pki")
    args = _mounted(docs, tmp_path / "pod", {"tls.crt": pki.server.cert, "tls.key": pki.server.key})
    env = _pod_env(tmp_path / "pod", port)
    server = _serve(args, port)
    try:
        for probe in ("livenessProbe", "readinessProbe"):
            out = _until_probe_passes(server, container, probe, env)
            assert f"https://127.0.0.1:{port}/" in out and "401, basic auth required" in out, out
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_exec_probes_refuse_client_certificates_under_tls12(helm: Helm, chart_tree: Path) -> None:
    p = helm.run(
        "template", "x", str(chart_tree), "-f", str(helm.base_values),
        "--set", "webConfig.enabled=true",
        "--set", "webConfig.probes=exec",
        "--set", "webConfig.config.tls_server_config.cert_file=/t/tls.crt",
        "--set", "webConfig.config.tls_server_config.key_file=/t/tls.key",
        "--set", "webConfig.config.tls_server_config.client_auth_type=RequireAndVerifyClientCert",
        "--set", "webConfig.config.tls_server_config.client_ca_file=/t/ca.crt",
        "--set", "webConfig.config.tls_server_config.max_version=TLS12",
        check=False,
    )  # fmt: skip
    assert p.returncode != 0 and "needs TLS 1.3" in p.stderr, p.stderr
    assert "webConfig.probes=exec with client_auth_type RequireAndVerifyClientCert needs TLS 1.3" in p.stderr
