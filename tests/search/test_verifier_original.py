"""The shipped verifier scores one query alone (the verifier used as a detector), on real Spider DBs."""

from __future__ import annotations

from sqlmend import rules
from sqlmend.search.verifier import FeatureVerifier


def test_a_query_alone_gets_a_probability_that_separates_gold_from_broken(spider_conn):
    db = spider_conn("concert_singer")
    v = FeatureVerifier()
    q = "How many singers do we have?"
    gold = "SELECT count(*) FROM singer"
    p_gold = v.p_correct(db, gold, q, findings=rules.check(db, gold, q))
    bad = "SELECT name FROM singer WHERE age > 1000"  # answers no count, returns nothing
    p_bad = v.p_correct(db, bad, q, findings=rules.check(db, bad, q))
    failing = "SELECT count(*) FROM singers"  # no such table
    p_fail = v.p_correct(db, failing, q)
    assert 0 <= p_fail < p_gold <= 1 and p_bad < p_gold
    assert p_gold == v.p_correct(db, gold, q, findings=rules.check(db, gold, q), value_index=db.value_index())


def test_a_query_judged_with_the_search_stages_search(spider_conn):
    """``judge(search=...)`` runs the search stage's code path: the same candidates, the same scores."""
    from sqlmend.search.stage import SearchOptions, SearchStage
    from sqlmend.stage import StageContext
    from sqlmend.types import Task

    db = spider_conn("concert_singer")
    v = FeatureVerifier()
    q = "What is the average age of all singers?"
    wrong = "SELECT max(age) FROM singer"  # one aggregate away from the answer
    opts = SearchOptions(scope="all", budget=30.0, top=50)  # a budget it never reaches: deterministic
    alone = v.judge(db, wrong, q, findings=rules.check(db, wrong, q))
    assert alone.candidates is None and alone.best is None
    assert alone.p_correct == v.p_correct(db, wrong, q, findings=rules.check(db, wrong, q))
    found = v.judge(db, wrong, q, findings=rules.check(db, wrong, q), search=opts.search_settings())
    assert found.p_correct == alone.p_correct and found.candidates > 0 and found.seconds > 0
    assert found.best > found.p_correct  # the search finds a candidate the verifier trusts more
    ctx = StageContext(task=Task("1", "concert_singer", q, wrong), db=db, sql=wrong)
    ctx.findings = rules.check(db, wrong, q)
    trace = SearchStage(opts).run(ctx)
    assert trace.detail["distinct"] == found.candidates
    assert trace.detail["top"][0]["score"] == round(found.best, 4)


def test_a_query_that_does_not_parse_is_not_searched(spider_conn):
    """The search stage skips SQL that does not parse; judge says "no search" (None), not "nothing found" (0)."""
    from sqlmend.search.stage import SearchOptions

    db = spider_conn("concert_singer")
    q = "What is the average age of all singers?"
    broken = "SELECT avg(age) FROM singer WHERE"
    found = FeatureVerifier().judge(db, broken, q, search=SearchOptions().search_settings())
    assert found.candidates is None and found.best is None and 0 <= found.p_correct <= 1
