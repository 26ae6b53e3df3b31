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
