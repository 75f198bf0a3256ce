"""The `sanlens` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from sanlens import __version__
from sanlens.analyze import cli as analyze_cli
from sanlens.config import Config, load_config
from sanlens.diagnose.registry import validate_config
from sanlens.errors import SanlensError
from sanlens.plan import cli as plan_cli
from sanlens.sim import cli as sim_cli

log = logging.getLogger("sanlens")

# Subcommands implemented in their own packages: name -> (module, help).
# Each module has add_arguments(p) and run(args).
SUBCOMMANDS = {
    "simulate": (sim_cli, "serve the ONTAP REST + windows_exporter simulator"),
    "analyze": (analyze_cli, "diagnose PerfMon logs and ONTAP captures offline"),
    "plan": (plan_cli, "size LUNs/volumes, or estimate rebuild/migrate time"),
}


def setup_logging(level: str = "info") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def checked_config(path: str) -> Config:
    """The config file, its diagnosis thresholds checked too; a ConfigError exits 2 through ``main``."""
    cfg = load_config(path)
    validate_config(cfg)
    return cfg


def cmd_check_config(args: argparse.Namespace) -> int:
    cfg = checked_config(args.file)
    print(f"{args.file}: OK ({len(cfg.ontap)} ONTAP target(s), {len(cfg.hosts)} host(s))")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from sanlens.runtime import Exporter, wait_for_signal

    cfg = checked_config(args.config)
    setup_logging(args.log_level or cfg.log_level)
    web = None
    if args.web_config_file:
        from sanlens.web_config import WebSecurity

        web = WebSecurity(args.web_config_file)  # a bad file exits 2 before anything listens
    exporter = Exporter(cfg, listen=args.listen)
    if web is not None:
        exporter.server.secure(web)
        active = web.current()
        log.info(
            "web config %s: %s, basic auth %s",
            args.web_config_file,
            "TLS" if active.context else "plain HTTP",
            f"for {len(active.config.users)} user(s)" if active.auth else "off",
        )
    exporter.start()
    log.info(
        "sanlens %s listening on %s (%d ONTAP, %d hosts)",
        __version__,
        args.listen or cfg.listen,
        len(cfg.ontap),
        len(cfg.hosts),
    )
    try:
        wait_for_signal(exporter.stop_event, reload=lambda: exporter.reload(checked_config(args.config)))
    finally:
        exporter.stop()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from sanlens.demo import run_demo

    setup_logging(args.log_level or "info")
    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sanlens", description=__doc__)
    p.add_argument("--version", action="version", version=f"sanlens {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("serve", help="run the exporter against real clusters and hosts")
    s.add_argument("--config", required=True, help="YAML config file")
    s.add_argument("--listen", default=None, help="listen address (default from config, :9842)")
    s.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        default=None,
        help="TLS and basic auth for every endpoint, in the Prometheus exporter-toolkit format",
    )
    s.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"])
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser("demo", help="run the simulator and the exporter together, with short windows")
    d.add_argument("--scenario", default="mixed", help="simulator scenario (default: mixed)")
    d.add_argument("--port", type=int, default=9842, help="exporter port (default 9842)")
    d.add_argument("--sim-port", type=int, default=0, help="simulator port (default: a free one)")
    d.add_argument("--fa-ports", type=int, default=None, help="san-oversubscription: front-end ports")
    d.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    d.add_argument("--log-level", default=None, choices=["debug", "info", "warning", "error"])
    d.set_defaults(func=cmd_demo)

    c = sub.add_parser("check-config", help="validate a config file (exit 2 on error)")
    c.add_argument("file")
    c.set_defaults(func=cmd_check_config)

    for name, (mod, help_) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SanlensError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
