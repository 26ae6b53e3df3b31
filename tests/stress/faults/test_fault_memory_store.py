"""The PostgreSQL repair memory stopped and restarted under two running ``sqlmend serve`` replicas
(real processes, a real server halted with ``pg_ctl stop -m fast`` and started again)."""

from __future__ import annotations

import pytest

from sqlmend.stress.faults import memory_store_fault

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_answers_keep_coming_the_stage_skips_and_comes_back_no_item_lost(pred, tmp_path):
    from sqlmend.testing.pgserver import find_bin

    if find_bin() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: run scripts/setup.sh")
    row = memory_store_fault(pred, tmp_path, replicas=2, clients=2, before=2.0, down=3.0, after=3.0, writes=12)
    d = row.detail
    assert d["requests"] > 0 and d["failed_requests"] == []  # every request answered, none with an error
    assert d["skipped_unreachable"] > 0 and d["ran_while_down"] == 0  # the stage said it skipped
    assert d["back_after_s"] is not None  # ... and ran again after the restart
    assert d["refused_writes"] > 0  # writes during the outage were refused, not confirmed
    assert (d["confirmed"], d["stored"], d["lost_items"], d["duplicated"]) == (12, 12, [], 0)
    assert row.lost == 0
