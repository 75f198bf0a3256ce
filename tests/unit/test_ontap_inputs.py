"""The map from missing inputs to starved diagnoses names only real tables, endpoints and diagnoses."""

from __future__ import annotations

from sanlens.diagnose.registry import IDS, REGISTRY
from sanlens.ontap import inputs
from sanlens.ontap.catalogue import catalogue


def test_every_rest_table_says_which_diagnoses_it_feeds() -> None:
    rest = {name for name, t in catalogue().items() if t.rest}
    assert set(inputs.TABLE_FEEDS) == rest
    named = [d for ids in (*inputs.TABLE_FEEDS.values(), *inputs.ENDPOINT_FEEDS.values()) for d in ids]
    named += [*inputs.STATISTICS_LACK, *inputs.ASA_R2_LACK, *inputs.HARVEST_LACK]
    assert set(named) <= set(IDS), set(named) - set(IDS)


def test_a_missing_table_a_refused_endpoint_and_the_statistics_path_starve_their_diagnoses() -> None:
    doc = inputs.status(
        "unified",
        "tables",
        ["disk:constituent"],
        {"system:node": ["domain_busy"], "lun": []},
        {"/api/network/fc/ports": "forbidden"},
    )
    assert doc["tables_missing"] == ["disk:constituent"]
    assert doc["counters_missing"] == {"system:node": ["domain_busy"]}
    starved = doc["starved"]
    assert starved["disk_busy_imbalance"] == ["counter table disk:constituent is missing"]
    assert starved["cpu_domain_serial_bottleneck"] == ["counter table system:node lacks domain_busy"]
    assert starved["fc_port_down"] == ["/api/network/fc/ports is refused (forbidden)"]
    assert "lun_iops_ceiling" not in starved, "a table with nothing missing starves nothing"
    healthy = inputs.status("unified", "tables", [], {}, {})
    assert healthy["starved"] == {}
    stats = inputs.status("unified", "statistics", [], {}, {})
    assert set(stats["starved"]) == set(inputs.STATISTICS_LACK)


def test_what_each_diagnosis_reads_names_real_tables_and_endpoints() -> None:
    """A spec's ``reads`` is the one declaration: a typo there would starve nothing, silently."""
    rest = {name for name, t in catalogue().items() if t.rest}
    for did, spec in REGISTRY.items():
        assert set(spec.reads.tables) <= rest, (did, set(spec.reads.tables) - rest)
        assert set(spec.reads.endpoints) <= set(inputs.ENDPOINTS), did
        for table in spec.reads.tables:
            assert did in inputs.TABLE_FEEDS[table]
        for endpoint in spec.reads.endpoints:
            assert did in inputs.ENDPOINT_FEEDS[endpoint]
