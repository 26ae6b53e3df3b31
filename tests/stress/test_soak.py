"""The soak (issue 35, item 3), short: two replicas on one PostgreSQL memory under the request mix."""

from __future__ import annotations

import pytest

from sqlmend.testing.pgserver import find_bin
from sqlmend.stress.soak import classify, requests_mix, run_soak, slope_per_hour

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pred(data_dir):
    return data_dir / "predictions" / "spider-dev" / "codes-1b.sql"


def test_the_mix_holds_every_kind_and_each_kind_has_its_expected_answers(pred):
    reqs = requests_mix(pred, limit=100)
    kinds = {r.kind for r in reqs}
    assert kinds == {"good", "hostile", "pathological"}
    assert [r.kind for r in reqs[:11]].count("hostile") == 1
    assert classify("good", 200, None) == "ok" and classify("good", 504, None) == "error"
    assert classify("hostile", 413, None) == "clear" and classify("hostile", 500, None) == "error"
    assert classify("pathological", 200, "ItemLimitExceeded: the query did not finish") == "clear"
    assert classify("pathological", 200, "DeadlineExceeded: timed out") == "error"  # a query's own net: the machine
    assert classify("pathological", 200, "DeadlineExceeded: timed out: the item ran past its wall-clock "
                                         "deadline (its budget of 4s and 4.5s more); the input is kept") == "clear"
    assert classify("pathological", 504, None) == "error"


@pytest.mark.slow
def test_a_short_soak_has_rows_and_no_error(pred, tmp_path):
    if find_bin() is None:
        pytest.skip("PostgreSQL server binaries not installed")
    # 15 s in three intervals of 5 (the first left out of the growth fit, as in a real soak): rows, no error
    report = run_soak(pred, tmp_path / "work", minutes=0.25, interval=5, rate=3, clients=3, timeout=2)
    assert report.errors == 0, report.error_samples
    assert report.requests >= 20 and len(report.intervals) >= 2
    assert report.clear  # hostile requests answered 4xx
    for row in report.intervals:
        assert len(row.rss_mb) == len(row.fds) == 2 and min(row.rss_mb) > 0 and min(row.fds) > 0
        assert row.pg_connections >= 0
    assert len(report.rss_growth_mb_per_h) == len(report.fd_growth_per_h) == 2
    assert slope_per_hour([0, 30], [100, 100]) == 0.0
