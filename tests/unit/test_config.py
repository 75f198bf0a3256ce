from __future__ import annotations

import subprocess
import sys

import pytest

from sanlens.config import counter_tables, parse_duration
from sanlens.config.load import load_config_text
from sanlens.errors import ConfigError

GOOD = """\
listen: ":9842"
ontap:
  - name: c1
    url: https://cluster1.example.com
    auth:
      username: monitor
      password_file: /run/secrets/c1
    tls:
      ca_file: /etc/ssl/ca.pem
    poll_interval: 2m
hosts:
  - name: sql01
    url: http://sql01:9182/metrics
    disks:
      - drive: "E:"
        cluster: c1
        svm: svm1
        lun: /vol/sql_data/lun0
        data_class: data
"""


def test_good_config_parses_with_defaults() -> None:
    cfg = load_config_text(GOOD)
    t = cfg.ontap[0]
    assert t.poll_interval == 120.0
    assert t.tables == counter_tables() and "fcp" in t.tables and "sysstat" not in t.tables
    assert t.tls.insecure_skip_verify is False
    assert cfg.hosts[0].queue_depth == 32
    assert cfg.hosts[0].disks[0].drive == "E:"


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ("ontap:\n  - name: c1\n    url: https://x\n    bogus: 1\n", "ontap[0].bogus", 4),
        ("ontap:\n  - name: c1\n    url: https://x\n    poll_interval: fast\n", "ontap[0].poll_interval", 4),
        (
            "ontap:\n  - name: c1\n    url: https://x\n    tls:\n      insecure_skip_verify: maybe\n",
            "ontap[0].tls.insecure_skip_verify",
            5,
        ),
        ("hosts:\n  - name: h\n    url: http://h\n    queue_depth: '32'\n", "hosts[0].queue_depth", 4),
        ("ontap:\n  - url: https://x\n", "ontap[0].name", 2),
        ("ontap:\n  - name: c\n    url: https://x\n    tables: [lun, nope]\n", "ontap[0].tables", 4),
    ],
)
def test_errors_name_key_path_and_line(text: str, path: str, line: int) -> None:
    with pytest.raises(ConfigError) as ei:
        load_config_text(text, "f.yaml")
    assert ei.value.path == path
    assert ei.value.line == line
    assert f"f.yaml:{line}" in str(ei.value)


def test_password_sources_are_exclusive_and_secret_never_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="only one"):
        load_config_text(
            "ontap:\n - name: c\n   url: https://x\n   auth: {username: u, password_env: A, "
            "password_file: /f}\n"
        )
    cfg = load_config_text(
        "ontap:\n - name: c\n   url: https://x\n   auth: {username: u, password: s3cr3t}\n"
    )
    assert "s3cr3t" not in repr(cfg)
    monkeypatch.setenv("SANLENS_PW", "fromenv")
    cfg = load_config_text(
        "ontap:\n - name: c\n   url: https://x\n   auth: {username: u, password_env: SANLENS_PW}\n"
    )
    assert cfg.ontap[0].auth.resolve_password() == "fromenv"


def test_durations() -> None:
    assert parse_duration("500ms") == 0.5
    assert parse_duration("5m") == 300
    assert parse_duration("90") == 90
    with pytest.raises(ValueError):
        parse_duration("5 minutes")


def test_check_config_cli_exit_codes(tmp_path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text("ontap:\n  - name: c1\n    url: https://x\n    tls: {insecure: true}\n")
    ok = subprocess.run(
        [sys.executable, "-m", "sanlens", "check-config", "--skip-files", str(good)],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    # without --skip-files the files it names are read, as serve reads them: here they do not exist
    missing = subprocess.run(
        [sys.executable, "-m", "sanlens", "check-config", str(good)], capture_output=True, text=True
    )
    assert missing.returncode == 2
    assert "good.yaml:7: ontap[0].auth.password_file: cannot read" in missing.stderr
    assert "good.yaml:9: ontap[0].tls.ca_file: cannot read" in missing.stderr
    res = subprocess.run(
        [sys.executable, "-m", "sanlens", "check-config", str(bad)], capture_output=True, text=True
    )
    assert res.returncode == 2
    assert "ontap[0].tls.insecure" in res.stderr and "bad.yaml:4" in res.stderr
