"""The worker pool: the db layer's timeout first, a killed worker when a query cannot be interrupted."""

from __future__ import annotations

import time

from sqlmend.bench import executor
from sqlmend.bench.executor import Query, QueryPool

LOOP = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_results_in_input_order(spider_db):
    db = str(spider_db("concert_singer"))
    queries = [Query(db, f"SELECT {i}") for i in range(40)]
    out = QueryPool(workers=2, timeout=5).run(queries)
    assert [o.rows for o in out] == [[(i,)] for i in range(40)]


def test_db_layer_timeout_interrupts_a_runaway_query(spider_db):
    db = str(spider_db("concert_singer"))
    start = time.monotonic()
    out = QueryPool(workers=1, timeout=0.5).run([Query(db, LOOP), Query(db, "SELECT 1")])
    assert out[0].status == "timeout" and out[1].rows == [(1,)]
    assert time.monotonic() - start < 5


class _Stuck:
    """An engine call that ignores its time limit (a C call that never returns)."""

    def execute(self, sql, timeout, max_rows):
        time.sleep(60)

    def close(self):
        pass


def test_a_worker_that_overruns_is_killed_and_replaced(monkeypatch, spider_db):
    db = str(spider_db("concert_singer"))
    real_open = executor._open
    # forked workers inherit the patch: "stuck://" targets never return
    monkeypatch.setattr(executor, "_open", lambda t: _Stuck() if t == "stuck://" else real_open(t))
    pool = QueryPool(workers=1, timeout=0.3, grace=0.3, batch=4)
    start = time.monotonic()
    out = pool.run([Query(db, "SELECT 1"), Query("stuck://", "SELECT 2"), Query(db, "SELECT 3"),
                    Query(db, "SELECT 4")])
    assert time.monotonic() - start < 10
    assert [o.status for o in out] == ["ok", "timeout", "ok", "ok"]
    assert "killed" in out[1].error and pool.killed == 1
    assert out[3].rows == [(4,)]  # the rest of the killed worker's batch ran on its replacement


def test_bad_items_do_not_stop_the_batch(spider_db, tmp_path):
    db = str(spider_db("concert_singer"))
    out = QueryPool(workers=2, timeout=5).run([Query(str(tmp_path / "nope.sqlite"), "SELECT 1"),
                                               Query(db, ""), Query(db, "SELECT 1")])
    assert [o.status for o in out] == ["error", "error", "ok"]
