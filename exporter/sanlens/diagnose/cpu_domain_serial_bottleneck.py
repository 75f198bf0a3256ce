"""cpu_domain_serial_bottleneck: a serial CPU domain (Kahuna) caps the node while average CPU looks low.

ONTAP runs work that cannot be parallelised (Waffinity's serial affinity,
Kahuna) on one core at a time, so ``sysstat -M`` can show Kahuna near 100 % of
a core while the node averages 30 %. With U_K = Kahuna busy (``kahuna`` or
``kahuna_legacy``, % of one core), U_W = ``wafl_exempt`` busy and N_cpu cores:

- warning: U_K >= 50 % sustained 15 min;
- critical: U_K + U_W / (N_cpu - 1) >= 90 % (a lower bound of serial
  occupancy), or any single-threaded domain >= 90 %.

"Average CPU" is ``average_processor_busy_percent``; ONTAP's ``cpu_busy`` follows
the busiest domain and so rises with Kahuna. Domain names are read from the data, never assumed. ONTAP-only and joined data
behave alike (one subject per node); host-only data has no subject.
"""

from __future__ import annotations

from sanlens.diagnose.base import (
    Context,
    Observation,
    Thresholds,
    kahuna,
    labels,
    pct,
    serial_domains,
    wafl_exempt,
)
from sanlens.diagnose.numeric import clamp01, num
from sanlens.diagnose.spec import SRC_WAFFINITY, Dashboard, DiagnosisSpec, Evidence, Reads, Threshold
from sanlens.model import NodeStats

SPEC = DiagnosisSpec(
    id="cpu_domain_serial_bottleneck",
    title="Serial CPU domain bottleneck (Waffinity / Kahuna)",
    summary=(
        "Kahuna busy >= 50 % of one core (warning); serial occupancy U_K + U_W/(N_cpu-1) >= 90 % or any "
        "single-threaded domain >= 90 % (critical). Average CPU may be low."
    ),
    subject="node",
    thresholds=(
        Threshold("kahuna_warning_ratio", 0.5, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
        Threshold("serial_critical_ratio", 0.9, "ratio of one core", SRC_WAFFINITY, 0.05, 1.0, "above"),
    ),
    sustain_s=900.0,
    exit_s=600.0,
    severity={1: "Kahuna >= 50 % of a core", 2: "serial occupancy or a serial domain >= 90 %"},
    fix="Spread load across >= 4 volumes per aggregate (8 on large controllers) or use a FlexGroup.",
    evidence=(
        Evidence(
            "kahuna_busy_ratio",
            "ratio of one core",
            "U_K: Kahuna busy (kahuna or kahuna_legacy)",
            "Kahuna busy (of one core)",
            "percent",
        ),
        Evidence(
            "max_serial_domain_busy_ratio",
            "ratio of one core",
            "busiest single-threaded domain",
            "busiest serial domain",
            "percent",
        ),
        Evidence(
            "node_cpu_busy_ratio",
            "ratio",
            "average CPU busy of the node (average_processor_busy_percent)",
            "average CPU",
            "percent",
        ),
        Evidence("processors", "cores", "N_cpu: the node's cores", "processors"),
        Evidence("wafl_exempt_busy_ratio", "ratio of one core", "U_W: wafl_exempt busy"),
        Evidence(
            "ontap_data_seconds",
            "seconds",
            "the most ONTAP's Data component adds to an operation among the node's workloads",
        ),
        Evidence(
            "serial_occupancy_ratio",
            "ratio of one core",
            "U_K + U_W / (N_cpu - 1), a lower bound of serial occupancy",
        ),
    ),
    dashboard=Dashboard("sanlens-ontap-cpu-domains", ("cluster", "node")),
    ordered=(("kahuna_warning_ratio", "serial_critical_ratio"),),
    pages=True,
    reads=Reads(tables=("system:node",), offline=("system:node", "sysstat", "processor")),
)
ID = SPEC.id


def occupancy(node: NodeStats) -> float | None:
    """U_K + U_W / (N_cpu - 1): the lower bound of serial occupancy (U_K alone without U_W or N_cpu)."""
    uk = kahuna(node)
    if uk is None:
        return None
    uw = wafl_exempt(node)
    n = node.processors
    if uw is None or not n or n < 2:
        return uk
    return uk + uw / (n - 1)


def _one(ctx: Context, node: NodeStats, th: Thresholds) -> Observation:
    t = th[ID]
    uk = kahuna(node)
    occ = occupancy(node)
    serial = serial_domains(node)
    top_name, top = max(serial.items(), key=lambda kv: kv[1], default=("", None))
    ev: dict[str, float | None] = {
        "kahuna_busy_ratio": uk,
        "wafl_exempt_busy_ratio": wafl_exempt(node),
        "serial_occupancy_ratio": occ,
        "max_serial_domain_busy_ratio": top,
        # the average over all processors: ONTAP's cpu_busy follows the busiest domain, so it is high
        # exactly when this diagnosis fires and cannot show that the rest of the node idles
        "node_cpu_busy_ratio": num(node.average_processor_busy_ratio),
        "processors": float(node.processors) if node.processors else None,
        "ontap_data_seconds": ctx.component_peak("node", node.cluster, node.node, "data"),
    }
    if uk is None and top is None:
        level = None if not node.domain_busy else 0
    elif (occ is not None and occ >= t["serial_critical_ratio"]) or (
        top is not None and top >= t["serial_critical_ratio"]
    ):
        level = 2
    elif uk is not None and uk >= t["kahuna_warning_ratio"]:
        level = 1
    else:
        level = 0
    score = clamp01(max(occ or 0.0, top or 0.0))
    advice = ""
    if level:
        worst = f"{top_name} at {pct(top)} of one core" if top is not None else f"Kahuna at {pct(uk)}"
        advice = (
            f"Node {node.node} ({node.cluster}): {worst}, serial occupancy >= {pct(occ)}, while average CPU "
            f"is {pct(num(node.average_processor_busy_ratio))}. Work is being forced through a serial domain: spread the "
            "load across at least 4 volumes per aggregate (8 on large controllers) or use a FlexGroup, and "
            "look for what serialises it (one hot volume, metadata-heavy operations). Confirm with "
            "`sysstat -M 1` or `statistics show -object processor`."
        )
    return Observation(
        ID,
        f"{node.cluster}/{node.node}",
        labels(cluster=node.cluster, node=node.node),
        level,
        score,
        ev,
        advice,
    )


READS = frozenset({"ontap"})


def evaluate(ctx: Context, th: Thresholds) -> list[Observation]:
    return [_one(ctx, n, th) for n in ctx.nodes()]
