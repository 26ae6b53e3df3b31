"""RefineStage on a real database, with recorded model answers (the edge of the world)."""

from __future__ import annotations

import json

from sqlmend.llm import ReplayBackend
from sqlmend.refine.stage import RefineStage
from sqlmend.types import Finding

OLDEST = "What is the name of the oldest singer?"
WRONG = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"
RIGHT = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"


def detector_finding(error_type: str) -> Finding:
    return Finding(code="detector", error_type=error_type, message="predicted", source="detector")


def loc_answer(**errors) -> str:
    return json.dumps({"errors": [{"error_type": t, **v} for t, v in errors.items()]})


def ref_answer(sql: str = "", no_change: bool = False, addressed=()) -> str:
    return json.dumps({"sql": sql, "no_change": no_change, "addressed": list(addressed)})


def test_no_detected_error_means_no_model_call(make_ctx):
    model = ReplayBackend.scripted([])
    ctx = make_ctx(OLDEST, WRONG, findings=[], backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert trace.status == "skipped" and "no error detected" in trace.note
    assert model.history == [] and trace.calls == 0 and trace.candidate is None


def test_no_model_configured_skips_and_says_so(make_ctx):
    ctx = make_ctx(OLDEST, WRONG, findings=[detector_finding("modifier_error")])
    trace = RefineStage().run(ctx)
    assert trace.status == "skipped" and "no model configured" in trace.note


def test_detected_error_is_localized_guided_and_guarded(make_ctx):
    model = ReplayBackend.scripted([
        loc_answer(modifier_error={"nodes": ["order[0]"], "schema_elements": ["singer.Age"],
                                   "fields": {"modifier": "ASC", "fix": "DESC", "phrase": "oldest"}}),
        ref_answer(RIGHT, addressed=["modifier_error"]),
    ])
    ctx = make_ctx(OLDEST, WRONG, findings=[detector_finding("modifier_error")],
                   backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert trace.status == "ran" and trace.calls == 2 and trace.tokens_in > 0
    assert trace.verdict.accepted and trace.verdict.sql == RIGHT
    loc = trace.detail["localizations"][0]
    assert loc["source"] == "model" and loc["nodes"] == ["order[0]"]
    assert trace.detail["guidelines"]["modifier_error"].startswith('The modifier ASC does not match "oldest"')
    refine_prompt = model.history[1]["messages"][-1]["content"]
    assert "order[0]: Age ASC" in refine_prompt and "make it DESC" in refine_prompt
    assert trace.detail["addressed"] == ["modifier_error"]


def test_static_findings_arrive_localized_without_a_call(make_ctx):
    static = Finding(code="VL01", error_type="value_error", message="literal not stored",
                     source="static", location="Country = 'united states'",
                     schema_refs=["singer.Country"],
                     evidence={"literal": "'united states'", "stored": "'United States'"})
    model = ReplayBackend.scripted([
        ref_answer("SELECT Song_Name FROM singer WHERE Country = 'United States'")])
    ctx = make_ctx("Songs by singers from the united states?",
                   "SELECT Song_Name FROM singer WHERE Country = 'united states'",
                   findings=[static], backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert len(model.history) == 1  # RefLLM only; no LocLLM call
    assert trace.detail["localizations"][0]["source"] == "static"
    assert trace.detail["localizations"][0]["nodes"] == ["where[0]"]
    # the template's fields are filled from the finding itself
    assert trace.detail["guidelines"]["value_error"].startswith(
        "The literal 'united states' compared with singer.Country does not occur as written in "
        "the database; the stored value is 'United States'.")
    assert "United States" in json.dumps(trace.detail["extracts"][0]["linked_values"])
    assert trace.verdict.accepted


def test_errors_are_ordered_by_priority(make_ctx):
    model = ReplayBackend.scripted(["not json at all", "still not json", ref_answer(no_change=True)])
    findings = [detector_finding("modifier_error"), detector_finding("table_missing"),
                detector_finding("condition_error")]
    ctx = make_ctx(OLDEST, WRONG, findings=findings, backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert trace.detail["order"] == ["table_missing", "condition_error", "modifier_error"]
    # garbage from LocLLM: default localizations from the templates' clauses
    assert {d["source"] for d in trace.detail["localizations"]} == {"default"}
    assert trace.candidate is None and "no change" in trace.note
    assert trace.calls == 3  # LocLLM and its retry, then RefLLM
    custom = make_ctx(OLDEST, WRONG, findings=findings,
                      backends={"refiner": ReplayBackend.scripted(["{}", ref_answer(no_change=True)])})
    stage = RefineStage.from_config({"priority": ["modifier", "condition", "table"]})
    assert stage.run(custom).detail["order"][0] == "modifier_error"


def test_a_broken_rewrite_is_rejected_with_the_reason(make_ctx):
    model = ReplayBackend.scripted([loc_answer(), ref_answer("SELECT Nme FROM singer")])
    ctx = make_ctx(OLDEST, WRONG, findings=[detector_finding("attribute_mismatch")],
                   backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert not trace.verdict.accepted and trace.verdict.sql == WRONG
    assert "no such column" in trace.detail["rejected"]


def test_garbage_answer_with_sql_in_it_still_goes_through_the_guard(make_ctx):
    text = f"Here is the fix:\n```sql\n{RIGHT}\n```"
    model = ReplayBackend.scripted([loc_answer(), text, text])  # the llm layer retries once
    ctx = make_ctx(OLDEST, WRONG, findings=[detector_finding("modifier_error")],
                   backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert trace.candidate == RIGHT and trace.verdict.accepted
    assert "not valid JSON" in trace.note


def test_a_failing_model_keeps_the_original(make_ctx):
    model = ReplayBackend.scripted([loc_answer()])  # nothing left for RefLLM: CassetteMiss
    ctx = make_ctx(OLDEST, WRONG, findings=[detector_finding("modifier_error")],
                   backends={"refiner": model})
    trace = RefineStage().run(ctx)
    assert trace.status == "failed" and trace.candidate is None and "CassetteMiss" in trace.note
