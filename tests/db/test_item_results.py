"""One execution per distinct query per item (``sqlmend.db.results``), and the item's budget: counted
work, the wall-clock net, cancellation.

Executions are counted by SQLite itself (its trace callback sees every statement the engine starts),
not by the code under test.
"""

from __future__ import annotations

import threading
import time

import pytest

import sqlmend
from sqlmend.db import connect
from sqlmend.db.base import WorkBudget
from sqlmend.db.results import ItemResults, sql_key
from sqlmend.errors import DeadlineExceeded, ItemCancelled, ItemLimitExceeded, QueryError, WorkLimitExceeded

FRANCE = ("How many singers are from France?", "SELECT count(*) FROM singer WHERE country = 'france'")
ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"


def _statements(db) -> list[str]:
    """Every statement the SQLite engine of ``db`` starts from now on (its own trace callback)."""
    seen: list[str] = []
    db._conn.set_trace_callback(seen.append)
    return seen


@pytest.mark.parametrize("stages", [None, "static,search,guard"])
def test_each_distinct_query_runs_once_per_item(spider_db, stages):
    with sqlmend.Corrector(spider_db("concert_singer"), stages=stages) as fixer:
        fixer.correct(*FRANCE)  # schema and value index read: not the item's queries
        with fixer._pool.acquire() as db:
            seen = _statements(db)
            correction = fixer.pipeline.correct(fixer._task(*FRANCE, None, None), db=db)
            db._conn.set_trace_callback(None)
    assert correction.sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    queries = [s for s in seen if not s.startswith("PRAGMA")]
    assert len(queries) == len({sql_key(s) for s in queries})  # none twice
    assert correction.executions["executed"] == len(queries)
    # the input, the fix (its result asked by the rule, the stage's guard, the next stage and the final guard)
    assert {sql_key(FRANCE[1]), "SELECT COUNT(*) FROM singer WHERE country = 'France'"} <= set(map(sql_key, queries))
    assert correction.executions["reused"] >= 3


def test_the_count_is_in_the_trace_and_the_summary(spider_db):
    from sqlmend.pipeline import summarize

    with sqlmend.Corrector(spider_db("concert_singer")) as fixer:
        result = fixer.correct(*FRANCE)
    executed = result.correction.executions["executed"]  # the input, its fix, the rules' probe of the column
    assert executed == 3 and f"queries: {executed} run on the database" in result.explain()
    summary = summarize([result.correction, result.correction]).to_dict()
    assert summary["executed"] == 2 * executed and summary["executed_per_query"] == executed


def test_a_remembered_run_answers_as_a_fresh_run_would(spider_db):
    with connect(spider_db("world_1")) as db:
        fresh = {}
        for cap in (5, 50, 10_000):
            fresh[cap] = db.execute("SELECT Name FROM city WHERE CountryCode = 'NLD'", max_rows=cap)
        db.results = ItemResults()
        first = db.execute("SELECT Name FROM city WHERE CountryCode = 'NLD'", max_rows=50)
        for cap in (5, 50):  # a smaller cap: the first rows, truncated, as a fresh fetch
            again = db.execute("SELECT  Name FROM city\nWHERE CountryCode = 'NLD'", max_rows=cap)
            assert (again.rows, again.truncated) == (fresh[cap].rows, fresh[cap].truncated)
            assert again.work == first.work and db.last_work() == first.work
        assert db.results.counts() == {"executed": 1, "reused": 2}
        wide = db.execute("SELECT Name FROM city WHERE CountryCode = 'NLD'", max_rows=10_000)
        assert wide.rows == fresh[10_000].rows and not wide.truncated  # 28 rows: the first run had them all
        db.results = None


def test_a_limit_is_remembered_and_a_smaller_one_fails_as_a_fresh_run(spider_db):
    heavy = "SELECT count(*) FROM city AS a, city AS b WHERE a.ID < 2000"
    with connect(spider_db("world_1")) as db:
        with pytest.raises(WorkLimitExceeded) as fresh:
            db.execute(heavy, timeout=0.2)
        fresh_work = db.last_work()
        db.results = ItemResults()
        ran = db.execute(heavy, timeout=30.0)
        with pytest.raises(WorkLimitExceeded) as reused:  # its work is past 0.2 s of work: it fails there
            db.execute(heavy, timeout=0.2)
        assert str(reused.value) == str(fresh.value) and db.last_work() == fresh_work
        assert db.results.counts() == {"executed": 1, "reused": 1} and ran.rows
        with pytest.raises(QueryError):
            db.execute("SELECT nope FROM city")
        with pytest.raises(QueryError):
            db.execute("SELECT nope FROM  city")  # the same text: the engine error remembered
        assert db.results.counts() == {"executed": 2, "reused": 2}
        db.results = None


def test_sql_key_keeps_quoted_text_and_comments():
    assert sql_key(" SELECT a ,\n b FROM t WHERE c = 'x  y' ") == "SELECT a , b FROM t WHERE c = 'x  y'"
    assert sql_key('SELECT "a  b" FROM [t  u]') == 'SELECT "a  b" FROM [t  u]'
    text = "SELECT 1 -- a comment\nFROM t"
    assert sql_key(text) == text  # a newline ends the comment: not collapsed


def test_the_budget_counts_the_stages_work(spider_db):
    budget = WorkBudget(0.01)
    budget.spend(0.005, "literal checks")
    with pytest.raises(ItemLimitExceeded, match="queries and literal checks used up its budget"):
        budget.spend(0.01, "literal checks")
    assert budget.stage_work["literal checks"] == pytest.approx(0.015)


def test_the_wall_clock_deadline_ends_the_item_with_the_input_kept(spider_db):
    with connect(spider_db("world_1")) as db:
        db.budget = WorkBudget(30.0)
        db.budget.deadline = time.monotonic() + 0.3  # the net, brought close: the query's work would go on
        with pytest.raises(DeadlineExceeded, match="wall-clock deadline"):
            db.execute(ENDLESS, timeout=30.0)
        db.budget = None
        assert db.execute("SELECT 1").rows == [(1,)]


def test_a_cancelled_correction_stops_and_keeps_the_input(spider_db):
    cancel = threading.Event()
    with sqlmend.Corrector(spider_db("world_1")) as fixer:
        timer = threading.Timer(0.3, cancel.set)
        timer.start()
        start = time.monotonic()
        result = fixer.correct("How many?", ENDLESS, cancel=cancel)
        seconds = time.monotonic() - start
        assert result.error.startswith("ItemCancelled: cancelled") and result.sql == ENDLESS
        assert seconds < 10  # not its 24 s of work
        normal = fixer.correct(*FRANCE[:1], "SELECT count(*) FROM city WHERE CountryCode = 'NLD'")
        assert normal.error is None


def test_cancel_between_units_of_work(spider_db):
    budget = WorkBudget(30.0)
    budget.cancel()
    with pytest.raises(ItemCancelled):
        budget.check()
    assert isinstance(budget.aborted, ItemCancelled)
