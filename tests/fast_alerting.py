"""Production rules and Alertmanager routing with their waits cut to seconds, for end-to-end tests
that must see a page arrive: only the timings are the test's own, every expression, template,
route and inhibition is what ships."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conftest import ROOT

RULES = ROOT / "rules" / "sanlens.rules.yaml"
AM_CONFIG = ROOT / "examples" / "alertmanager" / "alertmanager.yml"


def fast_rules(path: Path) -> Path:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    for group in doc["groups"]:
        group.pop("interval", None)
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "1s"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100_000), encoding="utf-8")
    return path


def fast_alertmanager(
    enqueue_url: str, key_file: Path, ticket_url: str = "http://127.0.0.1:9/"
) -> dict[str, Any]:
    cfg = yaml.safe_load(AM_CONFIG.read_text(encoding="utf-8"))
    cfg["route"].update(group_wait="1s", group_interval="2s", repeat_interval="1h")
    for route in cfg["route"].get("routes", []):
        route.update(group_wait="1s", group_interval="2s")
    (pd,) = next(r for r in cfg["receivers"] if r["name"] == "pagerduty")["pagerduty_configs"]
    pd["routing_key_file"] = str(key_file)
    pd["url"] = enqueue_url
    (hook,) = next(r for r in cfg["receivers"] if r["name"] == "tickets")["webhook_configs"]
    hook["url"] = ticket_url
    return cfg
