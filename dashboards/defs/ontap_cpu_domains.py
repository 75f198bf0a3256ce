"""sanlens / ONTAP CPU domains: a serial domain (Kahuna) limiting a node whose average CPU is low."""

from __future__ import annotations

from mixin.config import MixinConfig

from ..lib import Json
from ..lib.dashboard import Layout, Var, chained, dashboard, topn_var
from ..lib.panels import DASHED, against_thresholds, instant, panel, series, target
from ..lib.promql import NOT_IDLE, rate, sel, srate, top
from ..lib.thresholds import bands, pct, steps

NAME = "ontap-cpu-domains"
SERIAL = "cpu_domain_serial_bottleneck"
# Waffinity spreads work by volume: an aggregate with fewer volumes than these is red, then orange.
VOLUMES_RED_BELOW, VOLUMES_ORANGE_BELOW = 2, 4


def cpu(cfg: MixinConfig, lay: Layout, n: str) -> None:
    elapsed = srate("cluster, node", "sanlens_ontap_node_cpu_elapsed_seconds_total", n)

    def domain(d: str) -> str:
        return srate("cluster, node", "sanlens_ontap_node_domain_busy_seconds_total", f'{n}, domain="{d}"')

    kahuna, wafl_ex = domain("kahuna"), domain("wafl_exempt")
    cpus = f"max by (cluster, node) (sanlens_ontap_node_processors{{{n}}})"
    all_domains = srate("cluster, node, domain", "sanlens_ontap_node_domain_busy_seconds_total", n + NOT_IDLE)
    lay.add(
        panel(
            "timeseries",
            "Domain busy (ratio of one core)",
            "ONTAP CPU domain busy time as a ratio of one core (can exceed 100 % for parallel domains; "
            "Σ domains ≈ processors). Serial domains (kahuna) top out at 100 %. The busiest $topn (node, domain).",
            target(top(f"{all_domains} / on (cluster, node) group_left () {elapsed}"), "{{node}} {{domain}}"),
            unit="percentunit",
            min_=0,
        ),
        24,
        9,
    )
    names = ("kahuna_warning_ratio", "serial_critical_ratio")
    warn, crit = (pct(cfg.threshold(SERIAL, name)) for name in names)
    lay.add(
        against_thresholds(
            cfg,
            "Kahuna vs its thresholds",
            "Kahuna (the serial domain) as % of one core, and the lower bound of serial occupancy "
            f"U_K + U_W/(N_cpu - 1). Dashed: {warn} warning and {crit} critical of {SERIAL}; "
            "the 'configured' lines are the exporter's live thresholds.",
            target(f"{kahuna} / {elapsed}", "kahuna {{node}}"),
            target(f"({kahuna} + {wafl_ex} / ({cpus} - 1)) / {elapsed}", "serial occupancy {{node}}"),
            diagnosis=SERIAL,
            names=names,
            unit="percentunit",
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "timeseries",
            "Average CPU busy",
            "Average busy of all processors per node (average_processor_busy_percent). A serial bottleneck "
            "shows a hot Kahuna while this stays low. Dashed: ONTAP's cpu_busy, which follows the most "
            "heavily used domain (or the average, whichever is higher).",
            target(
                f"{srate('cluster, node', 'sanlens_ontap_node_average_processor_busy_seconds_total', n)} / {elapsed}",
                "{{node}}",
            ),
            target(
                f"{srate('cluster, node', 'sanlens_ontap_node_cpu_busy_seconds_total', n)} / {elapsed}",
                "cpu_busy {{node}}",
            ),
            unit="percentunit",
            min_=0,
            max_=1,
            overrides=[series("cpu_busy .*", DASHED)],
        ),
        12,
        8,
    )


def volumes(cfg: MixinConfig, lay: Layout, n: str) -> None:
    vol_ops = (
        f"sum by (cluster, aggregate, svm, volume) ({rate('sanlens_ontap_volume_ops_total', sel('cluster'))} "
        f"* on (cluster, svm, volume) group_left (aggregate) max by (cluster, svm, volume, aggregate) "
        f"(sanlens_ontap_volume_info{{{n}}}))"
    )
    share = cfg.threshold("volume_affinity_concentration", "volume_share")
    lay.add(
        panel(
            "bargauge",
            "Volumes per aggregate",
            f"FlexVols per aggregate, the $topn with fewest. Waffinity spreads work by volume: fewer than "
            f"{VOLUMES_RED_BELOW} (red) or {VOLUMES_ORANGE_BELOW} (orange) volumes per aggregate invite serial "
            "bottlenecks.",
            instant(
                f"bottomk($topn, count by (cluster, aggregate) (sanlens_ontap_volume_info{{{n}}}))",
                "{{aggregate}}",
            ),
            unit="none",
            thresholds=steps(("red", None), ("orange", VOLUMES_RED_BELOW), ("green", VOLUMES_ORANGE_BELOW)),
            min_=0,
            decimals=0,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "bargauge",
            "Ops share per volume in its aggregate",
            f"The $topn largest shares of a volume in its aggregate's ops; at {pct(share)} "
            "(volume_affinity_concentration) one volume carries the aggregate.",
            instant(
                top(
                    f"{vol_ops} / on (cluster, aggregate) group_left () sum by (cluster, aggregate) ({vol_ops})"
                ),
                "{{aggregate}} / {{volume}}",
            ),
            unit="percentunit",
            thresholds=bands(cfg, "volume_affinity_concentration", "volume_share", colors=("red",)),
            min_=0,
            max_=1,
        ),
        12,
        8,
    )


def build(cfg: MixinConfig) -> Json:
    n = sel("cluster", "node")
    lay = Layout()
    lay.row("CPU domains")
    cpu(cfg, lay, n)
    lay.row("Volumes and aggregates")
    volumes(cfg, lay, n)
    return dashboard(
        cfg,
        NAME,
        "sanlens / ONTAP CPU domains",
        "Is an ONTAP node limited by a serial CPU domain (Kahuna) although its average CPU is low, and is the "
        "load spread over enough volumes per aggregate?",
        [*chained(Var("node", "Node", "sanlens_ontap_node_info")), topn_var(cfg.top_n)],
        lay,
    )
