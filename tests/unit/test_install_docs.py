"""What a new user reads first says what the product is and how to get it: Windows and Linux hosts,
one image recipe, an install for `analyze`, and the exact PerfMon counters it reads."""

from __future__ import annotations

import re
import tomllib

import yaml

from conftest import ROOT
from sanlens.hosts.catalogue import PERFMON

CAPTURE = (ROOT / "docs" / "capture.md").read_text(encoding="utf-8")
CHART = ROOT / "helm" / "sanlens"


def test_the_capture_page_lists_exactly_the_perfmon_counters_sanlens_reads() -> None:
    listed = re.findall(r"^\\PhysicalDisk\(\*\)\\(.+)$", CAPTURE, flags=re.M)
    assert sorted(listed) == sorted(c.name for c in PERFMON.counters)


def test_the_capture_page_has_the_linux_and_ontap_recipes_with_their_clocks() -> None:
    for text in ("iostat -dxt 60 30", "S_TIME_FORMAT=ISO", "sar -dp 60 30", "statistics show -object $obj -raw",
                 "cluster date show", "--tz", "logman create counter", "-f csv"):  # fmt: skip
        assert text in CAPTURE, text


def test_the_install_lines_name_the_distribution_and_its_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "sanlens" and "analyze" in project["optional-dependencies"]
    wheel = f"sanlens-{project['version']}-py3-none-any.whl"
    assert "pipx install '.[analyze]'" in CAPTURE and f"pip install '{wheel}[analyze]'" in CAPTURE
    assert "not published on PyPI" in CAPTURE


def test_readme_links_the_capture_page() -> None:
    assert "(docs/capture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_descriptions_say_windows_and_linux_hosts() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    for text in (project["description"], chart["description"], readme.split("\n\n")[1]):
        assert "Windows and Linux host" in " ".join(text.split()), text


def test_one_image_recipe_the_chart_readme_links_to() -> None:
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    assert "buildah bud" not in readme and "docker build" not in readme
    assert "(../../docs/container.md)" in readme


def test_egress_ports_reach_linux_hosts_and_prometheus() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    ports = values["networkPolicy"]["egress"]["ports"]
    assert {443, 9182, 5985, 5986, 9100, 9090} <= set(ports)
