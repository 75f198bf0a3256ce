"""The `sanlens plan` subcommand: arguments, dispatch, text or JSON output."""

from __future__ import annotations

import argparse
import json
import sys

from sanlens.model import ontap_version_option
from sanlens.plan.inputs import parse_ratio
from sanlens.plan.luns import LunPlan, plan_luns, render_luns
from sanlens.plan.operations import (
    DISK_TYPES,
    ONTAP_RAID_TYPES,
    OTHER_ARRAY,
    PRIORITIES,
    RAID_TYPES,
    DurationPlan,
    load_profile,
    plan_duration,
    render_duration,
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="plan_kind", metavar="KIND", help="what to plan")
    sub.required = True
    lp = sub.add_parser("luns", help="LUNs and volumes for a workload (Little's law, ONTAP ceilings)")
    lp.add_argument("--iops", type=float, required=True, help="total IOPS of the workload (X)")
    lp.add_argument("--write-ratio", required=True, help="write share, 0..1 or a percent like 30%%")
    lp.add_argument("--ontap-version", required=True, help="e.g. 9.8 or 9.12.1 (ceilings change at 9.9.1)")
    lp.add_argument("--latency-ms", type=float, default=1.0, help="array service time S (default 1 ms)")
    lp.add_argument("--queue-depth", type=int, default=32, help="per-LUN HBA queue depth Q (default 32)")
    lp.add_argument("--paths", type=int, default=1, help="active paths per LUN P (default 1)")
    lp.add_argument("--hosts", type=int, default=1, help="hosts that map the LUNs H (default 1)")
    lp.add_argument("--format", choices=["text", "json"], default="text", help="output format")
    for op, what, help_ in (
        ("rebuild", "Time to rebuild one disk", "time to rebuild one disk, at an EMC CLARiiON's rates"),
        ("migrate", "Time to migrate (and optionally expand) a LUN", "time to migrate a LUN, at an EMC CLARiiON's rates"),
        ("bind", "Time to bind (zero) a new LUN", "time to bind (zero) a new LUN, at an EMC CLARiiON's rate"),
    ):  # fmt: skip
        op_p = sub.add_parser(op, help=help_, description=f"{what}. {OTHER_ARRAY}")
        op_p.add_argument("--size-gb", type=float, required=True, help="size in GB (1 GB = 1024 MB)")
        op_p.add_argument(
            "--priority",
            required=True,
            type=str.lower,
            choices=PRIORITIES,
            help="the CLARiiON's priority"
            + (
                "; ONTAP sets raid.reconstruct.perf_impact low, medium or high instead"
                if op == "rebuild"
                else ""
            ),
        )
        op_p.add_argument(
            "--raid",
            type=str.lower,
            choices=RAID_TYPES + ONTAP_RAID_TYPES,
            default=None,
            help="RAID type: r5, r6 or r10 (the CLARiiON's); raid-dp and raid-tec (ONTAP's) need a --profile "
            "with their rates",
        )
        op_p.add_argument(
            "--disk-type", type=str.lower, choices=DISK_TYPES, default=None, help="disk type (a time factor)"
        )
        if op == "migrate":
            op_p.add_argument("--target-size-gb", type=float, default=None, help="expand into a bigger LUN")
        op_p.add_argument("--profile", default=None, help="YAML rate profile merged over the built-in one")
        op_p.add_argument("--format", choices=["text", "json"], default="text", help="output format")


def run(args: argparse.Namespace) -> int:
    """Bad input raises PlanError, which ``sanlens`` reports with exit status 2."""
    if args.plan_kind == "luns":
        plan: LunPlan | DurationPlan = plan_luns(
            args.iops,
            parse_ratio(args.write_ratio),
            ontap_version_option(args.ontap_version),
            latency_ms=args.latency_ms,
            queue_depth=args.queue_depth,
            paths=args.paths,
            hosts=args.hosts,
        )
    else:
        plan = plan_duration(
            args.plan_kind,
            args.size_gb,
            args.priority,
            raid=args.raid,
            disk_type=args.disk_type,
            target_size_gb=getattr(args, "target_size_gb", None),
            profile=load_profile(args.profile),
        )
    if args.format == "json":
        json.dump(plan.as_json(), sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_luns(plan) if isinstance(plan, LunPlan) else render_duration(plan))
    return 0
