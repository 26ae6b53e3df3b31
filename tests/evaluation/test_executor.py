"""The worker pool: the db layer's timeout first, a killed worker when a query cannot be interrupted."""

from __future__ import annotations

import os
import time

import pytest

from sqlmend.evaluation import executor
from sqlmend.evaluation.executor import Query, QueryPool, _Queues

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


class _Misbehaving:
    """An engine call that ignores its time limit ("stuck://": a C call that never returns)
    or takes the whole worker process down ("crash://": a crash in C code)."""

    def __init__(self, target: str):
        self.target = target

    def execute(self, sql, timeout, max_rows):
        if self.target == "stuck://":
            time.sleep(60)
        os._exit(3)

    def close(self):
        pass


@pytest.fixture()
def misbehaving(monkeypatch):
    """Targets "stuck://" and "crash://" open a :class:`_Misbehaving` engine (forked workers inherit it)."""
    real_open = executor._open
    monkeypatch.setattr(executor, "_open",
                        lambda t: _Misbehaving(t) if t in ("stuck://", "crash://") else real_open(t))


def test_a_worker_that_overruns_is_killed_and_replaced(misbehaving, spider_db):
    db = str(spider_db("concert_singer"))
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


def test_several_databases_interleaved_come_back_in_input_order(spider_db):
    dbs = [str(spider_db(name)) for name in ("concert_singer", "pets_1", "car_1")]
    queries = [Query(dbs[i % 3], f"SELECT {i}, count(*) FROM sqlite_master") for i in range(90)]
    with QueryPool(workers=2, timeout=5, batch=7) as pool:
        first = pool.run(queries)
        again = pool.run(list(reversed(queries)))  # the same workers serve a second run
    assert [o.rows[0][0] for o in first] == list(range(90))
    assert [o.rows[0][0] for o in again] == list(reversed(range(90)))
    tables = {q.db: o.rows[0][1] for q, o in zip(queries, first)}
    assert len(set(tables.values())) == 3  # each answered on its own database


def test_an_open_pool_replaces_a_killed_worker_and_serves_the_next_run(misbehaving, spider_db):
    db = str(spider_db("concert_singer"))
    with QueryPool(workers=1, timeout=0.3, grace=0.3, batch=4) as pool:
        out = pool.run([Query(db, "SELECT 1"), Query("stuck://", "SELECT 2"), Query(db, "SELECT 3")])
        assert [o.status for o in out] == ["ok", "timeout", "ok"] and pool.killed == 1
        assert [o.rows for o in pool.run([Query(db, "SELECT 4")])] == [[(4,)]]


def test_a_worker_that_dies_answers_an_error_and_the_rest_still_runs(misbehaving, spider_db):
    db = str(spider_db("concert_singer"))
    out = QueryPool(workers=1, timeout=5, batch=4).run(
        [Query(db, "SELECT 1"), Query("crash://", "SELECT 2"), Query(db, "SELECT 3"), Query(db, "SELECT 4")])
    assert [o.status for o in out] == ["ok", "error", "ok", "ok"]
    assert "died (exit code 3)" in out[1].error and out[3].rows == [(4,)]


def test_queues_give_each_database_a_home_and_share_the_tail():
    queries = [Query("a", "q")] * 6 + [Query("b", "q")] * 4 + [Query("c", "q")] * 3
    queues = _Queues(queries, workers=2)
    assert [list(q) for q in queues.queues] == [list(range(6)), list(range(6, 13))]  # a | b, c
    assert queues.take(0, batch=8) == [0, 1, 2, 3]  # a share of what is left: ceil(13 / (2 * 2))
    assert queues.take(0, batch=8) == [4, 5]  # the rest of its own queue
    assert queues.take(0, batch=8) == [11, 12]  # own queue empty: the end of the other one, ceil(7 / 4)
    queues.give_back(0, [11, 12])
    assert queues.take(0, batch=4) == [11, 12] and len(queues) == 5
