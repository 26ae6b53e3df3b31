"""Model paths of MIRA with recorded answers (a scripted replay backend) on concert_singer."""

from __future__ import annotations

import json

from sqlmend.llm import ReplayBackend
from sqlmend.llm.book import CallBook
from sqlmend.memory.edits import EditGroup
from sqlmend.memory.isolation import collect_evidence, isolate
from sqlmend.memory.judge import judge_model
from sqlmend.memory.recovery import recover
from sqlmend.memory.stage import MemoryStage
from sqlmend.memory.store import MemoryStore
from sqlmend.stage import StageContext
from sqlmend.types import Edit, Task

WRONG = "SELECT name FROM singer WHERE age > 30"
GOLD = "SELECT song_name FROM singer WHERE age > 30 AND country = 'France'"


def test_recovery_feeds_back_differences_until_a_candidate_matches(concert_db):
    backend = ReplayBackend.scripted([json.dumps({"sql": "SELECT song_name FROM singer WHERE age > 30"}),
                                      json.dumps({"sql": GOLD})])
    rec = recover(concert_db, "Songs of French singers over 30?", WRONG, GOLD, backend=backend,
                  max_direct_edits=0)
    assert rec.how == "model" and rec.repair_sql == GOLD and rec.rounds == 2 and rec.usage.chat == 2
    second_prompt = backend.history[1]["messages"][-1]["content"] if isinstance(backend.history[1], dict) \
        else str(backend.history[1])
    assert "differs from the reference" in second_prompt


def test_recovery_gives_up_within_budget(concert_db):
    backend = ReplayBackend.scripted([json.dumps({"sql": "SELECT nme FROM singer"})] * 2)
    rec = recover(concert_db, "q", WRONG, GOLD, backend=backend, budget=2, max_direct_edits=0)
    assert rec.repair_sql is None and "within 2 rounds" in rec.reason


def test_model_judge_may_probe_once_then_decide(concert_db):
    group = EditGroup([Edit("insert", "where", None, "singer.country = 'France'", ["singer.country"])])
    repair = "SELECT singer.song_name FROM singer WHERE singer.age > 30 AND singer.country = 'France'"
    iso = isolate(repair, group, schema=concert_db.schema())
    assert iso.valid, iso.problem
    facts = collect_evidence(concert_db, iso)
    accept = {"accept": True, "error_type": "condition_missing", "applicability": "question restricts to a country",
              "incorrect_behavior": "no country filter", "required_behavior": "keep only singers of that country",
              "repair_behavior": "add the country condition", "reason": "question says French"}
    backend = ReplayBackend.scripted([json.dumps({"accept": False, "probe": "SELECT DISTINCT country FROM singer"}),
                                      json.dumps(accept)])
    usage = CallBook(keep_prompts=False)
    verdict = judge_model(backend, concert_db, "Songs of French singers over 30?", iso, facts, usage)
    assert verdict.accepted and verdict.error_type == "condition_missing" and usage.chat == 2
    assert "France" in str(backend.history[1])  # the probe's rows reached the second call


def test_stage_with_model_activates_and_adapts_a_general_item(tmp_path, concert_db, make_item):
    item = make_item("concert_singer", "general", {}, ["col:select:singer.name", "table:singer"],
                     ["singer.country"])
    with MemoryStore(tmp_path, "concert_singer") as st:
        st.add(item)
    rewrite = "SELECT name FROM singer WHERE age > 30 AND country = 'France'"
    backend = ReplayBackend.scripted([
        json.dumps({"probe": None, "verdicts": [{"item": item.id, "activate": True, "reason": "French asked"}]}),
        json.dumps({"sql": rewrite, "applied": [item.id]})])
    ctx = StageContext(task=Task("t", "concert_singer", "French singers over 30?", WRONG), db=concert_db,
                       sql=WRONG, resolve=lambda stage: backend if stage == "solver" else None)
    trace = MemoryStage.from_config({"store": str(tmp_path)}).run(ctx)
    assert trace.detail["how"] == "model" and trace.verdict.accepted and trace.candidate == rewrite
    assert trace.calls == 2


def test_build_with_a_model_asks_it_only_about_general_groups(concert_db):
    """Dev #6 (CodeS-1B): the column fix is decided by its facts, only the join removal goes to the judge."""
    from sqlmend.memory.build import BuildReport, build_items
    from test_end_to_end import CASE

    reject = {"accept": False, "reason": "the join does not change what is asked"}
    backend = ReplayBackend.scripted([json.dumps(reject)])
    report = BuildReport()
    items = build_items(concert_db, CASE, backend=backend, report=report, db_id="concert_singer")
    assert [i.kind for i in items] == ["column_substitution"] and items[0].support.judged_by == "mechanical"
    assert report.usage.chat == 1 and len(backend.history) == 1 and "JOIN" in str(backend.history[0])
    assert report.rejected["judge"] == 1


def test_a_garbage_answer_counts_both_calls_and_their_tokens():
    """A model that answers garbage twice costs two chat calls and their tokens, and gives None."""
    from pydantic import BaseModel

    from sqlmend.memory.modelcall import ask

    class Answer(BaseModel):
        sql: str

    backend = ReplayBackend.scripted(["no json here", "still none"])
    usage = CallBook(keep_prompts=False)
    assert ask(backend, "recover", Answer, usage, "recovery", question="?", schema="", wrong=WRONG,
               reference=GOLD, feedback="") is None
    assert usage.chat == 2 and usage.tokens_in > 0 and usage.tokens_out == 3 + 2
