"""QoS workloads and policies read from NetApp Harvest's series: hand-written samples in the labels
and units a real Harvest poller exports (tests/data/harvest/qos-throttle.prom)."""

from __future__ import annotations

import pytest

from sanlens.ontap.harvest_series import FAMILY_LABEL, Samples, queries, samples_of
from sanlens.ontap.harvest_views import MIB, harvest_view, qos_policies

SVM = {"svm": "svm1"}


def _qos(**fams: list[tuple[dict[str, str], float]]) -> dict[str, Samples]:
    return {"qos": dict(fams)}


def test_fixed_and_adaptive_policies_from_harvests_label_families() -> None:
    s: Samples = {
        "qos_policy_fixed_labels": [
            ({**SVM, "name": "sql-cap", "capacity_shared": "false", "max_throughput_iops": "2000",
              "max_throughput_mbps": "", "min_throughput_iops": "", "object_count": "1"}, 1.0),
            ({**SVM, "name": "reports-shared", "capacity_shared": "true", "max_throughput_iops": "10000",
              "max_throughput_mbps": "400", "min_throughput_iops": "300", "object_count": "2"}, 1.0),
        ],
        "qos_policy_adaptive_labels": [
            ({**SVM, "name": "extreme", "peak_iops": "12288", "expected_iops": "6144",
              "absolute_min_iops": "1000", "peak_iops_allocation": "used-space", "object_count": "0"}, 1.0),
        ],
    }  # fmt: skip
    got = {p.name: p for p in qos_policies("c1", s)}
    cap, shared, ad = got["sql-cap"], got["reports-shared"], got["extreme"]
    assert (cap.kind, cap.shared, cap.max_iops, cap.max_bytes_s, cap.min_iops, cap.workloads) == (
        "fixed", False, 2000.0, None, None, 1,
    )  # fmt: skip
    assert shared.shared and shared.max_bytes_s == 400 * MIB and shared.min_iops == 300.0
    assert (ad.kind, ad.peak_iops_per_tb, ad.expected_iops_per_tb, ad.absolute_min_iops) == (
        "adaptive", 12288.0, 6144.0, 1000.0,
    )  # fmt: skip
    assert ad.peak_allocation == "used_space", "the CLI's used-space, spelt as REST's"
    assert ad.workloads == 0 and ad.max_iops is None


def test_workloads_take_identity_from_labels_latency_in_seconds_and_sizes_of_whole_volumes() -> None:
    vol = {**SVM, "workload": "sql_data-wid1", "volume": "sql_data", "policy_group": "sql-cap", "wid": "1"}
    lun = {**SVM, "workload": "esx_lun0-wid2", "volume": "esx", "lun": "/vol/esx/lun0", "policy_group": "l"}
    answers = _qos(
        qos_ops=[(vol, 1940.0), (lun, 0.0)],
        qos_latency=[(vol, 24800.0), (lun, 0.0)],
        qos_read_ops=[(vol, 1358.0)],
        qos_read_latency=[(vol, 24740.0)],
        volume_size=[({**SVM, "volume": "sql_data"}, 2.0**40), ({**SVM, "volume": "esx"}, 2.0**41)],
        volume_size_available=[({**SVM, "volume": "sql_data"}, 2.0**39)],
    )
    view, _ = harvest_view("c1", 0.0, 60.0, answers, 3.0)
    w = {x.workload: x for x in view.qos_workloads}
    v, x = w["sql_data-wid1"], w["esx_lun0-wid2"]
    assert (v.svm, v.volume, v.lun, v.policy, v.wid) == ("svm1", "sql_data", "", "sql-cap", "1")
    assert v.iops == 1940.0 and v.read_iops == 1358.0 and v.write_iops is None
    assert v.latency_s == pytest.approx(0.0248) and v.read_latency_s == pytest.approx(0.02474)
    assert (v.size_bytes, v.used_bytes) == (2.0**40, 2.0**39), "used: size less available, as REST's"
    assert not v.components and v.dominant is None, "Harvest's series carry no latency breakdown"
    assert (x.lun, x.policy, x.size_bytes, x.used_bytes) == ("/vol/esx/lun0", "l", None, None)
    assert x.iops == 0.0 and x.latency_s is None, "an average over no operations is no latency"
    assert view.qos_policies == ()


def test_qos_is_one_query_and_info_families_read_by_the_same_labels_stay_apart() -> None:
    """PromQL's ``or`` matches label sets without the metric name: ``volume_size_available`` read
    by the labels of ``volume_size`` would vanish from the answer unless it carries its name."""
    (q,) = [x for x in queries() if x.name == "qos"]
    text = q.text('cluster="c1"')
    assert text.startswith("max by (__name__, svm, workload, volume, lun, qtree, file, policy_group, wid) (")
    assert text.count("volume_size{") == 1 and text.count("volume_size_available{") == 1
    assert text.count(FAMILY_LABEL) == 1
    assert f'"{FAMILY_LABEL}", "volume_size_available"' in text
    assert "qos_policy_fixed_labels{" in text and "qos_policy_adaptive_labels{" in text
    doc = {
        "data": {
            "result": [
                {"metric": {"__name__": "volume_size", **SVM, "volume": "v"}, "value": [1, "10"]},
                {
                    "metric": {"__name__": "volume_size_available", FAMILY_LABEL: "volume_size_available", **SVM,
                               "volume": "v"},
                    "value": [1, "4"],
                },
            ]
        }
    }  # fmt: skip
    got = samples_of(doc, "test")
    assert got["volume_size_available"] == [({**SVM, "volume": "v"}, 4.0)]
    assert got["volume_size"] == [({**SVM, "volume": "v"}, 10.0)]
