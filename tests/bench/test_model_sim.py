"""The simulated model of known quality, the model gate it shaped, and ``sqlmend bench model-sim``.

Everything runs on the real Spider dev data: the simulated model answers from the real golds and
real wrong predictions; the stages it answers run their real prompts, schemas and parsing; the
gate runs the shipped verifier and rules on the real databases.
"""

from __future__ import annotations

import json

import pytest

from sqlmend.bench.modelsim import OURS, bench_model_sim, pays_from, write_html
from sqlmend.bench.simmodel import Oracle, Rates, SimulatedModel, wrong_pool
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.refine.refiner import RewriteAnswer
from sqlmend.types import Task

CONCERT = [str(i) for i in range(45)]  # dev questions 0..44 are concert_singer's


@pytest.fixture(scope="module")
def oracle(spider_dev):
    return Oracle(spider_dev)


@pytest.fixture(scope="module")
def pool(spider_dev, pred_dir):
    return wrong_pool(spider_dev, sorted(pred_dir.glob("*.sql")))


def _ask(sim: SimulatedModel, question: str) -> str:
    """One RefLLM-shaped call (the answer schema of ErrorLLM's refinement)."""
    res = sim.chat([{"role": "user", "content": f"### Task\nQuestion: {question}\nSQL: SELECT 1"}],
                   schema=RewriteAnswer, stage="refiner")
    return res.parsed.sql


def test_a_rewrite_is_right_at_the_fix_rate_and_otherwise_a_real_wrong_query(spider_dev, oracle, pool):
    tasks = [spider_dev.task(q) for q in CONCERT]
    right = SimulatedModel("sim-q1", oracle=oracle, pool=pool, rates=Rates(1.0, 0.0))
    answers = [_ask(right, t.question) for t in tasks]
    assert all(oracle.right(t.question_id, a) for t, a in zip(tasks, answers))
    assert sum(" ".join(a.split()) != " ".join((t.gold or "").split()) for t, a in zip(tasks, answers)) > 30, \
        "the gold is written otherwise (aliases, case, layout), not copied"
    wrong = SimulatedModel("sim-q0", oracle=oracle, pool=pool, rates=Rates(0.0, 0.0))
    for t in tasks:
        answer = _ask(wrong, t.question)
        assert not answer or not oracle.right(t.question_id, answer)
        if pool.get(t.question_id):
            assert answer in pool[t.question_id], "a real wrong prediction of a shared file"
    half = SimulatedModel("sim-q0.5", oracle=oracle, pool=pool, rates=Rates(0.5, 0.1))
    share = sum(oracle.right(t.question_id, _ask(half, t.question)) for t in tasks) / len(tasks)
    assert 0.3 <= share <= 0.7


def test_draws_are_seeded_and_nested_across_qualities(spider_dev, oracle, pool):
    tasks = [spider_dev.task(q) for q in CONCERT]

    def rights(q: float, seed: int = 0) -> set[str]:
        sim = SimulatedModel(f"sim-q{q}", oracle=oracle, pool=pool, rates=Rates(q, 0.1, seed=seed))
        return {t.question_id for t in tasks if oracle.right(t.question_id, _ask(sim, t.question))}

    assert rights(0.4) == rights(0.4)
    assert rights(0.4) <= rights(0.6) <= rights(0.8), "what q fixes, a better q fixes too"
    assert rights(0.5, seed=1) != rights(0.5, seed=0)


def test_a_judge_is_right_at_its_accuracy(oracle, pool, spider_dev):
    gold = spider_dev.task("0").gold
    prompt = ("Question: How many singers do we have?\n[0] SELECT name FROM singer\n    -> 1 row(s)\n"
              f"[1] {gold}\n    -> 1 row(s)\nAnswer with one number from 0 to 1, nothing else.")
    honest = SimulatedModel("j1", oracle=oracle, pool=pool, rates=Rates(0.0, 0.0, judge_accuracy=1.0))
    liar = SimulatedModel("j0", oracle=oracle, pool=pool, rates=Rates(0.0, 0.0, judge_accuracy=0.0))
    assert honest.chat([{"role": "user", "content": prompt}]).text == "1"
    assert liar.chat([{"role": "user", "content": prompt}]).text == "0"


def _flight_task(spider_dev) -> Task:
    t = spider_dev.task("204")  # "Count the number of flights departing from 'APG'." (rule VL06 is advisory)
    return Task(question_id=t.question_id, db_id=t.db_id, question=t.question,
                sql="SELECT COUNT(*) FROM flights WHERE SourceAirport = 'APG'")


def test_the_gate_keeps_a_query_nothing_proves_wrong_from_a_wrong_model_rewrite(spider_dev, oracle):
    """A model that always answers wrongly is asked about a query a rule only suspects: the guard
    alone lets its rewrite through, the model gate does not, and the trace says why."""
    task = _flight_task(spider_dev)
    pool = {task.question_id: ["SELECT COUNT(*) FROM flights WHERE SourceAirport LIKE '%APG%'"]}
    sim = SimulatedModel("sim-q0", oracle=oracle, pool=pool, rates=Rates(0.0, 0.0))
    resolve = lambda stage: sim if stage in ("refiner", "localizer") else None  # noqa: E731
    stages = ["static", "refine", "guard"]
    ungated = Pipeline(PipelineConfig(stages=stages, model_gate=False), resolve=resolve,
                       db_root=spider_dev.db_root).correct(task)
    assert ungated.sql == pool[task.question_id][0], "the guard alone accepts a rewrite that changes the result"
    gated = Pipeline(PipelineConfig(stages=stages), resolve=resolve, db_root=spider_dev.db_root).correct(task)
    assert gated.sql == task.sql
    refine = next(s for s in gated.stages if s.stage == "refine")
    assert refine.calls >= 1 and refine.verdict is not None and not refine.verdict.accepted
    assert "not admitted" in refine.detail["model_gate"] and "verifier" in refine.detail["model_gate"]


def test_the_gate_keeps_a_query_proven_wrong_from_a_rewrite_that_drops_what_the_question_names(spider_dev, oracle):
    """A strict rule proves the query wrong (TB02: its join pairs columns that share no value), and the model
    answers with a query that drops the question's "Aberdeen": the proof says nothing of the rewrite, and
    the gate does not admit one that answers another question."""
    t = spider_dev.task("208")  # "Return the number of flights departing from Aberdeen."
    task = Task(question_id=t.question_id, db_id=t.db_id, question=t.question,
                sql="SELECT count(*) FROM flights JOIN airports ON flights.sourceairport = airports.airportcode "
                    "WHERE airports.city = 'Aberdeen'")
    stages = ["static", "refine", "guard"]

    def run(answer: str):
        sim = SimulatedModel("sim-q0", oracle=oracle, pool={task.question_id: [answer]}, rates=Rates(0.0, 0.0))
        out = Pipeline(PipelineConfig(stages=stages), resolve=lambda stage: sim if stage in ("refiner", "localizer")
                       else None, db_root=spider_dev.db_root).correct(task)
        return out, next(s for s in out.stages if s.stage == "refine")

    out, refine = run("SELECT COUNT(*) FROM flights")
    assert out.sql == task.sql
    assert refine.detail["model_gate"] == "model rewrite not admitted: it drops what the question names (aberdeen)"
    kept = ("SELECT count(*) FROM flights WHERE trim(SourceAirport) IN "
            "(SELECT AirportCode FROM airports WHERE trim(City) = 'Aberdeen')")
    out, refine = run(kept)  # it keeps what the question asks: the proof admits it
    assert out.sql == kept and refine.detail.get("admitted_by") == "strict finding", refine.detail


def test_the_gate_admits_a_model_rewrite_of_a_query_that_fails_to_run(spider_dev, oracle):
    t = spider_dev.task("0")
    # a misspelt function no rule repairs (a misspelt table is now the strict TB01's fix)
    task = Task(question_id="0", db_id=t.db_id, question=t.question, sql="SELECT cout(*) FROM singer")
    sim = SimulatedModel("sim-q1", oracle=oracle, pool={}, rates=Rates(1.0, 0.0))
    out = Pipeline(PipelineConfig(stages=["static", "refine", "guard"]),
                   resolve=lambda stage: sim if stage in ("refiner", "localizer") else None,
                   db_root=spider_dev.db_root).correct(task)
    refine = next(s for s in out.stages if s.stage == "refine")
    assert refine.detail.get("admitted_by") == "original fails to run", refine.detail
    assert oracle.right("0", out.sql)


def test_bench_model_sim_rows_in_process_and_over_http_agree(pred_dir, tmp_path):
    """A small run of every kind of strategy: the rows have the documented keys, sqlmend's own
    strategies keep the first law, and the same model over the OpenAI protocol gives the same rows."""
    pred = pred_dir / "gpt-4_zero-shot.sql"
    kwargs = dict(qualities=[0.2], strategies=["errorllm", "listwise", "self-correction"], sample=60,
                  progress=False)
    rows = bench_model_sim([pred], out=tmp_path / "local", **kwargs)
    keys = {"pred", "strategy", "quality", "fixed", "regressed", "regressed_clean", "delta_ex",
            "delta_vs_default", "calls_per_query"}
    assert all(keys <= set(r.to_dict()) for r in rows) and len(rows) == 3
    for r in rows:
        if r.strategy in OURS:
            assert r.regressed_clean <= 1, r
            assert set(r.admitted_by) <= {"original fails to run", "strict finding", "verifier"}
    baseline = next(r for r in rows if r.strategy == "self-correction")
    assert baseline.calls_per_query == 1.0 and baseline.regressed > 0, "ungated, a poor model breaks queries"
    served = bench_model_sim([pred], out=tmp_path / "http", http=True, **kwargs)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "transport"}  # noqa: E731
    assert [strip(r) for r in served] == [strip(r) for r in rows]
    assert all(r.transport == "http" for r in served)
    page = write_html(tmp_path / "report.html", rows).read_text(encoding="utf-8")
    assert page.count("<svg") == 6 and "errorllm" in page
    assert set(pays_from(rows)) == {"errorllm", "listwise", "self-correction"}
    json.dumps([r.to_dict() for r in rows])


@pytest.mark.parametrize("package,name", [("sqlmend.refine.baselines", n) for n in
                                          ("din-sql", "mac-sql", "self-debug", "self-correction")]
                         + [("sqlmend.refine", "refine"), ("sqlmend.refine", "localize"),
                            ("sqlmend.memory", "judge"), ("sqlmend.memory", "activate"), ("sqlmend.memory", "adapt")])
def test_the_simulated_model_finds_the_question_of_every_prompt(oracle, spider_dev, package, name):
    """Each prompt file of a model stage names its task in its own way (DIN-SQL '#### Question:',
    MAC-SQL '-- question'); the simulated model must answer the right one of each."""
    from sqlmend.llm import prompts

    t = spider_dev.task("204")
    fields = dict(question=t.question, evidence="(none)", schema="airports(City, AirportCode)", sql="SELECT 1",
                  feedback="x", examples="", errors="", nodes="", execution="", reverted="", repair="",
                  edits="", facts="", probe="none", items="[]", observations="[]")
    msgs = prompts.messages(prompts.load(package, name), **fields)
    assert oracle.task_of("\n".join(m["content"] for m in msgs)) == "204"
