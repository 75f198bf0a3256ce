"""`sanlens` exits 2 for wrong arguments or config, 1 for a failure while running; one `error:` line.

Every case runs the installed console script in a subprocess, as a user would, and checks
the exit code, exactly one line starting with ``error:``, a ``hint:`` line, and no
traceback (``--debug`` adds one).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SANLENS = str(Path(sys.executable).with_name("sanlens"))


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SANLENS, *argv], capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def assert_fails(p: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert p.returncode == code, p.stderr
    assert len(errors) == 1, p.stderr
    assert any(line.startswith("hint: ") for line in p.stderr.splitlines()), p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    for word in words:
        assert word in errors[0], p.stderr
    return errors[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port something already listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.fixture
def empty_config(tmp_path: Path) -> Path:
    f = tmp_path / "sanlens.yaml"
    f.write_text("listen: '127.0.0.1:0'\n")
    return f


@pytest.mark.parametrize(
    ("listen", "words"),
    [
        ("garbage", "host:port"),
        (":99999", "port"),
        ("256.1.1.1:9999", "IPv4"),
        (":-1", "port"),
    ],
)
def test_serve_with_a_bad_listen_address_is_a_usage_error(
    empty_config: Path, listen: str, words: str
) -> None:
    assert_fails(run("serve", "--config", str(empty_config), "--listen", listen), 2, "--listen", words)


def test_serve_on_a_taken_port_is_a_runtime_failure(empty_config: Path, taken_port: int) -> None:
    p = run("serve", "--config", str(empty_config), "--listen", f"127.0.0.1:{taken_port}")
    assert_fails(p, 1, f"cannot listen on 127.0.0.1:{taken_port}")
    assert "another process" in p.stderr


def test_serve_on_a_taken_port_from_the_config(tmp_path: Path, taken_port: int) -> None:
    f = tmp_path / "sanlens.yaml"
    f.write_text(f"listen: '127.0.0.1:{taken_port}'\n")
    assert_fails(run("serve", "--config", str(f)), 1, "cannot listen")


def test_serve_with_a_bad_config_lists_every_problem(tmp_path: Path) -> None:
    f = tmp_path / "sanlens.yaml"
    f.write_text("listen: ':99999'\nontap:\n  - name: c1\n    url: 'https://'\n    poll_interval: 0s\n")
    p = run("serve", "--config", str(f))
    assert_fails(p, 2, "3 problems")
    for where in ("sanlens.yaml:1: listen", "sanlens.yaml:4: ontap[0].url", "sanlens.yaml:5: ontap[0].poll"):
        assert where in p.stderr


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("listen: ':9842'\n".encode("utf-16-le"), "UTF-16 without a byte-order mark"),
        (b"ontap:\n  - name: caf\xe9\n", "not UTF-8"),
        (b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested"),
        (b"hosts:\n\t- name: x\n", "tab"),
        (b"hosts: *nowhere\n", "alias"),
        (b"- just a list\n", "top level"),
    ],
    ids=["utf16-no-bom", "latin1", "deep", "tab", "undefined-alias", "not-a-mapping"],
)
def test_config_files_that_cannot_be_decoded_or_parsed(tmp_path: Path, data: bytes, words: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(data)
    assert_fails(run("check-config", str(f)), 2, words)


def test_check_config_of_a_missing_file(tmp_path: Path) -> None:
    assert_fails(run("check-config", str(tmp_path / "nope.yaml")), 2, "cannot read")


def test_check_config_accepts_utf16_with_a_byte_order_mark(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    text = "ontap:\n  - name: c1\n    url: https://c1\n    auth: {username: u, password_env: PW}\n"
    f.write_bytes(text.encode("utf-16"))
    p = run("check-config", "--skip-files", str(f))
    assert p.returncode == 0 and "OK (1 ONTAP target(s)" in p.stdout, p.stderr


def test_check_config_reads_the_password_files_unless_told_not_to(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_bytes("secret-ünicode".encode("latin-1"))
    f = tmp_path / "c.yaml"
    f.write_text(
        f"ontap:\n  - name: c1\n    url: https://c1\n    auth: {{username: u, password_file: '{secret}'}}\n"
    )
    p = run("check-config", str(f))
    line = assert_fails(p, 2, "c.yaml:4: ontap[0].auth.password_file", str(secret), "UTF-8")
    assert "secret" not in line.replace(str(secret), "")
    assert "--skip-files" in p.stderr
    assert run("check-config", "--skip-files", str(f)).returncode == 0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["simulate", "--port", "-1"], "--port"),
        (["simulate", "--port", "70000"], "--port"),
        (["simulate", "--nodes", "-3"], "nodes"),
        (["simulate", "--rebuild-after-s", "nan"], "--rebuild-after-s"),
        (["simulate", "--scenario", "bogus"], "--scenario"),
        (["simulate", "--host", "256.1.1.1"], "--host"),
        (["demo", "--scenario", "bogus"], "--scenario"),
        (["demo", "--port", "-1"], "--port"),
        (["demo", "--fa-ports", "99"], "fa_ports"),
        (["demo", "--duration", "-5"], "--duration"),
        (["serve"], "--config"),
        (["bogus"], "bogus"),
        ([], "COMMAND"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], words: str) -> None:
    assert_fails(run(*argv), 2, words)


@pytest.mark.parametrize("command", ["simulate", "demo"])
def test_simulator_and_demo_on_a_taken_port_are_runtime_failures(command: str, taken_port: int) -> None:
    flag = "--port" if command == "simulate" else "--sim-port"
    assert_fails(run(command, flag, str(taken_port), "--scenario", "healthy"), 1, "cannot listen")


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_adds_the_traceback(empty_config: Path, taken_port: int, where: str) -> None:
    argv = ["serve", "--config", str(empty_config), "--listen", f"127.0.0.1:{taken_port}"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    p = run(*argv)
    assert p.returncode == 1 and "Traceback" in p.stderr and "OSError" in p.stderr
    assert p.stderr.rstrip().splitlines()[-2].startswith("error: cannot listen")


def test_an_unexpected_error_names_its_type_and_place_not_its_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug's message may hold anything (a password, a path): only --debug shows it."""
    from sanlens import cli
    from sanlens.config import load

    def boom(path: str, files: bool = True, warn: object = None) -> None:
        raise ValueError("s3cr3t inside")

    monkeypatch.setattr(load, "check_config", boom)  # the command imports the reader when it runs
    assert cli.main(["check-config", "x.yaml"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unexpected ValueError in test_cli_exit_codes.py:") and "s3cr3t" not in err
    assert "hint: rerun with --debug" in err and "Traceback" not in err
    assert cli.main(["--debug", "check-config", "x.yaml"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_analyze_ends_without_teardown_and_loses_nothing_written(tmp_path: Path) -> None:
    """`analyze` leaves its process without the interpreter's teardown (cli.FAST_EXIT): a report of
    tens of kilobytes on a pipe (its last buffer too) arrives whole, its warnings and errors too, with the exit code."""
    from sanlens.cli import FAST_EXIT

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from perfmon_logs import disk_columns, write_log

    assert "analyze" in FAST_EXIT and "serve" not in FAST_EXIT
    disks = [str(d) for d in range(24)]
    columns = [c for d in disks for c in disk_columns("SQL01", f"{d} C:")]
    rows = [
        (1_740_909_600.0 + 15 * i, [float(i % 7 + j % 5) for j in range(len(columns))]) for i in range(400)
    ]
    log = write_log(tmp_path / "big.csv", columns, rows)
    # stdout block-buffered, as on any pipe: the last buffer is what a skipped teardown would lose
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SANLENS, *argv], capture_output=True, text=True, timeout=60, env=env, check=False
        )

    p = run("analyze", str(log), "--format", "json", "--quiet")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) > 40_000 and p.stdout.endswith("}\n")
    doc = json.loads(p.stdout)
    assert doc["inputs"][0]["samples"] == 400 and len(doc["series"]) == len(columns)
    p = run("analyze", str(log), str(tmp_path / "missing.csv"), "--format", "json", "--quiet")
    assert p.returncode == 2
    assert "error: " in p.stderr and "missing.csv" in p.stderr
    assert json.loads(p.stdout)["inputs"][1]["kind"] == "unreadable"
    # started with no stdout at all (closed by the shell): the report file is whole, the exit clean
    html = tmp_path / "report.html"
    argv = [SANLENS, "analyze", str(log), "--format", "html", "-o", str(html), "--quiet"]
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert html.read_text().rstrip().endswith("</html>")
