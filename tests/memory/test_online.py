"""Online reuse (MIRA §3.3) on the real concert_singer database: retrieval, activation, adaptation, guard."""

from __future__ import annotations

from sqlmend.memory.activation import observe
from sqlmend.memory.keys import sql_keys
from sqlmend.memory.retrieval import Candidate, merge, retrieve
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import MemoryStore
from sqlmend.stage import StageContext
from sqlmend.types import Task

VALUE_ITEM = dict(kind="value_binding", params={"column": "singer.country", "wrong": "france", "right": "France",
                                               "clause": "where"},
                  keys=["cmp:singer.country", "col:where:singer.country", "table:singer"], refs=["singer.country"])
DISTINCT_ITEM = dict(kind="distinct", params={"columns": ["singer.country"]},
                     keys=["col:select:singer.country", "table:singer"], refs=["singer.country"])


def _stage(tmp_path, make_item, *specs, **kw) -> MemoryStage:
    with MemoryStore(tmp_path, "concert_singer") as store:
        for i, spec in enumerate(specs):
            store.add(make_item("concert_singer", qid=f"h{i}", **spec))
    return MemoryStage.from_config({"store": str(tmp_path), **kw})


def _run(stage, db, sql, question="Show the names of singers from France."):
    task = Task("t1", "concert_singer", question, sql)
    return stage.run(StageContext(task=task, db=db, sql=sql))


def test_observe_reports_unstored_literal_and_its_variant(concert_db):
    obs = observe(concert_db, "SELECT name FROM singer WHERE country = 'france'")
    assert obs == [{"column": "singer.country", "op": "EQ", "literal": "france", "rows": 0, "variants": ["France"]}]


def test_value_binding_item_repairs_a_new_query_mechanically(tmp_path, concert_db, make_item):
    trace = _run(_stage(tmp_path, make_item, VALUE_ITEM), concert_db, "SELECT name, age FROM singer WHERE country = 'france'")
    assert trace.verdict is not None and trace.verdict.accepted, trace.note
    assert trace.candidate == "SELECT name, age FROM singer WHERE country = 'France'"
    assert trace.detail["how"] == "mechanical"
    assert trace.findings[0].source == "memory" and trace.calls == 0


def test_value_binding_not_activated_when_literal_is_stored(tmp_path, concert_db, make_item):
    trace = _run(_stage(tmp_path, make_item, VALUE_ITEM), concert_db, "SELECT name FROM singer WHERE country = 'France'")
    assert trace.candidate is None and not trace.findings
    assert "no violation" in trace.detail["activation"][0]["reason"]


def test_without_verification_the_item_fires_but_the_guard_keeps_a_no_op(tmp_path, concert_db, make_item):
    stage = _stage(tmp_path, make_item, DISTINCT_ITEM, verify=False)
    trace = _run(stage, concert_db, "SELECT name, country FROM singer")
    assert trace.candidate == "SELECT DISTINCT name, country FROM singer"
    assert not trace.verdict.accepted and "unchanged" in trace.verdict.reason


def test_distinct_item_needs_duplicate_rows(tmp_path, concert_db, make_item):
    stage = _stage(tmp_path, make_item, DISTINCT_ITEM)
    dup = _run(stage, concert_db, "SELECT country FROM singer WHERE age > 20", "What are the countries of singers?")
    assert dup.verdict.accepted and dup.candidate.startswith("SELECT DISTINCT country")
    unique = _run(stage, concert_db, "SELECT country, name FROM singer", "Countries and names of singers?")
    assert unique.candidate is None


def test_no_memory_for_database_skips(tmp_path, concert_db, make_item):
    trace = _run(MemoryStage.from_config({"store": str(tmp_path)}), concert_db, "SELECT 1")
    assert trace.status == "skipped"


def test_merge_alternates_channels_without_duplicates(make_item):
    a, b, c = (make_item("x", "distinct", {"columns": []}, [f"k{i}"], [], qid=f"q{i}") for i in range(3))
    sem = [Candidate(a, "semantic", 0.9), Candidate(b, "semantic", 0.8)]
    struct = [Candidate(b, "structural", 2), Candidate(c, "structural", 1)]
    assert [x.item.id for x in merge(sem, struct, budget=3)] == [b.id, a.id, c.id]
    assert len(merge(sem, struct, budget=1)) == 1


def test_structural_retrieval_counts_shared_keys(make_item):
    item = make_item("concert_singer", **VALUE_ITEM)
    keys = sql_keys("SELECT T1.name FROM singer AS T1 WHERE T1.country = 'x'")
    [cand] = retrieve([item], keys)
    assert cand.channel == "structural" and cand.score == 3
    assert retrieve([item], sql_keys("SELECT name FROM stadium")) == []
