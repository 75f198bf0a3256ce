"""sanlens / Disks and background operations: an aggregate's load spread over its disks, and rebuilds."""

from __future__ import annotations

from mixin.config import MixinConfig

from sanlens.diagnose.disk_busy_imbalance import PARITY

from ..lib import Json
from ..lib.dashboard import Layout, TopVar, chained, dashboard
from ..lib.panels import Column, gauge_cell, instant, panel, table, target
from ..lib.promql import sel, srate, top
from ..lib.thresholds import bands, num, pct

NAME = "disks"
IMBALANCE = "disk_busy_imbalance"
KEYS = "cluster, aggregate, disk"
PARITY_RE = "|".join(sorted(PARITY))
BY = "by (cluster, aggregate)"


def balance(cfg: MixinConfig, lay: Layout, a: str) -> None:
    def th(name: str) -> float:
        return cfg.threshold(IMBALANCE, name)

    # data disks only, as disk_busy_imbalance judges them: parity disks idle under reads and would
    # read as imbalance in every aggregate
    busy = (
        f"({srate(KEYS, 'sanlens_ontap_disk_busy_seconds_total', a)} / "
        f"{srate(KEYS, 'sanlens_ontap_disk_elapsed_seconds_total', a)} "
        f'and on ({KEYS}) sanlens_ontap_disk_info{{{a}, raid_position!~"{PARITY_RE}"}})'
    )
    lay.add(
        panel(
            "timeseries",
            "Disks per busy band",
            "How many disks of the aggregate sit at each busy level (rounded to 10 %) over time, counted in "
            "Prometheus so a large aggregate is still a handful of lines; a second band of hot disks after an "
            f"expansion is what {IMBALANCE} looks for.",
            target(f'count_values("busy", round({busy}, 0.1))', "{{busy}} busy"),
            unit="none",
            decimals=0,
            min_=0,
        ),
        12,
        8,
    )
    lay.add(
        panel(
            "bargauge",
            "Busy per disk now",
            f"The busiest $topn disks now. Orange from {pct(th('min_max_busy_ratio'))} (the minimum max-busy of "
            f"{IMBALANCE}), red from {pct(th('critical_max_busy_ratio'))}.",
            instant(top(busy), "{{disk}}"),
            unit="percentunit",
            thresholds=bands(cfg, IMBALANCE, "min_max_busy_ratio", "critical_max_busy_ratio"),
            min_=0,
            max_=1,
            options={"displayMode": "basic", "valueMode": "text", "minVizHeight": 8, "maxVizHeight": 12},
        ),
        12,
        8,
    )
    lay.add_each(
        "timeseries",
        8,
        7,
        (
            (
                "Imbalance: coefficient of variation",
                f"Standard deviation / mean of disk busy across the aggregate; above {num(th('cv'))} (dashed) "
                f"with a disk over {pct(th('min_max_busy_ratio'))} busy the aggregate wants a reallocate.",
                f"stddev {BY} ({busy}) / avg {BY} ({busy})",
                "CV {{aggregate}}",
                {"thresholds": bands(cfg, IMBALANCE, "cv")},
            ),
            (
                "Imbalance: max / median",
                f"Busiest disk over the median disk; above {num(th('max_to_median'))} (dashed) is imbalanced.",
                f"max {BY} ({busy}) / quantile {BY} (0.5, {busy})",
                "max/median {{aggregate}}",
                {"thresholds": bands(cfg, IMBALANCE, "max_to_median")},
            ),
        ),
        unit="none",
        min_=0,
        decimals=2,
    )
    raid_group = (
        f"avg by (cluster, aggregate, raid_group) ({busy} * on ({KEYS}) group_left (raid_group) "
        f"max by ({KEYS}, raid_group) (sanlens_ontap_disk_info{{{a}}}))"
    )
    lay.add(
        panel(
            "timeseries",
            "Busy per RAID group",
            "Average disk busy per RAID group: after an expansion the newest groups run hotter "
            f"(newest / older > {num(th('newest_raid_group_ratio'))} is one of the imbalance signals).",
            target(top(raid_group), "{{raid_group}}"),
            unit="percentunit",
            thresholds=bands(cfg, IMBALANCE, "min_max_busy_ratio"),
            min_=0,
            max_=1,
        ),
        8,
        7,
    )


def background(lay: Layout, a: str) -> None:
    bg = sel("cluster")  # every running operation of the cluster: a few at most, busiest aggregate or not
    eta = f"sanlens_background_operation_eta_seconds{{{bg}}}"
    lay.add(
        table(
            "Active background operations",
            "RAID reconstructs, resyncs, parity recomputes and volume moves now, with progress and the ETA sanlens "
            "derives from the observed progress rate (background_operation_impact).",
            Column(f"sanlens_background_operation_done_ratio{{{bg}}}", "Done", "percentunit", gauge_cell(1)),
            Column(eta, "ETA", "s"),
            hide=("Time", "__name__", "job", "instance"),
        ),
        24,
        6,
    )
    lay.add(
        panel(
            "timeseries",
            "Background operation progress",
            "Progress (0..1) of RAID operations per RAID group and of volume moves, as ONTAP reports it.",
            target(
                f"sanlens_background_operation_done_ratio{{{bg}}}",
                "{{aggregate}} {{raid_group}} {{volume}} {{operation}}",
            ),
            unit="percentunit",
            min_=0,
            max_=1,
        ),
        12,
        7,
    )
    lay.add(
        panel(
            "timeseries",
            "Background operation ETA",
            "Time left for each active operation at its observed progress rate.",
            target(eta, "{{aggregate}}{{volume}} {{operation}}"),
            unit="s",
            min_=0,
        ),
        12,
        7,
    )


def build(cfg: MixinConfig) -> Json:
    a = sel("cluster", "aggregate")
    lay = Layout()
    lay.row("Aggregate $aggregate", repeat="aggregate")  # the busiest $topn only
    balance(cfg, lay, a)
    lay.row("Background operations")
    background(lay, a)
    return dashboard(
        cfg,
        NAME,
        "sanlens / Disks and background operations",
        "Is an aggregate's load spread evenly over its disks, and is a rebuild or volume move slowing it down "
        "(and when will it finish)?",
        chained(
            TopVar(
                "aggregate",
                "Aggregate (busiest disk)",
                'max by (aggregate) (disk:sanlens_ontap_disk_busy:ratio_rate5m{{sel}, aggregate!=""})',
            ),
            top_n=cfg.top_n,
        ),
        lay,
    )
