"""The validate-or-retain guard on real Spider databases (MIRA §3.3.3)."""

from __future__ import annotations

import pytest

from sqlmend import guard
from sqlmend.types import ExecResult


@pytest.fixture()
def db(spider_db):
    from sqlmend.db import connect

    with connect(str(spider_db("concert_singer"))) as conn:
        yield conn


ORIGINAL = "SELECT name FROM singer WHERE country = 'france'"


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        ("", "empty candidate"),
        ("   ", "empty candidate"),
        (None, "empty candidate"),
        ("SELECT  name FROM singer\nWHERE country = 'france' ;", "identical"),
        ("SELECT name FROM singer WHERE", "does not parse"),
        ("SELECT 1; SELECT 2", "does not parse"),
        ("DELETE FROM singer", "not a read-only"),
        ("DROP TABLE singer", "not a read-only"),
        ("SELECT nam FROM singer", "candidate failed"),
        ("SELECT name FROM singer WHERE country = 'Atlantis'", "result unchanged"),
    ],
)
def test_rejections_keep_the_input(db, candidate, reason):
    verdict = guard.validate(db, ORIGINAL, candidate, timeout=5)
    assert not verdict.accepted
    assert reason in verdict.reason
    assert verdict.sql == ORIGINAL


def test_accepts_a_rewrite_that_changes_the_result(db):
    candidate = "SELECT name FROM singer WHERE country = 'France'"
    verdict = guard.validate(db, ORIGINAL, candidate, timeout=5)
    assert verdict.accepted, verdict.reason
    assert verdict.sql == candidate


def test_accepts_a_working_rewrite_of_a_failing_input(db):
    verdict = guard.validate(db, "SELECT nam FROM singer", "SELECT name FROM singer", timeout=5)
    assert verdict.accepted
    assert "input failed" in verdict.reason


def test_row_order_matters_only_when_the_candidate_orders(db):
    a = "SELECT name FROM singer"
    reordered = "SELECT name FROM (SELECT name FROM singer ORDER BY name DESC)"
    assert not guard.validate(db, a, reordered, timeout=5).accepted
    ordered = "SELECT name FROM singer ORDER BY name DESC"
    assert guard.validate(db, a, ordered, timeout=5).accepted


def test_a_known_input_result_is_not_recomputed(db):
    fake = ExecResult(columns=["name"], rows=[("Joe Sharp",)])
    candidate = "SELECT name FROM singer WHERE name = 'Joe Sharp'"
    verdict = guard.validate(db, "SELECT 'whatever'", candidate, original_result=fake)
    assert not verdict.accepted and "unchanged" in verdict.reason


def test_same_result_compares_values_not_names():
    a = ExecResult(columns=["x"], rows=[(1,), (2.0,)])
    b = ExecResult(columns=["y"], rows=[(2,), (1,)])
    assert guard.same_result(a, b)
    assert not guard.same_result(a, b, ordered=True)
    assert not guard.same_result(a, ExecResult(columns=["x", "z"], rows=[(1, 1), (2, 2)]))


def test_times_out(spider_db):
    from sqlmend.db import connect

    slow = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) "
            "SELECT count(*) FROM c")
    with connect(str(spider_db("concert_singer"))) as conn:
        verdict = guard.validate(conn, "SELECT 1", slow, timeout=0.3)
    assert not verdict.accepted
    assert "timed out" in verdict.reason
