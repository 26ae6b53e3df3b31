from collections import Counter

import pytest

from sqlmend.data.hardness import SpiderParseError, count_component1, count_others, hardness, parse, tokenize


def test_spider_dev_levels_match_the_published_split(spider_dev):
    # Spider's evaluation.py puts dev into 248 easy, 446 medium, 174 hard, 166 extra.
    assert Counter(t.difficulty for t in spider_dev) == {"easy": 248, "medium": 446, "hard": 174, "extra": 166}


@pytest.mark.parametrize("sql, level", [
    ("SELECT count(*) FROM singer", "easy"),
    ("SELECT name FROM singer ORDER BY age DESC LIMIT 1", "medium"),
    ("SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
     "WHERE T1.year = 2014 OR T1.year = 2015", "hard"),
    ("SELECT name FROM singer WHERE id NOT IN (SELECT singer_id FROM singer_in_concert)", "hard"),
    ("SELECT name FROM a WHERE x = 1 INTERSECT SELECT name FROM b WHERE y = 2", "hard"),
    ("SELECT name FROM a WHERE x = 1 AND z = 3 INTERSECT SELECT name FROM b WHERE y = 2", "extra"),
])
def test_levels(sql, level):
    assert hardness(sql) == level


def test_having_connectors_count_as_aggregates_like_spider():
    # Spider's count_agg runs over the HAVING list, connectors included ('and'[0] != 0).
    # (its cond units start with the NOT flag, so their own aggregates are not counted).
    with_and = parse("SELECT count(*) FROM t GROUP BY a HAVING count(*) > 1 AND sum(b) > 2")
    without = parse("SELECT count(*) FROM t GROUP BY a HAVING count(*) > 1")
    assert count_others(with_and) == 1  # select count(*) + the 'and' = 2 aggregates
    assert count_others(without) == 0
    assert count_component1(with_and) == 1  # GROUP BY


def test_tokenize_keeps_string_case_and_merges_comparisons():
    assert tokenize("SELECT * FROM t WHERE name = 'Ab c' AND x >= 3") == [
        "select", "*", "from", "t", "where", "name", "=", '"Ab c"', "and", "x", ">=", "3"]


def test_outside_grammar_is_none():
    with pytest.raises(SpiderParseError):
        tokenize("SELECT 'unbalanced")
    assert hardness("SELECT 1") is None  # no FROM: Spider's reader refuses it
