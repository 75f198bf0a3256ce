"""QoS centre times from `statistics show -raw` captures of workload_detail_volume and workload_volume.

The inputs are built here in the `statistics show -raw` layout sanlens.ontap.statistics_text reads;
they are not captures from a real system. Expected values are worked out by hand in each test.
"""

from __future__ import annotations

import io

import pytest

from sanlens.ontap.statistics_text import iter_statistics_samples
from sanlens.ontap.workload_detail_text import DetailCooker, volume_of

RULER = "    Counter                                                     Value\n    -------------------------------- --------------------------------\n"


def block(obj: str, instance: str, when: str, counters: dict[str, str]) -> str:
    lines = [
        f"Object: {obj}",
        f"Instance: {instance}",
        f"Start-time: {when}",
        f"End-time: {when}",
        "Scope: cluster1",
    ]
    lines.append("Number of Constituents: 1 (complete_aggregation)")
    text = "\n".join(lines) + "\n" + RULER
    for name, value in counters.items():
        text += f"    {name:<32} {value:>32}\n"
    return text


def detail(instance: str, when: str, visits: int, service_us: int, wait_us: int, path: int = 1) -> str:
    return block(
        "workload_detail_volume",
        instance,
        when,
        {
            "in_latency_path": str(path),
            "instance_name": instance,
            "service_time": f"{service_us}us",
            "visits": str(visits),
            "wait_time": f"{wait_us}us",
        },
    )


def workload(name: str, when: str, ops: int, latency_us: int) -> str:
    return block(
        "workload_volume", name, when, {"instance_name": name, "latency": f"{latency_us}us", "ops": str(ops)}
    )


def capture(*blocks: str) -> str:
    entries = sum(b.count("\n    ") - 2 for b in blocks)
    return "".join(blocks) + f"{entries} entries were displayed.\n"


def samples(text: str) -> list:
    return list(iter_statistics_samples("wd.txt", stream=io.BytesIO(text.encode())))


def test_volume_of_reads_the_wid_suffix() -> None:
    assert volume_of("sql_data-wid1234") == ("sql_data", "1234")
    assert volume_of("User-Best-Effort") == ("", "")


def test_centre_times_fold_into_components_over_nodes() -> None:
    t0, t1 = "3/2/2025 10:00:00", "3/2/2025 10:01:00"
    first = capture(
        detail("n1:vol1-wid7.CPU_nblade", t0, 100, 1_000, 0),
        detail("n2:vol1-wid7.CPU_nblade", t0, 100, 2_000, 0),
        detail("n1:vol1-wid7.DELAY_CENTER_QOS_LIMIT", t0, 100, 0, 5_000),
        detail("n1:vol1-wid7.CPU_idle_thing", t0, 100, 9_000, 0, path=0),
        detail("n1:vol1-wid7.SOME_NEW_CENTRE", t0, 100, 100, 0),
        workload("vol1-wid7", t0, 1_000, 100_000),
    )
    second = capture(
        detail("n1:vol1-wid7.CPU_nblade", t1, 700, 31_000, 0),  # +30 000 us
        detail("n2:vol1-wid7.CPU_nblade", t1, 400, 12_000, 0),  # +10 000 us
        detail("n1:vol1-wid7.DELAY_CENTER_QOS_LIMIT", t1, 700, 0, 155_000),  # +150 000 us of waiting
        detail("n1:vol1-wid7.CPU_idle_thing", t1, 900, 99_000, 0, path=0),  # not in the latency path
        detail("n1:vol1-wid7.SOME_NEW_CENTRE", t1, 700, 10_100, 0),  # +10 000 us, unknown: other
        workload("vol1-wid7", t1, 1_600, 160_000),  # 600 ops, 60 000 us: 100 us per op
    )
    s0, s1 = samples(first + second)
    cooker = DetailCooker()
    assert cooker.feed(s0.rows, None) == ([], [])
    (times,), (lat,) = cooker.feed(s1.rows, 60.0)
    assert times.workload == "vol1-wid7"
    assert times.busy_us == {"network": 40_000.0, "qos_max": 150_000.0, "other": 10_000.0}
    assert lat.latency_s == pytest.approx(60_000 / 600 * 1e-6)
    assert lat.iops == pytest.approx(600 / 60)
    times.latency_s = lat.latency_s
    total = 40_000 + 150_000 + 10_000
    per_op = times.seconds_per_op()
    assert per_op["qos_max"] == pytest.approx(150_000 / total * 100e-6)
    assert sum(per_op.values()) == pytest.approx(100e-6)


def test_a_counter_going_backwards_skips_the_row() -> None:
    t0, t1 = "3/2/2025 10:00:00", "3/2/2025 10:01:00"
    s0, s1 = samples(
        capture(detail("n1:v-wid1.CPU_dblade", t0, 10, 5_000, 0))
        + capture(detail("n1:v-wid1.CPU_dblade", t1, 20, 4_000, 0))
    )
    cooker = DetailCooker()
    cooker.feed(s0.rows, None)
    found, _ = cooker.feed(s1.rows, 60.0)
    assert found == []
    assert cooker.skipped == {"counter reset or takeover (service_time went backwards)": 1}
