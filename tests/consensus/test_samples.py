"""A model's samples as second opinions (``consensus.samples``): k answers asked of the ``sampler``
stage's model (recorded answers: the edge of the world), treated as alternatives; off by default."""

from __future__ import annotations

import json

from sqlmend.llm import ReplayBackend
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.types import Task

FRANCE = "How many singers are from France?"
WRONG = "SELECT count(*) FROM singer WHERE Country = 'French'"
RIGHT = "SELECT count(*) FROM singer WHERE country = 'France'"
ALSO = "SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'"


def _task(spider_db, sql=WRONG, question=FRANCE, alternatives=()):
    return Task(question_id="q", db_id="concert_singer", question=question, sql=sql,
                db=str(spider_db("concert_singer")), alternatives=list(alternatives))


def _consensus(c):
    return next(s for s in c.stages if s.stage == "consensus")


def _pipe(model, samples, **options):
    return Pipeline(PipelineConfig(options={"consensus": {"samples": samples, **options}}),
                    resolve=lambda stage: model if stage == "sampler" else None)


def test_k_samples_are_asked_independently_and_vote_as_alternatives(spider_db):
    model = ReplayBackend.scripted([json.dumps({"sql": RIGHT}), json.dumps({"sql": ALSO}),
                                    json.dumps({"sql": "SELECT count(*) FROM singer"})])
    c = _pipe(model, 3, temperature=0.5, seed=7).correct(_task(spider_db))
    t = _consensus(c)
    assert c.sql == RIGHT and t.detail["admitted_by"] == "consensus (strict)"
    assert t.calls == 3 and [s["seed"] for s in t.detail["samples"]] == [7, 8, 9]
    assert [a["sql"] for a in t.detail["consensus"]["alternatives"]] == [RIGHT, ALSO,
                                                                          "SELECT count(*) FROM singer"]
    # each call: the question, its schema, structured output, distinct seeds at the temperature; never the query
    asked = model.history
    assert [r["options"]["seed"] for r in asked] == [7, 8, 9] and {r["options"]["temperature"] for r in asked} == {0.5}
    assert all(set(r["schema"]["properties"]) == {"sql"} for r in asked)
    prompt = "\n".join(m["content"] for m in asked[0]["messages"])
    assert f"Question: {FRANCE}" in prompt and "singer" in prompt and "French" not in prompt


def test_samples_join_the_given_alternatives_after_them(spider_db):
    model = ReplayBackend.scripted([json.dumps({"sql": RIGHT})])
    c = _pipe(model, 1).correct(_task(spider_db, alternatives=["SELECT count(*) FROM singer WHERE Country = 'France'"]))
    assert [a["sql"] for a in _consensus(c).detail["consensus"]["alternatives"]] == [
        "SELECT count(*) FROM singer WHERE Country = 'France'", RIGHT]
    assert c.sql == "SELECT count(*) FROM singer WHERE Country = 'France'"


def test_garbage_and_hostile_samples_are_reported_and_never_run(spider_db):
    # a failed call (garbage twice), a write, a raw answer in a fence holding a write, prose with no SQL
    model = ReplayBackend.scripted(["not json", "still not json", json.dumps({"sql": "DROP TABLE singer"}),
                                    json.dumps({"sql": "```sql\nDELETE FROM singer\n```"}),
                                    json.dumps({"sql": "I cannot answer that."})])
    task = _task(spider_db)
    c = _pipe(model, 4).correct(task)
    t = _consensus(c)
    assert c.sql == WRONG
    assert "error" in t.detail["samples"][0] and "StructuredOutputError" in t.detail["samples"][0]["error"]
    statuses = [a["status"] for a in t.detail["consensus"]["alternatives"]]
    assert statuses[:2] == ["refused", "refused"] and statuses[2] in ("failed", "refused")
    assert t.calls == 5 and len(t.detail["samples"]) == 4
    assert t.detail["consensus"]["decision"]["replace"] is False
    from sqlmend.db import connect
    with connect(task.db) as db:  # nothing was written
        assert db.execute("SELECT count(*) FROM singer").rows == [(6,)]


def test_samples_off_by_default_leave_no_trace(spider_db):
    from sqlmend.consensus.stage import ConsensusSettings

    model = ReplayBackend.scripted([])
    c = Pipeline(PipelineConfig(), resolve=lambda stage: model if stage == "sampler" else None).correct(_task(spider_db))
    assert ConsensusSettings().samples == 0
    assert "consensus" not in [s.stage for s in c.stages] and model.history == [] and c.sql == WRONG


def test_samples_without_a_model_say_so(spider_db):
    c = _pipe(None, 2).correct(_task(spider_db))
    t = _consensus(c)
    assert t.status == "skipped" and "no model is configured for the sampler stage" in t.note and c.sql == WRONG


def test_the_refiner_is_shown_the_samples_groups(spider_db):
    older = "SELECT count(*) FROM singer WHERE Age > 40"
    model = ReplayBackend.scripted([json.dumps({"sql": older}), json.dumps({"sql": older.upper()}),
                                    json.dumps({"errors": []}),
                                    json.dumps({"sql": "SELECT count(*) FROM singer", "addressed": [], "no_change": True})])
    pipe = Pipeline(PipelineConfig(stages=["static", "consensus", "refine", "guard"], model_gate=False,
                                   options={"consensus": {"samples": 2}}),
                    resolve=lambda stage: model if stage in ("sampler", "refiner", "localizer") else None)
    c = pipe.correct(_task(spider_db, sql="SELECT count(*) FROM singer", question="How many singers are there?"))
    assert next(s for s in c.stages if s.stage == "refine").status == "ran"
    refine_prompt = json.dumps(model.history[-1])
    assert "other_answers" in refine_prompt and older in refine_prompt
