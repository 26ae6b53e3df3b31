"""The consensus stage in the pipeline: only with alternatives, a finding, candidates for the search,
a replacement under the rule, the item's one budget."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app
from sqlmend.errors import ConfigError
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.types import Task

FRANCE = "How many singers are from France?"
AIRLINES = ("SELECT airlines.airline FROM flights JOIN airlines ON flights.airline = airlines.uid "
            "GROUP BY flights.airline HAVING count(*) >= 10")


def _task(spider_db, db_id, question, sql, alternatives=()):
    return Task(question_id="q", db_id=db_id, question=question, sql=sql, db=str(spider_db(db_id)),
                alternatives=list(alternatives))


def _stage(c, name):
    return next(s for s in c.stages if s.stage == name)


@pytest.fixture(scope="module")
def pipe():
    return Pipeline(PipelineConfig(), resolve=lambda stage: None)


def test_without_alternatives_the_stage_leaves_no_trace(pipe, spider_db):
    task = _task(spider_db, "concert_singer", FRANCE, "SELECT count(*) FROM singer WHERE Country = 'French'")
    c = pipe.correct(task)
    without = Pipeline(PipelineConfig(stages=["static", "memory", "search", "refine", "guard"]),
                       resolve=lambda stage: None).correct(task)
    assert [s.stage for s in c.stages] == [s.stage for s in without.stages] == [
        "static", "memory", "search", "refine", "guard"]
    assert c.sql == without.sql


def test_an_outvoted_suspect_query_is_replaced_and_the_trace_names_the_rule(pipe, spider_db):
    c = pipe.correct(_task(spider_db, "concert_singer", FRANCE, "SELECT count(*) FROM singer WHERE Country = 'French'",
                           ["SELECT count(*) FROM singer WHERE country = 'France'",
                            "SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'"]))
    assert c.sql == "SELECT count(*) FROM singer WHERE country = 'France'"
    t = _stage(c, "consensus")
    assert t.verdict.accepted and t.detail["admitted_by"] == "consensus (strict)"
    assert "replaced by the strict rule" in t.note and t.detail["consensus"]["decision"]["tier"] == "suspect"
    assert [f.code for f in t.findings] == ["consensus"] and t.findings[0].score > 0.6
    # the findings were about the query it replaced: refinement gets none
    assert _stage(c, "refine").note.startswith("no error detected")
    assert _stage(c, "guard").verdict.accepted


def test_a_vote_against_a_trusted_query_flags_it_and_offers_the_search_its_answer(pipe, spider_db):
    c = pipe.correct(_task(spider_db, "concert_singer", "How many singers are there?", "SELECT count(*) FROM singer",
                           ["SELECT count(*) FROM singer WHERE Age > 40",
                            "SELECT COUNT(Singer_ID) FROM singer WHERE Age > 40"]))
    t = _stage(c, "consensus")
    assert "the verifier prefers the original" in t.note and t.candidate is None
    search = _stage(c, "search")
    assert search.detail["flags"] == ["consensus"] and search.detail["offered"] == 1
    offered = next(d for d in search.detail["top"] if d["edits"] == ["alternative 1 (2 of 2 agree)"])
    assert offered["sql"] == "SELECT count(*) FROM singer WHERE Age > 40"
    # the vote is not among the verifier's features: the original keeps the score it has without it
    assert search.detail["original"]["score"] > 0.8 and c.sql == "SELECT count(*) FROM singer"


def test_the_search_finds_the_alternatives_rows_itself_then_nothing_is_offered(pipe, spider_db):
    c = pipe.correct(_task(spider_db, "flight_2", "Which airlines have at least 10 flights?", AIRLINES,
                           ["SELECT airline FROM flights GROUP BY airline HAVING COUNT(*) >= 10",
                            "SELECT Airline FROM flights GROUP BY Airline HAVING count(*) >= 10"]))
    search = _stage(c, "search")
    assert "offered" not in search.detail and c.sql == AIRLINES


def test_an_endless_alternative_stops_at_its_own_limit_and_the_item_goes_on(spider_db):
    pipe = Pipeline(PipelineConfig(timeout=2.0, stages=["static", "consensus", "guard"]), resolve=lambda s: None)
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    c = pipe.correct(_task(spider_db, "concert_singer", "How many singers are there?", "SELECT count(*) FROM singer",
                           [endless, "SELECT count(*) FROM singer"]))
    assert c.error is None and c.sql == "SELECT count(*) FROM singer"
    statuses = [a["status"] for a in _stage(c, "consensus").detail["consensus"]["alternatives"]]
    assert statuses == ["timeout", "ok"]


def test_the_risk_rule_needs_a_history_and_reads_one(tmp_path):
    with pytest.raises(ValueError, match="needs a labelled history"):  # as every bad option, when the config is built
        PipelineConfig(options={"consensus": {"risk": 0.01}})
    with pytest.raises(ConfigError, match="no such history file"):
        Pipeline(PipelineConfig(options={"consensus": {"risk": 0.01, "history": str(tmp_path / "none.json")}}))
    from sqlmend.consensus.risk import History, Labelled

    path = History([Labelled(str(i), True, None) for i in range(300)], source="h").save(tmp_path / "h.json")
    pipe = Pipeline(PipelineConfig(options={"consensus": {"risk": 0.01, "history": str(path)}}))
    stage = next(s for s in pipe.stages if getattr(s, "name", "") == "consensus")
    assert stage.rule.name == "risk" and stage.rule.threshold == -1.0
    assert "300 correct history queries of h" in stage.rule.title


def test_correct_takes_alternative_files_aligned_with_the_predictions(tmp_path, data_dir):
    shared = data_dir / "predictions" / "spider-dev"
    args = ["correct", "--dataset", "spider-dev", "--pred", str(shared / "codes-1b.sql"), "--alt",
            str(shared / "din-sql_gpt-4.sql"), "--alt", str(shared / "dail-sql_gpt-4.sql"), "--limit", "4",
            "--stages", "static,consensus,guard", "--quiet", "--out", str(tmp_path / "run")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "run" / "corrections.jsonl").read_text().splitlines()]
    assert [[s["stage"] for s in x["stages"]] for x in rows] == [["static", "consensus", "guard"]] * 4
    first = rows[0]["stages"][1]["detail"]["consensus"]
    dev = [line.strip() for line in (shared / "din-sql_gpt-4.sql").read_text().splitlines()[:1]]
    assert first["k"] == 2 and first["alternatives"][0]["sql"] == dev[0]
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert [p.rsplit("/", 1)[1] for p in run["alternatives"]] == ["din-sql_gpt-4.sql", "dail-sql_gpt-4.sql"]
    from sqlmend.review.run import Run, p_errors  # the review orders such a run by the vote's P(error)

    assert p_errors(Run.load(tmp_path / "run")) == {
        x["question_id"]: x["stages"][1]["detail"]["consensus"]["p_error"] for x in rows}
    short = tmp_path / "short.sql"
    short.write_text("SELECT 1\n")
    r = CliRunner().invoke(app, args[:-1] + [str(tmp_path / "other"), "--alt", str(short)])
    assert r.exit_code == 1 and "short.sql: 1 lines, but spider-dev has 1034 questions" in r.output


def test_the_refiner_is_shown_the_other_answers(spider_db):
    import json as _json

    from sqlmend.llm import ReplayBackend

    model = ReplayBackend.scripted([_json.dumps({"errors": []}),
                                    _json.dumps({"sql": "SELECT count(*) FROM singer", "addressed": [],
                                                 "no_change": True})])
    pipe = Pipeline(PipelineConfig(stages=["static", "consensus", "refine", "guard"], model_gate=False),
                    resolve=lambda stage: model if stage in ("refiner", "localizer") else None)
    c = pipe.correct(_task(spider_db, "concert_singer", "How many singers are there?", "SELECT count(*) FROM singer",
                           ["SELECT count(*) FROM singer WHERE Age > 40", "SELECT COUNT(*) FROM singer WHERE Age > 40"]))
    assert _stage(c, "refine").status == "ran" and c.sql == "SELECT count(*) FROM singer"
    refine_prompt = json.dumps(model.history[-1])
    assert "other_answers" in refine_prompt and "SELECT count(*) FROM singer WHERE Age > 40" in refine_prompt


def test_a_failing_query_replaced_by_another_answer_is_judged_by_the_consensus_rule(pipe, spider_db):
    """The second law at admission judges edits (no clause dropped, no table added); another system's whole
    answer is judged by the consensus rule, which keeps what the question names."""
    from sqlmend import guard
    from sqlmend.db import connect

    original, other = "SELECT qqq FROM singer WHERE Age > 0", "SELECT Name FROM singer"
    with connect(str(spider_db("concert_singer"))) as db:
        assert "drops part of the query" in guard.SecondLaw(db, original, "Names of the singers?").check(other)
    c = pipe.correct(_task(spider_db, "concert_singer", "Names of the singers?", original, [other]))
    t = _stage(c, "consensus")
    assert t.detail["consensus"]["decision"]["tier"] == "fails" and t.verdict.accepted and c.sql == other
    # what the question names still counts: a failing query that names 30 is not replaced by one that drops it
    c = pipe.correct(_task(spider_db, "concert_singer", "Names of the singers older than 30?",
                           "SELECT qqq FROM singer WHERE Age > 30", ["SELECT Name FROM singer"]))
    assert _stage(c, "consensus").candidate is None and "drops what the question names (30)" in _stage(c, "consensus").note


def test_when_an_earlier_stage_rewrote_the_query_the_vote_on_the_query_as_given_is_kept(pipe, spider_db):
    question = "Find the number of dog pets that are raised by female students (with sex F)."
    given = ("SELECT count(*) FROM Student AS T1 JOIN Has_Pet AS T2 ON T1.StuID = T2.StuID JOIN Pets AS T3 "
             "ON T2.PetID = T3.PetID WHERE T1.Sex = 'F' AND T3.PetType = 'Dog'")
    alternatives = ["SELECT count(*) FROM student JOIN has_pet ON student.stuid = has_pet.stuid JOIN pets ON "
                    "has_pet.petid = pets.petid WHERE student.sex = 'F' AND pets.pettype = 'dog'",
                    "SELECT count(*) FROM Pets WHERE PetType = 'cat'"]
    c = pipe.correct(_task(spider_db, "pets_1", question, given, alternatives))
    vote = _stage(c, "consensus").detail["consensus"]
    assert _stage(c, "static").verdict.accepted and "'dog'" in vote["original"]["sql"]
    assert vote["agree"] == 1  # the rewrite: one alternative returns its rows
    # the query as given returns 0 rows, which no alternative returns; the static rewrite votes against it
    assert vote["given"] == {"sql": given, "k": 2, "agree": 0, "p_error": 1.0, "rewritten_by": ["static"],
                             "error": None}
    assert vote["p_error"] < 0.5
    assert "as given, before the static rewrite: 0 of 2 return its rows (P(error) 1.000)" in _stage(c, "consensus").note
    # a query nothing rewrote has no such vote
    plain = pipe.correct(_task(spider_db, "pets_1", question, vote["original"]["sql"], alternatives))
    assert "given" not in _stage(plain, "consensus").detail["consensus"]
