"""Hard cases of a training question: gold, rule perturbations, near-miss search candidates (real Spider train)."""

from __future__ import annotations

import random

from sqlmend.data import load_dataset
from sqlmend.search.engine import result_key
from sqlmend.search.hard import cases, near_misses


def test_cases_are_labelled_by_the_gold_rows(spider_conn):
    ds = load_dataset("spider-train")
    tasks = [t for t in ds.tasks if t.db_id in ("student_assessment", "college_2", "department_management")][:12]
    kinds = set()
    for t in tasks:
        db = spider_conn(t.db_id)
        got = cases(t, db, random.Random(0), near=2)
        assert got[0]["kind"] == "gold" and got[0]["correct"] and got[0]["sql"] == t.gold
        gold = result_key(db.execute(t.gold, max_rows=2000))
        for c in got[1:]:
            kinds.add(c["kind"].split(":")[0])
            same = result_key(db.execute(c["sql"], max_rows=2000)) == gold
            assert c["correct"] == same, c
            assert c["sql"] != t.gold
            assert bool(c["types"]) == (not c["correct"])
    assert kinds == {"rule", "near"}


def test_synthesize_adds_hard_negatives_and_weighs_error_types(spider_db):
    from collections import Counter

    from sqlmend import taxonomy
    from sqlmend.synth import synthesize

    ds = load_dataset("spider-train")
    tasks = [t for t in ds.tasks if t.db_id in ("department_management", "college_2")][:16]
    plain = [e for e in synthesize(tasks, lambda d: str(spider_db(d)), compose_rate=0.0) if not isinstance(e, str)]
    assert {e.source for e in plain} == {"gold", "rule"}
    hard = [e for e in synthesize(tasks, lambda d: str(spider_db(d)), compose_rate=0.0, hard_negatives=1,
                                  near_misses=near_misses)
            if not isinstance(e, str)]
    near = [e for e in hard if e.source == "near"]
    assert any(e.labels == [taxonomy.NO_ERROR] for e in near) and any(e.labels != [taxonomy.NO_ERROR] for e in near)
    assert all(e.context and e.operators[0].startswith("near-") for e in near)
    assert len({e.id for e in hard}) == len(hard)
    # all the weight on attribute types: every single-error rule example is one where an operator applied
    weighted = [e for e in synthesize(tasks, lambda d: str(spider_db(d)), compose_rate=0.0,
                                      type_weights={"attribute_mismatch": 1.0, "attribute_missing": 1.0})
                if not isinstance(e, str) and e.source == "rule"]
    got = Counter(e.labels[0] for e in weighted)
    before = Counter(e.labels[0] for e in plain if e.source == "rule")
    share = lambda c: (c["attribute_mismatch"] + c["attribute_missing"]) / sum(c.values())  # noqa: E731
    assert share(got) > share(before) and share(got) > 0.8


def test_type_weights_spread_a_kind_over_its_types():
    import pytest

    from sqlmend.bench.errorkind import KIND_TYPES, type_weights

    w = type_weights({"kinds": {"table": {"n": 30}, "clause": {"n": 10}, "not judgeable": {"n": 99}}})
    assert w == {t: 10.0 for t in KIND_TYPES["table"]} | {t: 5.0 for t in KIND_TYPES["clause"]}
    assert type_weights({"value_error": 2}) == {"value_error": 2.0}
    with pytest.raises(ValueError, match="neither"):
        type_weights({"nonsense": 1})
