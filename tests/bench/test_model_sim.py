"""The stand-in models (simulated and replayed), the model gate they shaped, and ``sqlmend bench model-sim``.

Everything runs on the real Spider dev data: the simulated models answer from the real golds and
real wrong predictions, the replayed ones from the real prediction files; the stages they answer
run their real prompts, schemas and parsing; the gate runs the shipped verifier and rules on the
real databases.
"""

from __future__ import annotations

import json

import pytest

from sqlmend.bench.books import DifficultyBook, FileBook, answer_stats
from sqlmend.bench.difficulty import fit, verdicts_of
from sqlmend.bench.modelsim import OURS, ModelSpec, bench_model_sim, by_model, pays_from, write_html
from sqlmend.bench.simmodel import Oracle, Rates, ReplayedModel, SimulatedModel, SqlSource, evaluated, pool_of
from sqlmend.data.predictions import load_predictions
from sqlmend.pipeline import Pipeline, PipelineConfig
from sqlmend.refine.refiner import RewriteAnswer
from sqlmend.types import Task

pytestmark = pytest.mark.slow

CONCERT = [str(i) for i in range(45)]  # dev questions 0..44 are concert_singer's


@pytest.fixture(scope="module")
def oracle(spider_dev):
    return Oracle(spider_dev)


@pytest.fixture(scope="module")
def pool(spider_dev, pred_dir):
    return pool_of(evaluated(spider_dev, sorted(pred_dir.glob("*.sql"))))


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
    kwargs = dict(models=[ModelSpec("independent", 0.2)], strategies=["errorllm", "listwise", "self-correction"],
                  sample=15, progress=False)
    rows = bench_model_sim([pred], out=tmp_path / "local", **kwargs)
    keys = {"pred", "strategy", "quality", "fixed", "regressed", "regressed_clean", "delta_ex",
            "delta_vs_default", "calls_per_query"}
    assert all(keys <= set(r.to_dict()) for r in rows) and len(rows) == 3
    for r in rows:
        if r.strategy in OURS:
            assert r.regressed_clean <= 1, r
            assert set(r.admitted_by) <= {"original fails to run", "strict finding", "projection", "verifier"}
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


# --- the difficulty-aware simulated model and the replayed models ---------------------------------

@pytest.fixture(scope="module")
def reports(spider_dev, pred_dir):
    return evaluated(spider_dev, sorted(pred_dir.glob("*.sql")))


@pytest.fixture(scope="module")
def left_out(reports):
    """The item-response fit of the four files but GPT-4 zero-shot, and that file's verdicts."""
    others = {k: v for k, v in reports.items() if k != "gpt-4_zero-shot"}
    mine = verdicts_of({"x": reports["gpt-4_zero-shot"]})["x"]
    return fit(verdicts_of(others), list(mine)), mine


def test_the_item_response_fit_puts_a_models_mistakes_where_real_systems_fail(left_out):
    """At a mean quality q, the difficulty-aware model is right on far fewer of the questions the file
    under correction got wrong (it was left out of the fit) than q, and wrong on fewer of those it got
    right than 1 - q; a better model is at least as likely right on every question."""
    difficulty, mine = left_out
    assert len(difficulty.systems) == 4 and "gpt-4_zero-shot" not in difficulty.systems
    for q in (0.2, 0.6, 0.8):
        p = difficulty.p_right(difficulty.theta_for(q))
        assert abs(sum(p.values()) / len(p) - q) < 1e-6
        on_wrong = [p[k] for k, right in mine.items() if not right]
        on_right = [p[k] for k, right in mine.items() if right]
        assert sum(on_wrong) / len(on_wrong) < 0.75 * q, q
        assert 1 - sum(on_right) / len(on_right) < 1 - q, q
    low, high = difficulty.p_right(difficulty.theta_for(0.4)), difficulty.p_right(difficulty.theta_for(0.6))
    assert all(high[k] >= low[k] for k in low)


def test_a_difficulty_book_answers_right_at_its_probability_and_nests_across_qualities(spider_dev, reports, left_out):
    difficulty, mine = left_out
    oracle = Oracle(spider_dev)
    preds = {r.question_id: r.sql for r in reports["gpt-4_zero-shot"].results}
    source = SqlSource(oracle, pool_of(reports), preds, operators=None)

    def book(q: float) -> DifficultyBook:
        return DifficultyBook(f"d{q}", source, difficulty.p_right(difficulty.theta_for(q)))

    low, high = book(0.4), book(0.8)
    right_low = {k for k in mine if low.right(k)}
    right_high = {k for k in mine if high.right(k)}
    assert right_low <= right_high, "what a model of 0.4 answers right, one of 0.8 does too"
    assert abs(len(right_high) / len(mine) - 0.8) < 0.04
    for k in CONCERT + ["204", "208"]:  # the SQL matches the draw
        answer = low.answer(k)
        if answer is None:  # no change only where no wrong answer exists
            assert not low.right(k) and source.wrong_sql(k, 0.0) is None, k
            continue
        assert oracle.right(k, answer) == low.right(k), k
        if not low.right(k):
            assert " ".join(answer.split()) != " ".join(preds[k].split()), "never the file's own query"


def test_answer_stats_of_a_replayed_file_are_the_evaluators_counts(spider_dev, reports, pred_dir):
    """DIN-SQL as the model of DAIL-SQL: right on 60 of the 184 questions DAIL-SQL got wrong, wrong on
    57 of the 788 it got right (the evaluator's verdicts on the two files)."""
    oracle = Oracle(spider_dev)
    dail, din = reports["dail-sql_gpt-4"], reports["din-sql_gpt-4"]
    correct = {r.question_id: r.correct for r in dail.results if r.scored}
    book = FileBook("din-sql_gpt-4", load_predictions(pred_dir / "din-sql_gpt-4.sql", spider_dev))
    stats = answer_stats(book, oracle, {r.question_id: r.sql for r in dail.results}, correct, list(correct))
    wrong = [q for q in correct if not correct[q]]
    assert stats.originals_wrong == len(wrong) == 184
    assert round(stats.right_if_wrong * 184) == sum(din.result(q).correct for q in wrong) == 60
    assert round(stats.wrong_if_right * 788) == sum(not din.result(q).correct for q in correct if correct[q]) == 57
    assert 0.8 < stats.judge < 1.0


def test_a_replayed_model_answers_with_its_files_sql_and_judges_by_its_own_answer(spider_dev, pred_dir):
    oracle = Oracle(spider_dev)
    din = load_predictions(pred_dir / "din-sql_gpt-4.sql", spider_dev)
    gpt = load_predictions(pred_dir / "gpt-4_zero-shot.sql", spider_dev)
    model = ReplayedModel("din", [FileBook("din", din)], oracle=oracle)
    task = spider_dev.task("0")
    assert _ask(model, task.question) == din["0"]
    gold = task.gold
    prompt = (f"Question: {task.question}\n[0] SELECT name FROM singer\n    -> 1 row(s)\n"
              f"[1] {gold}\n    -> 1 row(s)\nAnswer with one number from 0 to 1, nothing else.")
    assert oracle.right("0", din["0"]) and model.chat([{"role": "user", "content": prompt}]).text == "1"
    # two files: a question's call i draws file i, rewrites and judgements counted apart
    two = ReplayedModel("din+gpt", [FileBook("din", din), FileBook("gpt", gpt)], oracle=oracle)
    q = next(k for k in CONCERT if " ".join(din[k].split()) != " ".join(gpt[k].split()))
    asked = spider_dev.task(q).question
    assert [_ask(two, asked) for _ in range(3)] == [din[q], gpt[q], din[q]]


def test_the_same_query_from_a_replayed_model_changes_nothing(spider_dev, pred_dir):
    """The model's answer is the query it was asked to rewrite: the input stays (the guard: a no-op)."""
    oracle = Oracle(spider_dev)
    t = spider_dev.task("0")
    # a misspelt function no rule repairs (a misspelt table is the strict TB01's fix, before the model)
    task = Task(question_id="0", db_id=t.db_id, question=t.question, sql="SELECT cout(*) FROM singer")
    model = ReplayedModel("echo", [FileBook("echo", {"0": task.sql})], oracle=oracle)
    out = Pipeline(PipelineConfig(stages=["static", "refine", "guard"]),
                   resolve=lambda stage: model if stage in ("refiner", "localizer") else None,
                   db_root=spider_dev.db_root).correct(task)
    refine = next(s for s in out.stages if s.stage == "refine")
    assert out.sql == task.sql and refine.calls >= 1 and not out.changed


def test_bench_model_sim_replays_each_file_as_the_model_of_the_others(pred_dir, tmp_path):
    """--replay: the file is never its own model; a second model reuses the strategy's base run (only the
    questions where the model was called are corrected again); every row states the model's rates."""
    gpt, din, dail = (pred_dir / f"{n}.sql" for n in ("gpt-4_zero-shot", "din-sql_gpt-4", "dail-sql_gpt-4"))
    skipped: list[str] = []
    kwargs = dict(strategies=["errorllm"], sample=40, progress=False, out=tmp_path, on_skip=skipped.append)
    rows = bench_model_sim([gpt, din], [ModelSpec("replay", files=(str(din),))], **kwargs)
    assert [r.pred for r in rows] == ["gpt-4_zero-shot"] and skipped and "din-sql_gpt-4" in skipped[0]
    first = rows[0]
    assert first.kind == "replay" and first.model == "replay din-sql_gpt-4" and first.quality == pytest.approx(first.model_ex / 100)
    assert 0 < first.p_right_if_wrong < 1 and 0 <= first.p_wrong_if_right < 0.2 and first.judge_accuracy > 0.5
    assert first.regressed_clean <= 1
    again = bench_model_sim([gpt], [ModelSpec("replay", files=(str(dail),))], **kwargs)
    runs = sorted((tmp_path / "gpt-4_zero-shot" / "errorllm").glob("replay-*/corrections.jsonl"))
    sizes = sorted(len(p.read_text().splitlines()) for p in runs)
    assert len(runs) == 2 and 0 < sizes[0] < sizes[1], sizes
    assert again[0].calls_per_query == first.calls_per_query
    summary = by_model(rows + again)
    assert [s["model"] for s in summary] == ["replay din-sql_gpt-4", "replay dail-sql_gpt-4"]


def test_the_command_replays_a_file_and_refuses_a_quality_for_it(pred_dir, tmp_path):
    from typer.testing import CliRunner

    from sqlmend.cli import app

    din, gpt = str(pred_dir / "din-sql_gpt-4.sql"), str(pred_dir / "gpt-4_zero-shot.sql")
    res = CliRunner().invoke(app, ["bench", "model-sim", "--replay", din, "--quality", "0.4"])
    assert res.exit_code == 2 and "a replayed model has its own" in res.output
    rows = tmp_path / "rows.json"
    res = CliRunner().invoke(app, ["bench", "model-sim", "--replay", din, "--pred", gpt, "--pred", din,
                                   "--strategy", "errorllm", "--sample", "12", "--out", str(tmp_path / "runs"),
                                   "--json", str(rows), "-q"])
    assert res.exit_code == 0, res.output
    assert "din-sql_gpt-4 is not corrected by replay din-sql_gpt-4" in res.output
    assert "errorllm with replay din-sql_gpt-4 on 1 file(s): Δ vs default mean" in res.output
    assert [r["model"] for r in json.loads(rows.read_text())] == ["replay din-sql_gpt-4"]


def test_replayed_models_as_samples_give_the_rows_of_bench_alternatives_with_those_files(pred_dir, tmp_path,
                                                                                          spider_dev):
    """The ``consensus`` strategy: k replayed files are k samples of the model (call i draws file i), asked by
    the consensus stage (``consensus.samples``); its corrections and row are those of ``bench alternatives``
    with the same files as alternatives: one code path."""
    from sqlmend.bench.alternatives import STRICT_RUN, _signature, bench_alternatives
    from sqlmend.pipeline import read_checkpoint

    gpt, din, dail = (pred_dir / f"{n}.sql" for n in ("gpt-4_zero-shot", "din-sql_gpt-4", "dail-sql_gpt-4"))
    alt = bench_alternatives(gpt, [din, dail], tmp_path / "alt", sample=20, workers=1, progress=False)
    strict = next(r for r in alt.rows if r.rule == "strict")
    (sim,) = bench_model_sim([gpt], [ModelSpec("replay", files=(str(din), str(dail)))], ["consensus"],
                             tmp_path / "sim", sample=20, workers=1, progress=False)
    assert (sim.n, sim.fixed, sim.regressed, sim.regressed_clean, sim.delta_ex, sim.delta_vs_default) == (
        strict.n, strict.fixed, strict.regressed, strict.regressed_clean, strict.delta_ex, strict.delta_vs_default)
    by_alt = read_checkpoint(tmp_path / "alt" / gpt.stem / f"alt-{_signature([din, dail])}" / STRICT_RUN
                             / "corrections.jsonl")
    (run,) = (tmp_path / "sim" / gpt.stem / "consensus").glob("replay-*/corrections.jsonl")
    by_sim = read_checkpoint(run)
    assert set(by_sim) == set(by_alt) and len(by_sim) >= 16

    def vote(c):
        return next(s.detail["consensus"] for s in c.stages if s.stage == "consensus")

    for q, c in by_alt.items():
        assert by_sim[q].sql == c.sql, q
        assert vote(by_sim[q])["decision"] == vote(c)["decision"], q
        assert [a["sql"] for a in vote(by_sim[q])["alternatives"]] == [a["sql"] for a in vote(c)["alternatives"]]
    assert all(next(s for s in c.stages if s.stage == "consensus").calls == 2 for c in by_sim.values())
    assert strict.flagged > 0 and sim.calls_per_query == 2.0  # the vote had something to say; k calls a question
    # the model's stats are the mean of the two files' own (not the first file's)
    from sqlmend.evaluation.evaluate import evaluate

    ex = []
    for f in (din, dail):
        preds = load_predictions(f, spider_dev)
        results = [r for r in evaluate(spider_dev, {q: preds[q] for q in by_sim}, workers=1).results
                   if r.scored and r.question_id in by_sim]
        ex.append(100 * sum(r.correct for r in results) / len(results))
    assert ex[0] != ex[1] and sim.model_ex == pytest.approx(sum(ex) / 2, abs=0.01)


def test_a_samples_vote_puts_a_query_to_the_refiner_whose_rewrite_passes_the_gate(pred_dir, tmp_path):
    """``errorllm+listwise+consensus``: one replayed sample a question (the consensus stage's), and where it
    returns other rows its vote, a finding, puts the query to ErrorLLM's refinement, which ErrorLLM + listwise
    alone never asks about it; a model rewrite is still taken only through the model gate."""
    from sqlmend.pipeline import read_checkpoint

    gpt, din = pred_dir / "gpt-4_zero-shot.sql", pred_dir / "din-sql_gpt-4.sql"
    kwargs = dict(sample=20, workers=1, progress=False)
    (both,) = bench_model_sim([gpt], [ModelSpec("replay", files=(str(din),))], ["errorllm+listwise+consensus"],
                              tmp_path / "a", **kwargs)
    (plain,) = bench_model_sim([gpt], [ModelSpec("replay", files=(str(din),))], ["errorllm+listwise"],
                               tmp_path / "b", **kwargs)
    (run,) = (tmp_path / "a" / gpt.stem / "errorllm+listwise+consensus").glob("replay-*/corrections.jsonl")
    (base,) = (tmp_path / "b" / gpt.stem / "errorllm+listwise").glob("replay-*/corrections.jsonl")
    done, alone = read_checkpoint(run), read_checkpoint(base)

    def stage(c, name):
        return next((s for s in c.stages if s.stage == name), None)

    assert all(stage(c, "consensus").calls == 1 for c in done.values())
    by_vote = [q for q, c in done.items() if stage(c, "refine").calls and not stage(alone[q], "refine").calls]
    assert by_vote, "the vote put no query to the refiner"
    for q in by_vote:  # the vote was the finding that sent it there
        assert any(f.source == "consensus" for f in stage(done[q], "consensus").findings), q
    admitted = [s.detail.get("admitted_by") for c in done.values() for s in c.stages
                if s.stage == "refine" and s.verdict is not None and s.verdict.accepted and s.calls]
    assert all(admitted), admitted  # every model rewrite taken went through the gate
    assert both.regressed_clean <= 1 and both.calls_per_query > plain.calls_per_query
