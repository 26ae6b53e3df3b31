"""Failing originals made from golds (synth.failing) on a real Spider database."""

from __future__ import annotations

import random

import pytest

from sqlmend.search import train
from sqlmend.search.engine import result_key
from sqlmend.synth.failing import KINDS, failing, variants

GOLD = ("SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id "
        "WHERE T1.concert_id = 1")


@pytest.fixture
def concert(spider_conn):
    return spider_conn("concert_singer")


def test_each_kind_of_break_and_only_the_refused_ones_are_kept(concert):
    made = dict(variants(GOLD, random.Random(0)))
    assert set(made) == set(KINDS)
    assert "T1." not in made["unqualified"] and "JOIN" in made["unqualified"]
    assert "JOIN" not in made["join dropped"]
    broken = dict(failing(GOLD, concert, random.Random(0)))
    # singer_id is in both tables (ambiguous); without the join, singer has no concert_id
    assert {"unqualified", "join dropped"} <= set(broken)
    for text in broken.values():
        with pytest.raises(Exception):
            concert.execute(text)


def test_a_gold_without_a_join_gives_none(concert):
    assert variants("SELECT name FROM singer WHERE age > 20") == []
    assert failing("SELECT name FROM singer WHERE age > 20", concert) == []


def test_the_training_cases_get_a_failing_original(concert):
    gold_res = concert.execute(GOLD)
    cases = train._cases(_task(), concert, gold_res, random.Random(1), 2, 5.0, kinds=("failing",))
    assert cases[0] == ("gold", GOLD)
    kind, text = cases[1]
    assert kind.startswith("failing:") and kind.split(":")[1] in KINDS
    with pytest.raises(Exception):
        concert.execute(text)
    assert result_key(gold_res)  # the gold itself runs


def _task():
    from sqlmend.types import Task

    return Task(question_id="t1", db_id="concert_singer", question="Names of singers in concert 1?", sql="",
                gold=GOLD)
