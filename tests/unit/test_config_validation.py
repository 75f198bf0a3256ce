"""The config is refused when `sanlens serve` could not run it, with every problem at once.

Each case here was once accepted by check-config and then broke serve (a zero interval
spinning a poller, a URL without a host, an unbindable listen address, a NaN threshold),
or crashed the loader itself (deep nesting, undecodable bytes).
"""

from __future__ import annotations

import base64
import codecs
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from pydantic import ValidationError

from sanlens.config import listen_problem, url_problem, yaml_doc
from sanlens.config import models as cfgmod
from sanlens.config.load import check_config, load_config, load_config_text
from sanlens.errors import ConfigError, ConfigErrors

ONTAP = "ontap:\n  - name: c1\n    url: https://c1.example.com\n"
# a cluster that serve can poll: with credentials (without them every poll is refused)
ONTAP_OK = ONTAP + "    auth: {username: u, password_env: PW}\n"
HOST = "hosts:\n  - name: h1\n    url: http://h1:9182/metrics\n"


def problems(text: str) -> list[ConfigError]:
    with pytest.raises(ConfigError) as ei:
        load_config_text(text, "c.yaml")
    return ei.value.problems


def only(text: str) -> ConfigError:
    found = problems(text)
    assert len(found) == 1, [p.located() for p in found]
    return found[0]


@pytest.mark.parametrize(
    ("text", "path", "line", "words"),
    [
        (ONTAP + "    poll_interval: 0s\n", "ontap[0].poll_interval", 4, "from 1s to 24h"),
        (ONTAP + "    poll_interval: 99999999999999999999999h\n", "ontap[0].poll_interval", 4, "24h"),
        (ONTAP + "    poll_interval: 25h\n", "ontap[0].poll_interval", 4, "24h"),
        (ONTAP + "    connect_timeout: 0s\n", "ontap[0].connect_timeout", 4, "more than 0s"),
        (ONTAP + "    read_timeout: 0s\n", "ontap[0].read_timeout", 4, "more than 0s"),
        (ONTAP + "    read_timeout: 2h\n", "ontap[0].read_timeout", 4, "at most 1h"),
        (HOST + "    poll_interval: 0s\n", "hosts[0].poll_interval", 4, "from 1s"),
        (HOST + "    timeout: 0s\n", "hosts[0].timeout", 4, "more than 0s"),
        ('ontap:\n  - name: c1\n    url: "https://"\n', "ontap[0].url", 3, "no host"),
        ('ontap:\n  - name: c1\n    url: "https://c1:99999/api"\n', "ontap[0].url", 3, "port"),
        ('ontap:\n  - name: c1\n    url: "https://c1:0"\n', "ontap[0].url", 3, "port"),
        ('ontap:\n  - name: c1\n    url: "https://c 1"\n', "ontap[0].url", 3, "spaces"),
        ('ontap:\n  - name: c1\n    url: "ftp://c1"\n', "ontap[0].url", 3, "https://"),
        ('hosts:\n  - name: h1\n    url: "http://:9182"\n', "hosts[0].url", 3, "no host"),
        ('hosts:\n  - name: h1\n    url: "http://256.1.1.1:9182"\n', "hosts[0].url", 3, "IPv4"),
        ('listen: ":99999"\n', "listen", 1, "port"),
        ('listen: "256.1.1.1:9999"\n', "listen", 1, "IPv4"),
        ('listen: "garbage"\n', "listen", 1, "host:port"),
        ('listen: "[::1]:9842"\n', "listen", 1, "IPv6"),
        (ONTAP + "    min_ops_for_latency: .nan\n", "ontap[0].min_ops_for_latency", 4, "finite"),
        (ONTAP + "    min_ops_for_latency: .inf\n", "ontap[0].min_ops_for_latency", 4, "finite"),
        (ONTAP + "    min_ops_for_latency: -1\n", "ontap[0].min_ops_for_latency", 4, "0 or more"),
        ('ontap:\n  - name: ""\n    url: https://c1\n', "ontap[0].name", 2, "empty"),
        ('hosts:\n  - name: "  "\n    url: http://h1\n', "hosts[0].name", 2, "empty"),
        (
            HOST + "    disks: [{disk: '1', queue_depth: -4}]\n",
            "hosts[0].disks[0].queue_depth",
            4,
            "1 or more",
        ),
        (
            HOST + "    disks:\n      - drive: 'E:'\n        paths: 0\n",
            "hosts[0].disks[0].paths",
            6,
            "1 or more",
        ),
        ("diagnose:\n  sustain_scale: .nan\n", "diagnose.sustain_scale", 2, "finite"),
    ],
)
def test_what_serve_cannot_run_is_refused_with_path_and_line(
    text: str, path: str, line: int, words: str
) -> None:
    p = only(text)
    assert (p.path, p.line) == (path, line), p.located()
    assert words in p.message


@pytest.mark.parametrize(
    "text",
    [
        ONTAP_OK + "    poll_interval: 24h\n    connect_timeout: 500ms\n    read_timeout: 1h\n",
        ONTAP_OK + "    min_ops_for_latency: 0\n    schema_refresh: 0s\n",
        ONTAP_OK + "    poll_interval: 1m30s\n    schema_refresh: 1d12h\n",
        'ontap:\n  - name: c1\n    url: "https://[fd00::1]:443/api"\n    auth: {cert_file: c.pem, key_file: k.pem}\n',
        'ontap:\n  - name: c1\n    url: "http://127.0.0.1:8080"\n',
        "hosts:\n  - name: w1\n    source: winrm\n    url: sql01\n",  # pywinrm builds the URL
        'hosts:\n  - name: w1\n    source: winrm\n    url: "https://sql01:5986/wsman"\n',
        "hosts:\n  - name: p1\n    source: perfmon\n    files: [a.csv]\n",
        'listen: "127.0.0.1:0"\n',
        'listen: "localhost:9842"\n',
        'listen: ":9842"\n',
        HOST + "    disks: [{disk: '1', queue_depth: 64, paths: 4}]\n",
    ],
)
def test_what_serve_runs_is_accepted(text: str) -> None:
    load_config_text(text)


def test_every_problem_is_reported_at_once_in_line_order() -> None:
    text = (
        'listen: "garbage"\n'  # 1
        "ontap:\n"
        "  - name: c1\n"  # 3
        "    url: ftp://c1\n"  # 4
        "    poll_interval: 0s\n"  # 5
        "    bogus: 1\n"  # 6
        "  - url: https://c2\n"  # 7: no name
        "    max_records: 0\n"  # 8
        "hosts:\n"
        "  - name: c1\n"  # 10: the name of ontap[0]
        "    url: http://h1:9182\n"
        "    queue_depth: 0\n"  # 12
        "  - name: p1\n"
        "    source: perfmon\n"  # 14: no files
    )
    found = problems(text)
    assert [(p.line, p.path) for p in found] == [
        (1, "listen"),
        (4, "ontap[0].url"),
        (5, "ontap[0].poll_interval"),
        (6, "ontap[0].bogus"),
        (7, "ontap[1].name"),
        (8, "ontap[1].max_records"),
        (10, "hosts[0].name"),
        (12, "hosts[0].queue_depth"),
        (14, "hosts[1].source"),
    ]
    with pytest.raises(ConfigErrors) as ei:
        load_config_text(text, "c.yaml")
    assert ei.value.count == 9 and (ei.value.path, ei.value.line) == ("listen", 1)
    assert str(ei.value).splitlines()[3] == "c.yaml:6: ontap[0].bogus: " + found[3].message


def test_check_config_adds_the_registry_and_the_files_with_their_lines(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "ontap:\n"
        "  - name: c1\n"
        "    url: https://c1\n"
        "    poll_interval: 0s\n"  # 4
        "    auth:\n"
        "      username: u\n"
        f"      password_file: {tmp_path / 'missing'}\n"  # 7
        "diagnose:\n"
        "  thresholds:\n"
        "    lun_iops_ceiling:\n"
        "      warning_fraction: 5\n"  # 11
    )
    with pytest.raises(ConfigErrors) as ei:
        check_config(f)
    assert [(p.line, p.path) for p in ei.value.problems] == [
        (4, "ontap[0].poll_interval"),
        (7, "ontap[0].auth.password_file"),
        (11, "diagnose.thresholds.lun_iops_ceiling.warning_fraction"),  # out of range
        (11, "diagnose.thresholds.lun_iops_ceiling.warning_fraction"),  # and above critical_fraction
    ]
    assert "--skip-files" in ei.value.hint
    with pytest.raises(ConfigErrors) as ei:
        check_config(f, files=False)
    assert [p.line for p in ei.value.problems] == [4, 11, 11]


def test_check_config_checks_the_thresholds_of_a_diagnose_section_with_other_problems(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("diagnose:\n  history: 5\n  thresholds:\n    lun_iops_ceiling: {warning_fraction: 5}\n")
    with pytest.raises(ConfigErrors) as ei:
        check_config(f)
    assert [(p.line, p.path) for p in ei.value.problems][:2] == [
        (2, "diagnose.history"),
        (4, "diagnose.thresholds.lun_iops_ceiling.warning_fraction"),
    ]


# ------------------------------------------------------------------ passwords
@pytest.mark.parametrize("password", ["pässwörd", "пароль€", "密码🔑"])
def test_any_password_is_accepted_and_sent_as_rfc7617_basic_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, password: str
) -> None:
    """requests alone would fail on non-Latin-1 at every poll; the exporter sends UTF-8 instead."""
    from sanlens.ontap.client import OntapClient

    secret = tmp_path / "pw"
    secret.write_text(password + "\n", encoding="utf-8")
    monkeypatch.setenv("SANLENS_TEST_PW", password)
    for auth in (
        f"{{username: mon, password: '{password}'}}",
        f"{{username: mon, password_file: '{secret}'}}",
        "{username: mon, password_env: SANLENS_TEST_PW}",
    ):
        f = tmp_path / "c.yaml"
        f.write_text(f"ontap:\n  - name: c1\n    url: https://c1\n    auth: {auth}\n", encoding="utf-8")
        target = check_config(f).ontap[0]
        assert target.auth.resolve_password() == password
        client = OntapClient(target)
        request = requests.Request("GET", "https://c1/api/cluster").prepare()
        assert client.session.auth is not None
        client.session.auth(request)
        pair = f"mon:{password}"
        try:
            expected = pair.encode("latin-1")  # what requests sends when it can
        except UnicodeEncodeError:
            expected = pair.encode("utf-8")  # RFC 7617's charset
        assert request.headers["Authorization"] == "Basic " + base64.b64encode(expected).decode()
        client.close()


def test_a_password_file_that_is_not_utf8_is_named_not_shown(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_bytes("sécret-ünlatin".encode("latin-1"))
    f = tmp_path / "c.yaml"
    f.write_text(
        "ontap:\n  - name: c1\n    url: https://c1\n    auth:\n      username: u\n"
        f"      password_file: {secret}\n"
    )
    with pytest.raises(ConfigErrors) as ei:
        check_config(f)
    (p,) = ei.value.problems
    assert (p.path, p.line) == ("ontap[0].auth.password_file", 6)
    assert str(secret) in p.message and "UTF-8" in p.message
    assert "cret" not in p.message.replace(str(secret), "")


def test_password_files_with_a_bom_are_read_as_text(tmp_path: Path) -> None:
    """Notepad and PowerShell 5 write a byte-order mark (UTF-16 for `>`): the mark is not the password."""
    for data in (codecs.BOM_UTF8 + b"pw\r\n", "pw\r\n".encode("utf-16")):
        secret = tmp_path / "pw"
        secret.write_bytes(data)
        auth = cfgmod.AuthConfig(username="u", password_file=str(secret))
        assert auth.resolve_password() == "pw"


# ------------------------------------------------------------------ secrets never echoed
@pytest.mark.parametrize(
    "text",
    [
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password: 424242}\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password: [s3cr3t]}\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password: *s3cr3t}\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password: !s3cr3t x}\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, pasword: s3cr3t}\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    auth: s3cr3t\n",
        "ontap:\n  - name: c1\n    url: https://c1\n    password: s3cr3t\n",
        "ontap:\n  - name: c1\n    url: 'https://u:s3cr3t@c1:99999'\n",
        "log_level: s3cr3t\n",
        "hosts:\n  - name: h\n    url: http://h\n    queue_depth: s3cr3t\n",
    ],
)
def test_no_message_shows_a_value_that_may_be_a_secret(text: str) -> None:
    with pytest.raises(ConfigError) as ei:
        load_config_text(text, "c.yaml")
    assert "s3cr3t" not in str(ei.value) and "424242" not in str(ei.value)


def test_a_config_built_in_code_never_shows_a_secret_either() -> None:
    """The model's own ValidationError (objects built in code) hides inputs too, rules' included."""
    with pytest.raises(ValidationError) as ei:
        cfgmod.AuthConfig(username="u", password="s3cr3t", password_env="X")
    assert "s3cr3t" not in str(ei.value) and "password" in str(ei.value)
    with pytest.raises(ValidationError) as ei:
        cfgmod.Config.model_validate(
            {"ontap": [{"name": "c", "url": "https://u:s3cr3t@c:0", "auth": {"password": 424242}}]}
        )
    assert "s3cr3t" not in str(ei.value) and "424242" not in str(ei.value)


# ------------------------------------------------------------------ files the loader cannot read
@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_config_files_with_a_byte_order_mark_are_read(tmp_path: Path, codec: str) -> None:
    f = tmp_path / "c.yaml"
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(codec, b"")
    f.write_bytes(bom + (ONTAP_OK + "    poll_interval: 2m\n").encode(codec))
    assert load_config(f).ontap[0].poll_interval == 120


def test_a_config_that_is_not_utf8_names_the_line_not_the_bytes(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(
        b"ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password: s\xe9cr\xe9t}\n"
    )
    with pytest.raises(ConfigError) as ei:
        load_config(f)
    assert (ei.value.line, ei.value.file) == (4, str(f))
    assert "UTF-8" in str(ei.value) and "cr" not in ei.value.message


def test_utf16_without_a_byte_order_mark_is_named(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(ONTAP.encode("utf-16-le"))
    with pytest.raises(ConfigError, match="UTF-16 without a byte-order mark"):
        load_config(f)


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "a: " + "{b: " * 5_000 + "1" + "}" * 5_000 + "\n",
        "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "x\n",
        "hosts:\n" + "- " * 50_000 + "x\n",
    ],
    ids=["flow-lists", "flow-maps", "block-maps", "block-lists"],
)
def test_deep_nesting_is_refused_with_a_message_not_a_crash(text: str) -> None:
    with pytest.raises(ConfigError, match="nested more than 32 levels deep") as ei:
        load_config_text(text)
    assert ei.value.line is not None


class _ShallowLibrary(yaml.SafeLoader):
    """A YAML library that refuses nesting itself, early and in its own words, as libyaml 0.2.5+ does."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= 8:
            raise yaml.scanner.ScannerError(
                "while opening a bracket", None, "too deep for this library", self.get_mark()
            )
        super().fetch_flow_collection_start(TokenClass)


@pytest.mark.parametrize("depth", [40, 100_000])
def test_deep_nesting_reads_the_same_whichever_library_refuses_it_first(
    monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """sanlens's limit is named even when the YAML library stops the document first."""
    monkeypatch.setattr(yaml_doc, "_SafeLoader", _ShallowLibrary)
    text = "a: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(ConfigError, match="nested more than 32 levels deep") as ei:
        load_config_text(text, "c.yaml")
    assert "too deep for this library" not in str(ei.value)
    assert ei.value.line == 1


def test_a_library_refusal_under_sanlens_limits_keeps_the_library_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nesting of 10 is within sanlens's 32 levels, so the library's own refusal is what the user reads."""
    monkeypatch.setattr(yaml_doc, "_SafeLoader", _ShallowLibrary)
    with pytest.raises(ConfigError, match="too deep for this library") as ei:
        load_config_text("a: " + "[" * 10 + "]" * 10 + "\n", "c.yaml")
    assert "nested more than" not in str(ei.value)
    assert ei.value.line == 1


def test_alias_bombs_and_recursive_aliases_are_refused() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(ConfigError, match="once aliases are expanded"):
        load_config_text("\n".join(levels) + "\n")
    with pytest.raises(ConfigError, match="inside"):
        load_config_text("hosts: &a [*a]\n")


def test_a_file_larger_than_the_cap_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cfgmod, "MAX_CONFIG_BYTES", 4096)
    f = tmp_path / "c.yaml"
    f.write_text("# padding\n" * 1000)
    with pytest.raises(ConfigError, match="larger than") as ei:
        load_config(f)
    assert ei.value.hint
    with pytest.raises(ConfigError, match="larger than"):
        load_config_text("# padding\n" * 1000)


def test_yaml_syntax_errors_have_a_line_and_a_hint() -> None:
    with pytest.raises(ConfigError) as ei:
        load_config_text("hosts:\n\t- name: x\n")
    assert ei.value.line == 2 and "tab" in ei.value.message and ei.value.hint
    with pytest.raises(ConfigError) as ei:
        load_config_text("listen: ':9842'\n---\nlisten: ':9843'\n")
    assert ei.value.line == 2 and "single document" in ei.value.message


def test_merge_keys_repeat_a_target_and_explicit_keys_win() -> None:
    cfg = load_config_text(
        "hosts:\n  - &base {name: h1, url: 'http://h1:9182', queue_depth: 8}\n  - <<: *base\n    name: h2\n"
    )
    assert [(h.name, h.queue_depth, h.url) for h in cfg.hosts] == [
        ("h1", 8, "http://h1:9182"),
        ("h2", 8, "http://h1:9182"),
    ]


# ------------------------------------------------------------------ scale
def test_100k_aliased_hosts_validate_fast_with_one_duplicate_report() -> None:
    """A quadratic duplicate check took ~40 s here; one pass over the names takes milliseconds."""
    text = "hosts:\n  - &h {name: h, url: 'http://h:9182/metrics'}\n" + "  - *h\n" * 99_999
    start = time.perf_counter()
    with pytest.raises(ConfigErrors) as ei:
        load_config_text(text, "c.yaml")
    elapsed = time.perf_counter() - start
    assert elapsed < 5, f"{elapsed:.1f}s"
    (p,) = ei.value.problems
    # an alias is its anchor's node: the line is where the host is written
    assert (p.path, p.line) == ("hosts[1].name", 2) and "100000 times" in p.message


def test_10k_distinct_hosts_validate_in_linear_time() -> None:
    """10,000 hosts, what one serve polls: bench/config_load.py measured 0.3-0.4 s for them (and 8-17 s
    for 100,000 on a shared CI machine, too close to a bound to test without flakes)."""
    text = "hosts:\n" + "".join(f"  - {{name: h{i}, url: 'http://h{i}:9182'}}\n" for i in range(10_000))
    text += "  - {name: h7, url: 'http://h7:9182'}\n"
    start = time.perf_counter()
    with pytest.raises(ConfigErrors) as ei:
        load_config_text(text, "c.yaml")
    elapsed = time.perf_counter() - start
    assert elapsed < 5, f"{elapsed:.1f}s"
    (p,) = ei.value.problems
    assert (p.path, p.line) == ("hosts[10000].name", 10_002) and "'h7' is used 2 times" in p.message
    assert "first at hosts[7], line 9" in p.message


# ------------------------------------------------------------------ address helpers
def test_url_and_listen_checks_agree_with_their_patterns() -> None:
    """The helpers explain a refusal; the patterns (also the chart's) decide it."""
    import re

    urls = [
        "https://c1",
        "https://",
        "https://c1:0",
        "https://c1:65535/x?y#z",
        "http://[::1]:80",
        "https://a b",
    ]
    for url in urls:
        assert (url_problem(url) is None) == bool(re.match(cfgmod.URL_PATTERN, url)), url
    for listen in [":9842", ":0", ":65536", "0.0.0.0:1", "300.0.0.1:1", "host_1:80", "x", "*:80"]:
        assert (listen_problem(listen) is None) == bool(re.match(cfgmod.LISTEN_PATTERN, listen)), listen
    # a final newline: Python's $ lets it through, Go's (the chart's) does not; neither do we
    assert url_problem("https://c1\n") and listen_problem(":9842\n")


# ------------------------------------------------------------------ the chart's schema agrees
def _schema_and_exporter(cfg: dict[str, object]) -> tuple[bool, bool]:
    import json

    import jsonschema
    import yaml

    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "helm/sanlens/values.schema.json").read_text(encoding="utf-8"))
    in_schema = jsonschema.Draft7Validator(schema["properties"]["config"]).is_valid(cfg)
    try:
        load_config_text(yaml.safe_dump(cfg))
    except ConfigError:
        return in_schema, False
    return in_schema, True


@pytest.mark.parametrize(
    ("host", "valid"),
    [
        ({"url": "http://h:9182"}, True),
        ({"url": "http://h:99999"}, False),
        ({"url": "h:9182"}, False),  # windows_exporter needs a scheme
        ({"source": "winrm", "url": "h:5985"}, True),  # pywinrm builds the URL
        ({"source": "winrm", "url": "https://h:5986/wsman"}, True),
        ({"source": "winrm", "url": "h:0"}, False),
        ({"source": "perfmon", "files": ["a.csv"], "url": "anything"}, True),  # ignored
        ({"url": "http://h", "disks": [{"disk": "1", "queue_depth": 1, "paths": 1}]}, True),
        ({"url": "http://h", "disks": [{"disk": "1", "queue_depth": 0}]}, False),
        ({"url": "http://h", "disks": [{"disk": "1", "paths": -2}]}, False),
        ({"url": "http://h", "disks": [{"disk": "1", "queue_depth": None}]}, True),
        ({"url": "http://h", "poll_interval": 86400, "timeout": 3600}, True),
        ({"url": "http://h", "poll_interval": 86401}, False),
        ({"url": "http://h", "timeout": 0}, False),
        ({"url": "http://h", "name": ""}, False),
    ],
)
def test_the_chart_schema_and_the_exporter_agree_on_hosts(host: dict[str, object], valid: bool) -> None:
    """What helm/build.py restates beyond its generic bound samples: host urls by source, disks."""
    assert _schema_and_exporter({"hosts": [{"name": "h", **host}]}) == (valid, valid)


# ------------------------------------------------------------------ values the YAML layer cannot read
@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("listen: !!int x\n", "listen"),
        ("diagnose: {sustain_scale: !!float y}\n", "diagnose.sustain_scale"),
        ("listen: !!timestamp 2001-13-45\n", "listen"),
        ("listen: !!binary '%%%'\n", "listen"),
        ("diagnose:\n  history: " + "1" * 5000 + "\n", "diagnose.history"),
        ("listen: ':" + "9" * 5000 + "'\n", "listen"),
        ("ontap:\n  - name: c1\n    url: 'https://c1:" + "9" * 5000 + "'\n", "ontap[0].url"),
    ],
)
def test_values_yaml_or_int_cannot_read_are_located_problems(text: str, path: str) -> None:
    assert only(text).path == path


def test_a_path_holding_a_nul_is_a_located_problem(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "ontap:\n  - name: c1\n    url: https://c1\n"
        '    tls: {ca_file: "/etc/\\0ca.pem"}\n'
        '    auth: {username: u, password_file: "/run/\\0pw"}\n'
    )
    with pytest.raises(ConfigErrors) as ei:
        check_config(f)
    assert [(p.path, p.line) for p in ei.value.problems] == [
        ("ontap[0].tls.ca_file", 4),
        ("ontap[0].auth.password_file", 5),
    ]
    assert all("NUL" in p.message and "\0" not in p.message for p in ei.value.problems)
