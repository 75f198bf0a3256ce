"""The `sanlens` command.

Exit codes: 0 done, 2 the arguments or the config are wrong, 1 a valid request failed
while running, 130 interrupted. A failure prints one ``error:`` line and a ``hint:``
line on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from sanlens import __version__, cliargs
from sanlens.errors import ConfigError, SanlensError, UsageError, is_bind_error, listen_error
from sanlens.optional import ANALYZE, SIMULATOR, MissingPart, Part, load
from sanlens.urls import RedactingFilter

if TYPE_CHECKING:
    from sanlens.config import Config

log = logging.getLogger("sanlens")

DESCRIPTION = (
    "SAN performance diagnoses for NetApp ONTAP with Windows and Linux hosts: a Prometheus exporter "
    "(serve) and offline tools (analyze, plan). Exit codes: 0 done, 2 the arguments or the config are "
    "wrong, 1 a valid request failed while running, 130 interrupted. A failure prints one 'error:' line "
    "and a 'hint:' line on stderr; --debug adds the traceback."
)
# What `sanlens COMMAND --help` says first (the list of commands shows the short help).
DESCRIPTIONS = {
    "serve": "Run the exporter: poll the ONTAP clusters and the hosts of the config file and serve "
    "their metrics and diagnoses on /metrics. A config problem stops it (exit 2) before anything "
    "listens; SIGHUP reloads the config.",
    "demo": "Run the simulator and the exporter together, with short diagnosis windows: every metric "
    "and diagnosis of a scenario on :9842 without a cluster or a host.",
    "check-config": "Check a config file as serve reads it: every problem with its file, line and key "
    "(exit 2), a warning for what runs but is unsafe or polls nothing, then OK with the targets counted.",
    "analyze": "Diagnose captures offline: PerfMon logs, Linux iostat and sar text, ONTAP statistics "
    "captures (docs/capture.md says what to capture). Needs the sanlens[analyze] extra.",
    "plan": "Size LUNs and volumes for a workload on ONTAP, or estimate a rebuild, a migration or a "
    "bind at an EMC CLARiiON's rates (said in every answer).",
    "simulate": "Serve the simulator: an ONTAP REST API with windows_exporter and node_exporter pages.",
}

# Subcommands implemented in their own packages: name -> (module, help, the optional part it
# needs). Each module has add_arguments(p) and run(args). A module is imported only when its
# subcommand is the one run: `analyze` pulls in numpy, which `serve` must not carry, and the
# optional parts may not be installed at all.
SUBCOMMANDS: dict[str, tuple[str, str, Part | None]] = {
    "simulate": (
        "sanlens_sim.cli",
        "serve the simulator: ONTAP REST, windows_exporter, node_exporter",
        SIMULATOR,
    ),
    "analyze": ("sanlens.analyze.cli", "diagnose PerfMon logs and ONTAP captures offline", ANALYZE),
    "plan": ("sanlens.plan.cli", "size LUNs/volumes, or estimate rebuild/migrate time", None),
    "healthcheck": (
        "sanlens.serve.healthcheck",
        "is this container's `sanlens serve` up? exit 0 yes, 1 no",
        None,
    ),
}


def setup_logging(level: str = "info") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:  # no log line shows a URL's user info
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def checked_config(path: str, files: bool = True) -> Config:
    """The config as serve runs it: every problem at once in a ConfigError, which exits 2 through ``main``."""
    from sanlens.config.load import check_config  # YAML and the reader load for a command that reads a config

    return check_config(path, files=files)


def cmd_check_config(args: argparse.Namespace) -> int:
    warnings: list[str] = []

    def warn(text: str) -> None:
        warnings.append(text)
        print(f"warning: {text}", file=sys.stderr)

    from sanlens.config.load import check_config

    cfg = check_config(args.file, files=not args.skip_files, warn=warn)
    told = f", {len(warnings)} warning(s)" if warnings else ""
    print(f"{args.file}: OK ({len(cfg.ontap)} ONTAP target(s), {len(cfg.hosts)} host(s){told})")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from sanlens.runtime.exporter import Exporter, wait_for_signal

    cfg = checked_config(args.config)
    setup_logging(args.log_level or cfg.log_level)
    web = None
    web_config_file = args.web_config_file or os.environ.get(cliargs.ENV_WEB_CONFIG_FILE) or None
    if web_config_file:
        from sanlens.serve.web_security import WebSecurity

        web = WebSecurity(web_config_file)  # a bad file exits 2 before anything listens
    listen = args.listen or env_listen() or cfg.listen
    try:
        exporter = Exporter(cfg, listen=listen)
    except OSError as e:
        if not is_bind_error(e):
            raise
        raise listen_error(e, listen) from e
    if web is not None:
        exporter.server.secure(web)
        active = web.current()
        log.info(
            "web config %s: %s, basic auth %s",
            web_config_file,
            "TLS" if active.context else "plain HTTP",
            f"for {len(active.config.users)} user(s)" if active.auth else "off",
        )
    exporter.start()
    log.info(
        "sanlens %s listening on %s (%d ONTAP, %d hosts)",
        __version__,
        listen,
        len(cfg.ontap),
        len(cfg.hosts),
    )
    try:
        wait_for_signal(exporter.stop_event, reload=lambda: exporter.reload(checked_config(args.config)))
    finally:
        exporter.stop()
    return 0


def env_listen() -> str | None:
    """``$SANLENS_LISTEN``, checked as ``--listen`` is; None when unset or empty."""
    value = os.environ.get(cliargs.ENV_LISTEN) or None
    if value is not None:
        try:
            cliargs.listen_address(value)
        except argparse.ArgumentTypeError as e:
            raise UsageError(
                f"{cliargs.ENV_LISTEN}={value!r}: {e}", hint="unset it, or give host:port or :port"
            ) from None
    return value


def cmd_demo(args: argparse.Namespace) -> int:
    from sanlens.demo import run_demo

    setup_logging(args.log_level or "info")
    return run_demo(args)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with sanlens's error format: ``error:`` and ``hint:`` lines, exit 2, no usage dump."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        print(f"hint: see '{self.prog} --help'", file=sys.stderr)
        self.exit(2)


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand of ``argv``: its first word that is not an option (the top-level options
    take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; of the package subcommands, only the one ``argv`` runs is imported (all of
    them when ``argv`` is None). MissingPart when that one's optional part is not installed."""
    command = None if argv is None else command_of(argv)
    # --debug is accepted before or after the subcommand; SUPPRESS keeps a subcommand's
    # absent flag from resetting the top-level one
    debug = ArgumentParser(add_help=False)
    debug.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="print the traceback of a failure"
    )
    p = ArgumentParser(prog="sanlens", description=DESCRIPTION, parents=[debug])
    p.add_argument("--version", action="version", version=f"sanlens {__version__}")
    sub = p.add_subparsers(
        dest="command", metavar="COMMAND", help="what to run; 'sanlens COMMAND --help' for its options"
    )
    sub.required = True

    s = sub.add_parser(
        "serve",
        help="run the exporter against real clusters and hosts",
        description=DESCRIPTIONS["serve"],
        parents=[debug],
    )
    s.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the YAML config file (sanlens check-config checks it)",
    )
    s.add_argument(
        "--listen",
        type=cliargs.listen_address,
        default=None,
        help=f"listen address, host:port or :port (default ${cliargs.ENV_LISTEN}, else the config's, else :9842)",
    )
    s.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        default=None,
        help="TLS and basic auth for every endpoint, in the Prometheus exporter-toolkit format "
        f"(default ${cliargs.ENV_WEB_CONFIG_FILE})",
    )
    s.add_argument(
        "--log-level",
        default=None,
        choices=["debug", "info", "warning", "error"],
        help="log level (default: the config's log_level, else info)",
    )
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser(
        "demo",
        help="run the simulator and the exporter together, with short windows",
        description=DESCRIPTIONS["demo"],
        parents=[debug],
    )
    scenarios = None
    if argv is None or command == "demo":
        from sanlens.demo import scenario_names

        scenarios = scenario_names()
    d.add_argument(
        "--scenario", default="mixed", choices=scenarios, help="simulator scenario (default: mixed)"
    )
    d.add_argument("--port", type=cliargs.port, default=9842, help="exporter port (default 9842)")
    d.add_argument("--sim-port", type=cliargs.port, default=0, help="simulator port (default: a free one)")
    d.add_argument("--fa-ports", type=int, default=None, help="san-oversubscription: front-end ports")
    d.add_argument(
        "--duration", type=cliargs.positive_seconds, default=None, help="stop after this many seconds"
    )
    d.add_argument(
        "--log-level",
        default=None,
        choices=["debug", "info", "warning", "error"],
        help="log level (default info)",
    )
    d.set_defaults(func=cmd_demo)

    c = sub.add_parser(
        "check-config",
        help="validate a config file: every problem serve would stop on (exit 2 on error)",
        description=DESCRIPTIONS["check-config"],
        parents=[debug],
    )
    c.add_argument("file", help="the YAML config file to check")
    c.add_argument(
        "--skip-files",
        action="store_true",
        help="check the file alone: do not read the password files, password variables and "
        "certificates it names (e.g. in CI, where secrets are not mounted)",
    )
    c.set_defaults(func=cmd_check_config)

    for name, (module, help_, part) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=DESCRIPTIONS.get(name), parents=[debug])
        if argv is None or name == command:
            mod = load(module, name, part)
            mod.add_arguments(sp)
            sp.set_defaults(func=mod.run)
    return p


def report(e: BaseException, command: str, debug: bool) -> int:
    """Print a failure as one ``error:`` line (problems of a config indented below) and a hint; the exit code."""
    if debug:
        traceback.print_exception(e)
    if isinstance(e, ConfigError):
        from sanlens.config.load import problem_lines

        lines = problem_lines(e)
        hint, code = e.hint or f"see 'sanlens {command} --help'", e.exit_code
    elif isinstance(e, SanlensError):
        first, *rest = str(e).splitlines() or [type(e).__name__]
        lines = [f"error: {first}", *(f"  {line}" for line in rest)]
        hint, code = e.hint, e.exit_code
        if not hint:
            hint = f"see 'sanlens {command} --help'" if code == 2 else "rerun with --debug for the traceback"
    else:  # a bug: its message may hold anything, so only its type and place are shown
        frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        where = f" in {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
        lines = [f"error: unexpected {type(e).__name__}{where}"]
        hint, code = "rerun with --debug for the traceback, and report it", 1
    for line in [*lines, f"hint: {hint}"]:
        print(line, file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
    except MissingPart as e:
        return report(e, command_of(argv) or "", "--debug" in argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, and keep Python's exit flush quiet too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as e:
        return report(e, args.command, getattr(args, "debug", False))


# Commands whose process ends without the interpreter's teardown once they return (mypy does
# the same): an offline run's report is written and closed by then, and freeing every module and
# array one by one costs `analyze` about 0.07 s of a 2 s run. `serve` and `demo` keep theirs.
FAST_EXIT = frozenset({"analyze"})


def entry() -> NoReturn:
    """The `sanlens` executable: ``main`` with the process's own arguments, then its exit code."""
    argv = sys.argv[1:]
    code = main(argv)
    if command_of(argv) in FAST_EXIT:
        for stream in (sys.stdout, sys.stderr):
            # a reader gone, a closed stream or none at all (started without it): nothing left to say
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
