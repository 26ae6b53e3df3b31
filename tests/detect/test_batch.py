"""Judging many items: one item that cannot be judged gets its own error, the others their scores."""

from __future__ import annotations

from sqlmend.detect.batch import Item, judge
from sqlmend.search.verifier import FeatureVerifier


def test_an_item_that_fails_gets_an_error_and_the_batch_goes_on(spider_db):
    q = "What is the average age of all singers?"
    # pets_1 is not in the mapping (a KeyError from the caller's lookup); no_such_db's file is missing
    paths = {"concert_singer": str(spider_db("concert_singer")), "no_such_db": "/nonexistent/no_such_db.sqlite"}
    items = [Item("a", "1", "concert_singer", q, "SELECT avg(age) FROM singer"),
             Item("b", "2", "pets_1", "How many pets?", "SELECT count(*) FROM pets"),
             Item("c", "3", "concert_singer", q, "SELECT max(age) FROM singer"),
             Item("d", "4", "no_such_db", q, "SELECT 1")]
    out = judge(items, lambda d: paths[d], static=True, progress=False, verifier=FeatureVerifier())
    by = {j.key: j for j in out}
    assert by["b"].error.startswith("KeyError") and by["b"].p_correct is None
    assert by["d"].error and "no_such_db" in by["d"].error  # a missing database: the library's own error
    assert by["a"].error is None and by["c"].error is None
    assert by["a"].p_correct > by["c"].p_correct
