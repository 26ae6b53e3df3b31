"""The correction pipeline on real Spider databases: stages, per-item errors, batches,
checkpoints (a real killed subprocess), and an OpenAI-compatible HTTP endpoint on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sqlmend.llm import LLMConfig, ReplayBackend
from sqlmend.llm.server import ServerThread, create_app
from sqlmend.pipeline import (
    Pipeline,
    PipelineConfig,
    correct,
    correct_batch,
    make_resolver,
    read_checkpoint,
    summarize,
)
from sqlmend.paths import data_root
from sqlmend.types import Task

CASE = "SELECT Song_Name FROM singer WHERE Country = 'united states'"
FIXED = "SELECT Song_Name FROM singer WHERE Country = 'United States'"
GOOD = "SELECT count(*) FROM singer"
# VL02 (advisory): IsOfficial holds 'T'/'F', never a number: left to refinement
WORLD = ("SELECT T1.Name FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode "
         "WHERE T2.Language = 'English' AND T2.IsOfficial = 1")
WORLD_FIXED = WORLD.replace("IsOfficial = 1", "IsOfficial = 'T'")


def task(qid: str, sql: str, db_id: str = "concert_singer", question: str = "?") -> Task:
    """A task naming its database (a real Spider file; ``nope`` names one that does not exist)."""
    db = data_root() / "spider" / "database" / db_id / f"{db_id}.sqlite"
    return Task(question_id=qid, db_id=db_id, question=question, sql=sql, db=str(db))


def statuses(c):
    return {s.stage: s.status for s in c.stages}


def test_a_correct_query_is_returned_untouched_without_a_model_call():
    c = correct(task("1", GOOD), PipelineConfig())
    assert not c.changed and c.error is None
    assert [s.stage for s in c.stages][0] == "static" and c.stages[-1].stage == "guard"
    assert sum(s.calls for s in c.stages) == 0
    refine = next(s for s in c.stages if s.stage == "refine")
    assert refine.status == "skipped" and "no error detected" in refine.note


REFINE_STAGES = ("localizer", "refiner")


def scripted_resolver(*answers: str):
    """A resolver whose refinement models answer with recorded answers, in order (no detector model)."""
    model = ReplayBackend.scripted(list(answers))
    return model, (lambda stage: model if stage in REFINE_STAGES else None)


def test_a_value_error_is_fixed_under_the_guard():
    """Static rules fix it (strict) or leave it to refinement (advisory): either way, guarded."""
    model, resolve = scripted_resolver(json.dumps({"sql": FIXED, "addressed": ["value_error"]}))
    c = Pipeline(PipelineConfig(), resolve=resolve).correct(task("1", CASE))
    assert c.sql == FIXED and c.findings[0].error_type == "value_error"
    fixer = next(s for s in c.stages if s.candidate)
    assert fixer.stage in ("static", "refine") and fixer.verdict.accepted
    assert c.stages[-1].stage == "guard" and c.stages[-1].verdict.accepted
    assert len(model.history) == (1 if fixer.stage == "refine" else 0)


def test_switching_stages_off():
    c = correct(task("1", CASE), PipelineConfig(stages=["guard"]))
    assert not c.changed and [s.stage for s in c.stages] == ["guard"]


def test_advisory_finding_without_a_model_is_skipped_and_says_so():
    c = correct(task("w", WORLD, "world_1"), PipelineConfig())
    refine = next(s for s in c.stages if s.stage == "refine")
    assert refine.status == "skipped" and "no model configured" in refine.note
    assert not c.changed


def test_per_item_errors_do_not_stop_the_batch(tmp_path):
    # "nodb" names only a db_id: found (here: not found) under the batch's database folder
    tasks = [task("ok", CASE), Task("nodb", "no_such_db", "?", GOOD), task("empty", ""),
             task("garbled", "SELEC name FROM singer WHERE"), task("good", GOOD)]
    out = correct_batch(tasks, PipelineConfig(workers=2), checkpoint=tmp_path / "c.jsonl",
                        progress=False, db_root=data_root() / "spider" / "database")
    by = {c.question_id: c for c in out}
    assert [c.question_id for c in out] == [t.question_id for t in tasks]
    assert "not found" in by["nodb"].error and by["nodb"].sql == GOOD
    assert by["empty"].error == "empty SQL"
    assert by["garbled"].sql == "SELEC name FROM singer WHERE"  # nothing proven: kept
    assert by["ok"].error is None and by["good"].error is None and not by["good"].changed
    assert summarize(out).errors == 2


def test_checkpoint_resume_does_not_redo_finished_items(tmp_path):
    ckpt = tmp_path / "c.jsonl"
    tasks = [task(str(i), CASE if i % 2 else GOOD) for i in range(6)]
    first = correct_batch(tasks[:4], PipelineConfig(), checkpoint=ckpt, progress=False)
    with ckpt.open("a") as fh:  # a line cut short by a kill
        fh.write('{"question_id": "4", "db_id": "conc')
    second = correct_batch(tasks, PipelineConfig(), checkpoint=ckpt, progress=False)
    # items 0-3 are read back, not run again: even their measured stage times are identical
    assert [c.to_dict() for c in second[:4]] == [c.to_dict() for c in first]
    assert all(s.seconds > 0 for c in first for s in c.stages if s.stage == "static")
    ids = [json.loads(line)["question_id"] for line in ckpt.read_text().splitlines()]
    assert sorted(ids) == sorted(str(i) for i in range(6))  # each once, the partial line gone


def test_model_concurrency_and_garbage_answers(tmp_path):
    """Many tasks through error-guided refinement; garbage answers keep the original."""
    answers = ["not json", "not json either"] * 3
    tasks = [task(f"w{i}", WORLD, "world_1") for i in range(3)]
    out = correct_batch(tasks, PipelineConfig(workers=3, model_concurrency=1), progress=False,
                        resolve=make_resolver(PipelineConfig(), llm_config=LLMConfig(
                            endpoints={"s": {"kind": "replay", "mode": "queue", "answers": answers}},
                            stages={"refiner": "s", "localizer": "s"}, log=False)))
    for c in out:
        refine = next(s for s in c.stages if s.stage == "refine")
        # the static finding comes localized: RefLLM only, and its one retry
        assert refine.status == "ran" and refine.calls == 2 and not c.changed
        assert "not valid JSON" in refine.note
    assert summarize(out).calls == 6
    # the garbage answers' tokens count too (the StructuredOutputError carries them)
    assert all(next(s for s in c.stages if s.stage == "refine").tokens_out > 0 for c in out)
    assert summarize(out).tokens_per_query > 0


def _loopback_config(url: str, stages: tuple[str, ...] = REFINE_STAGES) -> LLMConfig:
    return LLMConfig(endpoints={"loop": {"kind": "openai", "base_url": url, "model": "smollm2",
                                         "max_retries": 0}},
                     stages={s: "loop" for s in stages}, log=False)


def test_end_to_end_over_an_openai_compatible_http_endpoint():
    """RefLLM's answer travels over real HTTP from a loopback OpenAI-protocol server."""
    recorded = ReplayBackend.scripted([
        json.dumps({"sql": WORLD_FIXED, "addressed": ["value_error"], "no_change": False}),
    ])
    with ServerThread(create_app(chat=recorded)) as server:
        cfg = PipelineConfig(model_gate=False)  # the guard alone decides (the model gate: below)
        pipe = Pipeline(cfg, resolve=make_resolver(cfg, llm_config=_loopback_config(server.url)))
        c = pipe.correct(task("w", WORLD, "world_1", "Official English-speaking countries?"))
    refine = next(s for s in c.stages if s.stage == "refine")
    assert len(recorded.history) == 1  # the static finding needs no LocLLM call
    assert refine.detail["localizations"][0]["source"] == "static"
    assert refine.verdict.accepted and c.sql == WORLD_FIXED
    assert refine.tokens_in > 0 and refine.calls >= 1
    assert "IsOfficial" in json.dumps(refine.detail["prompts"])


def test_the_model_gate_keeps_a_query_only_an_advisory_rule_suspects():
    """By default a model's rewrite of a query that nothing proves wrong (an advisory finding, a
    query that runs) needs the verifier's preference; here it has none, so the query is kept."""
    recorded = ReplayBackend.scripted([
        json.dumps({"sql": WORLD_FIXED, "addressed": ["value_error"], "no_change": False}),
    ])
    c = Pipeline(PipelineConfig(), resolve=lambda stage: recorded if stage == "refiner" else None).correct(
        task("w", WORLD, "world_1", "Official English-speaking countries?"))
    refine = next(s for s in c.stages if s.stage == "refine")
    assert c.sql == WORLD and not refine.verdict.accepted
    assert refine.detail["model_gate"].startswith("model rewrite not admitted: nothing proves the query wrong")


@pytest.mark.slow
def test_end_to_end_with_the_embedded_smollm2_behind_http():
    """The real 135M model writes poor SQL; whatever it says, the guard decides."""
    from sqlmend.llm.local import TransformersBackend

    with ServerThread(create_app(chat=TransformersBackend())) as server:
        # short answers: SmolLM2 on a shared CPU generates about 2 s per token
        cfg = PipelineConfig(options={"refine": {"max_tokens": 48}})
        pipe = Pipeline(cfg, resolve=make_resolver(cfg, llm_config=_loopback_config(server.url)))
        c = pipe.correct(task("w", WORLD, "world_1", "Official English-speaking countries?"))
    refine = next(s for s in c.stages if s.stage == "refine")
    assert refine.status in ("ran", "failed") and refine.calls >= 1
    assert c.sql == WORLD or c.stages[-1].verdict.accepted


# --- a real killed batch ------------------------------------------------------


def test_a_killed_batch_resumes_without_redoing_or_losing_items(tmp_path, data_dir):
    pred = data_dir / "predictions" / "spider-dev" / "codes-1b.sql"
    out = tmp_path / "run"
    n = 60
    cmd = [sys.executable, "-c", "import sys; from sqlmend.cli import main; sys.exit(main())", "correct", "--dataset", "spider-dev", "--pred",
           str(pred), "--out", str(out), "--limit", str(n), "--workers", "1", "--quiet",
           "--stages", "static,guard"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ckpt = out / "corrections.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if ckpt.exists() and len(ckpt.read_bytes().splitlines()) >= 10:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = [json.loads(line)["question_id"] for line in ckpt.read_text().splitlines()
              if line.endswith("}")]
    assert 10 <= len(before) < n, "the batch must be killed mid-run"
    kept = {qid: line for qid, line in zip(before, ckpt.read_text().splitlines())}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = ckpt.read_text().splitlines()
    ids = [json.loads(line)["question_id"] for line in lines]
    assert len(ids) == len(set(ids)) == n  # nothing lost, nothing twice
    assert lines[:len(before)] == [kept[q] for q in before]  # finished items not redone
    assert len(read_checkpoint(ckpt)) == n
    corrected = (out / "corrected.sql").read_text().splitlines()
    assert len(corrected) == 1034
