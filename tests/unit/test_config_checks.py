"""What check-config tells a new user: credentials a cluster needs, URL schemes, Linux disk names,
an empty file, compound durations, and warnings located as errors are, in one format for every command."""

from __future__ import annotations

from pathlib import Path

import pytest

from sanlens.cli import main
from sanlens.config import parse_duration
from sanlens.config.load import check_config, load_config_text, print_config_error
from sanlens.errors import ConfigError

SECRET = "    auth: {username: u, password_env: PW}\n"


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as ei:
        load_config_text(text, "c.yaml", warn=lambda _: None)
    return [p.located() for p in ei.value.problems]


def warnings(text: str) -> list[str]:
    told: list[str] = []
    load_config_text(text, "c.yaml", warn=told.append)
    return told


# ------------------------------------------------------------------ a cluster's credentials
def test_a_cluster_without_credentials_is_an_error_at_its_entry() -> None:
    (p,) = problems("ontap:\n  - name: c1\n    url: https://c1\n")
    assert p.startswith("c.yaml:2: ontap[0].auth: no credentials") and "401" in p


def test_a_username_without_a_password_is_an_error_at_the_username() -> None:
    (p,) = problems("ontap:\n  - name: c1\n    url: https://c1\n    auth:\n      username: admin\n")
    assert p.startswith("c.yaml:5: ontap[0].auth.username: a username without a password")


@pytest.mark.parametrize(
    "auth",
    [
        "    auth: {username: u, password_file: /pw}\n",
        "    auth: {username: u, password_env: PW}\n",
        "    auth: {cert_file: c.pem, key_file: k.pem}\n",
    ],
)
def test_a_cluster_with_a_password_or_a_certificate_is_accepted(auth: str) -> None:
    assert warnings("ontap:\n  - name: c1\n    url: https://c1\n" + auth) == []


def test_no_credentials_on_a_loopback_address_is_a_warning_for_the_simulator() -> None:
    (w,) = warnings("ontap:\n  - name: sim\n    url: http://127.0.0.1:8443\n")
    assert w.startswith("c.yaml:2: ontap[0].auth: no credentials") and "simulator" in w


def test_a_harvest_prometheus_needs_no_credentials() -> None:
    text = "ontap:\n  - name: c1\n    source: prometheus\n    url: http://prometheus:9090\n"
    assert warnings(text) == []


# ------------------------------------------------------------------ URL schemes
@pytest.mark.parametrize("source", ["windows_exporter", "node_exporter"])
def test_a_host_url_without_a_scheme_is_told_the_schemes_a_host_takes(source: str) -> None:
    (p,) = problems(f"hosts:\n  - name: h1\n    source: {source}\n    url: h1:9182/metrics\n")
    assert p == "c.yaml:4: hosts[0].url: needs a scheme: http:// or https://"


def test_a_cluster_url_without_a_scheme_is_told_https() -> None:
    (p,) = problems("ontap:\n  - name: c1\n    url: c1.example.com\n" + SECRET)
    assert "ontap[0].url: needs a scheme: https:// (a cluster)" in p


def test_a_url_with_another_scheme_is_told_which_schemes_fit() -> None:
    (p,) = problems("hosts:\n  - name: h1\n    url: ftp://h1/metrics\n")
    assert p.endswith("hosts[0].url: the scheme must be http:// or https://")


# ------------------------------------------------------------------ Linux disks
@pytest.mark.parametrize(
    "host",
    [
        "    source: node_exporter\n    url: http://l1:9100/metrics\n",
        "    source: prometheus\n    exporter: node_exporter\n    selector: 'instance=\"l1\"'\n"
        "    url: http://prom:9090\n",
    ],
)
def test_a_drive_on_a_linux_host_is_an_error(host: str) -> None:
    text = "hosts:\n  - name: l1\n" + host + "    disks:\n      - drive: 'E:'\n        lun: /vol/v/l\n"
    (p,) = problems(text)
    assert "hosts[0].disks[0].drive: a Linux host has no drive letters" in p and "WWID" in p


def test_a_drive_on_a_windows_host_is_accepted() -> None:
    text = (
        "hosts:\n  - name: w1\n    url: http://w1:9182/metrics\n    disks: [{drive: 'E:', lun: /vol/v/l}]\n"
    )
    assert warnings(text) == []


# ------------------------------------------------------------------ durations
@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1m30s", 90), ("1h30m", 5400), ("1d12h", 129600), ("2h0m5s", 7205), ("1s500ms", 1.5), ("90", 90),
     ("1.5h", 5400), ("500ms", 0.5), ("1d", 86400)],
)  # fmt: skip
def test_compound_prometheus_durations_are_read(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30s1m", "1m30", "1.5m30s", "1m 30s", "m", ""])
def test_durations_out_of_order_or_without_a_unit_between_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_a_compound_poll_interval_passes_check_config() -> None:
    cfg = load_config_text(
        "ontap:\n  - name: c1\n    url: https://c1\n" + SECRET + "    poll_interval: 1m30s\n"
    )
    assert cfg.ontap[0].poll_interval == 90


# ------------------------------------------------------------------ what check-config prints
def test_an_empty_file_is_ok_with_a_warning_that_nothing_is_polled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "empty.yaml"
    f.write_text("")
    assert main(["check-config", str(f)]) == 0
    out, err = capsys.readouterr()
    assert (
        err
        == f"warning: {f}: no ontap targets and no hosts: nothing to poll (serve exposes only its own metrics)\n"
    )
    assert "OK (0 ONTAP target(s), 0 host(s), 1 warning(s))" in out


def test_an_inline_password_warning_names_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "ontap:\n  - name: c1\n    url: https://c1\n    auth:\n      username: u\n      password: pw\n"
    )
    assert main(["check-config", str(f)]) == 0
    err = capsys.readouterr().err
    assert (
        err
        == f"warning: {f}:6: ontap[0].auth.password: inline password; prefer password_file or password_env\n"
    )


def test_analyze_can_print_config_problems_as_check_config_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("ontap:\n  - name: c1\n    url: c1\nhosts:\n  - name: h1\n    url: h1\n")
    assert main(["check-config", "--skip-files", str(f)]) == 2
    from_check_config = capsys.readouterr().err
    with pytest.raises(ConfigError) as ei:
        check_config(f, files=False)
    assert print_config_error(ei.value, "check-config") == 2
    assert capsys.readouterr().err == from_check_config
    assert from_check_config.startswith(f"error: {f}: 2 problems\n  {f}:3: ontap[0].url: needs a scheme")
